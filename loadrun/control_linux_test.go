package loadrun_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
	"capacitylab/loadrun"
	"capacitylab/result"
)

// slowLab is how long the tests below stop a lab child (SIGSTOP): longer
// than the one 5 s attempt the control client used to give a call, the
// way a lab on a busy machine answers late (its processor taken by other
// work), and well inside what a call now waits.
const slowLab = 6 * time.Second

// pauseLab stops the lab child for d (SIGSTOP, then SIGCONT), and
// continues it at the end of the test at the latest.
func pauseLab(t *testing.T, c *labsvc.Child, d time.Duration) {
	t.Helper()
	if err := syscall.Kill(c.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := func() { _ = syscall.Kill(c.Pid(), syscall.SIGCONT) }
	// A stop reaches each of the child's threads when it next runs in the
	// kernel, not at once: a thread already woken by a request could still
	// answer it. Wait until every thread shows as stopped.
	for deadline := time.Now().Add(2 * time.Second); !allStopped(t, c.Pid()); {
		if time.Now().After(deadline) {
			cont()
			t.Fatalf("the lab child %d did not stop within 2 s of SIGSTOP", c.Pid())
		}
		time.Sleep(time.Millisecond)
	}
	timer := time.AfterFunc(d, cont)
	t.Cleanup(func() {
		timer.Stop()
		cont()
	})
}

// allStopped reports whether every thread of process pid is stopped
// (state T in /proc/PID/task/TID/stat).
func allStopped(t *testing.T, pid int) bool {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("the lab child's threads: %v", err)
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			return false // a thread that ended: look again
		}
		// The state follows the command name, which is in parentheses.
		_, rest, _ := strings.Cut(string(b[bytes.LastIndexByte(b, ')')+1:]), " ")
		if !strings.HasPrefix(rest, "T") && !strings.HasPrefix(rest, "t") {
			return false
		}
	}
	return true
}

// A real lab child that answers nothing for 6 s (stopped, as a busy
// machine's lab is starved of its processor): GET /stats waits it out
// and reads the lab's counters once it runs again.
func TestControlWaitsForASlowLab(t *testing.T) {
	c := labtest.Child(t, labChildEnv, labsvc.Config{Workers: 2, SpinMS: 0, WaitMS: 1, CPUs: 1})
	ctl, err := loadrun.NewControl(c.Control(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Stats(t.Context()); err != nil {
		t.Fatalf("the running lab's stats: %v", err)
	}
	pauseLab(t, c, slowLab)
	start := time.Now()
	_, err = ctl.Stats(t.Context())
	took := time.Since(start)
	t.Logf("GET /stats of a lab stopped for %v answered after %v", slowLab, took.Round(time.Millisecond))
	if err != nil {
		t.Fatalf("GET /stats of a lab stopped for %v: %v; want the answer it gives once it runs again", slowLab, err)
	}
	if took < slowLab-time.Second {
		t.Errorf("GET /stats answered after %v: want the lab's answer, given once it ran again (after %v)", took, slowLab)
	}
}

// A sweep whose lab stops answering for 6 s between its windows (a busy
// machine's slow second, longer) goes on once the lab answers: the drain
// before window 2 waits for it, and both windows are measured.
func TestSweepRidesOutASlowLab(t *testing.T) {
	c := labtest.Child(t, labChildEnv, labsvc.Config{Workers: 4, SpinMS: 0, WaitMS: 5, CPUs: 1})
	s := sweepOf(t, lab{target: c.Target() + "/", control: c.Control()}, time.Second)
	s.Rates, s.Seconds = []float64{20, 20}, 0.5
	var paused, resumed time.Time
	s.WindowDone = func(wr result.WindowReport) {
		if wr.Row.Window == 0 {
			paused = time.Now()
			pauseLab(t, c, slowLab)
		}
	}
	rep, err := s.Run(t.Context(), func(e result.Event) {
		if e.Kind == result.EventProgress && e.Window == 1 && resumed.IsZero() {
			resumed = time.Now()
		}
	})
	if err != nil {
		t.Fatalf("the sweep stopped: %v; want it to wait for the lab and measure both windows", err)
	}
	if paused.IsZero() || resumed.IsZero() {
		t.Fatal("window 1 was never handed over, or window 2 never began")
	}
	t.Logf("window 2 began %v after the lab was stopped for %v", resumed.Sub(paused).Round(time.Millisecond), slowLab)
	if resumed.Sub(paused) < slowLab-time.Second {
		t.Errorf("window 2 began %v after the lab was stopped for %v: want it to wait for the lab", resumed.Sub(paused), slowLab)
	}
	if len(rep.Windows) != 2 {
		t.Fatalf("%d windows measured, want 2", len(rep.Windows))
	}
	for _, w := range rep.Windows {
		if w.Row.OK == 0 || w.Row.Lost != 0 || w.Cut != nil {
			t.Errorf("window %d: ok %d, lost %d, cut %v: want answers, none lost, not cut", w.Row.Window+1, w.Row.OK, w.Row.Lost, w.Cut)
		}
	}
}
