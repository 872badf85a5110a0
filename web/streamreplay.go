package web

import (
	"context"
	"errors"
	"math"
	"time"

	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
	"capacitylab/wsconn"
)

// replayStream is a finished run replayed at the pace it ran (pace=real):
// its events rebuilt from the stored rows (pacedEvents), after since, each
// sent at its time from when the websocket is up. A since at or past the
// replay's end ends the stream at once.
func (s *server) replayStream(ctx context.Context, id, learner string, since int) (streamOpener, error) {
	if s.runner != nil {
		if snap, ok := s.runner.Get(id); ok && (snap.Status == store.RunQueued || snap.Status == store.RunRunning) {
			return nil, errorf(CodeConflict, "The run is still live: watch it live rather than replayed.")
		}
	}
	stored, err := s.store.Run(ctx, id)
	if errors.Is(err, store.ErrNoRun) || err == nil && hiddenFrom(stored, learner) {
		return nil, noSuchRun(id)
	}
	if err != nil {
		return nil, err
	}
	if s.followed(stored) {
		return nil, errorf(CodeConflict, "The run is still live: watch it live rather than replayed.")
	}
	paced := pacedEvents(stored)
	paced = paced[min(since, len(paced)):]
	return func() (wsconn.Source, func()) {
		q, stop := pace(paced)
		return q, stop
	}, nil
}

// pacedEvent is an event of a replay and when to send it, from the
// replay's start.
type pacedEvent struct {
	at time.Duration
	e  runner.Event
}

// pacedEvents rebuilds a finished run as it unfolded: started, then for
// each window progress every loadrun.ProgressEvery (its counts interpolated
// evenly from the row: a replay shows pace, not the original arrivals)
// and its row when the window's seconds have passed, then the terminal
// event. Windows follow each other with runner.WindowOverhead between.
func pacedEvents(r store.Run) []pacedEvent {
	n := len(r.Rows)
	var out []pacedEvent
	add := func(at time.Duration, e runner.Event) {
		e.Seq = len(out) + 1
		e.At = r.StartedAt.Add(at)
		e.Windows = n
		out = append(out, pacedEvent{at: at, e: e})
	}
	seconds := 0.0
	if n > 0 {
		seconds = r.Rows[0].Seconds
	}
	add(0, runner.Event{Kind: runner.KindStarted, WindowProgress: result.WindowProgress{Seconds: seconds}})
	var t time.Duration
	for i := range r.Rows {
		row := r.Rows[i]
		length := time.Duration(row.Seconds * float64(time.Second))
		for el := loadrun.ProgressEvery; el < length; el += loadrun.ProgressEvery {
			frac := float64(el) / float64(length)
			sent := int(math.Round(frac * float64(row.Sent)))
			at := rowProgress(row, n)
			at.ElapsedMS, at.Sent, at.Ended = float64(el.Milliseconds()), sent, sent
			add(t+el, runner.Event{Kind: runner.KindProgress, WindowProgress: at})
		}
		t += length
		add(t, runner.Event{Kind: runner.KindRow, WindowProgress: rowProgress(row, n), Row: &row})
		t += runner.WindowOverhead
	}
	kind := runner.Kind(r.Status)
	if !kind.Terminal() {
		kind = runner.KindInterrupted
	}
	add(t, runner.Event{Kind: kind, WindowProgress: result.WindowProgress{Window: n}, Reason: r.Reason})
	return out
}

// pace hands a replay's events to a queue at their times, from a
// goroutine of its own, and ends the queue after the last; stop ends the
// goroutine early (the client went away or the server stops).
func pace(events []pacedEvent) (q *wsconn.Queue, stop func()) {
	q = wsconn.NewQueue(len(events) + 1)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		timer := time.NewTimer(0)
		defer timer.Stop()
		var start time.Time
		if len(events) > 0 {
			start = time.Now().Add(-events[0].at)
		}
		for _, pe := range events {
			timer.Reset(time.Until(start.Add(pe.at)))
			select {
			case <-timer.C:
			case <-done:
				return
			}
			q.Send(eventJSON(pe.e), "")
		}
		q.End(wsconn.CloseEnd, "end of run")
	}()
	return q, func() {
		close(done)
		<-finished
	}
}
