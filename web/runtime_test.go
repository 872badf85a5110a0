package web

import (
	"bytes"
	"strings"
	"testing"

	"capacitylab/lessons"
	"capacitylab/loadrun"
)

// A recorded table whose columns begin window, at_s is drawn as a time
// chart above its table, with its preset's knob changes marked and its
// caller's timeout dashed; any other table is drawn as before.
func TestTimeTableDrawnAboveItsTable(t *testing.T) {
	lab := &lessons.Lab{ID: "release-lab", Workers: 7, WaitMS: 100, CPUs: 1, Rates: []float64{50}, Seconds: 4, TimeoutMS: 250,
		At: []string{"2s:WAIT_MS=200"}}
	tb := &lessons.Table{ID: "release-table", Preset: lab.ID, Lab: lab, Caption: "The bad release, a second at a time",
		Columns: []string{"window", "at_s", "ok", "gaveup", "p50_ms", "p99_ms", "in_flight", "queued", "in_service"},
		Rows: [][]string{
			{"0", "0", "50", "0", "100", "101", "5", "0", "5"},
			{"0", "1", "49", "0", "100", "102", "5", "0", "5"},
			{"0", "2", "35", "10", "200", "248", "10", "3", "7"},
			{"0", "3", "34", "15", "220", "249", "10", "9", "7"},
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
		"lab: queued + in service", "4 seconds measured over 1 window"} {
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
	rows := []loadrun.Row{{Window: 0, Offered: 10, Sent: 20, OK: 20, OKPerSec: 10, P50MS: 21, P99MS: 30, Done: -1, Queued: -1, N: 20, Seconds: 2}}
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
