package model

import (
	"math"
	"slices"
)

// Method names of the variability-wait widget: which formula gave the
// wait, and so whether it is exact.
const (
	// MethodPK is Pollaczek–Khinchine: one server, Poisson arrivals, any
	// service-time distribution (M/G/1). Exact.
	MethodPK = "pollaczek-khinchine"
	// MethodErlangC is M/M/c: Poisson arrivals, exponential service,
	// c > 1 servers. Exact.
	MethodErlangC = "erlang-c"
	// MethodDeterministic is evenly spaced arrivals and constant service
	// times (D/D/c) below capacity: no request waits. Exact, and what
	// Kingman's formula gives too.
	MethodDeterministic = "deterministic"
	// MethodKingman is Kingman's approximation for one server (G/G/1).
	MethodKingman = "kingman"
	// MethodAllenCunneen is Kingman's scaling of the M/M/c wait for c > 1
	// servers (G/G/c), after Allen and Cunneen. An approximation.
	MethodAllenCunneen = "allen-cunneen"
)

// WaitCurve is the mean wait in queue against utilisation (Variability's
// CurveRho) for one service-time variability cs².
type WaitCurve struct {
	ServiceSCV Num   `json:"service_scv"`
	WaitMS     []Num `json:"wait_ms"`
	Chosen     bool  `json:"chosen"` // the learner's cs²
}

// Variability is the mean wait in queue of c servers at utilisation ρ
// when the gaps between arrivals and the service times vary: their
// squared coefficients of variation (variance ÷ mean²) ca² and cs², 1
// for Poisson arrivals and exponential service, 0 when constant. With ca²
// = 1 and one server it is Pollaczek–Khinchine's formula, exact; with ca²
// = cs² = 1 the M/M/c queue's, exact; else Kingman's approximation,
// (ca² + cs²) ÷ 2 times the M/M/c wait (the package doc has the formulas,
// assumptions and omissions).
type Variability struct {
	Servers     Num `json:"servers"`
	ServiceMS   Num `json:"service_ms"` // mean service time S
	Utilisation Num `json:"utilisation"`
	ArrivalSCV  Num `json:"arrival_scv"` // ca²
	ServiceSCV  Num `json:"service_scv"` // cs²
	// Arrivals is the rate that makes the utilisation, ρ × c × 1000 ÷ S a
	// second.
	Arrivals Num `json:"arrivals"`
	// Method names the formula (MethodPK, MethodErlangC,
	// MethodDeterministic, MethodKingman, MethodAllenCunneen); Exact is
	// set for the first three.
	Method string `json:"method"`
	Exact  bool   `json:"exact"`
	// MMcWaitMS is the M/M/c wait at this utilisation, C ÷ θ from Erlang C;
	// MeanWaitMS is (ca² + cs²) ÷ 2 times it, MeanResponseMS that plus S.
	MMcWaitMS      Num `json:"mmc_wait_ms"`
	MeanWaitMS     Num `json:"mean_wait_ms"`
	MeanResponseMS Num `json:"mean_response_ms"`
	// ConstantWaitMS is the wait with constant service times (cs² = 0)
	// and the same arrivals; WaitRatio is MeanWaitMS ÷ it, (ca² + cs²) ÷
	// ca², the same at every utilisation: +Inf when only the service
	// times vary (ca² = 0 < cs²), NaN when nothing does.
	ConstantWaitMS Num `json:"constant_wait_ms"`
	WaitRatio      Num `json:"wait_ratio"`
	// CurveRho is utilisation 0, 0.01, … 0.95 (CurveSteps, CurveLast);
	// Curves the mean wait over it for cs² = 0, 1, 2 and the learner's,
	// in order of cs², for the learner's servers, S and ca².
	CurveRho []Num       `json:"curve_rho"`
	Curves   []WaitCurve `json:"curves"`
	Sentence string      `json:"sentence"`
}

// VariabilityWait computes the variability-wait model. Inputs are
// validated by the caller (servers a whole number 1 to 64, service time
// above 0, utilisation 0 to 0.99, both SCVs 0 to 25).
func VariabilityWait(servers, serviceMS, rho, ca2, cs2 float64) Variability {
	q := mmc{c: int(servers), s: serviceMS}
	v := Variability{Servers: Num(servers), ServiceMS: Num(serviceMS), Utilisation: Num(rho), ArrivalSCV: Num(ca2), ServiceSCV: Num(cs2),
		Arrivals: Num(rho * servers * 1000 / serviceMS)}
	switch {
	case servers == 1 && ca2 == 1:
		v.Method, v.Exact = MethodPK, true
	case ca2 == 1 && cs2 == 1:
		v.Method, v.Exact = MethodErlangC, true
	case ca2 == 0 && cs2 == 0:
		v.Method, v.Exact = MethodDeterministic, true
	case servers == 1:
		v.Method = MethodKingman
	default:
		v.Method = MethodAllenCunneen
	}
	mmcWait := q.meanWait(rho)
	wait := (ca2 + cs2) / 2 * mmcWait
	constant := ca2 / 2 * mmcWait
	v.MMcWaitMS, v.MeanWaitMS, v.MeanResponseMS, v.ConstantWaitMS = Num(mmcWait), Num(wait), Num(wait+serviceMS), Num(constant)
	switch {
	case ca2 > 0:
		v.WaitRatio = Num((ca2 + cs2) / ca2)
	case cs2 > 0:
		v.WaitRatio = Num(math.Inf(1))
	default:
		v.WaitRatio = Num(math.NaN())
	}
	// The curves always drawn: constant service (0), exponential (1) and
	// twice that (2); the learner's own is added when it is none of them.
	family := []float64{0, 1, 2}
	if !slices.Contains(family, cs2) {
		family = append(family, cs2)
		slices.Sort(family)
	}
	base := make([]float64, 0, CurveLast+1)
	for i := 0; i <= CurveLast; i++ {
		r := float64(i) / CurveSteps
		v.CurveRho = append(v.CurveRho, Num(r))
		base = append(base, q.meanWait(r))
	}
	for _, s := range family {
		c := WaitCurve{ServiceSCV: Num(s), Chosen: s == cs2}
		for _, w := range base {
			c.WaitMS = append(c.WaitMS, Num((ca2+s)/2*w))
		}
		v.Curves = append(v.Curves, c)
	}
	v.Sentence = variabilitySentence(v)
	return v
}

// variabilitySentence reads the variability-wait result back: the load,
// the wait and the response time, which formula gave them and whether it
// is exact, and what the service times' variability does to the wait.
func variabilitySentence(v Variability) string {
	F := Format
	c, s := F(float64(v.Servers)), F(float64(v.ServiceMS))
	ca2, cs2 := float64(v.ArrivalSCV), float64(v.ServiceSCV)
	lam := float64(v.Arrivals)
	txt := c + " " + plural(c, "server", "servers") + " taking " + s + " ms on average, " + F(100*float64(v.Utilisation)) + "% busy (" +
		about(lam) + F(lam) + " " + plural(F(lam), "request", "requests") + " a second)"
	if ca2 == 1 {
		txt += ", with Poisson arrivals"
	} else {
		txt += ", with arrivals of variability ca² = " + F(ca2)
	}
	switch cs2 {
	case 0:
		txt += " and constant service times"
	case 1:
		txt += " and exponential service times (cs² = 1)"
	default:
		txt += " and service times of variability cs² = " + F(cs2)
	}
	if v.Utilisation == 0 {
		return txt + ": no request waits; each takes its " + s + " ms of service."
	}
	w, r := float64(v.MeanWaitMS), float64(v.MeanResponseMS)
	txt += ": a request waits " + about(w) + F(w) + " ms on average before its service and spends " + about(r) + F(r) + " ms in all."
	mw := float64(v.MMcWaitMS)
	mmcName := "M/M/" + c
	switch v.Method {
	case MethodPK:
		txt += " That is Pollaczek–Khinchine's formula, exact for one server with Poisson arrivals: ρ·S·(1 + cs²) ÷ (2(1 − ρ))."
	case MethodErlangC:
		txt += " That is the " + mmcName + " queue's wait from Erlang C, exact for Poisson arrivals and exponential service times."
	case MethodDeterministic:
		return txt + " With evenly spaced arrivals and constant service times no request ever waits: each finds a server free."
	case MethodKingman:
		txt += " That is Kingman's approximation, not an exact result: (ca² + cs²) ÷ 2 = " + F((ca2+cs2)/2) + " times the M/M/1 queue's wait, " +
			about(mw) + F(mw) + " ms."
	default:
		txt += " That is Kingman's approximation (Allen and Cunneen's, for several servers), not an exact result: (ca² + cs²) ÷ 2 = " + F((ca2+cs2)/2) +
			" times the " + mmcName + " queue's wait, " + about(mw) + F(mw) + " ms."
	}
	cw, ratio := float64(v.ConstantWaitMS), float64(v.WaitRatio)
	switch {
	case cs2 == 0:
		txt += " The service times are constant here: any variability in them would add to the wait."
	case ca2 == 0:
		txt += " With constant service times, as well as evenly spaced arrivals, no request would wait: all of this wait comes from the service times' variability."
	default:
		txt += " With constant service times it would wait " + about(cw) + F(cw) + " ms: their variability makes the wait " + about(ratio) + F(ratio) +
			" times as long at the same load."
	}
	return txt
}
