package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"capacitylab/result"
)

// testRecords returns n records of window w with every outcome and both
// present and absent lab headers.
func testRecords(w, n int) []result.Record {
	outcomes := []result.Outcome{result.OK, result.Refused, result.Gaveup, result.Error, result.NotSent}
	recs := make([]result.Record, n)
	for i := range recs {
		o := outcomes[i%len(outcomes)]
		r := result.Record{Window: w, Seq: i, Intended: time.Duration(i) * 1234 * time.Microsecond, Outcome: o, QueueWaitMS: -1, ServiceMS: -1}
		r.Sent = r.Intended + 50*time.Microsecond
		r.End = r.Sent + time.Duration(i%7)*time.Millisecond
		switch o {
		case result.OK:
			r.Status, r.QueueWaitMS, r.ServiceMS = 200, 0.042, 20.117
		case result.Refused:
			r.Status = 503
		case result.Gaveup:
			r.Reason = result.ReasonReadTimeout
		case result.Error:
			r.Reason = result.ReasonReset
		case result.NotSent:
			r.Sent, r.End, r.Reason = r.Intended, r.Intended, result.ReasonInFlightCap
		}
		// Some records are not their logical request's first: a retry
		// (of a critical request), a fanned-out request's third
		// sub-request, a hedged request's cancelled copy.
		switch {
		case i%11 == 10:
			r.Attempt, r.Request, r.Class = 1, i-1, result.Critical
		case i%13 == 12:
			r.Sub, r.Request = 2, i-2
		case i%17 == 16:
			r.Copy, r.Request, r.Outcome, r.Status, r.Reason = 1, i-3, result.Cancelled, 0, ""
		}
		recs[i] = r
	}
	return recs
}

// A run, its rows and its records survive closing and reopening the file;
// runs left queued or running are marked interrupted; lists put the
// learner's own runs first.
func TestRunsPersistAcrossRestart(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s, err := d.openErr()
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		t0 := time.Date(2026, 11, 30, 11, 0, 0, 123456789, time.UTC)
		req := json.RawMessage(`{"workers":1,"rates":[40,80],"seconds":2}`)
		runs := []Run{
			// alice's finished run, with rows and records.
			{ID: "r1", Learner: "alice", Lesson: "little", Block: "lab1", Request: req, Status: RunDone, CreatedAt: t0, StartedAt: t0.Add(time.Second), EndedAt: t0.Add(5 * time.Second)},
			// bob's run, still running when the server "crashes".
			{ID: "r2", Learner: "bob", Request: req, Status: RunRunning, CreatedAt: t0.Add(time.Minute), StartedAt: t0.Add(time.Minute)},
			// alice's run, still queued at the crash.
			{ID: "r3", Learner: "alice", Request: req, Status: RunQueued, CreatedAt: t0.Add(2 * time.Minute)},
			// carol's cancelled run, newest of all.
			{ID: "r4", Learner: "carol", Request: req, Status: RunCancelled, Reason: "You cancelled it.", CreatedAt: t0.Add(3 * time.Minute), EndedAt: t0.Add(3 * time.Minute)},
		}
		for _, r := range runs {
			if err := s.SaveRun(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		rows := []result.Row{{Window: 0, Offered: 40, Sent: 80, OK: 80, OKPerSec: 40, P50MS: 20.1, P99MS: 23.4, N: 80}, {Window: 1, Offered: 80, Sent: 160, OK: 150, Refused: 10, Note: "a note"}}
		for _, row := range rows {
			if err := s.AddRow(ctx, "r1", row); err != nil {
				t.Fatal(err)
			}
		}
		recs := append(testRecords(0, 1203), testRecords(1, 7)...) // more than one INSERT's worth, and a short tail
		if err := s.AddRecords(ctx, "r1", recs); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}

		s, err = d.openErr()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		n, err := s.InterruptRuns(ctx, "The server restarted while this run was waiting or running.")
		if err != nil || n != 2 {
			t.Fatalf("InterruptRuns = %d, %v; want the 2 queued or running", n, err)
		}
		got, err := s.Run(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != RunDone || got.Learner != "alice" || got.Lesson != "little" || got.Block != "lab1" || !got.CreatedAt.Equal(t0) || !got.EndedAt.Equal(t0.Add(5*time.Second)) || string(got.Request) != string(req) {
			t.Errorf("r1 after reopening: %+v", got)
		}
		if len(got.Rows) != 2 || !reflect.DeepEqual(got.Rows[0], rows[0]) || !reflect.DeepEqual(got.Rows[1], rows[1]) {
			t.Errorf("rows after reopening: %+v, want %+v", got.Rows, rows)
		}
		var back []result.Record
		if err := s.EachRecord(ctx, "r1", func(r result.Record) error { back = append(back, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(back) != len(recs) {
			t.Fatalf("read back %d records, stored %d", len(back), len(recs))
		}
		for i := range recs {
			if back[i] != recs[i] {
				t.Fatalf("record %d: read back %+v, stored %+v", i, back[i], recs[i])
			}
		}
		// One window alone: window 1's 7 records, in seq order.
		back = back[:0]
		if err := s.EachWindowRecord(ctx, "r1", 1, func(r result.Record) error { back = append(back, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(back) != 7 || back[0] != recs[1203] || back[6] != recs[1209] {
			t.Errorf("window 1 read back %d records (first %+v), want its 7", len(back), back[:min(1, len(back))])
		}
		for _, id := range []string{"r2", "r3"} {
			r, err := s.Run(ctx, id)
			if err != nil || r.Status != RunInterrupted || r.Reason == "" || r.EndedAt.IsZero() {
				t.Errorf("%s after restart: %+v (%v), want interrupted with a reason and an end", id, r, err)
			}
		}
		if r, _ := s.Run(ctx, "r4"); r.Status != RunCancelled {
			t.Errorf("r4 (already finished) became %q", r.Status)
		}

		list, err := s.Runs(ctx, "alice", 10)
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, r := range list {
			order = append(order, r.ID)
		}
		if want := []string{"r3", "r1", "r4", "r2"}; !equal(order, want) {
			t.Errorf("alice's list %v, want her own newest first then the rest newest first: %v", order, want)
		}
		if _, err := s.Run(ctx, "nope"); !errors.Is(err, ErrNoRun) {
			t.Errorf("unknown run: %v, want ErrNoRun", err)
		}
		// The reference run of a block is its latest done run.
		if err := s.SaveRun(ctx, Run{ID: "r5", Learner: "dan", Block: "lab1", Request: req, Status: RunFailed, CreatedAt: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if ref, err := s.LatestRun(ctx, "lab1"); err != nil || ref.ID != "r1" || len(ref.Rows) != 2 {
			t.Errorf("LatestRun(lab1) = %s with %d rows (%v), want r1, the done one, not the newer failed r5", ref.ID, len(ref.Rows), err)
		}
		if _, err := s.LatestRun(ctx, "lab2"); !errors.Is(err, ErrNoRun) {
			t.Errorf("LatestRun of a block never run: %v, want ErrNoRun", err)
		}
		// The answers are kept, "none" included, until a run of the block is
		// saved: a run of lab2 finishing is seen at once, and so is a newer
		// done run of lab1.
		if err := s.SaveRun(ctx, Run{ID: "r6", Learner: "eve", Block: "lab2", Request: req, Status: RunQueued, CreatedAt: t0.Add(2 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.LatestRun(ctx, "lab2"); !errors.Is(err, ErrNoRun) {
			t.Errorf("LatestRun(lab2) with only a queued run: %v, want ErrNoRun", err)
		}
		if err := s.SaveRun(ctx, Run{ID: "r6", Learner: "eve", Block: "lab2", Request: req, Status: RunDone, CreatedAt: t0.Add(2 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if ref, err := s.LatestRun(ctx, "lab2"); err != nil || ref.ID != "r6" {
			t.Errorf("LatestRun(lab2) after r6 is done = %q, %v; want r6", ref.ID, err)
		}
		if err := s.SaveRun(ctx, Run{ID: "r7", Learner: "eve", Block: "lab1", Request: req, Status: RunDone, CreatedAt: t0.Add(3 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if ref, err := s.LatestRun(ctx, "lab1"); err != nil || ref.ID != "r7" {
			t.Errorf("LatestRun(lab1) after r7 is done = %q, %v; want r7", ref.ID, err)
		}
	})
}

// Saving a run again updates its status and times but never its request,
// learner or creation time.
func TestSaveRunUpdatesOnlyState(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := t.Context()
		t0 := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
		if err := s.SaveRun(ctx, Run{ID: "x", Learner: "a", Request: json.RawMessage(`{"a":1}`), Status: RunQueued, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveRun(ctx, Run{ID: "x", Learner: "b", Request: json.RawMessage(`{"b":2}`), Status: RunFailed, Reason: "why", CreatedAt: t0.Add(time.Hour), StartedAt: t0, EndedAt: t0.Add(time.Second)}); err != nil {
			t.Fatal(err)
		}
		r, err := s.Run(ctx, "x")
		if err != nil {
			t.Fatal(err)
		}
		if r.Learner != "a" || string(r.Request) != `{"a":1}` || !r.CreatedAt.Equal(t0) || r.Status != RunFailed || r.Reason != "why" || !r.StartedAt.Equal(t0) {
			t.Errorf("after update: %+v", r)
		}
		if err := s.SaveRun(ctx, Run{Learner: "a"}); err == nil {
			t.Error("SaveRun without an id succeeded")
		}
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// eachBenchDB runs a benchmark on SQLite and on Postgres (skipped, saying
// how to run it, when CAPACITYLAB_TEST_POSTGRES is not set).
func eachBenchDB(b *testing.B, fn func(b *testing.B, s *Store)) {
	b.Run("sqlite", func(b *testing.B) { fn(b, sqliteDB(b).open(b)) })
	b.Run("postgres", func(b *testing.B) { fn(b, postgresDB(b).open(b)) })
}

// BenchmarkAddRecords measures saving one 30 s window at 2,000/s.
func BenchmarkAddRecords(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, s *Store) {
		recs := testRecords(0, 60000)
		b.ResetTimer()
		for i := range b.N {
			id := fmt.Sprintf("run-%d", i)
			if err := s.SaveRun(b.Context(), Run{ID: id, Learner: "a", Status: RunDone, CreatedAt: time.Now()}); err != nil {
				b.Fatal(err)
			}
			if err := s.AddRecords(b.Context(), id, recs); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(recs)*b.N)/b.Elapsed().Seconds(), "records/s")
	})
}

// BenchmarkWindowWrites stores what one 30 s window of a 2,000-a-second
// run gives the store, as the runner writes it: 120 progress events (one
// every 250 ms) and the window's row event, one at a time as they are
// logged, then the row and the 60,000 raw records. It reports the
// window's time to store (ms/window, against the 30 s the window takes to
// run) and the rows written a second (records/s, events/s), and the
// processor time this process spent (cpu-ms/window), since the machine is
// shared.
//
//	CAPACITYLAB_TEST_POSTGRES=postgres://... go test ./store -run '^$' -bench WindowWrites -benchtime 10x
func BenchmarkWindowWrites(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, s *Store) {
		ctx := b.Context()
		recs := testRecords(0, 60000)
		progress := []byte(`{"seq":0,"kind":"progress","at":"2026-12-01T16:05:15.17883775Z","windows":2,"window":0,"rate":2000,"seconds":30,"elapsed_ms":400.335,"sent":800,"ended":790}`)
		row := result.Row{Window: 0, Offered: 2000, Sent: 60000, OK: 59990, Refused: 10, OKPerSec: 1999.7, P50MS: 20.1, P99MS: 41.3, N: 59990}
		rowJSON, _ := json.Marshal(row)
		const events = 121
		cpu0 := processCPU()
		b.ResetTimer()
		for i := range b.N {
			id := fmt.Sprintf("run-%d", i)
			if err := s.SaveRun(ctx, Run{ID: id, Learner: "a", Status: RunRunning, CreatedAt: time.Now()}); err != nil {
				b.Fatal(err)
			}
			for seq := 1; seq < events; seq++ {
				if err := s.AddRunEvent(ctx, id, RunEvent{Seq: seq, Kind: "progress", JSON: progress}); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.AddRow(ctx, id, row); err != nil {
				b.Fatal(err)
			}
			if err := s.AddRunEvent(ctx, id, RunEvent{Seq: events, Kind: "row", JSON: rowJSON}); err != nil {
				b.Fatal(err)
			}
			if err := s.AddRecords(ctx, id, recs); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		secs := b.Elapsed().Seconds()
		b.ReportMetric(secs*1000/float64(b.N), "ms/window")
		b.ReportMetric(float64(len(recs)*b.N)/secs, "records/s")
		b.ReportMetric(float64(events*b.N)/secs, "events/s")
		b.ReportMetric(float64((processCPU()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/window")
	})
}

// A run's stored end is final: a later SaveRun of another status (a
// runner declared lost that was only stalled, finishing after all) and a
// later event at the terminal event's seq leave the end as it was; an
// event that is not terminal is still replaced.
func TestStoredEndIsFinal(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		now := time.Now().UTC()
		r := Run{ID: "r1", Learner: "l", Request: []byte(`{}`), Status: RunRunning, CreatedAt: now, StartedAt: now}
		if err := s.SaveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := s.AddRunEvent(ctx, "r1", RunEvent{Seq: 1, Kind: "started", JSON: []byte(`{"seq":1,"kind":"started"}`)}); err != nil {
			t.Fatal(err)
		}
		if err := s.AddRunEvent(ctx, "r1", RunEvent{Seq: 1, Kind: "progress", JSON: []byte(`{"seq":1,"kind":"progress"}`)}); err != nil {
			t.Fatal(err)
		}
		r.Status, r.Reason, r.EndedAt = RunFailed, "runner lost: test", now
		if err := s.SaveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := s.AddRunEvent(ctx, "r1", RunEvent{Seq: 2, Kind: "failed", JSON: []byte(`{"seq":2,"kind":"failed"}`)}); err != nil {
			t.Fatal(err)
		}
		r.Status, r.Reason = RunDone, ""
		if err := s.SaveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := s.AddRunEvent(ctx, "r1", RunEvent{Seq: 2, Kind: "done", JSON: []byte(`{"seq":2,"kind":"done"}`)}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Run(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != RunFailed || got.Reason != "runner lost: test" {
			t.Errorf("run stored as %s %q after a later save of done; want the failed end kept", got.Status, got.Reason)
		}
		es, err := s.RunEvents(ctx, "r1", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 2 || es[0].Kind != "progress" || es[1].Kind != "failed" {
			t.Errorf("events %+v: want progress (replaced) then failed (kept)", es)
		}
	})
}
