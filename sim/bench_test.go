package sim_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/sim"
)

// processCPU is the processor time (user + system) this process has used:
// on a shared machine it shows the work done apart from the time spent
// waiting for a processor, which wall-clock figures include.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchWindow simulates one window of sched b.N times and reports
// simulated requests a second and nanoseconds a simulated request, wall
// clock and processor time (the garbage collector's work on other threads
// included).
func benchWindow(b *testing.B, m sim.Model, sched []time.Duration) {
	w := result.Window{Schedule: sched, Length: time.Duration(len(sched)) * time.Second}
	ctx := context.Background()
	b.ReportAllocs()
	cpu := processCPU(b)
	for b.Loop() {
		if _, _, err := m.RunWindow(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N) * float64(len(sched))
	per := float64(b.Elapsed().Nanoseconds()) / n
	b.ReportMetric(per, "ns/request")
	b.ReportMetric(1e9/per, "requests/s")
	b.ReportMetric(float64(processCPU(b)-cpu)/n, "cpu-ns/request")
}

// One worker, FIFO, the lessons' 2 ms spin + 18 ms wait, Poisson at 40 a
// second (ρ = 0.8) for 600 s: 24,000 requests a window, records and
// loadrun's Metrics included.
func BenchmarkSingleWorkerFIFO(b *testing.B) {
	sched, err := loadrun.Schedule(loadrun.Poisson, 40, 600, 1)
	if err != nil {
		b.Fatal(err)
	}
	benchWindow(b, sim.Model{Lab: labsvc.DefaultConfig()}, sched)
}

// benchSweep simulates a whole sweep b.N times, rows and events included,
// as a page or cmd/load --simulate would, and reports its requests.
func benchSweep(b *testing.B, m sim.Model, sw loadrun.Sweep) {
	ctx := context.Background()
	requests := 0
	b.ReportAllocs()
	cpu := processCPU(b)
	for b.Loop() {
		rep, err := simulate(ctx, m, sw, nil)
		if err != nil {
			b.Fatal(err)
		}
		requests = 0
		for _, w := range rep.Windows {
			requests += w.Row.Arrivals
		}
	}
	b.ReportMetric(float64(requests), "requests/sweep")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(requests), "ns/request")
	b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N)/1e6, "cpu-ms/sweep")
}

// An 8-window sweep of the lessons' size and shape: 64 workers on one
// processor, 2 ms spin + 18 ms wait (the processor's ceiling is 500 a
// second), rates across the ceiling, 5 s windows as bottleneck-moves
// records them: 16,250 requests.
func BenchmarkLessonSweep8(b *testing.B) {
	m := sim.Model{Lab: labsvc.Config{Workers: 64, SpinMS: 2, WaitMS: 18, CPUs: 1}}
	benchSweep(b, m, loadrun.Sweep{Rates: []float64{100, 200, 300, 400, 450, 500, 600, 700}, Seconds: 5, Seed: 5})
}

// The largest open-loop sweep the runner lets a learner ask for (8 windows
// of 30 s, at most 300 s in all, up to 2,000 a second): 8 × 30 s at 2,000 a
// second on 64 workers and one processor, far past its ceiling, so every
// window is full of give-ups: 480,000 requests.
func BenchmarkLargestRunnerSweep(b *testing.B) {
	m := sim.Model{Lab: labsvc.Config{Workers: 64, SpinMS: 2, WaitMS: 18, CPUs: 1}}
	r := 2000.0
	benchSweep(b, m, loadrun.Sweep{Rates: []float64{r, r, r, r, r, r, r, r}, Seconds: 30, Seed: 5})
}

// What a "Simulate" button would ask: one 30 s window at 100 a second on
// the lessons' default lab.
func BenchmarkPageSimulate30s(b *testing.B) {
	benchSweep(b, sim.Model{Lab: labsvc.DefaultConfig()}, loadrun.Sweep{Rates: []float64{100}, Seconds: 30, Seed: 1})
}
