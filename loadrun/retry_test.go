package loadrun_test

import (
	"net"
	"testing"
	"time"

	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/retry"
)

func spec(t *testing.T, s string) retry.Spec {
	t.Helper()
	sp, err := retry.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// checkAttempts checks a retrying window's books: each retry is a record
// of its own, numbered after the first attempts, naming its request and
// its attempt number in order; the row counts logical requests (lost 0)
// and every attempt sent (attempts = Σ (last attempt + 1)).
func checkAttempts(t *testing.T, w result.WindowReport, firsts int) (retries []result.Record) {
	t.Helper()
	attempts := map[int]int{}
	for _, r := range w.Records {
		if r.Outcome == result.Unfinished {
			t.Errorf("record %d never finished", r.Seq)
		}
		if r.Attempt == 0 {
			if r.Seq >= firsts {
				t.Errorf("first attempt %d numbered past the %d first attempts", r.Seq, firsts)
			}
			continue
		}
		retries = append(retries, r)
		if r.Seq < firsts || r.Request >= firsts {
			t.Errorf("retry seq %d of request %d: want seq ≥ %d and request < it", r.Seq, r.Request, firsts)
		}
		if attempts[r.Request]+1 != r.Attempt {
			t.Errorf("request %d's attempt %d follows attempt %d", r.Request, r.Attempt, attempts[r.Request])
		}
		attempts[r.Request] = r.Attempt
	}
	row := w.Row
	if row.Arrivals != firsts || row.Lost != 0 {
		t.Errorf("row: %d arrivals, lost %d; want %d and 0", row.Arrivals, row.Lost, firsts)
	}
	sent := 0
	for _, r := range w.Records {
		if r.Outcome != result.NotSent {
			sent++
		}
	}
	if row.Attempts != sent || row.Attempts != row.Sent+len(retries) {
		t.Errorf("row attempts %d: want every attempt sent (%d records) = sent %d + retries %d", row.Attempts, sent, row.Sent, len(retries))
	}
	return retries
}

// Refusals retried with a fixed backoff: each retry is due exactly the
// backoff after the attempt before it ended, is sent then, and the lab
// saw every attempt.
func TestRetryRefusalsAtTheLab(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 1, SpinMS: 0, WaitMS: 40, Limit: 1, CPUs: 1})
	sw := sweepOf(t, l, time.Second)
	sw.Rates, sw.Seconds = []float64{60}, 1
	sw.Retry = spec(t, "retries=2,on=refused,backoff=fixed,base_ms=30")
	rep, _, err := collect(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	firsts := w.Row.Arrivals
	retries := checkAttempts(t, w, firsts)
	if len(retries) < 10 {
		t.Fatalf("%d retries at 60/s against a lab of 25/s with a queue of 1: want refusals retried", len(retries))
	}
	bySeq := map[[2]int]result.Record{}
	for _, r := range w.Records {
		bySeq[[2]int{r.LogicalSeq(), r.Attempt}] = r
	}
	for _, r := range retries {
		prev := bySeq[[2]int{r.Request, r.Attempt - 1}]
		if prev.Outcome != result.Refused {
			t.Errorf("request %d attempt %d retried a %s: want only refusals retried", r.Request, r.Attempt-1, prev.Outcome)
		}
		if d := r.Intended - prev.End; d < 30*time.Millisecond-time.Microsecond || d > 30*time.Millisecond+time.Microsecond {
			t.Errorf("request %d attempt %d due %v after the one before ended: want 30 ms", r.Request, r.Attempt, d)
		}
	}
	served := 0
	for _, r := range w.Records {
		if r.Outcome == result.OK {
			served++
		}
	}
	if w.Row.Done != served {
		t.Errorf("the lab served %d requests, the client's attempts were answered ok %d times: want the same", w.Row.Done, served)
	}
	if w.Row.Amplification <= 1 {
		t.Errorf("amplification %v: want above 1", w.Row.Amplification)
	}
}

// The lab's refusal carries Retry-After: 1; a client honouring it waits
// at least a second before retrying.
func TestRetryHonoursRetryAfter(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 1, SpinMS: 0, WaitMS: 40, Limit: 1, CPUs: 1})
	sw := sweepOf(t, l, time.Second)
	sw.Rates, sw.Seconds = []float64{60}, 0.5
	sw.Retry = spec(t, "retries=1,on=refused,retry_after=on")
	rep, _, err := collect(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	retries := checkAttempts(t, w, w.Row.Arrivals)
	if len(retries) == 0 {
		t.Fatal("no retries")
	}
	ends := map[int]time.Duration{}
	for _, r := range w.Records {
		if r.Attempt == 0 {
			ends[r.Seq] = r.End
		}
	}
	for _, r := range retries {
		if d := r.Intended - ends[r.Request]; d < time.Second-time.Microsecond {
			t.Errorf("request %d retried %v after its refusal: want at least Retry-After's 1 s", r.Request, d)
		}
	}
}

// A breaker against a port where nothing listens: after breaker_min
// failures it opens and the arrivals due while it is open are not sent
// (breaker_open); half open, a few probes go, fail, and it opens again.
func TestRetryBreakerOpens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: every connection is refused
	target, err := loadrun.NewTarget("http://"+addr+"/", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sw := loadrun.Sweep{Target: target, Seed: 1, Rates: []float64{200}, Seconds: 1, SampleEvery: 100 * time.Millisecond,
		Retry: spec(t, "retries=0,breaker=0.5,breaker_min=10,open_ms=300,probes=2")}
	rep, _, err := collect(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	checkAttempts(t, w, w.Row.Arrivals)
	row := w.Row
	// Open from about the 10th arrival (50 ms), half open at 350 ms and
	// 650 ms with 2 probes each, open again: about 12 + 2 + 2 (+ 2) sent.
	if row.Sent > 30 || row.BreakerOpen < row.Arrivals-30 {
		t.Errorf("sent %d, breaker_open %d of %d arrivals: want at most 30 sent, the rest stopped by the breaker", row.Sent, row.BreakerOpen, row.Arrivals)
	}
	open := 0
	for _, s := range w.Samples {
		if s.Breaker == retry.Opened {
			open++
		}
	}
	if open < 5 {
		t.Errorf("%d of %d samples say the breaker was open: want most", open, len(w.Samples))
	}
}

// Classes drawn per arrival from the window's seed: about the shares
// asked for, the same arrivals each time, counted by class in the row.
func TestClassesDrawnAndCounted(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 4, SpinMS: 0, WaitMS: 5, CPUs: 1})
	sw := sweepOf(t, l, time.Second)
	sw.Rates, sw.Seconds, sw.Critical, sw.Sheddable = []float64{200}, 1, 0.2, 0.3
	rep, _, err := collect(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	classes := loadrun.WindowClasses(len(w.Records), 0.2, 0.3, loadrun.WindowSeed(1, 200, 0))
	n := map[result.Class]int{}
	for i, r := range w.Records {
		if r.Class != classes[i] {
			t.Fatalf("arrival %d is %s, WindowClasses says %s", i, r.Class, classes[i])
		}
		n[r.Class]++
	}
	total := float64(len(w.Records))
	if c, s := float64(n[result.Critical])/total, float64(n[result.Sheddable])/total; c < 0.13 || c > 0.27 || s < 0.22 || s > 0.38 {
		t.Errorf("shares critical %.2f, sheddable %.2f of %v: want about 0.2 and 0.3", c, s, total)
	}
	if len(w.Row.ByClass) != 3 || w.Row.ByClass[0].Arrivals != n[result.Critical] || w.Row.ByClass[2].Arrivals != n[result.Sheddable] {
		t.Errorf("by class %+v: want the arrivals of each class", w.Row.ByClass)
	}
}

// A budget against a lab that refuses most of what arrives: every first
// attempt deposits a tenth of a token, the bucket starts with 10, so the
// retries made are at most a tenth of the requests plus the burst, and
// each retry waits an exponential backoff with full jitter: due between
// the attempt before it ended and base × 2^(n−1) after.
func TestRetryBudgetAndJitterAtTheLab(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 1, SpinMS: 0, WaitMS: 50, Limit: 1, CPUs: 1})
	sw := sweepOf(t, l, time.Second)
	sw.Rates, sw.Seconds = []float64{100}, 2
	sw.Retry = spec(t, "retries=3,on=refused,backoff=jitter,base_ms=20,cap_ms=100,budget=0.1,burst=10")
	rep, _, err := collect(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	retries := checkAttempts(t, w, w.Row.Arrivals)
	if max := w.Row.Arrivals/10 + 10; len(retries) > max || len(retries) < 10 {
		t.Errorf("%d retries of %d requests, most of them refused: want at least the 10 of the burst and at most a tenth of the requests plus the burst (%d)", len(retries), w.Row.Arrivals, max)
	}
	end := map[[2]int]time.Duration{}
	for _, r := range w.Records {
		end[[2]int{r.LogicalSeq(), r.Attempt}] = r.End
	}
	for _, r := range retries {
		prev := end[[2]int{r.Request, r.Attempt - 1}]
		bound := min(100*time.Millisecond, 20*time.Millisecond<<(r.Attempt-1))
		if d := r.Intended - prev; d < -time.Microsecond || d > bound+time.Microsecond {
			t.Errorf("request %d attempt %d due %v after the one before: want 0 to %v", r.Request, r.Attempt, d, bound)
		}
	}
}

// The breaker against a lab that refuses most of what arrives (1 worker
// of 50 ms, a queue of 1, 200 a second): it opens, the arrivals due while
// it is open are not sent, and the lab hears of none of them.
func TestRetryBreakerAtTheLab(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 1, SpinMS: 0, WaitMS: 50, Limit: 1, CPUs: 1})
	sw := sweepOf(t, l, time.Second)
	sw.Rates, sw.Seconds, sw.SampleEvery = []float64{200}, 2, 250*time.Millisecond
	sw.Retry = spec(t, "retries=0,breaker=0.5,breaker_min=10,open_ms=500,probes=2")
	rep, _, err := collect(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	checkAttempts(t, w, w.Row.Arrivals)
	if w.Row.BreakerOpen < w.Row.Arrivals/2 {
		t.Errorf("breaker_open %d of %d arrivals: want most stopped against a lab that refuses nearly all", w.Row.BreakerOpen, w.Row.Arrivals)
	}
	if got := w.Row.OK + w.Row.Refused; got != w.Row.Sent {
		t.Errorf("ok %d + refused %d = %d, sent %d: want every attempt sent answered by the lab", w.Row.OK, w.Row.Refused, got, w.Row.Sent)
	}
	open := 0
	for _, s := range w.Samples {
		if s.Breaker == retry.Opened {
			open++
		}
	}
	if open == 0 {
		t.Error("no sample says the breaker was open")
	}
}
