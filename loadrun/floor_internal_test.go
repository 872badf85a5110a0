package loadrun

import (
	"bytes"
	"capacitylab/result"
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

// BenchmarkSleepFloor is Open.Run's sender with nothing to send: it
// sleeps through 2 s Poisson schedules with sleepUntil and measures how
// late it wakes (nothing else runs in the process). It is the floor this
// machine sets under any generator's send lag. Each late wake-up (later
// than LateAfter) is filed under the first of a run of late wake-ups,
// the stall it was caught in: "queued" when the thread waited in the
// kernel's run queue for at least half of that first one's lateness
// (/proc/thread-self/schedstat), else "asleep" (nanosleep itself
// overslept). Reported per rate, worst window of b.N:
//
//	wake_p99_ms                   99th percentile of the wake-ups' lateness
//	late_%                        late wake-ups of all
//	late_queued_% late_asleep_%   shares of the late wake-ups
//	steal_ms                      time the hypervisor took from this
//	                              machine's processors during the window
//	                              (/proc/stat, 10 ms ticks)
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

// SleepFloorWindow sleeps through sched exactly as Open.Run's sender
// does (sleepUntil, from the calling goroutine) with nothing to send, and
// returns how late it woke for each arrival: the floor this machine, at
// this moment, sets under any generator's send lag. (Exported for the
// external fidelity benchmarks, which pair each generator window with a
// floor window of the same schedule; test builds only.)
func SleepFloorWindow(sched []time.Duration) []time.Duration {
	wakes := make([]time.Duration, len(sched))
	ctx := context.Background()
	start := time.Now()
	for i, off := range sched {
		sleepUntil(ctx, start.Add(off))
		wakes[i] = time.Since(start) - off
	}
	return wakes
}

// lockThreadSchedstat locks the calling goroutine to its thread and opens
// that thread's schedstat (read it with threadQueued); release closes
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

// threadQueued reads the calling thread's total wait in the kernel's run
// queue (the second field of /proc/thread-self/schedstat, nanoseconds).
func threadQueued(b *testing.B, f *os.File) time.Duration {
	var buf [128]byte
	n, err := f.ReadAt(buf[:], 0)
	if n == 0 {
		b.Fatalf("reading schedstat: %v", err)
	}
	fields := strings.Fields(string(buf[:n]))
	if len(fields) < 2 {
		b.Fatalf("schedstat %q: want three numbers", buf[:n])
	}
	q, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		b.Fatalf("schedstat %q: want numbers", buf[:n])
	}
	return time.Duration(q)
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

// sleepWindow sleeps through sched as SleepFloorWindow does, on a locked
// thread whose run-queue wait it reads around each sleep, and files its
// late wake-ups (see BenchmarkSleepFloor).
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
		q0 := threadQueued(b, schedstat)
		sleepUntil(ctx, start.Add(off))
		wakes[i] = time.Since(start) - off
		q1 := threadQueued(b, schedstat)
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
