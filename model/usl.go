package model

import (
	"fmt"
	"math"
)

// USL is Gunther's Universal Scalability Law: N clients (or workers),
// each doing λ a second alone, get
//
//	X(N) = λN ÷ (1 + σ(N − 1) + κN(N − 1))
//
// where σ is contention (the share of the work that is serial, queueing
// for a lock) and κ is coherency (each pair of clients paying to keep
// each other's data in step). With κ > 0 throughput peaks at N* = √((1 −
// σ) ÷ κ) and falls after it (the package doc has the assumptions and
// omissions).
type USL struct {
	Lambda Num `json:"lambda"` // λ, per second
	Sigma  Num `json:"sigma"`  // σ
	Kappa  Num `json:"kappa"`  // κ
	NMax   Num `json:"n_max"`
	// HasPeak is set when κ > 0: PeakN is then N*, at least 1, and PeakX
	// X(N*). With κ = 0 there is no peak: PeakN is +Inf and PeakX NaN
	// (both null in JSON).
	HasPeak bool `json:"has_peak"`
	PeakN   Num  `json:"peak_n"`
	PeakX   Num  `json:"peak_x"`
	// XAtMax is X(N max); SpeedupAtMax is X(N max) ÷ λ, how many clients'
	// worth of work N max do together. Retrograde is set when N max is
	// past the peak, where adding clients lowers throughput.
	XAtMax       Num  `json:"x_at_max"`
	SpeedupAtMax Num  `json:"speedup_at_max"`
	Retrograde   bool `json:"retrograde"`
	// CurveN is N = 1, 2, … N max; CurveX is X(N) and CurveLinear λN,
	// throughput with neither contention nor coherency.
	CurveN      []Num  `json:"curve_n"`
	CurveX      []Num  `json:"curve_x"`
	CurveLinear []Num  `json:"curve_linear"`
	Sentence    string `json:"sentence"`
}

// USLThroughput is X(N) = λN ÷ (1 + σ(N − 1) + κN(N − 1)).
func USLThroughput(lambda, sigma, kappa, n float64) float64 {
	return lambda * n / (1 + sigma*(n-1) + kappa*n*(n-1))
}

// USLPeak is where X(N) peaks for N ≥ 1: √((1 − σ) ÷ κ), at least 1,
// when κ > 0; +Inf when κ = 0 and σ ≤ 1 (X never falls); 1 when κ = 0
// and σ > 1, which only a fit can give (X falls from the first client).
func USLPeak(sigma, kappa float64) float64 {
	switch {
	case kappa > 0:
		return math.Max(1, math.Sqrt(math.Max(0, 1-sigma)/kappa))
	case sigma > 1:
		return 1
	}
	return math.Inf(1)
}

// UniversalScalability computes the usl model. Inputs are validated by
// the caller (λ above 0, σ and κ 0 to 1, N max a whole number 1 to 256).
func UniversalScalability(lambda, sigma, kappa, nMax float64) USL {
	u := USL{Lambda: Num(lambda), Sigma: Num(sigma), Kappa: Num(kappa), NMax: Num(nMax)}
	peak := USLPeak(sigma, kappa)
	u.HasPeak = !math.IsInf(peak, 1)
	u.PeakN, u.PeakX = Num(peak), Num(math.NaN())
	if u.HasPeak {
		u.PeakX = Num(USLThroughput(lambda, sigma, kappa, peak))
	}
	xMax := USLThroughput(lambda, sigma, kappa, nMax)
	u.XAtMax, u.SpeedupAtMax = Num(xMax), Num(xMax/lambda)
	u.Retrograde = u.HasPeak && nMax > peak
	for n := 1; n <= int(nMax); n++ {
		x := float64(n)
		u.CurveN = append(u.CurveN, Num(x))
		u.CurveX = append(u.CurveX, Num(USLThroughput(lambda, sigma, kappa, x)))
		u.CurveLinear = append(u.CurveLinear, Num(lambda*x))
	}

	F := Format
	ns := F(nMax)
	clients := ns + " " + plural(ns, "client", "clients")
	speed := float64(u.SpeedupAtMax)
	txt := "One client alone does " + F(lambda) + " a second. "
	switch {
	case sigma == 0 && kappa == 0:
		txt += "With neither contention nor coherency costs throughput grows in proportion to the clients, with no peak: " + clients + " do " +
			about(xMax) + F(xMax) + " a second."
	case kappa == 0 && sigma == 1:
		txt += "With complete contention (σ = 1) and no coherency cost (κ = 0) the clients take turns: throughput stays at one client's " + F(lambda) +
			" a second whatever their number, with no peak."
	case kappa == 0:
		ceiling := lambda / sigma
		txt += "With contention σ = " + F(sigma) + " and no coherency cost (κ = 0) there is no peak: throughput rises for ever towards λ ÷ σ = " +
			about(ceiling) + F(ceiling) + " a second (Amdahl's law) without reaching it. " + clients + " do " + about(xMax) + F(xMax) +
			" a second, " + about(speed) + F(speed) + " times one client's work."
	default:
		px, pn := float64(u.PeakX), peak
		txt += "With contention σ = " + F(sigma) + " and coherency κ = " + F(kappa) + ", throughput peaks at "
		if pn == 1 {
			txt += "a single client, " + F(px) + " a second: every client added lowers it."
		} else {
			txt += about(px) + F(px) + " a second with " + about(pn) + F(pn) + " clients (N* = √((1 − σ) ÷ κ)), " + about(px/lambda) + F(px/lambda) +
				" times one client's work."
		}
		switch {
		case u.Retrograde:
			below := 100 * (1 - xMax/px)
			txt += " " + clients + " do " + about(xMax) + F(xMax) + " a second, " + about(below) + F(below) +
				"% below the peak: past it, each client added costs more in coherency than it brings."
		case nMax < pn:
			txt += " " + clients + ", short of the peak, do " + about(xMax) + F(xMax) + " a second, " + about(speed) + F(speed) + " times one client's work."
		}
	}
	u.Sentence = txt
	return u
}

// USLPoint is one measurement: N clients (or workers) and the throughput
// X they got, per second.
type USLPoint struct {
	N float64 `json:"n"`
	X float64 `json:"x"`
}

// USLFit is the Universal Scalability Law fitted to measured points: its
// coefficients, the peak they put (USLPeak: +Inf with κ = 0, when PeakX
// is NaN; both null in JSON) and how far the fitted X is from the
// measured, as the root mean square of (fitted − measured) ÷ measured.
type USLFit struct {
	Lambda    Num `json:"lambda"`
	Sigma     Num `json:"sigma"`
	Kappa     Num `json:"kappa"`
	PeakN     Num `json:"peak_n"`
	PeakX     Num `json:"peak_x"`
	RMSRelErr Num `json:"rms_rel_err"`
	Points    int `json:"points"`
}

// FitUSL fits λ, σ and κ to measured (N, X) points by least squares.
// Written as N ÷ X = (1 + σ(N − 1) + κN(N − 1)) ÷ λ, the law is linear in
// a = 1 ÷ λ, b = σ ÷ λ and c = κ ÷ λ; dividing by a gives the familiar
// N ÷ (X ÷ λ) − 1 = σ(N − 1) + κN(N − 1). Each point's equation is
// weighted by X ÷ N, so its residual is the relative error of N ÷ X,
// near that of X: every point counts alike, whatever its size, and λ is
// fitted with σ and κ rather than taken from the one point at N = 1, whose
// noise would tilt the rest. The fit keeps σ, κ ≥ 0: when the free fit
// gives a negative one, the best of the fits with it held at 0 is taken
// (a small non-negative least squares, by trying each face). A coefficient
// whose term changes X by under 1e-9 at the largest N is rounding and is
// set to 0, so a curve with no coherency cost reports no peak.
//
// The points need N ≥ 1 and X > 0, all finite, and at least three
// different N (three coefficients); the error says which point is bad.
func FitUSL(points []USLPoint) (USLFit, error) {
	distinct := map[float64]bool{}
	nTop := 0.0
	for i, p := range points {
		if !(p.N >= 1) || math.IsInf(p.N, 0) {
			return USLFit{}, fmt.Errorf("model: FitUSL: point %d: N = %g, want a finite number of clients, 1 or more", i, p.N)
		}
		if !(p.X > 0) || math.IsInf(p.X, 0) {
			return USLFit{}, fmt.Errorf("model: FitUSL: point %d: X = %g, want a finite throughput above 0", i, p.X)
		}
		distinct[p.N] = true
		nTop = math.Max(nTop, p.N)
	}
	if len(distinct) < 3 {
		return USLFit{}, fmt.Errorf("model: FitUSL: %d points at %d different N: want at least 3 different N", len(points), len(distinct))
	}
	// Rows of the weighted system: the basis 1, N − 1, N(N − 1) times
	// X ÷ N, against 1 (N ÷ X times X ÷ N).
	basis := func(p USLPoint) [3]float64 {
		w := p.X / p.N
		return [3]float64{w, (p.N - 1) * w, p.N * (p.N - 1) * w}
	}
	// Each face: which of b (σ) and c (κ) are free; a (λ) always is.
	best, bestSSE := [3]float64{}, math.Inf(1)
	for _, free := range [][3]bool{{true, true, true}, {true, false, true}, {true, true, false}, {true, false, false}} {
		var cols []int
		for j, f := range free {
			if f {
				cols = append(cols, j)
			}
		}
		rows := make([][]float64, len(points))
		for i, p := range points {
			b := basis(p)
			for _, j := range cols {
				rows[i] = append(rows[i], b[j])
			}
		}
		sol, ok := leastSquaresOnes(rows)
		if !ok {
			continue
		}
		var coef [3]float64
		for k, j := range cols {
			coef[j] = sol[k]
		}
		if !(coef[0] > 0) || coef[1] < 0 || coef[2] < 0 {
			continue
		}
		sse := 0.0
		for _, p := range points {
			b := basis(p)
			r := coef[0]*b[0] + coef[1]*b[1] + coef[2]*b[2] - 1
			sse += r * r
		}
		if sse < bestSSE {
			best, bestSSE = coef, sse
		}
	}
	if math.IsInf(bestSSE, 1) {
		return USLFit{}, fmt.Errorf("model: FitUSL: no fit with λ > 0 and σ, κ ≥ 0 through these %d points", len(points))
	}
	lambda, sigma, kappa := 1/best[0], best[1]/best[0], best[2]/best[0]
	denom := 1 + sigma*(nTop-1) + kappa*nTop*(nTop-1)
	if sigma*(nTop-1) <= 1e-9*denom {
		sigma = 0
	}
	if kappa*nTop*(nTop-1) <= 1e-9*denom {
		kappa = 0
	}
	fit := USLFit{Lambda: Num(lambda), Sigma: Num(sigma), Kappa: Num(kappa), Points: len(points)}
	peak := USLPeak(sigma, kappa)
	fit.PeakN, fit.PeakX = Num(peak), Num(math.NaN())
	if !math.IsInf(peak, 1) {
		fit.PeakX = Num(USLThroughput(lambda, sigma, kappa, peak))
	}
	ss := 0.0
	for _, p := range points {
		r := (USLThroughput(lambda, sigma, kappa, p.N) - p.X) / p.X
		ss += r * r
	}
	fit.RMSRelErr = Num(math.Sqrt(ss / float64(len(points))))
	return fit, nil
}

// leastSquaresOnes solves min ‖A·x − 1‖ for the rows of A (n × m, m ≤ 3)
// by modified Gram–Schmidt with a second pass (QR), not the normal
// equations, whose squared condition would lose the digits of columns as
// far apart as 1 and N². It reports false when the columns are
// dependent.
func leastSquaresOnes(rows [][]float64) ([]float64, bool) {
	n := len(rows)
	if n == 0 {
		return nil, false
	}
	m := len(rows[0])
	q := make([][]float64, m) // columns
	for j := range q {
		q[j] = make([]float64, n)
		for i := range rows {
			q[j][i] = rows[i][j]
		}
	}
	dot := func(x, y []float64) float64 {
		s := 0.0
		for i := range x {
			s += x[i] * y[i]
		}
		return s
	}
	r := make([][]float64, m)
	for j := range r {
		r[j] = make([]float64, m)
	}
	for j := 0; j < m; j++ {
		norm0 := math.Sqrt(dot(q[j], q[j]))
		for pass := 0; pass < 2; pass++ {
			for k := 0; k < j; k++ {
				d := dot(q[k], q[j])
				r[k][j] += d
				for i := range q[j] {
					q[j][i] -= d * q[k][i]
				}
			}
		}
		norm := math.Sqrt(dot(q[j], q[j]))
		if !(norm > 1e-12*norm0) {
			return nil, false
		}
		r[j][j] = norm
		for i := range q[j] {
			q[j][i] /= norm
		}
	}
	// R·x = Qᵀ·1, back substitution.
	x := make([]float64, m)
	for j := m - 1; j >= 0; j-- {
		s := 0.0
		for i := range q[j] {
			s += q[j][i]
		}
		for k := j + 1; k < m; k++ {
			s -= r[j][k] * x[k]
		}
		x[j] = s / r[j][j]
	}
	return x, true
}
