package sim_test

import (
	"context"
	"math"
	"testing"
	"time"

	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/model"
	"capacitylab/sim"
)

// The model beside a run with client workers (model.Lab.ClientWorkers,
// M/M/c/K behind the client) against the simulator's lab behind the same
// client (loadrun.Sweep.ClientWorkers), at rates below, at and above the
// lab's capacity. Each case is eight windows of 150 s; the share of
// arrivals turned away as client busy is compared with the model's P_K,
// with the windows' spread as its standard error.
//
// The lab's service is fixed (WAIT_MS, SPIN_MS), the model's exponential
// with the same mean, and what that changes is known:
//   - A loss system (no more client workers than lab workers, SPIN_MS 0)
//     blocks by Erlang B whatever the service distribution: the simulated
//     share must be the model's within four standard errors (and 2% of
//     the offered rate).
//   - With the processors binding (CPUS 1, SPIN_MS 2, WAIT_MS 18) the
//     blocking is the product form's for processors shared equally
//     (processor sharing is insensitive too): with the round robin's turn
//     cut to 20 µs (a hundred a spin, near sharing) the same holds. The
//     lab's own turn of 0.25 ms gives a spin eight turns, part way to
//     first come, first served with a fixed time, which queues less: it
//     turns fewer away than the model (measured: 0.148 against 0.153 at
//     300 a second), never more beyond sampling.
//   - With more client workers than lab workers and SPIN_MS 0 the lab is
//     M/D/c/K and the model M/M/c/K: a fixed service time queues less, so
//     the lab turns fewer away than the model says (never more, beyond
//     sampling) and sends more. How much more depends on the load; the
//     largest gap here, at the lab's capacity, is 6% (0.899 of the offered
//     sent against the model's 0.846); the test allows the lab 10% more.
//
// Latency is not insensitive: a fixed service time has no tail of its own.
// Where no request waits, every simulated latency is exactly the service
// time (p50 = p99 = S), while the model's exponential service gives
// p50 = S ln 2 and p99 = S ln 100 ≈ 4.6 S; where requests queue, the
// model's p99 is above the lab's (about twice, for 2 workers of 20 ms).
// The test logs both side by side and holds the model's p99 above the
// simulated one.
func TestClientWorkersAgainstTheModel(t *testing.T) {
	const windows, seconds = 8, 150
	const fine = 20 * time.Microsecond // a round robin near processor sharing
	tests := []struct {
		name    string
		cfg     labsvc.Config
		workers int
		rate    float64
		quantum time.Duration // 0: the lab's
		exact   bool          // blocking insensitive to the service time's distribution
	}{
		// Ten lab workers of 100 ms, a client of 5 at 50 a second: Erlang B(5, 5).
		{"loss, 5 of 10 workers", labsvc.Config{Workers: 10, WaitMS: 100, CPUs: 1}, 5, 50, 0, true},
		// As many client workers as lab workers, at 80% of the lab's 50 a second.
		{"loss, 5 of 5 workers", labsvc.Config{Workers: 5, WaitMS: 100, CPUs: 1}, 5, 40, 0, true},
		// Two lab workers of 20 ms (100 a second), a client of 6: M/D/2/6
		// against M/M/2/6 at half, all and one and a half of the capacity.
		{"queue, half capacity", labsvc.Config{Workers: 2, WaitMS: 20, CPUs: 1}, 6, 50, 0, false},
		{"queue, at capacity", labsvc.Config{Workers: 2, WaitMS: 20, CPUs: 1}, 6, 100, 0, false},
		{"queue, over capacity", labsvc.Config{Workers: 2, WaitMS: 20, CPUs: 1}, 6, 150, 0, false},
		// One processor spinning 2 ms of each 20 ms request (500 a second),
		// 64 lab workers, a client of 8 (at most 400 a second), with turns
		// near sharing and with the lab's.
		{"processor shared, 300/s", labsvc.Config{Workers: 64, SpinMS: 2, WaitMS: 18, CPUs: 1}, 8, 300, fine, true},
		{"processor shared, 600/s", labsvc.Config{Workers: 64, SpinMS: 2, WaitMS: 18, CPUs: 1}, 8, 600, fine, true},
		{"processor, 300/s", labsvc.Config{Workers: 64, SpinMS: 2, WaitMS: 18, CPUs: 1}, 8, 300, 0, false},
		{"processor, 600/s", labsvc.Config{Workers: 64, SpinMS: 2, WaitMS: 18, CPUs: 1}, 8, 600, 0, false},
	}
	t.Logf("%-24s %7s | %-29s | %-17s | %-15s | %-15s", "case", "offered", "client busy share sim / model", "ok/s sim / model", "p50 ms sim / model", "p99 ms sim / model")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rates := make([]float64, windows)
			for i := range rates {
				rates[i] = tt.rate
			}
			m := sim.Model{Lab: tt.cfg}
			if tt.quantum > 0 {
				m = sim.WithQuantum(m, tt.quantum)
			}
			rep, err := simulate(context.Background(), m, loadrun.Sweep{Rates: rates, Seconds: seconds, Seed: 17, ClientWorkers: tt.workers}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var shares []float64
			var arrivals, busy, ok, p50, p99 float64
			for _, row := range rep.Rows() {
				if row.Lost != 0 || row.Arrivals != row.Sent+row.ClientBusy || row.Gaveup+row.Refused+row.Error != 0 {
					t.Fatalf("row %+v: want every arrival sent or client busy, every one sent answered ok", row)
				}
				shares = append(shares, float64(row.ClientBusy)/float64(row.Arrivals))
				arrivals += float64(row.Arrivals)
				busy += float64(row.ClientBusy)
				ok += float64(row.OK)
				p50 += row.P50MS / windows
				p99 += row.P99MS / windows
			}
			share := busy / arrivals
			sd := 0.0
			for _, s := range shares {
				sd += (s - share) * (s - share)
			}
			se := math.Sqrt(sd/(windows-1)) / math.Sqrt(windows)

			mod := model.Lab{Workers: float64(tt.cfg.Workers), CPUs: float64(tt.cfg.CPUs), SpinMS: float64(tt.cfg.SpinMS), WaitMS: float64(tt.cfg.WaitMS),
				ClientWorkers: float64(tt.workers)}.At(tt.rate)
			mshare := mod.ClientBusyPerSec / tt.rate
			okPerSec := ok / (windows * seconds)
			t.Logf("%-24s %7.0f | %.4f / %.4f (se %.4f) | %7.1f / %7.1f | %6.1f / %6.1f | %6.1f / %6.1f",
				tt.name, tt.rate, share, mshare, se, okPerSec, mod.OKPerSec, p50, mod.P50MS, p99, mod.P99MS)
			switch {
			case tt.exact && (math.Abs(share-mshare) > 4*se || math.Abs(share-mshare) > 0.02):
				t.Errorf("client busy share %.4f (standard error %.4f), the model's %.4f: more than four standard errors or 2%% of the offered apart", share, se, mshare)
			case !tt.exact && share > mshare+4*se:
				t.Errorf("client busy share %.4f (standard error %.4f) above the model's %.4f: a fixed service time should turn fewer away than an exponential one", share, se, mshare)
			case !tt.exact && 1-share > 1.1*(1-mshare):
				t.Errorf("the lab sends %.4f of the offered, the model %.4f: more than 10%% apart", 1-share, 1-mshare)
			}
			if !(mod.P99MS > p99) {
				t.Errorf("the model's p99 %.1f ms is not above the simulated %.1f ms: an exponential service time has the longer tail", mod.P99MS, p99)
			}
		})
	}
}
