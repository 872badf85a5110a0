package result

// EventSample is the kind of the event a run over time sends once a
// second of a window (loadrun.Sweep.SampleEvery): its Sample.
const EventSample EventKind = "sample"

// Sample is one interval of a window in a run over time: what the callers
// saw end in it, and the state of the generator and of the lab at its
// end. A window's samples cover it from its start to the end of its last
// request, one after another, so every arrival of the window is counted in
// exactly one sample: the sum over a window's samples of OK, Refused,
// GaveUp, Errors, ClientBusy, NotSent and BreakerOpen is the row's arrivals, and lost
// stays 0.
type Sample struct {
	Window  int     `json:"window"`  // from 0
	AtS     float64 `json:"at_s"`    // the interval's start, seconds from the window's start
	Seconds float64 `json:"seconds"` // its length: SampleEvery, the last one of a window what is left

	// Requests by the interval in which they ended (answered, refused,
	// given up, failed) or, for arrivals that were never sent, in which
	// they were due.
	OK         int `json:"ok"`
	Refused    int `json:"refused"`
	GaveUp     int `json:"gaveup"`
	Errors     int `json:"errors"`
	ClientBusy int `json:"client_busy"`
	NotSent    int `json:"not_sent"`

	// P50MS and P99MS are the latencies (from the intended send time) of
	// the ok answers that ended in the interval; 0 when there were none.
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`

	// InFlight is the generator's requests sent and not yet ended at the
	// interval's end.
	InFlight int `json:"in_flight"`

	// Lab is whether the lab's statistics were read at the interval's
	// end (the sweep has a Control and the read succeeded); the fields
	// after it are zero otherwise. Queued and InService are the lab's
	// labsvc.Stats at that moment; Limit is its admission policy's bound
	// on requests inside then (Stats.PolicyLimit: 0 when it has none), and
	// Dropped how many it had dropped from its queue since the window
	// began.
	// Attempts is the attempts of a retrying client (package retry) that
	// ended in the interval, every retry counted (without retries, the
	// requests sent that ended in it); BreakerOpen its requests not sent
	// because its circuit breaker was open, by when they were due, and
	// Breaker the breaker's state at the interval's end (closed, open or
	// half_open; empty without a breaker).
	Attempts    int    `json:"attempts"`
	BreakerOpen int    `json:"breaker_open,omitempty"`
	Breaker     string `json:"breaker,omitempty"`
	// ByClass is the interval's ok and refused by class, in a window
	// whose requests carried classes.
	ByClass []ClassSample `json:"by_class,omitempty"`

	Lab       bool  `json:"lab"`
	Queued    int   `json:"queued"`
	InService int   `json:"in_service"`
	Limit     int   `json:"limit"`
	Dropped   int64 `json:"dropped"`
}

// ClassSample is one class's part of a sample.
type ClassSample struct {
	Class   Class `json:"class"`
	OK      int   `json:"ok"`
	Refused int   `json:"refused"`
	Gaveup  int   `json:"gaveup"`
}
