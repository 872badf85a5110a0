package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"capacitylab/result"
	"capacitylab/retry"
)

// TestRetryAmplificationHandWorked holds the attempts to sums worked by
// hand, with the edge cases: p = 1 (every attempt fails: r + 1), p = 0
// (one attempt), no retries, and a budget that binds or does not.
func TestRetryAmplificationHandWorked(t *testing.T) {
	cases := []struct {
		why                  string
		p, r, b, u           float64
		unbudgeted, attempts float64
		loadPct              float64
		capped, over         bool
		sentenceHas          string
	}{
		{"1 + 0.5 + 0.25 + 0.125 at 80%: 150% of capacity", 0.5, 3, 0, 0.8, 1.875, 1.875, 150, false, true,
			"a request sends about 1.88 attempts (1 + p + p² + p³). Offered 80% of its capacity in first attempts, the service gets 150% of it: over its capacity, which the first attempts alone are not."},
		{"a budget of 0.1 holds it to 1.1: 88%", 0.5, 3, 0.1, 0.8, 1.875, 1.1, 88, true, false,
			"without a budget a request would send about 1.88 attempts (1 + p + p² + p³); the retry budget of 0.1 holds it to 1.1."},
		{"a budget that does not bind", 0.1, 2, 0.5, 0.5, 1.11, 1.11, 55.5, false, false, "within the retry budget of 0.5."},
		{"p = 1: every attempt fails, r + 1 attempts", 1, 3, 0, 0.5, 4, 4, 200, false, true, "a request sends 4 attempts"},
		{"p = 1 and ten retries: 11 attempts", 1, 10, 0, 0.1, 11, 11, 110, false, true, "(1 + p + … + p¹⁰)"},
		{"p = 1 with a budget of 0.2: 1.2", 1, 10, 0.2, 0.5, 11, 1.2, 60, true, false, "holds it to 1.2"},
		{"p = 0: the first attempt always works", 0, 5, 0, 0.9, 1, 1, 90, false, false, "a request sends 1 attempt (1 + p + … + p⁵)"},
		{"no retries: one attempt whatever p", 0.9, 0, 0, 1.2, 1, 1, 120, false, true, "none is retried: a request sends 1 attempt. Offered 120% of its capacity in first attempts, the service gets 120% of it: over its capacity, as the first attempts alone are."},
		{"exactly at capacity is not over it", 1, 1, 0, 0.5, 2, 2, 100, false, false, "within its capacity"},
	}
	for _, c := range cases {
		r := RetryAmplification(c.p, c.r, c.b, c.u)
		if math.Abs(float64(r.Unbudgeted)-c.unbudgeted) > 1e-12 || math.Abs(float64(r.Attempts)-c.attempts) > 1e-12 ||
			math.Abs(float64(r.LoadPct)-c.loadPct) > 1e-9 || r.Capped != c.capped || r.Over != c.over {
			t.Errorf("%s: unbudgeted %v, attempts %v, load %v%%, capped %v, over %v; want %v, %v, %v%%, %v, %v",
				c.why, r.Unbudgeted, r.Attempts, r.LoadPct, r.Capped, r.Over, c.unbudgeted, c.attempts, c.loadPct, c.capped, c.over)
		}
		if !strings.Contains(r.Sentence, c.sentenceHas) {
			t.Errorf("%s: sentence %q does not say %q", c.why, r.Sentence, c.sentenceHas)
		}
	}
}

// TestRetryCurve: the curve runs p from 0 to 1 in 101 points, agrees
// with the closed form (1 − p^(r+1)) ÷ (1 − p) below p = 1 and with r + 1
// at it, rises with p, and the budgeted line never passes 1 + b.
func TestRetryCurve(t *testing.T) {
	for _, r := range []float64{0, 1, 3, 10} {
		res := RetryAmplification(0.3, r, 0.25, 1)
		if len(res.CurveP) != RetryCurveSteps+1 || len(res.CurveUnbudgeted) != RetryCurveSteps+1 || len(res.CurveAttempts) != RetryCurveSteps+1 {
			t.Fatalf("r=%v: curve lengths %d, %d, %d", r, len(res.CurveP), len(res.CurveUnbudgeted), len(res.CurveAttempts))
		}
		for i, p := range res.CurveP {
			x, u, a := float64(p), float64(res.CurveUnbudgeted[i]), float64(res.CurveAttempts[i])
			want := r + 1
			if x < 1 {
				want = (1 - math.Pow(x, r+1)) / (1 - x)
			}
			if math.Abs(u-want) > 1e-12*want {
				t.Errorf("r=%v p=%v: %v attempts, closed form %v", r, x, u, want)
			}
			if a > 1.25+1e-12 || a > u || (i > 0 && u < float64(res.CurveUnbudgeted[i-1])) {
				t.Errorf("r=%v p=%v: with the budget %v, without %v (want at most 1.25 and never more than without, rising)", r, x, a, u)
			}
		}
		if float64(res.CurveP[RetryCurveSteps]) != 1 || float64(res.CurveUnbudgeted[RetryCurveSteps]) != r+1 {
			t.Errorf("r=%v: the curve ends at p %v with %v attempts, want 1 and %v", r, res.CurveP[RetryCurveSteps], res.CurveUnbudgeted[RetryCurveSteps], r+1)
		}
	}
}

// TestRetryAmplificationAgainstTheRetryClient runs package retry's own
// client (the one the lab's load generator uses) against attempts that
// fail independently with chance p, and counts the attempts it sends: the
// model's 1 + p + … + p^r without a budget and min(that, 1 + b) with one
// must match it within what 20,000 requests can tell apart.
func TestRetryAmplificationAgainstTheRetryClient(t *testing.T) {
	cases := []struct {
		p, r, b float64
	}{{0.5, 3, 0}, {0.5, 3, 0.1}, {1, 3, 0}, {1, 3, 0.2}, {0.2, 2, 0.5}, {0.9, 10, 0}}
	for _, c := range cases {
		spec := fmt.Sprintf("retries=%g", c.r)
		if c.b > 0 {
			spec += fmt.Sprintf(",budget=%g", c.b)
		}
		sp, err := retry.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		client := retry.New(sp, 1)
		rng := rand.New(rand.NewPCG(34, 1))
		const n = 20000
		attempts := 0
		for i := 0; i < n; i++ {
			now := time.Duration(i) * time.Millisecond
			if !client.Send(now, true) {
				t.Fatalf("%s: a first attempt was not sent", spec)
			}
			for k := 0; ; k++ {
				attempts++
				rec := result.Record{Outcome: result.OK, Status: 200}
				if rng.Float64() < c.p {
					rec = result.Record{Outcome: result.Error, Reason: result.ReasonReset}
				}
				again, _ := client.Retry(now, k, rec, 0)
				if !again {
					break
				}
				client.Send(now, false)
			}
		}
		got := float64(attempts) / n
		want := float64(RetryAmplification(c.p, c.r, c.b, 1).Attempts)
		// The spread of one request's attempts is at most r; the mean of
		// n has a standard error of at most r ÷ √n: 5 of them, and the
		// budget's burst of tokens at the start, 10 ÷ n.
		if tol := 5*c.r/math.Sqrt(n) + 10.0/n; math.Abs(got-want) > tol {
			t.Errorf("%s at p = %v: the client sent %.4f attempts a request, the model says %.4f (±%.4f)", spec, c.p, got, want, tol)
		}
	}
}
