package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestFanoutTailClosedForms: Dean and Barroso's example (100 backends,
// each slow one time in a hundred: 63% of requests slow), one backend
// giving p itself, the share against math.Pow's (1 − p)^k, and the
// percentiles raised back to the k-th power giving 0.5 and P.
func TestFanoutTailClosedForms(t *testing.T) {
	f := FanoutTail(100, 0.01, 0.99)
	if got := float64(f.SlowShare); math.Abs(got-0.634) > 0.0005 || math.Abs(got-(1-math.Pow(0.99, 100))) > 1e-15 {
		t.Errorf("k 100, p 0.01: %v slow, want 0.634 (Dean and Barroso's 63%%)", got)
	}
	if !strings.Contains(f.Sentence, "about 63.4% of requests are slow") || !strings.Contains(f.Sentence, "median is about each backend's p99.31") ||
		!strings.Contains(f.Sentence, "p99 is about each backend's p99.99") {
		t.Errorf("sentence %q", f.Sentence)
	}
	for _, p := range []float64{0, 1e-6, 0.01, 0.3, 0.5, 0.999, 1} {
		if got := float64(FanoutTail(1, p, 0.99).SlowShare); math.Abs(got-p) > 1e-15 {
			t.Errorf("k 1, p %v: %v slow, want p", p, got)
		}
		for _, k := range []float64{1, 2, 10, 100, 1000} {
			f := FanoutTail(k, p, 0.999)
			want := 1 - math.Pow(1-p, k)
			if got := float64(f.SlowShare); math.Abs(got-want) > 1e-12 {
				t.Errorf("k %v p %v: %v slow, 1 − (1 − p)^k = %v", k, p, got, want)
			}
			if q := float64(f.MedianBackendPercentile); math.Abs(math.Pow(q, k)-0.5) > 1e-12 {
				t.Errorf("k %v: median at the backends' %v, whose k-th power is %v, not 0.5", k, q, math.Pow(q, k))
			}
			if q := float64(f.BackendPercentile); math.Abs(math.Pow(q, k)-0.999) > 1e-12 {
				t.Errorf("k %v: p99.9 at the backends' %v, whose k-th power is %v, not 0.999", k, q, math.Pow(q, k))
			}
		}
	}
	// A small p keeps its digits: 1 − (1 − 1e-12)^3 is 3e-12 − 3e-24 (and
	// 1e-36), which 1 − math.Pow would round to a multiple of 1.1e-16.
	if got, want := float64(FanoutTail(3, 1e-12, 0.5).SlowShare), 3e-12-3e-24; math.Abs(got-want) > 1e-26 {
		t.Errorf("k 3, p 1e-12: %v slow, want %v", got, want)
	}
}

// TestPercentileName: two significant digits of what lies above, so a
// share under 1 never reads as p100, with "about" when rounded.
func TestPercentileName(t *testing.T) {
	for _, c := range []struct {
		q    float64
		want string
	}{{0.99, "p99"}, {0.5, "p50"}, {0.999, "p99.9"}, {0.9999, "p99.99"}, {0.01, "p1"}, {0.9930924954370359, "about p99.31"},
		{0.99999599800667366, "about p99.9996"}, {0.9998995016917583, "about p99.99"}, {0.93303299153680742, "about p93.3"}} {
		if a, n := PercentileName(c.q); a+n != c.want {
			t.Errorf("PercentileName(%v) = %q, %q; want %q", c.q, a, n, c.want)
		}
	}
}

// TestFanoutHalfSlow: the least k with half the requests slow, checked
// against the share at it and one below, for p on both sides of the
// logarithms' whole-number edges (p = 1 − 0.5^(1/k) makes exactly half
// slow at k).
func TestFanoutHalfSlow(t *testing.T) {
	ps := []float64{1e-4, 0.001, 0.01, 0.1, 0.2, 0.29, 0.49}
	for _, k := range []float64{2, 3, 7, 69, 500} {
		ps = append(ps, 1-math.Pow(0.5, 1/k))
	}
	for _, p := range ps {
		h := float64(FanoutTail(10, p, 0.99).HalfSlowFanout)
		if h != math.Trunc(h) || h < 1 || slowShare(p, h) < 0.5-1e-12 || h > 1 && slowShare(p, h-1) >= 0.5 {
			t.Errorf("p %v: half slow from k = %v, where %v are slow and %v one below", p, h, slowShare(p, h), slowShare(p, h-1))
		}
	}
	if got := float64(FanoutTail(100, 0.01, 0.99).HalfSlowFanout); got != 69 {
		t.Errorf("p 0.01: half slow from k = %v, want 69 (0.99^69 = 0.4998)", got)
	}
	for _, p := range []float64{0.5, 0.8, 1} {
		if got := float64(FanoutTail(5, p, 0.99).HalfSlowFanout); got != 1 {
			t.Errorf("p %v: half slow from k = %v, want 1", p, got)
		}
	}
	if f := FanoutTail(5, 0, 0.99); !math.IsNaN(float64(f.HalfSlowFanout)) || !strings.Contains(f.Sentence, "no sub-request is ever slow") {
		t.Errorf("p 0: half slow from %v, sentence %q", f.HalfSlowFanout, f.Sentence)
	}
}

// TestFanoutCurve: from k = 1 to 100, or to the next whole hundred past
// the learner's k, each point the closed form.
func TestFanoutCurve(t *testing.T) {
	for _, c := range []struct{ k, end float64 }{{1, 100}, {100, 100}, {101, 200}, {250, 300}, {1000, 1000}} {
		f := FanoutTail(c.k, 0.01, 0.99)
		if n := len(f.CurveK); n != len(f.CurveSlow) || float64(f.CurveK[0]) != 1 || float64(f.CurveK[n-1]) != c.end {
			t.Fatalf("k %v: curve of %d points from %v to %v, want 1 to %v", c.k, n, f.CurveK[0], f.CurveK[n-1], c.end)
		}
		for i, k := range f.CurveK {
			if i > 0 && k <= f.CurveK[i-1] {
				t.Errorf("k %v: the curve's k does not rise at %d", c.k, i)
			}
			if want := 1 - math.Pow(0.99, float64(k)); math.Abs(float64(f.CurveSlow[i])-want) > 1e-12 {
				t.Errorf("k %v: at %v the curve has %v, want %v", c.k, k, f.CurveSlow[i], want)
			}
		}
	}
}

// TestFanoutAgainstSimulation draws the sub-requests' latencies
// (exponential, mean 1, seeded) and waits for the slowest of k, a
// different route to both claims: the share of requests with a sub-request
// past the backends' own p99 is 1 − 0.99^k (within 4 standard errors),
// and the requests' median and p99 are the backends' percentiles
// 0.5^(1/k) and 0.99^(1/k) (the exponential's −ln(1 − q)), within 3%
// (the p99 of 20,000 at k = 50 has a standard error of 0.8%).
func TestFanoutAgainstSimulation(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 2))
	const n = 20000
	backendP99 := -math.Log(0.01)
	for _, k := range []int{1, 10, 50} {
		f := FanoutTail(float64(k), 0.01, 0.99)
		slowest := make([]float64, n)
		slow := 0
		for i := range slowest {
			m := 0.0
			for j := 0; j < k; j++ {
				m = math.Max(m, rng.ExpFloat64())
			}
			slowest[i] = m
			if m > backendP99 {
				slow++
			}
		}
		share, want := float64(slow)/n, float64(f.SlowShare)
		if se := math.Sqrt(want * (1 - want) / n); math.Abs(share-want) > 4*se {
			t.Errorf("k %d: %.4f of the simulated requests are slow, the model %.4f (± %.4f)", k, share, want, se)
		}
		slices.Sort(slowest)
		for _, c := range []struct {
			name string
			at   float64 // the requests' percentile
			q    Num     // the backends' percentile the model puts it at
		}{{"median", 0.5, f.MedianBackendPercentile}, {"p99", 0.99, f.BackendPercentile}} {
			got := slowest[int(c.at*n)]
			want := -math.Log(1 - float64(c.q))
			if math.Abs(got-want) > 0.03*want {
				t.Errorf("k %d: the requests' %s is %.4f, the backends' %v percentile %.4f", k, c.name, got, c.q, want)
			}
		}
	}
}
