package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// IsUnreachable and IsRetryable on real failures: a connection refused (a
// port nobody listens on), Postgres's shutdown codes, and the errors a
// request of its own makes (a unique violation, SQLite's), which are
// neither.
func TestUnreachableAndRetryable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	_, refused := pgx.Connect(context.Background(), fmt.Sprintf("postgres://nobody@127.0.0.1:%d/none?sslmode=disable&connect_timeout=2", port))
	if refused == nil {
		t.Fatal("connected to a port nobody listens on")
	}
	sqlite, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sqlite.Close()
	_, sqliteErr := sqlite.db.ExecContext(context.Background(), "SELECT * FROM no_such_table")
	if sqliteErr == nil {
		t.Fatal("SQLite read a table that is not there")
	}
	pg := func(code string) error {
		return fmt.Errorf("store: saving: %w", &pgconn.PgError{Severity: "FATAL", Code: code, Message: "from the test"})
	}
	for _, c := range []struct {
		name                 string
		err                  error
		unreachable, retried bool
	}{
		{"connection refused", refused, true, true},
		{"admin_shutdown (57P01)", pg("57P01"), true, true},
		{"cannot_connect_now (57P03)", pg("57P03"), true, true},
		{"crash_shutdown (57P02): may have committed", pg("57P02"), true, false},
		{"unique_violation (23505)", pg("23505"), false, false},
		{"disk_full (53100)", pg("53100"), false, false},
		{"SQLite's own error", sqliteErr, false, false},
		{"nil", nil, false, false},
		{"a plain error", errors.New("no"), false, false},
	} {
		if got := IsUnreachable(c.err); got != c.unreachable {
			t.Errorf("%s: IsUnreachable = %v, want %v (%v)", c.name, got, c.unreachable, c.err)
		}
		if got := IsRetryable(c.err); got != c.retried {
			t.Errorf("%s: IsRetryable = %v, want %v (%v)", c.name, got, c.retried, c.err)
		}
	}
}
