package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"capacitylab/result"
)

// ErrNoRun is returned when no run has the id asked for.
var ErrNoRun = errors.New("no such run")

// RunStatus is where a run stands, as stored: queued → running → done,
// failed, cancelled or interrupted (package runner says when each comes).
type RunStatus string

// The statuses of a run.
const (
	RunQueued      RunStatus = "queued"
	RunRunning     RunStatus = "running"
	RunDone        RunStatus = "done"
	RunFailed      RunStatus = "failed"
	RunCancelled   RunStatus = "cancelled"
	RunInterrupted RunStatus = "interrupted"
)

// Run is one sweep run from the web: who asked for what, what became of it,
// and (from Run, not Runs) its rows. Zero times were not reached.
type Run struct {
	ID        string          `json:"id"`
	Learner   string          `json:"-"`
	Lesson    string          `json:"lesson,omitempty"`
	Block     string          `json:"block,omitempty"`
	Request   json.RawMessage `json:"request"`
	Status    RunStatus       `json:"status"`
	Reason    string          `json:"reason,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	StartedAt time.Time       `json:"started_at,omitzero"`
	EndedAt   time.Time       `json:"ended_at,omitzero"`
	Rows      []result.Row    `json:"rows"`
	// Upload marks a learner's own results file stored as a run of
	// theirs (SaveUpload): private to that learner.
	Upload bool `json:"upload,omitempty"`
}

// SaveRun inserts a run or updates its status, reason and times (the
// request, learner and creation time are written once). Rows are added
// with AddRow. A run's stored end is final: a run already done, failed,
// cancelled or interrupted is left as it is (a runner that stalled past
// its heartbeat and was declared lost cannot overwrite that later).
func (s *Store) SaveRun(ctx context.Context, r Run) error {
	if r.ID == "" || r.Learner == "" {
		return errors.New("store: SaveRun needs an id and a learner")
	}
	req := string(r.Request)
	if req == "" {
		req = "{}"
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO runs (id, learner, lesson, block, request, status, reason, created_at, started_at, ended_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, reason = excluded.reason,
			started_at = excluded.started_at, ended_at = excluded.ended_at
		WHERE runs.status IN ('queued', 'running')`,
		r.ID, r.Learner, r.Lesson, r.Block, req, r.Status, r.Reason,
		stampOf(r.CreatedAt), stampOf(r.StartedAt), stampOf(r.EndedAt))
	s.runLists.forget(r.Learner)
	if r.Block != "" {
		s.latest.forget(r.Block)
	}
	if err != nil {
		return fmt.Errorf("store: saving run %s: %w", r.ID, err)
	}
	return nil
}

// AddRow stores one finished window's row of a run (again for the same
// window replaces it), unfenced: for tests and tools that write a run
// nobody holds. A runner writes its run's rows with WriteRun.
func (s *Store) AddRow(ctx context.Context, id string, row result.Row) error {
	return addRow(ctx, s.db, id, row)
}

// RunEvent is one event of a run's log as it was logged: its sequence
// number, kind and JSON (package runner specifies both).
type RunEvent struct {
	Seq  int
	Kind string
	JSON []byte
}

// AddRunEvent stores one event of a run's log (again for the same seq
// replaces it, unless the stored one is terminal: a log's end is final),
// and wakes the run's watchers (WatchRun): on Postgres in the same
// statement, so every server's watchers wake when it commits. It is
// unfenced, for tests and tools that write a run nobody holds: a runner
// writes its run's events with WriteRun, the same insert under its claim.
// The run must be saved first.
func (s *Store) AddRunEvent(ctx context.Context, id string, e RunEvent) error {
	evs := []RunEvent{e}
	if err := s.insertEvents(ctx, s.db, id, evs); err != nil {
		return err
	}
	s.woke(id, evs)
	return nil
}

// RunEvents returns the stored events of a run with seq above since, in
// order (none for a run saved before events were stored).
func (s *Store) RunEvents(ctx context.Context, id string, since int) ([]RunEvent, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, kind, event FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq`, id, since)
	if err != nil {
		return nil, err
	}
	var out []RunEvent
	for rows.Next() {
		var e RunEvent
		var js string
		if err := rows.Scan(&e.Seq, &e.Kind, &js); err != nil {
			rows.Close()
			return nil, err
		}
		e.JSON = []byte(js)
		out = append(out, e)
	}
	return out, closeRows(rows)
}

// LastRunEvent returns the seq and kind of a run's last stored event
// (0, "" when none is stored).
func (s *Store) LastRunEvent(ctx context.Context, id string) (int, string, error) {
	var seq int
	var kind string
	err := s.db.QueryRowContext(ctx, `SELECT seq, kind FROM run_events WHERE run_id = ? ORDER BY seq DESC LIMIT 1`, id).Scan(&seq, &kind)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil
	}
	return seq, kind, err
}

// recordsPerInsert is how many records one INSERT statement carries
// (14 columns each, under SQLite's limit of 32766 parameters).
const recordsPerInsert = 500

// scanRuns reads every row of a query of runColumns and closes rows.
func scanRuns(rows *sql.Rows) ([]Run, error) {
	out := []Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, r)
	}
	return out, closeRows(rows)
}

// AddRecords stores raw request records of a run in one transaction:
// on SQLite in multi-row inserts of recordsPerInsert, on Postgres in one
// statement whose eleven arguments are arrays of the records' columns.
// Records already stored (same window and seq) are replaced.
func (s *Store) AddRecords(ctx context.Context, id string, recs []result.Record) (err error) {
	if len(recs) == 0 {
		return nil
	}
	// The inserts go through prepared statements, which db does not see.
	defer func() { s.health.note(err) }()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.db.d.postgres {
		err = addRecordsPostgres(ctx, tx, id, recs)
	} else {
		err = addRecordsSQLite(ctx, tx, id, recs)
	}
	if err != nil {
		return fmt.Errorf("store: saving records of run %s: %w", id, err)
	}
	return tx.Commit()
}

const insertRecords = `INSERT INTO run_records (run_id, win, seq, intended_us, sent_us, end_us, outcome, status, reason, queue_wait_ms, service_ms, request, attempt, class, sub, copy) `

// replaceRecords makes an insert of records replace those stored.
const replaceRecords = ` ON CONFLICT (run_id, win, seq) DO UPDATE SET intended_us = excluded.intended_us,
	sent_us = excluded.sent_us, end_us = excluded.end_us, outcome = excluded.outcome, status = excluded.status,
	reason = excluded.reason, queue_wait_ms = excluded.queue_wait_ms, service_ms = excluded.service_ms,
	request = excluded.request, attempt = excluded.attempt, class = excluded.class, sub = excluded.sub, copy = excluded.copy`

func addRecordsSQLite(ctx context.Context, tx *tx, id string, recs []result.Record) error {
	var full *sql.Stmt
	args := make([]any, 0, recordsPerInsert*16)
	for start := 0; start < len(recs); start += recordsPerInsert {
		batch := recs[start:min(start+recordsPerInsert, len(recs))]
		args = args[:0]
		for _, r := range batch {
			args = append(args, id, r.Window, r.Seq, r.Intended.Microseconds(), r.Sent.Microseconds(), r.End.Microseconds(),
				int(r.Outcome), r.Status, r.Reason, r.QueueWaitMS, r.ServiceMS, r.LogicalSeq(), r.Attempt, int(r.Class), r.Sub, r.Copy)
		}
		stmt := full
		if len(batch) != recordsPerInsert || stmt == nil {
			p, err := tx.PrepareContext(ctx, insertRecords+`VALUES `+placeholders(len(batch))+replaceRecords)
			if err != nil {
				return err
			}
			defer p.Close()
			stmt = p
			if len(batch) == recordsPerInsert {
				full = p
			}
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// addRecordsPostgres inserts every record in one statement: each column
// goes as one array, and unnest turns the arrays back into rows, so the
// statement is the same whatever the number of records (no limit of
// parameters, one plan) and costs one round trip.
func addRecordsPostgres(ctx context.Context, tx *tx, id string, recs []result.Record) error {
	n := len(recs)
	win, seq, outcome, status := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	intended, sent, end := make([]int64, n), make([]int64, n), make([]int64, n)
	reason := make([]string, n)
	queue, service := make([]float64, n), make([]float64, n)
	request, attempt, class := make([]int32, n), make([]int32, n), make([]int32, n)
	sub, copies := make([]int32, n), make([]int32, n)
	for i, r := range recs {
		request[i], attempt[i], class[i] = int32(r.LogicalSeq()), int32(r.Attempt), int32(r.Class)
		sub[i], copies[i] = int32(r.Sub), int32(r.Copy)
		win[i], seq[i], outcome[i], status[i] = int32(r.Window), int32(r.Seq), int32(r.Outcome), int32(r.Status)
		intended[i], sent[i], end[i] = r.Intended.Microseconds(), r.Sent.Microseconds(), r.End.Microseconds()
		reason[i], queue[i], service[i] = r.Reason, r.QueueWaitMS, r.ServiceMS
	}
	_, err := tx.ExecContext(ctx, insertRecords+`SELECT ?1, * FROM unnest(?2::integer[], ?3::integer[], ?4::bigint[],
		?5::bigint[], ?6::bigint[], ?7::integer[], ?8::integer[], ?9::text[], ?10::double precision[], ?11::double precision[],
		?12::integer[], ?13::integer[], ?14::integer[], ?15::integer[], ?16::integer[])`+replaceRecords,
		id, win, seq, intended, sent, end, outcome, status, reason, queue, service, request, attempt, class, sub, copies)
	return err
}

func placeholders(n int) string {
	const one = "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
	b := make([]byte, 0, n*(len(one)+1))
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, one...)
	}
	return string(b)
}

const runColumns = `id, learner, lesson, block, request, status, reason, created_at, started_at, ended_at, upload`

func scanRun(row scanner) (Run, error) {
	var r Run
	var req, created, started, ended string
	if err := row.Scan(&r.ID, &r.Learner, &r.Lesson, &r.Block, &req, &r.Status, &r.Reason, &created, &started, &ended, &r.Upload); err != nil {
		return Run{}, err
	}
	r.Request = json.RawMessage(req)
	r.CreatedAt = parseTime(created)
	r.StartedAt = parseTime(started)
	r.EndedAt = parseTime(ended)
	return r, nil
}

// Run returns one run with its rows in window order, or ErrNoRun.
func (s *Store) Run(ctx context.Context, id string) (Run, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("run %s: %w", id, ErrNoRun)
	}
	if err != nil {
		return Run{}, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT row FROM run_rows WHERE run_id = ? ORDER BY win`, id)
	if err != nil {
		return Run{}, err
	}
	r.Rows = []result.Row{}
	for rows.Next() {
		var js string
		var row result.Row
		if err := rows.Scan(&js); err != nil {
			rows.Close()
			return Run{}, err
		}
		if err := json.Unmarshal([]byte(js), &row); err != nil {
			rows.Close()
			return Run{}, fmt.Errorf("run %s: row: %w", id, err)
		}
		r.Rows = append(r.Rows, row)
	}
	return r, closeRows(rows)
}

// Runs lists up to limit runs without their rows: the learner's own first
// (newest first), then everyone else's (newest first) but their uploads,
// which are private.
func (s *Store) Runs(ctx context.Context, learner string, limit int) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+runColumns+` FROM runs
		WHERE NOT upload OR learner = ?1
		ORDER BY (learner = ?1) DESC, created_at DESC, id LIMIT ?2`, learner, limit)
	if err != nil {
		return nil, err
	}
	return scanRuns(rows)
}

// LatestRun returns the most recent run of a lesson's lab block that
// finished with every window measured (status done), with its rows, or
// ErrNoRun when there is none. Lesson pages ask for it on every view, so
// the answer (none included) is kept in memory until a run of that block
// is saved again (SaveRun) or runs are interrupted; the returned run's
// rows may be shared and must not be changed.
func (s *Store) LatestRun(ctx context.Context, block string) (Run, error) {
	if e, _, ok := s.latest.get(block, struct{}{}); ok {
		if !e.found {
			return Run{}, fmt.Errorf("block %s: %w", block, ErrNoRun)
		}
		return e.run, nil
	}
	_, gen, _ := s.latest.get(block, struct{}{})
	r, err := s.latestRun(ctx, block)
	switch {
	case errors.Is(err, ErrNoRun):
		s.latest.put(block, struct{}{}, gen, latestRun{})
	case err == nil:
		s.latest.put(block, struct{}{}, gen, latestRun{run: r, found: true})
	}
	return r, err
}

func (s *Store) latestRun(ctx context.Context, block string) (Run, error) {
	var id string
	err := s.db.QueryRowContext(ctx, `SELECT id FROM runs WHERE block = ? AND status = ? ORDER BY created_at DESC, id LIMIT 1`, block, RunDone).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("block %s: %w", block, ErrNoRun)
	}
	if err != nil {
		return Run{}, err
	}
	return s.Run(ctx, id)
}

// EachRecord calls fn with every stored record of a run, in window and seq
// order, stopping at the first error.
func (s *Store) EachRecord(ctx context.Context, id string, fn func(result.Record) error) error {
	return s.eachRecord(ctx, fn, `WHERE run_id = ?`, id)
}

// EachWindowRecord is EachRecord for one window of the run (loadrun's
// window index, from 0).
func (s *Store) EachWindowRecord(ctx context.Context, id string, window int, fn func(result.Record) error) error {
	return s.eachRecord(ctx, fn, `WHERE run_id = ? AND win = ?`, id, window)
}

func (s *Store) eachRecord(ctx context.Context, fn func(result.Record) error, where string, args ...any) error {
	rows, err := s.db.QueryContext(ctx, `SELECT win, seq, intended_us, sent_us, end_us, outcome, status, reason, queue_wait_ms, service_ms, request, attempt, class, sub, copy
		FROM run_records `+where+` ORDER BY win, seq`, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var r result.Record
		var intended, sent, end int64
		var outcome, class int
		if err := rows.Scan(&r.Window, &r.Seq, &intended, &sent, &end, &outcome, &r.Status, &r.Reason, &r.QueueWaitMS, &r.ServiceMS, &r.Request, &r.Attempt, &class, &r.Sub, &r.Copy); err != nil {
			rows.Close()
			return err
		}
		r.Intended, r.Sent, r.End = time.Duration(intended)*time.Microsecond, time.Duration(sent)*time.Microsecond, time.Duration(end)*time.Microsecond
		r.Outcome, r.Class = result.Outcome(outcome), result.Class(class)
		if r.First() {
			r.Request = 0 // the first record is its own request (Record.LogicalSeq)
		}
		if err := fn(r); err != nil {
			rows.Close()
			return err
		}
	}
	return closeRows(rows)
}

// CountRecords returns how many records a run has stored.
func (s *Store) CountRecords(ctx context.Context, id string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM run_records WHERE run_id = ?`, id).Scan(&n)
	return n, err
}

// InterruptRuns marks every run still queued or running as interrupted
// with reason, as the server does at start-up for runs a crash left
// behind. It returns how many it marked.
func (s *Store) InterruptRuns(ctx context.Context, reason string) (int, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET status = ?, reason = ?, ended_at = ?
		WHERE status IN (?, ?)`, RunInterrupted, reason, s.stamp(), RunQueued, RunRunning)
	s.runLists.forgetAll()
	s.latest.forgetAll()
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func stampOf(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// LabsRun returns the lab blocks of a lesson of which the learner has a
// finished (done) run, for the score of a graded placement.
func (s *Store) LabsRun(ctx context.Context, learner, lesson string) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT block FROM runs WHERE learner = ? AND lesson = ? AND status = ?`,
		learner, lesson, RunDone)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			rows.Close()
			return nil, err
		}
		out[b] = true
	}
	return out, closeRows(rows)
}
