package measure

import (
	"context"
	"time"

	"capacitylab/loadrun"
	"capacitylab/result"
)

// WindowPause is the pause between a sweep's windows (loadrun's
// Sweep.Pause) in every measurement: what a watching class's pages do with
// a row (package web sends each watcher the run's panel 150 ms after the
// row) then happens between measurements, not in the next window.
const WindowPause = 500 * time.Millisecond

// EventKind names an Event.
type EventKind string

// The kinds of events a measurement hands its caller, in order: started
// once (Measure only), then for each window progress until it ends (with
// a knob event among them for each knob change made, and in a run over
// time a sample event for each interval) and one window event.
const (
	EventStarted  EventKind = "started"  // both children are up: Lab and Load say where each runs
	EventProgress EventKind = "progress" // a window is running: its counts so far
	EventKnob     EventKind = "knob"     // a knob change was made in the window: Change, at ElapsedMS
	EventSample   EventKind = "sample"   // a run over time: one interval of the window (Sample)
	EventWindow   EventKind = "window"   // a window ended: its row and every raw record
)

// Event is one thing a measurement reports.
type Event struct {
	Kind EventKind
	result.WindowProgress
	Row     *result.Row     // window: the window's row
	Records []result.Record // window: one per arrival, in seq order
	Change  string          // knob: the change made, as result.KnobChange writes it
	Sample  *result.Sample  // sample: the interval
	// Samples are a window event's samples in a run over time
	// (Preset.OverTime), in order: the sample events it had.
	Samples []result.Sample
	// Cut is why a window event's window was cut short (the measurement
	// was cancelled, the lab child died, or the lab stopped answering
	// after the window's requests ended: result.WindowReport.Cut), nil
	// when it ran to its end. Its row says why ("cancelled before the
	// window ended", or that the lab's statistics could not be read) and
	// still accounts for every arrival.
	Cut error

	Lab, Load Child // started: the two children
}

// Child says where one child of a measurement runs.
type Child struct {
	Pid        int
	CPUs       []int  // the processors it may use (nil when unknown)
	GoMaxProcs int    // its GOMAXPROCS
	Note       string // how it was placed, in words (the load child's pinning)
}

// Generate runs sw against a lab that is already serving (sw's Target and
// Control) in this process, and hands handle a progress event while each
// window runs, knob and sample events as they happen and a window event as
// each one ends, in order and one call at a time (progress, knob and sample
// calls come from the sweep's own goroutines, as loadrun.Sweep.Run says). It
// is the generator's side of a measurement: the load child runs it (see
// Measure), and so does cmd/load against a lab in a terminal. Every sweep it
// runs pauses WindowPause between windows and waits for the lab to drain
// (sw.DrainWait, 0 for loadrun.DefaultDrainWait), as every measurement does.
//
// The next window does not begin until handle returns from a window event,
// so whatever it does with the records (saving them, sending them on)
// never overlaps a measurement. An error from handle stops the sweep: the
// window in progress is cut short (its window event still comes) and
// Generate returns that error. Cancelling ctx does the same and returns
// its cause; a failure of the sweep itself (the lab's control API) is
// returned as it is.
func Generate(ctx context.Context, sw loadrun.Sweep, handle func(Event) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if sw.Driver == nil {
		sw.Pause = WindowPause
	}
	// Calls of handle never overlap (Sweep.Run serialises its events, and
	// WindowDone is called once the window's goroutines have ended), so
	// failed needs no lock of its own.
	var failed error // the first error handle returned
	stopOn := func(err error) {
		if err != nil && failed == nil {
			failed = err
			cancel(err)
		}
	}
	sw.WindowDone = func(wr result.WindowReport) {
		ev := Event{Kind: EventWindow, WindowProgress: wr.Progress, Row: &wr.Row, Records: wr.Records, Samples: wr.Samples, Cut: wr.Cut}
		if ctx.Err() != nil {
			ev.Cut = context.Cause(ctx)
		}
		stopOn(handle(ev))
	}
	// Rows come with their records through WindowDone, and the end is
	// Run's return.
	_, err := sw.Run(ctx, func(e result.Event) {
		switch {
		case failed != nil:
		case e.Kind == result.EventProgress:
			stopOn(handle(Event{Kind: EventProgress, WindowProgress: e.WindowProgress}))
		case e.Kind == result.EventKnob:
			stopOn(handle(Event{Kind: EventKnob, WindowProgress: e.WindowProgress, Change: e.Change}))
		case e.Kind == result.EventSample:
			stopOn(handle(Event{Kind: EventSample, WindowProgress: e.WindowProgress, Sample: e.Sample}))
		}
	})
	switch {
	case failed != nil:
		return failed
	case err != nil && ctx.Err() != nil:
		return context.Cause(ctx)
	}
	return err
}
