package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"
)

// writerAndReader is the two Stores of a wake-up test: on Postgres two
// Stores on one database, as two servers have; on SQLite (one process)
// the same Store.
func writerAndReader(t *testing.T, d testDB) (writer, reader *Store) {
	writer = d.open(t)
	if d.kind == "postgres" {
		return writer, d.open(t)
	}
	return writer, writer
}

// follower reads a run's events as a stream will: from the stored
// sequence after each wake-up, checking that they come in order with
// none skipped.
type follower struct {
	t        *testing.T
	s        *Store
	run      string
	last     int // the seq of the last event read
	lastWake int // the highest Seq of a wake-up so far
	missed   int // Missed wake-ups
	wakes    int
}

// take handles one wake-up: it must not go back, and the events stored
// from the reader's position must carry on from it.
func (f *follower) take(wk Wake) {
	f.t.Helper()
	f.wakes++
	if wk.Missed {
		f.missed++
	}
	if wk.Seq != 0 && wk.Seq <= f.lastWake {
		f.t.Fatalf("wake-up for seq %d after one for %d: out of order", wk.Seq, f.lastWake)
	}
	f.lastWake = max(f.lastWake, wk.Seq)
	evs, err := f.s.RunEvents(context.Background(), f.run, f.last)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, e := range evs {
		if e.Seq != f.last+1 {
			f.t.Fatalf("read event %d after %d", e.Seq, f.last)
		}
		if want := fmt.Sprintf(`{"n":%d}`, e.Seq); string(e.JSON) != want {
			f.t.Fatalf("event %d: %s, want %s", e.Seq, e.JSON, want)
		}
		f.last = e.Seq
	}
	if wk.Seq > f.last {
		f.t.Fatalf("woken for seq %d, but only %d are stored: the wake-up came before the commit", wk.Seq, f.last)
	}
}

// until takes wake-ups until every event up to seq is read.
func (f *follower) until(w *Watch, seq int) {
	f.t.Helper()
	timeout := time.After(20 * time.Second)
	for f.last < seq {
		select {
		case wk := <-w.C():
			f.take(wk)
		case <-timeout:
			f.t.Fatalf("read up to event %d of %d after %d wake-ups: the rest woke nobody (wake error: %v)", f.last, seq, f.wakes, f.s.WakeErr())
		}
	}
}

func addEvents(t *testing.T, s *Store, run string, from, to int) {
	t.Helper()
	if err := writeEvents(s, run, from, to); err != nil {
		t.Fatal(err)
	}
}

func writeEvents(s *Store, run string, from, to int) error {
	for seq := from; seq <= to; seq++ {
		if err := s.AddRunEvent(context.Background(), run, RunEvent{Seq: seq, Kind: "progress", JSON: fmt.Appendf(nil, `{"n":%d}`, seq)}); err != nil {
			return err
		}
	}
	return nil
}

// One Store writes a run's events while another (on SQLite the same one)
// watches it: the watcher is woken after each commit, in order, and reads
// every event from its position; a watch of another run is not woken.
func TestWatchRunWakesReader(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		a, b := writerAndReader(t, d)
		ctx := context.Background()
		for _, id := range []string{"r1", "r2"} {
			if err := a.SaveRun(ctx, Run{ID: id, Learner: "l", Status: RunRunning, CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		w := b.WatchRun("r1")
		defer w.Close()
		other := b.WatchRun("r2")
		defer other.Close()
		f := &follower{t: t, s: b, run: "r1"}
		written := make(chan error, 1)
		go func() { written <- writeEvents(a, "r1", 1, 300) }()
		f.until(w, 300)
		if err := <-written; err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: 300 events read after %d wake-ups (%d of them Missed: the listener's first start)", d.kind, f.wakes, f.missed)
		if d.kind == "sqlite" && f.missed != 0 {
			t.Errorf("SQLite reported %d missed wake-ups; it has no connection to lose", f.missed)
		}
		select {
		case wk := <-other.C():
			if !wk.Missed || wk.Seq != 0 {
				t.Errorf("the watch of run r2 was woken by r1's events: %+v", wk)
			}
		default:
		}
		// After Close, nothing more arrives.
		w.Close()
		addEvents(t, a, "r1", 301, 301)
		addEvents(t, a, "r2", 1, 1)
		f2 := &follower{t: t, s: b, run: "r2"}
		f2.until(other, 1)
		select {
		case wk := <-w.C():
			t.Errorf("a closed watch was woken: %+v", wk)
		default:
		}
	})
}

// Votes stored through one Store wake the class session's watchers on
// another, once per batch, after the batch commits; so does closing a
// round.
func TestWatchClassWakesReader(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		a, b := writerAndReader(t, d)
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		c := ClassSession{Code: "WAKE23", Lesson: "queues", HostHash: "h", CreatedAt: t0, ActiveAt: t0}
		if err := a.CreateClassSession(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := a.SaveClassRound(ctx, c.Code, ClassRound{Question: "p1", Round: 1, Status: RoundOpen, OpenedAt: t0}); err != nil {
			t.Fatal(err)
		}
		w := b.WatchClass(c.Code)
		defer w.Close()
		const batches, perBatch = 5, 20
		seen := 0
		for i := range batches {
			var votes []ClassVote
			for p := range perBatch {
				id := i*perBatch + p + 1
				if err := a.AddClassParticipant(ctx, c.Code, ClassParticipant{ID: id, TokenHash: fmt.Sprint("t", id), JoinedAt: t0}); err != nil {
					t.Fatal(err)
				}
				votes = append(votes, ClassVote{Question: "p1", Round: 1, Participant: id, Option: "a", At: t0})
			}
			if err := a.SaveClassVotes(ctx, c.Code, votes); err != nil {
				t.Fatal(err)
			}
			// Woken (perhaps first with Missed, as the listener starts),
			// and the votes are there when it is.
			for seen < (i+1)*perBatch {
				select {
				case <-w.C():
				case <-time.After(20 * time.Second):
					t.Fatalf("batch %d of votes woke nobody (wake error: %v)", i+1, b.WakeErr())
				}
				got, err := b.ClassSession(ctx, c.Code)
				if err != nil {
					t.Fatal(err)
				}
				seen = len(got.Votes)
			}
			if seen != (i+1)*perBatch {
				t.Fatalf("after batch %d: %d votes stored, want %d", i+1, seen, (i+1)*perBatch)
			}
		}
		// The last batch's own wake-up may still be on its way: the reader
		// stops as soon as it finds every vote stored, which an earlier
		// wake-up can already show (CI once saw it arrive after the
		// refused vote below). Take what comes until none has for 300 ms.
		for quiet := false; !quiet; {
			select {
			case <-w.C():
			case <-time.After(300 * time.Millisecond):
				quiet = true
			}
		}
		// Closing the round wakes the watcher; a batch refused (its round
		// closed) stores nothing and wakes nobody.
		if err := a.SaveClassRound(ctx, c.Code, ClassRound{Question: "p1", Round: 1, Status: RoundClosed, OpenedAt: t0, ClosedAt: t0}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-w.C():
		case <-time.After(20 * time.Second):
			t.Fatalf("closing the round woke nobody (wake error: %v)", b.WakeErr())
		}
		if err := a.SaveClassVote(ctx, c.Code, ClassVote{Question: "p1", Round: 1, Participant: 1, Option: "b", At: t0}); err == nil {
			t.Fatal("a vote in a closed round was stored")
		}
		select {
		case wk := <-w.C():
			if !wk.Missed {
				t.Errorf("a refused vote woke the watcher: %+v", wk)
			}
		case <-time.After(300 * time.Millisecond):
		}
	})
}

// Every other change to a class session stored through one Store wakes
// its watchers on another, after it commits, with the change there to
// read: a join, a round opened and its steps, the focus and run, the end,
// and the end after idle time. Storing the last activity alone wakes
// nobody.
func TestWatchClassWakesOnEveryChange(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		a, b := writerAndReader(t, d)
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		c := ClassSession{Code: "WAKE45", Lesson: "queues", HostHash: "h", CreatedAt: t0, ActiveAt: t0}
		if err := a.CreateClassSession(ctx, c); err != nil {
			t.Fatal(err)
		}
		idle := ClassSession{Code: "IDLE67", Lesson: "queues", HostHash: "h", CreatedAt: t0, ActiveAt: t0}
		if err := a.CreateClassSession(ctx, idle); err != nil {
			t.Fatal(err)
		}
		w, wi := b.WatchClass(c.Code), b.WatchClass(idle.Code)
		defer w.Close()
		defer wi.Close()
		// Until the listener listens, a change may wake nobody: it tells
		// the watchers so with Missed. Wait for that first.
		for _, x := range []*Watch{w, wi} {
			if d.kind == "postgres" {
				select {
				case <-x.C():
				case <-time.After(20 * time.Second):
					t.Fatalf("the listener never began (wake error: %v)", b.WakeErr())
				}
			}
		}
		woke := func(w *Watch, what string, check func(ClassSession) bool, code string) {
			t.Helper()
			select {
			case <-w.C():
			case <-time.After(20 * time.Second):
				t.Fatalf("%s woke nobody (wake error: %v)", what, b.WakeErr())
			}
			got, err := b.ClassSession(ctx, code)
			if err != nil {
				t.Fatal(err)
			}
			if !check(got) {
				t.Errorf("woken after %s, but the store does not show it: %+v", what, got)
			}
		}
		if err := a.AddClassParticipant(ctx, c.Code, ClassParticipant{ID: 1, TokenHash: "t1", JoinedAt: t0}); err != nil {
			t.Fatal(err)
		}
		woke(w, "a join", func(g ClassSession) bool { return len(g.Participants) == 1 }, c.Code)
		if err := a.AddClassParticipant(ctx, c.Code, ClassParticipant{ID: 1, TokenHash: "t2", JoinedAt: t0}); !errors.Is(err, ErrParticipantTaken) {
			t.Errorf("a second participant 1: %v, want ErrParticipantTaken", err)
		}
		r := ClassRound{Question: "p1", Round: 1, Status: RoundOpen, OpenedAt: t0}
		for _, step := range []func(){
			func() {},
			func() { r.Status, r.ClosedAt = RoundClosed, t0.Add(time.Second) },
			func() { r.Status, r.RevealedAt = RoundRevealed, t0.Add(2*time.Second) },
			func() { r.AnsweredAt = t0.Add(3 * time.Second) },
		} {
			step()
			if err := a.SaveClassRound(ctx, c.Code, r); err != nil {
				t.Fatal(err)
			}
			want := r
			woke(w, "round step "+r.Status, func(g ClassSession) bool { return len(g.Rounds) == 1 && g.Rounds[0] == want }, c.Code)
		}
		if err := a.UpdateClassSession(ctx, c.Code, "lab-1", "r-9", t0.Add(4*time.Second)); err != nil {
			t.Fatal(err)
		}
		woke(w, "a run and focus", func(g ClassSession) bool { return g.Focus == "lab-1" && g.RunID == "r-9" }, c.Code)
		if err := a.TouchClassSession(ctx, c.Code, t0.Add(5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := a.TouchClassSession(ctx, c.Code, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if got, err := b.ClassSession(ctx, c.Code); err != nil || !got.ActiveAt.Equal(t0.Add(5*time.Second)) {
			t.Errorf("activity after touching at +5 s and then +1 s: %v (%v), want the later +5 s kept", got.ActiveAt, err)
		}
		select {
		case wk := <-w.C():
			t.Errorf("storing the last activity woke the watcher: %+v", wk)
		case <-time.After(300 * time.Millisecond):
		}
		if err := a.EndClassSession(ctx, c.Code, t0.Add(6*time.Second)); err != nil {
			t.Fatal(err)
		}
		woke(w, "the end", ClassSession.Ended, c.Code)
		codes, err := a.EndIdleClassSessions(ctx, t0.Add(time.Second), t0.Add(7*time.Second))
		if err != nil || len(codes) != 1 || codes[0] != idle.Code {
			t.Fatalf("ending idle sessions: %v (%v), want %s", codes, err, idle.Code)
		}
		woke(wi, "the end after idle time", ClassSession.Ended, idle.Code)
	})
}

// The reader's listening connection is ended by Postgres (as a restart or
// a failover ends it) while the writer goes on writing: the watcher is
// told that wake-ups may have been missed once the listener is back,
// re-reads from its stored position, and so reads every event, in order.
func TestWatchAcrossDroppedListener(t *testing.T) {
	d := postgresDB(t)
	a, b := d.open(t), d.open(t)
	// The reader's listener waits 5 s before connecting again, so the
	// writes below happen while nobody listens.
	b.wakes.listen.retryMin = 5 * time.Second
	ctx := context.Background()
	if err := a.SaveRun(ctx, Run{ID: "r", Learner: "l", Status: RunRunning, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	w := b.WatchRun("r")
	defer w.Close()
	f := &follower{t: t, s: b, run: "r"}
	addEvents(t, a, "r", 1, 50)
	f.until(w, 50)
	missedBefore := f.missed

	// End the reader's listening connection: the one that ran LISTEN on
	// this test's schema's channel.
	var ended int
	if err := a.db.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'capacitylab-wake' AND query LIKE ?`, `LISTEN "`+wakeChannelPrefix+d.schema+`"%`).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if ended != 1 {
		t.Fatalf("ended %d listening connections, want the reader's one", ended)
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.WakeErr() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the reader's listener did not notice its connection ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("listener down: %v", b.WakeErr())
	// A wake-up still waiting tells of events up to 50 (the follower may
	// have read them all on the one before): drop it, so that only a
	// Missed one can lead the follower to the events written now.
	select {
	case wk := <-w.C():
		if wk.Seq > 50 || wk.Missed {
			t.Fatalf("a wake-up %+v waited before any event past 50 was written", wk)
		}
	default:
	}
	// Written while the reader's listener is down: their wake-ups go to
	// nobody.
	addEvents(t, a, "r", 51, 100)
	if b.WakeErr() == nil {
		t.Fatal("the listener came back before the writes ended: the test proves nothing; lengthen retryMin")
	}
	f.until(w, 100)
	if f.missed == missedBefore {
		t.Fatalf("read events 51-100 after the listener was ended, but no wake-up said some may have been missed")
	}
	// And the listener is back: the next events wake the reader as before.
	addEvents(t, a, "r", 101, 200)
	f.until(w, 200)
	if err := b.WakeErr(); err != nil {
		t.Errorf("listening again, but WakeErr = %v", err)
	}
	t.Logf("200 events read after %d wake-ups, %d of them Missed (%d after the connection was ended)", f.wakes, f.missed, f.missed-missedBefore)
}

// A Store's Close stops its listener, which ends its connection.
func TestCloseStopsListener(t *testing.T) {
	d := postgresDB(t)
	s := d.open(t)
	w := s.WatchRun("r")
	defer w.Close()
	select {
	case wk := <-w.C(): // the listener's first start
		if !wk.Missed {
			t.Fatalf("first wake-up %+v, want Missed", wk)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the listener did not start: %v", s.WakeErr())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	other := d.open(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := other.db.QueryRowContext(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = 'capacitylab-wake' AND query LIKE ?`, `LISTEN "`+wakeChannelPrefix+d.schema+`"%`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d listening connections left after Close", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestParseWake(t *testing.T) {
	for _, c := range []struct {
		payload, key string
		seq          int
		ok           bool
	}{
		{"run r-1 7", "run r-1", 7, true},
		{"run r with spaces 12", "run r with spaces", 12, true},
		{"class ABC234", "class ABC234", 0, true},
		{"presence ABC234", "presence ABC234", 0, true},
		{"run r-1", "", 0, false},
		{"run r-1 x", "", 0, false},
		{"vote x", "", 0, false},
		{"run", "", 0, false},
	} {
		key, wk, ok := parseWake(c.payload)
		if key != c.key || wk.Seq != c.seq || ok != c.ok || wk.Missed {
			t.Errorf("parseWake(%q) = %q %+v %v, want %q seq %d %v", c.payload, key, wk, ok, c.key, c.seq, c.ok)
		}
	}
}

// A listener that cannot connect says why (WakeErr) and keeps trying;
// its Watch gets no wake-up, not even Missed, until it listens. Before
// any Watch there is nothing to report.
func TestWakeErrWhileListenerCannotConnect(t *testing.T) {
	d := postgresDB(t)
	s := d.open(t)
	if err := s.WakeErr(); err != nil {
		t.Fatalf("WakeErr before any Watch = %v, want nil", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.wakes.listen.cfg.Port = uint16(ln.Addr().(*net.TCPAddr).Port)
	ln.Close() // nothing listens there now
	w := s.WatchRun("r")
	defer w.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.WakeErr()
		if err != nil && err.Error() != "not connected yet" {
			t.Logf("listener cannot connect: %v", err)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("WakeErr = %v after 10 s of a listener that cannot connect", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case wk := <-w.C():
		t.Fatalf("woken %+v by a listener that never listened", wk)
	default:
	}
}
