package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"capacitylab/affinity"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/store"
)

// Causes that end a sweep early, besides errCancelled and errShutdown.
var (
	errChildDied  = errors.New("the lab child exited")
	errNotDrained = errors.New("the lab did not drain")
	errNotSaved   = errors.New("the run's data could not be saved")
)

// notDrainedNote is how loadrun's row note begins when the lab still had
// requests queued or in service before a window.
const notDrainedNote = "lab had not drained"

// childDeathGrace is how long a failed sweep waits to see whether the lab
// child died, so the learner is told the cause rather than the symptom.
const childDeathGrace = time.Second

// execute runs one run from start to finish and records how it ended.
func (r *Runner) execute(ru *run) {
	status, reason, kind, finished := r.measure(ru)
	ru.cancel(nil)
	r.mu.Lock()
	r.finishLocked(ru, status, reason, Event{Kind: kind, Window: finished, Windows: ru.req.Windows()})
	status = ru.status // failed if a done run could not be stored as done
	r.mu.Unlock()
	if r.cfg.Finished != nil {
		r.cfg.Finished(ru.learner, ru.req.Lesson, ru.req.Block, status)
	}
}

// measure starts the lab child, runs the sweep, stops the child and saves
// the raw records. It returns the run's status, the reason to show, the
// terminal event's kind and how many windows finished.
func (r *Runner) measure(ru *run) (Status, string, Kind, int) {
	ctx, q := ru.ctx, ru.req
	n := q.Windows()
	ended := func(cause error, finished int) (Status, string, Kind, int) {
		if errors.Is(cause, errCancelled) {
			return store.RunCancelled, fmt.Sprintf("You cancelled it after %d of %d windows; the rows measured so far are kept.", finished, n), KindCancelled, finished
		}
		return store.RunInterrupted, fmt.Sprintf("The server stopped after %d of %d windows; the rows measured so far are kept. Run it again for the rest.", finished, n), KindInterrupted, finished
	}

	child, err := labsvc.StartChild(ctx, r.cfg.Child, q.Config)
	if err != nil {
		if ctx.Err() != nil {
			return ended(context.Cause(ctx), 0)
		}
		r.log.Error("lab child did not start", "run", ru.id, "err", err)
		return store.RunFailed, "The lab service did not start, so nothing was measured. " + err.Error(), KindFailed, 0
	}
	defer child.Stop()
	unpin := r.keepOffLab(ru, child)
	defer unpin()

	target, err := loadrun.NewTarget(child.Target(), q.Timeout())
	if err != nil {
		return store.RunFailed, "The run could not be set up: " + err.Error(), KindFailed, 0
	}
	control, err := loadrun.NewControl(child.Control(), r.hc)
	if err != nil {
		return store.RunFailed, "The run could not be set up: " + err.Error(), KindFailed, 0
	}
	sw := q.Plan()
	sw.Target, sw.Control, sw.DrainWait, sw.Pause = target, &control, r.cfg.DrainWait, WindowPause
	// Each window's raw records are saved as it ends, before the next
	// window begins, so a crash keeps them and saving never overlaps a
	// measurement.
	sctx, scancel := context.WithCancelCause(ctx)
	defer scancel(nil)
	// A window whose rows or records cannot be stored ends the run: it
	// could not be reported done, and later windows would be lost too.
	saved := func(err error) {
		if err != nil {
			scancel(errNotSaved)
		}
	}
	sw.WindowDone = func(w loadrun.WindowReport) { saved(r.saveRecords(ru, w.Row.Window, w.Records)) }

	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-child.Done():
			scancel(errChildDied)
		case <-sctx.Done():
		}
	}()

	r.mu.Lock()
	ru.labPID = child.Pid()
	ru.log.append(Event{Kind: KindStarted, Windows: n, Seconds: q.Seconds, EstimatedEnd: ru.started.Add(ru.estimate)})
	r.mu.Unlock()

	type result struct {
		rep loadrun.Report
		err error
	}
	events := make(chan loadrun.Event, 16)
	resc := make(chan result, 1)
	go func() {
		rep, err := sw.Run(sctx, events)
		resc <- result{rep, err}
	}()
	var drainNote string
	rows := 0
	// Progress: the first report of a window is logged at once, then the
	// newest report every ProgressEvery (see the package doc).
	tick := time.NewTicker(ProgressEvery)
	tick.Stop()
	defer tick.Stop()
	var tickC <-chan time.Time
	var pending *loadrun.Event
	logProgress := func(e loadrun.Event) {
		ru.log.append(Event{Kind: KindProgress, Window: e.Window, Windows: e.Windows, Rate: e.Rate, Clients: e.Clients,
			Seconds: e.Seconds, ElapsedMS: e.ElapsedMS, Sent: e.Sent, Ended: e.Ended, NotSent: e.NotSent})
	}
	progressWindow := -1
loop:
	for {
		var e loadrun.Event
		select {
		case <-tickC:
			if pending != nil {
				logProgress(*pending)
				pending = nil
			}
			continue
		case ev, ok := <-events:
			if !ok {
				break loop
			}
			e = ev
		}
		switch e.Kind {
		case loadrun.EventProgress:
			if e.Window != progressWindow {
				progressWindow = e.Window
				logProgress(e)
				tick.Reset(ProgressEvery)
				tickC = tick.C
				continue
			}
			pending = &e
		case loadrun.EventRow:
			// The row carries the window's final counts.
			pending, tickC = nil, nil
			tick.Stop()
			row := *e.Row
			if sctx.Err() == nil {
				rows++
			} else {
				row.Note = cutNote(row.Note, context.Cause(sctx))
			}
			saved(r.addRow(ru, row))
			ru.log.append(Event{Kind: KindRow, Window: e.Window, Windows: e.Windows, Rate: e.Rate, Clients: e.Clients,
				Seconds: e.Seconds, ElapsedMS: e.ElapsedMS, Row: &row})
			if drainNote == "" && strings.Contains(row.Note, notDrainedNote) {
				drainNote = row.Note
				scancel(errNotDrained)
			}
		}
	}
	res := <-resc
	scancel(nil)
	<-watched

	// A control call failing is usually the symptom of the child dying:
	// give the death a moment to be seen, so the learner gets the cause.
	if res.err != nil && ctx.Err() == nil && child.Err() == nil {
		select {
		case <-child.Done():
		case <-time.After(childDeathGrace):
		}
	}
	childErr := child.Err()
	if err := child.Stop(); err != nil && childErr == nil {
		childErr = err
	}
	unpin()
	r.mu.Lock()
	ru.labPID = 0
	r.mu.Unlock()

	finished := rows
	r.mu.Lock()
	saveErr := ru.saveErr
	r.mu.Unlock()
	if saveErr != nil {
		return store.RunFailed, notSavedReason(saveErr, finished, n), KindFailed, finished
	}
	if childErr != nil {
		r.childDied(ru, min(finished+1, n), childErr)
	}
	switch {
	case childErr != nil:
		return store.RunFailed, fmt.Sprintf("The lab service stopped during window %d of %d, so the run stopped there (the rows before it are kept). "+
			"If your knobs ask for a lot of memory or processor, try smaller ones; otherwise run it again. What the lab said: %v",
			min(finished+1, n), n, childErr), KindFailed, finished
	case errors.Is(context.Cause(sctx), errNotDrained):
		return store.RunFailed, fmt.Sprintf("The lab was still busy with an earlier window's backlog when window %d began (%s), so later windows would measure "+
			"the backlog, not their own rate. Lower the highest rates, add WORKERS, or set LIMIT so the lab refuses what it cannot serve.",
			finished, drainNote), KindFailed, finished
	case ctx.Err() != nil:
		return ended(context.Cause(ctx), finished)
	case res.err != nil:
		r.log.Error("sweep failed", "run", ru.id, "err", res.err)
		return store.RunFailed, fmt.Sprintf("The sweep stopped after %d of %d windows: %v. Run it again; if it keeps failing, tell the instructor.", finished, n, res.err), KindFailed, finished
	}
	return store.RunDone, "", KindDone, finished
}

// childDied logs a lab child that exited unexpectedly during window (from
// 1) of run ru, with its exit status and last stderr lines, and counts it.
func (r *Runner) childDied(ru *run, window int, err error) {
	if r.met != nil {
		r.met.deaths.Inc()
	}
	var ee *labsvc.ExitError
	if errors.As(err, &ee) {
		r.log.Warn("lab child died", "run", ru.id, "window", window, "pid", ee.Pid, "exit", ee.Err, "last_words", ee.LastWords)
		return
	}
	r.log.Warn("lab child died", "run", ru.id, "window", window, "err", err)
}

// addRow keeps a finished window's row and saves it; an error is logged
// and kept as the run's saveErr.
func (r *Runner) addRow(ru *run, row loadrun.Row) error {
	r.mu.Lock()
	ru.rows = append(ru.rows, row)
	r.mu.Unlock()
	if r.cfg.Store == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	err := r.cfg.Store.AddRow(ctx, ru.id, row)
	if err != nil {
		r.log.Error("saving row", "run", ru.id, "window", row.Window, "err", err)
		r.notSaved(ru, err)
	}
	return err
}

// saveRecords saves the raw records of one finished window; an error is
// logged and kept as the run's saveErr.
func (r *Runner) saveRecords(ru *run, window int, recs []loadrun.Record) error {
	if r.cfg.Store == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	err := r.cfg.Store.AddRecords(ctx, ru.id, recs)
	if err != nil {
		r.log.Error("saving records", "run", ru.id, "window", window, "err", err)
		r.notSaved(ru, err)
	}
	return err
}

// notSaved keeps the first failure to store a run's data.
func (r *Runner) notSaved(ru *run, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ru.saveErr == nil {
		ru.saveErr = err
	}
}

// notSavedReason tells the learner that a run's data could not be stored,
// and why, in their terms.
func notSavedReason(err error, finished, n int) string {
	why := "the server could not write to its database (the error is in the server's log)"
	if store.IsFull(err) {
		why = "the server's disk is full"
	}
	return fmt.Sprintf("The run's measurements could not be saved, because %s, so it stopped after %d of %d windows and is not kept as done. "+
		"Run it again later; if it happens again, tell whoever runs this server.", why, finished, n)
}

// keepOffLab pins this process (the load generator, the web server and its
// websocket watchers) to the processors the run's lab child does not use,
// with GOMAXPROCS lowered to their number, and returns what puts both
// back; calling it more than once is harmless. With more than one run at a time, or when the lab has every
// processor, nothing changes and a log line says why.
func (r *Runner) keepOffLab(ru *run, child *labsvc.Child) func() {
	if r.cfg.Concurrent > 1 {
		r.log.Info("generator not pinned away from the lab: runs share the machine", "run", ru.id, "concurrent", r.cfg.Concurrent)
		return func() {}
	}
	cpus, err := affinity.ProcessCPUs(child.Pid())
	if err == nil {
		var p *affinity.Pinning
		if p, err = affinity.PinAwayFrom(cpus); err == nil {
			r.log.Info(p.String(), "run", ru.id)
			// As many Go processors as operating system processors are
			// left: with more, the kernel deschedules threads that hold
			// one, and goroutines queued on them (the generator's) wait
			// for the kernel's time slices rather than for Go's
			// scheduler, which runs them within fanoutChunk writes.
			prev := -1
			if n := len(p.Generator); n > 0 && n < runtime.GOMAXPROCS(0) {
				prev = runtime.GOMAXPROCS(n)
			}
			return sync.OnceFunc(func() {
				switch {
				case prev <= 0:
				case os.Getenv("GOMAXPROCS") == "":
					// The runtime chose it: let it choose again, and go
					// on following the container's processor limit.
					runtime.SetDefaultGOMAXPROCS()
				default:
					runtime.GOMAXPROCS(prev)
				}
				if err := p.Restore(); err != nil {
					r.log.Error("restoring processor affinity", "run", ru.id, "err", err)
				}
			})
		}
	}
	r.log.Warn("generator not pinned away from the lab", "run", ru.id, "err", err)
	return func() {}
}

// cancelledNote is loadrun's row note for a window cut short.
const cancelledNote = "cancelled before the window ended"

// cutNote rewrites loadrun's note on a window cut short to say why.
func cutNote(note string, cause error) string {
	why := "the server stopped during this window"
	switch {
	case errors.Is(cause, errChildDied):
		why = "the lab process died during this window"
	case errors.Is(cause, errCancelled):
		why = "you cancelled the run during this window"
	case errors.Is(cause, errNotDrained):
		return note
	}
	if strings.Contains(note, cancelledNote) {
		return strings.Replace(note, cancelledNote, why, 1)
	}
	if note == "" {
		return why
	}
	return note + "; " + why
}
