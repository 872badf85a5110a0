package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Postgres connection settings.
const (
	// pgMaxConns bounds one Store's connections. Postgres serves each on
	// a process of its own; 16 is enough for the writes of a run and
	// the reads of the pages, and leaves room for several servers under
	// Postgres's default max_connections of 100.
	pgMaxConns = 16
	// pgConnectTimeout bounds one attempt to connect when the URL does
	// not say (connect_timeout).
	pgConnectTimeout = 10 * time.Second
	// pgLockTimeout is how long a statement waits for a lock another
	// holds before it fails, as SQLite's busy timeout, when the URL does
	// not set lock_timeout.
	pgLockTimeout = "5s"
)

// OpenPostgres opens the Postgres database that databaseURL names
// (postgres://user:password@host:port/database?sslmode=..., or the
// key=value form; see the package doc) and applies any pending migrations,
// as Open does for a SQLite file. Several servers may share the
// database: each start takes a lock while it migrates, so servers
// starting at once migrate once.
//
// It fails with one line naming what failed, and where, when the database
// cannot be reached, refuses the login, or has a schema newer than this
// program's (a *SchemaError); the line never holds the password.
//
// On Postgres the store keeps no learner's answers in memory (the other
// servers write the same database): every read asks it.
func OpenPostgres(ctx context.Context, databaseURL string, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		// pgx's parse errors name the string with its password masked.
		return nil, fmt.Errorf("store: the database URL is not one Postgres takes: %s", oneLine(err))
	}
	where := fmt.Sprintf("Postgres at %s:%d (database %q, user %q)", cfg.Host, cfg.Port, cfg.Database, cfg.User)
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = pgConnectTimeout
	}
	if _, set := cfg.RuntimeParams["lock_timeout"]; !set {
		cfg.RuntimeParams["lock_timeout"] = pgLockTimeout
	}
	if _, set := cfg.RuntimeParams["application_name"]; !set {
		cfg.RuntimeParams["application_name"] = "capacitylab"
	}
	sdb := stdlib.OpenDB(*cfg)
	sdb.SetMaxOpenConns(pgMaxConns)
	sdb.SetMaxIdleConns(pgMaxConns)
	// Connections live at most an hour, so a server follows a database
	// that moved (a failover behind one name) without a restart.
	sdb.SetConnMaxLifetime(time.Hour)
	if err := sdb.PingContext(ctx); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("store: cannot connect to %s: %s", where, oneLine(err))
	}
	s := newStore(sdb, postgresDialect(), o)
	s.wakes.listen = newPGListener(cfg)
	s.states.off, s.runLists.off, s.latest.off = true, true, true
	if err := s.migrate(ctx); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("store: %s: %w", where, err)
	}
	if err := s.openPool(ctx, cfg); err != nil {
		s.wakes.close()
		if s.pool != nil {
			s.pool.Close()
		}
		sdb.Close()
		return nil, fmt.Errorf("store: %s: %s", where, oneLine(err))
	}
	if err := s.prepare(); err != nil {
		s.pool.Close()
		sdb.Close()
		return nil, fmt.Errorf("store: %s: %s", where, oneLine(err))
	}
	return s, nil
}

// oneLine is err's text on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
