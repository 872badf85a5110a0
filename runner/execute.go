package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"capacitylab/childproc"
	"capacitylab/loadrun"
	"capacitylab/measure"
	"capacitylab/result"
	"capacitylab/store"
)

// Causes that end a sweep early, besides errCancelled and errShutdown.
var (
	errNotDrained = errors.New("the lab did not drain")
	errNotSaved   = errors.New("the run's data could not be saved")
)

// notDrainedNote is how loadrun's row note begins when the lab still had
// requests queued or in service before a window.
const notDrainedNote = "lab had not drained"

// execute runs one run from start to finish and records how it ended.
func (r *Runner) execute(ru *run) {
	status, reason, kind, finished := r.measure(ru)
	ru.cancel(nil)
	r.mu.Lock()
	r.finishLocked(ru, status, reason, Event{Kind: kind, WindowProgress: result.WindowProgress{Window: finished, Windows: ru.req.Windows()}})
	status = ru.status // failed if a done run could not be stored as done
	r.mu.Unlock()
	if r.cfg.Finished != nil {
		r.cfg.Finished(ru.learner, ru.req.Lesson, ru.req.Block, status)
	}
}

// measure runs the run's preset (measure.Measure: a lab child and a load
// child of its own), logs and saves what it hands over, and returns the
// run's status, the reason to show, the terminal event's kind and how many
// windows finished.
func (r *Runner) measure(ru *run) (store.RunStatus, string, Kind, int) {
	ctx, q := ru.ctx, ru.req
	n := q.Windows()
	var drainNote string
	lastProgress := result.WindowProgress{Window: -1} // the last progress logged
	res, err := measure.Measure(ctx, measure.Config{Lab: r.cfg.Lab, Load: r.cfg.Load, DrainWait: r.cfg.DrainWait, Generator: r.cfg.Generator}, q.Preset, func(e measure.Event) error {
		switch e.Kind {
		case measure.EventStarted:
			r.log.Info("run started", "run", ru.id, "lab_pid", e.Lab.Pid, "lab_cpus", fmt.Sprint(e.Lab.CPUs),
				"load_pid", e.Load.Pid, "load_cpus", fmt.Sprint(e.Load.CPUs), "load_gomaxprocs", e.Load.GoMaxProcs, "pinning", e.Load.Note)
			r.mu.Lock()
			ru.labPID, ru.loadPID, ru.measuring = e.Lab.Pid, e.Load.Pid, true
			ru.log.append(Event{Kind: KindStarted, EstimatedEnd: ru.started.Add(ru.estimate), WindowProgress: q.at()})
			r.mu.Unlock()
		case measure.EventProgress:
			// A window's last report comes as it ends, often just after a
			// tick: it is not logged when it follows the one before by
			// less than half of ProgressEvery (the row, right after it,
			// carries the final counts), so watchers get progress at most
			// about four times a second.
			if e.Window == lastProgress.Window && e.ElapsedMS-lastProgress.ElapsedMS < float64(loadrun.ProgressEvery/2)/float64(time.Millisecond) {
				break
			}
			lastProgress = e.WindowProgress
			ru.log.append(Event{Kind: KindProgress, WindowProgress: e.WindowProgress})
		case measure.EventKnob:
			ru.log.append(Event{Kind: KindKnob, WindowProgress: e.WindowProgress, Change: e.Change})
		case measure.EventSample:
			if e.Sample != nil {
				r.mu.Lock()
				ru.samples = append(ru.samples, *e.Sample)
				r.mu.Unlock()
			}
			ru.log.append(Event{Kind: KindSample, WindowProgress: e.WindowProgress, Sample: e.Sample})
		case measure.EventWindow:
			// The raw records, the row and the row event go in one write
			// with the events before them, and the next window waits for
			// it, so saving never overlaps a measurement and a crash
			// keeps every window that ended. A window that cannot be
			// stored ends the run (its log ends with a failed event
			// saying so): it could not be reported done, and later
			// windows would be lost too.
			row := *e.Row
			if e.Cut != nil {
				row.Note = cutNote(row.Note, e.Cut)
			}
			r.mu.Lock()
			ru.rows = append(ru.rows, row)
			r.mu.Unlock()
			logged := ru.log.add(pending{e: Event{Kind: KindRow, WindowProgress: e.WindowProgress, Row: &row}, records: e.Records, row: &row})
			if err := ru.log.wait(logged.Seq); err != nil || logged.Seq == 0 {
				return errNotSaved
			}
			if e.Cut == nil && drainNote == "" && strings.Contains(row.Note, notDrainedNote) {
				drainNote = row.Note
				return errNotDrained
			}
		}
		return nil
	})
	r.mu.Lock()
	ru.labPID, ru.loadPID = 0, 0
	saveErr := ru.saveErr
	r.mu.Unlock()

	finished := res.Windows
	var se *measure.StartError
	var ee *childproc.ExitError
	var pe *measure.ProtocolError
	var sw *measure.SweepError
	switch {
	case err == nil:
		return store.RunDone, "", KindDone, finished
	case saveErr != nil:
		return store.RunFailed, notSavedReason(saveErr, finished, n), KindFailed, finished
	case errors.As(err, &se):
		if se.Child == "lab child" {
			r.log.Error("lab child did not start", "run", ru.id, "err", se.Err)
			return store.RunFailed, "The lab service did not start, so nothing was measured. If your knobs ask for a lot of memory or processor, try smaller ones; " +
				"otherwise run it again, and if it keeps failing, tell the instructor (the reason is in the server's log).", KindFailed, 0
		}
		r.log.Error("load child did not start", "run", ru.id, "err", se.Err)
		return store.RunFailed, "The load generator did not start, so nothing was measured. Run it again; if it keeps failing, tell the instructor.", KindFailed, 0
	case errors.As(err, &ee):
		window := min(finished+1, n)
		r.childDied(ru, window, ee)
		if ee.Name == "load child" {
			return store.RunFailed, fmt.Sprintf("The load generator stopped during window %d of %d, so the run stopped there (the rows before it are kept). "+
				"Run it again; if it keeps failing, tell the instructor.", window, n), KindFailed, finished
		}
		return store.RunFailed, fmt.Sprintf("The lab service stopped during window %d of %d, so the run stopped there (the rows before it are kept). "+
			"If your knobs ask for a lot of memory or processor, try smaller ones; otherwise run it again. The lab ended with %s; its last words: %s",
			window, n, ee.Err, ee.LastWords), KindFailed, finished
	case errors.Is(err, errNotDrained):
		return store.RunFailed, fmt.Sprintf("The lab was still busy with an earlier window's backlog when window %d began (%s), so later windows would measure "+
			"the backlog, not their own rate. Lower the highest rates, add WORKERS, or set LIMIT so the lab refuses what it cannot serve.",
			finished, drainNote), KindFailed, finished
	case ctx.Err() != nil:
		cause := context.Cause(ctx)
		if errors.Is(cause, errCancelled) {
			return store.RunCancelled, fmt.Sprintf("You cancelled it after %d of %d windows; the rows measured so far are kept.", finished, n), KindCancelled, finished
		}
		return store.RunInterrupted, fmt.Sprintf("The server stopped after %d of %d windows; the rows measured so far are kept. Run it again for the rest.", finished, n), KindInterrupted, finished
	case errors.As(err, &pe):
		r.log.Error("load child broke the pipe protocol", "run", ru.id, "err", err)
		return store.RunFailed, fmt.Sprintf("The load generator stopped making sense after %d of %d windows, so the run stopped there (the rows before it are kept). "+
			"Run it again; if it keeps failing, tell the instructor.", finished, n), KindFailed, finished
	case errors.As(err, &sw):
		r.log.Error("sweep failed", "run", ru.id, "err", err)
		return store.RunFailed, fmt.Sprintf("The load generator could not reach the lab's control after %d of %d windows, so the run stopped there (the rows before it are kept). "+
			"Run it again; if it keeps failing, tell the instructor.", finished, n), KindFailed, finished
	}
	r.log.Error("run failed", "run", ru.id, "err", err)
	return store.RunFailed, fmt.Sprintf("The run stopped after %d of %d windows for a reason on the server's side (the rows before it are kept). "+
		"Run it again; if it keeps failing, tell the instructor.", finished, n), KindFailed, finished
}

// childDied logs a child (the lab's or the load generator's) that exited
// unexpectedly during window (from 1) of run ru, with its exit status and
// last stderr lines, and counts it.
func (r *Runner) childDied(ru *run, window int, ee *childproc.ExitError) {
	if r.met != nil {
		if ee.Name == "load child" {
			r.met.loadDeaths.Inc()
		} else {
			r.met.deaths.Inc()
		}
	}
	r.log.Warn(ee.Name+" died", "run", ru.id, "window", window, "pid", ee.Pid, "exit", ee.Err, "last_words", ee.LastWords)
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

// cancelledNote is loadrun's row note for a window cut short.
const cancelledNote = "cancelled before the window ended"

// cutNote rewrites loadrun's note on a window cut short to say why.
func cutNote(note string, cause error) string {
	why := "the server stopped during this window"
	var ee *childproc.ExitError
	switch {
	case errors.As(cause, &ee):
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
