package sim_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/retry"
	"capacitylab/sim"
)

func mustRetry(t *testing.T, s string) retry.Spec {
	t.Helper()
	sp, err := retry.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// metastable simulates the retry storm: a lab of 4 workers × 20 ms
// (200 a second) offered 120 a second for 40 s, its WAIT_MS at 100 (40 a
// second) from 5 s to 10 s, callers that give up after 1 s and retry as
// spec says. It returns the window's report.
func metastable(t *testing.T, spec string) result.WindowReport {
	t.Helper()
	sw := loadrun.Sweep{Rates: []float64{120}, Seconds: 40, Seed: 7, SampleEvery: time.Second,
		Changes: parseChanges(t, []string{"5s:WAIT_MS=100", "10s:WAIT_MS=20"}), Retry: mustRetry(t, spec)}
	m := sim.Model{Lab: labsvc.Config{Workers: 4, WaitMS: 20, CPUs: 1}, Timeout: time.Second}
	rep, err := simulate(context.Background(), m, sw, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep.Windows[0]
}

// okSeries is each sample's ok, for the log.
func okSeries(w result.WindowReport) string {
	var b strings.Builder
	for _, s := range w.Samples {
		fmt.Fprintf(&b, " %d", s.OK)
	}
	return b.String()
}

// checkAttempts checks that every attempt of a window is accounted for:
// records in Seq order, the schedule's arrivals first; each retry
// follows an attempt of its request that ended before it was due and
// carries its class; the attempts sent are the logical requests'
// Attempt + 1; nothing is lost.
func checkAttempts(t *testing.T, w result.WindowReport) {
	t.Helper()
	attempts, firsts := 0, 0
	end := map[[2]int]time.Duration{} // request, attempt: its end
	class := map[int]result.Class{}
	for i, r := range w.Records {
		if r.Seq != i {
			t.Fatalf("record %d has Seq %d: want Seq order from 0", i, r.Seq)
		}
		if r.Outcome == result.Unfinished {
			t.Errorf("record %d unfinished", i)
		}
		if r.Outcome != result.NotSent {
			attempts++
		}
		if r.Attempt == 0 {
			if firsts != i {
				t.Fatalf("first attempt %d after a retry: want the schedule's arrivals first", i)
			}
			firsts++
			class[r.Seq] = r.Class
		} else {
			prev, ok := end[[2]int{r.Request, r.Attempt - 1}]
			if !ok || r.Intended < prev || r.Class != class[r.Request] || r.Outcome == result.NotSent {
				t.Errorf("retry %+v: its request's attempt %d ended at %v (found %v), class %v", r, r.Attempt-1, prev, ok, class[r.Request])
			}
		}
		end[[2]int{r.LogicalSeq(), r.Attempt}] = r.End
	}
	sum := 0
	for _, r := range result.Logical(w.Records) {
		if r.Outcome != result.NotSent {
			sum += r.Attempt + 1
		}
	}
	row := w.Row
	if sum != attempts || row.Attempts != attempts || row.Arrivals != firsts || row.Lost != 0 {
		t.Errorf("%d attempt records, the logical requests' attempts %d, the row's %d; %d arrivals, row %d; lost %d", attempts, sum, row.Attempts, firsts, row.Arrivals, row.Lost)
	}
	var smp int
	for _, s := range w.Samples {
		smp += s.Attempts
	}
	if len(w.Samples) > 0 && smp != attempts {
		t.Errorf("samples count %d attempts, the records %d", smp, attempts)
	}
}

// The retry storm: retries=3 without backoff keeps the lab past its
// capacity long after the bad release is undone (metastable failure),
// and every attempt is accounted for.
func TestRetryMetastable(t *testing.T) {
	w := metastable(t, "retries=3")
	t.Logf("retries=3: ok a second%s; amplification %.3f, attempts %d, ok %d of %d", okSeries(w), w.Row.Amplification, w.Row.Attempts, w.Row.OK, w.Row.Arrivals)
	checkAttempts(t, w)
	if len(w.Samples) < 31 {
		t.Fatalf("%d samples: want at least 31", len(w.Samples))
	}
	for k := 10; k < 30; k++ {
		if s := w.Samples[k]; s.OK >= 50 {
			t.Errorf("at %g s %d ok: want below a quarter of the capacity (50) for 20 s after the release is undone", s.AtS, s.OK)
		}
	}
	if w.Row.Amplification <= 2 {
		t.Errorf("amplification %.3f, want more than 2", w.Row.Amplification)
	}
}

// recovered is the first second from 10 s on whose ok is back within 10%
// of the offered 120 or above it (the backlog's answers within their
// timeout come first), or -1.
func recovered(w result.WindowReport) int {
	for k := 10; k < len(w.Samples); k++ {
		if w.Samples[k].OK >= 108 {
			return k
		}
	}
	return -1
}

// A retry budget of 10% ends the storm once the release is undone: its
// goodput comes back as a client's that never retries does, when the lab
// has drained the backlog its callers abandoned (it serves them all). It
// does not come back within 3 s of 10 s, nor does the client that never
// retries: measured, ok a second from 10 s is 0 0 0 32 200 130 121 120
// without retries and 0 0 0 0 12 200 163 120 with the budget; and once
// back, a second's ok of Poisson arrivals at 120 strays more than 10%
// (98 to 141), so the goodput is checked as a mean.
func TestRetryBudgetRecovers(t *testing.T) {
	base := metastable(t, "")
	w := metastable(t, "retries=3,budget=0.1")
	t.Logf("retries=3,budget=0.1: ok a second%s; amplification %.3f", okSeries(w), w.Row.Amplification)
	t.Logf("no retries:           ok a second%s", okSeries(base))
	checkAttempts(t, w)
	if w.Row.Amplification > 1.1 {
		t.Errorf("amplification %.3f: a budget of 0.1 allows at most 1.1 (with its burst of 10)", w.Row.Amplification)
	}
	k, k0 := recovered(w), recovered(base)
	if k < 0 || k0 < 0 || k > k0+1 {
		t.Fatalf("back within 10%% of 120 at %d s with the budget, %d s without retries: want at most a second later (-1: never)", k, k0)
	}
	ok := 0
	for _, s := range w.Samples[k+2 : 40] {
		ok += s.OK
	}
	if mean := float64(ok) / float64(40-k-2); mean < 108 || mean > 132 {
		t.Errorf("%.1f ok a second from %d s to 40 s: want within 10%% of 120", mean, k+2)
	}
}

// Jitter is drawn from the window's retry seed: the same window gives the
// same records, another seed other waits, each within exp's bound.
func TestRetryJitterDeterministic(t *testing.T) {
	m := sim.Model{Lab: labsvc.Config{Workers: 2, WaitMS: 50, CPUs: 1}, Timeout: 200 * time.Millisecond}
	var sched []time.Duration
	for i := range 200 {
		sched = append(sched, time.Duration(i)*10*time.Millisecond) // 100 a second against 40
	}
	w := result.Window{Schedule: sched, Retry: "retries=2,backoff=jitter,base_ms=100,cap_ms=400", RetrySeed: 1}
	run := func(w result.Window) []result.Record {
		res, _, err := m.RunWindow(context.Background(), w)
		if err != nil {
			t.Fatal(err)
		}
		return res.Records
	}
	a, b := run(w), run(w)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same window gave other records")
	}
	w.RetrySeed = 2
	c := run(w)
	if reflect.DeepEqual(a, c) {
		t.Error("another retry seed gave the same records: the jitter is not drawn from it")
	}
	end := map[[2]int]time.Duration{}
	waits := map[time.Duration]bool{}
	retries := 0
	for _, r := range a {
		end[[2]int{r.LogicalSeq(), r.Attempt}] = r.End
		if r.Attempt == 0 {
			continue
		}
		retries++
		wait := r.Intended - end[[2]int{r.Request, r.Attempt - 1}]
		bound := 100 * time.Millisecond << (r.Attempt - 1)
		if wait < 0 || wait >= bound {
			t.Errorf("retry %d of %d waited %v: want 0 to %v", r.Attempt, r.Request, wait, bound)
		}
		waits[wait] = true
	}
	if retries < 20 || len(waits) < retries/2 {
		t.Errorf("%d retries with %d distinct waits: want a storm with jittered waits", retries, len(waits))
	}
}

// A lab that refuses most callers opens the breaker: arrivals are not
// sent (breaker_open) and the samples show it open.
func TestRetryBreakerOpens(t *testing.T) {
	cfg := labsvc.Config{Workers: 1, WaitMS: 100, CPUs: 1, Limit: 1} // 10 a second, offered 100
	sw := loadrun.Sweep{Rates: []float64{100}, Seconds: 10, Seed: 3, SampleEvery: time.Second,
		Retry: mustRetry(t, "retries=1,breaker=0.5,breaker_min=10,open_ms=2000")}
	rep, err := simulate(context.Background(), sim.Model{Lab: cfg, Timeout: time.Second}, sw, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	checkAttempts(t, w)
	opened, open := 0, 0
	for _, s := range w.Samples {
		t.Logf("%4.1f s: ok %d refused %d breaker_open %d attempts %d breaker %s", s.AtS, s.OK, s.Refused, s.BreakerOpen, s.Attempts, s.Breaker)
		switch s.Breaker {
		case retry.Opened:
			opened++
		case retry.Closed, retry.HalfOpen:
		default:
			t.Errorf("sample at %g s: breaker %q", s.AtS, s.Breaker)
		}
		open += s.BreakerOpen
	}
	if opened == 0 || w.Row.BreakerOpen == 0 || open != w.Row.BreakerOpen {
		t.Errorf("%d samples with the breaker open, %d not sent for it in the samples, %d in the row: want it open", opened, open, w.Row.BreakerOpen)
	}
	if w.Row.BreakerOpen < w.Row.Arrivals/2 {
		t.Errorf("%d of %d arrivals not sent for the breaker: want most, the lab refusing 9 in 10", w.Row.BreakerOpen, w.Row.Arrivals)
	}
}

// Refusals retried with retry_after=on wait the lab's Retry-After of 1 s;
// without it, at once.
func TestRetryAfter(t *testing.T) {
	cfg := labsvc.Config{Workers: 1, WaitMS: 100, CPUs: 1, Limit: 1}
	for _, spec := range []string{"retries=1,retry_after=on", "retries=1"} {
		sw := loadrun.Sweep{Rates: []float64{100}, Seconds: 5, Seed: 3, Retry: mustRetry(t, spec)}
		rep, err := simulate(context.Background(), sim.Model{Lab: cfg, Timeout: time.Second}, sw, nil)
		if err != nil {
			t.Fatal(err)
		}
		w := rep.Windows[0]
		checkAttempts(t, w)
		firsts := map[int]result.Record{}
		retried := 0
		for _, r := range w.Records {
			if r.Attempt == 0 {
				firsts[r.Seq] = r
				continue
			}
			prev := firsts[r.Request]
			if prev.Outcome != result.Refused {
				continue
			}
			retried++
			want := time.Duration(0)
			if strings.Contains(spec, "retry_after") {
				want = time.Second
			}
			if got := r.Intended - prev.End; got != want {
				t.Errorf("%s: retry of %d due %v after its 503, want %v", spec, r.Request, got, want)
			}
		}
		if retried < 100 {
			t.Errorf("%s: %d refusals retried, want most of the 500 arrivals'", spec, retried)
		}
	}
}

// Each arrival carries its class, and so do its retries; a bad retry spec
// is refused naming retry.
func TestRetryClassesAndValidation(t *testing.T) {
	m := sim.Model{Lab: labsvc.Config{Workers: 1, WaitMS: 30, CPUs: 1}, Timeout: 100 * time.Millisecond}
	var sched []time.Duration
	var classes []result.Class
	for i := range 60 {
		sched = append(sched, time.Duration(i)*10*time.Millisecond)
		classes = append(classes, result.Classes()[i%3])
	}
	w := result.Window{Schedule: sched, Classes: classes, Retry: "retries=2"}
	res, _, err := m.RunWindow(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	retries := 0
	for _, r := range res.Records {
		if r.Class != classes[r.LogicalSeq()] {
			t.Errorf("record %d (attempt %d of %d): class %v, want %v", r.Seq, r.Attempt, r.LogicalSeq(), r.Class, classes[r.LogicalSeq()])
		}
		if r.Attempt > 0 {
			retries++
		}
	}
	if retries == 0 {
		t.Error("no retries against a lab of 33 a second offered 100")
	}
	w.Retry = "retries=11"
	if _, _, err := m.RunWindow(context.Background(), w); err == nil || !strings.Contains(err.Error(), "retry") {
		t.Errorf("retries=11: %v, want retry's error", err)
	}
}
