package model

import (
	"fmt"
	"math"
)

// Result is one widget's answer, ready for JSON: the inputs it used, every
// finite quantity by name (what goals are checked against), the read-back
// sentence and the kind's own detail (exactly one of the eleven is set).
type Result struct {
	Kind     string             `json:"kind"`
	Solve    string             `json:"solve,omitempty"`
	Values   map[string]float64 `json:"values"` // inputs after defaults
	Sentence string             `json:"sentence"`
	// Quantities holds every finite input and output by name: the
	// parameters (for littles-law the implied one replaced by its computed
	// value) and the outputs listed in the package doc. A quantity with no
	// finite value is left out.
	Quantities  map[string]float64 `json:"quantities"`
	LittlesLaw  *LittlesLaw        `json:"littles_law,omitempty"`
	Admission   *Admission         `json:"admission_limit,omitempty"`
	Ceilings    *Ceilings          `json:"two_ceilings,omitempty"`
	Queue       *Queue             `json:"queue_curve,omitempty"`
	Quota       *Quota             `json:"quota,omitempty"`
	AIMD        *AIMD              `json:"aimd,omitempty"`
	Retry       *Retry             `json:"retry_amplification,omitempty"`
	Scaling     *Scaling           `json:"late_scaling,omitempty"`
	Variability *Variability       `json:"variability_wait,omitempty"`
	Fanout      *Fanout            `json:"fanout_tail,omitempty"`
	USL         *USL               `json:"usl,omitempty"`
}

// Compute validates values for a widget kind (missing ones take the spec's
// default), works out the model and returns its Result. solve names the
// implied quantity for littles-law ("" means inflight) and quota ("" means
// quota) and must be "" for the other kinds. Bad input returns input.FieldErrors naming each parameter.
func Compute(kind string, values map[string]float64, solve string) (Result, error) {
	solve, err := ResolveSolve(kind, solve)
	if err != nil {
		return Result{}, err
	}
	if err := Validate(kind, values); err != nil {
		return Result{}, err
	}
	v := make(map[string]float64)
	for _, p := range Specs()[kind].Params {
		v[p.Name] = p.Default
		if x, ok := values[p.Name]; ok {
			v[p.Name] = x
		}
	}
	res := Result{Kind: kind, Solve: solve, Values: v, Quantities: map[string]float64{}}
	put := func(name string, n Num) {
		if n.Finite() {
			res.Quantities[name] = float64(n)
		}
	}
	switch kind {
	case KindLittlesLaw:
		r := SolveLittlesLaw(v[QArrivals], v[QLatencyMS], v[QInflight], solve)
		res.LittlesLaw, res.Sentence = &r, r.Sentence
		put(QArrivals, r.Arrivals)
		put(QLatencyMS, r.LatencyMS)
		put(QInflight, r.Inflight)
	case KindAdmissionLimit:
		r := AdmissionLimit(v["workers"], v["budget_ms"], v["service_ms"])
		res.Admission, res.Sentence = &r, r.Sentence
		put("workers", r.Workers)
		put("budget_ms", r.BudgetMS)
		put("service_ms", r.ServiceMS)
		put("limit", r.Exact)
		put("rounded_limit", r.Rounded)
		put("worst_ms", r.WorstMS)
	case KindTwoCeilings:
		r := TwoCeilings(v["workers"], v["cpus"], v["spin_ms"], v["wait_ms"])
		res.Ceilings, res.Sentence = &r, r.Sentence
		put("workers", r.Workers)
		put("cpus", r.CPUs)
		put("spin_ms", r.SpinMS)
		put("wait_ms", r.WaitMS)
		put("worker_ceiling", r.WorkerCeiling)
		put("processor_ceiling", r.ProcessorCeiling)
		put("ceiling", r.Ceiling)
		put("speedup_cap", r.SpeedupCap)
	case KindQueueCurve:
		r := QueueCurve(v["servers"], v["service_ms"], v["arrivals"])
		res.Queue, res.Sentence = &r, r.Sentence
		put("servers", r.Servers)
		put("service_ms", r.ServiceMS)
		put("arrivals", r.Arrivals)
		put("capacity", r.Capacity)
		put("utilisation", r.At.Utilisation)
		put("prob_wait", r.At.ProbWait)
		put("mean_in_system", r.At.MeanInSystem)
		put("mean_queue", r.At.MeanQueue)
		put("mean_wait_ms", r.At.MeanWaitMS)
		put("mean_response_ms", r.At.MeanResponseMS)
		put("p50_response_ms", r.At.P50ResponseMS)
		put("p99_response_ms", r.At.P99ResponseMS)
		put("knee_arrivals", r.Knee.Arrivals)
		put("separate_prob_wait", r.Separate.ProbWait)
		put("separate_mean_wait_ms", r.Separate.MeanWaitMS)
		put("separate_mean_response_ms", r.Separate.MeanResponseMS)
		put("separate_p99_response_ms", r.Separate.P99ResponseMS)
	case KindQuota:
		r := QuotaRelease(v["arrivals"], v["latency_ms"], v["quota"], v["release_ms"], v["workers"], v["timeout_ms"], solve)
		res.Quota, res.Sentence = &r, r.Sentence
		for _, q := range []struct {
			name string
			n    Num
		}{{"arrivals", r.Arrivals}, {"latency_ms", r.LatencyMS}, {"quota", r.Quota}, {"release_ms", r.ReleaseMS}, {"workers", r.Workers},
			{"timeout_ms", r.TimeoutMS}, {"capacity_before", r.CapacityBefore}, {"capacity_after", r.CapacityAfter}, {"quota_rate", r.QuotaRate},
			{"with_quota_before", r.WithQuotaBefore}, {"with_quota_after", r.WithQuotaAfter}, {"refused_after", r.RefusedAfter},
			{"quota_latency_ms", r.QuotaLatencyMS}, {"without_quota_after", r.WithoutQuotaAfter}, {"queue_growth", r.QueueGrowth},
			{"late_after_s", r.LateAfterS}} {
			put(q.name, q.n)
		}
	case KindAIMD:
		r := AIMDLimit(v["capacity_before"], v["capacity_after"], v["step_s"], v["increase"], v["backoff"], v["interval_ms"], v["floor"], v["duration_s"])
		res.AIMD, res.Sentence = &r, r.Sentence
		for _, p := range Specs()[kind].Params {
			put(p.Name, Num(v[p.Name]))
		}
		put("mean_limit", r.MeanLimit)
		put("delivered_pct", r.DeliveredPct)
		put("min_after", r.MinAfter)
		put("max_after", r.MaxAfter)
		put("settle_s", r.SettleS)
	case KindRetry:
		r := RetryAmplification(v["p"], v["retries"], v["budget"], v["utilisation"])
		res.Retry, res.Sentence = &r, r.Sentence
		for _, p := range Specs()[kind].Params {
			put(p.Name, Num(v[p.Name]))
		}
		put("attempts", r.Attempts)
		put("attempts_no_budget", r.Unbudgeted)
		put("load_pct", r.LoadPct)
	case KindLateScaling:
		r := LateScaling(v["demand"], v["capacity_before"], v["capacity_after"], v["lag_s"], v["timeout_ms"])
		res.Scaling, res.Sentence = &r, r.Sentence
		for _, p := range Specs()[kind].Params {
			put(p.Name, Num(v[p.Name]))
		}
		put("backlog", r.Backlog)
		put("drain_s", r.DrainS)
		put("landing_wait_ms", r.LandingWaitMS)
		put("worst_wait_ms", r.WorstWaitMS)
		put("late_s", r.LateS)
	case KindVariability:
		r := VariabilityWait(v["servers"], v["service_ms"], v["utilisation"], v["arrival_scv"], v["service_scv"])
		res.Variability, res.Sentence = &r, r.Sentence
		for _, p := range Specs()[kind].Params {
			put(p.Name, Num(v[p.Name]))
		}
		put("arrivals", r.Arrivals)
		put("mean_wait_ms", r.MeanWaitMS)
		put("mean_response_ms", r.MeanResponseMS)
		put("mmc_wait_ms", r.MMcWaitMS)
		put("constant_wait_ms", r.ConstantWaitMS)
		put("wait_ratio", r.WaitRatio)
	case KindFanout:
		r := FanoutTail(v["fanout"], v["p"], v["percentile"])
		res.Fanout, res.Sentence = &r, r.Sentence
		for _, p := range Specs()[kind].Params {
			put(p.Name, Num(v[p.Name]))
		}
		put("slow_share", r.SlowShare)
		put("median_backend_percentile", r.MedianBackendPercentile)
		put("backend_percentile", r.BackendPercentile)
		put("half_slow_fanout", r.HalfSlowFanout)
	case KindUSL:
		r := UniversalScalability(v["lambda"], v["sigma"], v["kappa"], v["n_max"])
		res.USL, res.Sentence = &r, r.Sentence
		for _, p := range Specs()[kind].Params {
			put(p.Name, Num(v[p.Name]))
		}
		put("peak_n", r.PeakN)
		put("peak_x", r.PeakX)
		put("x_at_max", r.XAtMax)
		put("speedup_at_max", r.SpeedupAtMax)
	default:
		return Result{}, fmt.Errorf("model: kind %q is in Specs but has no formula", kind)
	}
	return res, nil
}

// Target is one condition of a goal: the quantity Param within Tol of Value.
// lessons.Target has the same fields; a lesson converts its own.
type Target struct {
	Param string  `json:"param"`
	Value float64 `json:"value"`
	Tol   float64 `json:"tol"`
	// Find marks a value the goal asks the learner to find (the goal's
	// text says what to look for): what is said of a miss names neither
	// the value nor the way to it.
	Find bool `json:"find,omitempty"`
}

// Miss is one target a goal has not reached yet.
type Miss struct {
	Param   string `json:"param"`
	Want    Num    `json:"want"`
	Tol     Num    `json:"tol"`
	Got     Num    `json:"got"` // NaN (null) when the quantity has no value
	Find    bool   `json:"find,omitempty"`
	Message string `json:"message"`
}

// GoalStatus says whether every target holds, and which do not.
type GoalStatus struct {
	Reached bool   `json:"reached"`
	Misses  []Miss `json:"misses"` // never nil, so JSON has [] not null
}

// GoalReached checks quantities (a Result's Quantities) against every
// target: a target holds when |got − value| ≤ tol + 1e-9 × max(1, |value|);
// the small slack absorbs floating-point noise such as 48 × 0.23 =
// 11.040000000000001. A target whose quantity is missing does not hold.
func GoalReached(quantities map[string]float64, want []Target) GoalStatus {
	st := GoalStatus{Reached: true, Misses: []Miss{}}
	for _, t := range want {
		got, ok := quantities[t.Param]
		if ok && math.Abs(got-t.Value) <= t.Tol+1e-9*math.Max(1, math.Abs(t.Value)) {
			continue
		}
		st.Reached = false
		m := Miss{Param: t.Param, Want: Num(t.Value), Tol: Num(t.Tol), Got: Num(math.NaN()), Find: t.Find}
		switch {
		case t.Find && ok:
			m.Got = Num(got)
			m.Message = t.Param + " is " + Format(got) + "; not yet the value the goal asks you to find."
		case t.Find:
			m.Message = t.Param + " has no value here; the goal asks you to find one."
		case ok:
			m.Got = Num(got)
			m.Message = t.Param + " is " + Format(got) + "; the goal wants " + Format(t.Value) + " ± " + Format(t.Tol) + "."
		default:
			m.Message = t.Param + " has no value here; the goal wants " + Format(t.Value) + " ± " + Format(t.Tol) + "."
		}
		st.Misses = append(st.Misses, m)
	}
	return st
}

// outputs lists each kind's computed quantities, as the package doc names
// them (littles-law has none beyond its parameters; quota's implied one is
// one of its parameters).
func outputs(kind string) []string {
	switch kind {
	case KindAdmissionLimit:
		return []string{"limit", "rounded_limit", "worst_ms"}
	case KindTwoCeilings:
		return []string{"worker_ceiling", "processor_ceiling", "ceiling", "speedup_cap"}
	case KindQueueCurve:
		return []string{"capacity", "utilisation", "prob_wait", "mean_in_system", "mean_queue", "mean_wait_ms",
			"mean_response_ms", "p50_response_ms", "p99_response_ms", "knee_arrivals",
			"separate_prob_wait", "separate_mean_wait_ms", "separate_mean_response_ms", "separate_p99_response_ms"}
	case KindQuota:
		return []string{"capacity_before", "capacity_after", "quota_rate", "with_quota_before", "with_quota_after", "refused_after",
			"quota_latency_ms", "without_quota_after", "queue_growth", "late_after_s"}
	case KindAIMD:
		return []string{"mean_limit", "delivered_pct", "min_after", "max_after", "settle_s"}
	case KindRetry:
		return []string{"attempts", "attempts_no_budget", "load_pct"}
	case KindLateScaling:
		return []string{"backlog", "drain_s", "landing_wait_ms", "worst_wait_ms", "late_s"}
	case KindVariability:
		return []string{"arrivals", "mean_wait_ms", "mean_response_ms", "mmc_wait_ms", "constant_wait_ms", "wait_ratio"}
	case KindFanout:
		return []string{"slow_share", "median_backend_percentile", "backend_percentile", "half_slow_fanout"}
	case KindUSL:
		return []string{"peak_n", "peak_x", "x_at_max", "speedup_at_max"}
	}
	return nil
}

// QuantityNames returns every name Result.Quantities may hold for a kind:
// its parameters, then its outputs. A goal's Target.Param must be one of
// them. It returns nil for an unknown kind.
func QuantityNames(kind string) []string {
	spec, ok := Specs()[kind]
	if !ok {
		return nil
	}
	var names []string
	for _, p := range spec.Params {
		names = append(names, p.Name)
	}
	return append(names, outputs(kind)...)
}
