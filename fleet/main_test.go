package fleet_test

import (
	"context"
	"os"
	"testing"

	"capacitylab/labsvc"
	"capacitylab/measure"
	"capacitylab/store"
	"capacitylab/store/storetest"
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

// schemaURL makes a schema of the test's own in the database
// CAPACITYLAB_TEST_POSTGRES names and returns a URL whose search_path is
// it, or skips the test loudly (storetest.PostgresURL).
func schemaURL(t *testing.T) string {
	t.Helper()
	return storetest.PostgresURL(t, "the distributed sweep queue")
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
