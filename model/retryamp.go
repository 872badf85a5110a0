package model

import "math"

// RetryCurveSteps is the retry curve's grid: p = i ÷ RetryCurveSteps for
// i = 0 … RetryCurveSteps.
const RetryCurveSteps = 100

// Retry is a client's retries against a service whose attempts fail
// independently with chance P: each request sends its first attempt and
// retries a failed one up to Retries times, so it sends 1 + p + … + p^r
// attempts on average; a retry budget (a share of first attempts, as
// package retry's budget) caps the retries at Budget a request. The load
// on the service is the offered utilisation times the attempts (the
// package doc has the formulas, assumptions and omissions).
type Retry struct {
	P           Num `json:"p"`
	Retries     Num `json:"retries"`
	Budget      Num `json:"budget"`      // 0: no budget
	Utilisation Num `json:"utilisation"` // the first attempts' load, a share of capacity
	// Unbudgeted is 1 + p + … + p^r: the attempts a request sends with no
	// budget (r + 1 at p = 1).
	Unbudgeted Num `json:"unbudgeted"`
	// Attempts is what a request sends: Unbudgeted, held to 1 + Budget
	// when there is a budget. Capped is set when the budget holds it.
	Attempts Num  `json:"attempts"`
	Capped   bool `json:"capped"`
	// LoadPct is 100 × utilisation × attempts: the load on the service as
	// a percentage of its capacity. Over is set when it passes 100.
	LoadPct Num  `json:"load_pct"`
	Over    bool `json:"over"`
	// CurveP, CurveUnbudgeted and CurveAttempts are the attempts against
	// p from 0 to 1 (RetryCurveSteps + 1 points) for these retries,
	// without a budget and with this one (the same when there is none).
	CurveP          []Num  `json:"curve_p"`
	CurveUnbudgeted []Num  `json:"curve_unbudgeted"`
	CurveAttempts   []Num  `json:"curve_attempts"`
	Sentence        string `json:"sentence"`
}

// RetryAttempts is 1 + p + … + p^r, summed term by term (r is at most
// 10), so p = 1 needs no case of its own and p near 1 loses nothing to
// (1 − p^(r+1)) ÷ (1 − p).
func RetryAttempts(p float64, r int) float64 {
	a, term := 0.0, 1.0
	for k := 0; k <= r; k++ {
		a += term
		term *= p
	}
	return a
}

// budgeted is the attempts with a budget b: at most 1 + b, none when b = 0.
func budgeted(unbudgeted, b float64) float64 {
	if b > 0 {
		return math.Min(unbudgeted, 1+b)
	}
	return unbudgeted
}

// powerSeries writes 1 + p + … + p^r for a sentence, with superscripts.
func powerSeries(r int) string {
	sup := func(n int) string {
		digits := []string{"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"}
		if n >= 10 {
			return digits[n/10] + digits[n%10]
		}
		return digits[n]
	}
	switch r {
	case 0:
		return "1"
	case 1:
		return "1 + p"
	case 2:
		return "1 + p + p²"
	case 3:
		return "1 + p + p² + p³"
	}
	return "1 + p + … + p" + sup(r)
}

// RetryAmplification computes the retry model. Inputs are validated by
// the caller (p and budget 0 to 1, retries a whole number 0 to 10,
// utilisation 0 to 2).
func RetryAmplification(p, retries, budget, utilisation float64) Retry {
	r := int(retries)
	res := Retry{P: Num(p), Retries: Num(retries), Budget: Num(budget), Utilisation: Num(utilisation)}
	un := RetryAttempts(p, r)
	att := budgeted(un, budget)
	load := 100 * utilisation * att
	res.Unbudgeted, res.Attempts, res.LoadPct = Num(un), Num(att), Num(load)
	res.Capped = att < un*(1-1e-12)
	res.Over = load > 100*(1+1e-12)
	for i := 0; i <= RetryCurveSteps; i++ {
		x := float64(i) / RetryCurveSteps
		u := RetryAttempts(x, r)
		res.CurveP = append(res.CurveP, Num(x))
		res.CurveUnbudgeted = append(res.CurveUnbudgeted, Num(u))
		res.CurveAttempts = append(res.CurveAttempts, Num(budgeted(u, budget)))
	}

	F := Format
	rs := F(retries)
	s := "Each attempt fails with chance " + F(p) + " and a failed one is retried up to " + rs + " " + plural(rs, "time", "times") + ": "
	switch {
	case r == 0:
		s = "Each attempt fails with chance " + F(p) + " and none is retried: a request sends 1 attempt."
	case budget > 0 && res.Capped:
		s += "without a budget a request would send " + about(un) + F(un) + " attempts (" + powerSeries(r) + "); the retry budget of " + F(budget) +
			" holds it to " + about(att) + F(att) + "."
	case budget > 0:
		s += "a request sends " + about(un) + F(un) + " " + plural(F(un), "attempt", "attempts") + " (" + powerSeries(r) + "), within the retry budget of " + F(budget) + "."
	default:
		s += "a request sends " + about(un) + F(un) + " " + plural(F(un), "attempt", "attempts") + " (" + powerSeries(r) + ")."
	}
	s += " Offered " + F(100*utilisation) + "% of its capacity in first attempts, the service gets " + about(load) + F(load) + "% of it"
	switch {
	case res.Over && utilisation > 1:
		s += ": over its capacity, as the first attempts alone are."
	case res.Over:
		s += ": over its capacity, which the first attempts alone are not."
	default:
		s += ": within its capacity."
	}
	res.Sentence = s
	return res
}
