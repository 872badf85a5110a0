package model

import "math"

// AIMD is an additive-increase, multiplicative-decrease limit against a
// capacity that steps, in discrete time: every interval the limit L is
// compared with the capacity C(t) (the requests the service can hold
// within the deadline); at or under it, L grows by Increase, over it, L
// is cut to max(Floor, L × Backoff), unrounded (package doc).
type AIMD struct {
	CapacityBefore Num `json:"capacity_before"` // C1
	CapacityAfter  Num `json:"capacity_after"`  // C2
	StepS          Num `json:"step_s"`          // when C1 becomes C2
	Increase       Num `json:"increase"`        // a
	Backoff        Num `json:"backoff"`         // b
	IntervalMS     Num `json:"interval_ms"`
	Floor          Num `json:"floor"`
	DurationS      Num `json:"duration_s"`
	// TimeS, Limit and Capacity are the series, one entry an interval:
	// interval k starts at TimeS[k] = k × interval, and holds the limit
	// Limit[k] against the capacity Capacity[k] until the next.
	TimeS    []Num `json:"time_s"`
	Limit    []Num `json:"limit"`
	Capacity []Num `json:"capacity"`
	// Stepped is false when the step is at or after the end: the figures
	// after it are NaN (null) and Message says so.
	Stepped bool `json:"stepped"`
	// MinAfter and MaxAfter are the least and most the limit is from the
	// step on.
	MinAfter Num `json:"min_after"`
	MaxAfter Num `json:"max_after"`
	// TailFromS is where the last half of the time after the step begins:
	// step + (duration − step) ÷ 2. MeanLimit is the limit's mean from
	// there to the end, and DeliveredPct what it lets in within capacity,
	// the mean of min(L, C), as a percentage of C2.
	TailFromS    Num `json:"tail_from_s"`
	MeanLimit    Num `json:"mean_limit"`
	DeliveredPct Num `json:"delivered_pct"`
	// SettleS is the time from the step to the first interval that starts
	// at or under C2 just after a cut made against C2 (from then on each
	// tooth runs from a cut to at most C2 + increase); NaN when that does
	// not happen before the end.
	SettleS Num `json:"settle_s"`
	// Floored is set when the limit is at its floor at some interval from
	// the step on: it collapsed rather than found the capacity.
	Floored  bool   `json:"floored"`
	Message  string `json:"message,omitempty"`
	Sentence string `json:"sentence"`
}

// AIMDLimit runs the AIMD limit for the whole duration. Inputs are
// validated by the caller (interval ≥ 100 ms, duration ≤ 600 s: at most
// 6,000 intervals).
func AIMDLimit(c1, c2, stepS, increase, backoff, intervalMS, floor, durationS float64) AIMD {
	nan := Num(math.NaN())
	r := AIMD{CapacityBefore: Num(c1), CapacityAfter: Num(c2), StepS: Num(stepS), Increase: Num(increase), Backoff: Num(backoff),
		IntervalMS: Num(intervalMS), Floor: Num(floor), DurationS: Num(durationS),
		MinAfter: nan, MaxAfter: nan, TailFromS: nan, MeanLimit: nan, DeliveredPct: nan, SettleS: nan}
	n := int(math.Floor(durationS*1000/intervalMS + 1e-9))
	if n < 1 {
		n = 1
	}
	r.TimeS, r.Limit, r.Capacity = make([]Num, n), make([]Num, n), make([]Num, n)
	const eps = 1e-9
	l := c1 // the limit had found the capacity before the step
	for k := 0; k < n; k++ {
		t := float64(k) * intervalMS / 1000
		c := c1
		if t >= stepS-eps {
			c = c2
		}
		r.TimeS[k], r.Limit[k], r.Capacity[k] = Num(t), Num(l), Num(c)
		if l <= c+eps*math.Max(1, c) {
			l += increase
		} else {
			l = math.Max(floor, l*backoff)
		}
	}
	F := Format
	if stepS >= durationS-eps {
		r.Message = "The step at " + F(stepS) + " s is at or after the end of the " + F(durationS) + " s shown: move it earlier or show longer."
		r.Sentence = r.Message
		return r
	}
	r.Stepped = true
	tail := stepS + (durationS-stepS)/2
	r.TailFromS = Num(tail)
	lo, hi := math.Inf(1), math.Inf(-1)
	var sum, got float64
	var count int
	for k := 0; k < n; k++ {
		t, lk, ck := float64(r.TimeS[k]), float64(r.Limit[k]), float64(r.Capacity[k])
		if t < stepS-eps {
			continue
		}
		lo, hi = math.Min(lo, lk), math.Max(hi, lk)
		if lk <= floor+eps*math.Max(1, floor) {
			r.Floored = true
		}
		if math.IsNaN(float64(r.SettleS)) && k > 0 && float64(r.TimeS[k-1]) >= stepS-eps && lk < float64(r.Limit[k-1]) && lk <= c2+eps*math.Max(1, c2) {
			r.SettleS = Num(t - stepS)
		}
		if t >= tail-eps {
			sum += lk
			got += math.Min(lk, ck)
			count++
		}
	}
	r.MinAfter, r.MaxAfter = Num(lo), Num(hi)
	if count > 0 {
		r.MeanLimit = Num(sum / float64(count))
		r.DeliveredPct = Num(100 * got / float64(count) / c2)
	}
	s := "The capacity steps from " + F(c1) + " to " + F(c2) + " at " + F(stepS) + " s. "
	if settle := float64(r.SettleS); math.IsNaN(settle) {
		s += "The limit has not settled under the new capacity by " + F(durationS) + " s"
	} else {
		s += "The limit settles " + about(settle) + F(settle) + " s after the step"
	}
	s += "; from the step on it runs between " + about(lo) + F(lo) + " and " + about(hi) + F(hi) + "."
	if count > 0 {
		s += " Over the last half after the step its mean is " + about(float64(r.MeanLimit)) + F(float64(r.MeanLimit)) + ", and it lets in " +
			about(float64(r.DeliveredPct)) + F(float64(r.DeliveredPct)) + "% of the new capacity."
	}
	if r.Floored {
		s += " It falls to its floor of " + F(floor) + " on the way: a collapse, not a search."
	}
	r.Sentence = s
	return r
}
