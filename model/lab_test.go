package model

import (
	"math"
	"testing"
)

// The model beside a run is the two-ceilings throughput and the M/M/c
// latency of the queue Lab.Queue picks; in M/M/1 the response time is
// exponential with mean S ÷ (1 − ρ), so its p-th percentile is
// −ln(1 − p) × S ÷ (1 − ρ).
func TestLabAt(t *testing.T) {
	mm1 := func(p, serviceMS, rho float64) float64 { return -math.Log(1-p) * serviceMS / (1 - rho) }
	tests := []struct {
		name     string
		lab      Lab
		offered  float64
		ok       float64
		p50, p99 float64 // NaN: no steady state
	}{
		// One worker of 20 ms at half load: workers bind, M/M/1 with S = 20 ms.
		{"worker bound, half load", Lab{Workers: 1, CPUs: 1, SpinMS: 2, WaitMS: 18}, 25, 25, mm1(0.5, 20, 0.5), mm1(0.99, 20, 0.5)},
		// Beyond the 50/s ceiling: throughput is the ceiling, latency has no steady state.
		{"worker bound, overloaded", Lab{Workers: 1, CPUs: 1, SpinMS: 2, WaitMS: 18}, 80, 50, math.NaN(), math.NaN()},
		// Twenty workers but one CPU spinning 2 ms: the processor binds at 500/s;
		// the queue is the CPU (S = 2 ms) and every request then waits 18 ms more.
		{"processor bound", Lab{Workers: 20, CPUs: 1, SpinMS: 2, WaitMS: 18}, 250, 250, mm1(0.5, 2, 0.5) + 18, mm1(0.99, 2, 0.5) + 18},
		// No work per request: no queue to model, throughput is what is offered.
		{"no work", Lab{Workers: 1, CPUs: 1}, 100, 100, math.NaN(), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.lab.At(tt.offered)
			if math.Abs(p.OKPerSec-tt.ok) > 1e-9 {
				t.Errorf("ok/s %v, want %v", p.OKPerSec, tt.ok)
			}
			check := func(name string, got, want float64) {
				if math.IsNaN(want) != math.IsNaN(got) || !math.IsNaN(want) && math.Abs(got-want) > 0.01*want {
					t.Errorf("%s = %v, want %.3f", name, got, want)
				}
			}
			check("p50", p.P50MS, tt.p50)
			check("p99", p.P99MS, tt.p99)
		})
	}
}

// The curve is the queue's own points up to the rate asked for, each the
// same as At at its rate.
func TestLabCurve(t *testing.T) {
	lab := Lab{Workers: 20, CPUs: 1, SpinMS: 2, WaitMS: 18}
	pts := lab.Curve(300)
	if len(pts) == 0 || pts[len(pts)-1].Offered > 300 || pts[0].Offered != 0 {
		t.Fatalf("curve from %v to %v, want 0 up to 300", pts[0].Offered, pts[len(pts)-1].Offered)
	}
	for _, p := range pts[1:] {
		at := lab.At(p.Offered)
		if math.Abs(at.P99MS-p.P99MS) > 1e-9*p.P99MS || at.OKPerSec != p.OKPerSec {
			t.Errorf("at %v/s: curve %+v, At %+v", p.Offered, p, at)
		}
	}
	if (Lab{Workers: 1, CPUs: 1}).Curve(100) != nil {
		t.Error("a lab doing no work has no queue curve")
	}
}
