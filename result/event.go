package result

import (
	"context"
	"time"
)

// EventKind names an Event.
type EventKind string

// The kinds of events a sweep sends.
const (
	EventProgress EventKind = "progress" // a window is running: counts so far
	EventKnob     EventKind = "knob"     // a knob change was made (Change, at ElapsedMS into the window)
	EventRow      EventKind = "row"      // a window ended: its row
	// EventSample is one interval of a window in a run over time (see
	// loadrun.Sweep.SampleEvery).
	EventDone EventKind = "done" // the sweep ended, with Error if it failed
)

// WindowProgress is which window of a sweep an event is about and how far
// it has got: the fields a sweep's events share, and the run log's events
// too (package runner embeds it, with the same JSON). Window counts from 0;
// in a done event it is how many windows finished.
type WindowProgress struct {
	Windows   int     `json:"windows,omitempty"` // how many windows the sweep has
	Window    int     `json:"window"`
	Rate      float64 `json:"rate,omitempty"`       // open loop: the window's offered rate
	Clients   int     `json:"clients,omitempty"`    // closed loop: the window's clients
	Seconds   float64 `json:"seconds,omitempty"`    // the window's length
	ElapsedMS float64 `json:"elapsed_ms,omitempty"` // since the window began
	Sent      int     `json:"sent,omitempty"`       // requests that have left
	Ended     int     `json:"ended,omitempty"`      // sent requests that have ended
	NotSent   int     `json:"not_sent,omitempty"`   // arrivals due but not sent by the generator
	// ClientBusy is arrivals that found every client worker busy
	// (loadrun.Sweep.ClientWorkers), not sent.
	ClientBusy int `json:"client_busy,omitempty"`
}

// Event is one message of a sweep's stream; the package doc specifies it.
type Event struct {
	Kind EventKind `json:"kind"`
	WindowProgress
	Row    *Row    `json:"row,omitempty"`
	Sample *Sample `json:"sample,omitempty"` // sample: the interval
	Change string  `json:"change,omitempty"` // knob: the change made, as KnobChange writes it
	Error  string  `json:"error,omitempty"`
}

// WindowReport is one finished window: its row, every raw record, and the
// window's place in the sweep with its final counts (the row event's
// WindowProgress).
type WindowReport struct {
	Row      Row
	Records  []Record
	Progress WindowProgress
	// Samples are the window's samples in a run over time
	// (loadrun.Sweep.SampleEvery), in order; nil otherwise.
	Samples []Sample
	// Cut is why the window did not end as a whole window does, or nil:
	// the sweep's context's cause when it was cancelled during the window,
	// or the failure to read the lab's statistics after it (the lab
	// stopped answering once every request had ended). Its row and records
	// are handed over all the same, and the sweep then stops.
	Cut error
}

// Report is what a sweep produced, window by window.
type Report struct {
	Windows []WindowReport
}

// Rows returns the rows of every window, in order.
func (r Report) Rows() []Row {
	rows := make([]Row, len(r.Windows))
	for i, w := range r.Windows {
		rows[i] = w.Row
	}
	return rows
}

// Records returns every record of every window, in order.
func (r Report) Records() []Record {
	var out []Record
	for _, w := range r.Windows {
		out = append(out, w.Records...)
	}
	return out
}

// Window is one window of a sweep, as a Driver is given it.
type Window struct {
	Index       int
	Schedule    []time.Duration // open loop: the intended send times (see loadrun.Sweep.WindowSchedule)
	MaxInFlight int             // open loop: 0 means DefaultMaxInFlight
	// ClientWorkers is the client's fixed pool of workers (open loop), 0
	// for none: see loadrun.Open.ClientWorkers.
	ClientWorkers int
	Clients       int           // closed loop: how many clients; 0 for open loop
	Think         time.Duration // closed loop: each client's pause after an answer
	Length        time.Duration // closed loop: clients send while less than this has passed
	// Changes are the sweep's knob changes, in time order, for the
	// Driver to make at their times into the window (Result.Changed says
	// how many it made).
	Changes []KnobChange
	// SampleEvery is the sweep's (a run over time): a Driver that knows
	// its lab's state reads it at each boundary into Result.Lab.
	SampleEvery time.Duration
	// Retry is the sweep's retrying client as package retry's Parse
	// reads it ("" never retries), open loop only, its jitter drawn from
	// a source seeded with RetrySeed (retry.New). Classes, when not nil,
	// is the class of each arrival of Schedule (loadrun.WindowClasses).
	Retry     string
	RetrySeed uint64
	Classes   []Class
	// Fanout, when more than 1, is how many sub-requests each arrival
	// sends (loadrun.Open.Fanout), and Hedge the hedging client as
	// package hedge's Parse reads it ("" never hedges), open loop only.
	Fanout int
	Hedge  string
}

// Driver runs a sweep's windows somewhere other than over the network:
// package sim simulates them. It returns each window's records (one per
// arrival, in Seq order, folded into Result.Metrics) and the lab's
// counters as they were when the window's last request ended, read the way
// loadrun.Control.Stats reads them. loadrun.Sweep.Run does everything else exactly as for a
// real run: validation, rows, notes, events, WindowDone and the report.
type Driver interface {
	RunWindow(ctx context.Context, w Window) (Result, LabStats, error)
}
