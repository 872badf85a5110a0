package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"capacitylab/labsvc"
	"capacitylab/lessons"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
)

// commitTimes is the runner's Saver with the time each row event's write
// to the store returned (its commit: WriteRun is one transaction, its
// wake-up sent at commit), measured from the event's at.
type commitTimes struct {
	runner.Saver
	mu    sync.Mutex
	after map[int]time.Duration // by seq: commit minus the event's at
}

func (c *commitTimes) WriteRun(ctx context.Context, id, owner string, w store.RunWrite) error {
	err := c.Saver.WriteRun(ctx, id, owner, w)
	now := time.Now()
	for _, e := range w.Events {
		if runner.Kind(e.Kind) == runner.KindRow {
			var ev runner.Event
			json.Unmarshal(e.JSON, &ev)
			c.mu.Lock()
			c.after[e.Seq] = now.Sub(ev.At)
			c.mu.Unlock()
		}
	}
	return err
}

// followBenchWatchersEnv lists the numbers of watchers BenchmarkFollowRows
// measures, comma-separated (default 100,500).
const followBenchWatchersEnv = "CAPACITYLAB_BENCH_FOLLOW_WATCHERS"

// BenchmarkFollowRows measures rows reaching watchers on a replica that
// does not hold the run: server A runs benchSweep with its runner, server
// B (no runner, its own store handle on the same Postgres schema) serves
// N websocket watchers in a process of their own (watcherMain), which
// follow the run from the store (one watch and one reader on B), and then,
// as the peer to compare with in the same run, N watchers on A, which
// holds the run (on=holder). on=two-replicas spreads the N over B and a
// third server C like B (N/2 each, each half in a process of its own), as
// a class behind a load balancer reaches two replicas. It reports, for each, the p50, p99 and max
// time from a row event's commit to the store (AddRunEvent returned) to a
// watcher reading it, the p99 from the row event itself (the runner's
// at: the commit included) to the reading, and how many rows were read live. Run it with
// -benchtime=1x and CAPACITYLAB_TEST_POSTGRES set.
func BenchmarkFollowRows(b *testing.B) {
	dbURL := postgresSchemaURL(b, "BenchmarkFollowRows")
	counts := []int{100, 500}
	if v := os.Getenv(followBenchWatchersEnv); v != "" {
		counts = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("%s=%q: want numbers of watchers, 1 or more, comma-separated", followBenchWatchersEnv, v)
			}
			counts = append(counts, n)
		}
	}
	lab := buildLab(b)
	commits := &commitTimes{after: map[int]time.Duration{}}
	var rn *runner.Runner
	a := benchReplica(b, dbURL, func(d *Deps) {
		commits.Saver = d.Store
		var err error
		rn, err = runner.New(runner.Config{Load: testLoad(b), Lab: labsvc.ChildCommand{Path: lab, Args: []string{"lab-child"}}, Store: commits})
		if err != nil {
			b.Fatal(err)
		}
		d.Runner = rn
	})
	b.Cleanup(func() { rn.Close() }) // before the store closes
	replica := benchReplica(b, dbURL, nil)
	replica2 := benchReplica(b, dbURL, nil)
	for _, n := range counts {
		for _, on := range []struct {
			name  string
			sites []*testSite
		}{{"replica", []*testSite{replica}}, {"two-replicas", []*testSite{replica, replica2}}, {"holder", []*testSite{a}}} {
			b.Run(fmt.Sprintf("watchers=%d/on=%s", n, on.name), func(b *testing.B) { followRows(b, a, on.sites, commits, n) })
		}
	}
}

// followRows is one run of BenchmarkFollowRows: benchBody posted to a,
// n watchers spread evenly over sites, each site's in a process of its own.
func followRows(b *testing.B, a *testSite, sites []*testSite, commits *commitTimes, n int) {
	for b.Loop() {
		type watchers struct {
			cmd    *exec.Cmd
			stdin  io.WriteCloser
			stdout *strings.Builder
		}
		var ws []watchers
		for i := range sites {
			cmd, stdin, stdout := startWatchers(b, n/len(sites)+btoi(i < n%len(sites)), a.free)
			ws = append(ws, watchers{cmd, stdin, stdout})
		}
		code, _, m := postSweep(b, a.client(), a.srv.URL, benchBody())
		if code != http.StatusAccepted {
			b.Fatalf("POST: %d %v", code, m)
		}
		id := m["id"].(string)
		for i, site := range sites {
			fmt.Fprintf(ws[i].stdin, "%s %s\n", wsURL(site.srv.URL, id, 0), site.srv.URL)
			ws[i].stdin.Close()
		}
		var rep watchReport
		for _, w := range ws {
			if err := w.cmd.Wait(); err != nil {
				b.Fatalf("watcher process: %v", err)
			}
			var one watchReport
			if err := json.Unmarshal([]byte(w.stdout.String()), &one); err != nil {
				b.Fatalf("watcher report %q: %v", w.stdout.String(), err)
			}
			rep.Errors = append(rep.Errors, one.Errors...)
			rep.Rows += one.Rows
			rep.Carried += one.Carried
			rep.RowDelaysUS = append(rep.RowDelaysUS, one.RowDelaysUS...)
			rep.RowSeqs = append(rep.RowSeqs, one.RowSeqs...)
		}
		if len(rep.Errors) > 0 {
			b.Fatalf("%d watchers failed, the first: %s", len(rep.Errors), rep.Errors[0])
		}
		if rep.Rows != 3*n {
			b.Fatalf("watchers read %d row events, want %d (3 rows × %d watchers)", rep.Rows, 3*n, n)
		}
		// From the runner's row event (its at) to a watcher reading it,
		// the store's commit included.
		var whole []time.Duration
		for _, us := range rep.RowDelaysUS {
			whole = append(whole, time.Duration(us)*time.Microsecond)
		}
		slices.Sort(whole)
		commits.mu.Lock()
		var delays []time.Duration
		for i, us := range rep.RowDelaysUS {
			after, ok := commits.after[rep.RowSeqs[i]]
			if !ok {
				b.Fatalf("row seq %d was read but its commit was not seen", rep.RowSeqs[i])
			}
			delays = append(delays, time.Duration(us)*time.Microsecond-after)
		}
		clear(commits.after)
		commits.mu.Unlock()
		if len(delays) == 0 {
			b.Fatal("no row reached a watcher live")
		}
		slices.Sort(delays)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(result.NearestRank(delays, 50)), "commit-to-read-p50-ms")
		b.ReportMetric(ms(result.NearestRank(delays, 99)), "commit-to-read-p99-ms")
		b.ReportMetric(ms(delays[len(delays)-1]), "commit-to-read-max-ms")
		b.ReportMetric(float64(len(delays)), "rows-live")
		if len(whole) > 0 {
			b.ReportMetric(ms(result.NearestRank(whole, 99)), "row-to-read-p99-ms")
		}
		b.ReportMetric(float64(rep.Carried)/float64(n), "panels-carried/watcher")
	}
}

// benchReplica starts a server with SharedRuns on its own store handle of
// the Postgres schema at dbURL, for a benchmark; tweak may add a runner.
func benchReplica(b *testing.B, dbURL string, tweak func(*Deps)) *testSite {
	b.Helper()
	st, err := store.OpenPostgres(context.Background(), dbURL)
	if err != nil {
		b.Fatal(err)
	}
	c := loadCourse(b)
	d := Deps{Course: func() (*lessons.Course, error) { return c, nil }, Store: st, Assets: newAssets(b), SharedRuns: true}
	if tweak != nil {
		tweak(&d)
	}
	srv := httptest.NewServer(NewServer(d))
	b.Cleanup(func() {
		srv.Close()
		st.Close()
	})
	return &testSite{srv: srv, store: st, course: c}
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}
