package labsvc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"capacitylab/internal/physics"
	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/sim"
)

// closedSweep runs a closed-loop sweep over clients, seconds a window,
// against the lab whose door and control API are target and control, and
// returns its rows.
func closedSweep(t *testing.T, target, control string, clients []int, seconds float64) []result.Row {
	t.Helper()
	tg, err := loadrun.NewTarget(target, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := loadrun.NewControl(control, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := loadrun.Sweep{Target: tg, Control: &ctl, Clients: clients, Seconds: seconds}.Run(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := rep.Rows()
	for _, r := range rows {
		if r.Lost != 0 || r.Error != 0 || r.Gaveup != 0 || r.Refused != 0 {
			// Accounting is not physics: nothing excuses it.
			t.Fatalf("%d clients: lost %d, error %d, gaveup %d, refused %d; want all 0 against a healthy lab", r.Clients, r.Lost, r.Error, r.Gaveup, r.Refused)
		}
	}
	return rows
}

// simulatedSweep is closedSweep on the simulator (package sim) with the
// lab's own processor time per request as this project measured it.
func simulatedSweep(t *testing.T, cfg labsvc.Config, clients []int, seconds float64) []result.Row {
	t.Helper()
	m := sim.Model{Lab: cfg, CPUPerRequest: sim.MeasuredCPUPerRequest}
	rep, err := loadrun.Sweep{Driver: m, Clients: clients, Seconds: seconds}.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep.Rows()
}

// sideBySide logs the live and simulated rows of one sweep, with the
// simulated ÷ live ratio of ok_per_sec and of the lab's mean service time.
func sideBySide(t *testing.T, cfg labsvc.Config, live, simulated []result.Row) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s: live and simulated (CPUPerRequest %v)\n", cfg, sim.MeasuredCPUPerRequest)
	fmt.Fprintf(&b, "%7s %9s %9s %6s %9s %9s %6s %9s %9s\n", "clients", "ok/s", "ok/s sim", "ratio", "svc ms", "svc sim", "ratio", "p50 ms", "p50 sim")
	for i, l := range live {
		s := simulated[i]
		fmt.Fprintf(&b, "%7d %9.1f %9.1f %6.3f %9.2f %9.2f %6.3f %9.2f %9.2f\n", l.Clients, l.OKPerSec, s.OKPerSec, s.OKPerSec/l.OKPerSec,
			l.LabServiceMS, s.LabServiceMS, s.LabServiceMS/l.LabServiceMS, l.P50MS, s.P50MS)
	}
	t.Logf("\n%s", b.String())
}

// LOCK_MS is the serial part: LOCK_MS=5, 16 workers and 16 closed-loop
// callers, no spin (WAIT_MS=10): however many workers there are, the lab
// finishes at most 1000/5 = 200 requests a second. The lock's holds
// follow one another in its timeline, so that ceiling is held exactly
// (ok ≤ the window's span ÷ LOCK_MS) on any machine, and X-Service-Ms
// counts the time in line for the lock: by Little's law the 16 callers,
// always inside, each wait about 16 ÷ 200 s = 80 ms. How near the
// ceiling the lab comes, and that the same lab without the lock (16
// callers ÷ 10 ms = 1600 a second) finishes far more, are physics
// checks. The simulator's sweep is run too, and the two are logged side
// by side (ok_per_sec within 2% with the lock and 6% without it, physics
// checks: the simulator's callers take no time outside the lab).
func TestLockSerialises(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	const seconds = 2.0
	clients := []int{16}
	cfg := labsvc.Config{Workers: 16, SpinMS: 0, WaitMS: 10, CPUs: 1, LockMS: 5}
	l := labtest.Serve(t, cfg)
	locked := closedSweep(t, l.Target+"/", l.Control, clients, seconds)
	simLocked := simulatedSweep(t, cfg, clients, seconds)
	sideBySide(t, cfg, locked, simLocked)
	r := locked[0]
	if r.OKPerSec > 200*1.005 {
		t.Errorf("ok_per_sec %.2f with LOCK_MS=5, want at most 1000/5 = 200 however many workers", r.OKPerSec)
	}
	if s := simLocked[0]; s.OKPerSec > 200*1.005 || s.OKPerSec < 195 {
		t.Errorf("simulated ok_per_sec %.2f with LOCK_MS=5, want the lock's 200 (195 to 201)", s.OKPerSec)
	}
	// The lock off, changed while the lab runs.
	if code := doJSON(t, "POST", l.Control+"/config", `{"lock_ms": 0}`, nil); code != 200 {
		t.Fatalf("POST /config lock_ms 0 = %d", code)
	}
	free := closedSweep(t, l.Target+"/", l.Control, clients, seconds)
	cfg.LockMS = 0
	simFree := simulatedSweep(t, cfg, clients, seconds)
	sideBySide(t, cfg, free, simFree)
	if s := simFree[0]; s.OKPerSec < 1500 {
		t.Errorf("simulated ok_per_sec %.2f without the lock, want about 16 ÷ 10 ms = 1600", s.OKPerSec)
	}

	t.Run("near the ceiling, far above it without the lock", func(t *testing.T) {
		physics.Require(t)
		// The lab's mean service time says whether the machine let the
		// lab keep its timing: with the lock, 16 callers inside at 200
		// a second spend 80 ms each (Little's law); without it, WAIT_MS.
		little := 1000 * float64(r.Clients) / r.OKPerSec
		if f := free[0]; r.SendLagP99MS > 5 || f.LabServiceMS > 11.5 {
			physics.Skip(t, "the generator's send lag p99 was %.1f ms and the lab's service without the lock %.2f ms for WAIT_MS=10; the check needs at most 5 ms and 11.5 ms", r.SendLagP99MS, f.LabServiceMS)
		}
		if r.OKPerSec < 190 {
			t.Errorf("ok_per_sec %.2f with LOCK_MS=5 and 16 callers, want near the lock's 200 (at least 190)", r.OKPerSec)
		}
		if r.LabServiceMS < 0.9*little || r.LabServiceMS > 1.1*little {
			t.Errorf("lab_service_ms %.2f with the lock, want what Little's law gives 16 callers always inside at %.1f a second, %.1f ms (±10%%): the time in line for the lock is service time",
				r.LabServiceMS, r.OKPerSec, little)
		}
		if f := free[0]; f.OKPerSec < 4*r.OKPerSec {
			t.Errorf("ok_per_sec %.2f without the lock, %.2f with it; want at least four times as many (16 callers ÷ 10 ms = 1600 a second)", f.OKPerSec, r.OKPerSec)
		}
		if ratio := simLocked[0].OKPerSec / r.OKPerSec; ratio < 0.98 || ratio > 1.02 {
			t.Errorf("with the lock: simulated ok_per_sec %.1f, live %.1f: ratio %.3f, more than 2%% off", simLocked[0].OKPerSec, r.OKPerSec, ratio)
		}
	})
	t.Run("the simulator without the lock", func(t *testing.T) {
		physics.Require(t)
		// The simulator's callers and network are perfect: a live
		// caller's time outside the lab (connecting, sending, reading
		// the answer), a few tenths of a millisecond on a quiet machine,
		// lengthens each of its turns, which WAIT_MS's 10 ms do not hide
		// as the lock's 80 do (about 4%).
		f := free[0]
		outside := 1000*float64(f.Clients)/f.OKPerSec - f.LabServiceMS
		if outside > 0.5 {
			physics.Skip(t, "the live callers spent %.2f ms a request outside the lab (connecting, sending, reading: the simulator's take no time); the check needs at most 0.5 ms", outside)
		}
		if ratio := simFree[0].OKPerSec / f.OKPerSec; ratio < 0.94 || ratio > 1.06 {
			t.Errorf("without the lock: simulated ok_per_sec %.1f, live %.1f: ratio %.3f, more than 6%% off (the callers spent %.2f ms a request outside the lab)", simFree[0].OKPerSec, f.OKPerSec, ratio, outside)
		}
	})
}

// COHERENCY_US is the coherency part: each request spends COHERENCY_US
// of processor more for each other request in service as its spin
// starts. WORKERS=64 SPIN_MS=1 WAIT_MS=9 CPUS=1 COHERENCY_US=100 in a lab
// child (its one processor real), closed loops of 1 to 64 callers: below
// the processor's ceiling n callers finish about n ÷ (10 + 0.1(n − 1)) ms
// a second; past it, with every caller inside, the one processor finishes
// 1 ÷ (1 + 0.1(n − 1)) ms: 100, 198, 388, 588 (8 callers), 400, 244 and
// 137 a second (64), less the lab's own work. Throughput rises to a peak
// and falls as about 1/n past it, the Universal Scalability Law's
// retrograde part: at 64 callers at least 20% below the peak. The
// simulator's sweep is run too, logged beside the lab's, and held within
// 8% of it where the processor binds. A physics check: it skips, saying
// so, when the lab did not get its processor.
func TestCoherencyRetrograde(t *testing.T) {
	physics.Require(t)
	const seconds = 2.0
	clients := []int{1, 2, 4, 8, 16, 32, 64}
	cfg := labsvc.Config{Workers: 64, SpinMS: 1, WaitMS: 9, CPUs: 1, CoherencyUS: 100}
	c := serveChild(t, cfg)
	pinAwayFrom(t, c)
	live := closedSweep(t, c.Target(), c.Control(), clients, seconds)
	simulated := simulatedSweep(t, cfg, clients, seconds)
	sideBySide(t, cfg, live, simulated)

	t.Run("a peak, then lower", func(t *testing.T) {
		at, peak := 0, 0.0
		for i, r := range live {
			if r.OKPerSec > peak {
				at, peak = i, r.OKPerSec
			}
		}
		last := live[len(live)-1]
		t.Logf("peak %.1f a second at %d callers; %.1f at %d, %.0f%% of the peak", peak, live[at].Clients, last.OKPerSec, last.Clients, 100*last.OKPerSec/peak)
		if at == 0 || at == len(live)-1 || last.OKPerSec > 0.8*peak {
			if d := starved(cfg, live); d != "" {
				physics.Skip(t, "%s", d)
			}
			t.Errorf("peak %.1f a second at %d callers, %.1f at %d: want a peak between 1 and 64 callers and 64 at least 20%% below it", peak, live[at].Clients, last.OKPerSec, last.Clients)
		}
	})
	t.Run("the simulator past the peak", func(t *testing.T) {
		// Where the processor binds (16 callers and more) throughput is
		// the processor's arithmetic, which the simulator does as the
		// lab does: within 8% of the lab. Below it the lab's callers
		// drift apart while the simulator's start together and share
		// the processor more, and the lab's own work on its processor
		// varies with the machine (4 to 10% apart at 4 and 8 callers in
		// this project's runs): those are logged above, not held.
		if d := starved(cfg, live); d != "" {
			physics.Skip(t, "%s", d)
		}
		for i, r := range live {
			if r.Clients < 16 {
				continue
			}
			if ratio := simulated[i].OKPerSec / r.OKPerSec; ratio < 0.92 || ratio > 1.08 {
				t.Errorf("%d callers: simulated ok_per_sec %.1f, live %.1f: ratio %.3f, more than 8%% off", r.Clients, simulated[i].OKPerSec, r.OKPerSec, ratio)
			}
		}
	})
}

// starved says how the lab child of cfg, one processor's worth of work
// past its peak, did not get its processor in the rows of a sweep (the
// share of it that the lab's process used over the windows where its
// spins keep it busy), or "" if it did.
func starved(cfg labsvc.Config, rows []result.Row) string {
	var d []string
	for _, r := range rows {
		if r.Clients < 16 || r.Done == 0 {
			continue
		}
		// The lab's processor time over the window, from its own count.
		if share := r.LabCPUMS / 1000 / r.Seconds; share < 0.9*float64(cfg.CPUs) {
			d = append(d, fmt.Sprintf("%d callers: the lab used %.0f%% of its %d processor(s)", r.Clients, 100*share, cfg.CPUs))
		}
		if r.SendLagP99MS > 5 {
			d = append(d, fmt.Sprintf("%d callers: the generator's send lag p99 was %.1f ms", r.Clients, r.SendLagP99MS))
		}
	}
	if len(d) == 0 {
		return ""
	}
	return strings.Join(d, "; ") + "; the check needs 90% and at most 5 ms"
}
