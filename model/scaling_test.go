package model

import (
	"math"
	"strings"
	"testing"
)

// TestLateScalingHandWorked: 120 a second against 100, with 150 landing
// after 60 s, worked by hand. B = 20 × 60 = 1,200; it drains at 30 a
// second in 40 s (gone at 100 s); the request arriving at the landing
// waits 1,200 ÷ 150 = 8 s, but the one arriving at 100 × 60 ÷ 120 = 50 s
// finds 1,000 ahead, which 100 a second clears just at 60 s: it waits
// 10 s = B ÷ λ, the longest. Waits rise as 20t ÷ 100 (past 1 s at 5 s)
// and fall as (100 − t) × 30 ÷ 150 (back to 1 s at 95 s): 90 s of
// arrivals wait past a 1 s timeout.
func TestLateScalingHandWorked(t *testing.T) {
	s := LateScaling(120, 100, 150, 60, 1000)
	for _, c := range []struct {
		name      string
		got, want Num
	}{
		{"backlog", s.Backlog, 1200}, {"drain", s.DrainS, 40}, {"drained at", s.DrainedAtS, 100}, {"landing wait", s.LandingWaitMS, 8000},
		{"worst wait", s.WorstWaitMS, 10000}, {"peak at", s.PeakAtS, 50}, {"late from", s.LateFromS, 5}, {"late until", s.LateUntilS, 95},
		{"late", s.LateS, 90}, {"growth after", s.GrowthAfter, 0},
	} {
		if math.Abs(float64(c.got-c.want)) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	want := "Demand of 120 a second against 100 a second of capacity builds a backlog of 1200 requests in the 60 s before the new capacity lands. " +
		"At 150 a second it drains 30 a second and is gone 40 s after the landing (100 s from the start). A request arriving at the landing waits 8 s; " +
		"the longest wait, 10 s, is for one arriving at 50 s, before the landing. With a 1 s timeout, requests arriving from 5 s to 95 s wait past it: 90 s of arrivals."
	if s.Sentence != want || !s.Drains {
		t.Errorf("drains %v, sentence\n%q, want\n%q", s.Drains, s.Sentence, want)
	}
}

// TestLateScalingEdges: the capacity after at or under the demand never
// drains (waits stop at B ÷ λ when equal, grow without end when under);
// no backlog when the demand fits or the capacity lands at once; no
// capacity before (the first request waits the whole lag); a timeout
// that no wait passes; no timeout.
func TestLateScalingEdges(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		why                               string
		lam, mu1, mu2, lag, timeout       float64
		backlog, drain, worst, from, late float64
		says                              string
	}{
		{"μ2 = λ: the backlog stays, every wait from 50 s on is 10 s, late without end", 120, 100, 120, 60, 1000, 1200, nan, 10000, 5, nan,
			"only matches the demand: the backlog never drains, and every request arriving from 50 s on waits 10 s. With a 1 s timeout, every request arriving from 5 s on waits past it."},
		{"μ2 < λ: the backlog grows by 10 a second after the landing, no worst wait", 120, 100, 110, 60, 1000, 1200, nan, nan, 5, nan,
			"still below the demand: the backlog grows by 10 a second after the landing and never drains, and waits grow without end."},
		{"μ2 < λ and a long timeout: late only past the peak of 10 s, at 50 + (20 − 10) × 110 ÷ 10 = 160 s", 120, 100, 110, 60, 20000, 1200, nan, nan, 160, nan,
			"every request arriving from 160 s on waits past it"},
		{"demand within capacity: nothing waits, nothing is late", 80, 100, 150, 60, 1000, 0, 0, 0, nan, 0,
			"Demand of 80 a second is within the 100 a second of capacity before the landing: no backlog builds and no request waits."},
		{"a lag of 0: no backlog", 120, 100, 150, 0, 1000, 0, 0, 0, nan, 0, "The new capacity lands at once: no backlog builds and no request waits."},
		{"a capacity after below a demand that fitted: waits grow from the landing, past 1 s at 60 + 1 × 70 ÷ 10 = 67 s", 80, 100, 70, 60, 1000, 0, nan, nan, 67, nan,
			"from the landing at 60 s the backlog grows by 10 a second and waits grow without end. With a 1 s timeout, every request arriving from 67 s on waits past it."},
		{"no capacity before: the first request waits the whole lag, 30 s", 50, 0, 100, 30, 1000, 1500, 30, 30000, 0, 30 + 30 - 1*100.0/50,
			"the longest wait, 30 s, is for one arriving at 0 s"},
		{"a timeout past the longest wait: nobody late", 120, 100, 150, 60, 15000, 1200, 40, 10000, nan, 0, "No wait passes the 15 s timeout."},
		{"no timeout: no late figure", 120, 100, 150, 60, 0, 1200, 40, 10000, nan, nan, "is for one arriving at 50 s, before the landing."},
	}
	same := func(got Num, want float64) bool {
		if math.IsNaN(want) {
			return math.IsNaN(float64(got))
		}
		return math.Abs(float64(got)-want) <= 1e-9*math.Max(1, math.Abs(want))
	}
	for _, c := range cases {
		s := LateScaling(c.lam, c.mu1, c.mu2, c.lag, c.timeout)
		if !same(s.Backlog, c.backlog) || !same(s.DrainS, c.drain) || !same(s.WorstWaitMS, c.worst) || !same(s.LateFromS, c.from) || !same(s.LateS, c.late) {
			t.Errorf("%s: backlog %v, drain %v, worst %v, late from %v for %v; want %v, %v, %v, %v, %v", c.why, s.Backlog, s.DrainS, s.WorstWaitMS, s.LateFromS, s.LateS,
				c.backlog, c.drain, c.worst, c.from, c.late)
		}
		if s.Drains != !math.IsNaN(c.drain) {
			t.Errorf("%s: drains %v with a drain time of %v", c.why, s.Drains, c.drain)
		}
		if !strings.Contains(s.Sentence, c.says) {
			t.Errorf("%s: sentence %q does not say %q", c.why, s.Sentence, c.says)
		}
	}
}

// fluidWaits runs a first-come-first-served fluid queue step by step (dt
// seconds, to end): λ dt arrives each step and at most μ dt is served,
// μ1 before the landing and μ2 from it. It returns each step's wait, NaN when what
// arrived is not served by end, and what waits at each step's start.
func fluidWaits(lam, mu1, mu2, lag, dt, end float64) (waits, queue []float64) {
	n := int(math.Round(end / dt))
	arrived := make([]float64, n+1)
	served := make([]float64, n+1)
	queue = make([]float64, n+1)
	q := 0.0
	for k := 0; k < n; k++ {
		mu := mu1
		if float64(k)*dt >= lag-1e-12 {
			mu = mu2
		}
		q += lam * dt
		out := math.Min(q, mu*dt)
		q -= out
		arrived[k+1] = arrived[k] + lam*dt
		served[k+1] = served[k] + out
		queue[k+1] = q
	}
	// What arrives in step k (up to arrived[k+1]) is served by the end of
	// the first step j whose cumulative service reaches it: it waits the
	// whole steps in between.
	waits = make([]float64, n)
	j := 0
	for k := 0; k < n; k++ {
		for j <= n && served[j] < arrived[k+1]-1e-9 {
			j++
		}
		waits[k] = math.NaN()
		if j <= n {
			waits[k] = float64(j-k-1) * dt
		}
	}
	return waits, queue
}

// TestLateScalingAgainstAFluidQueue checks the closed forms (the longest
// wait B ÷ λ before the landing rather than B ÷ μ2 at it, and the late
// window) against a queue stepped through in 10 ms steps, a different
// route to the same answer.
func TestLateScalingAgainstAFluidQueue(t *testing.T) {
	const dt = 0.01
	for _, c := range []struct{ lam, mu1, mu2, lag, timeout float64 }{
		{120, 100, 150, 60, 1000}, {50, 0, 100, 30, 1000}, {300, 250, 400, 45, 2500}, {120, 100, 200, 10, 500},
	} {
		s := LateScaling(c.lam, c.mu1, c.mu2, c.lag, c.timeout)
		end := float64(s.DrainedAtS) + 20
		waits, queue := fluidWaits(c.lam, c.mu1, c.mu2, c.lag, dt, end)
		worst, worstAt, from, until := 0.0, 0.0, math.NaN(), math.NaN()
		for k, w := range waits {
			if math.IsNaN(w) {
				break
			}
			if w > worst {
				worst, worstAt = w, float64(k)*dt
			}
			if w > c.timeout/1000 {
				if math.IsNaN(from) {
					from = float64(k) * dt
				}
				until = float64(k) * dt
			}
		}
		tol := 3 * dt * math.Max(1, c.mu2/(c.mu2-c.lam))
		if math.Abs(worst-float64(s.WorstWaitMS)/1000) > tol || math.Abs(worstAt-float64(s.PeakAtS)) > tol ||
			math.Abs(from-float64(s.LateFromS)) > tol || math.Abs(until-float64(s.LateUntilS)) > tol {
			t.Errorf("%+v: stepped, the longest wait is %.3f s at %.2f s and waits pass the timeout from %.2f to %.2f s; the model says %v s at %v s, %v to %v s",
				c, worst, worstAt, from, until, float64(s.WorstWaitMS)/1000, s.PeakAtS, s.LateFromS, s.LateUntilS)
		}
		landing := waits[int(math.Round(c.lag/dt))]
		if math.Abs(landing-float64(s.LandingWaitMS)/1000) > tol {
			t.Errorf("%+v: stepped, the request arriving at the landing waits %.3f s, the model says %v ms", c, landing, s.LandingWaitMS)
		}
		// The wait of every arrival and the backlog, each second, as the
		// chart draws them.
		for k := 0; k < len(waits); k += int(math.Round(1 / dt)) {
			at := float64(k) * dt
			if math.Abs(waits[k]-s.WaitAtS(at)) > tol {
				t.Errorf("%+v: arriving at %v s, stepped waits %.3f s, WaitAtS %.3f s", c, at, waits[k], s.WaitAtS(at))
			}
			if math.Abs(queue[k]-s.BacklogAt(at)) > 1e-6*math.Max(1, queue[k]) {
				t.Errorf("%+v: at %v s, stepped %.3f waiting, BacklogAt %.3f", c, at, queue[k], s.BacklogAt(at))
			}
		}
	}
}
