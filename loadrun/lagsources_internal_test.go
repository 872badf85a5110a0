package loadrun

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"capacitylab/result"
)

// StartInstant serves an instant target at 127.0.0.1 until tb ends and
// returns its URL: four goroutines each accept a connection, read the
// request head (up to its empty line) into a buffer of their own, write a
// 200 with the lab's two timing headers and close. It does the least a
// server can and allocates little, so that the fidelity benchmarks measure
// the generator rather than the target sharing its process. (Exported for
// the external benchmarks; test builds only.)
func StartInstant(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	reply := []byte("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\nX-Queue-Wait-Ms: 0.5\r\nX-Service-Ms: 1.25\r\n\r\nok\n")
	serve := func(c net.Conn, buf []byte) {
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		n := 0
		for n < len(buf) && !bytes.Contains(buf[:n], []byte("\r\n\r\n")) {
			k, err := c.Read(buf[n:])
			n += k
			if err != nil {
				return
			}
		}
		_, _ = c.Write(reply)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			buf := make([]byte, 1024)
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				serve(c, buf)
			}
		})
	}
	tb.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return "http://" + ln.Addr().String() + "/"
}

// BenchmarkLagSources shows where late sends come from. It runs 2 s Poisson
// windows with Open.Run's dispatch loop (sleepUntil, then Target.begin,
// which takes Sent and starts the connection, then one goroutine per
// request for Target.complete), the dispatcher locked to its thread, and
// these extra clocks for arrival i, counted from arrival i−1's wake to
// arrival i's (so over arrival i−1's send and arrival i's sleep):
//
//	wake    when the dispatcher got back from sleepUntil, minus Intended
//	start   Sent minus wake: the dispatcher's own delay between waking
//	        and sending (catching up on arrivals already due)
//	work    how long arrival i−1's send took the dispatcher, from its Sent
//	        to the end of its go statement (socket, connect, write)
//	queued  how long the dispatcher's thread waited in this kernel's run
//	        queue for a processor (second field of
//	        /proc/thread-self/schedstat)
//	oncpu   how long the thread was counted as running (first field) beyond
//	        work: the thread should be asleep then, so time here is time
//	        taken from it while "running": the hypervisor running another
//	        guest on this virtual processor (steal), or interrupts
//	parked  whether the thread gave up its processor of its own accord
//	        (getrusage's voluntary switches) more times than it called
//	        nanosleep: the Go runtime parked it (its goroutine came back
//	        from a system call and found no Go processor free, or was
//	        preempted and queued) until it was handed one (the dispatcher
//	        is locked to its thread, so it comes back on the same one)

// A late send (lag > LateAfter) is filed under one cause: "start" when
// Sent − wake was most of its lag; otherwise the dispatcher woke late, and
// the send is filed under the cause of the stall it was caught in (the
// first late wake of a run of consecutive late wakes), the first of these
// that holds for that wake: "queued" when the thread waited in the run
// queue for at least half of its lateness, "parked" when the runtime
// parked it, "oncpu" when its extra running time was at least half of it,
// "work" when the previous send took at least half of it, else "asleep"
// (nanosleep itself overslept). Reported per window, worst of b.N:
//
//	lag_p99_ms wake_p99_ms start_p99_ms work_p99_ms   99th percentiles of each clock
//	late_%                                 late sends of all sends
//	parked_%                               arrivals whose clocks saw the runtime park the thread
//	late_queued_% late_parked_% late_oncpu_% late_work_% late_asleep_% late_start_%
//	                                       shares of the late sends
//	gc_cycles                              garbage collections in the window
//	not_ok                                 sends that did not end ok (a loaded target)
//	steal_ms                               time the hypervisor took from this
//	                                       machine's processors during the
//	                                       window (/proc/stat, 10 ms ticks)
//
// The target is StartInstant in this process, or the lab at
// LOADRUN_BENCH_TARGET (a URL) when set: run a lab pinned to one processor
// and this benchmark pinned to the other to see the generator's core alone.
//
// Run: go test -run '^$' -bench LagSources -benchtime=3x ./loadrun/
// (LOADRUN_BENCH_RATES=2000 picks the rates; default 1000,2000,3000).
func BenchmarkLagSources(b *testing.B) {
	spec := os.Getenv("LOADRUN_BENCH_RATES")
	if spec == "" {
		spec = "1000,2000,3000"
	}
	url := os.Getenv("LOADRUN_BENCH_TARGET")
	if url == "" {
		url = StartInstant(b)
	}
	for f := range strings.SplitSeq(spec, ",") {
		rate, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			b.Fatalf("LOADRUN_BENCH_RATES: %v", err)
		}
		b.Run(fmt.Sprintf("rate=%.0f", rate), func(b *testing.B) { lagSources(b, url, rate) })
	}
}

func lagSources(b *testing.B, url string, rate float64) {
	target, err := NewTarget(url, result.DefaultTimeout)
	if err != nil {
		b.Fatal(err)
	}
	var worst lagReport
	for i := 0; b.Loop(); i++ {
		sched, err := Schedule(Poisson, rate, 2, uint64(i+1))
		if err != nil {
			b.Fatal(err)
		}
		worst = worst.worse(instrumentedWindow(b, target, sched))
	}
	b.ReportMetric(worst.lagP99, "lag_p99_ms")
	b.ReportMetric(worst.wakeP99, "wake_p99_ms")
	b.ReportMetric(worst.startP99, "start_p99_ms")
	b.ReportMetric(worst.workP99, "work_p99_ms")
	b.ReportMetric(worst.latePct, "late_%")
	b.ReportMetric(worst.parkedAllPct, "parked_%")
	b.ReportMetric(worst.queuedPct, "late_queued_%")
	b.ReportMetric(worst.parkedPct, "late_parked_%")
	b.ReportMetric(worst.oncpuPct, "late_oncpu_%")
	b.ReportMetric(worst.workPct, "late_work_%")
	b.ReportMetric(worst.asleepPct, "late_asleep_%")
	b.ReportMetric(worst.startPct, "late_start_%")
	b.ReportMetric(worst.stealMS, "steal_ms")
	b.ReportMetric(float64(worst.gcs), "gc_cycles")
	b.ReportMetric(float64(worst.notOK), "not_ok")
	b.ReportMetric(0, "ns/op")
}

// lagReport is one instrumented window's figures; worse keeps the window
// with the higher lag p99.
type lagReport struct {
	lagP99, wakeP99, startP99                                  float64
	latePct, queuedPct, oncpuPct, asleepPct, startPct, stealMS float64
	parkedPct, parkedAllPct, workPct, workP99                  float64
	gcs                                                        uint32
	notOK                                                      int // sends that did not end ok
}

func (r lagReport) worse(o lagReport) lagReport {
	if o.lagP99 > r.lagP99 {
		return o
	}
	return r
}

// instrumentedWindow runs sched as Open.Run's dispatcher does and files
// its late sends. Arrival i's
// counters run from the previous arrival's wake to this one's: they cover
// the previous send (Target.begin's socket, connect and write, and the go
// statement) as well as this sleep, since a delay in either makes this
// wake late.
func instrumentedWindow(b *testing.B, target Target, sched []time.Duration) lagReport {
	schedstat, release := lockThreadSchedstat(b)
	defer release()
	defer holdArrivalStamps()() // as Open.Run does
	// Held as Open.Run holds its dispatcher. The clocks below read /proc
	// through Go's scheduler, which a held thread must not do under a
	// real-time policy (see dispatcher): run this benchmark under the
	// normal policy only.
	d, releaseDispatcher := holdDispatcher()
	defer releaseDispatcher()

	records := make([]result.Record, len(sched))
	wake := make([]time.Duration, len(sched))
	queued := make([]time.Duration, len(sched))
	oncpu := make([]time.Duration, len(sched))
	work := make([]time.Duration, len(sched)) // the previous send's own time
	parked := make([]bool, len(sched))
	steal0 := stealTicks(b)
	var gc0, gc1 runtime.MemStats
	runtime.ReadMemStats(&gc0)
	ctx := context.Background()
	var wg sync.WaitGroup
	run0, queue0 := threadSchedstat(b, schedstat)
	vol0, sleeps, prevWork := voluntarySwitches(b), 0, time.Duration(0)
	start := time.Now()
	for i, off := range sched {
		sleeps += d.sleepUntil(ctx, start.Add(off))
		wake[i] = time.Since(start) - off
		run1, queue1 := threadSchedstat(b, schedstat)
		vol1 := voluntarySwitches(b)
		queued[i], oncpu[i], work[i] = queue1-queue0, run1-run0-prevWork, prevWork
		parked[i] = vol1-vol0 > int64(sleeps)
		run0, queue0, vol0, sleeps = run1, queue1, vol1, 0
		r := &records[i]
		*r = result.Record{Seq: i, Intended: off}
		s := target.begin(r, start, nil)
		wg.Go(func() { target.complete(ctx, r, start, s, nil) })
		prevWork = time.Since(start) - r.Sent
	}
	wg.Wait()
	runtime.ReadMemStats(&gc1)

	var rep lagReport
	var lags, wakes, starts []time.Duration
	late, byQueued, byOncpu, byParked, byWork, byAsleep, byStart, parkedAll := 0, 0, 0, 0, 0, 0, 0, 0
	stallCause := &byAsleep
	for i, r := range records {
		if r.Outcome != result.OK {
			rep.notOK++ // a loaded target's give-ups: still sent, still filed
		}
		if parked[i] {
			parkedAll++
		}
		lag, st := r.Lag(), r.Sent-r.Intended-wake[i]
		lags, wakes, starts = append(lags, lag), append(wakes, wake[i]), append(starts, st)
		if wake[i] > result.LateAfter && (i == 0 || wake[i-1] <= result.LateAfter) {
			switch { // the first late wake of a stall
			case 2*queued[i] >= wake[i]:
				stallCause = &byQueued
			case parked[i]:
				stallCause = &byParked
			case 2*oncpu[i] >= wake[i]:
				stallCause = &byOncpu
			case 2*work[i] >= wake[i]:
				stallCause = &byWork
			default:
				stallCause = &byAsleep
			}
		}
		if lag <= result.LateAfter {
			continue
		}
		late++
		if 2*st >= lag {
			byStart++
		} else {
			*stallCause++
		}
	}
	p99 := func(s []time.Duration) float64 {
		slices.Sort(s)
		return result.MS(result.NearestRank(s, 99))
	}
	rep.lagP99, rep.wakeP99, rep.startP99 = p99(lags), p99(wakes), p99(starts)
	rep.workP99 = p99(work)
	rep.latePct = 100 * float64(late) / float64(len(records))
	rep.parkedAllPct = 100 * float64(parkedAll) / float64(len(records))
	if late > 0 {
		rep.queuedPct = 100 * float64(byQueued) / float64(late)
		rep.oncpuPct = 100 * float64(byOncpu) / float64(late)
		rep.parkedPct = 100 * float64(byParked) / float64(late)
		rep.workPct = 100 * float64(byWork) / float64(late)
		rep.asleepPct = 100 * float64(byAsleep) / float64(late)
		rep.startPct = 100 * float64(byStart) / float64(late)
	}
	rep.gcs = gc1.NumGC - gc0.NumGC
	rep.stealMS = float64(stealTicks(b)-steal0) * 10
	return rep
}

// lockThreadSchedstat locks the calling goroutine to its thread and opens
// that thread's schedstat (read it with threadSchedstat); release closes
// it and unlocks the thread.
func lockThreadSchedstat(b *testing.B) (f *os.File, release func()) {
	runtime.LockOSThread()
	f, err := os.Open("/proc/thread-self/schedstat")
	if err != nil {
		runtime.UnlockOSThread()
		b.Fatalf("this benchmark needs Linux's per-thread schedstat: %v", err)
	}
	return f, func() {
		f.Close()
		runtime.UnlockOSThread()
	}
}

// threadSchedstat reads the calling thread's total time on a processor and
// total wait in the kernel's run queue (the first two fields of
// /proc/thread-self/schedstat, nanoseconds).
func threadSchedstat(b *testing.B, f *os.File) (run, queued time.Duration) {
	var buf [128]byte
	n, err := f.ReadAt(buf[:], 0)
	if n == 0 {
		b.Fatalf("reading schedstat: %v", err)
	}
	fields := strings.Fields(string(buf[:n]))
	if len(fields) < 2 {
		b.Fatalf("schedstat %q: want three numbers", buf[:n])
	}
	r, err1 := strconv.ParseInt(fields[0], 10, 64)
	q, err2 := strconv.ParseInt(fields[1], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("schedstat %q: want numbers", buf[:n])
	}
	return time.Duration(r), time.Duration(q)
}

// stealTicks reads the machine's total steal time from /proc/stat (the
// eighth number of its "cpu" line, in 10 ms ticks); 0 where it is absent.
func stealTicks(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatalf("reading /proc/stat: %v", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	v, _ := strconv.ParseInt(f[8], 10, 64)
	return v
}

// BenchmarkSleepFloor is the dispatcher with nothing to send: it sleeps
// through the same 2 s Poisson schedules with sleepUntil on a locked
// thread and measures how late it wakes, filed like BenchmarkLagSources
// ("queued" or "asleep"; nothing else runs in the process). It is the
// floor this machine sets under any generator's send lag.
//
// Run: go test -run '^$' -bench SleepFloor -benchtime=3x ./loadrun/
func BenchmarkSleepFloor(b *testing.B) {
	for _, rate := range []float64{1000, 2000} {
		b.Run(fmt.Sprintf("rate=%.0f", rate), func(b *testing.B) {
			worstP99, worstLate, worstQueued, worstAsleep, worstSteal := 0.0, 0.0, 0.0, 0.0, 0.0
			for i := 0; b.Loop(); i++ {
				sched, err := Schedule(Poisson, rate, 2, uint64(i+1))
				if err != nil {
					b.Fatal(err)
				}
				p99, late, queued, asleep, steal := sleepWindow(b, sched)
				if p99 >= worstP99 {
					worstP99, worstLate, worstQueued, worstAsleep, worstSteal = p99, late, queued, asleep, steal
				}
			}
			b.ReportMetric(worstP99, "wake_p99_ms")
			b.ReportMetric(worstLate, "late_%")
			b.ReportMetric(worstQueued, "late_queued_%")
			b.ReportMetric(worstAsleep, "late_asleep_%")
			b.ReportMetric(worstSteal, "steal_ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// SleepFloorWindow sleeps through sched exactly as Open.Run's dispatcher
// does (its sleepUntil, held as Open.Run holds it at this GOMAXPROCS; see
// dispatcher) with nothing to send, and returns
// how late it woke for each arrival: the floor this machine, at this
// moment, sets under any generator's send lag. (Exported for the external
// fidelity benchmarks, which pair each generator window with a floor
// window of the same schedule; test builds only.)
func SleepFloorWindow(tb testing.TB, sched []time.Duration) []time.Duration {
	runtime.LockOSThread() // held or not, as Open.Run's dispatcher is
	defer runtime.UnlockOSThread()
	wakes := make([]time.Duration, len(sched))
	ctx := context.Background()
	d, release := holdDispatcher()
	start := time.Now()
	for i, off := range sched {
		d.sleepUntil(ctx, start.Add(off))
		wakes[i] = time.Since(start) - off
	}
	release()
	return wakes
}

// ThreadFloorWindow is SleepFloorWindow for the thread sender: its thread,
// at its priority, wakes at each arrival of sched with nothing to send
// (floorSender). It fails the test where there is no thread sender.
// (Exported for the external fidelity benchmarks; test builds only.)
func ThreadFloorWindow(tb testing.TB, sched []time.Duration) []time.Duration {
	ctx := context.Background()
	start := time.Now()
	s, err := floorSender(ctx, start, sched)
	if err != nil {
		tb.Fatal(err)
	}
	wakes := make([]time.Duration, len(sched))
	for i, off := range sched {
		var r result.Record
		if _, v := s.next(ctx, i, start.Add(off), &r, nil); v != verdictSent {
			tb.Fatalf("the floor's arrival %d: verdict %d", i, v)
		}
		wakes[i] = r.Sent - off
	}
	s.close()
	return wakes
}

func sleepWindow(b *testing.B, sched []time.Duration) (p99, latePct, queuedPct, asleepPct, stealMS float64) {
	schedstat, release := lockThreadSchedstat(b)
	defer release()
	steal0 := stealTicks(b)
	wakes := make([]time.Duration, len(sched))
	late, byQueued, byAsleep := 0, 0, 0
	stallCause := &byAsleep
	ctx := context.Background()
	start := time.Now()
	for i, off := range sched {
		_, q0 := threadSchedstat(b, schedstat)
		sleepUntil(ctx, start.Add(off))
		wakes[i] = time.Since(start) - off
		_, q1 := threadSchedstat(b, schedstat)
		if wakes[i] <= result.LateAfter {
			continue
		}
		if i == 0 || wakes[i-1] <= result.LateAfter { // the first late wake of a stall
			stallCause = &byAsleep
			if 2*(q1-q0) >= wakes[i] {
				stallCause = &byQueued
			}
		}
		late++
		*stallCause++
	}
	stealMS = float64(stealTicks(b)-steal0) * 10
	slices.Sort(wakes)
	p99 = result.MS(result.NearestRank(wakes, 99))
	latePct = 100 * float64(late) / float64(len(sched))
	if late > 0 {
		queuedPct = 100 * float64(byQueued) / float64(late)
		asleepPct = 100 * float64(byAsleep) / float64(late)
	}
	return p99, latePct, queuedPct, asleepPct, stealMS
}
