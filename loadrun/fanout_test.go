package loadrun_test

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"capacitylab/dist"
	"capacitylab/hedge"
	"capacitylab/internal/physics"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/sim"
)

// simulated runs sw in the simulator (package sim) against cfg instead
// of the lab, its callers' timeout 2 s, and returns its window.
func simulated(t *testing.T, cfg labsvc.Config, sw loadrun.Sweep) result.WindowReport {
	t.Helper()
	sw.Target, sw.Control, sw.Driver = loadrun.Target{}, nil, sim.Model{Lab: cfg, Timeout: 2 * time.Second}
	rep, err := sw.Run(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep.Windows[0]
}

// checkParts checks a fanned-out or hedged window's books against its
// records: every arrival's k sub-requests are records (sub-request 0
// numbered with the arrivals, the others after them, each naming its
// request), copies numbered after every sub-request; each request ends
// with its last sub-request; the row counts logical requests (lost 0),
// sub-requests, attempts (every record sent) and hedges (every copy).
func checkParts(t *testing.T, w result.WindowReport, k int) (logical, subs []result.Record) {
	t.Helper()
	n := w.Row.Arrivals
	sent, copies := 0, 0
	for _, r := range w.Records {
		if r.Outcome == result.Unfinished {
			t.Errorf("record %d never finished", r.Seq)
		}
		if r.Outcome != result.NotSent {
			sent++
		}
		switch {
		case r.Copy > 0:
			copies++
			if r.Seq < n*k {
				t.Errorf("copy %d of request %d numbered among the sub-requests (seq %d < %d)", r.Copy, r.Request, r.Seq, n*k)
			}
		case r.Sub == 0 && r.Seq >= n, r.Sub > 0 && (r.Seq != n+r.Request*(k-1)+r.Sub-1 || r.Request >= n):
			t.Errorf("sub-request %d seq %d of request %d: want arrival i's sub-request j numbered n + i(k−1) + j − 1 (n %d, k %d)", r.Sub, r.Seq, r.LogicalSeq(), n, k)
		}
	}
	logical, subs = result.Fold(w.Records)
	if len(logical) != n {
		t.Fatalf("%d logical requests, %d arrivals", len(logical), n)
	}
	if k == 1 {
		subs = logical // a request that does not fan out is its one sub-request
	}
	if len(subs) != n*k {
		t.Fatalf("%d sub-requests of %d arrivals fanned out to %d", len(subs), n, k)
	}
	for i, l := range logical {
		if l.Outcome == result.NotSent {
			continue
		}
		last := time.Duration(0)
		for _, s := range subs[i*k : i*k+k] {
			if s.LogicalSeq() != l.Seq {
				t.Fatalf("sub-request %+v folded into request %d", s, l.Seq)
			}
			last = max(last, s.End)
		}
		if k > 1 && l.End != last {
			t.Errorf("request %d ended at %v, its last sub-request at %v: want it to end with its last", l.Seq, l.End, last)
		}
	}
	row := w.Row
	subSent := row.Sent * max(k, 1)
	if row.Lost != 0 || row.SubRequests != subSent || row.Attempts != sent || row.Attempts != subSent+copies || row.Hedges != copies {
		t.Errorf("row: lost %d, sub_requests %d, attempts %d, hedges %d; want 0, %d (sent × %d), every record sent (%d) = sub-requests + copies (%d)",
			row.Lost, row.SubRequests, row.Attempts, row.Hedges, subSent, k, sent, copies)
	}
	return logical, subs
}

// Fan-out against a lab that answers every request in 20 ms: each
// arrival's 10 sub-requests reach the lab (it served them all), each
// request ends with its last sub-request, and the row's sub-request
// columns and attempts count them.
func TestFanoutAtTheLab(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 200, WaitMS: 20, CPUs: 1})
	sw := sweepOf(t, l, time.Second)
	sw.Rates, sw.Seconds, sw.Fanout, sw.SampleEvery = []float64{40}, 1, 10, 250*time.Millisecond
	rep, _, err := collect(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	checkParts(t, w, 10)
	if w.Row.OK != w.Row.Arrivals || w.Row.Done != w.Row.SubRequests {
		t.Errorf("ok %d of %d requests; the lab served %d of %d sub-requests: want every one", w.Row.OK, w.Row.Arrivals, w.Row.Done, w.Row.SubRequests)
	}
	if w.Row.Amplification != 1 {
		t.Errorf("amplification %v: want 1, fan-out sends no extra copies", w.Row.Amplification)
	}
	if w.Row.P50MS < 20 || w.Row.SubP50MS < 20 || w.Row.P50MS < w.Row.SubP50MS {
		t.Errorf("p50 %v ms, sub-requests' p50 %v ms: want both at least the lab's 20 ms, the request's no shorter", w.Row.P50MS, w.Row.SubP50MS)
	}
	attempts, ok := 0, 0
	for _, s := range w.Samples {
		attempts += s.Attempts
		ok += s.OK
	}
	if attempts != w.Row.Attempts || ok != w.Row.OK {
		t.Errorf("samples count %d attempts and %d ok; the row %d and %d", attempts, ok, w.Row.Attempts, w.Row.OK)
	}
}

// Fan-out split across two labs (Sweep.Split), one answering in 5 ms
// and one in 30: sub-request j of every request goes to lab j mod 2, so
// the even ones are served in 5 ms and the odd ones in 30, and each
// request ends with an odd one; each lab served its half; the row's lab
// columns are the two labs' merged (done summed, the service mean over
// both); a classed arrival's sub-requests carry its class to both labs.
func TestFanoutSplitAcrossLabs(t *testing.T) {
	fast := startLab(t, labsvc.Config{Workers: 100, WaitMS: 5, CPUs: 1})
	slow := startLab(t, labsvc.Config{Workers: 100, WaitMS: 30, CPUs: 1})
	var split []loadrun.Target
	for _, l := range []lab{fast, slow} {
		tg, err := loadrun.NewTarget(l.target, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		split = append(split, tg)
	}
	ctl, err := loadrun.NewControl(fast.control+", "+slow.control, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ctl.Labs() != 2 || ctl.URL() != fast.control+","+slow.control {
		t.Fatalf("control over %d labs at %s: want 2 at %s,%s", ctl.Labs(), ctl.URL(), fast.control, slow.control)
	}
	sw := loadrun.Sweep{Target: split[0], Split: split, Control: &ctl, Seed: 1, Rates: []float64{40}, Seconds: 1, Fanout: 4, Critical: 0.5}
	rep, _, err := collect(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	logical, subs := checkParts(t, w, 4)
	if w.Row.OK != w.Row.Arrivals || w.Row.Arrivals < 20 {
		t.Fatalf("ok %d of %d requests: want every one of at least 20", w.Row.OK, w.Row.Arrivals)
	}
	for _, s := range subs {
		want := 5.0
		if s.Sub%2 == 1 {
			want = 30
		}
		if math.Abs(s.ServiceMS-want) > 3 {
			t.Fatalf("sub-request %d of request %d served in %v ms: want %v ms, lab %d's (j mod 2)", s.Sub, s.LogicalSeq(), s.ServiceMS, want, s.Sub%2)
		}
	}
	for _, l := range logical {
		if l.ServiceMS < 27 {
			t.Fatalf("request %d's last sub-request was served in %v ms: want the slow lab's 30, every request has two there", l.Seq, l.ServiceMS)
		}
	}
	var labs [2]result.LabStats
	for i, l := range []lab{fast, slow} {
		c, err := loadrun.NewControl(l.control, nil)
		if err != nil {
			t.Fatal(err)
		}
		if labs[i], err = c.Stats(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	half := int64(w.Row.SubRequests / 2)
	critical := int64(0)
	for _, l := range logical {
		if l.Class == result.Critical {
			critical += 2
		}
	}
	for i, st := range labs {
		if st.Done != half || st.Classes.Critical.Done != critical {
			t.Errorf("lab %d served %d sub-requests, %d critical: want half of %d, %d (two of each critical request's)", i, st.Done, st.Classes.Critical.Done, w.Row.SubRequests, critical)
		}
	}
	if w.Row.Done != w.Row.SubRequests || math.Abs(w.Row.LabServiceMS-17.5) > 2 {
		t.Errorf("row: done %d, lab_service_ms %v: want both labs' (%d sub-requests, a mean of 5 and 30 ms: about 17.5)", w.Row.Done, w.Row.LabServiceMS, w.Row.SubRequests)
	}
}

// Labs a request's sub-requests are split across must draw their DIST
// from seeds of their own, as the documentation says: two labs with the
// same seed draw the same factors in the same order, and since each
// admits the sub-requests in about the order the arrivals came, an
// arrival's two sub-requests are slow together (p = 0.1, x = 10); with
// seeds of their own they are slow together about as often as chance
// (p² over p, a tenth, of the requests with a slow sub-request).
func TestSplitLabsNeedSeedsOfTheirOwn(t *testing.T) {
	labOf := func(seed int) lab {
		spec, err := dist.ParseSpec("bimodal,p=0.1,x=10,seed=" + strconv.Itoa(seed))
		if err != nil {
			t.Fatal(err)
		}
		return startLab(t, labsvc.Config{Workers: 100, WaitMS: 5, CPUs: 1, Dist: spec})
	}
	together := func(a, b lab) (both, one int) {
		var split []loadrun.Target
		for _, l := range []lab{a, b} {
			tg, err := loadrun.NewTarget(l.target, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			split = append(split, tg)
		}
		ctl, err := loadrun.NewControl(a.control+","+b.control, nil)
		if err != nil {
			t.Fatal(err)
		}
		sw := loadrun.Sweep{Target: split[0], Split: split, Control: &ctl, Seed: 1, Rates: []float64{100}, Seconds: 2, Fanout: 2}
		rep, _, err := collect(t.Context(), sw)
		if err != nil {
			t.Fatal(err)
		}
		_, subs := checkParts(t, rep.Windows[0], 2)
		for i := 0; i+1 < len(subs); i += 2 {
			slow0, slow1 := subs[i].ServiceMS > 20, subs[i+1].ServiceMS > 20
			switch {
			case slow0 && slow1:
				both++
			case slow0 || slow1:
				one++
			}
		}
		return both, one
	}
	both, one := together(labOf(7), labOf(7))
	b7, o7 := both, one
	if both < 8 || one > both/5 {
		t.Errorf("the same seed: %d requests with both sub-requests slow, %d with one: want nearly all slow ones slow together", both, one)
	}
	both, one = together(labOf(7), labOf(8))
	t.Logf("the same seed: %d slow together, %d alone", b7, o7)
	t.Logf("seeds of their own: %d slow together, %d alone", both, one)
	if one < 16 || both > one/3 {
		t.Errorf("seeds of their own: %d requests with both sub-requests slow, %d with one: want few slow together, as chance makes", both, one)
	}
}

// Several targets are checked before anything is sent: a fan-out too
// small to reach each lab, a control API that does not list each lab,
// knob changes and a simulation are refused, naming what is allowed.
func TestSplitRefused(t *testing.T) {
	a, err := loadrun.NewTarget("http://127.0.0.1:1/", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	one, err := loadrun.NewControl("http://127.0.0.1:2", nil)
	if err != nil {
		t.Fatal(err)
	}
	two, err := loadrun.NewControl("http://127.0.0.1:2,http://127.0.0.1:3", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := loadrun.Sweep{Target: a, Split: []loadrun.Target{a, a}, Rates: []float64{10}, Seconds: 1, Fanout: 2}
	many := base
	many.Split, many.Fanout = slices.Repeat([]loadrun.Target{a}, loadrun.MaxSplit+1), 20
	for _, c := range []struct {
		name string
		s    func(s *loadrun.Sweep)
		want string
	}{
		{"fan-out below the labs", func(s *loadrun.Sweep) { s.Fanout = 1 }, "2 targets need a fan-out of at least 2, one sub-request to each lab (fan-out is 1)"},
		{"too many", func(s *loadrun.Sweep) { *s = many }, "17 targets is too many: want at most 16"},
		{"one control for two", func(s *loadrun.Sweep) { s.Control = &one }, "2 targets but 1 control APIs: give one control URL for each target"},
		{"two controls for one", func(s *loadrun.Sweep) { s.Split, s.Control = nil, &two }, "2 control APIs for one target"},
		{"knob changes", func(s *loadrun.Sweep) {
			s.Control, s.Changes = &two, []result.KnobChange{{At: time.Second, Knob: "WAIT_MS", Value: "5"}}
		}, "knob changes go to one lab"},
		{"simulated", func(s *loadrun.Sweep) { s.Driver = sim.Model{Lab: labsvc.Config{Workers: 1, CPUs: 1}} }, "splitting sub-requests across several labs is for real labs"},
	} {
		s := base
		c.s(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := loadrun.NewControl("http://127.0.0.1:2,ftp://x", nil); err == nil || !strings.Contains(err.Error(), `control "ftp://x" is not allowed: want http://host:port (or several, joined by commas)`) {
		t.Errorf("a bad URL in the list: %v", err)
	}
}

// An arrival is sent whole or not at all: with an in-flight cap of 15 and
// fan-out 10 against a lab slower than the arrivals, a second arrival
// never joins one in flight; its 10 records are not_sent together.
func TestFanoutInFlightCap(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 50, WaitMS: 100, CPUs: 1})
	sw := sweepOf(t, l, time.Second)
	sw.Rates, sw.Seconds, sw.Fanout, sw.MaxInFlight = []float64{50}, 0.5, 10, 15
	rep, _, err := collect(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	logical, subs := checkParts(t, w, 10)
	if w.Row.NotSent == 0 || w.Row.Sent == 0 {
		t.Fatalf("sent %d, not_sent %d: want some of each", w.Row.Sent, w.Row.NotSent)
	}
	for i, l := range logical {
		for _, s := range subs[i*10 : i*10+10] {
			if (s.Outcome == result.NotSent) != (l.Outcome == result.NotSent) {
				t.Fatalf("request %d is %s, its sub-request %d %s: want a request's sub-requests sent together or none", l.Seq, l.Outcome, s.Sub, s.Outcome)
			}
		}
	}
}

// bimodal is the lab of the fan-out and hedging goals: WAIT_MS=20 with
// DIST bimodal, a share p of requests x = 20 times as long as the rest
// (10.3 and 205 ms at p = 0.05), and workers enough never to queue.
func bimodal(p float64) labsvc.Config {
	spec, err := dist.ParseSpec("bimodal,p=" + strconv.FormatFloat(p, 'f', -1, 64) + ",x=20,seed=35")
	if err != nil {
		panic(err)
	}
	return labsvc.Config{Workers: 400, WaitMS: 20, CPUs: 1, Dist: spec}
}

// slowCut is between the bimodal lab's fast mode (10.3 ms) and slow one
// (205 ms): a request slower is slow.
const slowCut = 60 * time.Millisecond

// shareOver is the share of ok records slower than cut.
func shareOver(rs []result.Record, cut time.Duration) (float64, int) {
	slow, ok := 0, 0
	for _, r := range rs {
		if r.Outcome == result.OK {
			ok++
			if r.Latency() > cut {
				slow++
			}
		}
	}
	return float64(slow) / float64(max(ok, 1)), ok
}

// The Tail at Scale's arithmetic on the lab: a share p of the bimodal
// lab's sub-requests are slow; a request of k of them is slow when any
// is, 1 − (1 − p)^k of them. For fan-out 1, 10 and 50 the share of
// requests slower than the cut between the modes is within 5 percentage
// points of 1 − (1 − p)^k, p measured from the window's own sub-requests
// (issue 35's goal). The simulator's share of slow requests, given the
// same sweep, is within 5 points of the lab's (its fidelity).
func TestFanoutSlowShareGoal(t *testing.T) {
	physics.Require(t)
	cfg := bimodal(0.05)
	l := startLab(t, cfg)
	for _, c := range []struct {
		k    int
		rate float64
		secs float64
	}{{1, 100, 6}, {10, 40, 15}, {50, 20, 15}} {
		sw := sweepOf(t, l, 2*time.Second)
		sw.Rates, sw.Seconds, sw.Fanout = []float64{c.rate}, c.secs, c.k
		rep, _, err := collect(t.Context(), sw)
		if err != nil {
			t.Fatal(err)
		}
		w := rep.Windows[0]
		logical, subs := checkParts(t, w, c.k)
		sm := simulated(t, cfg, sw)
		simLogical, _ := result.Fold(sm.Records)
		simGot, _ := shareOver(simLogical, slowCut)
		p, nSub := shareOver(subs, slowCut)
		got, n := shareOver(logical, slowCut)
		want := 1 - math.Pow(1-p, float64(c.k))
		// A sub-request near the cut was held up by the machine, not
		// set by the lab's draw: the goal needs the modes apart.
		near := 0
		for _, s := range subs {
			if lat := s.Latency(); s.Outcome == result.OK && lat > slowCut*3/4 && lat < 150*time.Millisecond {
				near++
			}
		}
		t.Logf("fan-out %d at %v/s: p = %.4f of %d sub-requests; slow requests %.4f of %d, 1 − (1 − p)^k = %.4f (%+.1f points); simulated %.4f (%+.1f points from the lab); p50 %v ms (simulated %v), sub p99 %v ms (%v); over_sub_p99 %.3f; %d sub-requests 45 to 150 ms",
			c.k, c.rate, p, nSub, got, n, want, 100*(got-want), simGot, 100*(simGot-got), w.Row.P50MS, sm.Row.P50MS, w.Row.SubP99MS, sm.Row.SubP99MS, w.Row.OverSubP99, near)
		if near*100 > nSub {
			physics.Skip(t, "%d of %d sub-requests took 45 to 150 ms (the lab's modes are 10.3 and 205 ms): the machine, not the lab's draw, set their latency", near, nSub)
		}
		if w.Row.OK != w.Row.Arrivals || p < 0.03 || p > 0.07 {
			t.Errorf("ok %d of %d; p %.4f: want every request answered and about 5%% of sub-requests slow", w.Row.OK, w.Row.Arrivals, p)
		}
		if math.Abs(got-want) > 0.05 {
			t.Errorf("fan-out %d: %.4f of requests slow, want within 5 points of 1 − (1 − %.4f)^%d = %.4f", c.k, got, p, c.k, want)
		}
		if math.Abs(simGot-got) > 0.05 {
			t.Errorf("fan-out %d: simulated %.4f of requests slow, the lab %.4f: want within 5 points", c.k, simGot, got)
		}
	}
}

// Hedging a fixed 30 ms after the send against the bimodal lab: every
// request slower than that gets one copy, its first ok answer is taken
// and the other copy cancelled (its record says so, and the lab still
// served it); the row counts the copies in attempts and hedges.
func TestHedgeAtTheLab(t *testing.T) {
	l := startLab(t, bimodal(0.05))
	sw := sweepOf(t, l, time.Second)
	sw.Rates, sw.Seconds = []float64{100}, 2
	var err error
	if sw.Hedge, err = hedge.Parse("delay_ms=30"); err != nil {
		t.Fatal(err)
	}
	rep, _, err := collect(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	logical, _ := checkParts(t, w, 1)
	byReq := map[int][]result.Record{}
	cancelled := 0
	for _, r := range w.Records {
		byReq[r.LogicalSeq()] = append(byReq[r.LogicalSeq()], r)
		if r.Outcome == result.Cancelled {
			cancelled++
		}
	}
	for _, l := range logical {
		rs := byReq[l.Seq]
		if len(rs) == 1 {
			if l.Latency() > 30*time.Millisecond+5*time.Millisecond && l.Outcome == result.OK {
				t.Errorf("request %d answered in %v with no copy: want a copy after 30 ms", l.Seq, l.Latency())
			}
			continue
		}
		slices.SortFunc(rs, func(a, b result.Record) int { return a.Copy - b.Copy })
		c := rs[1]
		if len(rs) != 2 || c.Copy != 1 || c.Intended != rs[0].Sent+30*time.Millisecond || c.Sent < c.Intended {
			t.Errorf("request %d's copies %+v: want one copy, due 30 ms after its send", l.Seq, rs)
			continue
		}
		okN, cancelledN := 0, 0
		for _, r := range rs {
			switch r.Outcome {
			case result.OK:
				okN++
			case result.Cancelled:
				cancelledN++
			}
		}
		if okN < 1 || okN+cancelledN != 2 {
			t.Errorf("request %d's copies ended %s and %s: want the first ok taken and the other cancelled", l.Seq, rs[0].Outcome, rs[1].Outcome)
		}
	}
	if w.Row.Hedges == 0 || cancelled == 0 || w.Row.OK != w.Row.Arrivals {
		t.Errorf("hedges %d, cancelled %d, ok %d of %d: want copies sent and cancelled, every request answered", w.Row.Hedges, cancelled, w.Row.OK, w.Row.Arrivals)
	}
	if w.Row.Done != w.Row.Attempts {
		t.Errorf("the lab served %d, the client sent %d attempts: want every copy served, the cancelled too", w.Row.Done, w.Row.Attempts)
	}
	if w.Row.P99MS > 100 {
		t.Errorf("p99 %v ms: want the slow mode's 205 ms cut short by the copies", w.Row.P99MS)
	}
}

// Hedging with fan-out: each sub-request is hedged on its own.
func TestHedgeFanoutAtTheLab(t *testing.T) {
	l := startLab(t, bimodal(0.05))
	sw := sweepOf(t, l, time.Second)
	sw.Rates, sw.Seconds, sw.Fanout = []float64{20}, 1, 10
	var err error
	if sw.Hedge, err = hedge.Parse("delay_ms=30,max=2"); err != nil {
		t.Fatal(err)
	}
	rep, _, err := collect(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	_, subs := checkParts(t, w, 10)
	hedged := 0
	for _, s := range subs {
		if s.Copy > 0 {
			hedged++
		}
		if s.Copy > 2 {
			t.Errorf("sub-request %d of request %d has %d copies: want at most max=2", s.Sub, s.LogicalSeq(), s.Copy)
		}
	}
	if hedged == 0 || w.Row.OK != w.Row.Arrivals || w.Row.SubP99MS > 100 {
		t.Errorf("%d sub-requests hedged, ok %d of %d, sub p99 %v ms: want some hedged, all answered, the slow mode cut short", hedged, w.Row.OK, w.Row.Arrivals, w.Row.SubP99MS)
	}
}

// Issue 35's hedging goal on the lab: against the bimodal lab, hedging at
// the p95 of recent latencies at least halves the p99 of requests, for at
// most 10% extra load (amplification at most 1.1). The lab's slow share
// is 3%, clearly below the 5% the p95 leaves out: at 5% the p95 is as
// likely to fall in the slow mode as not (the test logs that case too).
// The simulator given the same sweeps is logged beside the lab, its
// hedged p99 held within 25% of the lab's and its amplification within
// 0.03 (its fidelity).
func TestHedgeP95Goal(t *testing.T) {
	physics.Require(t)
	for _, p := range []float64{0.03, 0.05} {
		cfg := bimodal(p)
		l := startLab(t, cfg)
		var simRows []result.Row
		run := func(spec string) result.Row {
			sw := sweepOf(t, l, 2*time.Second)
			sw.Rates, sw.Seconds = []float64{100}, 20
			var err error
			if sw.Hedge, err = hedge.Parse(spec); err != nil {
				t.Fatal(err)
			}
			rep, _, err := collect(t.Context(), sw)
			if err != nil {
				t.Fatal(err)
			}
			checkParts(t, rep.Windows[0], 1)
			simRows = append(simRows, simulated(t, cfg, sw).Row)
			return rep.Windows[0].Row
		}
		plain, hedged := run(""), run("percentile=95")
		t.Logf("p = %v: p99 %v ms without hedging, %v ms hedged at the p95 (%.2f×), amplification %v, %d hedges of %d requests; p50 %v → %v ms; late sends %d, %d",
			p, plain.P99MS, hedged.P99MS, hedged.P99MS/plain.P99MS, hedged.Amplification, hedged.Hedges, hedged.Sent, plain.P50MS, hedged.P50MS, plain.Late, hedged.Late)
		sp, sh := simRows[0], simRows[1]
		t.Logf("p = %v simulated: p99 %v → %v ms, amplification %v, %d hedges; lab ÷ simulated: p99 %.3f unhedged, %.3f hedged", p, sp.P99MS, sh.P99MS, sh.Amplification, sh.Hedges, plain.P99MS/sp.P99MS, hedged.P99MS/sh.P99MS)
		if p != 0.03 {
			continue
		}
		if plain.Late*20 > plain.Sent || hedged.Late*20 > hedged.Sent || plain.P50MS > 15 {
			physics.Skip(t, "late sends %d and %d of %d, p50 %v ms (the fast mode is 10.3 ms): the machine held the generator or the lab up", plain.Late, hedged.Late, plain.Sent, plain.P50MS)
		}
		if hedged.P99MS*2 > plain.P99MS || hedged.Amplification > 1.1 {
			t.Errorf("hedged at the p95: p99 %v ms (unhedged %v), amplification %v: want the p99 at most half, for at most 1.1", hedged.P99MS, plain.P99MS, hedged.Amplification)
		}
		if r := hedged.P99MS / sh.P99MS; r < 0.8 || r > 1.25 || math.Abs(hedged.Amplification-sh.Amplification) > 0.03 {
			t.Errorf("hedged: lab p99 %v ms, simulated %v (ratio %.3f); amplification %v and %v: want within 25%% and 0.03", hedged.P99MS, sh.P99MS, r, hedged.Amplification, sh.Amplification)
		}
	}
}
