package labsvc_test

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"capacitylab/affinity"
	"capacitylab/internal/physics"
	"capacitylab/labsvc"
)

// busyCycle keeps one worker busy with callers in a closed loop and
// returns its mean cycle: the time from the start of one request's service
// (the worker taking it from the queue) to the start of the next, in ms,
// with what it was measured from for the log.
//
// Each reply says how long the request waited in the queue and how long its
// service took (X-Queue-Wait-Ms, X-Service-Ms). A caller connects at send,
// the door accepts within microseconds, so the service of request i began
// at send_i + queueWait_i, give or take the accept's delay. That error does
// not add up from request to request: over n requests served one after
// another the mean cycle is (start of the last − start of the first)/(n−1),
// wrong by at most the accept's jitter divided by the window. Only cycles
// ending in a request that waited in the queue count: the worker took it the
// moment it finished the one before, so it was busy throughout.
func busyCycle(t *testing.T, c *labsvc.Child, window time.Duration) (mean float64, svcMean float64, n int, log string) {
	t.Helper()
	addr := hostport(c.Target())
	type stamp struct {
		start     time.Time // send + queue wait: the start of service
		queueWait float64
		service   float64
	}
	var (
		mu     sync.Mutex
		stamps []stamp
		stop   atomic.Bool
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	// Eight callers: seven wait while the worker serves the eighth.
	for range 8 {
		wg.Go(func() {
			for !stop.Load() {
				sent := time.Now()
				r, err := call(addr, 5*time.Second)
				if err != nil || r.status != 200 {
					failed.Add(1)
					continue
				}
				mu.Lock()
				stamps = append(stamps, stamp{sent.Add(time.Duration(r.queueWait * float64(time.Millisecond))), r.queueWait, r.serviceMS})
				mu.Unlock()
			}
		})
	}
	time.Sleep(300 * time.Millisecond) // the queue fills
	mu.Lock()
	stamps = stamps[:0]
	mu.Unlock()
	time.Sleep(window)
	stop.Store(true)
	wg.Wait()
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d requests failed", f)
	}
	slices.SortFunc(stamps, func(a, b stamp) int { return a.start.Compare(b.start) })
	// The requests that waited in the queue were taken the moment the
	// worker finished the one before: each run of them after one request
	// is a stretch of busy cycles. Start stamps telescope within a run, so
	// each run adds its length and its number of cycles.
	var (
		busy   time.Duration
		cycles int
		svc    float64
		runs   int
	)
	for i := 0; i < len(stamps); {
		j := i + 1
		for j < len(stamps) && stamps[j].queueWait > 0 {
			j++
		}
		if j-i > 1 {
			busy += stamps[j-1].start.Sub(stamps[i].start)
			cycles += j - 1 - i
			runs++
			for _, s := range stamps[i : j-1] {
				svc += s.service
			}
		}
		i = j
	}
	n = cycles
	if n < 50 {
		physics.Skip(t, "only %d busy cycles in %v (%d requests): the callers, on a busy machine, did not keep the worker busy", n, window, len(stamps))
	}
	mean = float64(busy) / float64(time.Millisecond) / float64(n)
	svcMean = svc / float64(n)
	return mean, svcMean, n, fmt.Sprintf("%d busy cycles in %d runs (%d requests), mean cycle %.4f ms, mean X-Service-Ms %.4f ms (the rest, %.4f ms, between one service's end and the next one's start)",
		n, runs, len(stamps), mean, svcMean, mean-svcMean)
}

// A busy worker cycles as set: one worker kept busy by a closed loop of
// callers starts a request every SPIN_MS + WAIT_MS, within 0.3% on average,
// so a lab set near 100% busy is that busy and not more. The hand-off from
// one request to the next and the wait's wake-up are made up in the next
// request's wait (each reckoned from when the last was due to end, see
// Server), not added after it, and so is what other threads took of the
// processor while a spin computed.
//
// What a request can make up is its WAIT_MS; a machine that delays the
// lab's wake-ups by more makes the cycle longer by the rest. A thread
// napping on the lab's processor meanwhile measures those delays: when
// the cycle is off and their excess over WAIT_MS, on average per wake-up,
// is more than a third of the 0.3% allowed, the machine cannot show the
// cycle and the test skips saying so.
func TestBusyWorkerCycle(t *testing.T) {
	physics.Require(t)
	for _, k := range []struct{ spin, wait int }{{0, 10}, {0, 20}, {2, 18}} {
		t.Run(fmt.Sprintf("spin=%d,wait=%d", k.spin, k.wait), func(t *testing.T) {
			c := serveChild(t, labsvc.Config{Workers: 1, SpinMS: k.spin, WaitMS: k.wait, CPUs: 1})
			cpus := pinAwayFrom(t, c)
			stop := make(chan struct{})
			probe, probeErr := affinity.WakeLate(cpus, 5*time.Millisecond, stop)
			mean, _, _, log := busyCycle(t, c, 3*time.Second)
			close(stop)
			t.Log(log)
			set := float64(k.spin + k.wait)
			over := (mean - set) / set
			if math.Abs(over) <= 0.003 {
				return
			}
			if probeErr != nil {
				physics.Skip(t, "cycle %.4f ms, %+.2f%% off SPIN_MS + WAIT_MS = %.0f, and the machine's wake-up delays were not measured: %v", mean, 100*over, set, probeErr)
			}
			late := <-probe
			var excess time.Duration
			for _, l := range late {
				excess += max(0, l-time.Duration(k.wait)*time.Millisecond)
			}
			if len(late) > 0 {
				excess /= time.Duration(len(late))
			}
			slices.Sort(late)
			if len(late) == 0 || float64(excess)/float64(time.Millisecond) > 0.001*set {
				physics.Skip(t, "cycle %.4f ms, %+.2f%% off SPIN_MS + WAIT_MS = %.0f, but the machine delayed wake-ups on processor(s) %v beyond WAIT_MS by %v on average (%d naps of 5 ms, the slowest %v late): more than the 0.1%% of a cycle it may",
					mean, 100*over, set, cpus, excess, len(late), late[len(late)-1])
			}
			t.Errorf("a busy worker cycles in %.4f ms, %+.2f%% off SPIN_MS + WAIT_MS = %.0f ms: want within 0.3%% (wake-ups on processor(s) %v late beyond WAIT_MS by %v on average over %d naps)",
				mean, 100*over, set, cpus, excess, len(late))
		})
	}
}
