package loadrun_test

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"capacitylab/loadrun"
)

// Open.Dispatcher is called once as the window starts and its undo once
// as it ends, both on the dispatcher's own thread.
func TestOpenDispatcherThread(t *testing.T) {
	target, err := loadrun.NewTarget(startFake(t, instant).URL, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sched := []time.Duration{0, 5 * time.Millisecond, 10 * time.Millisecond}
	calls, undos, raisedOn, undoneOn := 0, 0, -1, -1
	res := loadrun.Open{Target: target, Schedule: sched, Dispatcher: func() func() {
		calls++
		raisedOn = unix.Gettid()
		return func() {
			undos++
			undoneOn = unix.Gettid()
		}
	}}.Run(context.Background(), nil)
	checkBooks(t, res, len(sched))
	if calls != 1 || undos != 1 {
		t.Fatalf("Dispatcher called %d times, its undo %d: want once each", calls, undos)
	}
	if raisedOn != undoneOn {
		t.Errorf("raised on thread %d, put back on thread %d: want the dispatcher's one thread", raisedOn, undoneOn)
	}
}
