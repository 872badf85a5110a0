package classroom

import (
	"testing"

	"capacitylab/store/storetest"
)

// replicas starts n Managers ("servers"), each with its own Store and
// websocket server, on one fresh Postgres schema (storetest.PostgresURL;
// the test skips, saying so, without one). The first one opened creates
// the schema's tables.
func replicas(t testing.TB, n int, cfg Config) []*env {
	t.Helper()
	u := storetest.PostgresURL(t, "a class session across servers")
	var out []*env
	for range n {
		e := &env{t: t, url: u}
		e.start(cfg)
		t.Cleanup(e.stop)
		out = append(out, e)
	}
	return out
}
