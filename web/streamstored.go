package web

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
	"capacitylab/wsconn"
)

// storedStream is the stream of a run the runner does not hold: one live
// on another process followed (followStream), any other its events after
// since as the store kept them (storedLog), then the close.
func (s *server) storedStream(ctx context.Context, id, learner string, since int) (streamOpener, error) {
	stored, err := s.store.Run(ctx, id)
	if errors.Is(err, store.ErrNoRun) || err == nil && hiddenFrom(stored, learner) {
		return nil, noSuchRun(id)
	}
	if err != nil {
		return nil, err
	}
	if open, err := s.followStream(ctx, stored, since); open != nil || err != nil {
		return open, err
	}
	replay, err := s.storedLog(ctx, settled(stored), since)
	if err != nil {
		return nil, err
	}
	return func() (wsconn.Source, func()) { return newRunSource(replay, nil, since, nil), func() {} }, nil
}

// storedLog is the events after since of a run the runner no longer holds
// in memory, as the store kept them: every event as it was logged and
// sent, with its seq. A run whose end was never logged (the server
// stopped, or was killed, while it was queued or running) ends with the
// terminal event the store's status says (interrupted unless it ended),
// numbered after the last stored event, which is after any event a
// watcher can have seen, since each is stored before it is sent, and
// dated as the run's end or, never stored, as its last stored event.
func (s *server) storedLog(ctx context.Context, r store.Run, since int) ([]runner.Event, error) {
	last, kind, err := s.store.LastRunEvent(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	if last == 0 {
		// Saved before events were stored.
		replay := storedEvents(r)
		if since < len(replay) {
			return replay[since:], nil
		}
		return nil, nil
	}
	stored, err := s.store.RunEvents(ctx, r.ID, since)
	if err != nil {
		return nil, err
	}
	out := make([]runner.Event, 0, len(stored)+1)
	for _, e := range stored {
		out = append(out, runner.Event{Seq: e.Seq, Kind: runner.Kind(e.Kind), JSON: e.JSON})
	}
	if !runner.Kind(kind).Terminal() && last+1 > since {
		end := runner.Kind(r.Status)
		if !end.Terminal() {
			end = runner.KindInterrupted
		}
		var q runner.Request
		json.Unmarshal(r.Request, &q) // the runner wrote it; a run without one has no windows
		at := r.EndedAt
		if at.IsZero() {
			// Its end was never stored: dated as its last stored event.
			if at, err = s.lastEventAt(ctx, r.ID, last, stored); err != nil {
				return nil, err
			}
		}
		e := runner.Event{Seq: last + 1, Kind: end, At: at, WindowProgress: result.WindowProgress{Window: len(r.Rows), Windows: q.Windows()}, Reason: r.Reason}
		e.JSON = eventJSON(e)
		out = append(out, e)
	}
	return out, nil
}

// lastEventAt is when run id's stored event last was logged: from stored,
// the events read after some seq, when it holds it, else read.
func (s *server) lastEventAt(ctx context.Context, id string, last int, stored []store.RunEvent) (time.Time, error) {
	if n := len(stored); n == 0 || stored[n-1].Seq != last {
		var err error
		if stored, err = s.store.RunEvents(ctx, id, last-1); err != nil || len(stored) == 0 {
			return time.Time{}, err
		}
	}
	var e struct {
		At time.Time `json:"at"`
	}
	json.Unmarshal(stored[len(stored)-1].JSON, &e) // the runner wrote it
	return e.At, nil
}

// storedEvents rebuilds the events of a run saved before events were
// stored (run_events) from its rows: a row event per window, then the
// terminal event. Sequence numbers count these events, from 1.
func storedEvents(r store.Run) []runner.Event {
	n := len(r.Rows)
	out := make([]runner.Event, 0, n+1)
	for i := range r.Rows {
		row := r.Rows[i]
		out = append(out, runner.Event{Seq: i + 1, Kind: runner.KindRow, At: r.EndedAt, WindowProgress: rowProgress(row, n), Row: &row})
	}
	kind := runner.Kind(r.Status)
	if !kind.Terminal() {
		kind = runner.KindInterrupted
	}
	out = append(out, runner.Event{Seq: n + 1, Kind: kind, At: r.EndedAt, WindowProgress: result.WindowProgress{Window: n, Windows: n}, Reason: r.Reason})
	return out
}

// rowProgress is where a stored run's window stood when its row came: the
// row event's WindowProgress, without the elapsed time (not stored).
func rowProgress(row result.Row, windows int) result.WindowProgress {
	return result.WindowProgress{Window: row.Window, Windows: windows, Rate: row.Offered, Clients: row.Clients, Seconds: row.Seconds}
}
