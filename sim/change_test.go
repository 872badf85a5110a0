package sim_test

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"capacitylab/internal/physics"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/sim"
)

// releaseLab is the hand-worked trace of a bad release and a tighter
// LIMIT: one worker, no processor time, WAIT_MS 200; at 500 ms WAIT_MS
// becomes 400, at 1200 ms LIMIT becomes 1. Every decision that depends
// on a change comes 150 ms or more after it, and every other one 40 ms
// or more from the event it depends on, so that a live lab's late timers
// and its control API's round trip cannot change it.
//
//	arrival  served       service  outcome
//	0        0–200        200      ok
//	460      460–660      200      ok: began before the change, keeps WAIT_MS 200
//	470      660–1060     400      ok: taken after the change, WAIT_MS 400
//	700      1060–1460    400      ok
//	750      1460–1860    400      ok
//	800      1860–2260    400      ok (three queued at 800: a lower LIMIT evicts nobody)
//	1400     –            –        refused: LIMIT 1, two waiting (750, 800)
//	1550     –            –        refused: one waiting (800)
//	1950     2260–2660    400      ok: none waiting
//	2000     –            –        refused: one waiting (1950)
var releaseLab = struct {
	cfg      labsvc.Config
	changes  []string
	arrivals []int
	want     string
	service  []float64 // each ok's X-Service-Ms, in send order
}{
	cfg:      labsvc.Config{Workers: 1, SpinMS: 0, WaitMS: 200, CPUs: 1},
	changes:  []string{"500ms:WAIT_MS=400", "1.2s:LIMIT=1"},
	arrivals: []int{0, 460, 470, 700, 750, 800, 1400, 1550, 1950, 2000},
	want:     "oooooorror",
	service:  []float64{200, 200, 400, 400, 400, 400, 400},
}

func parseChanges(t *testing.T, texts []string) []result.KnobChange {
	t.Helper()
	var out []result.KnobChange
	for _, s := range texts {
		c, err := result.ParseKnobChange(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// releaseSweep is releaseLab's arrivals in one 3 s window with its changes.
func releaseSweep(t *testing.T) loadrun.Sweep {
	sw := policySweep(releaseLab.arrivals)
	sw.Seconds = 3
	sw.Changes = parseChanges(t, releaseLab.changes)
	return sw
}

// knobEvents is a sweep's event handler that collects its knob events in
// got as "window@ms:change".
func knobEvents(got *[]string) func(result.Event) {
	return func(e result.Event) {
		if e.Kind == result.EventKnob {
			*got = append(*got, fmt.Sprintf("%d@%g:%s", e.Window, e.ElapsedMS, e.Change))
		}
	}
}

// The simulator makes a window's knob changes at their times, where the
// lab applies them: releaseLab's trace, worked by hand, request by
// request, service time by service time; a knob event for each change
// at its time; nothing lost.
func TestChangesSimulated(t *testing.T) {
	var k []string
	rep, err := simulate(context.Background(), sim.Model{Lab: releaseLab.cfg}, releaseSweep(t), knobEvents(&k))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(k, " ") != "0@500:500ms:WAIT_MS=400 0@1200:1.2s:LIMIT=1" {
		t.Errorf("knob events %q, want each change at its time", k)
	}
	recs := rep.Records()
	if o := outcomes(recs); o != releaseLab.want {
		t.Errorf("outcomes %s, want %s", o, releaseLab.want)
	}
	var svc []float64
	for _, r := range recs {
		if r.Outcome == result.OK {
			svc = append(svc, r.ServiceMS)
		}
	}
	if fmt.Sprint(svc) != fmt.Sprint(releaseLab.service) {
		t.Errorf("service times %v, want %v", svc, releaseLab.service)
	}
	row := rep.Rows()[0]
	if row.Lost != 0 || row.Refused != 3 || row.Done != 7 || row.Queued != 3 || row.Note != "" {
		t.Errorf("row %+v: want lost 0, refused 3, done 7, queued 3, no note", row)
	}
	if end := recs[len(recs)-2].End; end != 2660*time.Millisecond {
		t.Errorf("the last ok ended at %v, want 2.66s", end)
	}
}

// The simulator and a live lab agree on releaseLab's trace: sent over
// real TCP by the load generator to a real lab on loopback, its knobs
// changed through the control API at the same times, the requests are
// refused where the simulation says, and each answer's service time is
// the simulated one, less at most 1 ms (the lab's waiter may end a wait
// that early) and at most 15 ms more (a busy 2-core machine's late
// timers). A physics check.
func TestChangesSimulatedAgreeWithTheLab(t *testing.T) {
	physics.Require(t)
	simRep, err := simulate(context.Background(), sim.Model{Lab: releaseLab.cfg}, releaseSweep(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var took []string
	liveRep := runLive(t, releaseLab.cfg, releaseSweep(t), knobEvents(&took))
	t.Logf("live knob events %q", took)
	live, simulated := liveRep.Records(), simRep.Records()
	// The trace's decisions are 150 ms after a change and 40 ms from the
	// event they depend on. The live lab kept the trace's timeline when
	// it made each change within 100 ms of its time and its one worker's
	// services, one after another, added up to at most 30 ms more than
	// the model's: a machine that stalls the lab longer (one run took the
	// LIMIT change 138 ms late) moves the decisions, not the model's
	// rules, so then the test skips saying so.
	late := 0.0
	for _, k := range took {
		var w int
		var at float64
		var change string
		if _, err := fmt.Sscanf(k, "%d@%g:%s", &w, &at, &change); err != nil {
			t.Fatalf("knob event %q: %v", k, err)
		}
		c, err := result.ParseKnobChange(change)
		if err != nil {
			t.Fatal(err)
		}
		late = max(late, at-float64(c.At)/float64(time.Millisecond))
	}
	_, drift := timeline(live, simulated)
	lr, sr := liveRep.Rows()[0], simRep.Rows()[0]
	if lr.Lost != 0 {
		t.Errorf("live row lost %d, want 0", lr.Lost)
	}
	if late > 100 || drift > 30 {
		physics.Skip(t, "the live lab made a change up to %.1f ms late and its services added up to %.1f ms more than the model's; the check needs at most 100 and 30 ms (outcomes live %s, simulated %s)", late, drift, outcomes(live), outcomes(simulated))
	}
	if lo, so := outcomes(live), outcomes(simulated); lo != so {
		t.Fatalf("live lab %s, simulated %s: they disagree (the live lab took the changes at %q, at most %.1f ms late; its services %.1f ms longer in all)", lo, so, took, late, drift)
	}
	for i := range live {
		l, s := live[i], simulated[i]
		if s.Outcome != result.OK {
			continue
		}
		if l.ServiceMS < s.ServiceMS-1 || l.ServiceMS > s.ServiceMS+15 {
			t.Errorf("request %d sent at %v: live service %.3f ms, simulated %.3f ms", i, s.Sent, l.ServiceMS, s.ServiceMS)
		}
	}
	if lr.Refused != sr.Refused || lr.Done != sr.Done || lr.Queued != sr.Queued {
		t.Errorf("live row refused %d done %d queued %d; simulated refused %d done %d queued %d",
			lr.Refused, lr.Done, lr.Queued, sr.Refused, sr.Done, sr.Queued)
	}
}

// STALL_EVERY changed mid-window counts on from the window's start, as
// the lab's door does, and a shorter wait begun later may end first.
// Three workers, so that services overlap: WAIT_MS 100 until 150 ms,
// then 10, with every 3rd admitted stalling 40 ms.
//
//	arrival  admitted  service
//	0        1         0–100    (WAIT_MS 100)
//	100      2         100–200  begun before the change: 100, ends after
//	160      3         160–200  stall (3rd): 40
//	170      4         170–180  WAIT_MS 10: ends before the one begun at 100
func TestChangesStallCountsOn(t *testing.T) {
	sw := policySweep([]int{0, 100, 160, 170})
	sw.Changes = parseChanges(t, []string{"150ms:WAIT_MS=10", "150ms:STALL_MS=40", "150ms:STALL_EVERY=3"})
	rep, err := simulate(context.Background(), sim.Model{Lab: labsvc.Config{Workers: 3, WaitMS: 100, CPUs: 1}}, sw, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Records() {
		got = append(got, fmt.Sprintf("%v-%v", r.Sent, r.End))
	}
	want := "0s-100ms 100ms-200ms 160ms-200ms 170ms-180ms"
	if strings.Join(got, " ") != want || outcomes(rep.Records()) != "oooo" {
		t.Errorf("records %q (%s), want %s, all ok", got, outcomes(rep.Records()), want)
	}
}

// A change due after the window's last request ended is not made: no
// knob event, and the row's note says so, as for a real run.
func TestChangeAfterTheEndNotMade(t *testing.T) {
	sw := policySweep([]int{0})
	sw.Changes = parseChanges(t, []string{"500ms:WAIT_MS=300"})
	var k []string
	rep, err := simulate(context.Background(), sim.Model{Lab: labsvc.Config{Workers: 1, WaitMS: 10, CPUs: 1}}, sw, knobEvents(&k))
	if err != nil {
		t.Fatal(err)
	}
	if len(k) != 0 {
		t.Errorf("knob events %q, want none", k)
	}
	if note := rep.Rows()[0].Note; note != "knob change 500ms:WAIT_MS=300 not made: the window ended first" {
		t.Errorf("note %q, want it to say the change was not made", note)
	}
}

// Changes the lab would refuse, and BACKLOG, which the simulator does not
// model, are refused before anything is simulated, in the lab's words.
func TestChangesRefused(t *testing.T) {
	m := sim.Model{Lab: labsvc.Config{Workers: 2, WaitMS: 10, CPUs: 1}}
	for _, tt := range []struct{ change, want string }{
		{"1s:CPUS=2", "knob change 1s:CPUS=2: CPUS cannot change while the lab runs"},
		{"1s:WORKERS=0", "knob change 1s:WORKERS=0: 0 is not allowed: want 1 to 1024"},
		{"1s:WAIT_MS=99999", "knob change 1s:WAIT_MS=99999: 99999 is not allowed: want 0 to 10000"},
		{"1s:SPEED=3", `knob change 1s:SPEED=3: unknown knob "SPEED"`},
		{"1s:BACKLOG=16", "knob change 1s:BACKLOG=16 is not simulated: BACKLOG is the kernel's accept queue"},
	} {
		sw := policySweep([]int{0})
		sw.Seconds = 2
		sw.Changes = parseChanges(t, []string{tt.change})
		_, err := simulate(context.Background(), m, sw, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", tt.change, err, tt.want)
		}
	}
}

// releaseRates are the rates a second, by send time, of ok answers, gave
// up and refused callers and arrivals not sent, over [from, to).
type releaseRates struct{ ok, gaveup, refused, busy float64 }

func ratesBetween(recs []result.Record, from, to time.Duration) releaseRates {
	var n releaseRates
	for _, r := range recs {
		if r.Intended < from || r.Intended >= to {
			continue
		}
		switch r.Outcome {
		case result.OK:
			n.ok++
		case result.Gaveup:
			n.gaveup++
		case result.Refused:
			n.refused++
		case result.NotSent:
			n.busy++
		}
	}
	s := (to - from).Seconds()
	return releaseRates{n.ok / s, n.gaveup / s, n.refused / s, n.busy / s}
}

// erlangB is the share of arrivals a loss system of n servers turns away
// at offered load a (arrival rate × holding time).
func erlangB(n int, a float64) float64 {
	b := 1.0
	for k := 1; k <= n; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return b
}

// The bad release in its scaled units (time ÷ 10): an origin of 7
// workers whose 100 ms of work becomes 200 ms 20 s into a 60 s window
// (capacity 70 a second, then 35), a client of 10 workers sending 50 a
// second and giving up after 250 ms. With the lab's queue unbounded
// (experiment 1) it drowns: before the release nearly every arrival is
// answered; after it gave-up dominates, at least two to one, to the
// window's end, while the lab stays busy serving callers that are gone.
// It drowns slowly and not always wholly: the client's 10 workers, each
// held 250 ms by a caller that gives up, send about as many a second as
// the 35 the lab serves (the rest are client_busy), so whether its queue
// keeps growing or hovers depends on the draw; over seeds 1 to 8 and 17
// about 1,000 to 1,200 of the window's 2,400 sent gave up. With an
// in-flight quota of N = X × R = 50 × 0.1 = 5 (experiment 3) the client
// is held near N ÷ R = 25 a second after the release and nobody gives up:
// exactly what a loss system of 5 places offered 50 × 0.2 = 10 erlangs
// carries (Erlang's B), a little under N ÷ R because Poisson arrivals
// find the quota full at times when fewer would do.
func TestBadReleaseSimulated(t *testing.T) {
	release := 20 * time.Second
	run := func(policy string) []result.Record {
		t.Helper()
		cfg := labsvc.Config{Workers: 7, WaitMS: 100, CPUs: 1}
		cfg, err := cfg.Set("POLICY", policy)
		if err != nil {
			t.Fatal(err)
		}
		sw := loadrun.Sweep{Rates: []float64{50}, Seconds: 60, Seed: 17, ClientWorkers: 10,
			Changes: parseChanges(t, []string{"20s:WAIT_MS=200"})}
		rep, err := simulate(context.Background(), sim.Model{Lab: cfg, Timeout: 250 * time.Millisecond}, sw, nil)
		if err != nil {
			t.Fatal(err)
		}
		if row := rep.Rows()[0]; row.Lost != 0 || row.Arrivals != row.Sent+row.ClientBusy {
			t.Fatalf("%s: row %+v: want lost 0, every arrival sent or client_busy", policy, row)
		}
		return rep.Records()
	}

	// Experiment 1: the origin drowns.
	recs := run("queue")
	before := ratesBetween(recs, 2*time.Second, release)
	after := ratesBetween(recs, release+2*time.Second, 60*time.Second)
	drowned := ratesBetween(recs, 45*time.Second, 60*time.Second)
	t.Logf("queue, before: %+v a second; from 2 s after the release: %+v; the last 15 s: %+v", before, after, drowned)
	if before.ok < 0.95*50 || before.gaveup > 0.5 {
		t.Errorf("before the release %.1f ok and %.1f gave up a second: want nearly all of 50 answered", before.ok, before.gaveup)
	}
	if after.gaveup < 2*after.ok {
		t.Errorf("after the release %.1f ok and %.1f gave up a second: want gave-up to dominate, two to one", after.ok, after.gaveup)
	}
	if drowned.gaveup < 2*drowned.ok || drowned.gaveup < 20 {
		t.Errorf("in the last 15 s %.1f ok and %.1f gave up a second: want most requests sent still giving up", drowned.ok, drowned.gaveup)
	}

	// Experiment 3: a fixed quota of 5 inside holds the client near N ÷ R.
	recs = run("inflight,quota=5")
	before = ratesBetween(recs, 2*time.Second, release)
	after = ratesBetween(recs, release+2*time.Second, 60*time.Second)
	want := 50 * (1 - erlangB(5, 50*0.2))
	t.Logf("inflight,quota=5, before: %+v a second; from 2 s after the release: %+v; Erlang's B carries %.1f, N ÷ R = 25", before, after, want)
	if after.gaveup != 0 || math.Abs(after.ok-want) > 0.1*want || after.ok > 25 {
		t.Errorf("after the release %.1f ok and %.1f gave up a second: want none to give up and ok within 10%% of %.1f (at most N ÷ R = 25)", after.ok, after.gaveup, want)
	}
	if wantBefore := 50 * (1 - erlangB(5, 50*0.1)); math.Abs(before.ok-wantBefore) > 0.1*wantBefore {
		t.Errorf("before the release %.1f ok a second, want within 10%% of Erlang's B %.1f", before.ok, wantBefore)
	}
}

// A simulated run over time: the bad release (WAIT_MS 100 → 200 at 5 s of
// 10) behind a door of 5 inside (inflight,quota=5), 50 a second, a client
// of 10 workers. The samples add up to the row; each reads the simulated
// lab (limit 5, never more than 5 inside); in flight at each second's
// end is what the records say; the median follows the change; and the
// samples are the same from run to run.
func TestOverTimeSimulated(t *testing.T) {
	cfg, err := labsvc.Config{Workers: 7, WaitMS: 100, CPUs: 1}.Set("POLICY", "inflight,quota=5")
	if err != nil {
		t.Fatal(err)
	}
	sw := loadrun.Sweep{Rates: []float64{50}, Seconds: 10, Seed: 17, ClientWorkers: 10, SampleEvery: time.Second,
		Changes: parseChanges(t, []string{"5s:WAIT_MS=200"})}
	m := sim.Model{Lab: cfg, Timeout: 250 * time.Millisecond}
	rep, err := simulate(context.Background(), m, sw, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	row := w.Row
	if len(w.Samples) != 10 && len(w.Samples) != 11 {
		t.Fatalf("%d samples of a 10 s window (ended at %.3f s)", len(w.Samples), w.Progress.ElapsedMS/1000)
	}
	var sum result.Sample
	for k, s := range w.Samples {
		t.Logf("%4.1f s: ok %d refused %d gaveup %d client_busy %d in flight %d, queued %d in service %d limit %d, p50 %.1f ms",
			s.AtS, s.OK, s.Refused, s.GaveUp, s.ClientBusy, s.InFlight, s.Queued, s.InService, s.Limit, s.P50MS)
		sum.OK, sum.Refused, sum.GaveUp, sum.Errors, sum.ClientBusy, sum.NotSent = sum.OK+s.OK, sum.Refused+s.Refused, sum.GaveUp+s.GaveUp, sum.Errors+s.Errors, sum.ClientBusy+s.ClientBusy, sum.NotSent+s.NotSent
		if !s.Lab || s.Limit != 5 || s.Queued+s.InService > 5 {
			t.Errorf("sample %d: lab %v, limit %d, %d queued and %d in service: want the door of 5 read", k, s.Lab, s.Limit, s.Queued, s.InService)
		}
		if last := k == len(w.Samples)-1; !last {
			// In flight at the boundary, from the records.
			at := time.Duration(k+1) * time.Second
			n := 0
			for _, r := range w.Records {
				if r.Outcome != result.NotSent && r.Sent <= at && at < r.End {
					n++
				}
			}
			if s.InFlight != n || n > 10 {
				t.Errorf("sample %d: %d in flight, the records say %d (at most the client's 10)", k, s.InFlight, n)
			}
		}
	}
	if sum.OK != row.OK || sum.Refused != row.Refused || sum.GaveUp != row.Gaveup || sum.Errors != row.Error || sum.ClientBusy != row.ClientBusy || sum.NotSent != row.NotSent {
		t.Errorf("samples add up to %+v, the row %+v", sum, row)
	}
	if before, after := w.Samples[3].P50MS, w.Samples[7].P50MS; before < 100 || before >= 200 || after < 200 {
		t.Errorf("median %.1f ms at 3 s and %.1f ms at 7 s: want WAIT_MS 100's, then 200's", before, after)
	}
	again, err := simulate(context.Background(), m, sw, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Windows[0].Samples, w.Samples) {
		t.Error("the same simulated sweep gave other samples")
	}
}
