package loadrun

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// A raised open-loop dispatcher keeps its Go processor through the last
// holdLast of each sleep and gives it up before that. With one processor, a
// goroutine made runnable before the sleep can run during it only if the
// sleeper gave the processor up: it must not have run after a sleep shorter
// than the hold, and must have run after a long one (the runtime's monitor
// hands a processor stuck in a system call to waiting goroutines within
// about 20 ms).
func TestSleepUntilHoldsItsProcessorForTheLastPart(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ctx := context.Background()
	ranDuring := func(d, hold time.Duration) bool {
		// A fresh time slice first, so that the runtime does not preempt
		// this goroutine (after 10 ms of one slice) during the sleep.
		runtime.Gosched()
		var ran atomic.Bool
		done := make(chan struct{})
		go func() {
			ran.Store(true)
			close(done)
		}()
		sleepUntil(ctx, time.Now().Add(d), hold)
		got := ran.Load()
		<-done
		return got
	}
	for range 3 {
		if ranDuring(5*time.Millisecond, 20*time.Millisecond) {
			t.Fatal("a goroutine ran during a 5 ms sleep with a 20 ms hold: the sleeper gave its processor up")
		}
	}
	if !ranDuring(300*time.Millisecond, 20*time.Millisecond) {
		t.Fatal("no goroutine ran during a 300 ms sleep with a 20 ms hold: the sleeper held its processor for all of it")
	}
	if !ranDuring(300*time.Millisecond, 0) {
		t.Fatal("no goroutine ran during a 300 ms sleep with no hold")
	}
}

// The dispatcher holds its processor only when its thread is raised and
// the readers have another.
func TestDispatcherHold(t *testing.T) {
	for _, tc := range []struct {
		procs  int
		raised bool
		want   time.Duration
	}{{1, true, 0}, {2, true, holdLast}, {3, true, holdLast}, {2, false, 0}, {1, false, 0}} {
		if got := dispatcherHold(tc.procs, tc.raised); got != tc.want {
			t.Errorf("dispatcherHold(%d, %v) = %v, want %v", tc.procs, tc.raised, got, tc.want)
		}
	}
}
