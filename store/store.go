package store

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

//go:embed migrations/*.sql migrations/postgres/*.sql
var migrations embed.FS

// ErrLocked is returned (wrapped with the stored Prediction) when a learner
// tries to change a prediction that is already locked in or skipped.
var ErrLocked = errors.New("prediction already locked")

// ErrNotLocked is returned by Reveal when the learner has neither locked in
// nor skipped the prediction yet.
var ErrNotLocked = errors.New("prediction not locked yet")

// maxConns bounds the SQLite connections: readers run in parallel under
// WAL, and writers queue on SQLite's lock (busy timeout) anyway.
const maxConns = 8

// Store is a learner-progress database. It is safe for concurrent use.
type Store struct {
	db     db
	health *writeHealth // whether writes have room (health.go)
	now    func() time.Time

	// Prepared once: reading a learner's state is on every page view.
	loadAll, loadLesson *sql.Stmt
	// The same for records (records.go).
	recordsAll, recordsLesson *sql.Stmt
	// A learner's own runs, for the record form on a lesson page (learner.go).
	learnerRuns *sql.Stmt
	// Learners' lesson states as last read, by lesson (learnercache.go).
	states learnerCache[string, LessonState]
	// Learners' own run lists as last read, by limit (learner.go).
	runLists learnerCache[int, []Run]
	// Wake-ups for watchers of runs and class sessions (wake.go).
	wakes *wakeHub
	// Each lab block's latest done run as last read (LatestRun), keyed
	// by block in the cache's learner slot; found is false for none.
	latest learnerCache[struct{}, latestRun]
	// On Postgres: a pgx pool for the distributed queue and River
	// (queue.go), and the schema the store works in.
	pool   *pgxpool.Pool
	schema string
}

// latestRun is LatestRun's answer as kept.
type latestRun struct {
	run   Run
	found bool
}

// Prediction is a learner's answer to one predict block.
type Prediction struct {
	Lesson     string    `json:"lesson"`
	Block      string    `json:"block"`
	Option     string    `json:"option"`
	Skipped    bool      `json:"skipped"`
	LockedAt   time.Time `json:"locked_at"`
	RevealedAt time.Time `json:"revealed_at,omitzero"`
	// OpenedAt is when the learner opened the recorded results that
	// settle the prediction (OpenResults), zero until then.
	OpenedAt time.Time `json:"opened_at,omitzero"`
}

// Opened reports whether the learner has opened the recorded results.
func (p Prediction) Opened() bool { return !p.OpenedAt.IsZero() }

// Revealed reports whether the learner has revealed the answer.
func (p Prediction) Revealed() bool { return !p.RevealedAt.IsZero() }

// Attempt is one answer to a check block.
type Attempt struct {
	Lesson  string    `json:"lesson"`
	Block   string    `json:"block"`
	Option  string    `json:"option"`
	Correct bool      `json:"correct"`
	First   bool      `json:"first"`
	At      time.Time `json:"at"`
}

// CheckState sums up a learner's attempts at one check block.
type CheckState struct {
	First Attempt // the attempt that counts for progress
	Last  Attempt // the most recent attempt (the one the page shows)
	Count int     // number of attempts
}

// Goal records that a learner reached a model block's goal.
type Goal struct {
	Lesson    string             `json:"lesson"`
	Block     string             `json:"block"`
	Values    map[string]float64 `json:"values"`
	ReachedAt time.Time          `json:"reached_at"`
}

// LessonState is a learner's progress in one lesson, keyed by block id.
type LessonState struct {
	Predictions map[string]Prediction
	Checks      map[string]CheckState
	Goals       map[string]Goal
	Records     map[string]Record
}

// Export is everything stored about one learner; its JSON form is the
// progress export described in the package doc.
type Export struct {
	Learner     string       `json:"learner"`
	ExportedAt  time.Time    `json:"exported_at"`
	Predictions []Prediction `json:"predictions"`
	Attempts    []Attempt    `json:"check_attempts"`
	Goals       []Goal       `json:"model_goals"`
	Records     []Record     `json:"records"`
}

// Open opens (creating if needed) the SQLite file at path, sets WAL mode,
// a busy timeout and foreign keys, and applies any pending migrations.
//
// When the file or its directory cannot be written by this process (a
// read-only file system, or permissions), Open fails with ErrReadOnly
// wrapped, saying which. When the disk is too full to open the file for
// writing (SQLite cannot create its WAL index), an existing file of this program's schema is
// opened read-only instead, so the pages can still be served: every
// write then fails with ErrFull and WriteHealth says so.
func Open(path string, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	sdb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// Keep connections open: opening one re-runs the pragmas, and with
	// database/sql's default of two idle connections a busy server would
	// open and close connections on every request.
	sdb.SetMaxOpenConns(maxConns)
	sdb.SetMaxIdleConns(maxConns)
	s := newStore(sdb, sqliteDialect(), o)
	err = s.migrate(context.Background())
	// SQLite opens a file it may not write read-only without a word, so
	// an opened file is checked too: every write would fail later.
	if err == nil || mayBeReadOnly(err) {
		if ro := notWritable(path); ro != nil {
			sdb.Close()
			return nil, fmt.Errorf("store: %s: %w", path, ro)
		}
	}
	if err != nil {
		sdb.Close()
		if !IsFull(err) && !isIOError(err) {
			return nil, fmt.Errorf("store: %s: %w", path, err)
		}
		rdb, rerr := openReadOnly(path, err)
		if rerr != nil {
			return nil, fmt.Errorf("store: %s: %w", path, rerr)
		}
		ro := fmt.Errorf("store: %s opened read-only (%w at start: %v)", path, ErrFull, err)
		s.health.err, s.health.since, s.health.fixed = ro, time.Now(), true
		s.db.DB, s.db.readOnly = rdb, ro
	}
	if err := s.prepare(); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	s.health.dir = filepath.Dir(path)
	return s, nil
}

// newStore is a Store on sdb, not yet migrated or prepared.
func newStore(sdb *sql.DB, d *dialect, o options) *Store {
	health := &writeHealth{}
	s := &Store{db: db{DB: sdb, d: d, health: health, full: o.full}, health: health, now: time.Now, wakes: &wakeHub{}}
	if o.now != nil {
		s.now = o.now
	}
	return s
}

// prepare prepares the queries of every page view.
func (s *Store) prepare() error {
	var err error
	if s.loadAll, err = s.db.Prepare(loadQuery(false)); err == nil {
		s.loadLesson, err = s.db.Prepare(loadQuery(true))
	}
	if err == nil {
		s.recordsAll, err = s.db.Prepare(recordsQuery(false))
	}
	if err == nil {
		s.recordsLesson, err = s.db.Prepare(recordsQuery(true))
	}
	if err == nil {
		s.learnerRuns, err = s.db.Prepare(learnerRunsQuery)
	}
	if err != nil {
		s.closeStatements()
	}
	return err
}

func (s *Store) closeStatements() {
	for _, st := range []*sql.Stmt{s.loadAll, s.loadLesson, s.recordsAll, s.recordsLesson, s.learnerRuns} {
		if st != nil {
			st.Close()
		}
	}
}

// Close closes the database.
func (s *Store) Close() error {
	s.wakes.close()
	s.closeStatements()
	if s.pool != nil {
		s.pool.Close()
	}
	return s.db.Close()
}

// SchemaVersion returns the number of the last migration applied.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v)
	return v, err
}

// latestMigration is the number of the last embedded migration.
func latestMigration() int {
	ms, err := migrationsFor(sqliteDialect())
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// isIOError reports whether err is SQLite's SQLITE_IOERR (any extended
// code), which is what opening a file on a full disk gives when the WAL
// index cannot be created.
func isIOError(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 10
}

// migration is one numbered SQL file of the schema.
type migration struct {
	version int
	name    string // its path in migrations
}

// migrationsFor lists the migrations of a dialect in order: the shared
// files of migrations/, except those up to the dialect's baseline, and
// the dialect's own files of migrations/<dialect>/, each in place of the
// shared file of its number.
func migrationsFor(d *dialect) ([]migration, error) {
	byVersion := map[int]migration{}
	for _, dir := range []string{"migrations", "migrations/" + d.name} {
		names, err := fs.Glob(migrations, dir+"/*.sql")
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			base := strings.TrimPrefix(name, dir+"/")
			num, _, _ := strings.Cut(base, "_")
			v, err := strconv.Atoi(num)
			if err != nil {
				return nil, fmt.Errorf("migration %s: name must start with a number", name)
			}
			if dir == "migrations" && v <= d.baseline {
				continue
			}
			byVersion[v] = migration{version: v, name: name}
		}
	}
	out := make([]migration, 0, len(byVersion))
	for _, m := range byVersion {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// SchemaError is what Open and OpenPostgres fail with when the database's
// schema is newer than this program knows: another server, of a later
// version, migrated it.
type SchemaError struct {
	Database, Program int // the schema versions of each
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("the database's schema is version %d, newer than this program's %d: "+
		"a newer server has migrated it; run that version here too", e.Database, e.Program)
}

// migrationLock is the key of the Postgres advisory lock that servers
// starting at once take, per schema, so one applies the migrations and
// the others wait and find them applied.
const migrationLock = 0x6361706c // "capl"

func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrationsFor(s.db.d)
	if err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.db.d.postgres {
		// Another replica may be migrating: wait for it (longer than the
		// lock timeout of ordinary statements).
		if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = '120s'`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?, hashtext(current_schema()))`, migrationLock); err != nil {
			return fmt.Errorf("waiting for another server's migrations: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	current := 0
	switch err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&current); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	if latest := ms[len(ms)-1].version; current > latest {
		return &SchemaError{Database: current, Program: latest}
	}
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		text, err := fs.ReadFile(migrations, m.name)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(text)); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, m.version); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (s *Store) stamp() string { return s.now().UTC().Format(time.RFC3339Nano) }

func parseTime(v string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, v)
	return t
}

func (s *Store) ensureLearner(ctx context.Context, learner string) error {
	if learner == "" {
		return errors.New("store: empty learner id")
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO learners (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, learner, s.stamp())
	return err
}

// Lock locks in option as the learner's prediction for a predict block. A
// repeated Lock with the same option returns the stored prediction. Any
// other change (another option, or a Lock after a Skip) returns the stored
// prediction and an error wrapping ErrLocked.
func (s *Store) Lock(ctx context.Context, learner, lesson, block, option string) (Prediction, error) {
	if option == "" {
		return Prediction{}, errors.New("store: Lock needs an option")
	}
	p, err := s.writePrediction(ctx, learner, lesson, block, option, false)
	if err != nil {
		return p, err
	}
	if p.Skipped || p.Option != option {
		return p, fmt.Errorf("block %s: %w", block, ErrLocked)
	}
	return p, nil
}

// Skip records that the learner skipped a predict block. Skipping an
// already skipped block returns the stored row; skipping a locked one
// returns it with an error wrapping ErrLocked.
func (s *Store) Skip(ctx context.Context, learner, lesson, block string) (Prediction, error) {
	p, err := s.writePrediction(ctx, learner, lesson, block, "", true)
	if err != nil {
		return p, err
	}
	if !p.Skipped {
		return p, fmt.Errorf("block %s: %w", block, ErrLocked)
	}
	return p, nil
}

func (s *Store) writePrediction(ctx context.Context, learner, lesson, block, option string, skipped bool) (Prediction, error) {
	if err := s.ensureLearner(ctx, learner); err != nil {
		return Prediction{}, err
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO predictions (learner, lesson, block, option, skipped, locked_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (learner, block) DO NOTHING`,
		learner, lesson, block, option, skipped, s.stamp())
	s.states.forget(learner)
	if err != nil {
		return Prediction{}, err
	}
	return s.prediction(ctx, learner, block)
}

func (s *Store) prediction(ctx context.Context, learner, block string) (Prediction, error) {
	row := s.db.QueryRowContext(ctx, `SELECT lesson, block, option, skipped, locked_at, COALESCE(revealed_at, ''), opened_at
		FROM predictions WHERE learner = ? AND block = ?`, learner, block)
	return scanPrediction(row)
}

type scanner interface{ Scan(dest ...any) error }

func scanPrediction(row scanner) (Prediction, error) {
	var p Prediction
	var locked, revealed, opened string
	if err := row.Scan(&p.Lesson, &p.Block, &p.Option, &p.Skipped, &locked, &revealed, &opened); err != nil {
		return Prediction{}, err
	}
	p.LockedAt = parseTime(locked)
	if revealed != "" {
		p.RevealedAt = parseTime(revealed)
	}
	if opened != "" {
		p.OpenedAt = parseTime(opened)
	}
	return p, nil
}

// OpenResults records that the learner opened the recorded results that
// settle a locked or skipped prediction (the first time only) and returns
// the prediction. It returns ErrNotLocked if there is nothing locked.
func (s *Store) OpenResults(ctx context.Context, learner, block string) (Prediction, error) {
	_, err := s.db.ExecContext(ctx, `UPDATE predictions SET opened_at = ?
		WHERE learner = ? AND block = ? AND opened_at = ''`, s.stamp(), learner, block)
	s.states.forget(learner)
	if err != nil {
		return Prediction{}, err
	}
	p, err := s.prediction(ctx, learner, block)
	if errors.Is(err, sql.ErrNoRows) {
		return Prediction{}, fmt.Errorf("block %s: %w", block, ErrNotLocked)
	}
	return p, err
}

// Reveal marks a locked or skipped prediction as revealed (the first time
// only) and returns it. It returns ErrNotLocked if there is nothing locked.
func (s *Store) Reveal(ctx context.Context, learner, block string) (Prediction, error) {
	_, err := s.db.ExecContext(ctx, `UPDATE predictions SET revealed_at = ?
		WHERE learner = ? AND block = ? AND revealed_at IS NULL`, s.stamp(), learner, block)
	s.states.forget(learner)
	if err != nil {
		return Prediction{}, err
	}
	p, err := s.prediction(ctx, learner, block)
	if errors.Is(err, sql.ErrNoRows) {
		return Prediction{}, fmt.Errorf("block %s: %w", block, ErrNotLocked)
	}
	return p, err
}

// RecordAttempt stores one answer to a check block and returns the block's
// state including it.
func (s *Store) RecordAttempt(ctx context.Context, learner, lesson, block, option string, correct bool) (CheckState, error) {
	if err := s.ensureLearner(ctx, learner); err != nil {
		return CheckState{}, err
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO check_attempts (learner, lesson, block, option, correct, at)
		VALUES (?, ?, ?, ?, ?, ?)`, learner, lesson, block, option, correct, s.stamp())
	s.states.forget(learner)
	if err != nil {
		return CheckState{}, err
	}
	st, err := s.LessonState(ctx, learner, lesson)
	if err != nil {
		return CheckState{}, err
	}
	return st.Checks[block], nil
}

// RecordGoal records that the learner reached a model block's goal with the
// given widget values. Only the first time is kept; later calls return it.
func (s *Store) RecordGoal(ctx context.Context, learner, lesson, block string, values map[string]float64) (Goal, error) {
	if err := s.ensureLearner(ctx, learner); err != nil {
		return Goal{}, err
	}
	if values == nil {
		values = map[string]float64{}
	}
	js, err := json.Marshal(values)
	if err != nil {
		return Goal{}, err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO model_goals (learner, lesson, block, values_json, reached_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (learner, block) DO NOTHING`, learner, lesson, block, string(js), s.stamp())
	s.states.forget(learner)
	if err != nil {
		return Goal{}, err
	}
	st, err := s.LessonState(ctx, learner, lesson)
	if err != nil {
		return Goal{}, err
	}
	return st.Goals[block], nil
}

// LessonState returns the learner's progress in one lesson. An unknown
// learner has empty (non-nil) maps.
//
// States are kept in memory between writes (see learnerCache): the maps of
// the returned state may be shared with other callers and must not be
// changed.
func (s *Store) LessonState(ctx context.Context, learner, lesson string) (LessonState, error) {
	st, gen, ok := s.states.get(learner, lesson)
	if ok {
		return st, nil
	}
	e, err := s.load(ctx, learner, lesson)
	if err != nil {
		return LessonState{}, err
	}
	st = e.State()
	s.states.put(learner, lesson, gen, st)
	return st, nil
}

// State folds an export (or part of one) into per-block maps.
func (e *Export) State() LessonState {
	st := LessonState{
		Predictions: make(map[string]Prediction, len(e.Predictions)),
		Checks:      make(map[string]CheckState),
		Goals:       make(map[string]Goal, len(e.Goals)),
		Records:     make(map[string]Record, len(e.Records)),
	}
	for _, p := range e.Predictions {
		st.Predictions[p.Block] = p
	}
	for _, a := range e.Attempts {
		c, ok := st.Checks[a.Block]
		if !ok {
			c.First = a
		}
		c.Last = a
		c.Count++
		st.Checks[a.Block] = c
	}
	for _, g := range e.Goals {
		st.Goals[g.Block] = g
	}
	for _, r := range e.Records {
		st.Records[r.Block] = r
	}
	return st
}

// Export returns everything stored about the learner.
func (s *Store) Export(ctx context.Context, learner string) (*Export, error) {
	return s.load(ctx, learner, "")
}

// loadQuery reads a learner's rows (?1) of every kind, optionally for one
// lesson (?2), in one query: predictions, check attempts, model goals and
// records. Columns: kind, lesson, block, option (a record's run), flag,
// time (a record's creation), extra (goal values or record fields as
// JSON, or a prediction's revealed_at), ord, updated (a record's last
// update, or a prediction's opened_at).
func loadQuery(oneLesson bool) string {
	filter := `learner = ?1`
	if oneLesson {
		filter += ` AND lesson = ?2`
	}
	return `SELECT 'p', lesson, block, option, skipped, locked_at, COALESCE(revealed_at, ''), 0, opened_at
			FROM predictions WHERE ` + filter + `
		UNION ALL
		SELECT 'c', lesson, block, option, correct, at, '', id, ''
			FROM check_attempts WHERE ` + filter + `
		UNION ALL
		SELECT 'g', lesson, block, '', FALSE, reached_at, values_json, 0, ''
			FROM model_goals WHERE ` + filter + `
		UNION ALL
		SELECT 'r', lesson, block, run_id, FALSE, created_at, fields_json, 0, updated_at
			FROM records WHERE ` + filter + `
		ORDER BY 1, 6, 8, 3`
}

// load reads a learner's rows, for one lesson or (lesson == "") all, in
// one prepared query: a lesson page view costs one round trip to the
// database.
func (s *Store) load(ctx context.Context, learner, lesson string) (*Export, error) {
	e := &Export{Learner: learner, ExportedAt: s.now().UTC(),
		Predictions: []Prediction{}, Attempts: []Attempt{}, Goals: []Goal{}, Records: []Record{}}
	stmt, args := s.loadAll, []any{learner}
	if lesson != "" {
		stmt, args = s.loadLesson, []any{learner, lesson}
	}
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for rows.Next() {
		var kind, les, block, option, at, extra, updated string
		var flag bool
		var ord int64
		if err := rows.Scan(&kind, &les, &block, &option, &flag, &at, &extra, &ord, &updated); err != nil {
			rows.Close()
			return nil, err
		}
		switch kind {
		case "p":
			p := Prediction{Lesson: les, Block: block, Option: option, Skipped: flag, LockedAt: parseTime(at)}
			if extra != "" {
				p.RevealedAt = parseTime(extra)
			}
			if updated != "" {
				p.OpenedAt = parseTime(updated)
			}
			e.Predictions = append(e.Predictions, p)
		case "c":
			e.Attempts = append(e.Attempts, Attempt{Lesson: les, Block: block, Option: option, Correct: flag,
				First: !seen[block], At: parseTime(at)})
			seen[block] = true
		case "g":
			g := Goal{Lesson: les, Block: block, ReachedAt: parseTime(at)}
			if err := json.Unmarshal([]byte(extra), &g.Values); err != nil {
				rows.Close()
				return nil, fmt.Errorf("model goal %s: %w", block, err)
			}
			e.Goals = append(e.Goals, g)
		case "r":
			r := Record{Lesson: les, Block: block, Run: option, CreatedAt: parseTime(at), UpdatedAt: parseTime(updated)}
			if err := json.Unmarshal([]byte(extra), &r.Fields); err != nil {
				rows.Close()
				return nil, fmt.Errorf("record %s: %w", block, err)
			}
			e.Records = append(e.Records, r)
		}
	}
	if err := closeRows(rows); err != nil {
		return nil, err
	}
	// Records are listed in lesson and block order (the query orders them
	// by time, with the other kinds).
	sort.SliceStable(e.Records, func(i, j int) bool {
		a, b := e.Records[i], e.Records[j]
		return a.Lesson < b.Lesson || a.Lesson == b.Lesson && a.Block < b.Block
	})
	return e, nil
}

func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}

// Reset deletes the learner and everything stored about them.
func (s *Store) Reset(ctx context.Context, learner string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []string{
		`DELETE FROM predictions WHERE learner = ?`,
		`DELETE FROM check_attempts WHERE learner = ?`,
		`DELETE FROM model_goals WHERE learner = ?`,
		`DELETE FROM records WHERE learner = ?`,
		`DELETE FROM runs WHERE learner = ? AND upload`, // their uploads (with rows, records, events); runs of the lab stay
		`DELETE FROM learners WHERE id = ?`,
	} {
		if _, err := tx.ExecContext(ctx, q, learner); err != nil {
			return err
		}
	}
	err = tx.Commit()
	s.states.forget(learner)
	s.runLists.forget(learner)
	return err
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }
