package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"capacitylab/fleet"
	"capacitylab/labsvc"
	"capacitylab/measure"
	"capacitylab/runner"
	"capacitylab/store"
)

// small is a short open-loop sweep a lab with these knobs serves easily.
func small(rates ...float64) runner.Request {
	return runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 4, SpinMS: 1, WaitMS: 4, CPUs: 1}, Rates: rates, Seconds: 1, Seed: 7}}
}

// replicas are two Queues on stores of their own, as two web replicas
// sharing one Postgres.
func replicas(t *testing.T, dbURL string, capacity, perAddress int) [2]*fleet.Queue {
	t.Helper()
	var qs [2]*fleet.Queue
	for i := range qs {
		q, err := fleet.NewQueue(fleet.Config{Store: openStore(t, dbURL), QueueCapacity: capacity, PerAddress: perAddress})
		if err != nil {
			t.Fatal(err)
		}
		qs[i] = q
	}
	return qs
}

// outcomes counts what n submissions at once, alternating between the
// replicas, came back with.
type outcomes struct {
	accepted []runner.Ticket
	full     []*runner.QueueFullError
	share    []*runner.ShareError
	mine     []*runner.AlreadyQueuedError
	other    []error
}

func submitAtOnce(t *testing.T, qs [2]*fleet.Queue, n int, learner func(i int) string, addr func(i int) string) outcomes {
	t.Helper()
	var mu sync.Mutex
	var out outcomes
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			tk, err := qs[i%2].SubmitFrom(context.Background(), learner(i), addr(i), small(10))
			mu.Lock()
			defer mu.Unlock()
			var full *runner.QueueFullError
			var share *runner.ShareError
			var mine *runner.AlreadyQueuedError
			switch {
			case err == nil:
				out.accepted = append(out.accepted, tk)
			case errors.As(err, &full):
				out.full = append(out.full, full)
			case errors.As(err, &share):
				out.share = append(out.share, share)
			case errors.As(err, &mine):
				out.mine = append(out.mine, mine)
			default:
				out.other = append(out.other, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range out.other {
		t.Errorf("submission failed: %v", err)
	}
	return out
}

// Hundreds of submissions at once across two replicas: exactly the queue's
// capacity is accepted, each run stored with its seq-1 queued event and its
// job, positions 1..capacity once each; the rest are told the queue is
// full, with a retry of at least a second.
func TestSubmitAcceptsExactlyCapacityAcrossReplicas(t *testing.T) {
	dbURL := schemaURL(t)
	const capacity, n = 8, 300
	qs := replicas(t, dbURL, capacity, 100)
	out := submitAtOnce(t, qs, n, func(i int) string { return fmt.Sprintf("learner-%d", i) }, func(int) string { return "" })
	if len(out.accepted) != capacity || len(out.full) != n-capacity {
		t.Fatalf("accepted %d and refused %d as full of %d submissions; want exactly %d accepted", len(out.accepted), len(out.full), n, capacity)
	}
	for _, f := range out.full {
		if f.RetryAfter < time.Second {
			t.Errorf("queue full with a retry after %v: want at least a second", f.RetryAfter)
		}
	}
	st := openStore(t, dbURL)
	ctx := context.Background()
	active, err := st.ActiveRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(active) != capacity {
		t.Fatalf("%d runs stored waiting or running; want %d", len(active), capacity)
	}
	positions := map[int]bool{}
	for _, tk := range out.accepted {
		positions[tk.Position] = true
		es, err := st.RunEvents(ctx, tk.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 1 || es[0].Seq != 1 || es[0].Kind != string(runner.KindQueued) {
			t.Fatalf("run %s's stored events %+v: want its queued event as seq 1", tk.ID, es)
		}
		var e runner.Event
		json.Unmarshal(es[0].JSON, &e)
		if e.Position != tk.Position {
			t.Errorf("run %s: queued event at position %d, ticket %d", tk.ID, e.Position, tk.Position)
		}
	}
	for p := 1; p <= capacity; p++ {
		if !positions[p] {
			t.Errorf("no accepted run at position %d: %v", p, positions)
		}
	}
	for _, a := range active {
		if a.JobID == 0 {
			t.Errorf("run %s was stored without its job", a.ID)
		}
	}
}

// One learner submitting on both replicas at once gets one run; one
// address gets its share across both, and the rest are told when one of
// theirs should end.
func TestLearnerAndAddressRulesAcrossReplicas(t *testing.T) {
	dbURL := schemaURL(t)
	qs := replicas(t, dbURL, 50, 3)
	out := submitAtOnce(t, qs, 40, func(int) string { return "same-learner" }, func(int) string { return "" })
	if len(out.accepted) != 1 || len(out.mine) != 39 {
		t.Fatalf("one learner's 40 submissions: %d accepted, %d already queued; want 1 and 39", len(out.accepted), len(out.mine))
	}
	for _, m := range out.mine {
		if m.ID != out.accepted[0].ID {
			t.Errorf("already queued names run %s; want %s", m.ID, out.accepted[0].ID)
		}
	}
	out = submitAtOnce(t, qs, 40, func(i int) string { return fmt.Sprintf("school-%d", i) }, func(int) string { return "198.51.100.7" })
	if len(out.accepted) != 3 || len(out.share) != 37 {
		t.Fatalf("one address's 40 learners: %d accepted, %d refused their share; want 3 and 37", len(out.accepted), len(out.share))
	}
	for _, s := range out.share {
		// With no runner live the estimate counts one slot: the first of
		// the address's runs ends after the runs ahead and itself.
		if s.Share != 3 || s.RetryAfter < runner.Estimate(small(10)) {
			t.Errorf("share error %+v: want share 3 and a retry of at least one run's estimate (%v)", s, runner.Estimate(small(10)))
		}
	}
	// Another address is not held back by that one.
	if _, err := qs[1].SubmitFrom(context.Background(), "elsewhere", "203.0.113.9", small(10)); err != nil {
		t.Fatalf("another address: %v", err)
	}
}

// A queued run cancelled on either replica ends at once with its stored
// cancelled event; only its learner may cancel it, and only once.
func TestCancelQueued(t *testing.T) {
	dbURL := schemaURL(t)
	qs := replicas(t, dbURL, 8, 3)
	ctx := context.Background()
	first, err := qs[0].SubmitFrom(ctx, "a", "", small(10))
	if err != nil {
		t.Fatal(err)
	}
	second, err := qs[0].SubmitFrom(ctx, "b", "", small(10))
	if err != nil {
		t.Fatal(err)
	}
	if err := qs[1].Cancel(first.ID, "b"); !errors.Is(err, runner.ErrNotYours) {
		t.Fatalf("cancel by another learner: %v, want ErrNotYours", err)
	}
	if err := qs[1].Cancel("nosuchrun", "a"); !errors.Is(err, runner.ErrNoRun) {
		t.Fatalf("cancel of no run: %v, want ErrNoRun", err)
	}
	if err := qs[1].Cancel(first.ID, "a"); err != nil {
		t.Fatal(err)
	}
	if err := qs[0].Cancel(first.ID, "a"); !errors.Is(err, runner.ErrFinished) {
		t.Fatalf("second cancel: %v, want ErrFinished", err)
	}
	st := openStore(t, dbURL)
	r, err := st.Run(ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.RunCancelled || r.EndedAt.IsZero() {
		t.Fatalf("cancelled run stored as %s (ended %v)", r.Status, r.EndedAt)
	}
	es, _ := st.RunEvents(ctx, first.ID, 0)
	if len(es) != 2 || es[1].Seq != 2 || es[1].Kind != string(runner.KindCancelled) {
		t.Fatalf("cancelled run's events %+v: want queued then cancelled", es)
	}
	// The run behind it moved up: a queued event at position 1.
	es, _ = st.RunEvents(ctx, second.ID, 0)
	var last runner.Event
	json.Unmarshal(es[len(es)-1].JSON, &last)
	if second.Position != 2 || len(es) != 2 || last.Kind != runner.KindQueued || last.Position != 1 || es[1].Seq != 2 {
		t.Fatalf("the run behind (ticket position %d) has events %d, last %+v: want a queued event at position 1 as seq 2", second.Position, len(es), last)
	}
}
