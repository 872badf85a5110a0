package runner_test

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"capacitylab/labsvc"
	"capacitylab/measure"
	"capacitylab/runner"
	"capacitylab/store"
)

// The runner's children are this test binary re-executed: with
// RUNNER_TEST_CHILD=1 it is a lab child (labsvc.ChildMain: the RunChild
// that cmd/lab and cmd/server use for "lab-child"), with RUNNER_TEST_LOAD=1
// a load child (measure.ChildMain: the RunLoadChild behind "load-child"),
// instead of the tests.
const (
	childEnv = "RUNNER_TEST_CHILD"
	loadEnv  = "RUNNER_TEST_LOAD"
)

func TestMain(m *testing.M) {
	labsvc.ChildMain(childEnv)
	measure.ChildMain(loadEnv)
	if os.Getenv(childEnv) == "die" {
		// A lab that serves for a while, then says why it fails on
		// stderr and exits with status 3 (TestChildDeathLogged).
		ctx, stop := context.WithCancel(context.Background())
		go func() {
			time.Sleep(1500 * time.Millisecond)
			fmt.Fprintln(os.Stderr, "lab: out of memory: cannot allocate the queue")
			os.Exit(3)
		}()
		labsvc.RunChild(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
		stop()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// testChild is the ChildCommand that re-executes this test binary as a
// lab child.
func testChild(t testing.TB) labsvc.ChildCommand {
	cc, err := labsvc.SelfCommand(childEnv)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// testLoad is the ChildCommand that re-executes this test binary as a
// load child.
func testLoad(t testing.TB) labsvc.ChildCommand {
	cc, err := labsvc.SelfCommand(loadEnv)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// newRunner starts a runner with a real SQLite store in a temp dir and
// closes both when the test ends.
func newRunner(t *testing.T, cfg runner.Config) (*runner.Runner, *store.Store) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Lab, cfg.Load = testChild(t), testLoad(t)
	cfg.Store = st
	r, err := runner.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Close()
		st.Close()
	})
	return r, st
}

// small is a short open-loop sweep a lab with the default knobs (ceiling
// 50/s with one worker of 20 ms) serves easily.
func small(rates ...float64) runner.Request {
	return runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 4, SpinMS: 1, WaitMS: 4, CPUs: 1}, Rates: rates, Seconds: 1, Seed: 7}}
}

// collect reads a run's events from seq since until its terminal event,
// failing after timeout.
func collect(t *testing.T, r *runner.Runner, id string, since int, timeout time.Duration) []runner.Event {
	t.Helper()
	replay, sub, err := r.Subscribe(id, since)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	out := replay
	if len(out) > 0 && out[len(out)-1].Kind.Terminal() {
		return out
	}
	deadline := time.After(timeout)
	for {
		select {
		case <-sub.Ready():
			es, more := sub.Take()
			out = append(out, es...)
			if !more {
				if sub.Dropped() {
					t.Fatalf("subscription to %s dropped", id)
				}
				return out
			}
		case <-deadline:
			t.Fatalf("run %s: no terminal event after %v; got %d events, last %+v", id, timeout, len(out), last(out))
		}
	}
}

// each yields a subscription's live events until it ends.
func each(sub *runner.Subscription) iter.Seq[runner.Event] {
	return func(yield func(runner.Event) bool) {
		for range sub.Ready() {
			es, more := sub.Take()
			for _, e := range es {
				if !yield(e) {
					return
				}
			}
			if !more {
				return
			}
		}
	}
}

func last(es []runner.Event) runner.Event {
	if len(es) == 0 {
		return runner.Event{}
	}
	return es[len(es)-1]
}

// waitStatus polls until run id has status, failing after timeout.
func waitStatus(t *testing.T, r *runner.Runner, id string, status store.RunStatus, timeout time.Duration) runner.Snapshot {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		s, ok := r.Get(id)
		if ok && s.Status == status {
			return s
		}
		if time.Now().After(end) {
			t.Fatalf("run %s: status %q after %v, want %q", id, s.Status, timeout, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkSeqs fails unless events are numbered from first, one by one.
func checkSeqs(t *testing.T, es []runner.Event, first int) {
	t.Helper()
	for i, e := range es {
		if e.Seq != first+i {
			t.Fatalf("event %d has seq %d, want %d (%+v)", i, e.Seq, first+i, e)
		}
	}
}
