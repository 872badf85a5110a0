package store

import (
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// dialect is what differs between the two databases a Store runs on.
// Every query is written once, in the SQL both accept, with SQLite's
// placeholders (? and ?N); the few differences are here:
//
//   - placeholders: Postgres numbers them $N (rebind);
//   - the schema: Postgres starts from one file of the whole schema as
//     the SQLite migrations up to baseline built it (migrations/postgres/),
//     with BOOLEAN, BIGINT, DOUBLE PRECISION and identity columns where
//     SQLite has INTEGER, REAL and AUTOINCREMENT; later migrations are
//     shared (migrate);
//   - errors: a unique key violated (isUnique) and a full disk (IsFull)
//     are reported in each database's own way;
//   - raw records go in with one multi-row INSERT per 500 on SQLite and in
//     one statement of arrays (unnest) on Postgres (AddRecords).
//
// Times are text in both (RFC 3339 in UTC, see the package doc), and
// text compares bytewise in both (COLLATE "C" in the Postgres schema), so
// ordering and comparing them is the same everywhere.
type dialect struct {
	name     string // "sqlite" or "postgres"
	postgres bool
	// baseline is the schema version the dialect's own first migration
	// builds whole: shared migrations up to it are not applied (0: none).
	baseline int
	// rebound keeps each query rewritten for Postgres, by its SQLite text.
	rebound sync.Map
}

func sqliteDialect() *dialect { return &dialect{name: "sqlite"} }

func postgresDialect() *dialect { return &dialect{name: "postgres", postgres: true, baseline: 100} }

// rebind returns query as this database takes it: unchanged for SQLite;
// for Postgres with ?N written $N and each bare ? numbered one past the
// highest number before it, as SQLite numbers them. Question marks in
// quoted text are left alone.
func (d *dialect) rebind(query string) string {
	if !d.postgres {
		return query
	}
	if q, ok := d.rebound.Load(query); ok {
		return q.(string)
	}
	q := rebindDollar(query)
	d.rebound.Store(query, q)
	return q
}

func rebindDollar(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 16)
	highest, quoted := 0, false
	for i := 0; i < len(query); i++ {
		c := query[i]
		if c == '\'' {
			quoted = !quoted
		}
		if c != '?' || quoted {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(query) && query[j] >= '0' && query[j] <= '9' {
			j++
		}
		n := highest + 1
		if j > i+1 {
			n, _ = strconv.Atoi(query[i+1 : j])
		}
		highest = max(highest, n)
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
		i = j - 1
	}
	return b.String()
}

// Postgres's SQLSTATE codes the store tells apart.
const (
	pgDiskFull        = "53100" // disk_full: "could not extend file ...: No space left on device"
	pgUniqueViolation = "23505"
)

// sqlState returns the Postgres SQLSTATE of err, or "".
func sqlState(err error) string {
	var pe interface{ SQLState() string }
	if errors.As(err, &pe) {
		return pe.SQLState()
	}
	return ""
}

// isUnique reports whether err is a write refused because a row with the
// same unique key exists: SQLite's "UNIQUE constraint failed", or
// Postgres's unique_violation.
func isUnique(err error) bool {
	return err != nil && (sqlState(err) == pgUniqueViolation || strings.Contains(err.Error(), "UNIQUE constraint failed"))
}

// simulatedFull returns the error FullWhen's writes fail with: what the
// database itself reports when its disk is full.
func (d *dialect) simulatedFull() error {
	if d.postgres {
		return &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: pgDiskFull,
			Message: `could not extend file "base/16384/16385": No space left on device`,
			Hint:    "Check free disk space."}
	}
	return sqliteFullError{}
}
