package loadrun

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"capacitylab/affinity"
	"capacitylab/childproc"
)

// A held dispatcher's thread runs one step above the process's priority
// while held, no other thread does, and letting it go puts the priority
// back; with one Go processor nothing is held.
func TestHoldDispatcher(t *testing.T) {
	prev := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(prev)
	done := make(chan struct{})
	go func() { // a goroutine of its own: its thread's priority is changed
		defer close(done)
		var base, during, after unix.SchedAttr
		if err := schedGetattr(&base); err != nil {
			t.Error(err)
			return
		}
		d, release := holdDispatcher()
		tid := unix.Gettid()
		if err := schedGetattr(&during); err != nil {
			t.Error(err)
		}
		others, err := childproc.ThreadScheds(os.Getpid())
		if err != nil {
			t.Error(err)
		}
		release()
		if err := schedGetattr(&after); err != nil {
			t.Error(err)
		}

		if !d.held {
			t.Error("not held at GOMAXPROCS 2")
			return
		}
		switch {
		case d.raised == d.base:
			t.Logf("NOT RAISED: this process may not raise a thread's priority (it takes root or CAP_SYS_NICE); checking only that nothing changed")
			if during != base {
				t.Errorf("held at %+v, want the process's own %+v", during, base)
			}
		case base.Policy == unix.SCHED_RR || base.Policy == unix.SCHED_FIFO:
			if during.Priority != base.Priority+1 {
				t.Errorf("held at real-time priority %d, want %d", during.Priority, base.Priority+1)
			}
		default:
			if during.Nice != -20 {
				t.Errorf("held at niceness %d, want -20", during.Nice)
			}
		}
		for other, s := range others {
			if other != tid && (s.Nice != int(base.Nice) || s.RTPriority != int(base.Priority)) {
				t.Errorf("thread %d runs at %+v while the dispatcher is held; only the dispatcher's thread may be raised", other, s)
			}
		}
		if after != base {
			t.Errorf("after the hold the thread runs at %+v, want %+v back", after, base)
		}
	}()
	<-done

	runtime.GOMAXPROCS(1)
	d, release := holdDispatcher()
	release()
	if d.held {
		t.Error("held at GOMAXPROCS 1: the dispatcher would keep the only Go processor")
	}
}

// The held dispatcher never hangs under the load child's real-time policy:
// five windows at 5,000 a second with a garbage collection every few
// milliseconds (GOGC=1), every thread at real-time priority 1 and pinned
// to one processor, the dispatcher one above them. (A dispatcher that made
// its system calls through Go's scheduler at the raised priority hung
// this way: it spun waiting for a collector it never let run. Its sleeps
// alone made so, this test timed out.) The windows run in a child process, since the policy is for
// good; it takes root.
func TestHeldDispatcherUnderRealTime(t *testing.T) {
	const childEnv = "LOADRUN_TEST_RT_CHILD"
	if os.Getenv(childEnv) == "1" {
		heldUnderRealTime(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: the real-time policy takes root, and this test does not run as root")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHeldDispatcherUnderRealTime$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the windows did not finish in 90 s: the held dispatcher hung\n%s", out)
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}

func heldUnderRealTime(t *testing.T) {
	if err := affinity.PinTo([]int{runtime.NumCPU() - 1}); err != nil {
		t.Logf("not pinned (%v): the threads share the processors", err)
	}
	if err := childproc.SetRoundRobin(1); err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(2)
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	target, err := NewTarget(StartInstant(t), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		sched, err := Schedule(Poisson, 5000, 1, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		var gc0, gc1 runtime.MemStats
		runtime.ReadMemStats(&gc0)
		res := Open{Target: target, Schedule: sched}.Run(t.Context(), nil)
		runtime.ReadMemStats(&gc1)
		row := res.Metrics.Row(5000, time.Second)
		if row.Lost != 0 || row.Sent != len(sched) || row.OK != len(sched) {
			t.Errorf("window %d: %d arrivals, sent %d, ok %d, lost %d; want all sent and ok", i, len(sched), row.Sent, row.OK, row.Lost)
		}
		t.Logf("window %d: %d sent, %d ok, send-lag p99 %.3f ms, %d garbage collections", i, row.Sent, row.OK, row.SendLagP99MS, gc1.NumGC-gc0.NumGC)
	}
}
