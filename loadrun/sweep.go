package loadrun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultDrainWait bounds how long a sweep waits for the lab to drain
// before a window.
const DefaultDrainWait = 30 * time.Second

// Sweep is a series of windows against one lab: one per offered rate (open
// loop) or one per client count (closed loop).
type Sweep struct {
	Target  Target
	Control *Control // nil: no lab to reset or read; Done, Queued and Backlogged stay -1

	Rates   []float64 // open loop: offered rates, arrivals a second
	Clients []int     // closed loop: client counts; set this or Rates, not both
	Think   time.Duration

	Seconds     float64 // length of every window
	Seed        uint64  // window i uses WindowSeed(Seed, i)
	Kind        Kind    // arrival process; "" means Poisson
	MaxInFlight int     // 0 means Open's default: one timeout's arrivals, within DefaultMaxInFlight..MaxMaxInFlight
	DrainWait   time.Duration

	// Pause is how long the sweep waits after a window's row is sent
	// before the next window begins (then the lab is drained and reset as
	// always): room for what watchers do with a row (a page redrawing its
	// chart) to happen between measurements rather than in one.
	Pause time.Duration

	// WindowDone, when not nil, is called with each window's row and raw
	// records as soon as the window ends (before its row event is sent),
	// in window order, from the goroutine running the sweep. The next
	// window does not begin until it returns, so slow work here (saving
	// the records) never overlaps a measurement. It is how a caller keeps
	// what was measured even if the sweep never finishes.
	WindowDone func(WindowReport)
}

// Validate says what is wrong with the sweep, or nil. Nothing is sent.
func (s Sweep) Validate() error {
	if s.Target.addr == "" {
		return errors.New("target is missing: want http://host:port")
	}
	if (len(s.Rates) == 0) == (len(s.Clients) == 0) {
		return errors.New("give either rates (open loop) or client counts (closed loop), not both and not neither")
	}
	if s.Kind != "" {
		if _, err := ParseKind(string(s.Kind)); err != nil {
			return err
		}
	}
	for _, r := range s.Rates {
		if err := CheckRate(r, s.Seconds); err != nil {
			return err
		}
	}
	if len(s.Clients) > 0 {
		if err := CheckRate(1, s.Seconds); err != nil {
			return err
		}
	}
	for _, c := range s.Clients {
		if c < 1 || c > MaxClients {
			return fmt.Errorf("clients %d is not allowed: want 1 to %d", c, MaxClients)
		}
	}
	if s.Think < 0 || s.Think > MaxTimeout {
		return fmt.Errorf("think time %v is not allowed: want 0 to %v", s.Think, MaxTimeout)
	}
	if s.MaxInFlight < 0 || s.MaxInFlight > MaxMaxInFlight {
		return fmt.Errorf("in-flight cap %d is not allowed: want 0 (the default: one timeout's arrivals, at least %d) to %d", s.MaxInFlight, DefaultMaxInFlight, MaxMaxInFlight)
	}
	if s.DrainWait < 0 {
		return fmt.Errorf("drain wait %v is not allowed: want 0 (default %v) or more", s.DrainWait, DefaultDrainWait)
	}
	return nil
}

// EventKind names an Event.
type EventKind string

// The kinds of events a sweep sends.
const (
	EventProgress EventKind = "progress" // a window is running: counts so far
	EventRow      EventKind = "row"      // a window ended: its row
	EventDone     EventKind = "done"     // the sweep ended, with Error if it failed
)

// Event is one message of a sweep's stream; the package doc specifies it.
type Event struct {
	Kind      EventKind `json:"kind"`
	Window    int       `json:"window"`
	Windows   int       `json:"windows"` // how many windows the sweep has
	Rate      float64   `json:"rate,omitempty"`
	Clients   int       `json:"clients,omitempty"`
	Seconds   float64   `json:"seconds"`
	ElapsedMS float64   `json:"elapsed_ms,omitempty"`
	Sent      int       `json:"sent,omitempty"`
	Ended     int       `json:"ended,omitempty"`
	NotSent   int       `json:"not_sent,omitempty"`
	Row       *Row      `json:"row,omitempty"`
	Error     string    `json:"error,omitempty"`
}

// WindowReport is one finished window: its row and every raw record.
type WindowReport struct {
	Row     Row
	Records []Record
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

// Run runs the sweep. For each window it waits for the lab to drain (at most
// DrainWait; the row's Note says so if it did not), resets the lab's
// counters, runs the window, waits for every request to end, reads the lab's
// counters and builds the row. When events is not nil Run sends progress at
// least every ProgressEvery while a window runs, a row event as each window
// ends and a done event last, then closes events; the caller must receive
// until it is closed. Cancelling ctx stops the sweep cleanly: the window in
// progress still accounts for every arrival, its row is sent with a note, and
// Run returns ctx's error. A failure of the lab's control API stops the sweep
// with an error; the user's own mistakes come back from Validate before
// anything is sent.
func (s Sweep) Run(ctx context.Context, events chan<- Event) (Report, error) {
	// Replies end when they arrive only while the kernel stamps them.
	defer holdArrivalStamps()()
	var rep Report
	n := max(len(s.Rates), len(s.Clients))
	emit := func(e Event) {
		if events == nil {
			return
		}
		e.Windows = n
		if e.Kind == EventProgress {
			select {
			case events <- e:
			case <-ctx.Done():
			}
			return
		}
		events <- e
	}
	finish := func(err error) (Report, error) {
		done := Event{Kind: EventDone, Window: len(rep.Windows), Seconds: s.Seconds}
		if err != nil {
			done.Error = err.Error()
		}
		emit(done)
		if events != nil {
			close(events)
		}
		return rep, err
	}
	if err := s.Validate(); err != nil {
		return finish(err)
	}
	kind := s.Kind
	if kind == "" {
		kind = Poisson
	}
	drainWait := s.DrainWait
	if drainWait == 0 {
		drainWait = DefaultDrainWait
	}
	length := secondsToDuration(s.Seconds)

	for i := range n {
		if i > 0 && s.Pause > 0 {
			t := time.NewTimer(s.Pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		if err := ctx.Err(); err != nil {
			return finish(err)
		}
		var notes []string
		if s.Control != nil {
			drained, st, err := s.Control.Drain(ctx, drainWait)
			if err != nil {
				return finish(ctxOr(ctx, err))
			}
			if !drained {
				notes = append(notes, fmt.Sprintf("lab had not drained after %v (queued %d, in service %d)", drainWait, st.Queued, st.InService))
			}
			if err := s.Control.Reset(ctx); err != nil {
				return finish(ctxOr(ctx, err))
			}
		}

		base := Event{Kind: EventProgress, Window: i, Seconds: s.Seconds}
		var rate float64
		var clients int
		if len(s.Rates) > 0 {
			rate = s.Rates[i]
			base.Rate = rate
		} else {
			clients = s.Clients[i]
			base.Clients = clients
		}
		progress := func(p Progress) {
			e := base
			e.ElapsedMS = ms(p.Elapsed)
			e.Sent, e.Ended, e.NotSent = p.Sent, p.Ended, p.NotSent
			emit(e)
		}

		var res Result
		if clients == 0 {
			sched, err := Schedule(kind, rate, s.Seconds, WindowSeed(s.Seed, i))
			if err != nil {
				return finish(err)
			}
			res = Open{Target: s.Target, Schedule: sched, MaxInFlight: s.MaxInFlight, Window: i}.Run(ctx, progress)
		} else {
			res = Closed{Target: s.Target, Clients: clients, Think: s.Think, Length: length, Window: i}.Run(ctx, progress)
		}

		row := res.Metrics.Row(rate, length)
		row.Window = i
		if clients > 0 {
			row.Clients = clients
			row.Offered = round(float64(row.Sent)/s.Seconds, 100)
		}
		if ctx.Err() != nil {
			notes = append(notes, "cancelled before the window ended")
		} else if s.Control != nil {
			st, err := s.Control.Stats(ctx)
			if err != nil {
				return finish(ctxOr(ctx, err))
			}
			row.Done = int(st.Done)
			row.Queued = st.QueuedMax
			row.Backlogged = st.BackloggedMax
			row.LabServiceMS = round(st.ServiceMS.Mean, 1000)
			row.LabCPUMS = round(st.ProcessCPUMS, 1000)
		}
		if row.Lost != 0 {
			notes = append(notes, fmt.Sprintf("%d requests lost: a generator bug", row.Lost))
		}
		row.Note = strings.Join(notes, "; ")
		wr := WindowReport{Row: row, Records: res.Records}
		rep.Windows = append(rep.Windows, wr)
		if s.WindowDone != nil {
			s.WindowDone(wr)
		}
		r := row
		emit(Event{Kind: EventRow, Window: i, Rate: base.Rate, Clients: clients, Seconds: s.Seconds, ElapsedMS: ms(res.Elapsed), Sent: row.Sent, Ended: row.Sent - row.Lost, NotSent: row.NotSent, Row: &r})
		if ctx.Err() != nil {
			return finish(ctx.Err())
		}
	}
	return finish(nil)
}

func ctxOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
