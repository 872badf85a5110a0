package evidence

import (
	"time"

	"capacitylab/result"
)

// Format is which tool wrote a results file, and how.
type Format string

// The formats Read knows.
const (
	LoadCSV   Format = "load-csv"
	VegetaCSV Format = "vegeta-csv"
	K6JSON    Format = "k6-json"
	K6CSV     Format = "k6-csv"
)

// Timing is what a tool's latencies run from.
type Timing string

// The timings.
const (
	// FromIntended: from when the schedule said to send (cmd/load's open
	// loop): a generator that falls behind still charges the wait to
	// the latency.
	FromIntended Timing = "intended"
	// FromSent: from when the request actually left (vegeta, k6): the
	// time a request waited in a saturated generator, or a closed-loop
	// client did not send at all, is missing from the latencies
	// (coordinated omission).
	FromSent Timing = "sent"
)

// Window is one step of a test: one offered rate (or number of clients).
type Window struct {
	// Offered is the rate the tool was set to offer, arrivals a second,
	// or arrivals ÷ Seconds when the file does not say.
	Offered float64 `json:"offered"`
	// Seconds is the window's scheduled length, or, when the file does
	// not say, an estimate from its arrivals (Read says how for each
	// format).
	Seconds float64 `json:"seconds"`
	// Clients is the closed loop's clients (load --closed), 0 otherwise.
	Clients int `json:"clients,omitempty"`
	// Label is the tool's own name for the step (vegeta's attack name,
	// k6's scenario), "" for load's windows.
	Label string `json:"label,omitempty"`
}

// Dataset is one results file read into the course's records.
type Dataset struct {
	Name    string   `json:"name"` // the file's name as given
	Format  Format   `json:"format"`
	Timing  Timing   `json:"timing"`
	Windows []Window `json:"windows"`
	// Records are every request of every window in window then seq order;
	// Record.Window indexes Windows, times are offsets from the window's
	// start.
	Records []result.Record `json:"-"`
	// Warnings say plainly what this file cannot show and what to rerun.
	Warnings []string `json:"warnings,omitempty"`
	// Data is load's report data when it came with the records, else nil.
	Data *ReportData `json:"data,omitempty"`
}

// Limits bound what Read accepts.
type Limits struct {
	MaxBytes   int64 // the file's size
	MaxRecords int   // requests in it
}

// ReportData is what cmd/load knows beyond its records, written beside
// them as JSON (load --report NAME writes NAME.json): how it ran, its
// rows as it printed them, the service's own gauges beside each window,
// and why a knee search stopped.
type ReportData struct {
	Tool        string    `json:"tool"`    // "capacitylab load"
	Version     int       `json:"version"` // 1
	StartedAt   time.Time `json:"started_at"`
	Target      string    `json:"target"`
	Loop        string    `json:"loop"`     // "open" or "closed"
	Schedule    string    `json:"schedule"` // poisson or uniform (open loop)
	Seed        uint64    `json:"seed"`
	TimeoutMS   float64   `json:"timeout_ms"`
	QueueHeader string    `json:"queue_header,omitempty"` // the response header read into queue_wait_ms
	// Rows are load's rows, one a window, as it printed them.
	Rows []result.Row `json:"rows"`
	// Gauges are the service's /metrics readings beside each window, in
	// window order (none when load read no metrics).
	Gauges []WindowGauges `json:"gauges,omitempty"`
	// Stopped says why a knee search ended ("" for a plain sweep).
	Stopped string `json:"stopped,omitempty"`
}

// WindowGauges are one window's readings of the service's metrics.
type WindowGauges struct {
	Window   int                     `json:"window"`
	Readings map[string]GaugeReading `json:"readings"`
}

// GaugeReading is one metric over one window: a gauge's mean and most
// over the readings taken in it, or a counter's rate over the window.
type GaugeReading struct {
	Kind string  `json:"kind"` // "gauge" or "counter" (Mean is then its increase a second)
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
	N    int     `json:"n"` // readings taken
}

// Options are the learner's own figures for Analyze.
type Options struct {
	// BudgetMS is the latency budget the admission limit is derived for,
	// 0 for none.
	BudgetMS float64
}

// Analysis is the course's method applied to a Dataset.
type Analysis struct {
	// Rows are one a window, computed from the records by result.Metrics
	// exactly as load computes its own.
	Rows []result.Row `json:"rows"`
	// Knee is the index of the first saturated window, -1 when none is;
	// KneeWhy says what showed it.
	Knee    int    `json:"knee"`
	KneeWhy string `json:"knee_why"`
	// Ceiling is the most answers a second any window delivered, in
	// window CeilingWindow.
	Ceiling       float64          `json:"ceiling_per_sec"`
	CeilingWindow int              `json:"ceiling_window"`
	Windows       []WindowAnalysis `json:"windows"`
	// BudgetMS is the latency budget the limit was derived for (Options),
	// 0 for none.
	BudgetMS float64 `json:"budget_ms,omitempty"`
	// Limit is the admission limit for Options.BudgetMS, nil without a
	// budget or a ceiling.
	Limit     *LimitAdvice `json:"limit,omitempty"`
	Checklist []CheckItem  `json:"checklist"`
	Warnings  []string     `json:"warnings,omitempty"`
}

// WindowAnalysis is what the records say of one window beyond its row.
type WindowAnalysis struct {
	Window int `json:"window"`
	// InFlight is the mean number of requests outstanding over the
	// window, from the records: the overlap of their send and end times.
	InFlight float64 `json:"in_flight"`
	// InFlightOther is the part of InFlight that the requests not
	// answered ok (refused, gave up, failed) make: in flight, but not in
	// Little's product of ok answers.
	InFlightOther float64 `json:"in_flight_other"`
	// Little is Little's product for the ok answers, as the rows show
	// them: ok_per_sec times their mean latency (mean_ms) in seconds.
	// It is InFlight less InFlightOther and plus LittleLag, within edge
	// effects, when the records are whole (LittleCheck).
	Little float64 `json:"little"`
	// LittleLag is the part of Little that the ok answers' send lag
	// makes (ok/s × mean Sent − Intended): time their latency counts
	// before they were sent, so not in flight.
	LittleLag float64 `json:"little_lag"`
	// QueueMS and ServiceMS split the ok answers' mean latency where the
	// service reported its queue wait (-1 where it did not).
	QueueMS   float64 `json:"queue_ms"`
	ServiceMS float64 `json:"service_ms"`
	// Gauges are the service's metrics over the window, when load read them.
	Gauges map[string]GaugeReading `json:"gauges,omitempty"`
}

// LimitAdvice is the course's admission limit (model.AdmissionLimit) for
// the measured ceiling X and service time S: X × S workers' worth of
// concurrency, and limit = workers × (budget − S) ÷ S waiting, rounded
// down.
type LimitAdvice struct {
	BudgetMS  float64 `json:"budget_ms"`
	ServiceMS float64 `json:"service_ms"` // S: the p50 of ok answers in the lightest window
	Window    int     `json:"window"`     // which window that is: the lowest offered rate
	Ceiling   float64 `json:"ceiling_per_sec"`
	Workers   float64 `json:"workers"` // X × S
	Limit     int     `json:"limit"`   // waiting beyond the workers
	InFlight  int     `json:"in_flight"`
	// Feasible is false when the budget is not longer than S: no queue
	// fits (Limit and InFlight are then 0).
	Feasible bool `json:"feasible"`
	// Steps and Sentence are model.AdmissionLimit's working and answer.
	Steps    []string `json:"steps"`
	Sentence string   `json:"sentence"`
}

// CheckItem is one item of the method's checklist, met or not, and why.
type CheckItem struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Met    bool   `json:"met"`
	Detail string `json:"detail"`
}
