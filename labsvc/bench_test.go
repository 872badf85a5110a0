package labsvc_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
)

// BenchmarkDoor measures the lab's own path, door → queue → worker → answer,
// with SPIN_MS=0 and WAIT_MS=0, a fresh TCP connection per request on
// 127.0.0.1. Run it on one processor (the client shares it, so the figure is
// conservative):
//
//	go test -run '^$' -bench BenchmarkDoor -cpu 1 -benchtime 20000x ./labsvc
//
// req/s is requests answered per second of wall time; allocs/op counts the
// client's allocations as well as the lab's.
func BenchmarkDoor(b *testing.B) {
	for _, workers := range []int{1, 4} {
		b.Run(map[int]string{1: "workers=1", 4: "workers=4"}[workers], func(b *testing.B) {
			l := labtest.Serve(b, cfg(workers, 0, 0, 0))
			req := []byte("GET / HTTP/1.1\r\nHost: lab\r\n\r\n")
			b.ReportAllocs()
			b.SetParallelism(8)
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 512)
				for pb.Next() {
					c, err := net.Dial("tcp", l.Addr)
					if err != nil {
						b.Error(err)
						return
					}
					if _, err := c.Write(req); err != nil {
						b.Error(err)
						c.Close()
						return
					}
					n, err := io.ReadFull(c, buf[:12])
					if err != nil || !bytes.Equal(buf[:n], []byte("HTTP/1.1 200")) {
						b.Errorf("answer %q, %v", buf[:n], err)
					}
					for err == nil {
						_, err = c.Read(buf)
					}
					c.Close()
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}

// BenchmarkDoorChild runs the same path in a lab child pinned to one
// processor (CPUS=1) while this process, on the other processors, is the
// client. Besides req/s it reports what the lab itself spent per request,
// read from the lab: lab-cpu-us/req (process_cpu_ms from /stats, user +
// system), lab-allocs/req (go_memstats_mallocs_total from /metrics), and
// lab-capacity-req/s = 1e6 / lab-cpu-us/req, the rate one processor could
// sustain on the lab's overhead alone.
//
//	go test -run '^$' -bench BenchmarkDoorChild -benchtime 20000x ./labsvc
func BenchmarkDoorChild(b *testing.B) {
	c, err := labsvc.StartChild(b.Context(), testChild(b, "serve"), cfg(1, 0, 0, 0))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Stop()
	addr, err := net.ResolveTCPAddr("tcp", hostport(c.Target()))
	if err != nil {
		b.Fatal(err)
	}
	req := []byte("GET / HTTP/1.1\r\nHost: lab\r\n\r\n")
	mallocs0 := labMallocs(b, c.Control())
	doJSON(b, "POST", c.Control()+"/reset", "", nil)
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 512)
		for pb.Next() {
			conn, err := net.DialTCP("tcp", nil, addr)
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := conn.Write(req); err != nil {
				b.Error(err)
			}
			for err == nil {
				_, err = conn.Read(buf)
			}
			conn.Close()
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	var st labsvc.Stats
	doJSON(b, "POST", c.Control()+"/reset", "", &st)
	mallocs := labMallocs(b, c.Control()) - mallocs0
	if st.Done != int64(b.N) {
		b.Errorf("lab served %d of %d requests", st.Done, b.N)
	}
	cpuPer := st.ProcessCPUMS * 1000 / float64(b.N)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(cpuPer, "lab-cpu-us/req")
	b.ReportMetric(1e6/cpuPer, "lab-capacity-req/s")
	b.ReportMetric(mallocs/float64(b.N), "lab-allocs/req")
}

// labMallocs reads go_memstats_mallocs_total from a lab's /metrics (it
// includes the allocations of serving /metrics itself, a few hundred per
// call, so it is meaningful over thousands of requests).
func labMallocs(b *testing.B, control string) float64 {
	return metric(b, control, "go_memstats_mallocs_total")
}

// BenchmarkChildStart measures starting a lab child and getting its first
// answer (the supervisor's start-up cost).
//
//	go test -run '^$' -bench BenchmarkChildStart -benchtime 20x ./labsvc
func BenchmarkChildStart(b *testing.B) {
	for b.Loop() {
		c, err := labsvc.StartChild(b.Context(), testChild(b, "serve"), cfg(1, 0, 0, 0))
		if err != nil {
			b.Fatal(err)
		}
		if r, err := call(hostport(c.Target()), 5*time.Second); err != nil || r.status != 200 {
			b.Fatalf("first answer %+v, %v", r, err)
		}
		if err := c.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

// pinnedChild starts a lab child with cfg and pins this process (the
// callers) to the processors it does not use, until the benchmark ends.
func pinnedChild(b *testing.B, cfg labsvc.Config) *labsvc.Child {
	b.Helper()
	c, err := labsvc.StartChild(context.Background(), testChild(b, "serve"), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Stop() })
	pinAwayFrom(b, c)
	return c
}

// BenchmarkServiceTimeAtRest measures the service time a lone request gets
// (the lab's X-Service-Ms), b.N requests one after another with 5 ms
// between them, against a lab child on its own processor (CPUS=1; this
// process on the others). The goal: the median within 1% of SPIN_MS +
// WAIT_MS. It reports
//
//	svc_p50_ms svc_p90_ms   the service times' median and 90th percentile
//	over_%                  the median's excess over SPIN_MS + WAIT_MS, in %
//	lab_cpu_ms/req          the lab's processor time per request (its
//	                        process_cpu_ms over the requests)
//
//	go test -run '^$' -bench ServiceTimeAtRest -benchtime 200x ./labsvc
func BenchmarkServiceTimeAtRest(b *testing.B) {
	for _, k := range []struct{ spin, wait int }{{2, 18}, {0, 18}, {2, 0}} {
		b.Run(fmt.Sprintf("spin=%d,wait=%d", k.spin, k.wait), func(b *testing.B) {
			c := pinnedChild(b, labsvc.Config{Workers: 1, SpinMS: k.spin, WaitMS: k.wait, CPUs: 1})
			addr := hostport(c.Target())
			if _, err := call(addr, 5*time.Second); err != nil { // warm up
				b.Fatal(err)
			}
			doJSON(b, "POST", c.Control()+"/reset", "", nil)
			var svc []float64
			for b.Loop() {
				r, err := call(addr, 5*time.Second)
				if err != nil || r.status != 200 {
					b.Fatalf("status %d, %v", r.status, err)
				}
				svc = append(svc, r.serviceMS)
				time.Sleep(5 * time.Millisecond)
			}
			var st labsvc.Stats
			doJSON(b, "POST", c.Control()+"/reset", "", &st)
			slices.Sort(svc)
			p50, p90 := svc[(len(svc)-1)/2], svc[(len(svc)*9+9)/10-1]
			set := float64(k.spin + k.wait)
			b.ReportMetric(p50, "svc_p50_ms")
			b.ReportMetric(p90, "svc_p90_ms")
			b.ReportMetric(100*(p50-set)/set, "over_%")
			b.ReportMetric(st.ProcessCPUMS/float64(st.Done), "lab_cpu_ms/req")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkWorkerCeiling measures the rate one and four workers of 20 ms
// (SPIN_MS=2, WAIT_MS=18, CPUS=1) serve when callers always wait for them:
// 4 × WORKERS callers in a closed loop, a 3 s window per iteration, the
// rate read from the lab's done counter over the window. Theory is
// WORKERS × 1000 ÷ 20 = 50 and 200 a second; the goal is within 2% of it.
// It reports, worst of b.N windows,
//
//	req/s             done ÷ the window
//	of_theory_%       that as a percentage of WORKERS ÷ (SPIN_MS + WAIT_MS)
//	svc_mean_ms       the lab's mean service time over the window
//
//	go test -run '^$' -bench WorkerCeiling -benchtime 3x ./labsvc
func BenchmarkWorkerCeiling(b *testing.B) {
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			c := pinnedChild(b, labsvc.Config{Workers: workers, SpinMS: 2, WaitMS: 18, CPUs: 1})
			addr := hostport(c.Target())
			var stop atomic.Bool
			var wg sync.WaitGroup
			for range 4 * workers {
				wg.Go(func() {
					for !stop.Load() {
						if _, err := call(addr, 5*time.Second); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			defer func() { stop.Store(true); wg.Wait() }()
			theory := float64(workers) * 1000 / 20
			worst, svc := math.Inf(1), 0.0
			time.Sleep(200 * time.Millisecond)
			for b.Loop() {
				doJSON(b, "POST", c.Control()+"/reset", "", nil)
				time.Sleep(3 * time.Second)
				var st labsvc.Stats
				doJSON(b, "POST", c.Control()+"/reset", "", &st)
				if rate := float64(st.Done) / time.Since(st.Since).Seconds(); rate < worst {
					worst, svc = rate, st.ServiceMS.Mean
				}
			}
			b.ReportMetric(worst, "req/s")
			b.ReportMetric(100*worst/theory, "of_theory_%")
			b.ReportMetric(svc, "svc_mean_ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkSpinTurns measures what taking turns on the processor costs:
// sixteen workers spinning 2 ms each (WAIT_MS=0) on one processor, kept
// busy by 48 callers in a closed loop (this process, on the other
// processors), so that every spin takes SPIN_MS ÷ SpinQuantum turns, each
// with others waiting. Per window of 2 s (b.N windows), it reports the
// median over the windows of
//
//	req/s           done ÷ the window
//	lab_cpu_ms/req  the lab's processor time per request (process_cpu_ms)
//	spin_ms/req     the spins' own, on the threads' clocks
//	own_us/req      the difference: the lab's own work per request
//	                (accepting, reading, answering, and passing the
//	                turns), in µs
//	busy_%          the lab's processor time as a share of the window
//
// What the turns cost is own_us/req here less own_us/req of a build whose
// SpinQuantum is at least SPIN_MS (one turn a spin: first come, first
// served), run side by side (docs/BENCHMARKS.md has the command).
//
//	go test -run '^$' -bench SpinTurns -benchtime 3x ./labsvc
func BenchmarkSpinTurns(b *testing.B) {
	c := pinnedChild(b, labsvc.Config{Workers: 16, SpinMS: 2, WaitMS: 0, CPUs: 1})
	addr := hostport(c.Target())
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 48 {
		wg.Go(func() {
			for !stop.Load() {
				if _, err := call(addr, 5*time.Second); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	defer func() { stop.Store(true); wg.Wait() }()
	time.Sleep(300 * time.Millisecond)
	var rate, cpu, spin, own, busy []float64
	for b.Loop() {
		doJSON(b, "POST", c.Control()+"/reset", "", nil)
		time.Sleep(2 * time.Second)
		var st labsvc.Stats
		doJSON(b, "POST", c.Control()+"/reset", "", &st)
		secs := time.Since(st.Since).Seconds()
		n := float64(st.Done)
		rate = append(rate, n/secs)
		cpu = append(cpu, st.ProcessCPUMS/n)
		spin = append(spin, st.SpinCPUMS/n)
		own = append(own, 1000*(st.ProcessCPUMS-st.SpinCPUMS)/n)
		busy = append(busy, st.ProcessCPUMS/10/secs)
	}
	med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(med(rate), "req/s")
	b.ReportMetric(med(cpu), "lab_cpu_ms/req")
	b.ReportMetric(med(spin), "spin_ms/req")
	b.ReportMetric(med(own), "own_us/req")
	b.ReportMetric(med(busy), "busy_%")
	b.ReportMetric(0, "ns/op")
}
