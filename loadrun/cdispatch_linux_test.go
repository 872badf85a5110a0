//go:build linux && cgo

package loadrun

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"capacitylab/childproc"
)

// The thread sender's thread runs above the process for the whole window
// (real-time round-robin SenderRTPriority in a process of the normal
// policy, as root), no other thread changes, and the thread is gone once
// the window has ended; every arrival is sent and answered.
func TestThreadSender(t *testing.T) {
	var base unix.SchedAttr
	if err := schedGetattr(&base); err != nil {
		t.Fatal(err)
	}
	own := childproc.Sched{Nice: int(base.Nice), Policy: "normal"}
	raised := own
	switch base.Policy {
	case unix.SCHED_RR:
		own.Policy, own.RTPriority = "round-robin", int(base.Priority)
		raised = own
		raised.RTPriority++
	case unix.SCHED_NORMAL:
		raised.Policy, raised.RTPriority = "round-robin", SenderRTPriority
	default:
		t.Skipf("SKIPPED: this test runs under policy %d, which it does not know", base.Policy)
	}
	if err := childproc.MayRoundRobin(SenderRTPriority); err != nil {
		t.Logf("NOT RAISED: %v; checking that the thread tries niceness -20 or stays as the process", err)
		raised = own
		if os.Geteuid() == 0 {
			t.Fatalf("as root: %v", err)
		}
	}
	before, err := childproc.ThreadScheds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	target, err := NewTarget(StartInstant(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := Schedule(Poisson, 2000, 0.6, 1)
	if err != nil {
		t.Fatal(err)
	}
	samples := make(chan []map[int]childproc.Sched)
	go func() {
		var got []map[int]childproc.Sched
		for range 10 {
			time.Sleep(30 * time.Millisecond)
			s, err := childproc.ThreadScheds(os.Getpid())
			if err == nil {
				got = append(got, s)
			}
		}
		samples <- got
	}()
	res := Open{Target: target, Schedule: sched}.Run(t.Context(), nil)
	during := <-samples
	after, err := childproc.ThreadScheds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}

	row := res.Metrics.Row(2000, 600*time.Millisecond)
	if row.Lost != 0 || row.Sent != len(sched) || row.OK != len(sched) {
		t.Errorf("%d arrivals: sent %d, ok %d, lost %d; want all sent and ok", len(sched), row.Sent, row.OK, row.Lost)
	}
	for i, s := range during {
		if len(s) == 0 {
			continue
		}
		n := 0
		for tid, sc := range s {
			switch {
			case sc == raised && n == 0 && raised != own:
				n++
			case sc != own:
				t.Errorf("sample %d: thread %d runs at %+v; want %+v, and one thread (the sender's) at %+v", i, tid, sc, own, raised)
			}
		}
		if raised != own && n != 1 && i < 5 { // the window is 0.6 s: the first five samples fall in it
			t.Errorf("sample %d, %d ms into the window: no thread runs at %+v", i, 30*(i+1), raised)
		}
	}
	for tid, sc := range after {
		if sc != own {
			t.Errorf("after the window, thread %d runs at %+v; want %+v (the sender's thread ended)", tid, sc, own)
		}
	}
	t.Logf("%d threads before the window, %d after; send-lag p99 %.3f ms", len(before), len(after), row.SendLagP99MS)
}
