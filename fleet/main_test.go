package fleet_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"capacitylab/labsvc"
	"capacitylab/measure"
	"capacitylab/store"
)

// The runs' children are this test binary re-executed, as in package
// runner's tests: with FLEET_TEST_LAB=1 a lab child, with FLEET_TEST_LOAD=1
// a load child.
const (
	labEnv  = "FLEET_TEST_LAB"
	loadEnv = "FLEET_TEST_LOAD"
)

func TestMain(m *testing.M) {
	labsvc.ChildMain(labEnv)
	measure.ChildMain(loadEnv)
	os.Exit(m.Run())
}

// postgresEnv names the Postgres database the tests run on, each in a
// schema of its own (as the store's tests).
const postgresEnv = "CAPACITYLAB_TEST_POSTGRES"

// schemaURL creates a schema of its own for the test in the database
// CAPACITYLAB_TEST_POSTGRES names and returns a URL whose search_path is
// it, or skips the test loudly.
func schemaURL(t *testing.T) string {
	t.Helper()
	admin := os.Getenv(postgresEnv)
	if admin == "" {
		t.Skip("SKIPPED: the distributed sweep queue needs Postgres and " + postgresEnv + " is not set. To run it, point it at a database " +
			"the user may create schemas in, e.g. " + postgresEnv + "=postgres://capacitylab:secret@127.0.0.1:5432/capacitylab_test " +
			"(.ci/run starts the machine's PostgreSQL and sets it)")
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "fleet_" + hex.EncodeToString(b[:])
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
	if err != nil || !strings.HasPrefix(u.Scheme, "postgres") {
		t.Fatalf("%s: want a postgres:// URL", postgresEnv)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// openStore opens a store on the test's schema (one per replica or
// runner, as separate processes would) and closes it when the test ends.
func openStore(t *testing.T, dbURL string) *store.Store {
	t.Helper()
	st, err := store.OpenPostgres(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func testCommand(t *testing.T, env string) labsvc.ChildCommand {
	t.Helper()
	cc, err := labsvc.SelfCommand(env)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}
