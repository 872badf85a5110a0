package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrFull is what writes fail with, wrapped, when the disk (or the size
// set with MaxBytes) has no room: SQLite's SQLITE_FULL ("database or disk
// is full"), Postgres's disk_full (SQLSTATE 53100, "could not extend
// file"), or any write to a store opened read-only because the disk was
// full at start. IsFull tells.
var ErrFull = errors.New("the disk is full")

// sqliteFull is SQLite's primary result code SQLITE_FULL.
const sqliteFull = 13

// IsFull reports whether err is a write refused for lack of room: ErrFull,
// an error from SQLite whose result code is SQLITE_FULL, or an error from
// Postgres whose SQLSTATE is 53100 (disk_full).
func IsFull(err error) bool {
	if errors.Is(err, ErrFull) || sqlState(err) == pgDiskFull {
		return true
	}
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == sqliteFull
}

// Postgres's SQLSTATEs for a server that is going away or not yet back:
// admin_shutdown, crash_shutdown, cannot_connect_now.
const (
	pgAdminShutdown    = "57P01"
	pgCrashShutdown    = "57P02"
	pgCannotConnectNow = "57P03"
)

// IsUnreachable reports whether err says the database could not be
// reached, or went away during the request (Postgres stopped, restarting,
// or the network to it down): a failure of the store's server, not of the
// request, worth trying again shortly. SQLite's errors never are.
func IsUnreachable(err error) bool {
	if err == nil {
		return false
	}
	if IsRetryable(err) {
		return true
	}
	if sqlState(err) == pgCrashShutdown {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// IsRetryable reports whether a write that failed with err was certainly
// not applied because the database could not be reached: the connection
// could not be made, Postgres is starting (cannot_connect_now), nothing of
// the statement reached the server (pgconn.SafeToRetry), or Postgres
// answered it by ending the connection for an orderly shutdown
// (admin_shutdown: a backend handles that signal only where it may abort,
// never between a commit and its acknowledgement, so a write that gets it
// was rolled back). Writing it again once the database is back is safe; a
// write that failed any other way (a connection cut during its commit, a
// crash) may have been applied, and is not retried.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.SafeToRetry(err) || errors.Is(err, driver.ErrBadConn) {
		return true
	}
	switch sqlState(err) {
	case pgCannotConnectNow, pgAdminShutdown:
		return true
	}
	return false
}

// Option changes how Open or OpenPostgres opens a store.
type Option func(*options)

type options struct {
	full func() bool
	now  func() time.Time
}

// Clock makes the store stamp times (a record's created_at and
// updated_at, a learner's first answer, ...) with now instead of
// time.Now, for tests that need time to pass between two writes.
func Clock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// FullWhen makes every write fail, while full returns true, exactly as
// the database fails a write on a full disk: on SQLite an error whose Code
// is SQLITE_FULL (13) and whose text is SQLite's, "database or disk is
// full (13)"; on Postgres a server error of SQLSTATE 53100 (disk_full)
// with Postgres's text, "could not extend file ...: No space left on
// device". It stands in for a full file system where a test cannot mount
// a small one (that takes root); nothing else uses it.
func FullWhen(full func() bool) Option {
	return func(o *options) { o.full = full }
}

// sqliteFullError is the error FullWhen's writes fail with on SQLite:
// SQLITE_FULL as modernc.org/sqlite reports it.
type sqliteFullError struct{}

func (sqliteFullError) Error() string { return "database or disk is full (13)" }
func (sqliteFullError) Code() int     { return sqliteFull }

// writeHealth is whether writes have room: the last write that failed
// for lack of it, until a write succeeds again.
type writeHealth struct {
	mu     sync.Mutex
	err    error     // the failure; nil when healthy
	since  time.Time // when writes began to fail
	fixed  bool      // read-only: the disk was full at start, nothing clears it
	probed time.Time // the last write WriteHealth tried (probeDue)
	dir    string    // a SQLite store's directory, whose free space probeDue checks; "" on Postgres
}

// note records the outcome of a write.
func (h *writeHealth) note(err error) {
	full := IsFull(err)
	if err != nil && !full {
		return // a constraint, a cancelled context: not the disk's health
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.fixed:
	case full && h.err == nil:
		h.err, h.since = err, time.Now()
	case !full:
		h.err = nil
	}
}

func (h *writeHealth) get() (time.Time, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.since, h.err
}

// db is the store's database handle: every query is rebound for its
// dialect, writes through it (ExecContext, BeginTx, and the transaction's
// ExecContext and Commit) report their outcome to health, and a read-only
// store refuses them with ErrFull.
type db struct {
	*sql.DB
	d        *dialect
	health   *writeHealth
	readOnly error       // why the store was opened read-only; nil normally
	full     func() bool // FullWhen's; nil normally
}

// refuse is the error a write fails with before it reaches the database,
// or nil.
func (d db) refuse() error {
	if d.readOnly != nil {
		return d.readOnly
	}
	if d.full != nil && d.full() {
		err := fmt.Errorf("store: %w", d.d.simulatedFull())
		d.health.note(err)
		return err
	}
	return nil
}

// q is query as the database takes it. A query without arguments (a
// migration, a pragma) is sent as written.
func (d db) q(query string, args []any) string {
	if len(args) == 0 {
		return query
	}
	return d.d.rebind(query)
}

func (d db) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := d.refuse(); err != nil {
		return nil, err
	}
	res, err := d.DB.ExecContext(ctx, d.q(query, args), args...)
	d.health.note(err)
	return res, err
}

func (d db) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return d.DB.QueryContext(ctx, d.q(query, args), args...)
}

func (d db) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return d.DB.QueryRowContext(ctx, d.q(query, args), args...)
}

// Prepare prepares a query that takes arguments.
func (d db) Prepare(query string) (*sql.Stmt, error) {
	return d.DB.Prepare(d.d.rebind(query))
}

// tx is a transaction of db.
type tx struct {
	*sql.Tx
	db db
}

func (d db) BeginTx(ctx context.Context, opts *sql.TxOptions) (*tx, error) {
	if err := d.refuse(); err != nil {
		return nil, err
	}
	t, err := d.DB.BeginTx(ctx, opts)
	if err != nil {
		d.health.note(err)
		return nil, err
	}
	return &tx{Tx: t, db: d}, nil
}

func (t *tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := t.db.refuse(); err != nil {
		return nil, err
	}
	res, err := t.Tx.ExecContext(ctx, t.db.q(query, args), args...)
	t.db.health.note(err)
	return res, err
}

func (t *tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return t.Tx.QueryContext(ctx, t.db.q(query, args), args...)
}

func (t *tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(ctx, t.db.q(query, args), args...)
}

// PrepareContext prepares a query that takes arguments.
func (t *tx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return t.Tx.PrepareContext(ctx, t.db.d.rebind(query))
}

func (t *tx) Commit() error {
	if err := t.db.refuse(); err != nil {
		t.Tx.Rollback()
		return err
	}
	err := t.Tx.Commit()
	t.db.health.note(err)
	return err
}

// WriteHealth returns a nil error when writes have room, or the error the
// last write failed with for lack of it (IsFull) and since when writes
// have been failing. It clears when a later write succeeds; and while
// writes are failing it tries one itself, at most every probeEvery, so
// it clears as soon as there is room again, without waiting for a change
// someone would have to send (a load balancer polling /healthz sends
// none). A small write can succeed where a larger one fails (SQLite's
// write-ahead log reuses the room it has), so on SQLite the probe is
// tried only once the file system has probeRoom free; on Postgres, whose
// disk this process cannot see, it is a one-row update, which a nearly
// full disk may still take: the next write that fails marks writes
// failing again. A store opened read-only because the disk was full at
// start stays so until it is opened again.
func (s *Store) WriteHealth(ctx context.Context) (since time.Time, err error) {
	if !s.health.probeDue() {
		return s.health.get()
	}
	s.db.ExecContext(ctx, `UPDATE schema_version SET version = version`) // its outcome is noted in health
	return s.health.get()
}

// probeRoom is the free space a SQLite store's file system needs before
// WriteHealth tries a write: a few windows' records.
const probeRoom = 4 << 20

// probeEvery is how often WriteHealth tries a write while writes fail.
const probeEvery = 2 * time.Second

// probeDue reports whether writes are failing (not read-only) and no
// probe was tried within probeEvery; if so, it counts one as tried now.
func (h *writeHealth) probeDue() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil || h.fixed || time.Since(h.probed) < probeEvery {
		return false
	}
	h.probed = time.Now()
	if h.dir != "" {
		if free, ok := freeBytes(h.dir); ok && free < probeRoom {
			return false
		}
	}
	return true
}

// openReadOnly opens an existing database only to read it, for a disk so
// full that SQLite cannot create the files it needs to open it for
// writing (the WAL index): immutable, so it takes no locks and writes no
// file. That is safe only when no write-ahead log holds changes the main
// file lacks (a clean shutdown leaves none), so a non-empty log refuses
// it; and the schema must be this program's, since it cannot migrate.
func openReadOnly(path string, cause error) (*sql.DB, error) {
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("%w (and its write-ahead log holds changes, so it cannot be read without writing)", cause)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, cause
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("immutable", "1")
	rdb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, cause
	}
	var v int
	if err := rdb.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("%w (read-only: %v)", cause, err)
	}
	if latest := latestMigration(); v != latest {
		rdb.Close()
		return nil, fmt.Errorf("%w (read-only: the schema is version %d, this program needs %d)", cause, v, latest)
	}
	return rdb, nil
}
