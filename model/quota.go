package model

import "math"

// Quota is an in-flight quota through a bad release: a client sends
// Arrivals a second to an origin of Workers workers whose response time
// goes from LatencyMS to ReleaseMS at a release. The quota N = X × R (of
// Little's law) is sized before the release; after it, the quota holds the
// client to N ÷ R' a second, within what the origin can serve, and the
// origin keeps up; without it the origin's queue grows whenever X passes
// its new capacity c ÷ R'. Rates are per second, times ms (the package
// doc has the formulas, assumptions and omissions).
type Quota struct {
	Arrivals  Num `json:"arrivals"`
	LatencyMS Num `json:"latency_ms"`
	Quota     Num `json:"quota"`
	ReleaseMS Num `json:"release_ms"`
	Workers   Num `json:"workers"`
	TimeoutMS Num `json:"timeout_ms"` // 0: the callers wait for ever
	// Defined is false when the implied one of quota, arrivals and
	// latency_ms has no value (N = X × R solved with a zero divisor): then
	// every figure that needs it is NaN and Message says why.
	Defined bool `json:"defined"`
	// CapacityBefore and CapacityAfter are what the origin serves at most,
	// c × 1000 ÷ R and c × 1000 ÷ R' a second.
	CapacityBefore Num `json:"capacity_before"`
	CapacityAfter  Num `json:"capacity_after"`
	// QuotaRate is N × 1000 ÷ R', the most the quota lets through after
	// the release.
	QuotaRate Num `json:"quota_rate"`
	// WithQuotaBefore and WithQuotaAfter are what the client gets with the
	// quota: min(X, N ÷ R, c ÷ R) before, min(X, N ÷ R', c ÷ R') after.
	WithQuotaBefore Num `json:"with_quota_before"`
	WithQuotaAfter  Num `json:"with_quota_after"`
	// RefusedAfter is X − WithQuotaAfter: what the quota turns away a
	// second after the release.
	RefusedAfter Num `json:"refused_after"`
	// QuotaLatencyMS is the response time with the quota after the
	// release: R' while the origin has a worker free for each request let
	// in, N × R' ÷ c when the quota lets more in than it has workers.
	QuotaLatencyMS Num `json:"quota_latency_ms"`
	// QuotaLate is set when the callers have a timeout and QuotaLatencyMS
	// passes it: the quota's answers come too late as well.
	QuotaLate bool `json:"quota_late"`
	// WithoutQuotaAfter is what the origin serves after the release
	// without the quota: min(X, c ÷ R'). QueueGrowth is X − c ÷ R' when
	// positive, else 0: how fast its queue grows.
	WithoutQuotaAfter Num `json:"without_quota_after"`
	QueueGrowth       Num `json:"queue_growth"`
	// LateAfterS is how long after the release a caller arriving without
	// the quota first waits past its timeout: (timeout − R') × (c ÷ R') ÷
	// growth seconds, 0 when R' alone passes the timeout. NaN (null) when
	// there is no timeout, or when the queue does not grow and R' is
	// within the timeout (no caller is ever late).
	LateAfterS Num      `json:"late_after_s"`
	Steps      []string `json:"steps"`
	Message    string   `json:"message,omitempty"`
	Sentence   string   `json:"sentence"`
}

// QuotaRelease computes the quota model. solve names the implied one of
// quota (default), arrivals and latency_ms, from N = X × R ÷ 1000 (Little's
// law, SolveLittlesLaw). Inputs are validated by the caller (latency,
// release and workers ≥ 1).
func QuotaRelease(arrivals, latencyMS, quota, releaseMS, workers, timeoutMS float64, solve string) Quota {
	nan := Num(math.NaN())
	if solve == "" || solve == "quota" {
		solve = QInflight
	}
	ll := SolveLittlesLaw(arrivals, latencyMS, quota, solve)
	x, r, n := float64(ll.Arrivals), float64(ll.LatencyMS), float64(ll.Inflight)
	q := Quota{Arrivals: ll.Arrivals, LatencyMS: ll.LatencyMS, Quota: ll.Inflight, ReleaseMS: Num(releaseMS), Workers: Num(workers),
		TimeoutMS: Num(timeoutMS), Defined: ll.Defined,
		CapacityBefore: nan, CapacityAfter: Num(workers * 1000 / releaseMS),
		QuotaRate: nan, WithQuotaBefore: nan, WithQuotaAfter: nan, RefusedAfter: nan, QuotaLatencyMS: nan,
		WithoutQuotaAfter: nan, QueueGrowth: nan, LateAfterS: nan}
	if !ll.Defined {
		q.Message = ll.Message
		q.Sentence = ll.Message
		q.Steps = []string{ll.Message}
		return q
	}
	capBefore, capAfter := workers*1000/r, workers*1000/releaseMS
	q.CapacityBefore = Num(capBefore)
	rate := n * 1000 / releaseMS
	before := math.Min(x, math.Min(n*1000/r, capBefore))
	after := math.Min(x, math.Min(rate, capAfter))
	q.QuotaRate, q.WithQuotaBefore, q.WithQuotaAfter = Num(rate), Num(before), Num(after)
	q.RefusedAfter = Num(math.Max(0, x-after))
	// Let in everything: X × R' inside, each served at once (X ≤ c ÷ R').
	// Held to the quota: N inside, served at `after` a second, so by
	// Little's law each stays N ÷ after, R' or longer when N > c.
	latency := releaseMS
	if after < x && after > 0 {
		latency = n * 1000 / after
	}
	q.QuotaLatencyMS = Num(latency)
	q.QuotaLate = timeoutMS > 0 && latency > timeoutMS*(1+1e-12)
	served := math.Min(x, capAfter)
	growth := math.Max(0, x-capAfter)
	if growth <= 1e-12*x {
		growth = 0
	}
	q.WithoutQuotaAfter, q.QueueGrowth = Num(served), Num(growth)
	late := math.NaN()
	switch {
	case timeoutMS <= 0:
	case releaseMS >= timeoutMS:
		late = 0
	case growth > 0:
		late = (timeoutMS - releaseMS) * capAfter / (1000 * growth)
	}
	q.LateAfterS = Num(late)

	F := Format
	q.Steps = []string{
		"N = X × R = " + F(x) + " a second × " + F(r/1000) + " s = " + about(n) + F(n) + " in flight",
		"the origin serves at most c ÷ R = " + F(workers) + " ÷ " + F(r/1000) + " s = " + about(capBefore) + F(capBefore) +
			" a second before the release, c ÷ R' = " + F(workers) + " ÷ " + F(releaseMS/1000) + " s = " + about(capAfter) + F(capAfter) + " after",
		"with the quota, after: min(X, N ÷ R', c ÷ R') = min(" + F(x) + ", " + F(rate) + ", " + F(capAfter) + ") = " + about(after) + F(after) + " a second",
	}
	if growth > 0 {
		q.Steps = append(q.Steps, "without it: X − c ÷ R' = "+F(x)+" − "+F(capAfter)+" = "+about(growth)+F(growth)+" more a second join the origin's queue than leave it")
	} else {
		q.Steps = append(q.Steps, "without it: X ≤ c ÷ R', so the origin keeps up and its queue does not grow")
	}
	if !math.IsNaN(late) {
		if late == 0 {
			q.Steps = append(q.Steps, "R' = "+F(releaseMS)+" ms is at or past the "+F(timeoutMS)+" ms timeout: every caller gives up at once")
		} else {
			q.Steps = append(q.Steps, "a caller waits (timeout − R') × (c ÷ R') ÷ growth = ("+F(timeoutMS)+" − "+F(releaseMS)+") ms × "+
				F(capAfter)+" ÷ "+F(growth)+" = "+about(late)+F(late)+" s after the release before the queue alone outlasts its timeout")
		}
	}

	ns := F(n)
	s := "A quota of N = X × R = " + about(n) + ns + " " + plural(ns, "request", "requests") + " in flight. After the release the origin's " +
		F(workers) + " " + plural(F(workers), "worker serves", "workers serve") + " at most " + about(capAfter) + F(capAfter) + " a second (" +
		about(capBefore) + F(capBefore) + " before); the quota holds the client to " + about(after) + F(after) + " a second"
	if after < x {
		s += " and turns " + about(x-after) + F(x-after) + " a second away"
	}
	if q.QuotaLate {
		s += ", but each answer takes " + about(latency) + F(latency) + " ms, past the " + F(timeoutMS) + " ms timeout."
	} else {
		s += ", each answered in " + about(latency) + F(latency) + " ms."
	}
	switch {
	case growth > 0 && !math.IsNaN(late) && late == 0:
		s += " Without it, the origin's queue grows by " + about(growth) + F(growth) + " a second and every caller gives up: " + F(releaseMS) + " ms of work alone passes the timeout."
	case growth > 0 && !math.IsNaN(late):
		s += " Without it, the origin's queue grows by " + about(growth) + F(growth) + " a second, and from " + about(late) + F(late) +
			" s after the release every caller gives up before its answer while the origin stays busy."
	case growth > 0:
		s += " Without it, the origin's queue grows by " + about(growth) + F(growth) + " a second and each answer comes later than the one before."
	case !math.IsNaN(late):
		s += " Without it, the origin keeps up, but " + F(releaseMS) + " ms of work alone passes the " + F(timeoutMS) + " ms timeout."
	default:
		s += " Without it, the origin keeps up as well: " + F(x) + " a second is within what it serves."
	}
	q.Sentence = s
	return q
}
