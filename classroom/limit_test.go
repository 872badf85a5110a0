package classroom

import (
	"errors"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The join-code miss limiter remembers a bounded number of addresses
// however many distinct ones miss (a botnet, or IPv6 /64s by the
// hundred thousand), while an address that is guessing right now stays
// held.
func TestMissLimiterMemoryBounded(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	l := newMissLimiter()
	for range MissLimit {
		l.Take("192.0.2.1", now)
	}
	if l.Wait("192.0.2.1", now) <= 0 {
		t.Fatalf("an address with %d misses is not held", MissLimit)
	}
	// A thousand other addresses miss: the guesser is still held.
	for i := range 1000 {
		l.Take("10.1."+strconv.Itoa(i/256)+"."+strconv.Itoa(i%256), now)
	}
	if l.Wait("192.0.2.1", now) <= 0 {
		t.Error("the guesser was forgotten after a thousand other addresses missed once")
	}
	// 300,000 distinct addresses miss within the window.
	for i := range 300_000 {
		l.Take("10."+strconv.Itoa(i>>16)+"."+strconv.Itoa(i>>8&255)+"."+strconv.Itoa(i&255), now.Add(time.Duration(i)*time.Microsecond))
	}
	if n := l.tracked(); n > maxTracked {
		t.Errorf("%d addresses remembered after 300,000 distinct ones missed, want at most maxTracked (%d)", n, maxTracked)
	}
}

// benchAddr is the i-th of 100,000 distinct client addresses.
func benchAddr(i int) string {
	i %= 100_000
	return "10." + strconv.Itoa(i>>16) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
}

// BenchmarkJoinCodeMisses looks up a code that does not exist from
// 100,000 distinct addresses, 8 goroutines at once, through
// Manager.Lookup against a real SQLite file (the look-up of the code is
// part of every miss). It reports the miss's latency at p50 and p99 and
// the addresses the limiter remembers. Run it with enough iterations
// for every address to miss at least once:
//
//	go test ./classroom -run '^$' -bench 'JoinCodeMisses' -benchtime 300000x
func BenchmarkJoinCodeMisses(b *testing.B) {
	e := newEnvTB(b, Config{})
	ctx := b.Context()
	const workers = 8
	lat := make([][]time.Duration, workers)
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				start := time.Now()
				_, err := e.m.Lookup(ctx, benchAddr(i), "ABCDEF")
				lat[w] = append(lat[w], time.Since(start))
				if !errors.Is(err, ErrNoSession) {
					var tm *TooManyMissesError
					if !errors.As(err, &tm) {
						b.Errorf("miss: %v", err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(all[(len(all)-1)/2].Nanoseconds()), "p50-ns/miss")
		b.ReportMetric(float64(all[(len(all)*99+99)/100-1].Nanoseconds()), "p99-ns/miss")
	}
	b.ReportMetric(float64(e.m.misses.tracked()), "addresses")
}

// BenchmarkMissLimiter is one miss in the limiter alone, cycling over
// 100,000 distinct addresses (after warming every one of them), with the
// heap the limiter holds once every address has missed.
//
//	go test ./classroom -run '^$' -bench 'MissLimiter$' -benchmem
func BenchmarkMissLimiter(b *testing.B) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	addrs := make([]string, 100_000)
	for i := range addrs {
		addrs[i] = benchAddr(i)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	l := newMissLimiter()
	for _, a := range addrs {
		l.Take(a, now)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ResetTimer()
	for i := range b.N {
		l.Take(addrs[i%len(addrs)], now)
	}
	b.StopTimer()
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc), "limiter-bytes")
	b.ReportMetric(float64(l.tracked()), "addresses")
}
