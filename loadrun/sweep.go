package loadrun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"capacitylab/hedge"
	"capacitylab/result"
	"capacitylab/retry"
)

// DefaultDrainWait bounds how long a sweep waits for the lab to drain
// before a window. Every sweep measured against a lab (package measure:
// learners' runs, the recorded tables, cmd/load) waits this long; a lab
// still busy after it leaves a note on the row.
const DefaultDrainWait = 10 * time.Second

// restoreWait bounds setting a lab's changed knobs back after a window,
// even when the sweep was cancelled.
const restoreWait = 5 * time.Second

// Sweep is a series of windows against one lab: one per offered rate (open
// loop) or one per client count (closed loop).
type Sweep struct {
	Target  Target
	Control *Control // nil: no lab to reset or read; Done, Queued and Backlogged stay -1

	Rates   []float64 // open loop: offered rates, arrivals a second
	Clients []int     // closed loop: client counts; set one of Rates, Clients and Arrivals
	Think   time.Duration
	// Arrivals, when set, is one open-loop window with exactly these
	// intended send times (offsets from the window's start, in
	// increasing order, all before Seconds) instead of a schedule drawn
	// from a seed: a trace to replay (see ReadArrivals). Its row's offered
	// rate is len(Arrivals) ÷ Seconds.
	Arrivals []time.Duration

	Seconds     float64        // length of every window
	Seed        uint64         // window i uses RNG.WindowSeed(Seed, Rates[i], earlier windows at that rate)
	Process     ArrivalProcess // arrival process; "" means Poisson
	RNG         Source         // random source of the schedules; "" means PCG
	MaxInFlight int            // 0 means Open's default: one timeout's arrivals, within DefaultMaxInFlight..MaxMaxInFlight
	// ClientWorkers, when not 0, is a client with that many workers, as
	// a real client with a fixed pool has (open loop only): an arrival
	// that finds every worker busy with a request is not sent and is
	// counted in client_busy (Open.ClientWorkers).
	ClientWorkers int
	DrainWait     time.Duration

	// Retry is the client's retries, backoff, budget and circuit breaker
	// (package retry; open loop only): the zero Spec never retries.
	// Critical and Sheddable are the shares of arrivals (0 to 1, together
	// at most 1) sent with X-Criticality critical and sheddable, the rest
	// default; which arrivals is drawn from the window's seed
	// (WindowClasses), so a simulation marks the same ones.
	Retry               retry.Spec
	Critical, Sheddable float64

	// Fanout, when more than 1 (at most MaxFanout), makes every arrival
	// a request of that many sub-requests sent at once (Open.Fanout), and
	// Hedge is a hedging client (package hedge; Open.Hedge); open loop
	// only, and neither with Retry. A window's sub-requests and copies
	// are its load: its rate × Fanout is held to result.MaxRate, and its
	// arrivals × Fanout to result.MaxArrivals.
	Fanout int
	Hedge  hedge.Spec
	// Split, when it has two or more targets (at most MaxSplit), splits
	// each arrival's sub-requests across them (Open.Split): sub-request j
	// goes to Split[j mod len(Split)], so Fanout must be at least as many.
	// Target is then the first of them, and Control, when not nil, must
	// speak for the same labs in the same order (NewControl with their
	// URLs): the rows' lab columns are theirs merged. Each lab should draw
	// its DIST from a seed of its own: labs drawing the same factors in
	// the same order make an arrival's sub-requests slow together.
	Split []Target

	// SampleEvery, when not 0, makes the sweep a run over time: every
	// window is sampled every SampleEvery from its start and once more
	// when its last request has ended (see Sample), each sample sent as a
	// sample event and kept in the window's report. With a Control the
	// lab's statistics are read at each interval's end. 0: no samples.
	SampleEvery time.Duration

	// Changes are knob changes made at their times into every window
	// (see KnobChange), through the lab's control API: each window starts
	// from the knobs the lab had when the sweep began (they are read
	// then, and set back as each window ends), and each change made is
	// a knob event. They need Control, or a Driver, which is given them
	// with each window (Window.Changes) and makes them itself.
	Changes []result.KnobChange

	// Pause is how long the sweep waits after a window's row is sent
	// before the next window begins (then the lab is drained and reset as
	// always): room for what watchers do with a row (a page redrawing its
	// chart) to happen between measurements rather than in one.
	Pause time.Duration

	// Driver, when not nil, runs every window instead of Target and
	// Control (see Driver): a simulation of the sweep.
	Driver result.Driver

	// WindowDone, when not nil, is called with each window's row and raw
	// records as soon as the window ends (before its row event is sent),
	// in window order, from the goroutine running the sweep. The next
	// window does not begin until it returns, so slow work here (saving
	// the records) never overlaps a measurement. It is how a caller keeps
	// what was measured even if the sweep never finishes.
	WindowDone func(result.WindowReport)
}

// Validate says what is wrong with the sweep, or nil. Nothing is sent.
func (s Sweep) Validate() error {
	if s.Target.addr == "" && s.Driver == nil {
		return errors.New("target is missing: want http://host:port")
	}
	if len(s.Changes) > 0 && s.Control == nil && s.Driver == nil {
		return errors.New("knob changes are made through the lab's control API: give its URL")
	}
	if n := len(s.Split); n > 0 {
		switch {
		case s.Driver != nil:
			return errors.New("splitting sub-requests across several labs is for real labs: a simulation has one lab")
		case n > MaxSplit:
			return fmt.Errorf("%d targets is too many: want at most %d labs to split sub-requests across", n, MaxSplit)
		case n > 1 && s.Fanout < n:
			return fmt.Errorf("%d targets need a fan-out of at least %d, one sub-request to each lab (fan-out is %d): several targets split a fanned-out request's sub-requests", n, n, max(s.Fanout, 1))
		case s.Control != nil && s.Control.Labs() != n:
			return fmt.Errorf("%d targets but %d control APIs: give one control URL for each target, in the same order, or none", n, s.Control.Labs())
		case n > 1 && len(s.Changes) > 0:
			return errors.New("knob changes go to one lab: not with sub-requests split across several")
		}
	} else if s.Control != nil && s.Control.Labs() > 1 {
		return fmt.Errorf("%d control APIs for one target: give one control URL for each target", s.Control.Labs())
	}
	return s.ValidatePlan()
}

// ValidatePlan is Validate without the target: what is wrong with the
// windows, their arrivals and the generator's settings, or nil. A
// simulation of the sweep (package sim) checks the same.
func (s Sweep) ValidatePlan() error {
	given := 0
	for _, n := range []int{len(s.Rates), len(s.Clients), len(s.Arrivals)} {
		if n > 0 {
			given++
		}
	}
	if given != 1 {
		return errors.New("give one of rates (open loop), client counts (closed loop) or arrival times (a trace), not more and not none")
	}
	if s.Process != "" {
		if _, err := ParseArrivalProcess(string(s.Process)); err != nil {
			return err
		}
	}
	if s.RNG != "" {
		if _, err := ParseSource(string(s.RNG)); err != nil {
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
	if len(s.Arrivals) > 0 {
		if err := checkArrivals(s.Arrivals, s.Seconds); err != nil {
			return err
		}
	}
	for _, c := range s.Clients {
		if c < 1 || c > result.MaxClients {
			return fmt.Errorf("clients %d is not allowed: want 1 to %d", c, result.MaxClients)
		}
	}
	if s.Think < 0 || s.Think > result.MaxTimeout {
		return fmt.Errorf("think time %v is not allowed: want 0 to %v", s.Think, result.MaxTimeout)
	}
	if s.MaxInFlight < 0 || s.MaxInFlight > result.MaxMaxInFlight {
		return fmt.Errorf("in-flight cap %d is not allowed: want 0 (the default: one timeout's arrivals, at least %d) to %d", s.MaxInFlight, result.DefaultMaxInFlight, result.MaxMaxInFlight)
	}
	if s.ClientWorkers < 0 || s.ClientWorkers > result.MaxMaxInFlight {
		return fmt.Errorf("client workers %d is not allowed: want 0 (no fixed pool) to %d", s.ClientWorkers, result.MaxMaxInFlight)
	}
	if s.ClientWorkers > 0 && !s.OpenLoop() {
		return errors.New("client workers are for an open loop: a closed loop's clients are its workers")
	}
	if !s.Retry.IsZero() && !s.OpenLoop() {
		return errors.New("retry is for an open loop: a closed loop's clients wait for each answer and never retry")
	}
	if s.Fanout < 0 || s.Fanout > MaxFanout {
		return fmt.Errorf("fan-out %d is not allowed: want 1 (or 0: each arrival one request) to %d sub-requests an arrival", s.Fanout, MaxFanout)
	}
	if (s.Fanout > 1 || !s.Hedge.IsZero()) && !s.OpenLoop() {
		return errors.New("fan-out and hedging are for an open loop: a closed loop's clients send one request at a time")
	}
	if (s.Fanout > 1 || !s.Hedge.IsZero()) && !s.Retry.IsZero() {
		return errors.New("retry does not go with fan-out or hedging yet: give one client option, retry or fan-out and hedge")
	}
	if k := float64(max(s.Fanout, 1)); k > 1 {
		for _, r := range s.Rates {
			if r*k > result.MaxRate || r*k*s.Seconds > result.MaxArrivals {
				return fmt.Errorf("fan-out %d at rate %v for %v s sends %v sub-requests a second, %v in all: want at most %d a second and %d in one window", s.Fanout, r, s.Seconds, r*k, r*k*s.Seconds, result.MaxRate, int(result.MaxArrivals))
			}
		}
		if n := float64(len(s.Arrivals)) * k; n > result.MaxArrivals || n/s.Seconds > result.MaxRate {
			return fmt.Errorf("fan-out %d of %d arrivals in %v s sends %v sub-requests: want at most %d a second and %d in one window", s.Fanout, len(s.Arrivals), s.Seconds, n, result.MaxRate, int(result.MaxArrivals))
		}
	}
	if s.Critical < 0 || s.Sheddable < 0 || s.Critical+s.Sheddable > 1 || math.IsNaN(s.Critical+s.Sheddable) {
		return fmt.Errorf("critical %g and sheddable %g are not allowed: want shares from 0 to 1 of the arrivals, together at most 1", s.Critical, s.Sheddable)
	}
	if (s.Critical > 0 || s.Sheddable > 0) && !s.OpenLoop() {
		return errors.New("critical and sheddable shares are for an open loop")
	}
	if err := CheckChangeTimes(s.Changes, s.Seconds); err != nil {
		return err
	}
	if err := checkSampleEvery(s.SampleEvery); err != nil {
		return err
	}
	if s.DrainWait < 0 {
		return fmt.Errorf("drain wait %v is not allowed: want 0 (default %v) or more", s.DrainWait, DefaultDrainWait)
	}
	return nil
}

// Windows is how many windows the sweep has.
func (s Sweep) Windows() int {
	if len(s.Arrivals) > 0 {
		return 1
	}
	return max(len(s.Rates), len(s.Clients))
}

// OpenLoop reports whether window i sends at scheduled times (a rate or
// the arrival trace) rather than from closed-loop clients.
func (s Sweep) OpenLoop() bool { return len(s.Clients) == 0 }

// windowSeed is open-loop window i's seed: RNG.WindowSeed(Seed, Rates[i],
// k) for its k-th repeat of the rate in the sweep, Seed for a trace.
func (s Sweep) windowSeed(i int) uint64 {
	if len(s.Arrivals) > 0 || i < 0 || i >= len(s.Rates) {
		return s.Seed
	}
	again := 0
	for _, r := range s.Rates[:i] {
		if r == s.Rates[i] {
			again++
		}
	}
	return s.RNG.WindowSeed(s.Seed, s.Rates[i], again)
}

// WindowClasses returns the class of each of n arrivals of a window
// with seed seed, critical and sheddable the shares of the two (nil when
// both are 0: every arrival default). Each arrival draws on its own from
// a PCG seeded with (seed, "class"), so a real run and its simulation
// mark the same arrivals, and the schedule's draws are untouched.
func WindowClasses(n int, critical, sheddable float64, seed uint64) []result.Class {
	if critical <= 0 && sheddable <= 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, 0x636c617373))
	out := make([]result.Class, n)
	for i := range out {
		switch u := r.Float64(); {
		case u < critical:
			out[i] = result.Critical
		case u < critical+sheddable:
			out[i] = result.Sheddable
		}
	}
	return out
}

// WindowSchedule returns the intended send times of open-loop window i:
// the arrival trace, or the schedule drawn from RNG with the window's
// seed (RNG.WindowSeed(Seed, Rates[i], k) for its k-th repeat of the rate
// in the sweep) at Rates[i]. A real run and a simulation of the same sweep
// send exactly these, and so does any sweep with the same seed, source,
// process and seconds at the first window of that rate.
func (s Sweep) WindowSchedule(i int) ([]time.Duration, error) {
	if len(s.Arrivals) > 0 {
		return s.Arrivals, nil
	}
	if i < 0 || i >= len(s.Rates) {
		return nil, fmt.Errorf("window %d is not an open-loop window of this sweep: want 0 to %d", i, len(s.Rates)-1)
	}
	kind := s.Process
	if kind == "" {
		kind = Poisson
	}
	return s.RNG.Schedule(kind, s.Rates[i], s.Seconds, s.windowSeed(i))
}

// WindowRate is window i's offered rate as its row reports it: Rates[i],
// or for an arrival trace its arrivals ÷ Seconds (0 for closed loop,
// whose row reports sent ÷ seconds).
func (s Sweep) WindowRate(i int) float64 {
	if len(s.Arrivals) > 0 {
		return result.Round(float64(len(s.Arrivals))/s.Seconds, 100)
	}
	if i < len(s.Rates) {
		return s.Rates[i]
	}
	return 0
}

// Run runs the sweep. For each window it waits for the lab to drain (at most
// DrainWait; the row's Note says so if it did not), resets the lab's
// counters, runs the window, waits for every request to end, reads the lab's
// counters and builds the row. When handle is not nil Run calls it with
// progress at least every ProgressEvery while a window runs, a knob event
// as the lab takes each knob change, a sample event for each interval of a
// run over time, a row event as each window ends and a done event last.
// Calls never overlap and come in that order, but progress, knob and
// sample calls come from goroutines of Run's own (the window's progress
// ticker, its sampler, its knob changer), all ended before Run returns; the
// next window does not begin until the call with a row returns. Once ctx is
// cancelled progress is no longer handed over; row and done always are.
// Cancelling ctx stops the sweep cleanly: the window in
// progress still accounts for every arrival, its row is handed over with a
// note, and
// Run returns ctx's error. A failure of the lab's control API stops the sweep
// with an error; the user's own mistakes come back from Validate before
// anything is sent.
//
// With a Driver, Run neither sends nor drains nor pauses: each window is
// the driver's, which starts from an empty lab as a drained one would, and
// sends no progress.
func (s Sweep) Run(ctx context.Context, handle func(result.Event)) (result.Report, error) {
	if s.Driver == nil {
		// Replies end when they arrive only while the kernel stamps them.
		defer holdArrivalStamps()()
	}
	var rep result.Report
	n := s.Windows()
	var handling sync.Mutex // one call of handle at a time
	emit := func(e result.Event) {
		if handle == nil || e.Kind == result.EventProgress && ctx.Err() != nil {
			return
		}
		e.Windows = n
		handling.Lock()
		defer handling.Unlock()
		handle(e)
	}
	finish := func(err error) (result.Report, error) {
		done := result.Event{Kind: result.EventDone, WindowProgress: result.WindowProgress{Window: len(rep.Windows), Seconds: s.Seconds}}
		if err != nil {
			done.Error = err.Error()
		}
		emit(done)
		return rep, err
	}
	if err := s.Validate(); err != nil {
		return finish(err)
	}
	drainWait := s.DrainWait
	if drainWait == 0 {
		drainWait = DefaultDrainWait
	}
	length := secondsToDuration(s.Seconds)
	changes := sortedChanges(s.Changes)
	var knobsBefore [][]byte // the changed knobs' values before the sweep, as POST /config bodies
	if len(changes) > 0 && s.Driver == nil {
		var err error
		if knobsBefore, err = s.Control.knobValues(ctx, changes); err != nil {
			return finish(ctxOr(ctx, err))
		}
	}

	for i := range n {
		if i > 0 && s.Pause > 0 && s.Driver == nil {
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
		if s.Control != nil && s.Driver == nil {
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

		base := result.Event{Kind: result.EventProgress, WindowProgress: result.WindowProgress{Windows: n, Window: i, Seconds: s.Seconds}}
		w := result.Window{Index: i, MaxInFlight: s.MaxInFlight, ClientWorkers: s.ClientWorkers, Think: s.Think, Length: length, SampleEvery: s.SampleEvery}
		rate := s.WindowRate(i)
		if s.OpenLoop() {
			base.Rate = rate
			sched, err := s.WindowSchedule(i)
			if err != nil {
				return finish(err)
			}
			w.Schedule = sched
			w.Retry, w.RetrySeed = s.Retry.String(), s.windowSeed(i)
			w.Classes = WindowClasses(len(sched), s.Critical, s.Sheddable, w.RetrySeed)
			w.Fanout, w.Hedge = s.Fanout, s.Hedge.String()
		} else {
			w.Clients = s.Clients[i]
			base.Clients = w.Clients
		}
		progress := func(p Progress) {
			e := base
			e.ElapsedMS = result.MS(p.Elapsed)
			e.Sent, e.Ended, e.NotSent, e.ClientBusy = p.Sent, p.Ended, p.NotSent, p.ClientBusy
			emit(e)
		}
		// The window's knob changes run beside it, timed from just before
		// it starts (its own clock starts microseconds later).
		var made []applied
		changed := make(chan struct{})
		ended := make(chan struct{})
		if len(changes) > 0 && s.Driver == nil {
			ch := changer{ctl: s.Control, changes: changes, emit: emit, base: base.WindowProgress}
			start := time.Now()
			go func() {
				defer close(changed)
				made = ch.run(ctx, start, ended)
			}()
		} else {
			close(changed)
		}

		var sampling Sampling
		if s.SampleEvery > 0 {
			sampling.Every = s.SampleEvery
			sampling.Send = func(smp result.Sample) {
				e := result.Event{Kind: result.EventSample, WindowProgress: base.WindowProgress, Sample: &smp}
				e.ElapsedMS = result.MS(secondsToDuration(smp.AtS + smp.Seconds))
				emit(e)
			}
			if s.Control != nil {
				sampling.Lab = s.Control.Stats
			}
		}

		var res result.Result
		var lab *result.LabStats
		switch {
		case s.Driver != nil:
			w.Changes = changes
			r, st, err := s.Driver.RunWindow(ctx, w)
			if err != nil {
				return finish(err)
			}
			res, lab = r, &st
			var samples []result.Sample
			if s.SampleEvery > 0 {
				// A driven window is sampled from its records once it has
				// ended, the lab's side from what the driver read at each
				// boundary and at the end (Lab false where it read none).
				samples = SampleRecords(i, res.Records, res.Elapsed, s.SampleEvery)
				for k := range samples {
					switch {
					case k == len(samples)-1:
						setLab(&samples[k], st)
					case k < len(r.Lab):
						setLab(&samples[k], r.Lab[k])
					}
					// The breaker's state likewise: at each boundary, the
					// last sample's at the window's end.
					switch {
					case len(r.Breaker) == 0:
					case k == len(samples)-1:
						samples[k].Breaker = r.Breaker[len(r.Breaker)-1]
					case k < len(r.Breaker)-1:
						samples[k].Breaker = r.Breaker[k]
					}
				}
				res.Samples = samples
			}
			// The driver made its first Changed changes, each at its time;
			// its knob and sample events go out in time order.
			for k, c := range changes {
				if k >= r.Changed {
					made = append(made, applied{change: c, skipped: true})
					continue
				}
				for len(samples) > 0 && secondsToDuration(samples[0].AtS+samples[0].Seconds) <= c.At {
					sampling.Send(samples[0])
					samples = samples[1:]
				}
				made = append(made, applied{change: c, elapsed: c.At})
				e := result.Event{Kind: result.EventKnob, WindowProgress: base.WindowProgress, Change: c.String()}
				e.ElapsedMS = result.MS(c.At)
				emit(e)
			}
			for _, smp := range samples {
				sampling.Send(smp)
			}
		case w.Clients == 0:
			res = Open{Target: s.Target, Schedule: w.Schedule, MaxInFlight: w.MaxInFlight, ClientWorkers: w.ClientWorkers, Window: i, Sampling: sampling,
				Retry: s.Retry, RetrySeed: w.RetrySeed, Classes: w.Classes, Fanout: s.Fanout, Hedge: s.Hedge, Split: s.Split}.Run(ctx, progress)
		default:
			res = Closed{Target: s.Target, Clients: w.Clients, Think: w.Think, Length: length, Window: i, Sampling: sampling}.Run(ctx, progress)
		}
		close(ended)
		<-changed
		var changeErr error
		for _, a := range made {
			if a.err != nil {
				changeErr = a.err
			}
		}
		notes = append(notes, changeNotes(made)...)

		row := res.Metrics.Row(rate, length)
		row.Window = i
		if w.Clients > 0 {
			row.Clients = w.Clients
			row.Offered = result.Round(float64(row.Sent)/s.Seconds, 100)
		}
		var cut error
		if ctx.Err() != nil {
			notes = append(notes, "cancelled before the window ended")
			cut = context.Cause(ctx)
		} else if s.Control != nil && lab == nil {
			st, err := s.Control.Stats(ctx)
			if err != nil {
				// Every request of the window has its record; only the
				// lab's side of the row is missing. The window is handed
				// over cut short, so nothing measured is lost, and the
				// sweep stops.
				cut = ctxOr(ctx, err)
				notes = append(notes, "the lab's statistics could not be read after the window ("+err.Error()+")")
			} else {
				lab = &st
			}
		}
		if s.Driver == nil && slices.ContainsFunc(made, func(a applied) bool { return !a.skipped }) {
			// Every window starts from the knobs the sweep began with, and
			// a cancelled sweep leaves the lab with them too.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreWait)
			if err := s.Control.restore(rctx, knobsBefore); err != nil && changeErr == nil && ctx.Err() == nil {
				changeErr = err
			}
			cancel()
		}
		if lab != nil && ctx.Err() == nil {
			row.Done = int(lab.Done)
			row.Queued = lab.QueuedMax
			row.Backlogged = lab.BackloggedMax
			row.LabServiceMS = result.Round(lab.ServiceMS.Mean, 1000)
			row.LabServiceSCV = result.Round(lab.ServiceMS.SCV, 1000)
			row.LabWaitMS = result.Round(lab.QueueWaitMS.Mean, 1000)
			row.LabCPUMS = result.Round(lab.ProcessCPUMS, 1000)
		}
		if row.Lost != 0 {
			notes = append(notes, fmt.Sprintf("%d requests lost: a generator bug", row.Lost))
		}
		row.Note = strings.Join(notes, "; ")
		at := result.WindowProgress{Windows: n, Window: i, Rate: base.Rate, Clients: w.Clients, Seconds: s.Seconds, ElapsedMS: result.MS(res.Elapsed),
			Sent: row.Sent, Ended: row.Sent - row.Lost, NotSent: row.NotSent, ClientBusy: row.ClientBusy}
		wr := result.WindowReport{Row: row, Records: res.Records, Progress: at, Samples: res.Samples, Cut: cut}
		rep.Windows = append(rep.Windows, wr)
		if s.WindowDone != nil {
			s.WindowDone(wr)
		}
		r := row
		emit(result.Event{Kind: result.EventRow, WindowProgress: at, Row: &r})
		if ctx.Err() != nil {
			return finish(ctx.Err())
		}
		if cut != nil {
			return finish(cut)
		}
		if changeErr != nil {
			return finish(changeErr)
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
