// Package storetest gives tests outside package store a Postgres database
// of their own: a fresh schema of the database CAPACITYLAB_TEST_POSTGRES
// names (.ci/run starts the machine's PostgreSQL and sets it), dropped
// when the test ends. Package store's own tests use their testDB, which
// also runs each test on SQLite.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Env names the Postgres database tests run against, as a URL such as
// postgres://capacitylab:secret@127.0.0.1:5432/capacitylab_test.
const Env = "CAPACITYLAB_TEST_POSTGRES"

// PostgresURL makes a schema of the test's own in the database Env names,
// dropped when the test ends (after whatever the test started later has
// stopped: cleanups run last first), and returns the URL with it as
// search_path. When Env is not set it skips the test, saying that it
// needs Postgres for what and how to run it.
func PostgresURL(t testing.TB, what string) string {
	t.Helper()
	admin := os.Getenv(Env)
	if admin == "" {
		t.Skip("SKIPPED: " + what + " needs Postgres: " + Env + " is not set. Point it at a database the user may create " +
			"schemas in, e.g. " + Env + "=postgres://capacitylab:secret@127.0.0.1:5432/capacitylab_test (.ci/run starts the machine's PostgreSQL and sets it)")
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", Env, err)
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "test_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("%s: %v", Env, err)
	}
	t.Cleanup(func() {
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping the test's schema %s: %v", schema, err)
		}
		conn.Close(context.Background())
	})
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating the test's schema: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
