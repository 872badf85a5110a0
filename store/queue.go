package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// The distributed sweep queue's storage (package fleet; migration 110):
// on Postgres only, where several servers share the runs. Every change of a
// run's status here is a conditional update under the run row's lock, so
// two processes racing (a cancel and a claim, two reapers) never both win.

// ErrNotPostgres is returned by the distributed queue's methods on SQLite.
var ErrNotPostgres = errors.New("store: the distributed sweep queue needs Postgres (--database-url)")

// queueLock is the key of the transaction-scoped advisory lock every
// submission takes (per schema), so the queue's rules see every other
// submission's run: with it, exactly the queue's capacity is accepted
// however many replicas submit at once.
const queueLock = 0x63617071 // "capq"

// pgPoolConns bounds the pgx pool beside database/sql's: the queue's
// transactions and River's clients.
const pgPoolConns = 8

// Pool is the store's pgx pool on Postgres (nil on SQLite), for River's
// clients (package fleet): its jobs go in with the runs' rows.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema is the Postgres schema the store works in ("" on SQLite), for
// River's clients, whose notifications are per schema.
func (s *Store) Schema() string { return s.schema }

// openPool opens the pgx pool with cfg's settings, and migrates River's
// tables under the start lock, after the store's own migrations.
func (s *Store) openPool(ctx context.Context, cfg *pgx.ConnConfig) error {
	pc, err := pgxpool.ParseConfig("")
	if err != nil {
		return err
	}
	pc.ConnConfig = cfg.Copy()
	pc.MaxConns = pgPoolConns
	pc.MaxConnLifetime = time.Hour
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return err
	}
	s.pool = pool
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&s.schema); err != nil {
		return err
	}
	// River's migrations each run in a transaction of their own (one adds
	// an enum value a later statement uses, which Postgres refuses in the
	// same transaction), so the start lock is held by a session of its
	// own meanwhile: the same key as the store's migrations take, so
	// servers starting at once migrate River once, after the store.
	lock, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return err
	}
	defer lock.Close(context.Background())
	if _, err := lock.Exec(ctx, `SET lock_timeout = '120s'`); err != nil {
		return err
	}
	if _, err := lock.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext(current_schema()))`, migrationLock); err != nil {
		return fmt.Errorf("waiting for another server's migrations: %w", err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: s.schema})
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrating the sweep queue's tables (River): %w", err)
	}
	_, err = lock.Exec(ctx, `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, migrationLock)
	return err
}

// QueueRun is a run waiting or running in the distributed queue, as its
// rules see it.
type QueueRun struct {
	ID, Learner, Addr string
	Status            RunStatus
	Request           json.RawMessage
	CreatedAt         time.Time
	StartedAt         time.Time // zero while queued
	Runner            string    // the runner holding it ("" while queued)
	JobID             int64
}

// Submission is one run SubmitRun stores.
type Submission struct {
	Run  Run    // status queued, CreatedAt set
	Addr string // the client address that asked ("" for class runs)
	// Decide is called under the queue's lock with every run waiting or
	// running, oldest first. It returns the run's first event (seq 1, its
	// queued event), or an error: then nothing is stored and SubmitRun
	// returns that error as it is.
	Decide func(active []QueueRun) (RunEvent, error)
	// InsertJob inserts the run's job in the same transaction and returns
	// its id.
	InsertJob func(ctx context.Context, tx pgx.Tx) (int64, error)
}

// SubmitRun stores a queued run, its first event and its job in one
// transaction, under the queue's advisory lock (see queueLock).
func (s *Store) SubmitRun(ctx context.Context, sub Submission) error {
	if s.pool == nil {
		return ErrNotPostgres
	}
	r := sub.Run
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("store: submitting run %s: %w", r.ID, err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))`, queueLock); err != nil {
		return fmt.Errorf("store: waiting for the queue's lock: %w", err)
	}
	active, err := queueRuns(ctx, tx, `status IN ('queued', 'running')`)
	if err != nil {
		return err
	}
	e, err := sub.Decide(active)
	if err != nil {
		return err
	}
	req := string(r.Request)
	if req == "" {
		req = "{}"
	}
	if _, err := tx.Exec(ctx, `INSERT INTO runs (id, learner, lesson, block, request, status, reason, created_at, started_at, ended_at, addr)
		VALUES ($1, $2, $3, $4, $5, $6, '', $7, '', '', $8)`, r.ID, r.Learner, r.Lesson, r.Block, req, RunQueued, stampOf(r.CreatedAt), sub.Addr); err != nil {
		return fmt.Errorf("store: submitting run %s: %w", r.ID, err)
	}
	if err := addEventTx(ctx, tx, r.ID, e); err != nil {
		return err
	}
	job, err := sub.InsertJob(ctx, tx)
	if err != nil {
		return fmt.Errorf("store: queueing run %s's job: %w", r.ID, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE runs SET job_id = $2 WHERE id = $1`, r.ID, job); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("store: submitting run %s: %w", r.ID, err)
	}
	return nil
}

// ActiveRuns returns the runs waiting or running, oldest first.
func (s *Store) ActiveRuns(ctx context.Context) ([]QueueRun, error) {
	if s.pool == nil {
		return nil, ErrNotPostgres
	}
	return queueRuns(ctx, s.pool, `status IN ('queued', 'running')`)
}

// querier is a pgx pool or transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func queueRuns(ctx context.Context, q querier, where string) ([]QueueRun, error) {
	rows, err := q.Query(ctx, `SELECT id, learner, addr, status, request, created_at, started_at, runner, job_id FROM runs WHERE `+where+` ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("store: reading the queue: %w", err)
	}
	defer rows.Close()
	var out []QueueRun
	for rows.Next() {
		var r QueueRun
		var req, created, started string
		if err := rows.Scan(&r.ID, &r.Learner, &r.Addr, &r.Status, &req, &created, &started, &r.Runner, &r.JobID); err != nil {
			return nil, err
		}
		r.Request, r.CreatedAt, r.StartedAt = json.RawMessage(req), parseTime(created), parseTime(started)
		out = append(out, r)
	}
	return out, rows.Err()
}

// addEventTx stores one event of a run's log in tx and wakes the run's
// watchers on every server when tx commits (as AddRunEvent). A seq that
// is stored already fails: whoever appends under the run row's lock
// numbers after the last.
func addEventTx(ctx context.Context, tx pgx.Tx, id string, e RunEvent) error {
	_, err := tx.Exec(ctx, `WITH e AS (INSERT INTO run_events (run_id, seq, kind, event) VALUES ($1, $2, $3, $4) RETURNING run_id, seq)
		SELECT pg_notify('`+wakeChannelPrefix+`' || current_schema(), 'run ' || run_id || ' ' || seq) FROM e`, id, e.Seq, e.Kind, string(e.JSON))
	if err != nil {
		return fmt.Errorf("store: saving event %d of run %s: %w", e.Seq, id, err)
	}
	return nil
}

// lastSeqTx is the seq of a run's last stored event (0 for none).
func lastSeqTx(ctx context.Context, tx pgx.Tx, id string) (int, error) {
	var seq int
	err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = $1`, id).Scan(&seq)
	return seq, err
}

// ClaimRun marks a queued run running on runner, started at now, and
// returns it with the seq of its last stored event. ok is false when the
// run is not queued (cancelled before it started): only a queued run
// starts.
func (s *Store) ClaimRun(ctx context.Context, id, runner string, now time.Time) (r QueueRun, lastSeq int, ok bool, err error) {
	if s.pool == nil {
		return r, 0, false, ErrNotPostgres
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return r, 0, false, err
	}
	defer tx.Rollback(ctx)
	var req, created string
	err = tx.QueryRow(ctx, `UPDATE runs SET status = 'running', started_at = $3, runner = $2 WHERE id = $1 AND status = 'queued'
		RETURNING learner, addr, request, created_at, job_id`, id, runner, stampOf(now)).Scan(&r.Learner, &r.Addr, &req, &created, &r.JobID)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, 0, false, nil
	}
	if err != nil {
		return r, 0, false, fmt.Errorf("store: claiming run %s: %w", id, err)
	}
	r.ID, r.Status, r.Runner, r.StartedAt = id, RunRunning, runner, now
	r.Request, r.CreatedAt = json.RawMessage(req), parseTime(created)
	// Read after the update has the row's lock: an event appended to the
	// queued run just before (AppendQueuedEvent) is committed and counted.
	if lastSeq, err = lastSeqTx(ctx, tx, id); err != nil {
		return r, 0, false, err
	}
	return r, lastSeq, true, tx.Commit(ctx)
}

// AppendQueuedEvent stores an event of a queued run, numbered after its
// last under the run row's lock; build makes it for its seq. It stores
// nothing and returns false when the run is no longer queued (its runner
// numbers its events from then on).
func (s *Store) AppendQueuedEvent(ctx context.Context, id string, build func(seq int) RunEvent) (bool, error) {
	if s.pool == nil {
		return false, ErrNotPostgres
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx)
	var status RunStatus
	err = tx.QueryRow(ctx, `SELECT status FROM runs WHERE id = $1 FOR UPDATE`, id).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && status != RunQueued) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	seq, err := lastSeqTx(ctx, tx, id)
	if err != nil {
		return false, err
	}
	if err := addEventTx(ctx, tx, id, build(seq+1)); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}

// CancelQueuedRun cancels learner's run id if it is still queued: status
// cancelled with reason, ended at now, and its terminal event (build makes
// it for its seq), in one transaction under the run row's lock. It returns
// the run as it was found (ErrNoRun when there is none): a run of another
// learner or not queued is left as it is, for the caller to say why (or,
// running, to cancel its job).
func (s *Store) CancelQueuedRun(ctx context.Context, id, learner, reason string, now time.Time, build func(seq int) RunEvent) (QueueRun, error) {
	var r QueueRun
	if s.pool == nil {
		return r, ErrNotPostgres
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return r, err
	}
	defer tx.Rollback(ctx)
	err = tx.QueryRow(ctx, `SELECT learner, status, runner, job_id FROM runs WHERE id = $1 FOR UPDATE`, id).Scan(&r.Learner, &r.Status, &r.Runner, &r.JobID)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, ErrNoRun
	}
	if err != nil {
		return r, err
	}
	r.ID = id
	if r.Learner != learner || r.Status != RunQueued {
		return r, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE runs SET status = $2, reason = $3, ended_at = $4 WHERE id = $1`, id, RunCancelled, reason, stampOf(now)); err != nil {
		return r, err
	}
	seq, err := lastSeqTx(ctx, tx, id)
	if err != nil {
		return r, err
	}
	if err := addEventTx(ctx, tx, id, build(seq+1)); err != nil {
		return r, err
	}
	return r, tx.Commit(ctx)
}

// Heartbeat records that runner id (on host, with slots runs at once) is
// alive now, by the database's clock.
func (s *Store) Heartbeat(ctx context.Context, id, host string, slots int) error {
	if s.pool == nil {
		return ErrNotPostgres
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO runners (id, host, slots) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET heartbeat = now(), host = excluded.host, slots = excluded.slots`, id, host, slots)
	return err
}

// RemoveRunner forgets a runner that stopped in order (its runs ended).
func (s *Store) RemoveRunner(ctx context.Context, id string) error {
	if s.pool == nil {
		return ErrNotPostgres
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM runners WHERE id = $1`, id)
	return err
}

// LiveSlots is how many runs the runners whose heartbeat is younger than
// within run at once, summed.
func (s *Store) LiveSlots(ctx context.Context, within time.Duration) (int, error) {
	if s.pool == nil {
		return 0, ErrNotPostgres
	}
	var n int
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(SUM(slots), 0) FROM runners WHERE heartbeat > now() - $1 * interval '1 millisecond'`,
		within.Milliseconds()).Scan(&n)
	return n, err
}

// QueueDepth is the shared queue as /metrics shows it on a web replica:
// the runs waiting and running (every replica's), and the runners alive
// with the runs they run at once.
type QueueDepth struct {
	Queued, Running int
	Runners, Slots  int // runners whose heartbeat is younger than QueueDepth's within, and their slots summed
}

// QueueDepth counts the runs waiting and running and the runners whose
// heartbeat is younger than within, in one statement.
func (s *Store) QueueDepth(ctx context.Context, within time.Duration) (QueueDepth, error) {
	if s.pool == nil {
		return QueueDepth{}, ErrNotPostgres
	}
	var d QueueDepth
	err := s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM runs WHERE status = 'queued'),
		(SELECT count(*) FROM runs WHERE status = 'running'),
		count(*), COALESCE(SUM(slots), 0)
		FROM runners WHERE heartbeat > now() - $1 * interval '1 millisecond'`, within.Milliseconds()).Scan(&d.Queued, &d.Running, &d.Runners, &d.Slots)
	return d, err
}

// LostRun is a run ReapLostRuns ended: Runner and Host are those of the
// runner that held it, both "" for a run whose job was taken by a runner
// that stopped before it started the run; Request is the run's request
// and Rows how many of its windows have their row stored (finished).
type LostRun struct {
	ID, Runner, Host string
	Request          json.RawMessage
	Rows             int
}

func scanLost(rows pgx.Rows) ([]LostRun, error) {
	defer rows.Close()
	var lost []LostRun
	for rows.Next() {
		var l LostRun
		var req string
		if err := rows.Scan(&l.ID, &l.Runner, &l.Host, &req, &l.Rows); err != nil {
			return nil, err
		}
		l.Request = json.RawMessage(req)
		lost = append(lost, l)
	}
	return lost, rows.Err()
}

// lostColumns are what scanLost reads of a run r, after its id, runner
// and host.
const lostColumns = `, r.request, (SELECT COUNT(*) FROM run_rows w WHERE w.run_id = r.id)`

// ReapLostRuns ends every running run whose runner's heartbeat is older
// than after (or that has none), and every queued run whose job a runner
// took longer ago than after without starting it: status failed with the reason reason
// gives, ended at now, and its terminal event (build makes it for the run,
// its seq and reason), each in the same transaction. Runs another reaper holds
// are skipped, and a run already ended is not touched, so reapers racing
// end each run once. Runners gone that long with no runs left are
// forgotten.
func (s *Store) ReapLostRuns(ctx context.Context, after time.Duration, now time.Time, reason func(LostRun) string,
	build func(l LostRun, seq int, reason string) RunEvent) ([]LostRun, error) {
	if s.pool == nil {
		return nil, ErrNotPostgres
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, `SELECT r.id, r.runner, COALESCE(x.host, '')`+lostColumns+` FROM runs r LEFT JOIN runners x ON x.id = r.runner
		WHERE r.status = 'running' AND r.runner <> ''
			AND NOT EXISTS (SELECT 1 FROM runners y WHERE y.id = r.runner AND y.heartbeat > now() - $1 * interval '1 millisecond')
		ORDER BY r.id FOR UPDATE OF r SKIP LOCKED`, after.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("store: finding lost runs: %w", err)
	}
	lost, err := scanLost(rows)
	if err != nil {
		return nil, err
	}
	// A runner that took a run's job from the queue and stopped before it
	// claimed the run (the claim follows the take by milliseconds) leaves
	// the run queued and its job running: lost as well, never started.
	rows, err = tx.Query(ctx, `SELECT r.id, '', ''`+lostColumns+` FROM runs r JOIN river_job j ON j.id = r.job_id
		WHERE r.status = 'queued' AND j.state = 'running' AND j.attempted_at < now() - $1 * interval '1 millisecond'
		ORDER BY r.id FOR UPDATE OF r SKIP LOCKED`, after.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("store: finding runs lost before they started: %w", err)
	}
	unstarted, err := scanLost(rows)
	if err != nil {
		return nil, err
	}
	lost = append(lost, unstarted...)
	for _, l := range lost {
		why := reason(l)
		if _, err := tx.Exec(ctx, `UPDATE runs SET status = $2, reason = $3, ended_at = $4 WHERE id = $1 AND status IN ('queued', 'running')`,
			l.ID, RunFailed, why, stampOf(now)); err != nil {
			return nil, err
		}
		seq, err := lastSeqTx(ctx, tx, l.ID)
		if err != nil {
			return nil, err
		}
		if err := addEventTx(ctx, tx, l.ID, build(l, seq+1, why)); err != nil {
			return nil, err
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM runners x WHERE x.heartbeat < now() - $1 * interval '1 millisecond'
		AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.runner = x.id AND r.status = 'running')`, after.Milliseconds()); err != nil {
		return nil, err
	}
	return lost, tx.Commit(ctx)
}
