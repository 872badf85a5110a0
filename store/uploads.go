package store

import (
	"context"
	"errors"
	"fmt"

	"capacitylab/result"
)

// SaveUpload stores a learner's own results file as a run of theirs, in
// one transaction: the run (r.Upload is set; its status should be done),
// its rows and its records. Nothing is stored when any part fails.
func (s *Store) SaveUpload(ctx context.Context, r Run, rows []result.Row, recs []result.Record) (err error) {
	if r.ID == "" || r.Learner == "" {
		return errors.New("store: SaveUpload needs an id and a learner")
	}
	defer func() { s.health.note(err) }()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	req := string(r.Request)
	if req == "" {
		req = "{}"
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, learner, lesson, block, request, status, reason, created_at, started_at, ended_at, upload)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, TRUE)`,
		r.ID, r.Learner, r.Lesson, r.Block, req, r.Status, r.Reason, stampOf(r.CreatedAt), stampOf(r.StartedAt), stampOf(r.EndedAt)); err != nil {
		return fmt.Errorf("store: saving upload %s: %w", r.ID, err)
	}
	for _, row := range rows {
		if err := addRow(ctx, tx, r.ID, row); err != nil {
			return err
		}
	}
	if len(recs) > 0 {
		if s.db.d.postgres {
			err = addRecordsPostgres(ctx, tx, r.ID, recs)
		} else {
			err = addRecordsSQLite(ctx, tx, r.ID, recs)
		}
		if err != nil {
			return fmt.Errorf("store: saving records of upload %s: %w", r.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: saving upload %s: %w", r.ID, err)
	}
	s.runLists.forget(r.Learner)
	return nil
}

// DeleteUpload deletes one of the learner's uploads with its rows,
// records and events, or returns ErrNoRun when the learner has no upload
// with that id (another's, a lab run, none at all are alike to them).
func (s *Store) DeleteUpload(ctx context.Context, id, learner string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM runs WHERE id = ? AND learner = ? AND upload`, id, learner)
	s.runLists.forget(learner)
	if err != nil {
		return fmt.Errorf("store: deleting upload %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("upload %s: %w", id, ErrNoRun)
	}
	return nil
}

// Uploads lists the learner's uploads without their rows, newest first.
func (s *Store) Uploads(ctx context.Context, learner string) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+runColumns+` FROM runs WHERE learner = ? AND upload ORDER BY created_at DESC, id`, learner)
	if err != nil {
		return nil, err
	}
	return scanRuns(rows)
}
