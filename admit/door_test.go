package admit_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"capacitylab/admit"
)

const ms = time.Millisecond

func door(t *testing.T, spec string, limit, slots int) *admit.Door {
	t.Helper()
	d, err := admit.NewDoor(admit.Spec(spec), limit, slots)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The queue policy is the lab's door as it was: refuse exactly when LIMIT
// > 0, no worker is free and LIMIT callers wait, whatever else is inside;
// never drop; its limit on requests inside is workers + LIMIT.
func TestQueueIsTheOldDoor(t *testing.T) {
	for limit := range 4 {
		d := door(t, "queue", limit, 2)
		if want := map[bool]int{true: 0, false: 2 + limit}[limit == 0]; d.Limit() != want {
			t.Errorf("LIMIT=%d: Limit %d, want %d", limit, d.Limit(), want)
		}
		for free := range 3 {
			for waiting := range 6 {
				want := !(limit > 0 && free == 0 && waiting >= limit)
				if got := d.Admit(0, free, waiting); got != want {
					t.Errorf("LIMIT=%d free=%d waiting=%d: Admit %v, want %v", limit, free, waiting, got, want)
				}
			}
		}
		if !d.Start(time.Hour, time.Hour) {
			t.Errorf("LIMIT=%d: the queue policy dropped a request that waited an hour", limit)
		}
	}
}

// The in-flight quota refuses while quota requests are inside, whether
// they wait or are served, and admits again as each is done.
func TestInFlightQuota(t *testing.T) {
	d := door(t, "inflight,quota=3", 0, 1)
	for i := range 3 {
		if !d.Admit(0, 1, 0) {
			t.Fatalf("request %d refused below the quota", i)
		}
	}
	if d.Admit(0, 5, 0) || d.Inside() != 3 || d.Limit() != 3 {
		t.Fatalf("a 4th was admitted (inside %d, limit %d): free workers do not matter, the quota does", d.Inside(), d.Limit())
	}
	d.Done(20*ms, 20*ms, admit.Served)
	if !d.Admit(20*ms, 0, 2) || d.Admit(20*ms, 0, 2) {
		t.Errorf("after one was done, exactly one more is admitted")
	}
	if _, err := admit.NewDoor("inflight,quota=3", 5, 1); err == nil {
		t.Errorf("LIMIT 5 with inflight: no error; LIMIT belongs to the queue policy")
	}
}

// AIMD against a service whose capacity is 8 inside: with 8 or fewer its
// answers take 50 ms, with more every answer of the round takes 300 ms,
// over latency_ms. Each round (every 400 ms) fills the limit, then every
// admitted request is answered at once. The limit climbs by one a round
// until it passes the capacity, is cut to three quarters once (the other
// slow answers were admitted before the cut and are ignored), and climbs
// again: a saw-tooth whose teeth reach one past the capacity.
func TestAIMDSawTooth(t *testing.T) {
	d := door(t, "aimd,start=10,min=1,max=100,increase=1,backoff=0.75,interval_ms=100,latency_ms=200", 0, 0)
	want := []float64{7.5, 8.5, 9.5, 7.125, 8.125, 9.125, 6.84375, 7.84375, 8.84375, 9.84375, 7.3828125, 8.3828125, 9.3828125}
	var now time.Duration
	for round, w := range want {
		n := 0
		for d.Admit(now, 0, 0) {
			n++
		}
		latency := 50 * ms
		if n > 8 {
			latency = 300 * ms
		}
		for range n {
			d.Done(now+latency, latency, admit.Served)
		}
		if d.Inside() != 0 || d.Limit() != int(w) {
			t.Fatalf("round %d: admitted %d, limit %d with %d inside; want limit %v (%d)", round, n, d.Limit(), d.Inside(), w, int(w))
		}
		now += 400 * ms
	}
}

// AIMD learns nothing from an idle or stalled service: no growth while the
// limit is not used (fewer than half of it inside), none while no answers
// come back however many intervals pass, none from abandoned requests;
// overload signals (Overloaded, TimedOut) cut it, not below min, and a
// limit never grows past max.
func TestAIMDNeedsEvidence(t *testing.T) {
	d := door(t, "aimd,start=10,min=4,max=11,interval_ms=100", 0, 0)
	var now time.Duration
	// Idle: two inside at a time, answered quickly, for a second.
	for range 10 {
		d.Admit(now, 0, 0)
		d.Admit(now, 0, 0)
		d.Done(now+10*ms, 10*ms, admit.Served)
		d.Done(now+10*ms, 10*ms, admit.Served)
		now += 100 * ms
	}
	if d.Limit() != 10 {
		t.Errorf("an idle service moved the limit to %d, want 10", d.Limit())
	}
	// Stalled: the limit fills and nothing is answered for ten seconds.
	for d.Admit(now, 0, 0) {
	}
	now += 10 * time.Second
	if d.Admit(now, 0, 0) || d.Limit() != 10 {
		t.Errorf("a stalled service moved the limit to %d, want 10", d.Limit())
	}
	for range 10 {
		d.Done(now, 10*time.Second, admit.Abandoned)
	}
	if d.Limit() != 10 || d.Inside() != 0 {
		t.Errorf("abandoned requests moved the limit to %d (inside %d)", d.Limit(), d.Inside())
	}
	// Used and answered in time: grows to max and stops there.
	for range 5 {
		for d.Admit(now, 0, 0) {
		}
		for d.Inside() > 0 {
			d.Done(now+200*ms, 200*ms, admit.Served)
		}
		now += time.Second
	}
	if d.Limit() != 11 {
		t.Errorf("limit %d after five used intervals, want max 11", d.Limit())
	}
	// Each overload signal from a request admitted after the last cut cuts.
	for i, o := range []admit.Outcome{admit.Overloaded, admit.TimedOut, admit.Overloaded, admit.TimedOut} {
		d.Admit(now, 0, 0)
		now += 10 * ms
		d.Done(now, 10*ms, o)
		if want := []int{8, 6, 4, 4}[i]; d.Limit() != want {
			t.Errorf("signal %d: limit %d, want %d", i, d.Limit(), want)
		}
	}
}

// Gradient: while latency holds at the baseline the limit grows by
// headroom × smoothing a window; a step to three times the latency halves
// each estimate (the gradient's floor), so the limit falls towards
// headroom ÷ (1 − gradient) while the baseline slowly rises; when latency
// falls back the limit grows again. The figures were computed apart from
// this code, from the formulas in the package doc. Each window here is one answer a
// window's length after the last (samples=1), with the limit filled first
// so that it counts as used.
func TestGradientLatencyStep(t *testing.T) {
	d := door(t, "gradient,start=20,min=1,max=200,smoothing=0.2,tolerance=1.5,headroom=4,interval_ms=100,samples=1,long=600", 0, 0)
	var now time.Duration
	window := func(latency time.Duration) {
		for d.Admit(now, 0, 0) {
		}
		now += 100 * ms
		d.Done(now, latency, admit.Served)
		for d.Inside() > 0 {
			d.Done(now, 0, admit.Abandoned)
		}
	}
	limits := []int{}
	for range 12 {
		window(20 * ms)
		limits = append(limits, d.Limit())
	}
	// 20 → 20.8 → 21.6 → … → 29.6 after twelve windows.
	if want := []int{20, 21, 22, 23, 24, 24, 25, 26, 27, 28, 28, 29}; !equal(limits, want) {
		t.Errorf("limits at a steady 20 ms: %v, want %v", limits, want)
	}
	// The step: long = 20 + 40 × 2/601 = 20.133 ms, gradient = 1.5 ×
	// 20.133 ÷ 60 = 0.503, estimate = 29.6 × 0.503 + 4 = 18.90, limit =
	// 29.6 × 0.8 + 18.90 × 0.2 = 27.46.
	window(60 * ms)
	if d.Limit() != 27 {
		t.Errorf("limit %d after the step, want 27 (27.46)", d.Limit())
	}
	// While latency stays at three times the baseline each window moves
	// the limit to about 0.9 of itself + 0.8, towards 8; the baseline,
	// an average over 600 windows, creeps up meanwhile (to 25.1 ms after
	// 41 windows), lifting the gradient, so the limit bottoms out near
	// 10.4 and then creeps up with it: 25.55 after one more window, 15.37
	// after ten, 11.50 after twenty, 10.36 after thirty-four, 10.44 after
	// forty.
	for i := 1; i <= 40; i++ {
		window(60 * ms)
		if want, ok := map[int]int{1: 25, 10: 15, 20: 11, 34: 10, 40: 10}[i]; ok && d.Limit() != want {
			t.Errorf("%d windows after the step: limit %d, want %d", i, d.Limit(), want)
		}
	}
	// Back to 20 ms: within tolerance of the baseline again, the limit
	// grows by headroom × smoothing = 0.8 a window, 10.44 → 18.44.
	for range 10 {
		window(20 * ms)
	}
	if d.Limit() != 18 {
		t.Errorf("limit %d ten windows after latency fell back, want 18 (18.44)", d.Limit())
	}
	// A quick refusal from upstream is no latency sample.
	before := d.Limit()
	for range 20 {
		d.Admit(now, 0, 0)
		now += 100 * ms
		d.Done(now, time.Microsecond, admit.Overloaded)
	}
	if d.Limit() != before {
		t.Errorf("Overloaded answers moved the gradient limit from %d to %d", before, d.Limit())
	}
}

// A long-lived answer (a websocket, an event stream) is Done as it begins,
// LongLived, and teaches a policy nothing. Three doors of each adaptive
// policy see the same plain requests (50 ms each, some after waiting
// 20 ms), one a second; before each, one door also sees a long-lived
// answer begun in 5 ms, and another the same request answered after
// 900 ms, as the proxy counted a websocket's life before. The first two
// keep the same limit and make the same drops, step by step; the third
// moves, so the steps would have told.
func TestLongLivedTeachesNothing(t *testing.T) {
	for _, spec := range []string{
		"aimd,start=10,latency_ms=200,interval_ms=100",
		"gradient,start=2,samples=1,interval_ms=100,smoothing=1,headroom=0,tolerance=1",
		"sojourn,target_ms=5,interval_ms=100,timeout_ms=500",
	} {
		type step struct {
			limit   int
			started bool
		}
		run := func(long admit.Outcome, latency time.Duration) []step {
			d := door(t, spec, 0, 1)
			var out []step
			for i := range 20 {
				at := time.Duration(i) * time.Second
				if latency > 0 {
					d.Admit(at, 1, 0)
					d.Start(at, 0)
					if long == admit.LongLived {
						d.Done(at+latency, latency, long)
					}
				}
				waited := time.Duration(i%2) * 20 * ms
				d.Admit(at+10*ms, 1, 0)
				started := d.Start(at+10*ms+waited, waited)
				if started {
					d.Done(at+60*ms+waited, 50*ms+waited, admit.Served)
				}
				if latency > 0 && long == admit.Served {
					d.Done(at+latency, latency, long)
				}
				out = append(out, step{d.Limit(), started})
			}
			return out
		}
		plain, longLived, asServed := run(admit.Abandoned, 0), run(admit.LongLived, 5*ms), run(admit.Served, 900*ms)
		if fmt.Sprint(longLived) != fmt.Sprint(plain) {
			t.Errorf("%s: (limit, served) with long-lived answers %v, without %v: they taught it something", spec, longLived, plain)
		}
		if fmt.Sprint(asServed) == fmt.Sprint(plain) {
			t.Errorf("%s: 900 ms answers left the steps %v unchanged: this test cannot tell", spec, plain)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Sojourn: a request is dropped only while the queue is overloaded, the
// least wait taken in the last interval having been above target, and
// only if it waited more than twice target; a request taken at once (wait
// 0) ends the overload at the next interval's end.
func TestSojournDropping(t *testing.T) {
	d := door(t, "sojourn,target_ms=5,interval_ms=100", 0, 1)
	for i, step := range []struct {
		at, waited time.Duration
		serve      bool
	}{
		{0, 0, true},               // the first interval begins, least 0
		{50 * ms, 20 * ms, true},   // a long wait, but the queue has emptied in this interval
		{100 * ms, 30 * ms, true},  // interval ends: least 0 ≤ 5, not overloaded; least 30
		{150 * ms, 8 * ms, true},   // least 8
		{200 * ms, 12 * ms, false}, // ends: least 8 > 5, overloaded; 12 > 2 × 5: dropped
		{210 * ms, 9 * ms, true},   // 9 ≤ 10: served
		{220 * ms, 11 * ms, false}, // dropped
		{300 * ms, 4 * ms, true},   // ends: least 9 > 5, still overloaded; 4 served
		{350 * ms, 30 * ms, false}, // dropped
		{400 * ms, 30 * ms, true},  // ends: least 4 ≤ 5, overload over
		{450 * ms, 0, true},
	} {
		if !d.Admit(step.at, 0, 3) {
			t.Fatalf("step %d: sojourn refused at arrival; it admits everyone", i)
		}
		inside := d.Inside()
		if got := d.Start(step.at, step.waited); got != step.serve {
			t.Errorf("step %d (at %v, waited %v): Start %v, want %v", i, step.at, step.waited, got, step.serve)
		}
		if step.serve {
			d.Done(step.at+ms, step.waited+ms, admit.Served)
		}
		if d.Inside() != inside-1 {
			t.Errorf("step %d: inside %d after, want %d: a dropped request is done", i, d.Inside(), inside-1)
		}
	}
	if d.Limit() != 0 {
		t.Errorf("sojourn's limit %d, want 0 (none)", d.Limit())
	}
}

// Sojourn with the callers' timeout: a request whose wait plus the service
// time measured lately (smoothed latency of served requests less their
// smoothed wait) exceeds the timeout is dropped even while the queue is
// not overloaded, and the service time it measures follows a slower
// service.
func TestSojournTimeout(t *testing.T) {
	d := door(t, "sojourn,target_ms=1000,interval_ms=100000,timeout_ms=250", 0, 1)
	serve := func(at, waited, service time.Duration) bool {
		t.Helper()
		if !d.Admit(at-waited, 0, 1) {
			t.Fatal("sojourn refused at arrival; it admits everyone")
		}
		if !d.Start(at, waited) {
			return false
		}
		d.Done(at+service, waited+service, admit.Served)
		return true
	}
	// Before anything is served it knows no service time: a long wait
	// passes (the queue is not overloaded).
	if !serve(0, 140*ms, 100*ms) {
		t.Fatal("the first request was dropped before any service time was measured")
	}
	for i := range 40 {
		if !serve(time.Duration(i+1)*time.Second, 0, 100*ms) {
			t.Fatalf("request %d, taken at once, was dropped", i)
		}
	}
	// Service about 100 ms: 140 ms of waiting still leaves time, 160 not.
	if !serve(50*time.Second, 140*ms, 100*ms) {
		t.Error("a request that waited 140 ms with 100 ms of service left was dropped under a 250 ms timeout")
	}
	if serve(51*time.Second, 160*ms, 100*ms) {
		t.Error("a request that waited 160 ms with 100 ms of service left was served under a 250 ms timeout")
	}
	// The service slows to 200 ms: within a few dozen answers 60 ms of
	// waiting no longer leaves time.
	for i := range 40 {
		serve(time.Duration(60+i)*time.Second, 0, 200*ms)
	}
	if serve(200*time.Second, 60*ms, 200*ms) {
		t.Error("after 40 services of 200 ms, a request that waited 60 ms was served under a 250 ms timeout")
	}
	if !serve(201*time.Second, 40*ms, 200*ms) {
		t.Error("after 40 services of 200 ms, a request that waited 40 ms was dropped under a 250 ms timeout")
	}
	// Without timeout_ms nothing changes: the same long wait passes.
	d = door(t, "sojourn,target_ms=1000,interval_ms=100000", 0, 1)
	serve(0, 0, 200*ms)
	if !serve(time.Second, 160*ms, 200*ms) {
		t.Error("sojourn without timeout_ms dropped a request while the queue was not overloaded")
	}
}

// Reset forgets what an adaptive policy learned and keeps who is inside;
// Set changes the policy keeping them too.
func TestResetAndSet(t *testing.T) {
	d := door(t, "aimd,start=10,backoff=0.5", 0, 0)
	d.Admit(0, 0, 0)
	d.Admit(0, 0, 0)
	d.Done(10*ms, 10*ms, admit.Overloaded)
	if d.Limit() != 5 {
		t.Fatalf("limit %d after a cut, want 5", d.Limit())
	}
	d.Reset()
	if d.Limit() != 10 || d.Inside() != 1 {
		t.Errorf("after Reset: limit %d inside %d, want 10 and 1", d.Limit(), d.Inside())
	}
	if err := d.Set("inflight,quota=1", 0); err != nil {
		t.Fatal(err)
	}
	if d.Admit(30*ms, 0, 0) || d.Spec() != "inflight,quota=1" {
		t.Errorf("after Set to a quota of 1 with one inside, a caller was admitted (spec %q)", d.Spec())
	}
	if err := d.Set("fifo", 0); err == nil || d.Spec() != "inflight,quota=1" {
		t.Errorf("Set to a bad spec: %v, spec now %q; want an error and no change", err, d.Spec())
	}
}

// SetWorkers follows a change of WORKERS: the queue policy's bound on
// requests inside becomes the new workers + LIMIT, and stays so after
// Reset and Set (which build the policy afresh from the door's workers);
// the requests inside are kept, and an adaptive policy keeps what it
// learned, since it does not count workers. A negative count is refused
// and changes nothing.
func TestSetWorkers(t *testing.T) {
	d := door(t, "queue", 3, 2)
	d.Admit(0, 0, 0)
	if err := d.SetWorkers(8); err != nil {
		t.Fatal(err)
	}
	if d.Limit() != 11 || d.Inside() != 1 {
		t.Errorf("after SetWorkers(8) with LIMIT 3: limit %d inside %d, want 11 and 1", d.Limit(), d.Inside())
	}
	d.Reset()
	if d.Limit() != 11 {
		t.Errorf("after Reset: limit %d, want the new workers + LIMIT, 11", d.Limit())
	}
	if err := d.Set("queue", 1); err != nil || d.Limit() != 9 {
		t.Errorf("after Set(queue, 1): limit %d (%v), want 8 + 1", d.Limit(), err)
	}
	if err := d.SetWorkers(-1); err == nil || d.Limit() != 9 {
		t.Errorf("SetWorkers(-1) = %v, limit %d; want an error and no change", err, d.Limit())
	}

	a := door(t, "aimd,start=10,backoff=0.5", 0, 2)
	a.Admit(0, 0, 0)
	a.Done(10*ms, 10*ms, admit.Overloaded)
	if err := a.SetWorkers(8); err != nil || a.Limit() != 5 {
		t.Errorf("aimd cut to 5, then SetWorkers(8): limit %d (%v), want 5 still", a.Limit(), err)
	}
}

// Register exports the door: its limit, who is inside, refusals, drops,
// queue waits and the policy with every parameter.
func TestDoorMetrics(t *testing.T) {
	d := door(t, "sojourn,target_ms=5,interval_ms=100", 0, 1)
	reg := prometheus.NewPedanticRegistry()
	if err := d.Register(reg); err != nil {
		t.Fatal(err)
	}
	d.Admit(0, 0, 0)
	d.Start(0, 0)
	d.Admit(0, 0, 0)
	d.Admit(0, 0, 0)
	d.Start(110*ms, 50*ms) // ends the first interval (least 0): served
	d.Start(220*ms, 60*ms) // least 50 > 5: overloaded, 60 > 10: dropped
	want := map[string]float64{
		"admit_dropped_total": 1, "admit_inflight": 2, "admit_limit": 0, "admit_refused_total": 0,
		`admit_policy_info{policy="sojourn",spec="sojourn,target_ms=5,interval_ms=100,timeout_ms=0"}`: 1,
		"admit_queue_seconds_count": 3, "admit_queue_seconds_sum": 0.110,
	}
	checkMetrics(t, reg, want)
	if err := d.Set("inflight,quota=1", 0); err != nil {
		t.Fatal(err)
	}
	d.Admit(300*ms, 0, 0)
	checkMetrics(t, reg, map[string]float64{
		"admit_limit": 1, "admit_refused_total": 1,
		`admit_policy_info{policy="inflight",spec="inflight,quota=1"}`: 1,
	})
	if got := gather(t, reg); strings.Contains(got, `policy="sojourn"`) {
		t.Errorf("the old policy is still exported:\n%s", got)
	}
}

// gather renders reg's samples one a line, "name{labels} value".
func gather(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := ""
			for i, l := range m.GetLabel() {
				if i > 0 {
					labels += ","
				}
				labels += l.GetName() + "=" + strconv.Quote(l.GetValue())
			}
			if labels != "" {
				labels = "{" + labels + "}"
			}
			switch {
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				fmt.Fprintf(&b, "%s_count%s %v\n%s_sum%s %v\n", mf.GetName(), labels, h.GetSampleCount(), mf.GetName(), labels, h.GetSampleSum())
			case m.GetCounter() != nil:
				fmt.Fprintf(&b, "%s%s %v\n", mf.GetName(), labels, m.GetCounter().GetValue())
			case m.GetGauge() != nil:
				fmt.Fprintf(&b, "%s%s %v\n", mf.GetName(), labels, m.GetGauge().GetValue())
			}
		}
	}
	return b.String()
}

// checkMetrics checks each sample of want against reg's.
func checkMetrics(t *testing.T, reg *prometheus.Registry, want map[string]float64) {
	t.Helper()
	got := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(gather(t, reg)), "\n") {
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatal(err)
		}
		got[line[:i]] = v
	}
	for name, w := range want {
		if v, ok := got[name]; !ok || math.Abs(v-w) > 1e-9 {
			t.Errorf("%s = %v (exported: %v), want %v", name, v, ok, w)
		}
	}
}

// With classes=on a door treats each class apart: at the queue policy's
// bound of 2 workers + LIMIT 6 = 8 inside, a sheddable request is refused
// from 6 inside (all but a quarter), a normal one from 8 (the policy's
// own answer: every worker taken and LIMIT waiting), a critical one only
// from 16 (twice the bound). Without it, or with no bound, every class is
// Admit.
func TestAdmitClass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  string
		limit int
		// the most inside at which each class is still admitted, from
		// empty, with both workers taken from 2 inside on; -1: never refused
		sheddable, normal, critical int
	}{
		// the lab's queue policy with classes
		{"queue with classes", "queue,classes=on", 6, 5, 7, 15},
		// the same policy without: one FIFO limit for all
		{"queue without classes", "queue", 6, 7, 7, 7},
		{"queue, classes off", "queue,classes=off", 6, 7, 7, 7},
		// a quota of 4: sheddable to 3, normal to 4, critical to 8
		{"inflight with classes", "inflight,quota=4,classes=on", 0, 2, 3, 7},
		// no bound (LIMIT 0): nobody is refused, whatever the class
		{"queue, no bound", "queue,classes=on", 0, -1, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for c, most := range map[admit.Class]int{admit.Sheddable: tc.sheddable, admit.Normal: tc.normal, admit.Critical: tc.critical} {
				d := door(t, tc.spec, tc.limit, 2)
				if want := strings.Contains(tc.spec, "classes=on"); d.Classes() != want {
					t.Errorf("Classes() = %v, want %v", d.Classes(), want)
				}
				for inside := range 40 {
					free, waiting := max(0, 2-inside), max(0, inside-2)
					want := most < 0 || inside <= most
					if got := d.AdmitClass(time.Duration(inside)*ms, free, waiting, c); got != want {
						t.Fatalf("%s with %d inside: admitted %v, want %v", c, inside, got, want)
					}
					if !want {
						break
					}
				}
			}
		})
	}
}

// The policy sheds by class from the moment Set turns classes on, and
// stops when it turns them off, keeping who is inside; the spec says so
// canonically and in Describe.
func TestClassesSet(t *testing.T) {
	d := door(t, "inflight,quota=4", 0, 0)
	for range 4 {
		d.AdmitClass(0, 0, 0, admit.Normal)
	}
	if d.AdmitClass(0, 0, 0, admit.Critical) {
		t.Fatal("a critical request was admitted past the quota without classes")
	}
	if err := d.Set("inflight,classes=on,quota=4", 0); err != nil {
		t.Fatal(err)
	}
	if d.Spec() != "inflight,quota=4,classes=on" || d.Spec().Describe() != "inflight,quota=4,classes=on" || !d.Spec().Classes() {
		t.Errorf("spec %q, described %q", d.Spec(), d.Spec().Describe())
	}
	if !d.AdmitClass(0, 0, 0, admit.Critical) || d.Inside() != 5 {
		t.Errorf("with classes on, a critical request was refused at the quota (inside %d)", d.Inside())
	}
	if err := d.Set("inflight,quota=4,classes=off", 0); err != nil {
		t.Fatal(err)
	}
	if d.AdmitClass(0, 0, 0, admit.Critical) || d.Spec().Describe() != "inflight,quota=4" || d.Spec().Classes() {
		t.Errorf("with classes off, a critical request was admitted past the quota (described %q)", d.Spec().Describe())
	}
}
