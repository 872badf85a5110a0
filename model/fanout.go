package model

import (
	"math"
	"strconv"
	"strings"
)

// FanoutCurveSteps is how many steps the fan-out curve takes from 0 to its
// end (FanoutCurveEnd); it starts at k = 1.
const FanoutCurveSteps = 100

// Fanout is a request that fans out to k sub-requests at once and is done
// when the last answers: it is slow when any sub-request is, and each is
// slow with chance p, independently. Its percentiles are the backends'
// at a higher rank: its P-th percentile is each backend's P^(1/k)-th (the
// package doc has the formulas, assumptions and omissions).
type Fanout struct {
	Fanout     Num `json:"fanout"`     // k
	P          Num `json:"p"`          // the chance a sub-request is slow
	Percentile Num `json:"percentile"` // P, a share: 0.99 is p99
	// SlowShare is 1 − (1 − p)^k: the share of requests with at least one
	// slow sub-request.
	SlowShare Num `json:"slow_share"`
	// MedianBackendPercentile is 0.5^(1/k): the backends' percentile (a
	// share) that the requests' median sits at. BackendPercentile is
	// P^(1/k): the backends' percentile the requests' P-th needs.
	MedianBackendPercentile Num `json:"median_backend_percentile"`
	BackendPercentile       Num `json:"backend_percentile"`
	// HalfSlowFanout is the least whole k at which half the requests or
	// more are slow: ⌈ln 0.5 ÷ ln(1 − p)⌉, at least 1; NaN when p = 0.
	HalfSlowFanout Num `json:"half_slow_fanout"`
	// CurveK and CurveSlow are the slow share against k from 1 to
	// FanoutCurveEnd(k): 1, then FanoutCurveSteps even steps.
	CurveK    []Num  `json:"curve_k"`
	CurveSlow []Num  `json:"curve_slow"`
	Sentence  string `json:"sentence"`
}

// slowShare is 1 − (1 − p)^k, as −expm1(k·log1p(−p)) so a small p keeps
// its digits (p = 1 gives 1: log1p(−1) is −∞).
func slowShare(p, k float64) float64 {
	if p == 0 {
		return 0
	}
	return -math.Expm1(k * math.Log1p(-p))
}

// FanoutCurveEnd is where the fan-out curve ends for the learner's k: 100
// up to k = 100, else k rounded up to a whole hundred, so the curve
// always reaches the learner's point.
func FanoutCurveEnd(k float64) float64 {
	if k <= 100 {
		return 100
	}
	return 100 * math.Ceil(k/100)
}

// halfSlowFanout is the least whole k ≥ 1 with 1 − (1 − p)^k ≥ 0.5, NaN
// for p = 0. The logarithms' ratio may land a hair either side of a whole
// number, so the candidate is checked against the share itself.
func halfSlowFanout(p float64) float64 {
	if p == 0 {
		return math.NaN()
	}
	if p >= 0.5 {
		return 1
	}
	k := math.Max(1, math.Ceil(math.Log(0.5)/math.Log1p(-p)-1e-9))
	if slowShare(p, k) < 0.5 {
		k++
	}
	return k
}

// PercentileName writes a share below 1 as a percentile's name, with two
// significant digits of the share above it, so it never reads as p100:
// 0.99 is "p99", 0.99309 "p99.31", 0.999996 "p99.9996"; approx is
// "about " when the name is rounded, else "". The rounding (multiply by a power of
// ten built by repeated multiplication, add one half, floor, divide) is
// static/js/modeltail.js's too.
func PercentileName(q float64) (approx, name string) {
	above := 100 * (1 - q)
	d := 0
	for t := above; t < 10 && d < 12; t *= 10 {
		d++
	}
	p := 1.0
	for i := 0; i < d; i++ {
		p *= 10
	}
	r := math.Floor(100*q*p+0.5) / p
	s := strconv.FormatFloat(r, 'f', d, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	}
	if math.Abs(r-100*q) > 1e-9*100*q {
		approx = "about "
	}
	return approx, "p" + s
}

// FanoutTail computes the fan-out model. Inputs are validated by the
// caller (k a whole number 1 to 1000, p 0 to 1, the percentile 0.01 to
// 0.9999).
func FanoutTail(k, p, percentile float64) Fanout {
	f := Fanout{Fanout: Num(k), P: Num(p), Percentile: Num(percentile)}
	slow := slowShare(p, k)
	f.SlowShare = Num(slow)
	f.MedianBackendPercentile = Num(math.Pow(0.5, 1/k))
	f.BackendPercentile = Num(math.Pow(percentile, 1/k))
	f.HalfSlowFanout = Num(halfSlowFanout(p))
	end := FanoutCurveEnd(k)
	f.CurveK, f.CurveSlow = []Num{1}, []Num{Num(slowShare(p, 1))}
	for i := 1; i <= FanoutCurveSteps; i++ {
		x := float64(i) * end / FanoutCurveSteps
		if x > 1 {
			f.CurveK = append(f.CurveK, Num(x))
			f.CurveSlow = append(f.CurveSlow, Num(slowShare(p, x)))
		}
	}

	F := Format
	ks := F(k)
	txt := "A request that fans out to " + ks + " " + plural(ks, "sub-request", "sub-requests") + " at once waits for the slowest"
	switch {
	case p == 0:
		txt += ", but no sub-request is ever slow here, so no request is."
	case k == 1:
		txt += ", its only one: it is slow with the sub-request's own chance, " + F(100*p) + "%."
	default:
		txt += ": it is slow if any of them is. If each is slow with chance " + F(p) + ", " + about(100*slow) + F(100*slow) + "% of requests are slow (1 − (1 − p)^k)."
	}
	med, need := float64(f.MedianBackendPercentile), float64(f.BackendPercentile)
	if k == 1 {
		txt += " Its percentiles are the backend's own."
	} else {
		medAbout, medName := PercentileName(med)
		_, pctName := PercentileName(percentile)
		needAbout, needName := PercentileName(need)
		txt += " The requests' median is " + medAbout + "each backend's " + medName + " (0.5^(1/k)), and their " + pctName +
			" is " + needAbout + "each backend's " + needName + " (" + F(percentile) + "^(1/k))."
	}
	switch h := float64(f.HalfSlowFanout); {
	case p == 0:
	case h == 1:
		txt += " Half the requests or more are slow with a single sub-request."
	default:
		txt += " Half the requests or more are slow from " + F(h) + " sub-requests on."
	}
	f.Sentence = txt
	return f
}
