package sim_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"capacitylab/input"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/sim"
)

const ms = time.Millisecond

// simulate runs sweep sw with m as its Driver, as every caller of the
// simulator does, handing its events to handle when not nil.
func simulate(ctx context.Context, m sim.Model, sw loadrun.Sweep, handle func(result.Event)) (result.Report, error) {
	sw.Driver = m
	return sw.Run(ctx, handle)
}

// want is what one record must be: its outcome, its end (ms after the
// window's start, to the nanosecond) and, for ok, the lab's queue wait
// and service as headers.
type want struct {
	outcome   result.Outcome
	end       time.Duration
	queueWait float64
	service   float64
}

func ok(end time.Duration, queueWait, service float64) want {
	return want{result.OK, end, queueWait, service}
}

// runTrace simulates one window of the given arrivals.
func runTrace(t *testing.T, m sim.Model, seconds float64, arrivals ...time.Duration) result.WindowReport {
	t.Helper()
	rep, err := simulate(context.Background(), m, loadrun.Sweep{Arrivals: arrivals, Seconds: seconds}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Windows) != 1 {
		t.Fatalf("%d windows, want 1", len(rep.Windows))
	}
	return rep.Windows[0]
}

func checkRecords(t *testing.T, got []result.Record, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Fatalf("%d records, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		r := got[i]
		if r.Seq != i || r.Outcome != w.outcome || r.End != w.end {
			t.Errorf("record %d: seq %d %s ending at %v, want %s at %v", i, r.Seq, r.Outcome, r.End, w.outcome, w.end)
		}
		if w.outcome == result.OK && (r.Status != 200 || r.QueueWaitMS != w.queueWait || r.ServiceMS != w.service) {
			t.Errorf("record %d: status %d, queue wait %v ms, service %v ms; want 200, %v and %v", i, r.Status, r.QueueWaitMS, r.ServiceMS, w.queueWait, w.service)
		}
		if w.outcome != result.OK && (r.QueueWaitMS != -1 || r.ServiceMS != -1) {
			t.Errorf("record %d: %s with lab headers %v, %v; want none (-1)", i, r.Outcome, r.QueueWaitMS, r.ServiceMS)
		}
	}
}

// One worker, fixed service: every latency is the service times ahead of
// it, exactly. Each case's comment works it out by hand.
func TestSingleWorkerExact(t *testing.T) {
	fixed := func(spin, wait int) sim.Model {
		return sim.Model{Lab: labsvc.Config{Workers: 1, SpinMS: spin, WaitMS: wait, CPUs: 1}}
	}
	cases := []struct {
		name     string
		m        sim.Model
		arrivals []time.Duration
		want     []want
		p50, p99 float64 // ms, nearest rank over the ok latencies
		queued   int
	}{
		{
			// 10 ms of waiting each. 0: served 0–10 (latency 10). 5: queues,
			// served 10–20 (waited 5, latency 15). 8: queues (two waiting,
			// queued 2), served 20–30 (waited 12, latency 22). 30: the
			// worker finishes the third at 30 before the door sees two
			// callers arriving at 30: the first is handed the worker,
			// served 30–40 (latency 10); the second queues, served 40–50
			// (latency 20). Latencies 10 15 22 10 20: sorted 10 10 15 20
			// 22, p50 rank ⌈2.5⌉ = 3 → 15, p99 rank 5 → 22.
			name:     "queue builds and clears",
			m:        fixed(0, 10),
			arrivals: []time.Duration{0, 5 * ms, 8 * ms, 30 * ms, 30 * ms},
			want:     []want{ok(10*ms, 0, 10), ok(20*ms, 5, 10), ok(30*ms, 12, 10), ok(40*ms, 0, 10), ok(50*ms, 10, 10)},
			p50:      15, p99: 22, queued: 2,
		},
		{
			// 2 ms of processor then 18 ms of waiting: 20 ms each, the
			// lessons' default. Arrivals at 1.5, 2.25 and 41.000123 ms:
			// 1.5 served to 21.5 (latency 20); 2.25 waits to 21.5, served
			// to 41.5 (queue wait 19.25, latency 39.25); 41.000123 arrives
			// before 41.5, waits 0.499877 ms, served to 61.5 (latency
			// 20.499877, exact in the record; the row rounds to the
			// microsecond). p50 rank 2 → 20.5; p99 rank 3 → 39.25.
			name:     "spin and wait, to the nanosecond",
			m:        fixed(2, 18),
			arrivals: []time.Duration{1500 * time.Microsecond, 2250 * time.Microsecond, 41000123 * time.Nanosecond},
			want:     []want{ok(21500*time.Microsecond, 0, 20), ok(41500*time.Microsecond, 19.25, 20), ok(61500*time.Microsecond, 0.5, 20)},
			p50:      20.5, p99: 39.25, queued: 1,
		},
		{
			// Every 2nd admitted request stalls 50 ms instead of its 10.
			// 0 (#1): 0–10. 1 (#2, stalls): queues, 10–60, latency 59. 2
			// (#3): 60–70, latency 68. 3 (#4, stalls): 70–120, latency 117.
			// Sorted 10 59 68 117: p50 rank 2 → 59, p99 rank 4 → 117.
			name:     "periodic stall",
			m:        sim.Model{Lab: labsvc.Config{Workers: 1, WaitMS: 10, CPUs: 1, StallEvery: 2, StallMS: 50}},
			arrivals: []time.Duration{0, 1 * ms, 2 * ms, 3 * ms},
			want:     []want{ok(10*ms, 0, 10), ok(60*ms, 9, 50), ok(70*ms, 58, 10), ok(120*ms, 67, 50)},
			p50:      59, p99: 117, queued: 3,
		},
		{
			// Nothing to do: every request ends the instant it arrives,
			// even the two at 7 ms (the first is served at once and frees
			// the worker for the second in the same instant).
			name:     "zero service",
			m:        fixed(0, 0),
			arrivals: []time.Duration{0, 7 * ms, 7 * ms},
			want:     []want{ok(0, 0, 0), ok(7*ms, 0, 0), ok(7*ms, 0, 0)},
			p50:      0, p99: 0, queued: 0,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := runTrace(t, c.m, 1, c.arrivals...)
			checkRecords(t, w.Records, c.want)
			r := w.Row
			if r.P50MS != c.p50 || r.P99MS != c.p99 || r.Queued != c.queued || r.Done != len(c.arrivals) || r.Lost != 0 || r.N != len(c.arrivals) {
				t.Errorf("row p50 %v p99 %v queued %d done %d lost %d n %d; want %v %v %d %d 0 %d",
					r.P50MS, r.P99MS, r.Queued, r.Done, r.Lost, r.N, c.p50, c.p99, c.queued, len(c.arrivals), len(c.arrivals))
			}
			for i, rec := range w.Records {
				if rec.Intended != c.arrivals[i] || rec.Sent != rec.Intended {
					t.Errorf("record %d intended %v sent %v, want both %v", i, rec.Intended, rec.Sent, c.arrivals[i])
				}
			}
		})
	}
}

// A caller's timeout: the caller gives up, the lab still serves the
// request (done counts it once it ends), and the window ends with its last
// caller, when the lab's counters are read.
func TestTimeoutLabStillServes(t *testing.T) {
	// 100 ms each, callers give up after 150 ms. 0: served 0–100, ok. 10:
	// queues, served 100–200; its caller gives up at 160. 20: served
	// 200–300; its caller gives up at 170. The last caller ends at 170,
	// when the lab has finished one request: done 1, though it serves all
	// three.
	m := sim.Model{Lab: labsvc.Config{Workers: 1, WaitMS: 100, CPUs: 1}, Timeout: 150 * ms}
	w := runTrace(t, m, 1, 0, 10*ms, 20*ms)
	checkRecords(t, w.Records, []want{ok(100*ms, 0, 100), {outcome: result.Gaveup, end: 160 * ms}, {outcome: result.Gaveup, end: 170 * ms}})
	for _, r := range w.Records[1:] {
		if r.Reason != result.ReasonReadTimeout || r.Status != 0 {
			t.Errorf("gave up with reason %q status %d, want read_timeout and no status", r.Reason, r.Status)
		}
	}
	r := w.Row
	if r.OK != 1 || r.Gaveup != 2 || r.Done != 1 || r.Lost != 0 || r.Queued != 2 {
		t.Errorf("row ok %d gaveup %d done %d lost %d queued %d; want 1 2 1 0 2", r.OK, r.Gaveup, r.Done, r.Lost, r.Queued)
	}
}

// LIMIT refuses callers only while LIMIT others wait for a busy worker.
func TestLimitRefuses(t *testing.T) {
	// One worker, 10 ms each, LIMIT=1, refusals answered in 1 ms. 0: served
	// 0–10. 1: queues (one waiting). 2: the queue is full: refused, its
	// caller reads the 503 at 3. 12: the one waiting was taken at 10, so it
	// queues, served 20–30 (latency 18).
	m := sim.Model{Lab: labsvc.Config{Workers: 1, WaitMS: 10, Limit: 1, CPUs: 1}, Refuse: ms}
	w := runTrace(t, m, 1, 0, 1*ms, 2*ms, 12*ms)
	checkRecords(t, w.Records, []want{ok(10*ms, 0, 10), ok(20*ms, 9, 10), {outcome: result.Refused, end: 3 * ms}, ok(30*ms, 8, 10)})
	if s := w.Records[2].Status; s != 503 {
		t.Errorf("refused status %d, want 503", s)
	}
	if r := w.Row; r.Refused != 1 || r.Done != 3 || r.Queued != 1 {
		t.Errorf("row refused %d done %d queued %d; want 1 3 1", r.Refused, r.Done, r.Queued)
	}
}

// The processor's round robin: spins on one processor take turns of
// labsvc.SpinQuantum (0.25 ms) while others wait, as the lab's do.
func TestProcessorRoundRobin(t *testing.T) {
	const us = time.Microsecond
	if labsvc.SpinQuantum != 250*us {
		t.Fatalf("these cases are worked by hand for a quantum of 0.25 ms; the lab's is %v", labsvc.SpinQuantum)
	}
	// 10 ms of processor each, two workers, one processor. 0: the first
	// spins alone. 5: the second arrives; the first's quantum ends at 5.25
	// (the next multiple of 0.25 ms from its start), with 4.75 ms (19
	// turns) left, and from then on they alternate: the second first. The
	// first's 19th turn is the 38th in all and ends at 5.25 + 38 × 0.25 =
	// 14.75; the second, having had 19 turns (4.75 ms), spins its last
	// 5.25 alone and ends at 20. Latency and service 14.75 and 15.
	m := sim.Model{Lab: labsvc.Config{Workers: 2, SpinMS: 10, CPUs: 1}}
	w := runTrace(t, m, 1, 0, 5*ms)
	checkRecords(t, w.Records, []want{ok(14750*us, 0, 14.75), ok(20*ms, 0, 15)})
	// The processor was busy from 0 to 20.
	if r := w.Row; r.LabCPUMS != 20 || r.LabServiceMS != 14.875 || r.Queued != 0 {
		t.Errorf("lab_cpu_ms %v lab_service_ms %v queued %d; want 20, 14.875 and 0 (the second found a free worker)", r.LabCPUMS, r.LabServiceMS, r.Queued)
	}
	// With two processors neither waits for the other: 0–10 and 5–15.
	m.Lab.CPUs = 2
	w = runTrace(t, m, 1, 0, 5*ms)
	checkRecords(t, w.Records, []want{ok(10*ms, 0, 10), ok(15*ms, 0, 10)})

	// With a quantum longer than any spin the turns are first come, first
	// served: the first spins 0–10 undisturbed; the second has a worker
	// from 5 but the processor only from 10, and spins 10–20: latency and
	// service 15. The processor is busy 0–20 either way.
	m = sim.WithQuantum(sim.Model{Lab: labsvc.Config{Workers: 2, SpinMS: 10, CPUs: 1}}, 20*ms)
	w = runTrace(t, m, 1, 0, 5*ms)
	checkRecords(t, w.Records, []want{ok(10*ms, 0, 10), ok(20*ms, 0, 15)})
	if r := w.Row; r.LabCPUMS != 20 {
		t.Errorf("first come: lab_cpu_ms %v, want 20", r.LabCPUMS)
	}
	// Four at once on four workers and one processor, 5 ms of spin (20
	// turns) and 1 ms of waiting each: lesson 5's tail in small. In turns:
	// 0–0.25 the first, 0.25–0.5 the second, …; the first's 20th turn is
	// the 77th in all, ending at 19.25, the others' at 19.5, 19.75 and 20;
	// answered 1 ms later. First come: spins 0–5, 5–10, 10–15, 15–20,
	// answered at 6, 11, 16 and 21.
	four := []time.Duration{0, 0, 0, 0}
	shared := sim.Model{Lab: labsvc.Config{Workers: 4, SpinMS: 5, WaitMS: 1, CPUs: 1}}
	checkRecords(t, runTrace(t, shared, 1, four...).Records,
		[]want{ok(20250*us, 0, 20.25), ok(20500*us, 0, 20.5), ok(20750*us, 0, 20.75), ok(21*ms, 0, 21)})
	checkRecords(t, runTrace(t, sim.WithQuantum(shared, 20*ms), 1, four...).Records,
		[]want{ok(6*ms, 0, 6), ok(11*ms, 0, 11), ok(16*ms, 0, 16), ok(21*ms, 0, 21)})
	// A spin that arrives while another has the processor alone waits for
	// the end of that one's quantum, not its spin: 2 ms spins at 0 and 0.7.
	// The first's quantum ends at 0.75, 1.25 ms (5 turns) left; then they
	// alternate, the second first: the first's 5th turn is the 10th in all,
	// ending at 0.75 + 10 × 0.25 = 3.25; the second, 1.25 ms done, spins
	// its last 0.75 alone until 4.0.
	two := sim.Model{Lab: labsvc.Config{Workers: 2, SpinMS: 2, CPUs: 1}}
	checkRecords(t, runTrace(t, two, 1, 0, 700*us).Records, []want{ok(3250*us, 0, 3.25), ok(4*ms, 0, 3.3)})
}

// Closed loop: each client sends again its think time after an answer, while
// the window lasts.
func TestClosedLoop(t *testing.T) {
	// Two clients, one worker, 10 ms each, 5 ms of thinking, a 40 ms window.
	// 0: c0 sends r0 (served 0–10), c1 sends r1 (queues). 10: r0 answered
	// (latency 10), r1 served 10–20. 15: c0 sends r2 (queues). 20: r1
	// answered (latency 20), r2 served 20–30. 25: c1 sends r3. 30: r2
	// answered (15), r3 served 30–40. 35: c0 sends r4. 40: r3 answered (15);
	// c1 would send at 45, past the window: it stops. r4 served 40–50,
	// answered (15); c0 stops too. Five sent in 0.04 s: offered 125/s.
	m := sim.Model{Lab: labsvc.Config{Workers: 1, WaitMS: 10, CPUs: 1}}
	sw := loadrun.Sweep{Clients: []int{2}, Think: 5 * ms, Seconds: 0.04}
	rep, err := simulate(context.Background(), m, sw, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	checkRecords(t, w.Records, []want{ok(10*ms, 0, 10), ok(20*ms, 10, 10), ok(30*ms, 5, 10), ok(40*ms, 5, 10), ok(50*ms, 5, 10)})
	sent := []time.Duration{0, 0, 15 * ms, 25 * ms, 35 * ms}
	for i, r := range w.Records {
		if r.Sent != sent[i] || r.Intended != r.Sent {
			t.Errorf("record %d sent %v intended %v, want both %v", i, r.Sent, r.Intended, sent[i])
		}
	}
	if r := w.Row; r.Clients != 2 || r.Offered != 125 || r.Sent != 5 || r.P50MS != 15 || r.MaxMS != 20 {
		t.Errorf("row clients %d offered %v sent %d p50 %v max %v; want 2, 125, 5, 15, 20", r.Clients, r.Offered, r.Sent, r.P50MS, r.MaxMS)
	}
}

// A closed loop whose clients are refused at once retries after the
// refusal's round trip, not in the same instant forever.
func TestClosedLoopRefusedRetries(t *testing.T) {
	m := sim.Model{Lab: labsvc.Config{Workers: 1, WaitMS: 10, Limit: 1, CPUs: 1}}
	rep, err := simulate(context.Background(), m, loadrun.Sweep{Clients: []int{3}, Seconds: 0.1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Windows[0].Row
	// One worker answers every 10 ms; at any moment one client is served,
	// one waits (LIMIT=1), and the third is refused every 0.05 ms. Answers
	// come at 10, 20, … 100 ms, and the one waiting at 100 (sent before the
	// window's end) is served to 110: 11 ok. Refusals: one every 0.05 ms for
	// 100 ms.
	if r.OK != 11 || r.Refused != 2000 || r.Lost != 0 {
		t.Errorf("ok %d refused %d lost %d; want 11 ok and 2000 refused (one every %v while two hold the worker and the queue)", r.OK, r.Refused, r.Lost, sim.DefaultRefuse)
	}
}

// The generator's in-flight cap: arrivals beyond it are not sent, as the
// real generator records them.
func TestInFlightCap(t *testing.T) {
	m := sim.Model{Lab: labsvc.Config{Workers: 1, WaitMS: 100, CPUs: 1}}
	// Three at once with a cap of two: the third is not sent; 150 ms later
	// the first has been answered, so the fourth is.
	sw := loadrun.Sweep{Arrivals: []time.Duration{0, 0, 0, 150 * ms}, Seconds: 1, MaxInFlight: 2}
	rep, err := simulate(context.Background(), m, sw, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := rep.Windows[0].Records
	if recs[2].Outcome != result.NotSent || recs[2].Reason != result.ReasonInFlightCap || recs[3].Outcome != result.OK {
		t.Errorf("records %+v; want the third not sent (inflight_cap) and the fourth ok", recs)
	}
	if r := rep.Windows[0].Row; r.NotSent != 1 || r.Sent != 3 || r.Arrivals != 4 {
		t.Errorf("row not_sent %d sent %d arrivals %d; want 1, 3, 4", r.NotSent, r.Sent, r.Arrivals)
	}
}

// A sweep draws the real run's arrivals: the same schedule, window by
// window, from the same seed and source.
func TestSameArrivalsAsARealRun(t *testing.T) {
	for _, src := range []loadrun.Source{loadrun.PCG, loadrun.Python} {
		sw := loadrun.Sweep{Rates: []float64{40, 80}, Seconds: 5, Seed: 21, RNG: src}
		rep, err := simulate(context.Background(), sim.Model{Lab: labsvc.DefaultConfig()}, sw, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range rep.Windows {
			sched, err := sw.WindowSchedule(i)
			if err != nil {
				t.Fatal(err)
			}
			if len(w.Records) != len(sched) || w.Row.Arrivals != len(sched) {
				t.Fatalf("%s window %d: %d records, schedule has %d", src, i, len(w.Records), len(sched))
			}
			for k, r := range w.Records {
				if r.Intended != sched[k] || r.Window != i {
					t.Fatalf("%s window %d record %d intended %v (window %d), schedule says %v", src, i, k, r.Intended, r.Window, sched[k])
				}
			}
		}
	}
}

// Bad input gets the real run's messages: the lab's knobs as labsvc words
// them, the sweep's as loadrun does, the timeout as NewTarget does.
func TestBadInput(t *testing.T) {
	good := loadrun.Sweep{Rates: []float64{10}, Seconds: 1}
	cases := []struct {
		name string
		m    sim.Model
		sw   loadrun.Sweep
		want string
	}{
		{"no workers", sim.Model{Lab: labsvc.Config{CPUs: 1}}, good, "WORKERS: 0 is not allowed: want 1 to 1024"},
		{"long stall", sim.Model{Lab: labsvc.Config{Workers: 1, CPUs: 1, StallEvery: 2, StallMS: 20000}}, good, "STALL_MS: 20000 is not allowed: want 0 to 10000"},
		{"rate over the cap", sim.Model{Lab: labsvc.DefaultConfig()}, loadrun.Sweep{Rates: []float64{12000}, Seconds: 1}, "rate 12000 is above the cap"},
		{"nothing to run", sim.Model{Lab: labsvc.DefaultConfig()}, loadrun.Sweep{Seconds: 1}, "give one of rates (open loop), client counts (closed loop) or arrival times"},
		{"timeout", sim.Model{Lab: labsvc.DefaultConfig(), Timeout: 2 * time.Minute}, good, "timeout 2m0s is not allowed: want more than 0 and at most 1m0s"},
		// The kernel's accept queue is the live lab's alone.
		{"workers accept", sim.Model{Lab: labsvc.Config{Workers: 64, SpinMS: 2, CPUs: 1, Backlog: 8, Accept: labsvc.AcceptWorkers}}, good,
			"ACCEPT=workers BACKLOG=8 is not simulated: the simulator models the lab's door (ACCEPT=door, BACKLOG=0)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var evs []result.Event
			_, err := simulate(context.Background(), c.m, c.sw, func(e result.Event) { evs = append(evs, e) })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
			if len(evs) != 1 || evs[0].Kind != result.EventDone || evs[0].Error != err.Error() {
				t.Errorf("events %+v, want one done event with the error", evs)
			}
		})
	}
	// The lab's mistakes keep labsvc's type, so callers can list them field by field.
	_, err := simulate(context.Background(), sim.Model{Lab: labsvc.Config{CPUs: 0, Workers: 1}}, good, nil)
	var fe input.FieldErrors
	if !errors.As(err, &fe) || fe["CPUS"] == "" {
		t.Errorf("error %v (%T), want input.FieldErrors naming CPUS", err, err)
	}
}

// Every arrival ends in exactly one outcome, whatever the knobs: lost is 0,
// sent + not_sent = arrivals, done ≥ ok, and no ok latency is shorter than
// the request's own service.
func TestBooksBalance(t *testing.T) {
	for _, workers := range []int{1, 4, 64} {
		for _, limit := range []int{0, 3} {
			for _, rate := range []float64{10, 100, 1000} {
				name := fmt.Sprintf("workers %d limit %d rate %g", workers, limit, rate)
				m := sim.Model{Lab: labsvc.Config{Workers: workers, SpinMS: 2, WaitMS: 18, Limit: limit, CPUs: 1, StallEvery: 7, StallMS: 40}, Timeout: 500 * ms}
				rep, err := simulate(context.Background(), m, loadrun.Sweep{Rates: []float64{rate}, Seconds: 3, Seed: 9}, nil)
				if err != nil {
					t.Fatal(err)
				}
				r := rep.Windows[0].Row
				if r.Lost != 0 || r.Sent+r.NotSent != r.Arrivals || r.OK+r.Refused+r.Gaveup+r.Error != r.Sent || r.Done < r.OK {
					t.Errorf("%s: row %+v does not balance", name, r)
				}
				for _, rec := range rep.Windows[0].Records {
					if rec.Outcome == result.OK && rec.Latency() < time.Duration(rec.ServiceMS*float64(ms))-time.Microsecond {
						t.Errorf("%s: record %+v answered before its service ended", name, rec)
					}
					if rec.Outcome == result.Gaveup && rec.Latency() != m.Timeout {
						t.Errorf("%s: record %+v gave up after %v, want the timeout %v", name, rec, rec.Latency(), m.Timeout)
					}
				}
			}
		}
	}
}

// A closed loop the simulator cannot run ends with a message saying why,
// not in a loop without end or a window of millions of records.
func TestClosedLoopBounds(t *testing.T) {
	cases := []struct {
		name string
		m    sim.Model
		sw   loadrun.Sweep
		want string
	}{
		// Requests that take no time, sent again at once: infinitely many in no time.
		{"no time at all", sim.Model{Lab: labsvc.Config{Workers: 1, CPUs: 1}}, loadrun.Sweep{Clients: []int{2}, Seconds: 1},
			"sends without end in no time"},
		// 256 clients on 1024 workers of 1 ms: 256,000 a second for 30 s.
		{"too many", sim.Model{Lab: labsvc.Config{Workers: 1024, WaitMS: 1, CPUs: 1}}, loadrun.Sweep{Clients: []int{256}, Seconds: 30},
			"sends more than 1000000 requests in one 30s window"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := simulate(context.Background(), c.m, c.sw, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	// A think time makes the first case a finite loop: 1 s ÷ 10 ms per client.
	m := sim.Model{Lab: labsvc.Config{Workers: 1, CPUs: 1}}
	rep, err := simulate(context.Background(), m, loadrun.Sweep{Clients: []int{2}, Think: 10 * ms, Seconds: 1}, nil)
	if err != nil || rep.Windows[0].Row.Sent != 200 {
		t.Errorf("2 clients thinking 10 ms for 1 s: %v, sent %d; want 200", err, rep.Windows[0].Row.Sent)
	}
}
