package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"capacitylab/runner"
	"capacitylab/store"
)

// The scaled-out site on one Postgres: a web replica (in this process)
// queues a sweep, a runner process (this test binary, --role runner) runs
// it to done with its rows and one contiguous event log; the runner serves
// /healthz and /metrics and nothing else. Then a runner killed (SIGKILL)
// mid-run loses its run: another runner's reaper ends it failed, "runner
// lost", with its terminal event, within the lost bound; and a runner
// stopped by SIGTERM ends its run interrupted.
func TestRolesWebAndRunner(t *testing.T) {
	if testing.Short() {
		t.Skip("starts runner processes and real labs")
	}
	dbURL := postgresSchemaURL(t, "the web and runner roles")
	web := start(t, nil, "--role", "web", "--database-url", dbURL, "--data", t.TempDir())
	runnerURL, runnerA := serverProcess(t, t.TempDir(), "--role", "runner", "--runner-slots", "1", "--database-url", dbURL)
	for path, want := range map[string]int{"/healthz": 200, "/metrics": 200, "/": 404, "/api/sweeps": 404} {
		res, err := http.Get(runnerURL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("runner GET %s: %d %q, want %d", path, res.StatusCode, body, want)
		}
		if path == "/metrics" && !strings.Contains(string(body), "capacitylab_runs_total") {
			t.Errorf("the runner's /metrics has no capacitylab_runs_total:\n%.500s", body)
		}
	}
	// The web replica's /metrics shows the shared queue and its runner.
	var scraped string
	waitFor(t, 10*time.Second, "the web replica's /metrics to count the runner", func() bool {
		res, err := http.Get(web.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		scraped = string(body)
		return strings.Contains(scraped, "\ncapacitylab_runners 1\n")
	})
	for _, want := range []string{"\ncapacitylab_runner_slots 1\n", "\ncapacitylab_runs_queued 0\n", "\ncapacitylab_runs_running 0\n"} {
		if !strings.Contains(scraped, want) {
			t.Errorf("the web replica's /metrics has no %q", strings.TrimSpace(want))
		}
	}
	st, err := store.OpenPostgres(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	id := submitSweep(t, web.url, `{"workers":4,"spin_ms":1,"wait_ms":4,"cpus":1,"rates":[20,20],"seconds":1,"seed":3}`)
	r := waitRun(t, st, id, func(r store.Run) bool { return r.Status != store.RunQueued && r.Status != store.RunRunning }, 60*time.Second)
	if r.Status != store.RunDone || len(r.Rows) != 2 {
		t.Fatalf("run %s ended %s (%s) with %d rows; want done with 2", id, r.Status, r.Reason, len(r.Rows))
	}
	checkEventLog(t, st, id, "done")

	id = submitSweep(t, web.url, `{"workers":4,"spin_ms":1,"wait_ms":4,"cpus":1,"rates":[20,20,20,20,20,20],"seconds":2,"seed":3}`)
	waitRun(t, st, id, func(r store.Run) bool { return len(r.Rows) >= 1 }, 60*time.Second)
	if err := runnerA.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	runnerA.Wait()
	killed := time.Now()
	_, runnerB := serverProcess(t, t.TempDir(), "--role", "runner", "--runner-slots", "1", "--database-url", dbURL)
	r = waitRun(t, st, id, func(r store.Run) bool { return r.Status != store.RunRunning }, 60*time.Second)
	if r.Status != store.RunFailed || !strings.HasPrefix(r.Reason, "runner lost: ") || len(r.Rows) == 0 {
		t.Fatalf("the killed runner's run is %s (%q) with %d rows; want failed, runner lost, its rows kept", r.Status, r.Reason, len(r.Rows))
	}
	t.Logf("run reaped %v after its runner was killed: %s", time.Since(killed).Round(100*time.Millisecond), r.Reason)
	checkEventLog(t, st, id, "failed")

	// SIGTERM: the runner takes no more jobs, ends its running run
	// interrupted (rows kept, terminal event stored) and exits 0.
	id = submitSweep(t, web.url, `{"workers":4,"spin_ms":1,"wait_ms":4,"cpus":1,"rates":[20,20,20,20,20,20],"seconds":2,"seed":3}`)
	waitRun(t, st, id, func(r store.Run) bool { return len(r.Rows) >= 1 }, 60*time.Second)
	if err := runnerB.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := runnerB.Wait(); err != nil {
		t.Errorf("the runner stopped by SIGTERM exited with %v", err)
	}
	r, err = st.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.RunInterrupted || len(r.Rows) == 0 {
		t.Fatalf("after SIGTERM the run is %s (%q) with %d rows; want interrupted with its rows", r.Status, r.Reason, len(r.Rows))
	}
	checkEventLog(t, st, id, "interrupted")
}

func submitSweep(t *testing.T, base, body string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/sweeps", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var acc struct{ ID string }
	json.NewDecoder(res.Body).Decode(&acc)
	if res.StatusCode != http.StatusAccepted || acc.ID == "" {
		t.Fatalf("POST /api/sweeps: %d %+v", res.StatusCode, acc)
	}
	return acc.ID
}

func waitRun(t *testing.T, st *store.Store, id string, ok func(store.Run) bool, timeout time.Duration) store.Run {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r, err := st.Run(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s (%s) with %d rows after %v", id, r.Status, r.Reason, len(r.Rows), timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkEventLog checks that run id's stored events are numbered 1, 2,
// 3..., begin with queued and end with one terminal event of kind last.
func checkEventLog(t *testing.T, st *store.Store, id string, last runner.Kind) {
	t.Helper()
	// The run's end is stored before its terminal event (whoever sees the
	// event finds the final state), so a reader that saw the status may
	// be a moment ahead of the event: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, kind, err := st.LastRunEvent(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if runner.Kind(kind).Terminal() || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	es, err := st.RunEvents(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range es {
		if e.Seq != i+1 || runner.Kind(e.Kind).Terminal() != (i == len(es)-1) {
			t.Fatalf("run %s: event %d is seq %d, %s: want contiguous seqs and one terminal event, the last", id, i, e.Seq, e.Kind)
		}
	}
	if len(es) < 2 || es[0].Kind != string(runner.KindQueued) || es[len(es)-1].Kind != string(last) {
		t.Fatalf("run %s: %d events, first %v: want queued first and %s last", id, len(es), es[0].Kind, last)
	}
}
