package sim_test

import (
	"context"
	"math"
	"testing"

	"capacitylab/dist"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/sim"
)

// TestMG1AgainstPollaczekKhinchine simulates an M/G/1 lab (one worker, no
// spin, WAIT_MS=10 with each distribution) at utilisations 0.5 to 0.8, 300
// simulated seconds a window and three seeds (of the arrivals and of
// DIST), and compares each mean wait
// in the queue (the row's lab_wait_ms) with the Pollaczek–Khinchine
// formula, Wq = ρ·S·(1 + cs²) ÷ (2(1 − ρ)), taking S and cs² as the lab
// measured them (lab_service_ms, lab_service_scv): the mean of the three
// seeds within 10%. A row's lab_service_scv is the distribution's within
// 15%.
func TestMG1AgainstPollaczekKhinchine(t *testing.T) {
	for _, spec := range []dist.Spec{"", "exponential", "lognormal,scv=2", "bimodal,p=0.1,x=10"} {
		p, _ := spec.Params()
		for _, rho := range []float64{0.5, 0.65, 0.8} {
			var got, pk float64
			for _, seed := range []uint64{1, 2, 3} {
				p.Seed = seed
				m := sim.Model{Lab: labsvc.Config{Workers: 1, WaitMS: 10, CPUs: 1, Dist: p.Spec()}}
				rep, err := simulate(context.Background(), m, loadrun.Sweep{Rates: []float64{rho * 100}, Seconds: 300, Seed: seed}, nil)
				if err != nil {
					t.Fatal(err)
				}
				r := rep.Windows[0].Row
				if r.Lost != 0 || r.OK != r.Sent {
					t.Fatalf("%s at ρ %.2f seed %d: %d sent, %d ok, %d lost", spec, rho, seed, r.Sent, r.OK, r.Lost)
				}
				s, scv := r.LabServiceMS, r.LabServiceSCV
				if want := p.SCV(); math.Abs(scv-want) > 0.15*math.Max(want, 0.1) {
					t.Errorf("%s at ρ %.2f seed %d: lab_service_scv %.3f, want %.3f", spec, rho, seed, scv, want)
				}
				rhoMeasured := r.OKPerSec * s / 1000
				got += r.LabWaitMS / 3
				pk += rhoMeasured * s * (1 + scv) / (2 * (1 - rhoMeasured)) / 3
			}
			t.Logf("%-20s ρ %.2f: mean wait %.2f ms, P-K %.2f ms (%+.1f%%)", spec.String(), rho, got, pk, 100*(got-pk)/pk)
			if math.Abs(got-pk) > 0.10*pk {
				t.Errorf("%s at ρ %.2f: mean wait %.2f ms, want P-K's %.2f within 10%%", spec, rho, got, pk)
			}
		}
	}
}
