package model

import "math"

// Scaling is capacity that lands late: demand λ a second against a
// capacity μ1 from t = 0, and a capacity μ2 from the landing, L seconds
// on. A fluid, first-come-first-served queue holds what is not served:
// it builds at λ − μ1 until the landing and drains at μ2 − λ after it
// (the package doc has the formulas, assumptions and omissions).
type Scaling struct {
	Demand         Num `json:"demand"`          // λ, per second
	CapacityBefore Num `json:"capacity_before"` // μ1, per second
	CapacityAfter  Num `json:"capacity_after"`  // μ2, per second
	LagS           Num `json:"lag_s"`           // L
	TimeoutMS      Num `json:"timeout_ms"`      // the callers' timeout; 0: none
	// Backlog is what waits at the landing: max(0, λ − μ1) × L requests.
	Backlog Num `json:"backlog"`
	// GrowthAfter is λ − μ2 when the demand passes the new capacity, else
	// 0: how fast the backlog grows after the landing.
	GrowthAfter Num `json:"growth_after"`
	// Drains is set when the backlog is ever gone: μ2 > λ, or nothing
	// waiting and μ2 = λ. DrainS is how long after the landing, B ÷ (μ2 −
	// λ), and DrainedAtS the moment, L + DrainS; NaN when it never drains.
	Drains     bool `json:"drains"`
	DrainS     Num  `json:"drain_s"`
	DrainedAtS Num  `json:"drained_at_s"`
	// LandingWaitMS is the wait of a request arriving at the landing: the
	// backlog ÷ μ2.
	LandingWaitMS Num `json:"landing_wait_ms"`
	// WorstWaitMS is the longest wait, B ÷ λ, of the request arriving at
	// PeakAtS = μ1 × L ÷ λ: the last one that μ1 serves by the landing
	// (longer than LandingWaitMS whenever μ2 > λ). 0 when nothing waits;
	// NaN when waits grow without end (μ2 < λ), and then PeakAtS too.
	WorstWaitMS Num `json:"worst_wait_ms"`
	PeakAtS     Num `json:"peak_at_s"`
	// LateFromS and LateUntilS bound the arrivals that wait past the
	// timeout; LateS is how long that is, until − from. With no wait past
	// it LateS is 0 and both bounds NaN; with no end LateUntilS and LateS
	// are NaN; with no timeout all three are NaN.
	LateFromS  Num    `json:"late_from_s"`
	LateUntilS Num    `json:"late_until_s"`
	LateS      Num    `json:"late_s"`
	Sentence   string `json:"sentence"`
}

// waitText writes a wait given in ms for a sentence: in seconds from 1 s
// up, in ms below, with "about" when the number shown is rounded.
func waitText(ms float64) string {
	if ms >= 1000 {
		return about(ms/1000) + Format(ms/1000) + " s"
	}
	return about(ms) + Format(ms) + " ms"
}

// LateScaling computes the late-scaling model. Inputs are validated by
// the caller (every rate ≥ 0, the capacity after ≥ 1, lag and timeout ≥ 0).
func LateScaling(demand, before, after, lagS, timeoutMS float64) Scaling {
	nan := Num(math.NaN())
	lam, mu1, mu2, lag := demand, before, after, lagS
	s := Scaling{Demand: Num(lam), CapacityBefore: Num(mu1), CapacityAfter: Num(mu2), LagS: Num(lag), TimeoutMS: Num(timeoutMS),
		DrainS: nan, DrainedAtS: nan, WorstWaitMS: nan, PeakAtS: nan, LateFromS: nan, LateUntilS: nan, LateS: nan}
	rise := math.Max(0, lam-mu1)
	b := rise * lag
	net := mu2 - lam
	s.Backlog, s.GrowthAfter = Num(b), Num(math.Max(0, -net))
	s.LandingWaitMS = Num(1000 * b / mu2)
	drain := math.NaN()
	switch {
	case net > 0:
		drain = b / net
	case net == 0 && b == 0:
		drain = 0
	}
	if !math.IsNaN(drain) {
		s.Drains, s.DrainS, s.DrainedAtS = true, Num(drain), Num(lag+drain)
	}
	// A request arriving at t waits until the work ahead of it is done:
	// before the landing μ1 serves the queue, so waits rise from 0 to B ÷
	// λ for the request arriving at μ1 × L ÷ λ, which μ1 serves just at
	// the landing; from there they fall by (μ2 − λ) ÷ μ2 a second of
	// arrival, to 0 when the backlog is gone.
	switch {
	case net < 0:
	case b > 0:
		s.WorstWaitMS, s.PeakAtS = Num(1000*b/lam), Num(mu1*lag/lam)
	default:
		s.WorstWaitMS = 0
	}
	if timeoutMS > 0 {
		t := timeoutMS / 1000
		switch {
		case net >= 0 && float64(s.WorstWaitMS) <= timeoutMS:
			s.LateS = 0
		case b > 0:
			// Rising: (λ − μ1) × t ÷ μ1 passes T at T × μ1 ÷ (λ − μ1),
			// or, when the peak B ÷ λ is under T (μ2 < λ), the wait
			// passes it later, growing by (λ − μ2) ÷ μ2 from the peak;
			// falling: (drained − t) × (μ2 − λ) ÷ μ2 comes back to T at
			// drained − T × μ2 ÷ (μ2 − λ).
			peak, peakAt := b/lam, mu1*lag/lam
			if t < peak {
				s.LateFromS = Num(t * mu1 / rise)
			} else {
				s.LateFromS = Num(peakAt + (t-peak)*mu2/(-net))
			}
			if net > 0 {
				until := lag + drain - t*mu2/net
				s.LateUntilS, s.LateS = Num(until), Num(math.Max(0, until-float64(s.LateFromS)))
			}
		default:
			// Nothing waits at the landing, but μ2 < λ: waits grow by
			// (λ − μ2) ÷ μ2 a second of arrival from it.
			s.LateFromS = Num(lag + t*mu2/(-net))
		}
	}

	F := Format
	var txt string
	if b > 0 {
		txt = "Demand of " + F(lam) + " a second against " + F(mu1) + " a second of capacity builds a backlog of " + about(b) + F(b) +
			" requests in the " + F(lag) + " s before the new capacity lands."
		switch {
		case net > 0:
			txt += " At " + F(mu2) + " a second it drains " + F(net) + " a second and is gone " + about(drain) + F(drain) + " s after the landing (" +
				about(lag+drain) + F(lag+drain) + " s from the start). A request arriving at the landing waits " + waitText(float64(s.LandingWaitMS)) +
				"; the longest wait, " + waitText(float64(s.WorstWaitMS)) + ", is for one arriving at " + about(float64(s.PeakAtS)) + F(float64(s.PeakAtS)) +
				" s, before the landing."
		case net == 0:
			txt += " At " + F(mu2) + " a second the new capacity only matches the demand: the backlog never drains, and every request arriving from " +
				about(float64(s.PeakAtS)) + F(float64(s.PeakAtS)) + " s on waits " + waitText(float64(s.WorstWaitMS)) + "."
		default:
			txt += " At " + F(mu2) + " a second the new capacity is still below the demand: the backlog grows by " + F(-net) +
				" a second after the landing and never drains, and waits grow without end."
		}
	} else {
		if rise == 0 {
			txt = "Demand of " + F(lam) + " a second is within the " + F(mu1) + " a second of capacity before the landing: no backlog builds"
		} else {
			txt = "The new capacity lands at once: no backlog builds"
		}
		if net >= 0 {
			txt += " and no request waits."
		} else {
			txt += ", but at " + F(mu2) + " a second the capacity after the landing is below the demand: from the landing at " + F(lag) +
				" s the backlog grows by " + F(-net) + " a second and waits grow without end."
		}
	}
	if timeoutMS > 0 {
		tt := waitText(timeoutMS)
		switch {
		case float64(s.LateS) == 0 && float64(s.WorstWaitMS) > 0:
			txt += " No wait passes the " + tt + " timeout."
		case s.LateS.Finite() && float64(s.LateS) > 0:
			from, until, late := float64(s.LateFromS), float64(s.LateUntilS), float64(s.LateS)
			txt += " With a " + tt + " timeout, requests arriving from " + about(from) + F(from) + " s to " + about(until) + F(until) +
				" s wait past it: " + about(late) + F(late) + " s of arrivals."
		case s.LateFromS.Finite():
			from := float64(s.LateFromS)
			txt += " With a " + tt + " timeout, every request arriving from " + about(from) + F(from) + " s on waits past it."
		}
	}
	s.Sentence = txt
	return s
}

// BacklogAt is what waits t seconds from the start: (λ − μ1) × t until
// the landing, then B − (μ2 − λ) × (t − L), never below 0.
func (s Scaling) BacklogAt(t float64) float64 {
	lam, mu1, mu2, lag := float64(s.Demand), float64(s.CapacityBefore), float64(s.CapacityAfter), float64(s.LagS)
	if t <= lag {
		return math.Max(0, lam-mu1) * t
	}
	return math.Max(0, float64(s.Backlog)+(lam-mu2)*(t-lag))
}

// WaitAtS is the wait, in seconds, of the request arriving t seconds from
// the start: (λ − μ1) × t ÷ μ1 up to μ1 × L ÷ λ (B ÷ λ there), then
// changing by (λ − μ2) ÷ μ2 a second of arrival, never below 0. With
// nothing waiting at the landing it is 0 until the landing, then grows
// by (λ − μ2) ÷ μ2 when μ2 < λ.
func (s Scaling) WaitAtS(t float64) float64 {
	lam, mu1, mu2, lag := float64(s.Demand), float64(s.CapacityBefore), float64(s.CapacityAfter), float64(s.LagS)
	b := float64(s.Backlog)
	if b == 0 {
		if t <= lag {
			return 0
		}
		return math.Max(0, (t-lag)*(lam-mu2)/mu2)
	}
	peakAt := mu1 * lag / lam
	if t <= peakAt {
		return (lam - mu1) * t / mu1
	}
	return math.Max(0, b/lam+(t-peakAt)*(lam-mu2)/mu2)
}
