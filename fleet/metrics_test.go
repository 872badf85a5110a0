package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"capacitylab/fleet"
	"capacitylab/store"
)

// A web replica's /metrics shows the shared queue: the runs another
// replica submitted, the one a runner claimed, and the live runners with
// their slots (a runner whose heartbeat is stale is not counted).
func TestReplicaMetricsShowTheSharedQueue(t *testing.T) {
	ctx := context.Background()
	db := schemaURL(t)
	reg := prometheus.NewRegistry()
	st := openStore(t, db)
	if _, err := fleet.NewQueue(fleet.Config{Store: st, Registerer: reg, LostAfter: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	other, err := fleet.NewQueue(fleet.Config{Store: openStore(t, db)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 3 {
		tk, err := other.SubmitFrom(ctx, fmt.Sprintf("learner-%d", i), fmt.Sprintf("10.0.0.%d", i), small(10))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}
	for _, r := range []struct {
		id    string
		slots int
	}{{"runner-a", 1}, {"runner-b", 2}, {"runner-stale", 4}} {
		if err := st.Heartbeat(ctx, r.id, "host", r.slots); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE runners SET heartbeat = now() - interval '1 minute' WHERE id = 'runner-stale'`); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := st.ClaimRun(ctx, ids[0], "runner-a", time.Now()); err != nil || !ok {
		t.Fatalf("claiming run %s: ok %v, %v", ids[0], ok, err)
	}

	got := gauges(t, reg)
	want := map[string]float64{"capacitylab_runs_queued": 2, "capacitylab_runs_running": 1, "capacitylab_runners": 2, "capacitylab_runner_slots": 3}
	for name, v := range want {
		if g, ok := got[name]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", name, g, ok, v)
		}
	}
}

// A scrape while the database cannot be reached leaves the shared
// queue's gauges out, and the rest of /metrics is served.
func TestReplicaMetricsWithoutTheDatabase(t *testing.T) {
	reg := prometheus.NewRegistry()
	st, err := store.OpenPostgres(context.Background(), schemaURL(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.NewQueue(fleet.Config{Store: st, Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	st.Close() // as unreachable as a database gets
	got := gauges(t, reg)
	for _, name := range []string{"capacitylab_runs_queued", "capacitylab_runs_running", "capacitylab_runners", "capacitylab_runner_slots"} {
		if v, ok := got[name]; ok {
			t.Errorf("%s = %v with the database closed, want it left out", name, v)
		}
	}
}

// gauges gathers reg's gauges by name.
func gauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if g := m.GetGauge(); g != nil {
				out[mf.GetName()] = g.GetValue()
			}
		}
	}
	return out
}
