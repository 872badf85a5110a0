package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestUniversalScalability: X(1) is λ; the peak N* = √((1 − σ) ÷ κ) is
// where X is highest (checked against X on a fine grid around it); N max
// past it is retrograde and says so; κ = 0 has no peak and says so, and
// with σ = 0 too throughput is linear.
func TestUniversalScalability(t *testing.T) {
	u := UniversalScalability(100, 0.05, 0.001, 64)
	if got := float64(u.CurveX[0]); math.Abs(got-100) > 1e-12 {
		t.Errorf("X(1) = %v, want λ = 100", got)
	}
	peak := math.Sqrt(0.95 / 0.001)
	if !u.HasPeak || math.Abs(float64(u.PeakN)-peak) > 1e-12*peak || !u.Retrograde {
		t.Errorf("peak %v (has %v, retrograde %v), want %v, past it at 64", u.PeakN, u.HasPeak, u.Retrograde, peak)
	}
	px := float64(u.PeakX)
	for n := 1.0; n <= 64; n += 0.01 {
		if x := USLThroughput(100, 0.05, 0.001, n); x > px*(1+1e-12) {
			t.Fatalf("X(%v) = %v passes the peak's %v", n, x, px)
		}
	}
	if want := 100 * 64 / (1 + 0.05*63 + 0.001*64*63); math.Abs(float64(u.XAtMax)-want) > 1e-9 || math.Abs(float64(u.SpeedupAtMax)-want/100) > 1e-12 {
		t.Errorf("X(64) = %v, speedup %v; want %v, %v", u.XAtMax, u.SpeedupAtMax, want, want/100)
	}
	if len(u.CurveN) != 64 || float64(u.CurveLinear[63]) != 6400 || !strings.Contains(u.Sentence, "below the peak: past it") {
		t.Errorf("%d points, linear to %v, sentence %q", len(u.CurveN), u.CurveLinear[63], u.Sentence)
	}
	if short := UniversalScalability(100, 0.05, 0.001, 16); short.Retrograde || !strings.Contains(short.Sentence, "short of the peak") {
		t.Errorf("16 clients, short of the peak at 30.8: retrograde %v, sentence %q", short.Retrograde, short.Sentence)
	}
	amdahl := UniversalScalability(100, 0.05, 0, 256)
	if amdahl.HasPeak || !math.IsInf(float64(amdahl.PeakN), 1) || !math.IsNaN(float64(amdahl.PeakX)) || amdahl.Retrograde ||
		!strings.Contains(amdahl.Sentence, "there is no peak") || !strings.Contains(amdahl.Sentence, "λ ÷ σ = 2000 a second") {
		t.Errorf("κ = 0: peak %v at %v, sentence %q", amdahl.PeakX, amdahl.PeakN, amdahl.Sentence)
	}
	for i, x := range amdahl.CurveX {
		if i > 0 && x <= amdahl.CurveX[i-1] {
			t.Fatalf("κ = 0: X falls at N = %v", amdahl.CurveN[i])
		}
	}
	linear := UniversalScalability(100, 0, 0, 64)
	if float64(linear.XAtMax) != 6400 || linear.HasPeak || !strings.Contains(linear.Sentence, "in proportion to the clients") {
		t.Errorf("σ = κ = 0: X(64) = %v, sentence %q", linear.XAtMax, linear.Sentence)
	}
	// Complete contention and a coherency cost: the peak is one client.
	if one := UniversalScalability(100, 1, 0.01, 8); float64(one.PeakN) != 1 || float64(one.PeakX) != 100 || !one.Retrograde {
		t.Errorf("σ = 1, κ = 0.01: peak %v at %v, retrograde %v; want 100 at 1", one.PeakX, one.PeakN, one.Retrograde)
	}
}

// uslPoints is X at each N for λ, σ, κ, each multiplied by 1 + a draw
// from noise (nil: none).
func uslPoints(lambda, sigma, kappa float64, ns []float64, noise func() float64) []USLPoint {
	var out []USLPoint
	for _, n := range ns {
		x := USLThroughput(lambda, sigma, kappa, n)
		if noise != nil {
			x *= 1 + noise()
		}
		out = append(out, USLPoint{N: n, X: x})
	}
	return out
}

// sweepNs are the client counts of a sweep from 1 to 64.
func sweepNs() []float64 { return []float64{1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64} }

// TestFitUSLExact: from exact points the fit gives back λ, σ and κ (to
// rounding), the peak they put and an error of nothing; a curve with κ
// = 0 reports no peak, and one with σ = 0 a σ of 0, not below it.
func TestFitUSLExact(t *testing.T) {
	cases := []struct {
		why                  string
		lambda, sigma, kappa float64
		ns                   []float64
	}{
		{"a peak inside the sweep", 100, 0.05, 0.001, sweepNs()},
		{"a peak past the sweep", 100, 0.02, 0.0002, sweepNs()},
		{"no coherency cost: no peak", 50, 0.1, 0, sweepNs()},
		{"no contention", 100, 0, 0.0005, sweepNs()},
		{"three points, none at N = 1", 30, 0.08, 0.002, []float64{2, 10, 40}},
	}
	for _, c := range cases {
		f, err := FitUSL(uslPoints(c.lambda, c.sigma, c.kappa, c.ns, nil))
		if err != nil {
			t.Fatalf("%s: %v", c.why, err)
		}
		if math.Abs(float64(f.Lambda)-c.lambda) > 1e-9*c.lambda || math.Abs(float64(f.Sigma)-c.sigma) > 1e-9 || math.Abs(float64(f.Kappa)-c.kappa) > 1e-12 ||
			float64(f.RMSRelErr) > 1e-12 || f.Points != len(c.ns) {
			t.Errorf("%s: fitted λ %v σ %v κ %v (error %v, %d points), want %v, %v, %v", c.why, f.Lambda, f.Sigma, f.Kappa, f.RMSRelErr, f.Points, c.lambda, c.sigma, c.kappa)
		}
		if f.Sigma < 0 || f.Kappa < 0 {
			t.Errorf("%s: σ %v, κ %v below 0", c.why, f.Sigma, f.Kappa)
		}
		peak := USLPeak(c.sigma, c.kappa)
		switch {
		case c.kappa == 0:
			if !math.IsInf(float64(f.PeakN), 1) || !math.IsNaN(float64(f.PeakX)) {
				t.Errorf("%s: peak %v at %v, want none", c.why, f.PeakX, f.PeakN)
			}
		case math.Abs(float64(f.PeakN)-peak) > 1e-6*peak:
			t.Errorf("%s: peak at %v, want %v", c.why, f.PeakN, peak)
		}
	}
}

// TestFitUSLNoisy: each point off by up to ±3% (uniform, seeded), as a
// measured sweep is. Over 200 seeds the fit of σ = 0.05, κ = 0.001 was
// off by at most 0.0064 in σ, 12% in κ and 6.4% in the peak: the test
// allows 0.01, 20% and 10% (the goal for the peak), and an error
// near the noise's own RMS (1.7%). A noisy curve with κ = 0 may fit a
// small κ, but never puts a peak inside the points measured (over 1,000
// seeds the nearest was at 79 clients). Every fit keeps σ, κ ≥ 0.
func TestFitUSLNoisy(t *testing.T) {
	held := 0
	for seed := uint64(0); seed < 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 35))
		noise := func() float64 { return 0.06 * (rng.Float64() - 0.5) }
		f, err := FitUSL(uslPoints(100, 0.05, 0.001, sweepNs(), noise))
		if err != nil {
			t.Fatal(err)
		}
		peak := USLPeak(0.05, 0.001)
		if math.Abs(float64(f.Sigma)-0.05) > 0.01 || math.Abs(float64(f.Kappa)-0.001) > 0.0002 || math.Abs(float64(f.PeakN)-peak) > 0.1*peak ||
			!(f.RMSRelErr > 0.005 && f.RMSRelErr < 0.03) {
			t.Errorf("seed %d: σ %v κ %v peak %v error %v; want 0.05 ± 0.01, 0.001 ± 20%%, %.1f ± 10%%, 0.5 to 3%%", seed, f.Sigma, f.Kappa, f.PeakN, f.RMSRelErr, peak)
		}
		g, err := FitUSL(uslPoints(50, 0.1, 0, sweepNs(), noise))
		if err != nil {
			t.Fatal(err)
		}
		if g.PeakN.Finite() && float64(g.PeakN) <= 64 {
			t.Errorf("seed %d: a curve with κ = 0 fitted κ %v and a peak at %v, inside the sweep", seed, g.Kappa, g.PeakN)
		}
		// No contention: the free fit's σ falls below 0 for some seeds,
		// and the fit holds it at 0.
		h, err := FitUSL(uslPoints(100, 0, 0.0005, sweepNs(), noise))
		if err != nil {
			t.Fatal(err)
		}
		if h.Sigma < 0 || h.Kappa < 0 || g.Sigma < 0 || g.Kappa < 0 {
			t.Errorf("seed %d: σ %v κ %v and σ %v κ %v: below 0", seed, h.Sigma, h.Kappa, g.Sigma, g.Kappa)
		}
		if h.Sigma == 0 {
			held++
		}
	}
	if held == 0 {
		t.Error("no fit of a curve without contention held σ at 0: the non-negative fit was never tried")
	}
}

// TestFitUSLRefusesBadPoints: the error names the point and what is
// wanted.
func TestFitUSLRefusesBadPoints(t *testing.T) {
	cases := []struct {
		why    string
		points []USLPoint
		says   string
	}{
		{"no clients", []USLPoint{{1, 100}, {0, 50}, {4, 300}}, "point 1: N = 0, want a finite number of clients, 1 or more"},
		{"no throughput", []USLPoint{{1, 100}, {2, 190}, {4, 0}}, "point 2: X = 0, want a finite throughput above 0"},
		{"NaN", []USLPoint{{1, math.NaN()}}, "point 0: X = NaN"},
		{"two N only", []USLPoint{{1, 100}, {1, 101}, {8, 500}}, "3 points at 2 different N: want at least 3 different N"},
		{"nothing", nil, "0 points at 0 different N"},
	}
	for _, c := range cases {
		if _, err := FitUSL(c.points); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: error %v, want one saying %q", c.why, err, c.says)
		}
	}
}
