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

// WORKERS changes at its time as the lab's does, worked by hand: one
// worker, WAIT_MS 100, every time in ms.
//
//	50   WORKERS=3: the two new workers take 10 and 20 from the queue at once
//	100  0 ends; its worker takes 30
//	120  WORKERS=1: all three busy, so two are to stop when done
//	130  arrives, queues (no worker free)
//	140  WORKERS=2: one of the two that were to stop goes on
//	150  10 ends, its worker stops; 20 ends, its worker takes 130
//	200  30 ends, its worker is free; 250: 130 ends, free
//	310  served at once (two free)
//	500  WORKERS=3: a third free worker
//	600  WORKERS=2: a free worker stops at once
//	700  700 and 701 are served at once, 702 waits for the first to end
//
// Every request is served: none abandoned by a worker that stopped.
func TestWorkersChangeSimulated(t *testing.T) {
	sw := policySweep([]int{0, 10, 20, 30, 130, 310, 700, 701, 702})
	sw.Changes = parseChanges(t, []string{"50ms:WORKERS=3", "120ms:WORKERS=1", "140ms:WORKERS=2", "500ms:WORKERS=3", "600ms:WORKERS=2"})
	var k []string
	rep, err := simulate(context.Background(), sim.Model{Lab: labsvc.Config{Workers: 1, WaitMS: 100, CPUs: 1}}, sw, knobEvents(&k))
	if err != nil {
		t.Fatal(err)
	}
	if len(k) != 5 {
		t.Errorf("knob events %q, want all five changes made", k)
	}
	checkRecords(t, rep.Records(), []want{
		ok(100*ms, 0, 100),  // 0
		ok(150*ms, 40, 100), // 10: taken by a new worker at 50
		ok(150*ms, 30, 100), // 20: the other new worker
		ok(200*ms, 70, 100), // 30: when 0 ended
		ok(250*ms, 20, 100), // 130: by the worker kept at 140, once free at 150
		ok(410*ms, 0, 100),  // 310
		ok(800*ms, 0, 100),  // 700
		ok(801*ms, 0, 100),  // 701
		ok(900*ms, 98, 100), // 702: two workers only
	})
	if row := rep.Rows()[0]; row.Lost != 0 || row.Done != 9 || row.OK != 9 {
		t.Errorf("row %+v: want 9 done and ok, none lost", row)
	}
}

// okPerSecond is a window's ok answers in each second, by when they
// ended (the samples of a run over time, one a second).
func okPerSecond(w result.WindowReport) []int {
	var out []int
	for _, s := range w.Samples {
		out = append(out, s.OK)
	}
	return out
}

// Capacity that lands mid-run, against queueing theory's fluid answer.
// Evenly spaced arrivals, 50 a second, at a lab of WAIT_MS 100 (S = 0.1
// s) whose 2 workers serve 20 a second: a queue Q builds for 2 s; at 2 s
// WORKERS becomes 8 (80 a second) and the 6 new workers take 6 of it at
// once; the rest, the backlog B = Q − 6, drains at 80 − 50 = 30 a
// second, in D = B ÷ 30 s, after which the first caller is served at once.
// Each request ends S after it starts, so the ok answers a second follow
// the starts S later: 20 a second until S after the change (the old
// workers alone), 80 from then until D + S after it (8 workers back to
// back), then the offered 50. Each second within 4 of that (the workers
// end in batches, 100 ms apart, not as a fluid), the drain's end within
// 100 ms (one service time).
func TestWorkersGrowDrainsTheBacklog(t *testing.T) {
	const (
		rate, before, after = 50.0, 20.0, 80.0
		change, service     = 2.0, 0.1 // seconds
	)
	sw := loadrun.Sweep{Rates: []float64{rate}, Seconds: 6, Seed: 1, Process: loadrun.Uniform, SampleEvery: time.Second,
		Changes: parseChanges(t, []string{"2s:WORKERS=8"})}
	rep, err := simulate(context.Background(), sim.Model{Lab: labsvc.Config{Workers: 2, WaitMS: 100, CPUs: 1}, Timeout: 10 * time.Second}, sw, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	if w.Row.Lost != 0 || w.Row.OK != w.Row.Sent {
		t.Fatalf("row %+v: want every request served, none lost", w.Row)
	}
	// The queue as the change comes: the lab read at 2 s, before it.
	queued := float64(w.Samples[1].Queued)
	backlog := queued - 6
	drain := backlog / (after - rate)
	// The first caller after the change to find a worker free.
	drained := -1.0
	for _, r := range w.Records {
		if r.Intended.Seconds() >= change && r.QueueWaitMS == 0 {
			drained = r.Intended.Seconds() - change
			break
		}
	}
	t.Logf("queue %v at the change, backlog %v, drains in %.3f s by theory, %.3f s simulated; ok a second %v", queued, backlog, drain, drained, okPerSecond(w))
	if queued < 55 || queued > 60 {
		t.Errorf("queue %v at 2 s, want about 2 × (50 − 20) less the 2 in service: 55 to 60", queued)
	}
	if math.Abs(drained-drain) > service {
		t.Errorf("the backlog drained in %.3f s, theory says %.3f s (backlog %v ÷ (80 − 50))", drained, drain, backlog)
	}
	// overlap is how much of [from, to) lies in [lo, hi).
	overlap := func(from, to, lo, hi float64) float64 { return math.Max(0, math.Min(to, hi)-math.Max(from, lo)) }
	for k, got := range okPerSecond(w)[:6] {
		from, to := float64(k), float64(k+1)
		// Nothing ends before the first service is done.
		want := before*overlap(from, to, service, change+service) +
			after*overlap(from, to, change+service, change+drain+service) +
			rate*overlap(from, to, change+drain+service, math.Inf(1))
		if math.Abs(float64(got)-want) > 4 {
			t.Errorf("second %d: %d ok, theory says %.1f", k, got, want)
		}
	}
}

// Capacity taken away mid-run: 8 workers (80 a second) at 50 a second,
// WORKERS 2 at 1 s. The busy workers finish what they hold, so every
// request is served and none lost; from the next second on the lab
// answers at 2 workers' 20 a second, and the queue grows by 30 a second.
func TestWorkersShrinkServesEveryRequest(t *testing.T) {
	sw := loadrun.Sweep{Rates: []float64{50}, Seconds: 3, Seed: 1, Process: loadrun.Uniform, SampleEvery: time.Second,
		Changes: parseChanges(t, []string{"1s:WORKERS=2"})}
	rep, err := simulate(context.Background(), sim.Model{Lab: labsvc.Config{Workers: 8, WaitMS: 100, CPUs: 1}, Timeout: 10 * time.Second}, sw, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	t.Logf("ok a second %v; queued at each second's end %d, %d", okPerSecond(w), w.Samples[1].Queued, w.Samples[2].Queued)
	if w.Row.Lost != 0 || w.Row.OK != w.Row.Sent || w.Row.Done != w.Row.Sent {
		t.Errorf("row %+v: want every request served (done = ok = sent), none lost", w.Row)
	}
	if ok := okPerSecond(w); ok[0] < 45 || ok[0] > 50 || ok[2] != 20 {
		t.Errorf("ok a second %v: want about 50 before the change, and 2 workers' 20 in the last second", ok)
	}
	if grew := w.Samples[2].Queued - w.Samples[1].Queued; grew < 28 || grew > 32 {
		t.Errorf("the queue grew by %d in the last second, want 50 − 20 = 30", grew)
	}
}
