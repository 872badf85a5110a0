package labsvc_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"capacitylab/affinity"
	"capacitylab/input"
	"capacitylab/internal/physics"
	"capacitylab/labsvc"
)

// hostport strips the scheme from a base URL.
func hostport(url string) string { return strings.TrimPrefix(url, "http://") }

// waitGone fails unless the child exits within timeout and its pid is gone.
func waitGone(t *testing.T, c *labsvc.Child, timeout time.Duration) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(timeout):
		t.Fatalf("child %d still running after %v", c.Pid(), timeout)
	}
	if !processGone(c.Pid()) {
		t.Errorf("pid %d still exists after the child was waited for", c.Pid())
	}
}

// A child starts, answers requests and control calls with the config it was
// given, and is killed and reaped when its context ends.
func TestChildStartAnswerCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	want := labsvc.Config{Workers: 2, SpinMS: 1, WaitMS: 3, Limit: 7, CPUs: 1}
	start := time.Now()
	c, err := labsvc.StartChild(ctx, testChild(t, "serve"), want)
	if err != nil {
		t.Fatal(err)
	}
	r, err := call(hostport(c.Target()), 5*time.Second)
	if err != nil || r.status != 200 {
		t.Fatalf("first request: %+v, %v", r, err)
	}
	t.Logf("start to first answer: %v (pid %d, %s)", time.Since(start), c.Pid(), c.Target())
	var got labsvc.Config
	if doJSON(t, "GET", c.Control()+"/config", "", &got); got != want {
		t.Errorf("child config %+v, want %+v", got, want)
	}
	if !strings.HasPrefix(c.Target(), "http://127.0.0.1:") || !strings.HasPrefix(c.Control(), "http://127.0.0.1:") {
		t.Errorf("child listens on %s and %s, want loopback", c.Target(), c.Control())
	}
	cancel()
	waitGone(t, c, 3*time.Second)
	if err := c.Err(); err != nil {
		t.Errorf("Err after cancel = %v, want nil (the exit was asked for)", err)
	}
}

// A child dies with its parent (Pdeathsig), even when the parent is killed
// and has no chance to stop it.
func TestChildDiesWithParent(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.CommandContext(ctx, exe)
	parent.Env = append(os.Environ(), childEnv+"=parent")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("parent said nothing: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || processGone(pid) {
		t.Fatalf("parent's child pid %q: %v", line, err)
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d outlived its killed parent by 5s", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop ends a child gracefully and waits for it.
func TestChildStop(t *testing.T) {
	c, err := labsvc.StartChild(t.Context(), testChild(t, "serve"), labsvc.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("Stop = %v", err)
	}
	waitGone(t, c, time.Second)
	if c.Stop() != nil {
		t.Errorf("second Stop returned an error")
	}
}

// A child that dies on its own is reported with its last words; so is one
// killed from outside.
func TestChildDeathReported(t *testing.T) {
	tests := []struct {
		name  string
		mode  string
		kill  bool   // kill it with SIGKILL from outside
		words string // must appear in Err
	}{
		// the child fails by itself and says why on stderr
		{"dies", "die", false, "simulated failure: the lab ran out of cheese"},
		// the child is killed by someone else
		{"killed", "serve", true, "signal: killed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := labsvc.StartChild(t.Context(), testChild(t, tc.mode), labsvc.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if tc.kill {
				if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
			waitGone(t, c, 5*time.Second)
			err = c.Err()
			if err == nil || !strings.Contains(err.Error(), "exited unexpectedly") || !strings.Contains(err.Error(), tc.words) {
				t.Errorf("Err = %v, want an unexpected exit with %q", err, tc.words)
			}
			if c.Stop() == nil {
				t.Errorf("Stop after an unexpected death returned nil, want the death")
			}
		})
	}
}

// A child that cannot start reports why, and leaves nothing running.
func TestChildBadStart(t *testing.T) {
	// An invalid config is refused before anything is started.
	_, err := labsvc.StartChild(t.Context(), testChild(t, "serve"), labsvc.Config{Workers: 1, CPUs: 0})
	var fe input.FieldErrors
	if !errors.As(err, &fe) || !strings.HasPrefix(fe["CPUS"], "0 is not allowed") {
		t.Errorf("StartChild with CPUS=0 = %v, want an input.FieldErrors naming CPUS", err)
	}
	// A program that is not a lab child fails with its own words.
	_, err = labsvc.StartChild(t.Context(), labsvc.ChildCommand{Path: "/bin/sh", Args: []string{"-c", "echo not a lab >&2; exit 4", "sh"}}, labsvc.DefaultConfig())
	if err == nil || !strings.Contains(err.Error(), "not a lab") {
		t.Errorf("StartChild of a non-lab = %v, want an error quoting its stderr", err)
	}
}

// With CPUS=1, WORKERS=16, SPIN_MS=2, WAIT_MS=0 the lab serves no more than
// about 500 requests a second however hard it is pushed, because each spin
// costs 2 ms of processor time: the spins' own clock and the kernel's count
// of the whole process's processor time both say about 2 ms a request, while
// each request's service time stretches with the competition.
//
// The rate alone cannot tell a processor-time spin from a wall-clock one
// here: the spins take turns on the one processor either way, so 2 ms
// wall-clock spins would run one at a time too (measured before the turns:
// 437/s with the thread clock disabled). The per-request processor times
// are what show it, and TestProcessorWaitIsServiceNotQueue shows it by
// wall time as well.
func TestProcessorCeiling(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	c := serveChild(t, labsvc.Config{Workers: 16, SpinMS: 2, WaitMS: 0, CPUs: 1})
	addr := hostport(c.Target())
	const (
		clients = 48 // closed loop: offered load far above 500/s while the lab is fast
		warmup  = 300 * time.Millisecond
		window  = 1500 * time.Millisecond
	)
	var stop atomic.Bool
	var failures atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for !stop.Load() {
				if _, err := call(addr, 5*time.Second); err != nil {
					failures.Add(1)
				}
			}
		})
	}
	time.Sleep(warmup)
	doJSON(t, "POST", c.Control()+"/reset", "", nil)
	time.Sleep(window)
	var st labsvc.Stats
	doJSON(t, "POST", c.Control()+"/reset", "", &st)
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(st.Since).Seconds()
	rate := float64(st.Done) / elapsed
	cpuPer := st.SpinCPUMS / float64(st.Done)
	t.Logf("done %d in %.2fs = %.0f/s; spin CPU per request %.3f ms; lab process CPU %.0f%% of one processor (%.3f ms per request); service mean %.2f ms p99 %.2f ms",
		st.Done, elapsed, rate, cpuPer, st.ProcessCPUMS/10/elapsed, st.ProcessCPUMS/float64(st.Done), st.ServiceMS.Mean, st.ServiceMS.P99)
	if f := failures.Load(); f > 0 {
		t.Errorf("%d requests failed", f)
	}
	if rate > 520 {
		t.Errorf("%.0f requests/s with CPUS=1 and SPIN_MS=2, want at most the 500/s processor ceiling (+4%% tolerance)", rate)
	}
	// The machine is shared, so the lab may get much less than its one
	// processor and the rate says little below the ceiling. What it costs
	// per request does not depend on the neighbours from below: processor
	// time. From above it does (a thread's clock is charged for the
	// interrupts handled while it runs), so the upper bounds are a physics
	// check.
	perProcess := st.ProcessCPUMS / float64(st.Done)
	if perProcess < 1.9 {
		t.Errorf("the lab process used %.3f ms of processor per request (kernel's count), want at least SPIN_MS=2 less a little", perProcess)
	}
	if cpuPer < 1.95 {
		t.Errorf("spin CPU per request %.3f ms, want at least SPIN_MS=2", cpuPer)
	}
	t.Run("processor near SPIN_MS", func(t *testing.T) {
		physics.Require(t)
		if st.Done < 20 {
			t.Errorf("only %d served in %.2fs", st.Done, elapsed)
		}
		if perProcess > 2.6 {
			t.Errorf("the lab process used %.3f ms of processor per request (kernel's count), want SPIN_MS=2 plus a little overhead", perProcess)
		}
		if cpuPer > 2.3 {
			t.Errorf("spin CPU per request %.3f ms, want SPIN_MS=2", cpuPer)
		}
	})
	// Wall time per service is the competition for one processor: far above
	// the 2 ms each request costs.
	if st.ServiceMS.Mean < 8 {
		t.Errorf("service mean %.2f ms, want far above the 2 ms spin (16 workers share one processor)", st.ServiceMS.Mean)
	}
}

// On one processor with more workers than it can run at once, callers who
// find a free worker do not queue: the wait for the processor shows up in
// their service time, not in the queue. Eight callers at once, eight
// workers, 50 ms of processor each on CPUS=1: none queues, the last to
// finish took about 8 × 50 ms because the eight spins shared one processor,
// and the kernel counts about 8 × 50 ms of processor for the lab (a
// wall-clock spin would have stopped each after 50 ms of wall time, with
// about 50 ms of processor spent in all).
func TestProcessorWaitIsServiceNotQueue(t *testing.T) {
	c := serveChild(t, labsvc.Config{Workers: 8, SpinMS: 50, WaitMS: 0, CPUs: 1})
	addr := hostport(c.Target())
	replies := make([]reply, 8)
	var wg sync.WaitGroup
	for i := range replies {
		wg.Go(func() {
			r, err := call(addr, 10*time.Second)
			if err != nil {
				t.Error(err)
			}
			replies[i] = r
		})
	}
	wg.Wait()
	st := quiet(t, c.Control(), 5*time.Second)
	slowest := 0.0
	for _, r := range replies {
		if r.status != 200 || r.queueWait != 0 {
			t.Errorf("status %d, queue wait %.3f ms; want 200 handed to a free worker at once (0)", r.status, r.queueWait)
		}
		slowest = max(slowest, r.serviceMS)
	}
	t.Logf("queued_max %d, service max %.1f ms, lab process CPU %.1f ms (8 spins of 50 ms on one processor)", st.QueuedMax, slowest, st.ProcessCPUMS)
	if st.QueuedMax != 0 {
		t.Errorf("queued_max %d with a free worker for every caller, want 0", st.QueuedMax)
	}
	// Alone, each would take 50 ms; sharing one processor the last ends
	// after about 400 ms. 250 leaves room for a spin that started early.
	if slowest < 250 {
		t.Errorf("slowest service %.1f ms, want about 8 × 50 ms: the spins share one processor", slowest)
	}
	// The kernel's count of the lab's processor time (getrusage), not the
	// spins' own clock: every spin cost its 50 ms however long it waited.
	if st.ProcessCPUMS < 8*50*0.95 {
		t.Errorf("lab process used %.1f ms of processor for 8 spins of SPIN_MS=50, want at least %.0f", st.ProcessCPUMS, 8*50*0.95)
	}
}

// A lab child runs inside its sandbox: GOMAXPROCS is CPUS + 1 (the spins
// take turns on CPUS processors; the extra P is for everything else), every
// thread is pinned to the first CPUS processors the parent may use (and
// GET /config says which), and the memory cap is set. All three are read from outside the lab's own code: the Go
// runtime's metrics on /metrics and the kernel's per-thread affinity.
func TestChildSandbox(t *testing.T) {
	allowed, err := affinity.ProcessCPUs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cpus int
	}{
		// the lessons' lab: one processor
		{"one processor", 1},
		// two processors, where the machine has them
		{"two processors", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cpus > len(allowed) {
				t.Skipf("this process may use only processor(s) %v", allowed)
			}
			cfg := labsvc.DefaultConfig()
			cfg.CPUs = tc.cpus
			want, err := labsvc.LabCPUs(cfg)
			if err != nil {
				t.Fatal(err)
			}
			c := serveChild(t, cfg)
			if got := metric(t, c.Control(), "go_sched_gomaxprocs_threads"); got != float64(tc.cpus+1) {
				t.Errorf("child's GOMAXPROCS = %v, want CPUS+1 = %d", got, tc.cpus+1)
			}
			if got := metric(t, c.Control(), "go_gc_gomemlimit_bytes"); got != labsvc.MemoryLimit {
				t.Errorf("child's memory limit = %v bytes, want MemoryLimit = %d", got, labsvc.MemoryLimit)
			}
			// GET /config says where the lab runs, for a generator to keep off.
			var reply labsvc.ConfigReply
			if doJSON(t, "GET", c.Control()+"/config", "", &reply); !slices.Equal(reply.Processors, want) || reply.Config != cfg {
				t.Errorf("GET /config = %+v, want %+v on processors %v", reply, cfg, want)
			}
			threads, err := affinity.ThreadCPUs(c.Pid())
			if err != nil {
				t.Fatal(err)
			}
			for tid, cpus := range threads {
				if !slices.Equal(cpus, want) {
					t.Errorf("child thread %d may use processors %v, want the first CPUS=%d allowed: %v", tid, cpus, tc.cpus, want)
				}
			}
			t.Logf("pid %d: %d threads on %v", c.Pid(), len(threads), want)
		})
	}
}

// serveChild starts a lab child with cfg that is stopped with Stop, and
// checked gone, when the test ends. Its context outlives the test's
// (t.Context ends before cleanups run), so Stop, not the context, ends it.
// pinAwayFrom pins the test process away from the lab child c's
// processors until the test ends, as a load generator would be, and
// returns the lab's processors.
func pinAwayFrom(tb testing.TB, c *labsvc.Child) []int {
	tb.Helper()
	cpus, err := affinity.ProcessCPUs(c.Pid())
	if err != nil {
		tb.Fatal(err)
	}
	pin, err := affinity.PinAwayFrom(cpus)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = pin.Restore() })
	tb.Log(pin)
	return cpus
}

func serveChild(t *testing.T, cfg labsvc.Config) *labsvc.Child {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := labsvc.StartChild(ctx, testChild(t, "serve"), cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer cancel()
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
		waitGone(t, c, time.Second)
	})
	return c
}

// The control API answers within a few milliseconds however overloaded the
// lab's processor is: sweeps read /stats between windows and reset the lab
// before each. Sixty-four workers spinning 2 ms each on one processor, 256
// callers in a closed loop (the processor, about 470 a second, binds; the
// queue never empties): every GET /stats is timed. Before the control API
// had a processor of its own it waited behind the spinning workers, 0.6 to
// 1.9 s per call. A physics check.
func TestControlAnswersUnderOverload(t *testing.T) {
	physics.Require(t)
	if raceDetector {
		// Under -race the lab child is instrumented too: with the lab at
		// 96% of its processor the median call took 12.9 ms and the upper
		// quartile 60 ms (CI, 2026-12-01), the detector's cost in the
		// control API's own goroutine.
		physics.Skip(t, "the race detector is on: the control API's timings are the detector's")
	}
	c := serveChild(t, labsvc.Config{Workers: 64, SpinMS: 2, WaitMS: 18, CPUs: 1})
	cpus := pinAwayFrom(t, c)
	addr := hostport(c.Target())
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer func() { stop.Store(true); wg.Wait() }()
	for range 256 {
		wg.Go(func() {
			for !stop.Load() {
				_, _ = call(addr, 5*time.Second)
			}
		})
	}
	time.Sleep(time.Second) // the queue fills
	doJSON(t, "POST", c.Control()+"/reset", "", nil)
	stopProbe := make(chan struct{})
	probe, err := affinity.WakeLate(cpus, 5*time.Millisecond, stopProbe)
	if err != nil {
		t.Fatal(err)
	}
	var took []time.Duration
	var st labsvc.Stats
	for range 20 {
		time.Sleep(50 * time.Millisecond)
		start := time.Now()
		st = stats(t, c.Control())
		took = append(took, time.Since(start))
	}
	close(stopProbe)
	late := <-probe
	slices.Sort(late)
	if len(late) == 0 {
		t.Fatal("the wake-up probe took no samples")
	}
	t.Logf("a thread on the lab's processor woke %v late at the median, %v nine times in ten, at most %v (%d naps)", late[len(late)/2], late[len(late)*9/10], late[len(late)-1], len(late))
	elapsed := time.Since(st.Since).Seconds()
	slices.Sort(took)
	t.Logf("GET /stats took %v (sorted); meanwhile the lab served %.0f/s, used %.0f%% of its processor, queued %d at the end and at most %d",
		took, float64(st.Done)/elapsed, st.ProcessCPUMS/10/elapsed, st.Queued, st.QueuedMax)
	// Overloaded means a backlog the processor cannot clear: at most about
	// 470 spins a second fit on it, and the workers alone (64 of them,
	// 20 ms each) could take 3,200, so a queue of 64 (128 ms of spinning)
	// builds only when the processor binds. How many wait at the last
	// call depends on the callers too: they are closed-loop and share the
	// other processor with whatever else runs, and on the CI machine,
	// with other packages' tests beside them, only 103 of the 256 were
	// inside the lab at the last call (39 queued) while it served 422/s
	// at 90% of its processor. The most that waited at once in the
	// window is the measure of the backlog.
	if st.QueuedMax < 64 {
		t.Errorf("at most %d queued: the lab was not overloaded (256 callers, 64 workers)", st.QueuedMax)
	}
	// Two sets of bounds, both checked first. The goal, a few milliseconds, holds for a lab
	// that has its processor: at most 10 ms for the median, 50 ms for the
	// upper quartile and 100 ms for the slowest call. It is checked when
	// the lab had at least 98% of its processor and a thread pinned there
	// woke within 1 ms of when it asked nine times in ten (affinity.WakeLate). Under
	// `go test ./...` other packages' labs and generators run at the same
	// time, some on the same processor, and the machine decides: on the CI
	// machine the lab once got 93% of it and the median was 11 ms, another
	// time 94% and five calls in twenty took 11 ms to 1.07 s; here, with
	// two busy loops on the lab's processor, 43% and a median of 1.8 ms.
	// That is time other programs held the processor, not time the
	// control API waited for the lab's own workers. What the control API
	// must never do again, whatever else runs, is wait behind them: before
	// it had a processor of its own, calls took 0.23 to 1.93 s, median
	// 0.81 s, with the lab at 61% of its processor, and 192 queued 2 ms
	// spins are 0.38 s of work. So on a busy machine the bounds are the
	// ones that failure cannot meet: 50 ms for the median, 200 ms for the
	// upper quartile. Those are checked whatever the machine; the goal's
	// are checked, or the test skips saying what it measured.
	share := st.ProcessCPUMS / 10 / elapsed
	floor := late[len(late)*9/10]
	med, q3, worst := took[len(took)/2], took[len(took)*3/4-1], took[len(took)-1]
	if med > 50*time.Millisecond {
		t.Errorf("GET /stats median %v under overload, want at most 50 ms: calls waited behind the lab's workers (lab at %.0f%% of its processor, wake-ups up to %v late)", med, share, floor)
	}
	if q3 > 200*time.Millisecond {
		t.Errorf("GET /stats upper quartile %v under overload, want at most 200 ms: calls waited behind the lab's workers (lab at %.0f%% of its processor, wake-ups up to %v late)", q3, share, floor)
	}
	if share < 98 || floor > time.Millisecond {
		physics.Skip(t, "the goal's bounds (median 10 ms, upper quartile 50, slowest 100): the lab had %.0f%% of its processor and a thread there woke up to %v late nine times in ten; the check needs 98%% and 1 ms (checked: median %v ≤ 50 ms and upper quartile %v ≤ 200 ms, no call waited behind the workers)", share, floor, med, q3)
	}
	if med > 10*time.Millisecond {
		t.Errorf("GET /stats median %v under overload, want at most 10 ms (lab at %.0f%% of its processor, wake-ups up to %v late)", med, share, floor)
	}
	if q3 > 50*time.Millisecond {
		t.Errorf("GET /stats upper quartile %v under overload, want at most 50 ms (lab at %.0f%% of its processor, wake-ups up to %v late)", q3, share, floor)
	}
	if worst > 100*time.Millisecond {
		t.Errorf("slowest GET /stats %v under overload, want at most 100 ms", worst)
	}
}

// Spins take the processor in turns of SpinQuantum (round robin), which
// approximates processor sharing: four 5 ms spins started together on one
// processor each progress at about a quarter of it, so all four end near
// 4 × 5 = 20 ms (the first a few quanta before the last), where first
// come, first served would end them at 5, 10, 15 and 20 ms. The callers
// (this process, kept off the lab's processor) connect first, so that the
// door holds the four connections waiting for their requests, then write the four requests one
// after another within microseconds, and time each from its write to its
// whole answer. Three rounds; in each, the first to end must have taken at
// least 12 ms (first come would end two by 10 ms), which a busy machine
// only makes easier, and (a physics check) at least 0.6 of the last one's
// time (first come: about 0.25), which a stall of the lab's processor can
// break.
func TestSpinsShareTheProcessor(t *testing.T) {
	c := serveChild(t, labsvc.Config{Workers: 4, SpinMS: 5, WaitMS: 0, CPUs: 1})
	pinAwayFrom(t, c)
	addr := hostport(c.Target())
	if _, err := call(addr, 5*time.Second); err != nil { // warm up
		t.Fatal(err)
	}
	const n = 4
	req := []byte("GET /work HTTP/1.1\r\nHost: lab\r\n\r\n")
	// Each round's first and last answer and the processor time the lab
	// used in between, for the physics check.
	type spinRound struct{ first, last, used float64 }
	var rounds []spinRound
	for round := range 3 {
		conns := make([]net.Conn, n)
		for i := range conns {
			var err error
			if conns[i], err = net.DialTimeout("tcp", addr, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			defer conns[i].Close()
			_ = conns[i].SetDeadline(time.Now().Add(10 * time.Second))
		}
		// The door has accepted every connection, and reads it, before
		// any request is sent.
		for deadline := time.Now().Add(5 * time.Second); stats(t, c.Control()).Reading < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the door did not take the %d connections", n)
			}
		}
		before := stats(t, c.Control())
		sent := make([]time.Time, n)
		for i, conn := range conns {
			sent[i] = time.Now()
			if _, err := conn.Write(req); err != nil {
				t.Fatal(err)
			}
		}
		took := make([]float64, n)
		var wg sync.WaitGroup
		for i, conn := range conns {
			wg.Go(func() {
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
				}
				if err != nil || resp.StatusCode != 200 {
					t.Errorf("request %d: %v, %v", i, resp, err)
					return
				}
				took[i] = float64(time.Since(sent[i]).Microseconds()) / 1000
			})
		}
		wg.Wait()
		first, last := slices.Min(took), slices.Max(took)
		t.Logf("round %d: four 5 ms spins on one processor answered after %v ms (processor sharing: all near 20; first come: 5, 10, 15, 20)", round+1, took)
		// One spin after another answers the first at 5 ms, whatever
		// the machine does.
		if first < 12 {
			t.Errorf("round %d: the first answer after %.1f ms: want at least 12 ms (shared turns), not one spin after another", round+1, first)
		}
		used := stats(t, c.Control()).ProcessCPUMS - before.ProcessCPUMS
		rounds = append(rounds, spinRound{first, last, used})
		quiet(t, c.Control(), 5*time.Second)
	}
	// Shared turns end the four together: the first at least 0.6 of the
	// last. A stall of the lab's processor delays whichever spin it
	// catches (under the race detector beside a busy loop, 20.3 and
	// 34.0 ms), so this is held in the rounds where the lab had its
	// processor: the processor time it used in the round (the spins'
	// 20 ms and its own work) at least 90% of the time to the last answer.
	t.Run("ending together", func(t *testing.T) {
		physics.Require(t)
		var busy []string
		for i, r := range rounds {
			if share := r.used / r.last; share < 0.9 {
				busy = append(busy, fmt.Sprintf("round %d: the lab used %.1f ms of processor in the %.1f ms to the last answer (%.0f%%)", i+1, r.used, r.last, 100*share))
				continue
			}
			if r.first < 0.6*r.last {
				t.Errorf("round %d: the first answer after %.1f ms and the last after %.1f ms, the lab using %.1f ms of processor meanwhile: want the first at least 0.6 of the last (shared turns)", i+1, r.first, r.last, r.used)
			}
		}
		if len(busy) > 0 {
			physics.Skip(t, "%s; the check needs 90%% (the other rounds were checked)", strings.Join(busy, "; "))
		}
	})
}
