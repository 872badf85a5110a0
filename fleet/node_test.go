package fleet_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"capacitylab/fleet"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
	"capacitylab/store/storetest"
)

// startNode starts a runner process's part on a store of its own: a
// runner.Runner with real lab and load children (this test binary), and a
// Node taking sweep jobs, one at a time. It is stopped when the test ends.
func startNode(t *testing.T, dbURL, id string) (*fleet.Node, *runner.Runner) {
	t.Helper()
	st := openStore(t, dbURL)
	rn, err := runner.New(runner.Config{Lab: testCommand(t, labEnv), Load: testCommand(t, loadEnv), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	node, err := fleet.NewNode(fleet.NodeConfig{Store: st, Runner: rn, ID: id, Host: "test-host", Slots: 1,
		HeartbeatEvery: 200 * time.Millisecond, LostAfter: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := node.Stop(ctx); err != nil {
			t.Errorf("stopping node %s: %v", id, err)
		}
	})
	return node, rn
}

// waitRun polls the store until run id satisfies ok, failing after
// timeout.
func waitRun(t *testing.T, st *store.Store, id string, ok func(store.Run) bool, timeout time.Duration) store.Run {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r, err := st.Run(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s (%s) with %d rows after %v", id, r.Status, r.Reason, len(r.Rows), timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitStatus waits until run id has status want.
func waitStatus(t *testing.T, st *store.Store, id string, want store.RunStatus, timeout time.Duration) store.Run {
	t.Helper()
	return waitRun(t, st, id, func(r store.Run) bool { return r.Status == want }, timeout)
}

// waitRows waits until run id has at least n rows.
func waitRows(t *testing.T, st *store.Store, id string, n int, timeout time.Duration) {
	t.Helper()
	waitRun(t, st, id, func(r store.Run) bool { return len(r.Rows) >= n }, timeout)
}

// events reads run id's stored events, once the log ends with a terminal
// event or 10 s have passed, and checks that their seqs run 1, 2, 3...
// with exactly one terminal event, the last.
func events(t *testing.T, st *store.Store, id string) []runner.Event {
	t.Helper()
	// The runner stores a run's final status before its terminal event
	// (runner.finishLocked), so a log read just after waitStatus may not
	// have that event yet (seen under two busy loops): wait for it.
	var stored []store.RunEvent
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if stored, err = st.RunEvents(context.Background(), id, 0); err != nil {
			t.Fatal(err)
		}
		if n := len(stored); time.Now().After(deadline) || n > 0 && terminalJSON(t, stored[n-1].JSON) {
			break
		}
	}
	var out []runner.Event
	for i, se := range stored {
		var e runner.Event
		if err := json.Unmarshal(se.JSON, &e); err != nil {
			t.Fatal(err)
		}
		if se.Seq != i+1 || e.Seq != se.Seq {
			t.Fatalf("run %s: event %d is stored as seq %d (its JSON says %d): want contiguous seqs from 1", id, i, se.Seq, e.Seq)
		}
		if e.Kind.Terminal() != (i == len(stored)-1) {
			t.Fatalf("run %s: event %d of %d is %s: want one terminal event, the last", id, i+1, len(stored), e.Kind)
		}
		out = append(out, e)
	}
	return out
}

// terminalJSON says whether a stored event is a run's terminal event.
func terminalJSON(t *testing.T, b []byte) bool {
	t.Helper()
	var e runner.Event
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e.Kind.Terminal()
}

// A run submitted on a web replica is executed by a runner: done, with its
// rows, and one contiguous event log in the store (the submission's queued
// event, then the runner's). The run queued behind it is told its new
// place when the first starts, and runs next.
func TestRunnerExecutesSubmittedRun(t *testing.T) {
	dbURL := schemaURL(t)
	web, err := fleet.NewQueue(fleet.Config{Store: openStore(t, dbURL)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := web.SubmitFrom(ctx, "a", "192.0.2.1", small(10, 20))
	if err != nil {
		t.Fatal(err)
	}
	second, err := web.SubmitFrom(ctx, "b", "192.0.2.1", small(10))
	if err != nil {
		t.Fatal(err)
	}
	if first.Position != 1 || second.Position != 2 {
		t.Fatalf("positions %d and %d; want 1 and 2", first.Position, second.Position)
	}
	startNode(t, dbURL, "runner-1")
	st := openStore(t, dbURL)
	for _, tk := range []runner.Ticket{first, second} {
		r := waitStatus(t, st, tk.ID, store.RunDone, 60*time.Second)
		var q runner.Request
		json.Unmarshal(r.Request, &q)
		if len(r.Rows) != q.Windows() {
			t.Errorf("run %s: %d rows stored; want %d", tk.ID, len(r.Rows), q.Windows())
		}
		es := events(t, st, tk.ID)
		kinds := map[runner.Kind]int{}
		for _, e := range es {
			kinds[e.Kind]++
		}
		if es[0].Kind != runner.KindQueued || kinds[runner.KindStarted] != 1 || kinds[runner.KindRow] != q.Windows() || es[len(es)-1].Kind != runner.KindDone {
			t.Errorf("run %s's events %v: want queued first, started once, a row per window, done last", tk.ID, kinds)
		}
	}
	// The second run was queued when the first started: a queued event
	// at position 1 before its own start.
	moved := false
	for _, e := range events(t, st, second.ID) {
		if e.Kind == runner.KindStarted {
			break
		}
		moved = moved || (e.Kind == runner.KindQueued && e.Position == 1)
	}
	if !moved {
		t.Error("the second run was never told it moved to position 1")
	}
}

// A running run cancelled on a web replica (River's JobCancel, which
// reaches the job's context on the runner) ends cancelled, its rows so far
// kept, and its log ends with the runner's cancelled event.
func TestCancelRunning(t *testing.T) {
	dbURL := schemaURL(t)
	web, err := fleet.NewQueue(fleet.Config{Store: openStore(t, dbURL)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	q := small(10, 10, 10, 10, 10, 10, 10, 10)
	q.Seconds = 2
	tk, err := web.SubmitFrom(ctx, "a", "", q)
	if err != nil {
		t.Fatal(err)
	}
	startNode(t, dbURL, "runner-1")
	st := openStore(t, dbURL)
	waitStatus(t, st, tk.ID, store.RunRunning, 30*time.Second)
	waitRows(t, st, tk.ID, 1, 30*time.Second)
	if err := web.Cancel(tk.ID, "b"); err != runner.ErrNotYours {
		t.Fatalf("cancel by another learner: %v", err)
	}
	if err := web.Cancel(tk.ID, "a"); err != nil {
		t.Fatal(err)
	}
	r := waitStatus(t, st, tk.ID, store.RunCancelled, 20*time.Second)
	if !strings.HasPrefix(r.Reason, "You cancelled it after") || len(r.Rows) == 0 || len(r.Rows) == q.Windows() {
		t.Errorf("cancelled run: reason %q, %d of %d rows kept: want the cancel's reason and the rows before it", r.Reason, len(r.Rows), q.Windows())
	}
	es := events(t, st, tk.ID)
	if es[len(es)-1].Kind != runner.KindCancelled {
		t.Errorf("last event %s; want cancelled", es[len(es)-1].Kind)
	}
}

// ghostRun submits a run and has it claimed by runner "ghost" on host
// "gone-host", which beat once and is silent from then on, as a killed
// runner process.
func ghostRun(t *testing.T, dbURL string, web *fleet.Queue) runner.Ticket {
	t.Helper()
	ctx := context.Background()
	tk, err := web.SubmitFrom(ctx, "a", "", small(10))
	if err != nil {
		t.Fatal(err)
	}
	ghost := openStore(t, dbURL)
	if err := ghost.Heartbeat(ctx, "ghost", "gone-host", 1); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := ghost.ClaimRun(ctx, tk.ID, "ghost", time.Now()); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	return tk
}

// A runner whose heartbeat stops while it holds a run (here: a runner that
// claimed the run, beat once and went silent, as a killed process would)
// loses the run: another runner's reaper ends it failed, "runner lost",
// with its terminal event stored after the last, once.
func TestRunnerLost(t *testing.T) {
	dbURL := schemaURL(t)
	web, err := fleet.NewQueue(fleet.Config{Store: openStore(t, dbURL)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tk := ghostRun(t, dbURL, web)
	ghost := openStore(t, dbURL)
	if _, _, ok, _ := ghost.ClaimRun(ctx, tk.ID, "other", time.Now()); ok {
		t.Fatal("a running run was claimed twice")
	}
	claimed := time.Now()
	startNode(t, dbURL, "runner-alive")
	st := openStore(t, dbURL)
	r := waitStatus(t, st, tk.ID, store.RunFailed, 20*time.Second)
	if waited := time.Since(claimed); waited < 2*time.Second {
		t.Errorf("run reaped %v after its runner's last heartbeat; the bound is 2s", waited)
	}
	if !strings.HasPrefix(r.Reason, fleet.LostReasonPrefix+":") || !strings.Contains(r.Reason, "gone-host") {
		t.Errorf("reason %q: want it to begin %q and name the host", r.Reason, fleet.LostReasonPrefix)
	}
	es := events(t, st, tk.ID)
	if len(es) != 2 || es[1].Kind != runner.KindFailed || es[1].Reason != r.Reason {
		t.Fatalf("events %+v: want queued, then failed with the reason", es)
	}
	// Reaping again (another runner racing) changes nothing.
	lost, err := fleet.Reap(ctx, st, 2*time.Second, time.Now, nil)
	if err != nil || len(lost) != 0 {
		t.Fatalf("second reap: %v %v", lost, err)
	}
	if es2 := events(t, st, tk.ID); len(es2) != 2 {
		t.Fatalf("second reap stored more events: %d", len(es2))
	}
}

// A runner stopping (SIGTERM: Node.Stop) takes no more jobs and ends its
// running run interrupted, with the rows so far and its terminal event;
// the run queued behind it stays queued for another runner.
func TestStopInterruptsRunning(t *testing.T) {
	dbURL := schemaURL(t)
	web, err := fleet.NewQueue(fleet.Config{Store: openStore(t, dbURL)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	q := small(10, 10, 10, 10, 10, 10)
	q.Seconds = 2
	tk, err := web.SubmitFrom(ctx, "a", "", q)
	if err != nil {
		t.Fatal(err)
	}
	behind, err := web.SubmitFrom(ctx, "b", "", small(10))
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t, dbURL)
	rn, err := runner.New(runner.Config{Lab: testCommand(t, labEnv), Load: testCommand(t, loadEnv), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	node, err := fleet.NewNode(fleet.NodeConfig{Store: st, Runner: rn, ID: "stopping", Host: "test-host", Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitRows(t, st, tk.ID, 1, 30*time.Second)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := node.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	r := waitStatus(t, st, tk.ID, store.RunInterrupted, time.Second)
	if len(r.Rows) == 0 || !strings.HasPrefix(r.Reason, "The server stopped after") {
		t.Errorf("interrupted run: %d rows, reason %q", len(r.Rows), r.Reason)
	}
	if es := events(t, st, tk.ID); es[len(es)-1].Kind != runner.KindInterrupted {
		t.Errorf("last event %s; want interrupted", es[len(es)-1].Kind)
	}
	if b, _ := st.Run(ctx, behind.ID); b.Status != store.RunQueued {
		t.Errorf("the run behind is %s (%s); want it left queued for another runner", b.Status, b.Reason)
	}
	if n, _ := st.LiveSlots(ctx, time.Minute); n != 0 {
		t.Errorf("a stopped runner still counts %d slots", n)
	}
}

// With no runner left at all, a web replica's reaper ends the lost run.
func TestWebReapsWhenNoRunnerIsLeft(t *testing.T) {
	dbURL := schemaURL(t)
	web, err := fleet.NewQueue(fleet.Config{Store: openStore(t, dbURL), LostAfter: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tk := ghostRun(t, dbURL, web)
	done := make(chan struct{})
	go func() {
		defer close(done)
		web.ReapLoop(ctx, nil)
	}()
	st := openStore(t, dbURL)
	r := waitStatus(t, st, tk.ID, store.RunFailed, 20*time.Second)
	cancel()
	<-done
	if !strings.HasPrefix(r.Reason, fleet.LostReasonPrefix+":") {
		t.Errorf("reason %q", r.Reason)
	}
	if es := events(t, st, tk.ID); es[len(es)-1].Kind != runner.KindFailed {
		t.Errorf("last event %s; want failed", es[len(es)-1].Kind)
	}
}

// A runner that took a run's job and stopped before it claimed the run
// (its job left running, the run queued): the run is lost too, failed
// "runner lost" with its terminal event, rather than queued for ever.
func TestLostBeforeStart(t *testing.T) {
	dbURL := schemaURL(t)
	web, err := fleet.NewQueue(fleet.Config{Store: openStore(t, dbURL)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tk, err := web.SubmitFrom(ctx, "a", "", small(10))
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t, dbURL)
	// What River's fetch does to the job (state, attempted_at) when a
	// runner takes it, dated as if it took it a minute ago.
	tag, err := st.Pool().Exec(ctx, `UPDATE river_job SET state = 'running', attempted_at = now() - interval '1 minute'
		WHERE id = (SELECT job_id FROM runs WHERE id = $1)`, tk.ID)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("marking the job taken: %v (%d rows)", err, tag.RowsAffected())
	}
	// Taken a moment ago is not lost yet.
	if lost, err := fleet.Reap(ctx, st, 2*time.Minute, time.Now, nil); err != nil || len(lost) != 0 {
		t.Fatalf("reap with a bound longer than the take: %v %v", lost, err)
	}
	lost, err := fleet.Reap(ctx, st, 10*time.Second, time.Now, nil)
	if err != nil || len(lost) != 1 || lost[0].ID != tk.ID {
		t.Fatalf("reap: %v %v; want the run", lost, err)
	}
	r, err := st.Run(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.RunFailed || !strings.HasPrefix(r.Reason, fleet.LostReasonPrefix+": the runner process that took it") {
		t.Errorf("run %s %q", r.Status, r.Reason)
	}
	if es := events(t, st, tk.ID); len(es) != 2 || es[1].Kind != runner.KindFailed {
		t.Errorf("events %+v: want queued then failed", es)
	}
}

// The database out of reach for several times LostAfter in the middle of
// a run (every process's way to it cut, as when Postgres stops: a relay
// closes every connection and refuses new ones, then lets them through
// again) fails nothing that is fine: no reaper takes the runner for lost
// for the heartbeats the outage kept from being written, the runner's
// writes wait for the database, and the run ends done with every window's
// row and one contiguous log with one terminal event.
func TestOutageFailsNoLiveRun(t *testing.T) {
	dbURL := schemaURL(t)
	relay := storetest.NewRelay(t, dbURL)
	cutURL := relay.URL(dbURL)
	web, err := fleet.NewQueue(fleet.Config{Store: openStore(t, cutURL), LostAfter: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		web.ReapLoop(ctx, nil)
	}()
	defer func() { cancel(); <-reaped }()
	q := small(10, 10, 10, 10, 10, 10)
	q.Seconds = 2
	tk, err := web.SubmitFrom(ctx, "a", "", q)
	if err != nil {
		t.Fatal(err)
	}
	startNode(t, cutURL, "runner-1")
	st := openStore(t, dbURL) // the test's own way in, never cut
	waitRows(t, st, tk.ID, 1, 30*time.Second)
	const outage = 8 * time.Second // four times LostAfter
	relay.Cut()
	time.Sleep(outage)
	relay.Restore()
	r := waitRun(t, st, tk.ID, func(r store.Run) bool { return r.Status != store.RunRunning }, 90*time.Second)
	if r.Status != store.RunDone || len(r.Rows) != q.Windows() {
		t.Fatalf("after an outage of %v the run is %s (%q) with %d of %d rows: want done with every row", outage, r.Status, r.Reason, len(r.Rows), q.Windows())
	}
	es := events(t, st, tk.ID)
	if k := es[len(es)-1].Kind; k != runner.KindDone {
		t.Fatalf("the log ends %s: want done", k)
	}
	// Nothing is written after the end, whatever the reapers do later.
	time.Sleep(3 * time.Second)
	if es2 := events(t, st, tk.ID); len(es2) != len(es) {
		t.Fatalf("%d events after the end was stored, %d before", len(es2), len(es))
	}
}

// The failed event a reaper stores names the window the run reached, as a
// runner's own terminal event does: window is how many windows finished
// (their rows stored), windows how many the run asked for.
func TestReapedEventNamesTheWindow(t *testing.T) {
	dbURL := schemaURL(t)
	web, err := fleet.NewQueue(fleet.Config{Store: openStore(t, dbURL)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tk, err := web.SubmitFrom(ctx, "a", "", small(10, 20, 30))
	if err != nil {
		t.Fatal(err)
	}
	ghost := openStore(t, dbURL)
	if err := ghost.Heartbeat(ctx, "ghost", "gone-host", 1); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := ghost.ClaimRun(ctx, tk.ID, "ghost", time.Now()); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	// Two of its three windows finished before its runner went silent.
	for w := range 2 {
		if err := ghost.AddRow(ctx, tk.ID, result.Row{Window: w, Offered: float64(10 * (w + 1))}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	st := openStore(t, dbURL)
	if lost, err := fleet.Reap(ctx, st, 10*time.Millisecond, time.Now, nil); err != nil || len(lost) != 1 {
		t.Fatalf("reap: %v %v; want the run", lost, err)
	}
	es := events(t, st, tk.ID)
	end := es[len(es)-1]
	if end.Kind != runner.KindFailed || end.Window != 2 || end.Windows != 3 {
		t.Fatalf("the reaper's event: %s, window %d of %d; want failed, window 2 of 3", end.Kind, end.Window, end.Windows)
	}
}

// A runner cut off from the database while the others reach it (its way
// to the database cut for longer than LostAfter; a reaper that never lost
// the database takes it for lost) is fenced out when it comes back: its
// next write is refused, so it stops the run and writes nothing more, and
// the run keeps the one terminal event the reaper stored, "runner lost",
// after a contiguous log.
func TestLostRunnerIsFencedOut(t *testing.T) {
	dbURL := schemaURL(t)
	relay := storetest.NewRelay(t, dbURL)
	web, err := fleet.NewQueue(fleet.Config{Store: openStore(t, dbURL), LostAfter: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		web.ReapLoop(ctx, nil)
	}()
	defer func() { cancel(); <-reaped }()
	q := small(10, 10, 10, 10, 10, 10, 10, 10)
	q.Seconds = 2
	tk, err := web.SubmitFrom(ctx, "a", "", q)
	if err != nil {
		t.Fatal(err)
	}
	_, rn := startNode(t, relay.URL(dbURL), "runner-cut")
	st := openStore(t, dbURL)
	waitRows(t, st, tk.ID, 1, 30*time.Second)
	relay.Cut()
	r := waitStatus(t, st, tk.ID, store.RunFailed, 30*time.Second)
	relay.Restore()
	if !strings.HasPrefix(r.Reason, fleet.LostReasonPrefix+":") {
		t.Fatalf("reason %q: want runner lost", r.Reason)
	}
	// The runner, alive, comes back: its writes are refused and it stops
	// the run.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if s, ok := rn.Get(tk.ID); ok && s.Status != store.RunRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the runner taken for lost still runs the run 60 s after it could reach the database again")
		}
	}
	es := events(t, st, tk.ID)
	end := es[len(es)-1]
	if end.Kind != runner.KindFailed || !strings.HasPrefix(end.Reason, fleet.LostReasonPrefix+":") {
		t.Fatalf("the log ends %s %q: want the reaper's runner lost", end.Kind, end.Reason)
	}
	if after, _ := st.Run(ctx, tk.ID); after.Status != store.RunFailed || after.Reason != r.Reason || len(after.Rows) >= q.Windows() {
		t.Fatalf("after the runner came back the run is %s (%q) with %d rows: want the reaper's end kept", after.Status, after.Reason, len(after.Rows))
	}
}
