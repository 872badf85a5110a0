package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// postgresEnv names the Postgres database the store's tests also run
// against: a URL such as postgres://capacitylab:secret@127.0.0.1:5432/capacitylab_test.
// Each test gets a schema of its own there, dropped when it ends.
const postgresEnv = "CAPACITYLAB_TEST_POSTGRES"

// testDB is one database a test runs the store on: a SQLite file in a
// temporary directory, or a fresh schema of the Postgres database that
// CAPACITYLAB_TEST_POSTGRES names. Opening it again opens the same data.
type testDB struct {
	kind string // "sqlite" or "postgres"
	path string // the SQLite file
	url  string // the Postgres URL, its search_path the test's own schema
	// schema and admin are the Postgres test's schema and the URL
	// without it, for what a test does beside the store.
	schema, admin string
}

// eachDB runs fn as two subtests, "sqlite" and "postgres", each on a
// database of its own. The Postgres half is skipped, saying so and how to
// run it, when CAPACITYLAB_TEST_POSTGRES is not set.
func eachDB(t *testing.T, fn func(t *testing.T, d testDB)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, sqliteDB(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, postgresDB(t)) })
}

func sqliteDB(t testing.TB) testDB {
	return testDB{kind: "sqlite", path: filepath.Join(t.TempDir(), "store.db")}
}

// postgresDB creates a schema of its own for the test in the database
// CAPACITYLAB_TEST_POSTGRES names, or skips the test loudly.
func postgresDB(t testing.TB) testDB {
	t.Helper()
	admin := os.Getenv(postgresEnv)
	if admin == "" {
		t.Skip("SKIPPED the Postgres half of the store's tests: " + postgresEnv + " is not set. To run it, point it at a database " +
			"the user may create schemas in, e.g. " + postgresEnv + "=postgres://capacitylab:secret@127.0.0.1:5432/capacitylab_test " +
			"(.ci/run starts the machine's PostgreSQL and sets it)")
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "test_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("%s: %v", postgresEnv, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating the test's schema: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			t.Errorf("dropping the test's schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping the test's schema %s: %v", schema, err)
		}
	})
	return testDB{kind: "postgres", url: withParam(admin, "search_path", schema), schema: schema, admin: admin}
}

// withParam adds a setting to a Postgres URL or key=value string.
func withParam(conn, key, value string) string {
	if u, err := url.Parse(conn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return strings.TrimSpace(conn) + " " + key + "=" + value
}

// fresh is another database of the same kind, for a test that needs
// several.
func (d testDB) fresh(t testing.TB) testDB {
	if d.kind == "postgres" {
		return postgresDB(t)
	}
	return sqliteDB(t)
}

// openErr opens the store on the test's database.
func (d testDB) openErr(opts ...Option) (*Store, error) {
	if d.kind == "postgres" {
		return OpenPostgres(context.Background(), d.url, opts...)
	}
	return Open(d.path, opts...)
}

// open opens the store on the test's database, failing the test if it
// cannot, and closes it when the test ends.
func (d testDB) open(t testing.TB, opts ...Option) *Store {
	t.Helper()
	s, err := d.openErr(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
