package result

import "time"

// LabStats is the part of the lab's GET /stats reply the runner reads.
type LabStats struct {
	Since     time.Time `json:"since"` // when the lab's window began (its last reset)
	Accepted  int64     `json:"accepted"`
	Refused   int64     `json:"refused"`
	Done      int64     `json:"done"`
	Queued    int       `json:"queued"`
	QueuedMax int       `json:"queued_max"`
	// BackloggedMax is the most callers the lab found waiting in the
	// kernel's accept queue in the window; -1 when the lab does not say.
	BackloggedMax int   `json:"backlogged_max"`
	InService     int   `json:"in_service"`
	Bad           int64 `json:"bad"`
	// Dropped is how many the lab's admission policy admitted and then
	// dropped from its queue in the window; PolicyLimit its bound on
	// requests inside now (0: none).
	Dropped     int64 `json:"dropped"`
	PolicyLimit int   `json:"policy_limit"`
	// ProcessCPUMS is the processor time the whole lab process used in the
	// window, ms; SpinCPUMS the part its spins used.
	ProcessCPUMS float64 `json:"process_cpu_ms"`
	SpinCPUMS    float64 `json:"spin_cpu_ms"`
	// ServiceMS summarises the service times the lab measured (the
	// X-Service-Ms header of every answer it served).
	ServiceMS LabSummary `json:"service_ms"`
	// QueueWaitMS summarises the waits in the lab's queue of the
	// requests it served (X-Queue-Wait-Ms).
	QueueWaitMS LabSummary `json:"queue_wait_ms"`
	// Classes counts the window's requests by class (their X-Criticality;
	// see package labsvc), all of them default unless the callers say
	// otherwise; all 0 from a lab that does not count them.
	Classes LabClasses `json:"classes"`
}

// LabClasses is the lab's counts by class, its GET /stats classes.
type LabClasses struct {
	Critical  LabClass `json:"critical"`
	Default   LabClass `json:"default"`
	Sheddable LabClass `json:"sheddable"`
}

// LabClass is one class's counts in a lab's window: accepted = done +
// dropped + inside.
type LabClass struct {
	Accepted int64 `json:"accepted"` // admitted by the lab's door
	Refused  int64 `json:"refused"`  // answered 503, dropped ones included
	Dropped  int64 `json:"dropped"`  // admitted, then dropped from the queue
	Done     int64 `json:"done"`     // served to completion
	Inside   int   `json:"inside"`   // queued or in service when the stats were read
}

// LabSummary is the lab's summary of a set of times, ms.
type LabSummary struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	SCV  float64 `json:"scv"` // squared coefficient of variation: variance ÷ mean²
}

// MergeLabStats is several labs' stats read together, as one lab's: the
// stats of the labs a sweep splits its sub-requests across
// (loadrun.Control over several labs). Counts, in-service and queued
// counts, processor times and policy limits are summed; QueuedMax and
// BackloggedMax are the sums of each lab's most, which may be more than
// the most the labs held at one time (BackloggedMax −1 when a lab does not
// say); Since is the earliest. Summaries merge their n, mean, SCV and max
// exactly; their p50 and p99 are 0, since a percentile of several labs
// cannot be known from theirs. One lab's stats are returned as they are.
func MergeLabStats(labs ...LabStats) LabStats {
	if len(labs) == 1 {
		return labs[0]
	}
	var m LabStats
	for i, s := range labs {
		if i == 0 || s.Since.Before(m.Since) {
			m.Since = s.Since
		}
		m.Accepted += s.Accepted
		m.Refused += s.Refused
		m.Done += s.Done
		m.Queued += s.Queued
		m.QueuedMax += s.QueuedMax
		if s.BackloggedMax < 0 || (i > 0 && m.BackloggedMax < 0) {
			m.BackloggedMax = -1
		} else {
			m.BackloggedMax += s.BackloggedMax
		}
		m.InService += s.InService
		m.Bad += s.Bad
		m.Dropped += s.Dropped
		m.PolicyLimit += s.PolicyLimit
		m.ProcessCPUMS += s.ProcessCPUMS
		m.SpinCPUMS += s.SpinCPUMS
		for _, c := range []struct{ to, from *LabClass }{
			{&m.Classes.Critical, &s.Classes.Critical}, {&m.Classes.Default, &s.Classes.Default}, {&m.Classes.Sheddable, &s.Classes.Sheddable},
		} {
			c.to.Accepted += c.from.Accepted
			c.to.Refused += c.from.Refused
			c.to.Dropped += c.from.Dropped
			c.to.Done += c.from.Done
			c.to.Inside += c.from.Inside
		}
	}
	m.ServiceMS = mergeSummaries(labs, func(s LabStats) LabSummary { return s.ServiceMS })
	m.QueueWaitMS = mergeSummaries(labs, func(s LabStats) LabSummary { return s.QueueWaitMS })
	return m
}

// mergeSummaries merges one summary of each lab: the n-weighted mean, the
// SCV from the n-weighted second moments (each lab's mean²·(1 + SCV)),
// the largest max.
func mergeSummaries(labs []LabStats, of func(LabStats) LabSummary) LabSummary {
	var m LabSummary
	var sum, sum2 float64
	for _, s := range labs {
		x := of(s)
		m.N += x.N
		sum += float64(x.N) * x.Mean
		sum2 += float64(x.N) * x.Mean * x.Mean * (1 + x.SCV)
		m.Max = max(m.Max, x.Max)
	}
	if m.N > 0 {
		m.Mean = sum / float64(m.N)
		if m.Mean > 0 {
			m.SCV = max(sum2/float64(m.N)/(m.Mean*m.Mean)-1, 0)
		}
	}
	return m
}
