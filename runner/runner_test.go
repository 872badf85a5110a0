package runner_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"capacitylab/affinity"
	"capacitylab/internal/physics"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/measure"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/sim"
	"capacitylab/store"
)

// A run goes queued → started → progress… → row per window → done, every
// event numbered in order; its rows and every raw record are saved.
func TestRunToCompletion(t *testing.T) {
	reg := prometheus.NewRegistry()
	r, st := newRunner(t, runner.Config{Registerer: reg})
	tk, err := r.Submit(t.Context(), "alice", small(40, 80))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Position != 1 || tk.ID == "" {
		t.Errorf("ticket %+v, want position 1 and an id", tk)
	}
	collect(t, r, tk.ID, 0, 30*time.Second)
	// The run's log itself, replayed whole: a live subscription may see a
	// progress replaced by a newer one when its reader is slow (a loaded
	// machine, the race detector), which is its documented behaviour,
	// not the log's.
	es, sub, err := r.Subscribe(tk.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	checkSeqs(t, es, 1)
	if es[0].Kind != runner.KindQueued || es[0].Position != 1 {
		t.Errorf("first event %+v, want queued at position 1", es[0])
	}
	kinds := map[runner.Kind]int{}
	var rows []runner.Event
	progressPerWindow := map[int]int{}
	for _, e := range es {
		kinds[e.Kind]++
		switch e.Kind {
		case runner.KindRow:
			rows = append(rows, e)
		case runner.KindProgress:
			progressPerWindow[e.Window]++
		}
	}
	if kinds[runner.KindStarted] != 1 || len(rows) != 2 || last(es).Kind != runner.KindDone {
		t.Fatalf("event kinds %v, last %+v: want one started, two rows, done last", kinds, last(es))
	}
	for w := range 2 {
		// One-second windows with progress every 250 ms and as each ends: at least four.
		if progressPerWindow[w] < 4 {
			t.Errorf("window %d had %d progress events, want at least 4", w, progressPerWindow[w])
		}
	}
	arrivals := 0
	for i, e := range rows {
		row := e.Row
		if row.Window != i || row.Offered != []float64{40, 80}[i] {
			t.Errorf("row %d: window %d offered %v", i, row.Window, row.Offered)
		}
		if row.Lost != 0 || row.OK == 0 || row.OK+row.Refused+row.Gaveup+row.Error != row.Sent {
			t.Errorf("row %d does not balance or served nothing: %+v", i, row)
		}
		arrivals += row.Arrivals
	}
	snap := waitStatus(t, r, tk.ID, store.RunDone, 5*time.Second)
	if len(snap.Rows) != 2 || snap.LabPID != 0 || snap.LoadPID != 0 {
		t.Errorf("snapshot has %d rows, lab pid %d, load pid %d; want 2 rows and no children", len(snap.Rows), snap.LabPID, snap.LoadPID)
	}

	saved, err := st.Run(t.Context(), tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Status != store.RunDone || saved.Learner != "alice" || len(saved.Rows) != 2 || saved.StartedAt.IsZero() || saved.EndedAt.IsZero() {
		t.Errorf("saved run %+v", saved)
	}
	if !reflect.DeepEqual(saved.Rows[1], *rows[1].Row) {
		t.Errorf("saved row %+v, streamed %+v", saved.Rows[1], *rows[1].Row)
	}
	n, err := st.CountRecords(t.Context(), tk.ID)
	if err != nil || n != arrivals {
		t.Errorf("saved %d records (%v), want one per arrival: %d", n, err, arrivals)
	}

	// The metrics saw one run end done, and nothing waiting, running or watching now.
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetValue() + "}"
			}
			switch {
			case m.GetCounter() != nil:
				got[name] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[name] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				got[name] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	want := map[string]float64{"capacitylab_runs_total{done}": 1, "capacitylab_runs_total{failed}": 0, "capacitylab_runs_queued": 0,
		"capacitylab_runs_running": 0, "capacitylab_run_watchers": 0, "capacitylab_run_queue_wait_seconds": 1, "capacitylab_run_watchers_dropped_total": 0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("metric %s = %v, want %v", k, got[k], v)
		}
	}
}

// The queue holds QueueCapacity runs, the running one included; one more is refused with a retry
// time; a learner with a run waiting or running cannot queue another; a
// learner cancels their own queued and running runs but not others'.
func TestQueueLimitsAndCancel(t *testing.T) {
	r, st := newRunner(t, runner.Config{QueueCapacity: 3})
	long := small(20, 20, 20, 20, 20, 20, 20, 20) // 8 s: still running when the test is done with it
	a, err := r.Submit(t.Context(), "a", long)
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, a.ID, store.RunRunning, 15*time.Second)

	b, err := r.Submit(t.Context(), "b", small(20))
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Submit(t.Context(), "c", small(20))
	if err != nil {
		t.Fatal(err)
	}
	if b.Position != 1 || c.Position != 2 || !c.EstimatedStart.After(b.EstimatedStart) || !b.EstimatedStart.After(time.Now()) {
		t.Errorf("tickets b %+v c %+v: want positions 1, 2 and later starts further back", b, c)
	}

	tests := []struct {
		name    string
		learner string
		want    error
	}{
		// A fourth run does not fit in a queue of three.
		{"queue full", "d", runner.ErrQueueFull},
		// a's run is running: a may not queue another.
		{"running learner", "a", runner.ErrAlreadyQueued},
		// b's run is waiting: b may not queue another (the queue is full too; b is told about their own run).
		{"queued learner", "b", runner.ErrAlreadyQueued},
	}
	for _, tt := range tests {
		_, err := r.Submit(t.Context(), tt.learner, small(20))
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Submit = %v, want %v", tt.name, err, tt.want)
		}
		var full *runner.QueueFullError
		if errors.As(err, &full) && full.RetryAfter < time.Second {
			t.Errorf("%s: retry after %v, want at least a second", tt.name, full.RetryAfter)
		}
	}

	if err := r.Cancel(b.ID, "c"); !errors.Is(err, runner.ErrNotYours) {
		t.Errorf("c cancelling b's run: %v, want ErrNotYours", err)
	}
	if err := r.Cancel("nope", "c"); !errors.Is(err, runner.ErrNoRun) {
		t.Errorf("cancelling an unknown run: %v, want ErrNoRun", err)
	}
	// b cancels while waiting: c moves up and is told so.
	if err := r.Cancel(b.ID, "b"); err != nil {
		t.Fatal(err)
	}
	if es := collect(t, r, b.ID, 0, time.Second); last(es).Kind != runner.KindCancelled {
		t.Errorf("b's last event %+v, want cancelled", last(es))
	}
	if s, _ := r.Get(c.ID); s.Position != 1 {
		t.Errorf("c at position %d after b cancelled, want 1", s.Position)
	}
	// b may queue again now that its run is gone... and the queue has room.
	if _, err := r.Submit(t.Context(), "b", small(20)); err != nil {
		t.Errorf("b resubmitting after cancelling: %v", err)
	}

	// a cancels while running: the run ends cancelled, its rows kept, c starts.
	if err := r.Cancel(a.ID, "a"); err != nil {
		t.Fatal(err)
	}
	aes := collect(t, r, a.ID, 0, 15*time.Second)
	if k := last(aes).Kind; k != runner.KindCancelled {
		t.Errorf("a's last event %+v, want cancelled", last(aes))
	}
	if err := r.Cancel(a.ID, "a"); !errors.Is(err, runner.ErrFinished) {
		t.Errorf("cancelling a finished run: %v, want ErrFinished", err)
	}
	ces := collect(t, r, c.ID, 0, 30*time.Second)
	if last(ces).Kind != runner.KindDone {
		t.Errorf("c after a was cancelled: last event %+v, want done", last(ces))
	}
	saved, err := st.Run(t.Context(), a.ID)
	if err != nil || saved.Status != store.RunCancelled {
		t.Errorf("a saved as %q (%v), want cancelled", saved.Status, err)
	}
}

// Killing the lab child in the middle of a window fails that run with the
// child's fate in the reason; the next queued run starts and finishes.
// While a window runs, the finished windows' rows and raw records are
// already in the store (a crash now would keep them), and the run's load
// child (the generator) runs on processors the lab child does not.
func TestChildKilledMidRun(t *testing.T) {
	selfBefore, err := affinity.ProcessCPUs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	r, st := newRunner(t, runner.Config{})
	a, err := r.Submit(t.Context(), "a", small(20, 20, 20))
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Submit(t.Context(), "b", small(30))
	if err != nil {
		t.Fatal(err)
	}
	replay, sub, err := r.Subscribe(a.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	events := replay
	killed := false
	timeout := time.After(30 * time.Second)
	for !killed {
		select {
		case <-sub.Ready():
			es, more := sub.Take()
			events = append(events, es...)
			e := last(events)
			if !more {
				t.Fatalf("run ended before a progress event: %+v", e)
			}
			if e.Kind == runner.KindProgress && e.Window == 1 && e.ElapsedMS > 200 {
				s, _ := r.Get(a.ID)
				if s.LabPID == 0 {
					t.Fatal("running run has no lab pid")
				}
				checkSavedSoFar(t, st, a.ID, 1)
				checkApart(t, s.LabPID, s.LoadPID, selfBefore)
				if err := syscall.Kill(s.LabPID, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		case <-timeout:
			t.Fatal("no progress in window 1 within 30 s")
		}
	}
	sub.Close()
	es := collect(t, r, a.ID, 0, 15*time.Second)
	end := last(es)
	if end.Kind != runner.KindFailed || !strings.Contains(end.Reason, "lab service stopped during window 2 of 3") || !strings.Contains(end.Reason, "killed") {
		t.Errorf("a ended with %+v, want failed in window 2 naming the kill", end)
	}
	if end.Window != 1 {
		t.Errorf("a's terminal event says %d windows finished, want 1", end.Window)
	}
	saved, err := st.Run(t.Context(), a.ID)
	if err != nil || saved.Status != store.RunFailed || len(saved.Rows) < 1 || saved.Reason != end.Reason {
		t.Errorf("a saved as %+v (%v): want failed, with its first row and the reason", saved, err)
	}
	// Both the finished window and the cut one are kept, with their records.
	checkSavedSoFar(t, st, a.ID, 2)
	for _, e := range es {
		if e.Kind == runner.KindRow && e.Window == 1 && !strings.Contains(e.Row.Note, "lab process died") {
			t.Errorf("the cut window's row has note %q, want it to say the lab died", e.Row.Note)
		}
	}
	bes := collect(t, r, b.ID, 0, 30*time.Second)
	if k := last(bes).Kind; k != runner.KindDone {
		t.Errorf("b after a's lab was killed: %+v, want done", last(bes))
	}
	if row := last(bes[:len(bes)-1]).Row; row == nil || row.OK == 0 || row.Lost != 0 {
		t.Errorf("b's row %+v: want ok answers, nothing lost", row)
	}
	waitStatus(t, r, b.ID, store.RunDone, 5*time.Second)
}

// Killing the load child (the generator) in the middle of a window fails
// the run, saying the load generator stopped in that window, logs its
// death with its exit and counts it; the finished window's row and records
// are kept, with nothing lost, and the lab child is stopped.
func TestLoadChildKilledMidRun(t *testing.T) {
	reg := prometheus.NewRegistry()
	logs := &syncBuffer{}
	st, err := store.Open(filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := runner.New(runner.Config{Lab: testChild(t), Load: testLoad(t), Store: st, Registerer: reg, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tk, err := r.Submit(t.Context(), "a", small(20, 20, 20))
	if err != nil {
		t.Fatal(err)
	}
	replay, sub, err := r.Subscribe(tk.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var labPID int
	es := replay
	for e := range each(sub) {
		es = append(es, e)
		if e.Kind == runner.KindProgress && e.Window == 1 && e.ElapsedMS > 200 && labPID == 0 {
			s, _ := r.Get(tk.ID)
			labPID = s.LabPID
			if err := syscall.Kill(s.LoadPID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	sub.Close()
	end := last(es)
	if labPID == 0 || end.Kind != runner.KindFailed || !strings.Contains(end.Reason, "The load generator stopped during window 2 of 3") || end.Window != 1 {
		t.Fatalf("the run ended %+v, want failed in window 2 of 3 with one window finished", end)
	}
	checkSavedSoFar(t, st, tk.ID, 1)
	saved, err := st.Run(t.Context(), tk.ID)
	if err != nil || saved.Status != store.RunFailed || saved.Rows[0].Lost != 0 {
		t.Errorf("saved %+v (%v): want failed, its row with nothing lost", saved, err)
	}
	if !strings.Contains(logs.String(), "load child died") || !strings.Contains(logs.String(), "signal: killed") {
		t.Errorf("the death is not logged:\n%s", logs.String())
	}
	if n := counterValue(t, reg, "capacitylab_load_child_deaths_total"); n != 1 {
		t.Errorf("capacitylab_load_child_deaths_total = %v, want 1", n)
	}
	if !errors.Is(syscall.Kill(labPID, 0), syscall.ESRCH) {
		t.Errorf("lab child %d still exists after its run failed", labPID)
	}
}

// checkSavedSoFar fails unless the store holds run id's first rows rows and,
// for each, one raw record per arrival.
func checkSavedSoFar(t *testing.T, st *store.Store, id string, rows int) {
	t.Helper()
	saved, err := st.Run(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(saved.Rows) != rows {
		t.Fatalf("the store has %d rows of run %s, want %d", len(saved.Rows), id, rows)
	}
	arrivals := 0
	for _, row := range saved.Rows {
		arrivals += row.Arrivals
	}
	n, err := st.CountRecords(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if n != arrivals || n == 0 {
		t.Errorf("the store has %d raw records of run %s, want one per arrival of its %d row(s): %d", n, id, rows, arrivals)
	}
}

// checkApart fails unless the load child and the lab child share no
// processor. On a host where this process may use only one processor there
// is nowhere to go, so nothing is checked.
func checkApart(t *testing.T, labPID, loadPID int, selfBefore []int) {
	t.Helper()
	if len(selfBefore) < 2 {
		t.Logf("only processor(s) %v: the generator cannot be kept off the lab's", selfBefore)
		return
	}
	if loadPID == 0 {
		t.Fatal("the running run has no load child")
	}
	lab, err := affinity.ProcessCPUs(labPID)
	if err != nil {
		t.Fatal(err)
	}
	load, err := affinity.ThreadCPUs(loadPID)
	if err != nil {
		t.Fatal(err)
	}
	for tid, cpus := range load {
		for _, c := range cpus {
			if slices.Contains(lab, c) {
				t.Errorf("thread %d of the load child may use processor %d, which the lab child (%v) uses", tid, c, lab)
			}
		}
	}
}

// placement is this process's GOMAXPROCS and each of its threads'
// processors, as /proc/self/task reads them.
type placement struct {
	gomaxprocs int
	threads    map[int][]int
}

func placementNow(t *testing.T) placement {
	t.Helper()
	threads, err := affinity.ThreadCPUs(os.Getpid())
	if err != nil {
		t.Skipf("this system does not say where threads run: %v", err)
	}
	return placement{gomaxprocs: runtime.GOMAXPROCS(0), threads: threads}
}

// checkPlacement fails unless every thread of now may use exactly the
// processors the process had before (threads come and go; each one's
// mask must be the one all had) and GOMAXPROCS is as before.
func checkPlacement(t *testing.T, when string, before, now placement) {
	t.Helper()
	var want []int
	for _, cpus := range before.threads {
		want = cpus
		break
	}
	for tid, cpus := range before.threads {
		if !slices.Equal(cpus, want) {
			t.Fatalf("before any run, thread %d may use %v and another %v: the test needs one mask for the whole process", tid, cpus, want)
		}
	}
	if now.gomaxprocs != before.gomaxprocs {
		t.Errorf("%s: GOMAXPROCS is %d, was %d before the run", when, now.gomaxprocs, before.gomaxprocs)
	}
	for tid, cpus := range now.threads {
		if !slices.Equal(cpus, want) {
			t.Errorf("%s: thread %d of the server's process may use %v, every thread could use %v before the run", when, tid, cpus, want)
		}
	}
}

// A run never re-pins the server's process nor changes its GOMAXPROCS:
// every thread of this process (the runner, as in the server) may use the
// same processors, and GOMAXPROCS is the same, before the run, while a
// window runs (read in the middle of each of them), and after it ended,
// while its lab child is pinned to its processor and its load child to the
// others.
func TestServerNeverRepinned(t *testing.T) {
	before := placementNow(t)
	r, _ := newRunner(t, runner.Config{})
	tk, err := r.Submit(t.Context(), "alice", small(40, 80))
	if err != nil {
		t.Fatal(err)
	}
	replay, sub, err := r.Subscribe(tk.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	during := map[int]bool{}
	check := func(e runner.Event) {
		if e.Kind != runner.KindProgress || e.ElapsedMS < 400 || during[e.Window] {
			return
		}
		during[e.Window] = true
		s, _ := r.Get(tk.ID)
		checkApart(t, s.LabPID, s.LoadPID, before.threads[os.Getpid()]) // the main thread's id is the pid
		load, err := affinity.ThreadCPUs(s.LoadPID)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("window %d: lab child %d, load child %d on %v", e.Window, s.LabPID, s.LoadPID, load)
		checkPlacement(t, fmt.Sprintf("during window %d", e.Window), before, placementNow(t))
	}
	var end runner.Event
	for _, e := range replay {
		check(e)
		end = e
	}
	for e := range each(sub) {
		check(e)
		end = e
	}
	if end.Kind != runner.KindDone {
		t.Fatalf("the run ended %+v, want done", end)
	}
	if !during[0] || !during[1] {
		t.Fatalf("placement read during windows %v, want both", during)
	}
	checkPlacement(t, "after the run", before, placementNow(t))
}

// A watcher that reconnects with the last seq it saw gets the rest, each
// event exactly once and in order, and the whole matches the log.
func TestReplayFromSeqExactlyOnce(t *testing.T) {
	r, _ := newRunner(t, runner.Config{})
	tk, err := r.Submit(t.Context(), "a", small(40, 40))
	if err != nil {
		t.Fatal(err)
	}
	// First connection: read until the first row, then go away.
	replay, sub, err := r.Subscribe(tk.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := replay
	for e := range each(sub) {
		seen = append(seen, e)
		if e.Kind == runner.KindRow {
			break
		}
	}
	sub.Close()
	lastSeq := last(seen).Seq
	// Second connection, mid-run: the rest.
	rest := collect(t, r, tk.ID, lastSeq, 30*time.Second)
	all := append(append([]runner.Event(nil), seen...), rest...)
	checkSeqs(t, all, 1)
	if last(all).Kind != runner.KindDone {
		t.Fatalf("last event %+v, want done", last(all))
	}
	// A late watcher after the end gets the same log.
	late := collect(t, r, tk.ID, 0, time.Second)
	if len(late) != len(all) {
		t.Fatalf("late watcher got %d events, reconnecting one %d", len(late), len(all))
	}
	for i := range late {
		if late[i].Seq != all[i].Seq || late[i].Kind != all[i].Kind || !late[i].At.Equal(all[i].At) {
			t.Fatalf("event %d differs: late %+v, reconnecting %+v", i, late[i], all[i])
		}
	}
	// Reconnecting after the end with the last seq gets nothing more.
	if more := collect(t, r, tk.ID, last(all).Seq, time.Second); len(more) != 0 {
		t.Errorf("after the last seq: %d more events", len(more))
	}
}

// Close marks the running run and the queued ones interrupted, keeps the
// rows measured so far, and stops every lab child.
func TestCloseInterrupts(t *testing.T) {
	r, st := newRunner(t, runner.Config{})
	a, err := r.Submit(t.Context(), "a", small(20, 20, 20, 20))
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Submit(t.Context(), "b", small(20))
	if err != nil {
		t.Fatal(err)
	}
	// Wait for a's first row.
	replay, sub, err := r.Subscribe(a.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range replay {
		if e.Kind == runner.KindRow {
			t.Fatal("row before subscribing")
		}
	}
	var pid int
	for e := range each(sub) {
		if e.Kind == runner.KindStarted {
			s, _ := r.Get(a.ID)
			pid = s.LabPID
		}
		if e.Kind == runner.KindRow {
			break
		}
	}
	sub.Close()
	r.Close()
	if _, err := r.Submit(t.Context(), "c", small(20)); !errors.Is(err, runner.ErrClosed) {
		t.Errorf("Submit after Close: %v, want ErrClosed", err)
	}
	for _, id := range []string{a.ID, b.ID} {
		saved, err := st.Run(t.Context(), id)
		if err != nil || saved.Status != store.RunInterrupted || saved.Reason == "" {
			t.Errorf("run %s saved as %q %q (%v), want interrupted with a reason", id, saved.Status, saved.Reason, err)
		}
	}
	if saved, _ := st.Run(t.Context(), a.ID); len(saved.Rows) < 1 {
		t.Errorf("a kept %d rows, want at least the one measured", len(saved.Rows))
	}
	if pid == 0 || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		t.Errorf("lab child %d still exists after Close", pid)
	}
}

// Runs that fail validation come back as FieldErrors and queue nothing.
func TestSubmitInvalidQueuesNothing(t *testing.T) {
	r, _ := newRunner(t, runner.Config{QueueCapacity: 1})
	bad := small(0)
	bad.Workers = 0
	_, err := r.Submit(t.Context(), "a", bad)
	var fe runner.FieldErrors
	if !errors.As(err, &fe) || fe["rates"] == "" || fe["workers"] == "" {
		t.Fatalf("Submit = %v, want FieldErrors for rates and workers", err)
	}
	if len(r.Active()) != 0 {
		t.Errorf("an invalid request was queued: %+v", r.Active())
	}
}

// The two other faults a learner is told about: a lab that does not start
// (nothing measured) and a lab still busy with an earlier window's backlog
// when the next window is due. Each run fails with a reason saying what
// to do, and the runner goes on to the next run.
func TestFailureReasons(t *testing.T) {
	t.Run("lab does not start", func(t *testing.T) {
		st, err := store.Open(t.TempDir() + "/runs.db")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		// /bin/false exits at once instead of saying it is ready.
		r, err := runner.New(runner.Config{Lab: labsvc.ChildCommand{Path: "/bin/false"}, Load: testLoad(t), Store: st})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		tk, err := r.Submit(t.Context(), "a", small(10))
		if err != nil {
			t.Fatal(err)
		}
		end := last(collect(t, r, tk.ID, 0, 15*time.Second))
		if end.Kind != runner.KindFailed || !strings.Contains(end.Reason, "The lab service did not start, so nothing was measured") {
			t.Errorf("ended with %+v", end)
		}
		// The learner reads words meant for them; the Go error behind
		// them ("labsvc: lab child (pid …) did not start: …") is the
		// server log's.
		if strings.Contains(end.Reason, "labsvc") || strings.Contains(end.Reason, "pid") || strings.Contains(end.Reason, "stdout") {
			t.Errorf("the reason shows the learner an internal error: %q", end.Reason)
		}
	})
	t.Run("lab did not drain", func(t *testing.T) {
		// DrainWait 1 s: the lab serves 10 a second (one worker, 100 ms
		// each) and is offered 100 a second for a second, so about 90
		// requests are still queued when window 1 is due.
		r, _ := newRunner(t, runner.Config{DrainWait: time.Second})
		q := runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 1, SpinMS: 0, WaitMS: 100, CPUs: 1}, Rates: []float64{100, 10, 10}, Seconds: 1, TimeoutMS: 500}}
		tk, err := r.Submit(t.Context(), "a", q)
		if err != nil {
			t.Fatal(err)
		}
		es := collect(t, r, tk.ID, 0, 30*time.Second)
		end := last(es)
		if end.Kind != runner.KindFailed || !strings.Contains(end.Reason, "still busy with an earlier window's backlog when window 2 began") ||
			!strings.Contains(end.Reason, "set LIMIT") {
			t.Errorf("ended with %+v", end)
		}
		rows := 0
		for _, e := range es {
			if e.Kind == runner.KindRow {
				rows++
			}
		}
		if rows != 2 || end.Window != 2 {
			t.Errorf("%d rows, terminal says %d windows: want the overloaded window and the polluted one, then a stop", rows, end.Window)
		}
		// The next run is unaffected: a fresh lab.
		tk2, err := r.Submit(t.Context(), "b", small(20))
		if err != nil {
			t.Fatal(err)
		}
		if k := last(collect(t, r, tk2.ID, 0, 30*time.Second)).Kind; k != runner.KindDone {
			t.Errorf("next run ended %s", k)
		}
	})
}

// A closed-loop run: one window per client count, the offered rate is what
// the clients managed to send, and the row says how many clients there were.
func TestClosedLoopRun(t *testing.T) {
	r, _ := newRunner(t, runner.Config{})
	q := runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 2, SpinMS: 1, WaitMS: 9, CPUs: 1}, Mode: runner.ModeClosed, Clients: []int{1, 4}, Seconds: 1}}
	tk, err := r.Submit(t.Context(), "a", q)
	if err != nil {
		t.Fatal(err)
	}
	es := collect(t, r, tk.ID, 0, 30*time.Second)
	if last(es).Kind != runner.KindDone {
		t.Fatalf("ended %+v", last(es))
	}
	var rows []runner.Event
	for _, e := range es {
		if e.Kind == runner.KindRow {
			rows = append(rows, e)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	for i, e := range rows {
		row := e.Row
		if row.Clients != q.Clients[i] || e.Clients != q.Clients[i] || row.OK == 0 || row.Lost != 0 || row.Offered != float64(row.Sent)/q.Seconds {
			t.Errorf("row %d: clients %d (event %d), ok %d, lost %d, offered %v for %d sent", i, row.Clients, e.Clients, row.OK, row.Lost, row.Offered, row.Sent)
		}
	}
}

// The stall and the random source reach the lab child and the generator:
// the saved records' intended times are CPython's random.seed(21)
// arrivals, and every 4th request the lab admitted took the 60 ms stall
// instead of its 2 ms wait.
func TestStallAndPythonArrivals(t *testing.T) {
	r, st := newRunner(t, runner.Config{})
	q := runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 1, WaitMS: 2, CPUs: 1, StallEvery: 4, StallMS: 60}, Rates: []float64{8}, Seconds: 2, Seed: 21, RNG: "python"}}
	tk, err := r.Submit(t.Context(), "a", q)
	if err != nil {
		t.Fatal(err)
	}
	if es := collect(t, r, tk.ID, 0, 30*time.Second); last(es).Kind != runner.KindDone {
		t.Fatalf("ended %+v", last(es))
	}
	want, err := loadrun.Python.Schedule(loadrun.Poisson, 8, 2, 21)
	if err != nil {
		t.Fatal(err)
	}
	var recs []result.Record
	if err := st.EachRecord(t.Context(), tk.ID, func(rec result.Record) error { recs = append(recs, rec); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(want) || len(recs) < 8 {
		t.Fatalf("%d records, CPython's schedule has %d arrivals (want at least 8)", len(recs), len(want))
	}
	for i, rec := range recs {
		// Saved records keep microseconds.
		if rec.Intended != want[i].Truncate(time.Microsecond) {
			t.Errorf("record %d intended %v, CPython's arrival %v", i, rec.Intended, want[i])
		}
		// 8 a second against 2 ms (or a 60 ms stall) rarely queue, so the
		// lab admits them in arrival order.
		if stalled := (i+1)%4 == 0; rec.Outcome != result.OK || stalled && rec.ServiceMS < 60 {
			t.Errorf("record %d: %s, service %v ms; stalled: %v (want %s, and at least 60 ms when stalled)", i, rec.Outcome, rec.ServiceMS, stalled, result.OK)
		}
	}
	// That the others took less than the stall, and none much more, is
	// the machine's: a busy one can stall a 2 ms wait past 60 ms.
	t.Run("only the stalled take 60 ms", func(t *testing.T) {
		physics.Require(t)
		for i, rec := range recs {
			if stalled := (i+1)%4 == 0; !stalled && rec.ServiceMS >= 60 || rec.ServiceMS > 200 {
				t.Errorf("record %d: service %v ms; stalled: %v (want under 60 ms unless stalled, at most 200)", i, rec.ServiceMS, stalled)
			}
		}
	})
}

// A request's plan is what a simulation runs: the same windows, seed and
// random source as the run, so a page can simulate a lab block's request
// in process (package sim) with no lab child.
func TestPlanSimulates(t *testing.T) {
	q := small(40, 80)
	q.RNG, q.StallEvery, q.StallMS = "python", 10, 50
	if err := runner.HostLimits().Validate(q); err != nil {
		t.Fatal(err)
	}
	sw := q.Sweep()
	sw.Driver = sim.Model{Lab: q.Config, Timeout: q.Timeout()}
	rep, err := sw.Run(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Windows) != q.Windows() {
		t.Fatalf("%d windows simulated, the request has %d", len(rep.Windows), q.Windows())
	}
	for i, w := range rep.Windows {
		want, err := loadrun.Python.Schedule(loadrun.Poisson, q.Rates[i], q.Seconds, q.Seed)
		if err != nil {
			t.Fatal(err)
		}
		if w.Row.Offered != q.Rates[i] || len(w.Records) != len(want) || w.Row.Lost != 0 {
			t.Errorf("window %d: offered %v, %d records (schedule %d), lost %d", i, w.Row.Offered, len(w.Records), len(want), w.Row.Lost)
		}
	}
}

// A lab child that dies during a run is logged as a warning naming the
// run, the exit status and the child's last lines on stderr, and counted
// in capacitylab_lab_child_deaths_total.
func TestChildDeathLogged(t *testing.T) {
	reg := prometheus.NewRegistry()
	logs := &syncBuffer{}
	child := testChild(t)
	child.Env = []string{childEnv + "=die"} // serves, then dies 1.5 s after it started
	r, err := runner.New(runner.Config{Lab: child, Load: testLoad(t), Registerer: reg, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tk, err := r.Submit(t.Context(), "a", small(20, 20, 20))
	if err != nil {
		t.Fatal(err)
	}
	es := collect(t, r, tk.ID, 0, 30*time.Second)
	if end := last(es); end.Kind != runner.KindFailed || !strings.Contains(end.Reason, "exit status 3") {
		t.Fatalf("run ended with %+v, want failed naming exit status 3", end)
	}
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "lab child died") {
			line = l
		}
	}
	for _, want := range []string{"level=WARN", "run=" + tk.ID, "exit status 3", "out of memory: cannot allocate the queue"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %q\nlog:\n%s", line, want, logs.String())
		}
	}
	if n := counterValue(t, reg, "capacitylab_lab_child_deaths_total"); n != 1 {
		t.Errorf("capacitylab_lab_child_deaths_total = %v, want 1", n)
	}
}

// counterValue is the value of an unlabelled counter in reg (-1 when absent).
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return -1
}

// syncBuffer collects log output safely across goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A run whose events cannot be stored (the disk is full: here
// store.FullWhen fails writes exactly as SQLite does on a full disk, from
// the moment the run starts) is not reported done: it ends failed in its
// first window, saying its measurements could not be saved and why. A
// watcher gets only events that are stored, then that failed event; and
// once there is room again the store keeps that end, failed, with that
// event, numbered as the watcher had it. (cmd/server's TestFullDiskTmpfs
// fills a real tmpfs when it can mount one.)
func TestRunNotSavedIsNotDone(t *testing.T) {
	var full atomic.Bool
	st, err := store.Open(filepath.Join(t.TempDir(), "full.db"), store.FullWhen(full.Load))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	logs := &syncBuffer{}
	r, err := runner.New(runner.Config{Lab: testChild(t), Load: testLoad(t), Store: st, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	q := runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 4, WaitMS: 1, CPUs: 1}, Rates: []float64{600, 600}, Seconds: 1, Seed: 7}}
	tk, err := r.Submit(t.Context(), "a", q)
	if err != nil {
		t.Fatal(err)
	}
	replay, sub, err := r.Subscribe(tk.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	es := replay
	for e := range each(sub) {
		es = append(es, e)
		if e.Kind == runner.KindStarted {
			full.Store(true) // the disk fills as the first window begins
		}
	}
	sub.Close()
	end := last(es)
	if end.Kind != runner.KindFailed || !strings.Contains(end.Reason, "could not be saved") || !strings.Contains(end.Reason, "disk is full") {
		t.Fatalf("run ended with %+v, want failed saying its measurements could not be saved because the disk is full", end)
	}
	for _, e := range es {
		if e.Kind == runner.KindRow && e.Window == 1 {
			t.Errorf("a second window was measured after the first could not be saved")
		}
	}
	// Every event a watcher had, but the one saying storing failed, is
	// stored, as it was sent; that one follows the last stored.
	stored, err := st.RunEvents(t.Context(), tk.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(es)-1 {
		t.Fatalf("a watcher had %d events, the store %d: want all but the last (storing failed) stored", len(es), len(stored))
	}
	for i, se := range stored {
		if se.Seq != es[i].Seq || string(se.JSON) != string(es[i].JSON) {
			t.Fatalf("stored event %d is %d %s, the watcher had %d %s", i, se.Seq, se.JSON, es[i].Seq, es[i].JSON)
		}
	}
	// Room again: the final status the watcher saw is stored, with its
	// event, without anything else written.
	full.Store(false)
	var saved store.Run
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if saved, err = st.Run(t.Context(), tk.ID); err != nil {
			t.Fatal(err)
		}
		if saved.Status != store.RunRunning || time.Now().After(deadline) {
			break
		}
	}
	if saved.Status != store.RunFailed || saved.Reason != end.Reason {
		t.Errorf("the store has the run as %q (%q), want failed with the reason the watcher saw (%q)", saved.Status, saved.Reason, end.Reason)
	}
	stored, _ = st.RunEvents(t.Context(), tk.ID, 0)
	if n := len(stored); n != len(es) || stored[n-1].Seq != end.Seq || string(stored[n-1].JSON) != string(end.JSON) {
		t.Errorf("the stored log ends %+v, want the watcher's last event %d %s", stored[len(stored)-1], end.Seq, end.JSON)
	}
	if !strings.Contains(logs.String(), "saving run events") || !strings.Contains(logs.String(), "database or disk is full") {
		t.Errorf("the failure is not logged:\n%s", logs.String())
	}
}

// A run with a knob change and a client of fixed workers: its log has a
// knob event in each window, after the window began and before its row,
// saying when the lab took the change; the saved records show the new
// WAIT_MS after it; arrivals that found both client workers busy are
// client_busy, and the rows still account for every arrival.
func TestKnobChangeAndClientWorkersRun(t *testing.T) {
	r, st := newRunner(t, runner.Config{})
	c, err := result.ParseKnobChange("500ms:WAIT_MS=40")
	if err != nil {
		t.Fatal(err)
	}
	q := runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 4, WaitMS: 5, CPUs: 1}, Rates: []float64{40, 40}, Seconds: 1, Seed: 3,
		MaxInFlight: 2, At: []result.KnobChange{c}}}
	tk, err := r.Submit(t.Context(), "a", q)
	if err != nil {
		t.Fatal(err)
	}
	es := collect(t, r, tk.ID, 0, 30*time.Second)
	if last(es).Kind != runner.KindDone {
		t.Fatalf("ended %+v", last(es))
	}
	window, knobs := -1, map[int]float64{}
	for _, e := range es {
		switch e.Kind {
		case runner.KindProgress:
			window = e.Window
		case runner.KindKnob:
			if e.Window != window || e.Change != "500ms:WAIT_MS=40" {
				t.Errorf("knob event %+v during window %d", e, window)
			}
			knobs[e.Window] = e.ElapsedMS
		case runner.KindRow:
			if _, ok := knobs[e.Window]; !ok {
				t.Errorf("window %d's row came without a knob event before it", e.Window)
			}
			row := e.Row
			if row.Lost != 0 || row.NotSent != 0 || row.ClientBusy == 0 || row.Sent+row.ClientBusy != row.Arrivals {
				t.Errorf("window %d: arrivals %d, sent %d, client_busy %d, not_sent %d, lost %d", e.Window, row.Arrivals, row.Sent, row.ClientBusy, row.NotSent, row.Lost)
			}
		}
	}
	if len(knobs) != 2 {
		t.Fatalf("knob events in windows %v, want one in each of 2", knobs)
	}
	var recs []result.Record
	if err := st.EachRecord(t.Context(), tk.ID, func(rec result.Record) error { recs = append(recs, rec); return nil }); err != nil {
		t.Fatal(err)
	}
	// Every answer sent after the change took at least the new WAIT_MS,
	// less the at most 1 ms the lab's waiter may end a wait early; those
	// sent before it, the old one (median).
	before := map[int][]float64{}
	for _, rec := range recs {
		at := time.Duration(knobs[rec.Window] * float64(time.Millisecond))
		switch {
		case rec.Outcome != result.OK:
		case rec.Sent > at && rec.ServiceMS < 39:
			t.Errorf("window %d record %d sent %v after the change (%v) was served in %v ms, more than 1 ms under the new WAIT_MS", rec.Window, rec.Seq, rec.Sent, at, rec.ServiceMS)
		case rec.Sent < at-30*time.Millisecond:
			before[rec.Window] = append(before[rec.Window], rec.ServiceMS)
		}
	}
	for w, svc := range before {
		slices.Sort(svc)
		if m := svc[len(svc)/2]; m < 5 || m >= 40 {
			t.Errorf("window %d: service time median %v ms before the change, want WAIT_MS 5's (5 to 40 ms)", w, m)
		}
	}
}

// A run over time: its log has a sample event at the end of each second of
// a window and one as the window ends, in order, before the window's row;
// a window's samples add up to its row; a watcher who subscribes after the
// run gets every one of them, and so does the store (each event with its
// seq and JSON), so a page opened later can draw them.
func TestOverTimeRun(t *testing.T) {
	r, st := newRunner(t, runner.Config{})
	q := small(40, 60)
	q.Seconds, q.OverTime = 1.5, true
	tk, err := r.Submit(t.Context(), "a", q)
	if err != nil {
		t.Fatal(err)
	}
	es := collect(t, r, tk.ID, 0, 30*time.Second)
	if last(es).Kind != runner.KindDone {
		t.Fatalf("ended %+v", last(es))
	}
	samples := map[int][]result.Sample{}
	for _, e := range es {
		switch e.Kind {
		case runner.KindSample:
			if e.Sample == nil || e.Sample.Window != e.Window {
				t.Fatalf("sample event %+v", e)
			}
			want := 0.0
			if s := samples[e.Window]; len(s) > 0 {
				want = s[len(s)-1].AtS + s[len(s)-1].Seconds
			}
			if math.Abs(e.Sample.AtS-want) > 1e-6 {
				t.Errorf("window %d: a sample at %v s after samples to %v s", e.Window, e.Sample.AtS, want)
			}
			samples[e.Window] = append(samples[e.Window], *e.Sample)
		case runner.KindRow:
			s := samples[e.Window]
			var ok, refused, other int
			for _, x := range s {
				ok, refused, other = ok+x.OK, refused+x.Refused, other+x.GaveUp+x.Errors+x.ClientBusy+x.NotSent
			}
			row := e.Row
			if len(s) != 2 || ok != row.OK || refused != row.Refused || other != row.Gaveup+row.Error+row.ClientBusy+row.NotSent || row.Lost != 0 {
				t.Errorf("window %d: %d samples (want 2) count ok %d, refused %d, the rest %d; the row %+v", e.Window, len(s), ok, refused, other, row)
			}
			for k, x := range s {
				if !x.Lab {
					t.Errorf("window %d sample %d: the lab was not read", e.Window, k)
				}
			}
		}
	}
	if len(samples) != 2 {
		t.Fatalf("samples in windows %v, want 2 windows", samples)
	}
	// A watcher after the run, and the store, have every sample event.
	again := collect(t, r, tk.ID, 0, 5*time.Second)
	stored, err := st.RunEvents(t.Context(), tk.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var late, kept int
	for _, e := range again {
		if e.Kind == runner.KindSample {
			late++
		}
	}
	for _, e := range stored {
		if e.Kind == string(runner.KindSample) {
			var got runner.Event
			if err := json.Unmarshal(e.JSON, &got); err != nil || got.Sample == nil {
				t.Fatalf("stored sample event %d: %s (%v)", e.Seq, e.JSON, err)
			}
			kept++
		}
	}
	if late != 4 || kept != 4 {
		t.Errorf("a watcher after the run got %d sample events, the store has %d: want 4", late, kept)
	}
}

// A run whose lab child takes a while to start (a shell that sleeps
// 1.5 s before it becomes the lab, as a busy machine delays one) is
// running and Starting until its children are up, and no longer
// Starting from its started event on.
func TestStartingUntilTheChildrenAreUp(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lab := testChild(t)
	slow := labsvc.ChildCommand{Path: "/bin/sh", Args: append([]string{"-c", `sleep 1.5; exec "$0" "$@"`, lab.Path}, lab.Args...), Env: lab.Env}
	r, err := runner.New(runner.Config{Lab: slow, Load: testLoad(t), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tk, err := r.Submit(t.Context(), "a", small(10))
	if err != nil {
		t.Fatal(err)
	}
	s := waitStatus(t, r, tk.ID, store.RunRunning, 10*time.Second)
	if !s.Starting {
		t.Errorf("running while its lab child sleeps: Starting %v, want true", s.Starting)
	}
	replay, sub, err := r.Subscribe(tk.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for _, e := range replay {
		if e.Kind == runner.KindStarted {
			t.Fatal("the started event came before the lab child could be up")
		}
	}
	for e := range each(sub) {
		if e.Kind == runner.KindStarted {
			if s, _ := r.Get(tk.ID); s.Starting {
				t.Errorf("after the started event: Starting %v, want false", s.Starting)
			}
			return
		}
		if e.Kind.Terminal() {
			t.Fatalf("the run ended (%s: %s) without a started event", e.Kind, e.Reason)
		}
	}
	t.Fatal("the run's events ended without a started event")
}
