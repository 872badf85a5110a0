package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"capacitylab/result"
)

// The Postgres schema (migrations/postgres/100_schema.sql, then the
// shared migrations) has the tables and columns, in order, that the
// SQLite migrations build.
func TestSchemasMatch(t *testing.T) {
	pg := postgresDB(t)
	lite := sqliteDB(t).open(t)
	pgs := pg.open(t)
	ctx := context.Background()
	columns := func(s *Store, q string, args ...any) map[string][]string {
		t.Helper()
		rows, err := s.db.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string][]string{}
		for rows.Next() {
			var table, col string
			if err := rows.Scan(&table, &col); err != nil {
				t.Fatal(err)
			}
			out[table] = append(out[table], col)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := columns(lite, `SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.cid`)
	got := columns(pgs, `SELECT table_name::text, column_name::text FROM information_schema.columns
		WHERE table_schema::text = ? ORDER BY table_name, ordinal_position`, pg.schema)
	if len(want) < 20 {
		t.Fatalf("SQLite has only %d tables: %v", len(want), want)
	}
	if !reflect.DeepEqual(got, want) {
		for table, cols := range want {
			if !reflect.DeepEqual(got[table], cols) {
				t.Errorf("table %s: Postgres has columns %v, SQLite %v", table, got[table], cols)
			}
		}
		for table := range got {
			if _, ok := want[table]; !ok && !strings.HasPrefix(table, "river_") { // River's own tables (the sweep queue's jobs) are only on Postgres
				t.Errorf("table %s is only on Postgres", table)
			}
		}
	}
}

// An unreachable database fails OpenPostgres with one line that says
// where it tried, and never the password; so does a URL Postgres does not
// take. (Needs no Postgres: the port is one nobody listens on.)
func TestOpenPostgresFailsWithOneClearLine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	const password = "s3cret-Passw0rd"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		what string // the mistake
		url  string
		want string // in the message
	}{
		{"nothing listens at the address", fmt.Sprintf("postgres://capacitylab:%s@127.0.0.1:%d/capacitylab", password, port),
			fmt.Sprintf(`cannot connect to Postgres at 127.0.0.1:%d (database "capacitylab", user "capacitylab")`, port)},
		{"not a URL Postgres takes", fmt.Sprintf("postgres://capacitylab:%s@127.0.0.1:notaport/db", password),
			"the database URL is not one Postgres takes"},
	} {
		s, err := OpenPostgres(ctx, c.url)
		if err == nil {
			s.Close()
			t.Fatalf("%s: opened", c.what)
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) || strings.Contains(msg, password) || strings.Contains(msg, "\n") {
			t.Errorf("%s: %q, want one line containing %q and not the password", c.what, msg, c.want)
		}
		t.Logf("%s: %s", c.what, msg)
	}
}

// A wrong password is refused at start with one line, without the
// password given.
func TestOpenPostgresWrongPassword(t *testing.T) {
	d := postgresDB(t)
	cfg, err := pgx.ParseConfig(d.admin)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Password == "" {
		t.Skip("the test database's URL has no password, so a wrong one may be accepted (peer or trust login)")
	}
	bad := strings.Replace(d.url, ":"+cfg.Password+"@", ":Wrong-Pa55word@", 1)
	if bad == d.url {
		t.Skip("the password is not in the URL's user part")
	}
	s, err := OpenPostgres(context.Background(), bad)
	if err == nil {
		s.Close()
		t.Fatal("opened with a wrong password")
	}
	if msg := err.Error(); strings.Contains(msg, "Wrong-Pa55word") || strings.Contains(msg, cfg.Password) || strings.Contains(msg, "\n") ||
		!strings.Contains(msg, "cannot connect to Postgres") {
		t.Errorf("wrong password: %q", msg)
	} else {
		t.Logf("wrong password: %s", msg)
	}
}

// Two Stores on one Postgres database, as two servers would have, start
// at once (one migrates), write at once and see each other's writes at
// once: a prediction locked through one is locked for the other, a
// learner's state read through one shows what the other wrote (nothing
// kept in memory), and runs written through both are all there.
func TestTwoStoresOneDatabase(t *testing.T) {
	d := postgresDB(t)
	ctx := context.Background()
	var a, b *Store
	var errA, errB error
	var wg sync.WaitGroup
	wg.Go(func() { a, errA = d.openErr() })
	wg.Go(func() { b, errB = d.openErr() })
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("two servers starting at once: %v; %v", errA, errB)
	}
	defer a.Close()
	defer b.Close()

	// A state read through a, then a write through b, then a read
	// through a again: it shows the write.
	if st, err := a.LessonState(ctx, "L", "les"); err != nil || len(st.Predictions) != 0 {
		t.Fatalf("state before: %+v, %v", st, err)
	}
	if _, err := b.Lock(ctx, "L", "les", "p1", "b"); err != nil {
		t.Fatal(err)
	}
	if st, err := a.LessonState(ctx, "L", "les"); err != nil || st.Predictions["p1"].Option != "b" {
		t.Fatalf("state through a after b locked p1: %+v, %v", st.Predictions, err)
	}
	if _, err := a.Lock(ctx, "L", "les", "p1", "c"); !errors.Is(err, ErrLocked) {
		t.Errorf("a changing b's lock: %v, want ErrLocked", err)
	}

	// Both lock the same block for many learners at once: one option
	// wins per learner, and both stores agree on which.
	const learners = 40
	var lost atomic.Int32
	for i := range learners {
		learner := fmt.Sprintf("m%02d", i)
		for j, s := range []*Store{a, b} {
			wg.Go(func() {
				_, err := s.Lock(ctx, learner, "les", "p1", []string{"a", "b"}[j])
				if err != nil && !errors.Is(err, ErrLocked) {
					t.Errorf("lock %s through store %d: %v", learner, j, err)
				}
				if err != nil {
					lost.Add(1)
				}
			})
		}
	}
	wg.Wait()
	if lost.Load() != learners {
		t.Errorf("%d locks refused, want exactly one per learner (%d)", lost.Load(), learners)
	}
	for i := range learners {
		learner := fmt.Sprintf("m%02d", i)
		pa, errA := a.prediction(ctx, learner, "p1")
		pb, errB := b.prediction(ctx, learner, "p1")
		if errA != nil || errB != nil || pa.Option != pb.Option || pa.Option == "" {
			t.Errorf("%s: a reads %q (%v), b reads %q (%v)", learner, pa.Option, errA, pb.Option, errB)
		}
	}

	// Runs with records and events written through both at once.
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i, s := range []*Store{a, b, a, b} {
		wg.Go(func() {
			id := fmt.Sprintf("run-%d", i)
			if err := s.SaveRun(ctx, Run{ID: id, Learner: "x", Status: RunRunning, CreatedAt: now}); err != nil {
				t.Error(err)
				return
			}
			for w := range 3 {
				if err := s.AddRecords(ctx, id, testRecords(w, 2000)); err != nil {
					t.Error(err)
				}
				for e := range 20 {
					seq := w*20 + e + 1
					if err := s.AddRunEvent(ctx, id, RunEvent{Seq: seq, Kind: "progress", JSON: []byte(fmt.Sprintf(`{"seq":%d}`, seq))}); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	for i := range 4 {
		id := fmt.Sprintf("run-%d", i)
		n, err := []*Store{b, a}[i%2].CountRecords(ctx, id)
		seq, _, err2 := a.LastRunEvent(ctx, id)
		if err != nil || err2 != nil || n != 6000 || seq != 60 {
			t.Errorf("%s: %d records (%v), last event %d (%v); want 6000 and 60", id, n, err, seq, err2)
		}
	}
}

// Postgres ends every connection of the store (an administrator, a
// failover, a restart) while writes go on: the writes that fail say so,
// later writes succeed on new connections, and every write that was
// acknowledged is stored.
func TestPostgresConnectionsEndMidWrite(t *testing.T) {
	d := postgresDB(t)
	d.url = withParam(d.url, "application_name", d.schema) // this test's connections, to end them
	s := d.open(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, d.admin)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	terminate := func() int {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`,
			d.schema).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := s.SaveRun(ctx, Run{ID: "r", Learner: "l", Status: RunRunning, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	const writes = 600
	var acked []int
	var failed []string
	var ended, rounds int
	for seq := 1; seq <= writes; seq++ {
		if seq%100 == 50 {
			ended += terminate()
			rounds++
		}
		err := s.AddRunEvent(ctx, "r", RunEvent{Seq: seq, Kind: "progress", JSON: []byte(`{}`)})
		if seq%100 == 60 {
			// A batch of records and a check answer after the end too.
			if err := s.AddRecords(ctx, "r", testRecords(seq, 500)); err != nil {
				failed = append(failed, "records: "+err.Error())
			}
		}
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		acked = append(acked, seq)
	}
	if ended == 0 {
		t.Fatal("no connection of the store was ended: the test did not test anything")
	}
	t.Logf("%d connections ended, %d of %d events acknowledged, failures: %q", ended, len(acked), writes, failed)
	// The writes go one at a time, so an end catches one connection
	// that was used within the last second (older ones are checked
	// before use): its next statement fails, and nothing after it.
	if len(failed) > 2*rounds {
		t.Errorf("%d writes failed for %d rounds of ends, want at most two a round", len(failed), rounds)
	}
	for _, f := range failed {
		if !strings.Contains(f, "store: saving") {
			t.Errorf("a failure that does not say what was being saved: %s", f)
		}
	}
	events, err := s.RunEvents(ctx, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[int]bool{}
	for _, e := range events {
		stored[e.Seq] = true
	}
	for _, seq := range acked {
		if !stored[seq] {
			t.Errorf("event %d was acknowledged but is not stored", seq)
		}
	}
	// The last writes, after the last end, all succeeded.
	if len(acked) == 0 || acked[len(acked)-1] != writes {
		t.Errorf("the last write did not succeed: acknowledged %v", acked[max(0, len(acked)-5):])
	}

	// Now the connections end while windows of records are being
	// written: a window is stored whole or not at all, and every window
	// acknowledged is there.
	const windows = 30
	done := make(chan []error)
	go func() {
		errs := make([]error, windows)
		for w := range windows {
			errs[w] = s.AddRecords(ctx, "r", testRecords(1000+w, 20000))
		}
		done <- errs
	}()
	var errs []error
	rounds = 0
	for errs == nil {
		select {
		case errs = <-done:
		case <-time.After(100 * time.Millisecond):
			if rounds < 8 && terminate() > 0 {
				rounds++
			}
		}
	}
	nFailed := 0
	for w, err := range errs {
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM run_records WHERE run_id = ? AND win = ?`, "r", 1000+w).Scan(&n); err != nil {
			t.Fatal(err)
		}
		switch {
		case err == nil && n != 20000:
			t.Errorf("window %d was acknowledged with %d of its 20000 records stored", w, n)
		case err != nil && n != 0 && n != 20000:
			t.Errorf("window %d failed (%v) with %d of its records stored: half a window", w, err, n)
		}
		if err != nil {
			nFailed++
		}
	}
	t.Logf("%d rounds of ends during %d windows of records: %d windows failed, each whole", rounds, windows, nFailed)
	if rounds == 0 || nFailed == 0 || nFailed == windows {
		t.Errorf("%d rounds of ends, %d of %d windows failed: want some caught by an end and the rest stored", rounds, nFailed, windows)
	}
	if err := s.AddRecords(ctx, "r", testRecords(2000, 10)); err != nil {
		t.Errorf("a write after the ends: %v", err)
	}
}

// FullWhen fails writes on Postgres as Postgres does on a full disk
// (SQLSTATE 53100), which IsFull reports, and WriteHealth says so until
// there is room again.
func TestFullWhen(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		var full atomic.Bool
		s := d.open(t, FullWhen(full.Load))
		ctx := context.Background()
		if _, err := s.Lock(ctx, "L", "les", "p1", "a"); err != nil {
			t.Fatal(err)
		}
		full.Store(true)
		_, err := s.RecordAttempt(ctx, "L", "les", "c1", "a", true)
		if !IsFull(err) {
			t.Fatalf("a write on a full disk: %v, want IsFull", err)
		}
		want := map[string]string{"sqlite": "database or disk is full", "postgres": "SQLSTATE 53100"}[d.kind]
		if !strings.Contains(err.Error(), want) {
			t.Errorf("full-disk error %q does not say %q", err, want)
		}
		if err := s.AddRecords(ctx, "nope", testRecords(0, 3)); !IsFull(err) {
			t.Errorf("records on a full disk: %v, want IsFull", err)
		}
		if _, err := s.WriteHealth(ctx); !IsFull(err) {
			t.Errorf("WriteHealth while full: %v", err)
		}
		if st, err := s.LessonState(ctx, "L", "les"); err != nil || st.Predictions["p1"].Option != "a" {
			t.Errorf("reading while full: %+v, %v", st, err)
		}
		// Room again: WriteHealth says so without any other write (a
		// load balancer polling /healthz sends none).
		full.Store(false)
		time.Sleep(probeEvery)
		if _, err := s.WriteHealth(ctx); err != nil {
			t.Errorf("WriteHealth once there is room again, with no write since: %v", err)
		}
		if _, err := s.RecordAttempt(ctx, "L", "les", "c1", "a", true); err != nil {
			t.Fatal(err)
		}
		if _, err := s.WriteHealth(ctx); err != nil {
			t.Errorf("WriteHealth after a write succeeded: %v", err)
		}
	})
}

// A record with every field at the edge of its type reads back exactly:
// microsecond times past 2^31 (a window of over 35 minutes), fractional
// milliseconds, and the outcomes and statuses loadrun uses.
func TestRecordsReadBackExactly(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		if err := s.SaveRun(ctx, Run{ID: "r", Learner: "l", Status: RunDone, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		long := 3599*time.Second + 999999*time.Microsecond
		recs := []result.Record{
			{Window: 0, Seq: 0, Intended: long, Sent: long, End: long + time.Microsecond, Outcome: result.OK, Status: 200,
				QueueWaitMS: 0.001, ServiceMS: 1234.567891},
			{Window: 0, Seq: 1, Intended: 0, Sent: 0, End: 2 * time.Second, Outcome: result.Gaveup,
				Reason: result.ReasonReadTimeout, QueueWaitMS: -1, ServiceMS: -1},
		}
		if err := s.AddRecords(ctx, "r", recs); err != nil {
			t.Fatal(err)
		}
		// Storing a window again replaces its records.
		recs[1].Reason, recs[1].Outcome = result.ReasonReset, result.Error
		if err := s.AddRecords(ctx, "r", recs[1:]); err != nil {
			t.Fatal(err)
		}
		var back []result.Record
		if err := s.EachRecord(ctx, "r", func(r result.Record) error { back = append(back, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, recs) {
			t.Errorf("read back %+v, stored %+v", back, recs)
		}
	})
}
