package web

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"capacitylab/labsvc"
	"capacitylab/measure"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
)

// saveTestRun stores a finished run of learner with rows and, for each
// row's window, ok records of latencies lat (ms).
func saveRunWithRecords(t *testing.T, site *testSite, id, learner, lesson, block string, q runner.Request, rows []result.Row, lat []float64) {
	t.Helper()
	ctx := t.Context()
	req, _ := json.Marshal(q)
	at := time.Date(2026, 3, 3, 14, 5, 0, 0, time.UTC)
	if err := site.store.SaveRun(ctx, store.Run{ID: id, Learner: learner, Lesson: lesson, Block: block, Request: req, Status: store.RunDone,
		CreatedAt: at, StartedAt: at, EndedAt: at.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := site.store.AddRow(ctx, id, r); err != nil {
			t.Fatal(err)
		}
		var recs []result.Record
		for i, ms := range lat {
			recs = append(recs, result.Record{Window: r.Window, Seq: i, Intended: time.Duration(i) * time.Millisecond,
				Sent: time.Duration(i) * time.Millisecond, End: time.Duration(i)*time.Millisecond + time.Duration(ms*float64(time.Millisecond)),
				Outcome: result.OK, Status: 200, QueueWaitMS: -1, ServiceMS: -1})
		}
		recs = append(recs, result.Record{Window: r.Window, Seq: len(lat), Outcome: result.Gaveup, Reason: result.ReasonReadTimeout, QueueWaitMS: -1, ServiceMS: -1,
			End: 2 * time.Second})
		if err := site.store.AddRecords(ctx, id, recs); err != nil {
			t.Fatal(err)
		}
	}
}

var testPreset = runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1}, Rates: []float64{10, 40}, Seconds: 2, Seed: 1, Mode: runner.ModeOpen}}

// A run's page is titled in words (its lesson and preset), counts windows
// from 1, and shows a latency distribution of the window asked for.
func TestRunPageInWords(t *testing.T) {
	site := newSite(t)
	rows := []result.Row{
		{Window: 0, Offered: 10, Sent: 20, OK: 20, OKPerSec: 10, P50MS: 21, P99MS: 30, Done: -1, Queued: -1, N: 20, Seconds: 2},
		{Window: 1, Offered: 40, Sent: 80, OK: 79, Gaveup: 1, OKPerSec: 39, P50MS: 40, P99MS: 90, Done: -1, Queued: -1, N: 79, Seconds: 2},
	}
	saveRunWithRecords(t, site, "r1", "alice", "littles-law", "littles-lab", testPreset, rows, []float64{20, 21, 22, 25, 30, 90})
	page := site.get(nil, "/runs/r1")
	doc := parse(t, page.body)
	if got := testIDText(t, page.body, "run-title"); got != "How many requests are inside your service — 1 worker, 10–40/s" {
		t.Errorf("title %q", got)
	}
	if !strings.Contains(page.body, "<title>How many requests are inside your service — 1 worker, 10–40/s · Capacity Lab</title>") {
		t.Error("the page's <title> is not the run's title in words")
	}
	// Times are <time> elements with the instant, UTC text for no script.
	if !strings.Contains(page.body, `<time datetime="2026-03-03T14:05:00Z" data-local>14:05 UTC, 3 Mar 2026</time>`) {
		t.Error("the start is not a <time> in the one format")
	}
	// The run's table counts windows from 1 and leaves unknowns empty.
	trs := find(doc, func(n nodeT) bool { _, ok := attr(n, "data-window"); return ok })
	if len(trs) != 2 {
		t.Fatalf("%d table rows", len(trs))
	}
	var cells []string
	for c := trs[0].FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode {
			cells = append(cells, text(c))
		}
	}
	if cells[0] != "1" || strings.Contains(renderNode(trs[0]), ">-1<") {
		t.Errorf("first row %q: want window 1 and no -1", cells)
	}
	// The distribution: the last window by default, window=1 on request.
	dist := testIDText(t, page.body, "run-distribution")
	if !strings.Contains(dist, "Latency of the ok answers in window 2") || !strings.Contains(dist, "Of 7 requests sent, 6 were answered ok, 1 given up on by the caller.") {
		t.Errorf("distribution: %q", dist)
	}
	first := site.get(nil, "/runs/r1?window=1")
	if d := testIDText(t, first.body, "run-distribution"); !strings.Contains(d, "in window 1") || !strings.Contains(first.body, `aria-current="true">Window 1 (10/s)`) {
		t.Errorf("window=1: %q", d)
	}
	for _, bad := range []string{"0", "3", "x"} {
		res := site.get(nil, "/runs/r1?window="+bad)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, "pick one of windows 1 to 2") || !strings.Contains(res.body, `href="/runs/r1#distribution"`) {
			t.Errorf("window=%s: %d %s", bad, res.StatusCode, testIDText(t, res.body, "error-message"))
		}
	}
	// The chart as an image of its own.
	svg := site.get(nil, "/runs/r1/chart.svg")
	if svg.StatusCode != 200 || !strings.HasPrefix(svg.body, "<svg") || !strings.Contains(svg.body, "Measured against the model") {
		t.Errorf("chart.svg: %d %.100s", svg.StatusCode, svg.body)
	}
}

// The rows CSV leaves an unknown value's cell empty (done and queued are
// unknown without the lab's control API), never -1.
func TestRowsCSVLeavesUnknownEmpty(t *testing.T) {
	site := newSite(t)
	saveRunWithRecords(t, site, "r2", "alice", "", "", testPreset,
		[]result.Row{{Window: 0, Offered: 10, Sent: 20, OK: 20, OKPerSec: 10, P50MS: 21, P99MS: 30, Done: -1, Queued: -1, N: 20}}, nil)
	res := site.get(nil, "/runs/r2.csv")
	recs, err := csv.NewReader(strings.NewReader(res.body)).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("CSV: %v\n%s", err, res.body)
	}
	col := map[string]string{}
	for i, h := range recs[0] {
		col[h] = recs[1][i]
	}
	if col["done"] != "" || col["queued"] != "" || col["ok"] != "20" || col["lost"] != "0" {
		t.Errorf("done %q queued %q ok %q lost %q: want unknowns empty, known numbers kept", col["done"], col["queued"], col["ok"], col["lost"])
	}
	if strings.Contains(res.body, ",-1,") || strings.HasSuffix(strings.TrimSpace(res.body), ",-1") {
		t.Errorf("-1 in the CSV:\n%s", res.body)
	}
	// The records CSV does the same for the lab's headers it did not get.
	saveRunWithRecords(t, site, "r3", "alice", "", "", testPreset, []result.Row{{Window: 0, Offered: 10}}, []float64{20})
	if recs := site.get(nil, "/runs/r3/records.csv").body; strings.Contains(recs, "-1") {
		t.Errorf("records CSV has -1:\n%s", recs)
	}
}

// /runs lists the learner's own runs first, titled in words with their
// status in words and one date format.
func TestRunsListReadable(t *testing.T) {
	site := newSite(t)
	c := site.client()
	site.post(c, "/lessons/littles-law/check/littles-size", url.Values{"option": {"a"}}) // get a learner id
	me := learnerOf(t, site, c)
	saveRunWithRecords(t, site, "mine1", me, "littles-law", "littles-lab", testPreset, nil, nil)
	saveRunWithRecords(t, site, "theirs", "bob", "saturation", "sat-sweep", testPreset, nil, nil)
	page := site.get(c, "/runs")
	mine := testIDText(t, page.body, "runs-mine")
	others := testIDText(t, page.body, "runs-others")
	if !strings.Contains(mine, "How many requests are inside your service — 1 worker, 10–40/s") || !strings.Contains(mine, "Done") || strings.Contains(mine, "saturation") {
		t.Errorf("your runs: %q", mine)
	}
	if !strings.Contains(others, "Raise the rate until completions stop rising — 1 worker, 10–40/s") {
		t.Errorf("everyone else's runs: %q", others)
	}
	if strings.Index(page.body, "mine1") > strings.Index(page.body, "theirs") {
		t.Error("the learner's own runs are not first")
	}
	if strings.Count(page.body, "data-local>14:05 UTC, 3 Mar 2026</time>") != 2 {
		t.Error("dates are not in the one format")
	}
}

// Compare shows both runs' settings with exactly the differing ones
// marked; without two runs it says what to do, with links, not "Bad
// Request" and URL syntax.
func TestCompareHighlightsAndHelps(t *testing.T) {
	site := newSite(t)
	c := site.client()
	site.post(c, "/lessons/littles-law/check/littles-size", url.Values{"option": {"a"}})
	me := learnerOf(t, site, c)
	b := testPreset
	b.Limit = 5
	saveRunWithRecords(t, site, "off", me, "admission-limit", "limit-off", testPreset, nil, nil)
	saveRunWithRecords(t, site, "on", me, "admission-limit", "limit-on", b, nil, nil)
	page := site.get(c, "/runs/compare?a=off&b=on")
	doc := parse(t, page.body)
	var differs []string
	for _, tr := range find(doc, func(n nodeT) bool { v, _ := attr(n, "data-differs"); return v == "true" }) {
		differs = append(differs, strings.Fields(text(tr))[0]+" "+strings.Fields(text(tr))[1])
	}
	if strings.Join(differs, ",") != "Admission limit" || !strings.Contains(testIDText(t, page.body, "compare-differs-summary"), "one setting: admission limit") {
		t.Errorf("differing rows %q, summary %q", differs, testIDText(t, page.body, "compare-differs-summary"))
	}
	tests := []struct {
		name, query, title, link string
		status                   int
	}{
		// Nothing chosen: what to do, the list, and the learner's two latest runs.
		{"none", "", "Pick two runs to compare", `">Compare your two latest runs</a>`, http.StatusBadRequest},
		// One chosen.
		{"one", "?a=off", "Only one run was chosen.", `href="/runs"`, http.StatusBadRequest},
		// A mistyped id says which of the two.
		{"unknown", "?a=off&b=nope", "Run B was not found", `href="/runs"`, http.StatusNotFound},
	}
	for _, tt := range tests {
		res := site.get(c, "/runs/compare"+tt.query)
		if res.StatusCode != tt.status || !strings.Contains(res.body, tt.title) || !strings.Contains(res.body, tt.link) ||
			strings.Contains(res.body, "Bad Request") || strings.Contains(res.body, "?a=RUN") {
			t.Errorf("%s: %d\n%s", tt.name, res.StatusCode, testIDText(t, res.body, "error"))
		}
	}
}

// A run saved while the sojourn policy was called codel keeps its policy
// as saved, which no longer parses: its pages, the lists, a comparison
// and the lesson and progress pages of its learner all still render, the
// settings showing the policy as it was saved.
func TestOldCodelRunStillShows(t *testing.T) {
	site := newSite(t)
	c := site.client()
	site.post(c, "/lessons/littles-law/check/littles-size", url.Values{"option": {"a"}}) // get a learner id
	me := learnerOf(t, site, c)
	old := testPreset
	old.Policy = "codel,target_ms=24,timeout_ms=245"
	old.Lesson, old.Block = "capacity-moves", "moves-codel"
	rows := []result.Row{{Window: 0, Offered: 10, Sent: 20, OK: 20, OKPerSec: 10, P50MS: 21, P99MS: 30, Done: -1, Queued: -1, N: 20, Seconds: 2}}
	saveRunWithRecords(t, site, "old", me, "capacity-moves", "moves-codel", old, rows, []float64{20, 21})
	saveRunWithRecords(t, site, "new", me, "littles-law", "littles-lab", testPreset, rows, []float64{20, 21})
	for _, path := range []string{"/runs/old", "/runs/old.csv", "/runs/old/chart.svg", "/runs/old/panel", "/runs/old/records.csv",
		"/api/runs/old", "/runs", "/runs/compare?a=old&b=new", "/lessons/capacity-moves", "/progress"} {
		res := site.get(c, path)
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d, want 200\n%.300s", path, res.StatusCode, res.body)
		}
	}
	if page := site.get(c, "/runs/old"); !strings.Contains(page.body, "codel,target_ms=24,timeout_ms=245") {
		t.Error("the old run's page does not show its policy as saved")
	}
}

// A retrying client's window is counted by logical request on the run's
// page as its row is: two requests, the first given up on once and then
// answered by its retry (latency from the first attempt's intended time),
// the second answered at once, are 2 requests sent and 2 ok, not 3 sent.
func TestRunPageDistributionOfRetries(t *testing.T) {
	site := newSite(t)
	q := testPreset
	q.Rates, q.Retry = []float64{10}, "retries=1"
	req, _ := json.Marshal(q)
	at := time.Date(2026, 3, 3, 14, 5, 0, 0, time.UTC)
	ctx := t.Context()
	if err := site.store.SaveRun(ctx, store.Run{ID: "r2", Learner: "alice", Lesson: "littles-law", Block: "littles-lab", Request: req, Status: store.RunDone,
		CreatedAt: at, StartedAt: at, EndedAt: at.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	row := result.Row{Window: 0, Offered: 10, Sent: 2, OK: 2, Attempts: 3, OKPerSec: 1, Done: -1, Queued: -1, N: 2, Seconds: 2}
	if err := site.store.AddRow(ctx, "r2", row); err != nil {
		t.Fatal(err)
	}
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	recs := []result.Record{
		{Window: 0, Seq: 0, Intended: 0, Sent: 0, End: ms(500), Outcome: result.Gaveup, Reason: result.ReasonReadTimeout, QueueWaitMS: -1, ServiceMS: -1},
		{Window: 0, Seq: 1, Intended: ms(100), Sent: ms(100), End: ms(120), Outcome: result.OK, Status: 200, QueueWaitMS: -1, ServiceMS: -1},
		{Window: 0, Seq: 2, Request: 0, Attempt: 1, Intended: ms(500), Sent: ms(500), End: ms(530), Outcome: result.OK, Status: 200, QueueWaitMS: -1, ServiceMS: -1},
	}
	if err := site.store.AddRecords(ctx, "r2", recs); err != nil {
		t.Fatal(err)
	}
	page := site.get(nil, "/runs/r2")
	if dist := testIDText(t, page.body, "run-distribution"); !strings.Contains(dist, "Of 2 requests sent, 2 were answered ok.") {
		t.Errorf("distribution: %q; want the two requests, each counted once by its last attempt", dist)
	}
}
