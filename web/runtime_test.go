package web

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"capacitylab/lessons"
	"capacitylab/result"
	"capacitylab/runner"
)

// A recorded table whose columns begin window, at_s is drawn as a time
// chart above its table, with its preset's knob changes marked and its
// caller's timeout dashed; any other table is drawn as before.
func TestTimeTableDrawnAboveItsTable(t *testing.T) {
	lab := &lessons.Lab{ID: "release-lab", Workers: 7, WaitMS: 100, CPUs: 1, Rates: []float64{50}, Seconds: 4, TimeoutMS: 250,
		At: []string{"2s:WAIT_MS=200"}}
	tb := &lessons.Table{ID: "release-table", Preset: lab.ID, Lab: lab, Caption: "The bad release, a second at a time",
		// The recorder's columns (lessons.TimeColumns), "—" where the lab was not read or nothing was ok.
		Columns: lessons.TimeColumns(),
		Rows: [][]string{
			// window, at_s, seconds, ok, refused, gaveup, client_busy, in_flight, queued, in_service, limit, p50_ms, p99_ms, dropped
			{"0", "0", "1", "50", "0", "0", "0", "5", "0", "5", "—", "100", "101", "0"},
			{"0", "1", "1", "49", "0", "0", "0", "5", "—", "—", "—", "100", "102", "0"},
			{"0", "2", "1", "35", "0", "10", "2", "10", "3", "7", "—", "200", "248", "0"},
			{"0", "3", "1", "0", "0", "15", "4", "10", "9", "7", "—", "—", "—", "0"},
		}}
	var b bytes.Buffer
	if err := tableView(tb, false).Render(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	chartAt, tableAt := strings.Index(out, `data-testid="table-time-chart"`), strings.Index(out, "<table")
	if chartAt < 0 || tableAt < 0 || chartAt > tableAt {
		t.Fatalf("time chart at %d, table at %d: want the chart above the table", chartAt, tableAt)
	}
	for _, want := range []string{">WAIT_MS=200 at 2 s</text>", "caller&#39;s timeout, 250 ms", "Requests a second, by how they ended",
		"lab: queued + in service</li>", "client busy", "4 seconds measured over 1 window"} {
		if !strings.Contains(out, want) {
			t.Errorf("the time table's chart lacks %q", want)
		}
	}

	// The table of rows is drawn as before: no time chart.
	b.Reset()
	plain := &lessons.Table{ID: "plain", Columns: []string{"offered", "ok_per_sec"}, Rows: [][]string{{"10", "10"}}}
	if err := tableView(plain, false).Render(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "time-chart") {
		t.Error("a table of windows got a time chart")
	}
	// A time table whose cells cannot be read shows its table alone.
	bad := *tb
	bad.Rows = [][]string{{"0", "0", "many"}}
	if _, ok := tableTimeChart(&bad); ok {
		t.Error("a time table with a bad cell was charted")
	}
}

// A run without samples has no time chart, no samples link, and its
// samples.csv is the error page's 404.
func TestRunWithoutSamples(t *testing.T) {
	site := newSite(t)
	rows := []result.Row{{Window: 0, Offered: 10, Sent: 20, OK: 20, OKPerSec: 10, P50MS: 21, P99MS: 30, Done: -1, Queued: -1, N: 20, Seconds: 2}}
	saveRunWithRecords(t, site, "r1", "alice", "", "", testPreset, rows, []float64{20, 21})
	page := site.get(nil, "/runs/r1")
	if page.StatusCode != 200 || strings.Contains(page.body, "run-time-chart") || strings.Contains(page.body, "samples.csv") {
		t.Errorf("run page without samples: status %d, time chart or samples link shown", page.StatusCode)
	}
	res := site.get(nil, "/runs/r1/samples.csv")
	if res.StatusCode != 404 || !strings.Contains(res.body, "only a run over time samples every second") {
		t.Errorf("samples.csv of a run without samples: %d %q", res.StatusCode, res.body)
	}
	if res := site.get(nil, "/runs/nope/samples.csv"); res.StatusCode != 404 || !strings.Contains(res.body, "There is no run nope") {
		t.Errorf("samples.csv of no run: %d", res.StatusCode)
	}
}

// A real run over time (a lab child and a load child): the stream's sample
// events are followed, while the window is measured, by panel messages
// that carry the time chart with the samples so far; afterwards the run's
// page draws every sample and links the samples' CSV, whose lines add up
// to the row; and a server that no longer holds the run (a restart) reads
// the same samples from the store.
func TestRunOverTimePageAndCSV(t *testing.T) {
	lab := buildLab(t)
	dbPath := filepath.Join(t.TempDir(), "runs.db")
	site, _ := newRunSite(t, dbPath, lab, 4)
	c := site.client()
	code, _, m := postSweep(t, c, site.srv.URL, `{"workers":4,"spin_ms":0,"wait_ms":10,"cpus":1,"rates":[40],"seconds":14,"seed":3,`+
		`"timeout_ms":250,"at":["2s:WAIT_MS=30"],"over_time":true}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST: %d %v", code, m)
	}
	id := m["id"].(string)
	conn := dial(t, site.srv.URL, id, 0)
	defer conn.Close()
	var row *result.Row
	samples, late := 0, time.Duration(0)
	var livePanels []int // samples drawn by each panel that came while the window was measured
	for {
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, data, err := conn.ReadMessage()
		if err != nil {
			break // the close frame after the last event
		}
		var e struct {
			runner.Event
			Panel string `json:"panel"`
		}
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatalf("message %s: %v", data, err)
		}
		switch {
		case e.Kind == "panel" && row == nil:
			// A panel while the window is measured, rendered when it is
			// sent: its time chart has at least the samples before it.
			n := samplesIn(t, e.Panel)
			if n < samples || n == 0 {
				t.Errorf("a live panel after %d samples draws %d", samples, n)
			}
			livePanels = append(livePanels, n)
		case e.Kind == runner.KindSample:
			samples++
			// Events are not held back while a sample's panel waits
			// (samplePanelEvery, 5 s): held, they would come up to 5 s
			// late.
			late = max(late, time.Since(e.At))
		case e.Kind == runner.KindRow:
			row = e.Row
		}
	}
	if row == nil || samples < 14 {
		t.Fatalf("the run ended with row %v and %d samples", row, samples)
	}
	if late > samplePanelEvery/2 {
		t.Errorf("a sample event came %v after it was logged: held back with the panel", late)
	}
	// The chart grows as the window is measured: two panels at least in
	// 14 s (a sample's panel waits samplePanelEvery, 5 s), drawing more
	// samples each time.
	t.Logf("live panels drew %v of %d samples", livePanels, samples)
	if len(livePanels) < 2 || livePanels[len(livePanels)-1] <= livePanels[0] || livePanels[len(livePanels)-1] > samples {
		t.Errorf("live panels drew %v samples of %d: want at least two while the window was measured, growing", livePanels, samples)
	}

	check := func(site *testSite, when string) {
		page := site.get(c, "/runs/"+id)
		if n := samplesIn(t, page.body); n != samples {
			t.Errorf("%s: the run page's time chart draws %d samples, the stream had %d", when, n, samples)
		}
		for _, want := range []string{`data-testid="run-samples-csv"`, ">WAIT_MS=30 at 2 s</text>", "caller&#39;s timeout, 250 ms"} {
			if !strings.Contains(page.body, want) {
				t.Errorf("%s: the run page lacks %s", when, want)
			}
		}
		res := site.get(c, "/runs/"+id+"/samples.csv")
		recs, err := csv.NewReader(strings.NewReader(res.body)).ReadAll()
		if err != nil || res.StatusCode != 200 || len(recs) != samples+1 || strings.Join(recs[0], ",") != strings.Join(result.SampleColumns(), ",") {
			t.Fatalf("%s: samples.csv %d, %d lines (want %d), %v\n%s", when, res.StatusCode, len(recs), samples+1, err, res.body)
		}
		got, err := result.ParseSamples(recs[0], recs[1:])
		if err != nil {
			t.Fatal(err)
		}
		var ok, ended int
		for _, s := range got {
			ok += s.OK
			ended += s.OK + s.Refused + s.GaveUp + s.Errors + s.ClientBusy + s.NotSent
			if !s.Lab {
				t.Errorf("%s: a sample at %v s without the lab's statistics", when, s.AtS)
			}
		}
		if ok != row.OK || ended != row.Arrivals {
			t.Errorf("%s: the samples' ok %d and arrivals %d, the row's %d and %d", when, ok, ended, row.OK, row.Arrivals)
		}
	}
	check(site, "the runner holding the run")
	site.srv.Close()
	again, _ := newRunSite(t, dbPath, lab, 4)
	check(again, "after a restart")
}

// samplesIn is how many samples the time chart in a page or panel draws
// (its data-samples).
func samplesIn(t *testing.T, body string) int {
	t.Helper()
	nodes := find(parse(t, body), byTestID("run-time-chart"))
	if len(nodes) != 1 {
		return 0
	}
	n, _ := strconv.Atoi(must(attr(nodes[0], "data-samples")))
	return n
}

// A run over time watched by more than liveChartWatchers (a class): every
// watcher gets every sample event as it comes, and the time chart is
// redrawn with the row, not while the window is measured. The watchers
// connect while the run waits behind another, so they are all there
// before its first sample.
func TestRunOverTimeCrowdGetsChartWithRows(t *testing.T) {
	lab := buildLab(t)
	site, _ := newRunSite(t, filepath.Join(t.TempDir(), "runs.db"), lab, 4)
	first := site.client()
	if code, _, m := postSweep(t, first, site.srv.URL, `{"workers":4,"spin_ms":0,"wait_ms":10,"cpus":1,"rates":[20],"seconds":2,"seed":3}`); code != http.StatusAccepted {
		t.Fatalf("POST the first run: %d %v", code, m)
	}
	code, _, m := postSweep(t, site.client(), site.srv.URL, `{"workers":4,"spin_ms":0,"wait_ms":10,"cpus":1,"rates":[40],"seconds":7,"seed":3,"over_time":true}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST: %d %v", code, m)
	}
	id := m["id"].(string)
	type seen struct{ samples, livePanels int }
	results := make(chan seen, liveChartWatchers+1)
	for range liveChartWatchers + 1 {
		conn := dial(t, site.srv.URL, id, 0)
		go func() {
			defer conn.Close()
			var s seen
			rowSeen := false
			for {
				conn.SetReadDeadline(time.Now().Add(60 * time.Second))
				_, data, err := conn.ReadMessage()
				if err != nil {
					break
				}
				var e runner.Event
				if json.Unmarshal(data, &e) != nil {
					continue
				}
				switch {
				case e.Kind == "panel" && !rowSeen:
					s.livePanels++
				case e.Kind == runner.KindSample:
					s.samples++
				case e.Kind == runner.KindRow:
					rowSeen = true
				}
			}
			results <- s
		}()
	}
	for i := range liveChartWatchers + 1 {
		s := <-results
		if s.samples < 7 {
			t.Errorf("watcher %d got %d sample events: want every second of the 7 s window (a sample's panel would be due 5 s after the first)", i, s.samples)
		}
		if s.livePanels != 0 {
			t.Errorf("watcher %d got %d panels while the window was measured: want none with %d watching (liveChartWatchers %d)",
				i, s.livePanels, liveChartWatchers+1, liveChartWatchers)
		}
	}
}
