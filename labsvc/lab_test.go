package labsvc_test

import (
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"capacitylab/affinity"
	"capacitylab/internal/physics"
	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
)

// With LIMIT=3 and a burst of 200 simultaneous callers, at most 3 ever wait,
// every caller the door turns away reads a complete 503 with Retry-After (no
// reset), and accepted + refused = connections.
func TestRefusalsUnderBurst(t *testing.T) {
	const callers = 200
	l := labtest.Serve(t, cfg(1, 0, 20, 3))
	start := make(chan struct{})
	replies := make([]reply, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			<-start
			replies[i], errs[i] = call(l.Addr, 10*time.Second)
		})
	}
	close(start)
	wg.Wait()

	ok, refused := 0, 0
	for i, r := range replies {
		if errs[i] != nil {
			t.Errorf("caller %d: %v (a refused caller must read a whole 503, not an error)", i, errs[i])
			continue
		}
		switch r.status {
		case 200:
			ok++
			if !r.close || r.body != "ok\n" {
				t.Errorf("caller %d: 200 with Connection: close %v, body %q", i, r.close, r.body)
			}
		case 503:
			refused++
			if r.retryAfter != labsvc.RetryAfter || !r.close || r.body != "queue full\n" {
				t.Errorf("caller %d: 503 with Retry-After %q, Connection: close %v, body %q", i, r.retryAfter, r.close, r.body)
			}
		default:
			t.Errorf("caller %d: status %d", i, r.status)
		}
	}
	st := quiet(t, l.Control, 5*time.Second)
	t.Logf("ok=%d refused=%d stats: accepted=%d refused=%d done=%d queued_max=%d", ok, refused, st.Accepted, st.Refused, st.Done, st.QueuedMax)
	if st.QueuedMax > 3 {
		t.Errorf("queued_max = %d, want at most LIMIT=3", st.QueuedMax)
	}
	if st.Accepted+st.Refused != callers {
		t.Errorf("accepted %d + refused %d = %d, want %d connections", st.Accepted, st.Refused, st.Accepted+st.Refused, callers)
	}
	if int64(ok) != st.Done || int64(refused) != st.Refused {
		t.Errorf("callers saw %d ok and %d refused; lab counted done=%d refused=%d", ok, refused, st.Done, st.Refused)
	}
	if refused == 0 {
		t.Errorf("nobody was refused: the burst did not overrun LIMIT=3")
	}
}

// With the default knobs (WORKERS=1, SPIN_MS=2, WAIT_MS=18) a lone request
// takes 20 ± 2 ms of service. Nothing can make it faster than 20 ms (2 ms of
// processor plus an 18 ms sleep), so the lower bound holds for every request
// and the plain run checks it, with the stats' agreement with what the
// callers saw. A busy machine can only make some slower (the spin waits for
// a processor, the sleeper waits to be woken), so the upper bounds are a
// physics check: the fastest quarter within 22 ms, no queueing at rest, the
// spin's processor time near SPIN_MS. They are held when a thread on this
// process's processors woke within 1 ms nine naps in ten meanwhile.
func TestServiceTimeAtRest(t *testing.T) {
	const n = 40
	l := labtest.Serve(t, labsvc.DefaultConfig())
	cpus, err := affinity.ProcessCPUs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	machine := watchWakeups(t, cpus)
	defer machine()
	irq0, irqErr := interruptTime()
	var svc []float64
	for range n {
		r, err := call(l.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
		svc = append(svc, r.serviceMS)
	}
	sort.Float64s(svc)
	q1, median := svc[n/4-1], svc[n/2-1] // nearest rank
	st := stats(t, l.Control)
	t.Logf("X-Service-Ms min %.3f, p25 %.3f, median %.3f, max %.3f; stats service_ms %+v", svc[0], q1, median, svc[n-1], st.ServiceMS)
	if svc[0] < 19.9 {
		t.Errorf("fastest service time %.3f ms, want at least SPIN_MS + WAIT_MS = 20", svc[0])
	}
	// The headers are rounded to the microsecond.
	near := func(a, b float64) bool { return math.Abs(a-b) <= 0.0005 }
	if st.ServiceMS.N != n || !near(st.ServiceMS.P50, median) || !near(st.ServiceMS.Max, svc[n-1]) {
		t.Errorf("stats service_ms = %+v, want n=%d, p50 %.3f and max %.3f as the callers saw", st.ServiceMS, n, median, svc[n-1])
	}
	if st.Done != n {
		t.Errorf("done=%d, want %d", st.Done, n)
	}
	// A spin never computes less than SPIN_MS.
	per := st.SpinCPUMS / float64(st.Done)
	if per < 1.99 {
		t.Errorf("spin_cpu_ms per request = %.3f, want at least SPIN_MS=2 (1.99)", per)
	}
	// busy_ms is the worker-time the callers saw, summed (each header is
	// rounded to the microsecond).
	var sum float64
	for _, v := range svc {
		sum += v
	}
	if math.Abs(st.BusyMS-sum) > float64(n)*0.0005+0.001 {
		t.Errorf("busy_ms = %.4f, want the sum of the %d service times the callers saw, %.4f", st.BusyMS, n, sum)
	}
	calm, floor := machine()
	t.Run("within 2 ms of the knobs", func(t *testing.T) {
		physics.Require(t)
		if !calm {
			physics.Skip(t, "%s; the check needs nine naps in ten within 1 ms", floor)
		}
		if q1 > 22 {
			t.Errorf("p25 of service time %.3f ms, want 20 ± 2 (median %.3f; %s)", q1, median, floor)
		}
		if st.QueueWaitMS.Max > 5 {
			t.Errorf("queue_wait_ms=%+v, want no queueing at rest", st.QueueWaitMS)
		}
		// On a quiet machine a spin computes at most a few chunks more
		// than SPIN_MS. Its thread's clock is also charged for the
		// interrupts handled while it runs: on the CI machine, with
		// other packages' tests busy on the loopback, 40 spins measured
		// 2.174 ms each. So the upper bound grows by the interrupt time
		// the machine logged during the test, shared among the spins,
		// and says so.
		allow := 0.1
		if irq1, err := interruptTime(); irqErr == nil && err == nil && irq1 > irq0 {
			extra := float64(irq1-irq0) / float64(time.Millisecond) / n
			t.Logf("the processors handled %v of interrupts during the test (at most %.2f ms a spin); spins held to 2.1 + %.2f ms", irq1-irq0, extra, extra)
			allow += extra
		}
		if per > 2+allow {
			t.Errorf("spin_cpu_ms per request = %.3f, want SPIN_MS=2 (at most %.2f)", per, 2+allow)
		}
	})
}

// WORKERS caps the rate at WORKERS / (SPIN_MS + WAIT_MS) however many callers
// push: with the lessons' defaults one worker serves at most 1000/20 = 50
// requests a second, and two workers twice that (the processor is nowhere
// near full: 2 ms of every 20). The ceiling is physics, so it is held
// exactly (one request more than the window fits, 4%), in the plain run; how
// near a busy machine lets the lab come to it is not, so from below a
// physics check asks for more than WORKERS−1 workers could serve, which
// shows every worker serving.
func TestWorkerCeiling(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	tests := []struct {
		name    string
		workers int
		ceiling float64 // requests a second
	}{
		// the lessons' starting point
		{"one worker", 1, 50},
		// a second worker doubles the ceiling
		{"two workers", 2, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := labtest.Serve(t, labsvc.Config{Workers: tc.workers, SpinMS: 2, WaitMS: 18, CPUs: 1})
			var stop atomic.Bool
			var failures atomic.Int64
			var wg sync.WaitGroup
			for range 4 * tc.workers { // closed loop, always more callers than workers
				wg.Go(func() {
					for !stop.Load() {
						if _, err := call(l.Addr, 5*time.Second); err != nil {
							failures.Add(1)
						}
					}
				})
			}
			time.Sleep(100 * time.Millisecond)
			doJSON(t, "POST", l.Control+"/reset", "", nil)
			time.Sleep(time.Second)
			end := time.Now() // before the reset: elapsed is if anything short, the rate high
			var st labsvc.Stats
			doJSON(t, "POST", l.Control+"/reset", "", &st)
			stop.Store(true)
			wg.Wait()
			elapsed := end.Sub(st.Since).Seconds()
			rate := float64(st.Done) / elapsed
			t.Logf("done %d in %.3fs = %.1f/s (ceiling %.0f); queued_max %d; service p50 %.2f ms", st.Done, elapsed, rate, tc.ceiling, st.QueuedMax, st.ServiceMS.P50)
			if f := failures.Load(); f > 0 {
				t.Errorf("%d requests failed", f)
			}
			if rate > tc.ceiling*1.04 {
				t.Errorf("%.1f requests/s with WORKERS=%d and 20 ms each, want at most %.0f", rate, tc.workers, tc.ceiling)
			}
			if st.QueuedMax < 1 {
				t.Errorf("queued_max %d with %d callers for %d workers, want callers queueing", st.QueuedMax, 4*tc.workers, tc.workers)
			}
			t.Run("every worker serving", func(t *testing.T) {
				physics.Require(t)
				if fewer := tc.ceiling * float64(tc.workers-1) / float64(tc.workers) * 1.04; tc.workers > 1 && rate <= fewer {
					t.Errorf("%.1f requests/s, want more than %d workers could serve (%.0f/s): is every worker serving?", rate, tc.workers-1, fewer)
				}
				if st.Done < 20 {
					t.Errorf("only %d served in %.2fs", st.Done, elapsed)
				}
			})
		})
	}
}

// A caller that sends its request and leaves is still served and counted in
// done: the lab does not notice callers who gave up.
func TestAbandonedRequestsServed(t *testing.T) {
	const abandoned = 5
	l := labtest.Serve(t, cfg(1, 0, 50, 0))
	for range abandoned {
		c, err := net.Dial("tcp", l.Addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: lab\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	// Nobody waits for a reply, so wait until the door has taken every
	// connection before waiting for quiet: a lab that has not accepted
	// them yet is quiet too (CI under -race once read accepted=0).
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st := stats(t, l.Control)
		if st.Accepted+st.Refused >= abandoned {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("after 5 s the lab had taken %d of the %d connections", st.Accepted+st.Refused, abandoned)
		}
	}
	st := quiet(t, l.Control, 5*time.Second)
	if st.Done != abandoned || st.Bad != 0 || st.Accepted != abandoned {
		t.Errorf("after %d abandoned requests: accepted=%d done=%d bad=%d, want all accepted and done", abandoned, st.Accepted, st.Done, st.Bad)
	}
	// All but the first waited in the queue, and a worker going straight
	// on makes up its late wake-up and its hand-off in the next request's
	// wait (a few tenths of a millisecond at most, unless the machine
	// stalls the lab), so their services are near WAIT_MS, some a little
	// under.
	if st.ServiceMS.N != abandoned || st.ServiceMS.P50 < 49 {
		t.Errorf("service_ms = %+v, want %d samples, the median at least WAIT_MS=50 less 1 ms", st.ServiceMS, abandoned)
	}
}

// Callers that send nothing, garbage, or leave before a complete request are
// counted in bad (never lost), do not hold a worker beyond ReadTimeout, and
// at every snapshot accepted = done + queued + in_service + bad.
func TestIdentityAndBadCallers(t *testing.T) {
	l := labtest.Serve(t, cfg(2, 1, 5, 0))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var snapErrs []string
	var snaps int
	wg.Go(func() {
		// Watch the identity while traffic flows.
		for {
			select {
			case <-stop:
				return
			default:
			}
			var st labsvc.Stats
			if code := doJSON(t, "GET", l.Control+"/stats", "", &st); code != 200 {
				snapErrs = append(snapErrs, fmt.Sprintf("GET /stats: status %d", code))
				return
			}
			snaps++
			if u := st.Unaccounted(); u != 0 {
				snapErrs = append(snapErrs, fmt.Sprintf("unaccounted %d in %+v", u, st))
			}
			time.Sleep(3 * time.Millisecond)
		}
	})

	type caller struct {
		name string
		n    int
		do   func() error
	}
	send := func(payload string, hold time.Duration) func() error {
		return func() error {
			c, err := net.Dial("tcp", l.Addr)
			if err != nil {
				return err
			}
			defer c.Close()
			if payload != "" {
				if _, err := io.WriteString(c, payload); err != nil {
					return err
				}
			}
			if hold > 0 {
				_ = c.SetReadDeadline(time.Now().Add(hold))
				_, _ = io.ReadAll(c)
			}
			return nil
		}
	}
	callers := []caller{
		// well-behaved callers, served
		{"good", 40, func() error { _, err := call(l.Addr, 5*time.Second); return err }},
		// connects and says nothing until the lab gives up on it
		{"silent", 2, send("", 3*time.Second)},
		// sends a line that is not HTTP, and reads the 400
		{"garbage", 3, send("HELLO?\r\n\r\n", 3*time.Second)},
		// sends half a request line and hangs up
		{"gone", 3, send("GET /ha", 0)},
	}
	var mu sync.Mutex
	var callErrs []error
	for _, c := range callers {
		for range c.n {
			wg.Go(func() {
				if err := c.do(); err != nil {
					mu.Lock()
					callErrs = append(callErrs, err)
					mu.Unlock()
				}
			})
		}
	}
	// The silent callers hold a worker for at most ReadTimeout each; wait
	// for the traffic (not the watcher) to end.
	time.Sleep(100 * time.Millisecond)
	quiet(t, l.Control, labsvc.ReadTimeout+5*time.Second)
	close(stop)
	wg.Wait()
	st := quiet(t, l.Control, time.Second)
	for _, err := range callErrs {
		t.Errorf("caller: %v", err)
	}
	for _, e := range snapErrs {
		t.Errorf("identity broken during traffic: %s", e)
	}
	t.Logf("%d snapshots; final %+v", snaps, st)
	want := labsvc.BadCounts{Timeout: 2, Garbage: 3, Gone: 3}
	if st.BadBy != want || st.Bad != 8 {
		t.Errorf("bad=%d bad_by=%+v, want 8 = %+v", st.Bad, st.BadBy, want)
	}
	if st.Done != 40 || st.Accepted != 48 || st.Unaccounted() != 0 {
		t.Errorf("accepted=%d done=%d, want 48 accepted and 40 done (identity %d)", st.Accepted, st.Done, st.Unaccounted())
	}
}

// A reset while connections wait carries them into the new window, so the
// identity holds inside every window and nothing is lost across the reset.
func TestResetCarriesWork(t *testing.T) {
	l := labtest.Serve(t, cfg(1, 0, 60, 0))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := call(l.Addr, 5*time.Second); err != nil {
				t.Error(err)
			}
		})
	}
	// Wait until all 4 are in (1 in service, 3 queued), then reset.
	deadline := time.Now().Add(3 * time.Second)
	for st := stats(t, l.Control); st.Accepted < 4; st = stats(t, l.Control) {
		if time.Now().After(deadline) {
			t.Fatalf("requests did not arrive: %+v", st)
		}
		time.Sleep(2 * time.Millisecond)
	}
	var closed labsvc.Stats
	doJSON(t, "POST", l.Control+"/reset", "", &closed)
	wg.Wait()
	st := quiet(t, l.Control, 2*time.Second)
	if closed.Accepted != 4 || closed.Unaccounted() != 0 {
		t.Errorf("closed window %+v, want accepted 4 and the identity", closed)
	}
	if st.Carried != closed.Accepted-closed.Done || st.Done != st.Carried || st.Unaccounted() != 0 {
		t.Errorf("new window carried=%d done=%d accepted=%d, want carried = %d still in flight, all done", st.Carried, st.Done, st.Accepted, closed.Accepted-closed.Done)
	}
}

// Requests are served first come, first served: with one worker, queue waits
// grow in arrival order.
func TestFIFO(t *testing.T) {
	l := labtest.Serve(t, cfg(1, 0, 30, 0))
	// The first request keeps the worker busy while the others queue up in order.
	var wg sync.WaitGroup
	waits := make([]float64, 5)
	for i := range waits {
		wg.Go(func() {
			r, err := call(l.Addr, 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			waits[i] = r.queueWait
		})
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
	if !slices.IsSorted(waits) {
		t.Errorf("queue waits in arrival order %v, want increasing (FIFO)", waits)
	}
}

// The door hands a connection to a free worker at once: while workers are
// free nothing queues and every queue wait is exactly zero; only callers who
// find every worker taken wait in the queue, and only they count towards
// LIMIT.
func TestHandOffToFreeWorkers(t *testing.T) {
	cases := []struct {
		name                   string
		workers, limit, calls  int
		wantQueued, wantRefuse int
	}{
		// Eight workers, eight callers at once: each is handed a worker.
		{"as many callers as workers", 8, 0, 8, 0, 0},
		// Two more than workers: those two, and only they, queue.
		{"two more callers than workers", 8, 0, 10, 2, 0},
		// LIMIT=1 counts only the queue: eight served at once, one queued,
		// one refused, although nine are inside.
		{"limit counts only the queue", 8, 1, 10, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// WAIT_MS=600 holds each worker long enough for every caller to
			// arrive while the first ones are still being served.
			l := labtest.Serve(t, cfg(tc.workers, 0, 600, tc.limit))
			replies := make([]reply, tc.calls)
			var wg sync.WaitGroup
			for i := range replies {
				wg.Go(func() {
					r, err := call(l.Addr, 10*time.Second)
					if err != nil {
						t.Error(err)
					}
					replies[i] = r
				})
			}
			wg.Wait()
			st := quiet(t, l.Control, 5*time.Second)
			zero, waited, refused := 0, 0, 0
			for _, r := range replies {
				switch {
				case r.status == 503:
					refused++
				case r.status == 200 && r.queueWait == 0:
					zero++
				case r.status == 200 && r.queueWait >= 300:
					waited++ // waited for a worker to finish its 600 ms
				default:
					t.Errorf("reply %d with queue wait %.3f ms: neither handed at once nor queued behind a whole service", r.status, r.queueWait)
				}
			}
			t.Logf("handed at once %d, queued %d, refused %d; stats queued_max %d refused %d", zero, waited, refused, st.QueuedMax, st.Refused)
			if zero != tc.workers || waited != tc.wantQueued || refused != tc.wantRefuse {
				t.Errorf("handed at once %d, queued %d, refused %d; want %d, %d, %d", zero, waited, refused, tc.workers, tc.wantQueued, tc.wantRefuse)
			}
			if st.QueuedMax != tc.wantQueued || st.Refused != int64(tc.wantRefuse) {
				t.Errorf("stats queued_max %d, refused %d; want %d, %d", st.QueuedMax, st.Refused, tc.wantQueued, tc.wantRefuse)
			}
		})
	}
}

// With STALL_EVERY=3 and STALL_MS=150 on one worker doing 10 ms of waiting,
// the 3rd and 6th requests the door admits (one at a time) each take the
// stall's 150 ms of service instead of 10 ms and spend no processor, the
// others take their usual 10 ms; POST /reset starts the count again, so the
// 3rd request after it stalls too. The same with ACCEPT=workers, where the
// worker counts the connections it accepts. The lower bounds hold whatever
// the machine does; the upper bounds (an unstalled request within 60 ms, a
// stalled one within 200) are a physics check, held when a thread on this
// process's processors woke within 1 ms nine naps in ten meanwhile: under
// the race detector beside a busy loop a 10 ms request once took 184.6 ms,
// just after a 150 ms stall took 184.3.
func TestPeriodicStall(t *testing.T) {
	for _, accept := range []labsvc.AcceptMode{labsvc.AcceptDoor, labsvc.AcceptWorkers} {
		t.Run("ACCEPT="+accept.String(), func(t *testing.T) {
			services, calm, floor := testPeriodicStall(t, accept)
			t.Run("within 60 and 200 ms", func(t *testing.T) {
				physics.Require(t)
				if !calm {
					physics.Skip(t, "%s; the check needs nine naps in ten within 1 ms", floor)
				}
				for _, s := range services {
					hi := 60.0
					if s.stalled {
						hi = 200
					}
					if s.ms > hi {
						t.Errorf("request %d: service %.3f ms, want at most %g ms (stalled: %v; %s); all: %v", s.i, s.ms, hi, s.stalled, floor, s.all)
					}
				}
			})
		})
	}
}

// stallServed is one request of testPeriodicStall: its number from 1, its
// service time, whether it stalled, and all the service times of its batch.
type stallServed struct {
	i       int
	ms      float64
	stalled bool
	all     []float64
}

// testPeriodicStall checks the stalls' counts and lower bounds and returns
// the services for the upper bounds, with what the wake-up probe measured
// meanwhile (watchWakeups).
func testPeriodicStall(t *testing.T, accept labsvc.AcceptMode) ([]stallServed, bool, string) {
	l := labtest.Serve(t, labsvc.Config{Workers: 1, SpinMS: 0, WaitMS: 10, CPUs: 1, StallEvery: 3, StallMS: 150, Accept: accept})
	cpus, err := affinity.ProcessCPUs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	machine := watchWakeups(t, cpus)
	defer machine() // stops the probe on every way out
	var services []stallServed
	serve := func(n int) []float64 {
		var svc []float64
		for range n {
			r, err := call(l.Addr, 5*time.Second)
			if err != nil || r.status != 200 {
				t.Fatalf("reply %+v, %v; want 200", r, err)
			}
			svc = append(svc, r.serviceMS)
		}
		return svc
	}
	check := func(svc []float64, stalled func(i int) bool) {
		t.Helper()
		for i, ms := range svc {
			// A wait ends at most 1 ms early (the waiter sets its timer
			// early by its recent wake-up delay, wait_linux.go: on a
			// loaded machine one ended at 9.995 ms) and later on a busy
			// machine.
			lo := 9.0
			if stalled(i) {
				lo = 150
			}
			if ms < lo {
				t.Errorf("request %d (from 1): service %.3f ms, want at least %g ms (stalled: %v); all: %v", i+1, ms, lo, stalled(i), svc)
			}
			services = append(services, stallServed{i + 1, ms, stalled(i), svc})
		}
	}
	check(serve(7), func(i int) bool { return (i+1)%3 == 0 })
	if st := stats(t, l.Control); st.SpinCPUMS != 0 || st.Done != 7 {
		t.Errorf("stats done %d spin_cpu_ms %.3f, want 7 and 0", st.Done, st.SpinCPUMS)
	}
	// The 7th was the first of a new three; after a reset the count starts again.
	doJSON(t, "POST", l.Control+"/reset", "", nil)
	check(serve(3), func(i int) bool { return i == 2 })
	calm, floor := machine()
	return services, calm, floor
}

// A worker is free as soon as its reply is written: a caller that reads
// its answer and connects again at once finds it free rather than queued
// behind the close of its own previous connection. So a closed loop of N
// callers against one worker has at most N−1 waiting (before, the worker
// became free only after closing, and queued_max read 1 with one caller
// and 5 with five).
func TestWorkerFreeWhenReplyWritten(t *testing.T) {
	for _, callers := range []int{1, 5} {
		t.Run(fmt.Sprintf("%d callers", callers), func(t *testing.T) {
			l := labtest.Serve(t, cfg(1, 0, 1, 0))
			var wg sync.WaitGroup
			var served atomic.Int64
			end := time.Now().Add(time.Second)
			for range callers {
				wg.Go(func() {
					for time.Now().Before(end) {
						r, err := call(l.Addr, 5*time.Second)
						if err != nil || r.status != 200 {
							t.Errorf("status %d, %v", r.status, err)
							return
						}
						served.Add(1)
					}
				})
			}
			wg.Wait()
			st := quiet(t, l.Control, 5*time.Second)
			t.Logf("%d callers, %d served, queued_max %d", callers, served.Load(), st.QueuedMax)
			if served.Load() == 0 {
				t.Errorf("nobody served in 1 s")
			}
			if st.QueuedMax > callers-1 {
				t.Errorf("queued_max %d with %d callers for 1 worker, want at most %d: a caller that reconnects at once must find its worker free", st.QueuedMax, callers, callers-1)
			}
			// How many reconnects the second held is the machine's: a
			// physics check.
			t.Run("at least 100 served", func(t *testing.T) {
				physics.Require(t)
				if served.Load() < 100 {
					t.Errorf("only %d served in 1 s of 1 ms requests", served.Load())
				}
			})
		})
	}
}

// With ACCEPT=workers each free worker accepts the next connection itself;
// callers beyond the workers wait in the kernel's accept queue, which the
// lab's own counters never see: queued stays 0 and every queue wait reads
// 0, yet those callers wait, and only backlogged (the kernel's queue,
// read from the listening socket) shows them. Two workers of 1 s, six
// callers at once, BACKLOG=8 (room for all who wait: past the backlog the
// kernel drops a caller's handshake and the caller's kernel tries again a
// second later).
func TestAcceptByWorkers(t *testing.T) {
	l := labtest.Serve(t, labsvc.Config{Workers: 2, SpinMS: 0, WaitMS: 1000, CPUs: 1, Backlog: 8, Accept: labsvc.AcceptWorkers})
	const callers = 6
	replies := make([]reply, callers)
	took := make([]time.Duration, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			start := time.Now()
			r, err := call(l.Addr, 10*time.Second)
			if err != nil {
				t.Error(err)
			}
			replies[i], took[i] = r, time.Since(start)
		})
	}
	// While the first two are served, the other four wait in the kernel.
	var during labsvc.Stats
	deadline := time.Now().Add(900 * time.Millisecond)
	for during = stats(t, l.Control); (during.Backlogged < callers-2 || during.InService < 2) && time.Now().Before(deadline); during = stats(t, l.Control) {
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
	st := quiet(t, l.Control, 5*time.Second)
	t.Logf("during: in_service %d queued %d backlogged %d (backlog %d); after: done %d queued_max %d backlogged_max %d; took %v",
		during.InService, during.Queued, during.Backlogged, during.Backlog, st.Done, st.QueuedMax, st.BackloggedMax, took)
	if during.InService != 2 || during.Queued != 0 || during.Backlogged != callers-2 || during.Backlog != 8 {
		t.Errorf("while two were served: in_service %d, queued %d, backlogged %d, backlog %d; want 2, 0, %d, 8",
			during.InService, during.Queued, during.Backlogged, during.Backlog, callers-2)
	}
	waited := 0
	for i, r := range replies {
		if r.status != 200 || r.queueWait != 0 {
			t.Errorf("caller %d: status %d, queue wait %.3f ms; want 200 and 0 (the lab never queued it)", i, r.status, r.queueWait)
		}
		// The wait the lab cannot see: the caller's time beyond its service.
		if took[i].Seconds()*1000-r.serviceMS > 800 {
			waited++
		}
	}
	if waited < callers-2 {
		t.Errorf("%d callers waited more than 800 ms beyond their service, want the %d who found both workers busy", waited, callers-2)
	}
	if st.Done != callers || st.QueuedMax != 0 || st.BackloggedMax < callers-3 || st.Unaccounted() != 0 {
		t.Errorf("done %d, queued_max %d, backlogged_max %d; want %d done, nothing queued by the lab, and at least %d found waiting in the kernel by a worker",
			st.Done, st.QueuedMax, st.BackloggedMax, callers, callers-3)
	}
}

// BACKLOG changes while the lab runs (POST /config), and the kernel says
// the new limit; ACCEPT does not.
func TestBacklogChanges(t *testing.T) {
	l := labtest.Serve(t, labsvc.Config{Workers: 1, SpinMS: 0, WaitMS: 0, CPUs: 1, Backlog: 8, Accept: labsvc.AcceptWorkers})
	if st := stats(t, l.Control); st.Backlog != 8 || st.Backlogged != 0 {
		t.Errorf("backlog %d, backlogged %d at start; want 8 and 0", st.Backlog, st.Backlogged)
	}
	var c labsvc.Config
	if code := doJSON(t, "POST", l.Control+"/config", `{"backlog": 2}`, &c); code != 200 || c.Backlog != 2 {
		t.Fatalf("POST /config backlog 2 = %d %+v", code, c)
	}
	if st := stats(t, l.Control); st.Backlog != 2 {
		t.Errorf("backlog %d after POST /config, want 2", st.Backlog)
	}
	var ce labsvc.ControlError
	if code := doJSON(t, "POST", l.Control+"/config", `{"accept": "door"}`, &ce); code != 400 || !strings.Contains(ce.Error, "ACCEPT cannot change while the lab runs") {
		t.Errorf("POST /config accept = %d %q, want 400 saying ACCEPT cannot change", code, ce.Error)
	}
	if code := doJSON(t, "POST", l.Control+"/config", `{"limit": 3}`, &ce); code != 400 || !strings.Contains(ce.Error, "LIMIT: 3 is not allowed: want 0 with ACCEPT=workers") {
		t.Errorf("POST /config limit 3 = %d %q, want 400: the workers keep no queue to limit", code, ce.Error)
	}
}
