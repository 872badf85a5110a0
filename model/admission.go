package model

import "math"

// Admission is the admission limit: how many requests may wait so that the
// last one admitted still finishes within the latency budget,
// limit = workers × (budget − service) ÷ service.
type Admission struct {
	Workers   Num `json:"workers"`
	BudgetMS  Num `json:"budget_ms"`
	ServiceMS Num `json:"service_ms"`
	// Feasible is false when the budget does not exceed the service time:
	// then no queue fits, Exact, Rounded and WorstMS are NaN (null in JSON)
	// and Message says so.
	Feasible bool `json:"feasible"`
	Exact    Num  `json:"exact"`   // the formula's value
	Rounded  Num  `json:"rounded"` // the whole number a config takes: rounded down, at least 1
	// WorstMS is the time in system of the last request admitted under the
	// rounded limit: Rounded × service ÷ workers of waiting, then its own
	// service. It is within the budget, except when the formula gives less
	// than 1 and the limit is 1 all the same.
	WorstMS  Num      `json:"worst_ms"`
	OverMS   Num      `json:"over_ms"` // WorstMS − budget when positive, else 0
	Steps    []string `json:"steps"`   // the working, one line each
	Message  string   `json:"message,omitempty"`
	Sentence string   `json:"sentence"`
}

// RoundLimit is the rounding rule for an admission limit: round down, so
// the last request admitted still finishes within the budget (rounding up
// would admit one that cannot), and at least 1, because LIMIT=0 means "no
// limit" to the lab and must never come out of a formula that wanted a
// small queue. The lessons use the same rule.
func RoundLimit(exact float64) float64 {
	return math.Max(1, math.Floor(exact+1e-9))
}

// AdmissionLimit computes the admission limit with its steps. Inputs are
// validated by the caller (workers ≥ 1, service > 0).
func AdmissionLimit(workers, budgetMS, serviceMS float64) Admission {
	nan := Num(math.NaN())
	r := Admission{Workers: Num(workers), BudgetMS: Num(budgetMS), ServiceMS: Num(serviceMS), Exact: nan, Rounded: nan, WorstMS: nan, OverMS: nan}
	spare := budgetMS - serviceMS
	r.Steps = []string{"budget − service = " + Format(budgetMS) + " − " + Format(serviceMS) + " = " + Format(spare) + " ms a request can spend waiting"}
	if spare <= 0 {
		r.Message = "A " + Format(budgetMS) + " ms budget leaves no room to wait before a " + Format(serviceMS) +
			" ms service: any request that waits at all is late, so no queue fits. Lengthen the budget or shorten the service."
		r.Steps = append(r.Steps, "nothing is left to wait in, so no queue fits")
		r.Sentence = r.Message
		return r
	}
	r.Feasible = true
	per := spare / serviceMS
	exact := workers * spare / serviceMS
	rounded := RoundLimit(exact)
	wait := rounded * serviceMS / workers
	worst := wait + serviceMS
	// Over budget counts only beyond floating-point noise (1e-9 of the budget).
	over := worst - budgetMS
	if over <= 1e-9*budgetMS {
		over = 0
	}
	r.Exact, r.Rounded, r.WorstMS, r.OverMS = Num(exact), Num(rounded), Num(worst), Num(over)
	w := Format(workers)
	rs := Format(rounded)
	check := "within budget"
	if over > 0 {
		check = Format(over) + " ms over budget"
	}
	r.Steps = append(r.Steps,
		Format(spare)+" ÷ "+Format(serviceMS)+" = "+Format(per)+" service times fit in that wait",
		"× "+w+" "+plural(w, "worker", "workers")+" = "+Format(exact)+" requests can wait ahead of a new one",
		"round down, so the last one admitted is within budget (at least 1): limit "+rs,
		"check: with "+rs+" waiting, the last one admitted waits "+rs+" × "+Format(serviceMS)+" ÷ "+w+" = "+Format(wait)+
			" ms and finishes at "+Format(worst)+" ms, "+check,
	)
	r.Sentence = "With " + w + " " + plural(w, "worker", "workers") + ", a " + Format(budgetMS) + " ms budget and " + Format(serviceMS) +
		" ms of service, queue at most " + rs + " " + plural(rs, "request", "requests") + " (the formula gives " + Format(exact) + ")."
	return r
}
