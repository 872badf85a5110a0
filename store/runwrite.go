package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"capacitylab/result"
)

// ErrNotOwner is what WriteRun fails with, wrapped, when the run is no
// longer the writer's: it ended (a reaper declared its runner lost, or it
// was interrupted at start-up) or another runner holds it. Nothing of the
// write is stored; the writer should stop the run.
var ErrNotOwner = errors.New("the run is no longer this runner's")

// RunWrite is what a run's owner stores in one transaction (WriteRun):
// finished windows' raw records and rows, the events logged since the
// last write, and, with the run's terminal event, its end.
type RunWrite struct {
	Records []result.Record // raw records of a finished window
	Rows    []result.Row    // finished windows' rows
	Events  []RunEvent      // in seq order, after the last stored
	// End is the run's final state (status, reason, times; the id,
	// learner, lesson and block name it): stored with its terminal
	// event, which is the last of Events.
	End *Run
}

// WriteRun stores w for run id in one transaction, with one wake-up of
// the run's watchers (WatchRun) for all its events, fenced by the run's
// claim: only while the run is queued or running and held by owner (the
// runner id ClaimRun recorded, "" for a run of the in-process queue). The
// check takes the run row's lock (FOR SHARE on Postgres, SQLite's write
// lock), so a reaper ending the run (which locks the row to update it)
// and this write never interleave: a write after the run ended fails with
// ErrNotOwner and stores nothing, and so the run has one terminal event,
// ever. Every part replaces what is stored at the same key (records by
// window and seq, the row by window, events by seq, the end: a retried
// end already stored is success), so a write whose commit may or may
// not have reached the database can be sent again.
func (s *Store) WriteRun(ctx context.Context, id, owner string, w RunWrite) (err error) {
	defer func() { s.health.note(err) }()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: writing run %s: %w", id, err)
	}
	defer tx.Rollback()
	lock := ""
	if s.db.d.postgres {
		lock = " FOR SHARE"
	}
	var status RunStatus
	err = tx.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ? AND runner = ?`+lock, id, owner).Scan(&status)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("store: writing run %s: %w (another runner holds it)", id, ErrNotOwner)
	case err != nil:
		return fmt.Errorf("store: writing run %s: %w", id, err)
	case status != RunQueued && status != RunRunning:
		if w.End != nil && len(w.Events) > 0 {
			if ok, err := endStored(ctx, tx, id, w.Events[len(w.Events)-1]); err != nil || ok {
				return err
			}
		}
		return fmt.Errorf("store: writing run %s: %w (it is %s)", id, ErrNotOwner, status)
	}
	if len(w.Records) > 0 {
		if s.db.d.postgres {
			err = addRecordsPostgres(ctx, tx, id, w.Records)
		} else {
			err = addRecordsSQLite(ctx, tx, id, w.Records)
		}
		if err != nil {
			return fmt.Errorf("store: saving records of run %s: %w", id, err)
		}
	}
	for _, row := range w.Rows {
		if err := addRow(ctx, tx, id, row); err != nil {
			return err
		}
	}
	if err := s.insertEvents(ctx, tx, id, w.Events); err != nil {
		return err
	}
	if e := w.End; e != nil {
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, reason = ?, started_at = ?, ended_at = ? WHERE id = ?`,
			e.Status, e.Reason, stampOf(e.StartedAt), stampOf(e.EndedAt), id); err != nil {
			return fmt.Errorf("store: saving the end of run %s: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: writing run %s: %w", id, err)
	}
	if e := w.End; e != nil {
		s.runLists.forget(e.Learner)
		if e.Block != "" {
			s.latest.forget(e.Block)
		}
	}
	s.woke(id, w.Events)
	return nil
}

// endStored reports whether the run's stored event at end's seq is end
// itself: a write of the end that reached the database before its
// connection was lost, sent again.
func endStored(ctx context.Context, tx *tx, id string, end RunEvent) (bool, error) {
	var js string
	err := tx.QueryRowContext(ctx, `SELECT event FROM run_events WHERE run_id = ? AND seq = ?`, id, end.Seq).Scan(&js)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil && bytes.Equal([]byte(js), end.JSON), err
}

// execer is the store's database handle or a transaction of it.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// insertEvents stores events of a run (again for the same seq replaces
// it, unless the stored one is terminal: a log's end is final), and on
// Postgres, in the same statement, sends one wake-up naming the highest
// seq, delivered when the transaction commits. On SQLite the caller wakes
// the watchers after the commit (woke).
func (s *Store) insertEvents(ctx context.Context, x execer, id string, evs []RunEvent) error {
	if len(evs) == 0 {
		return nil
	}
	if s.db.d.postgres {
		seq, kind, js := make([]int32, len(evs)), make([]string, len(evs)), make([]string, len(evs))
		for i, e := range evs {
			seq[i], kind[i], js[i] = int32(e.Seq), e.Kind, string(e.JSON)
		}
		_, err := x.ExecContext(ctx, `WITH e AS (INSERT INTO run_events (run_id, seq, kind, event)
				SELECT ?1, * FROM unnest(?2::integer[], ?3::text[], ?4::text[])`+replaceEvent+` RETURNING seq)
			SELECT pg_notify('`+wakeChannelPrefix+`' || current_schema(), 'run ' || ?1 || ' ' || max(seq)) FROM e HAVING count(*) > 0`,
			id, seq, kind, js)
		if err != nil {
			return fmt.Errorf("store: saving events %d to %d of run %s: %w", evs[0].Seq, evs[len(evs)-1].Seq, id, err)
		}
		return nil
	}
	args := make([]any, 0, 4*min(len(evs), eventsPerInsert))
	for start := 0; start < len(evs); start += eventsPerInsert {
		batch := evs[start:min(start+eventsPerInsert, len(evs))]
		args = args[:0]
		values := make([]byte, 0, len(batch)*10)
		for i, e := range batch {
			if i > 0 {
				values = append(values, ',')
			}
			values = append(values, "(?,?,?,?)"...)
			args = append(args, id, e.Seq, e.Kind, string(e.JSON))
		}
		if _, err := x.ExecContext(ctx, `INSERT INTO run_events (run_id, seq, kind, event) VALUES `+string(values)+replaceEvent, args...); err != nil {
			return fmt.Errorf("store: saving events %d to %d of run %s: %w", batch[0].Seq, batch[len(batch)-1].Seq, id, err)
		}
	}
	return nil
}

// eventsPerInsert is how many events one INSERT carries on SQLite (four
// arguments each, under its limit of 32766).
const eventsPerInsert = 1000

// replaceEvent makes an insert of events replace those stored at the same
// seq, except a terminal one.
const replaceEvent = ` ON CONFLICT (run_id, seq) DO UPDATE SET kind = excluded.kind, event = excluded.event
	WHERE run_events.kind NOT IN ('done', 'failed', 'cancelled', 'interrupted')`

// woke wakes the run's watchers on SQLite after events were committed
// (Postgres's wake-up went with them).
func (s *Store) woke(id string, evs []RunEvent) {
	if s.db.d.postgres || len(evs) == 0 {
		return
	}
	s.wakes.wake(wakeKey("run", id), Wake{Seq: evs[len(evs)-1].Seq})
}

// addRow stores one finished window's row (again for the same window
// replaces it).
func addRow(ctx context.Context, x execer, id string, row result.Row) error {
	js, err := json.Marshal(row)
	if err != nil {
		return err
	}
	_, err = x.ExecContext(ctx, `INSERT INTO run_rows (run_id, win, row) VALUES (?, ?, ?)
		ON CONFLICT (run_id, win) DO UPDATE SET row = excluded.row`, id, row.Window, string(js))
	if err != nil {
		return fmt.Errorf("store: saving row %d of run %s: %w", row.Window, id, err)
	}
	return nil
}
