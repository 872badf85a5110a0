package sim_test

import (
	"context"
	"testing"
	"time"

	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/sim"
)

// LOCK_MS as the lab holds it, worked by hand (times in ms): four
// workers, no spin, WAIT_MS 10, LOCK_MS 5; each request holds the lock
// from when the one before it in line lets go of it (or from when it
// reaches it, if later), then waits.
//
//	0   lock 0-5, wait to 15
//	0   lock 5-10 (in line behind the first), wait to 20
//	1   lock 10-15, wait to 25
//	20  the lock free since 15: lock 20-25, wait to 35
//	21  lock 25-30, wait to 40
//	30  LOCK_MS=1, for requests whose service begins from now on
//	32  lock 32-33, wait to 43
//	33  lock 33-34, wait to 44
//
// The time in line for the lock is service time.
func TestLockSimulated(t *testing.T) {
	m := sim.Model{Lab: labsvc.Config{Workers: 4, SpinMS: 0, WaitMS: 10, CPUs: 1, LockMS: 5}}
	sw := policySweep([]int{0, 0, 1, 20, 21, 32, 33})
	sw.Changes = parseChanges(t, []string{"30ms:LOCK_MS=1"})
	rep, err := simulate(context.Background(), m, sw, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, rep.Records(), []want{
		ok(15*ms, 0, 15),
		ok(20*ms, 0, 20),
		ok(25*ms, 0, 24),
		ok(35*ms, 0, 15),
		ok(40*ms, 0, 19),
		ok(43*ms, 0, 11),
		ok(44*ms, 0, 11),
	})
}

// The lock comes after the spin and before the wait, and a request
// waiting for a worker reaches it only once it has one, worked by hand:
// two workers, SPIN_MS 1 on two processors, no wait, LOCK_MS 3, three
// requests at 0.
//
//	0  the first two spin 0-1 side by side; the third queues
//	1  both reach the lock: the first holds it 1-4, the second 4-7
//	4  the first is done; its worker takes the third: spin 4-5
//	5  the third reaches the lock, in line behind the second: 7-10
func TestLockAfterTheSpinSimulated(t *testing.T) {
	m := sim.Model{Lab: labsvc.Config{Workers: 2, SpinMS: 1, WaitMS: 0, CPUs: 2, LockMS: 3}}
	rep, err := simulate(context.Background(), m, policySweep([]int{0, 0, 0}), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, rep.Records(), []want{
		ok(4*ms, 0, 4),
		ok(7*ms, 0, 7),
		ok(10*ms, 4, 6),
	})
}

// COHERENCY_US as the lab spends it, worked by hand: three workers on
// three processors (no spin waits for one), SPIN_MS 1, no wait,
// COHERENCY_US 500: each request's spin is 1 ms and 0.5 ms more for each
// other request in service as it starts.
//
//	0    the first, alone: 1 ms, to 1
//	0    the second, one other inside: 1.5 ms, to 1.5
//	0    the third, two others: 2 ms, to 2
//	1.2  the fourth: the second and third still inside: 2 ms, to 3.2
func TestCoherencySimulated(t *testing.T) {
	m := sim.Model{Lab: labsvc.Config{Workers: 3, SpinMS: 1, WaitMS: 0, CPUs: 3, CoherencyUS: 500}}
	w := runTrace(t, m, 1, 0, 0, 0, 1200*time.Microsecond)
	checkRecords(t, w.Records, []want{
		ok(1*ms, 0, 1),
		ok(1500*time.Microsecond, 0, 1.5),
		ok(2*ms, 0, 2),
		ok(3200*time.Microsecond, 0, 2),
	})
	if st := w.Row; st.LabCPUMS != 6.5 {
		t.Errorf("lab_cpu_ms %v, want the four spins' 1 + 1.5 + 2 + 2 ms", st.LabCPUMS)
	}
}

// The shapes the contention knobs give a closed loop, simulated: with
// LOCK_MS=5, 16 workers and 16 callers finish the lock's 1000/5 = 200 a
// second (against 1600 without it: 16 callers ÷ WAIT_MS 10), the 16
// callers spending 80 ms each inside (Little's law); with COHERENCY_US,
// throughput rises to a peak and falls as about 1/n past it (the
// Universal Scalability Law's retrograde part), each window within 15% of
// n ÷ (SPIN_MS + WAIT_MS + COHERENCY_US × (n − 1)) below the processor's
// ceiling and 1 ÷ (SPIN_MS + COHERENCY_US × (n − 1)) past it. Below it
// the formula counts no wait for the processor, which spins that start
// together do wait (12% below it at 4 callers); past it a request that
// starts as others finish together, as they do when the processor is
// shared, counts fewer others than n − 1 (9% above it at 64). labsvc's
// TestLockSerialises and TestCoherencyRetrograde run the same sweeps on
// the lab and log the simulator's figures beside its own.
func TestContentionShapesSimulated(t *testing.T) {
	closed := func(t *testing.T, cfg labsvc.Config, clients []int) []result.Row {
		t.Helper()
		rep, err := simulate(context.Background(), sim.Model{Lab: cfg}, loadrun.Sweep{Clients: clients, Seconds: 2}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Rows()
	}
	t.Run("lock", func(t *testing.T) {
		locked := closed(t, labsvc.Config{Workers: 16, WaitMS: 10, CPUs: 1, LockMS: 5}, []int{16})[0]
		free := closed(t, labsvc.Config{Workers: 16, WaitMS: 10, CPUs: 1}, []int{16})[0]
		t.Logf("16 callers: %.1f a second with LOCK_MS=5 (service %.2f ms), %.1f without", locked.OKPerSec, locked.LabServiceMS, free.OKPerSec)
		if locked.OKPerSec < 199 || locked.OKPerSec > 200 {
			t.Errorf("ok_per_sec %.2f with LOCK_MS=5, want the lock's 200 (199 to 200)", locked.OKPerSec)
		}
		if locked.LabServiceMS < 78 || locked.LabServiceMS > 80 {
			t.Errorf("lab_service_ms %.2f, want about 16 callers ÷ 200 a second = 80 ms, less for the first callers, who found a shorter line (78 to 80): the time in line for the lock is service time", locked.LabServiceMS)
		}
		if free.OKPerSec < 1590 || free.OKPerSec > 1600 {
			t.Errorf("ok_per_sec %.2f without the lock, want 16 ÷ 10 ms = 1600", free.OKPerSec)
		}
	})
	t.Run("coherency", func(t *testing.T) {
		const spin, wait, c = 1.0, 9.0, 0.1 // ms
		clients := []int{1, 2, 4, 8, 16, 32, 64}
		rows := closed(t, labsvc.Config{Workers: 64, SpinMS: 1, WaitMS: 9, CPUs: 1, CoherencyUS: 100}, clients)
		at, peak := 0, 0.0
		for i, r := range rows {
			n := float64(r.Clients)
			model := 1000 * min(n/(spin+wait+c*(n-1)), 1/(spin+c*(n-1)))
			t.Logf("%2d callers: %6.1f a second, the formula %6.1f (%.3f)", r.Clients, r.OKPerSec, model, r.OKPerSec/model)
			if r.OKPerSec < 0.85*model || r.OKPerSec > 1.15*model {
				t.Errorf("%d callers: ok_per_sec %.1f, want within 15%% of %.1f", r.Clients, r.OKPerSec, model)
			}
			if r.OKPerSec > peak {
				at, peak = i, r.OKPerSec
			}
		}
		if last := rows[len(rows)-1]; clients[at] != 8 || last.OKPerSec > 0.3*peak {
			t.Errorf("peak %.1f at %d callers, %.1f at 64: want the peak at 8 (the formula's) and 64 callers below 30%% of it", peak, clients[at], last.OKPerSec)
		}
	})
}
