package sim_test

import (
	"context"
	"math"
	"testing"
	"time"

	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/sim"
)

// meanOK is the mean latency (ms) of every ok record of a report.
func meanOK(rep result.Report) (float64, int) {
	var sum time.Duration
	n := 0
	for _, r := range rep.Records() {
		if r.Outcome == result.OK {
			sum += r.Latency()
			n++
		}
	}
	return float64(sum) / float64(n) / 1e6, n
}

// Long runs agree with queueing theory where theory has an exact answer.
func TestAgreesWithTheory(t *testing.T) {
	long := func(rate float64) loadrun.Sweep {
		// Eight windows of ten minutes: the means settle within a few
		// tenths of a percent (the seed is fixed, so the test is too).
		return loadrun.Sweep{Rates: []float64{rate, rate, rate, rate, rate, rate, rate, rate}, Seconds: 600, Seed: 3}
	}
	cases := []struct {
		name   string
		m      sim.Model
		sw     loadrun.Sweep
		theory float64 // mean latency, ms
	}{
		// M/D/1 (Poisson arrivals, one worker, a fixed 20 ms): ρ = 30 × 0.02
		// = 0.6, and by Pollaczek–Khinchine the mean wait is ρS/(2(1−ρ)) =
		// 15 ms, so the mean latency is 35 ms.
		{"M/D/1", sim.Model{Lab: labsvc.Config{Workers: 1, WaitMS: 20, CPUs: 1}}, long(30), 35},
		// M/D/1 again with the time split 2 ms of processor + 18 ms of
		// waiting: one worker never shares the processor, so nothing changes.
		{"M/D/1 spin and wait", sim.Model{Lab: labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1}}, long(30), 35},
		// M/G/1 processor sharing (more workers than will ever be busy, each
		// only spinning 2 ms on one processor): the mean time in system is
		// S/(1−ρ) whatever the distribution of S; ρ = 250 × 0.002 = 0.5 → 4
		// ms. Sharing is the round robin's limit as its quantum shrinks: at
		// 20 µs (a hundred turns a spin) it is within 1%.
		{"M/G/1-PS", sim.WithQuantum(sim.Model{Lab: labsvc.Config{Workers: 1024, SpinMS: 2, CPUs: 1}}, 20*time.Microsecond), long(250), 4},
		// A quantum longer than any spin is first come, first served on the
		// processor: M/D/1 with S = 2 ms, ρ = 0.5, mean 2 + 0.5 × 2 ÷ (2 × 0.5)
		// = 3 ms.
		{"M/D/1 first come", sim.WithQuantum(sim.Model{Lab: labsvc.Config{Workers: 1024, SpinMS: 2, CPUs: 1}}, 20*time.Millisecond), long(250), 3},
		// D/D/1: evenly spaced arrivals 25 ms apart never find the worker
		// busy with 20 ms of service: every latency is exactly 20 ms.
		{"D/D/1", sim.Model{Lab: labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1}},
			loadrun.Sweep{Rates: []float64{40}, Seconds: 60, Seed: 1, Process: loadrun.Uniform}, 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := simulate(context.Background(), c.m, c.sw, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, n := meanOK(rep)
			t.Logf("mean latency %.3f ms over %d requests; theory %.3f ms", got, n, c.theory)
			if math.Abs(got-c.theory)/c.theory > 0.01 {
				t.Errorf("mean latency %.3f ms, theory says %.3f ms: more than 1%% apart", got, c.theory)
			}
		})
	}
	// Closed loop, one worker, no thinking: N clients keep the worker busy,
	// each waits for the other N−1: every latency after the first round is
	// N × S, the throughput exactly 1/S.
	m := sim.Model{Lab: labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1}}
	rep, err := simulate(context.Background(), m, loadrun.Sweep{Clients: []int{10}, Seconds: 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Windows[0].Row
	if r.P50MS != 200 || r.OKPerSec != 50 || r.Queued != 9 {
		t.Errorf("closed loop of 10 on 20 ms: p50 %v ms, ok/s %v, queued %d; want 200, 50 and 9", r.P50MS, r.OKPerSec, r.Queued)
	}
}
