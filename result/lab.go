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
