package main

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"capacitylab/store"
	"capacitylab/store/storetest"
)

// postgresSchemaURL makes a schema of the test's own in the database
// CAPACITYLAB_TEST_POSTGRES names (storetest.PostgresURL), dropped when
// the test ends, after the servers it started stop.
func postgresSchemaURL(t *testing.T, what string) string {
	return storetest.PostgresURL(t, "running "+what)
}

// A server whose database a newer server has migrated (a replica left on
// the old version, on SQLite or Postgres) stops at start with one line
// saying so, and serves nothing.
func TestNewerSchemaFailsAtStart(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			data := t.TempDir()
			var args []string
			var st *store.Store
			var err error
			if kind == "postgres" {
				dbURL := postgresSchemaURL(t, "a server on a Postgres of a newer schema")
				args = []string{"--database-url", dbURL}
				st, err = store.OpenPostgres(ctx, dbURL)
			} else {
				st, err = store.Open(filepath.Join(data, dbFile))
			}
			if err != nil {
				t.Fatal(err)
			}
			v, err := st.SchemaVersion(ctx)
			st.Close()
			if err != nil {
				t.Fatal(err)
			}
			// What a newer server's migration leaves: a higher version.
			var bump func() error
			if kind == "postgres" {
				bump = func() error {
					conn, err := pgx.Connect(ctx, args[1])
					if err != nil {
						return err
					}
					defer conn.Close(ctx)
					_, err = conn.Exec(ctx, `UPDATE schema_version SET version = $1`, v+1)
					return err
				}
			} else {
				bump = func() error {
					db, err := sql.Open("sqlite", filepath.Join(data, dbFile))
					if err != nil {
						return err
					}
					defer db.Close()
					_, err = db.Exec(`UPDATE schema_version SET version = ?`, v+1)
					return err
				}
			}
			if err := bump(); err != nil {
				t.Fatal(err)
			}
			runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			var stdout, stderr strings.Builder
			err = run(runCtx, append([]string{"--addr", "127.0.0.1:0", "--data", data}, args...), func(string) string { return "" }, &stdout, &stderr)
			if err == nil {
				t.Fatal("the server started on a database of a newer schema")
			}
			msg := err.Error()
			if !strings.Contains(msg, "newer than this program's") || strings.Contains(msg, "\n") {
				t.Errorf("%q, want one line saying the schema is newer than this program's", msg)
			}
			if strings.Contains(stdout.String(), "serving on") {
				t.Error("it printed that it serves")
			}
			t.Logf("%s: %s", kind, msg)
		})
	}
}
