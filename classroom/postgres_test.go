package classroom

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// postgresEnv names the Postgres database the tests of sessions across
// servers run on, as for package store's tests: each test gets a schema
// of its own there, dropped when it ends.
const postgresEnv = "CAPACITYLAB_TEST_POSTGRES"

// postgresURL creates a schema for the test in the database
// CAPACITYLAB_TEST_POSTGRES names and returns its URL, or skips the test
// loudly when the variable is not set.
func postgresURL(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(postgresEnv)
	if admin == "" {
		t.Skip("SKIPPED: class sessions across servers need Postgres: " + postgresEnv + " is not set. Point it at a database " +
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
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", postgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// replicas starts n Managers ("servers"), each with its own Store and
// websocket server, on one fresh Postgres schema. The first one opened
// creates the schema's tables.
func replicas(t testing.TB, n int, cfg Config) []*env {
	t.Helper()
	u := postgresURL(t)
	var out []*env
	for range n {
		e := &env{t: t, url: u}
		e.start(cfg)
		t.Cleanup(e.stop)
		out = append(out, e)
	}
	return out
}
