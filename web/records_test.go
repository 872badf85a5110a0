package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"capacitylab/measure"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
)

const recordPath = "/lessons/admission-limit/record/limit-record"

// recordForm is a complete record with the given run attached.
func recordForm(run string) url.Values {
	return url.Values{
		"setting":     {"LIMIT=10 on WORKERS=1 SPIN_MS=2 WAIT_MS=18 CPUS=1"},
		"criterion":   {"p99 of delivered answers within 230 ms up to 100/s"},
		"measurement": {"limit-on, seed 7, 1 s windows"},
		"number":      {"1 × (230 − 21) ÷ 21 = 9.95 → 10"},
		"reverse":     {"service time at rest moving by more than 1 ms"},
		"run":         {run},
	}
}

// saveTestRun stores a finished run with two rows for learner.
func saveTestRun(t *testing.T, site *testSite, id, learner string) {
	t.Helper()
	ctx := context.Background()
	req, _ := json.Marshal(runner.Request{Preset: measure.Preset{Rates: []float64{40, 100}, Seconds: 1, Seed: 7}, Block: "limit-on"})
	if err := site.store.SaveRun(ctx, store.Run{ID: id, Learner: learner, Lesson: "admission-limit", Block: "limit-on",
		Request: req, Status: store.RunDone, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for i, rate := range []float64{40, 100} {
		row := result.Row{Offered: rate, Sent: int(rate), OK: 40, Refused: int(rate) - 40, OKPerSec: 40, P50MS: 120, P99MS: 229.5, Done: 40, Queued: 10, MeanMS: 130}
		if err := site.store.AddRow(ctx, id, row); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
}

// newLearner gives c a learner cookie by skipping lesson 7's prediction,
// and returns the learner id.
func newLearner(t *testing.T, site *testSite, c *http.Client) string {
	t.Helper()
	if res := site.post(c, "/lessons/admission-limit/predict/limit-predict", url.Values{"action": {"skip"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("skip: %d %s", res.StatusCode, res.body)
	}
	return learnerOf(t, site, c)
}

func TestRecordNoJSSaveEditExport(t *testing.T) {
	// The store's clock moves only when the test says, so an edit is
	// stamped after the first save without waiting.
	var clock atomic.Int64
	clock.Store(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	site := newSiteWith(t, filepath.Join(t.TempDir(), "records.db"), []store.Option{store.Clock(now)}, nil)
	c := site.client()
	learner := newLearner(t, site, c)
	saveTestRun(t, site, "r-mine", learner)

	// The lesson offers the learner's own run to attach.
	page := site.get(c, "/lessons/admission-limit")
	if !strings.Contains(page.body, `value="r-mine"`) {
		t.Fatalf("lesson page does not offer run r-mine:\n%s", testIDText(t, page.body, "record-run"))
	}
	if got := testIDText(t, page.body, "record-run"); !strings.Contains(got, "40, 100 a second") || !strings.Contains(got, "WORKERS=") {
		t.Errorf("run choice does not show its config and rates: %q", got)
	}

	// A plain form post saves and redirects back to the block.
	res := site.post(c, recordPath, recordForm("r-mine"))
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/lessons/admission-limit#limit-record" {
		t.Fatalf("save: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	page = site.get(c, "/lessons/admission-limit")
	if got := testIDText(t, page.body, "record-number"); got != "1 × (230 − 21) ÷ 21 = 9.95 → 10" {
		t.Errorf("number shown back = %q", got)
	}
	if !strings.Contains(page.body, `<option value="r-mine" selected`) {
		t.Error("the attached run is not selected when the page comes back")
	}
	if got := testIDText(t, page.body, "record-run-attached"); !strings.Contains(got, "run r-mine") || !strings.Contains(got, "40, 100 a second") {
		t.Errorf("attached run reads %q, want its id, config and rates", got)
	}
	if !hasTestID(t, page.body, "record-saved") || hasTestID(t, page.body, "record-updated") {
		t.Error("want a saved line and no updated time after the first save")
	}

	// Editing replaces the record and shows an updated time.
	clock.Add(int64(time.Minute))
	f := recordForm("r-mine")
	f.Set("number", "9: the budget is hard")
	if res := site.post(c, recordPath, f); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit: %d %s", res.StatusCode, res.body)
	}
	rec, err := site.store.Record(context.Background(), learner, "limit-record")
	if err != nil || rec.Fields["number"] != "9: the budget is hard" || !rec.UpdatedAt.After(rec.CreatedAt) {
		t.Fatalf("after edit: %+v %v", rec, err)
	}

	// The progress export includes it.
	var e store.Export
	if err := json.Unmarshal([]byte(site.get(c, "/api/progress").body), &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Records) != 1 || e.Records[0].Run != "r-mine" || e.Records[0].Fields["criterion"] == "" {
		t.Errorf("export records = %+v", e.Records)
	}

	// The Markdown download has the five fields under headings, the run's
	// settings, its rows as a table and a link to its page.
	md := site.get(c, recordPath+".md")
	if md.StatusCode != http.StatusOK || !strings.HasPrefix(md.Header.Get("Content-Type"), "text/markdown") ||
		!strings.Contains(md.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("markdown: %d %v", md.StatusCode, md.Header)
	}
	for _, want := range []string{
		"## Setting\n\nLIMIT=10 on WORKERS=1",
		"## Criterion\n\np99 of delivered answers within 230 ms",
		"## Measurement\n\nlimit-on, seed 7",
		"## Number\n\n9: the budget is hard",
		"## What would reverse it\n\nservice time at rest",
		"## Attached run",
		"/runs/r-mine)",
		"40, 100 a second",
		"| offered | sent | ok | refused |",
		"| 100 | 100 | 40 | 60 | 0 | 0 | 40.0 | 120.0 | 229.5 |",
	} {
		if !strings.Contains(md.body, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.body)
		}
	}

	// Resetting progress removes the record: the download is gone.
	if res := site.post(c, "/progress/reset", url.Values{"confirm": {"yes"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("reset: %d", res.StatusCode)
	}
	if _, err := site.store.Record(context.Background(), learner, "limit-record"); err == nil {
		t.Error("record survived the reset")
	}
}

func TestRecordJSONSave(t *testing.T) {
	site := newSite(t)
	c := site.client()
	// A first JSON save creates the learner and answers with the block.
	res := site.postJSON(c, recordPath, recordForm(""))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("JSON save: %d %s", res.StatusCode, res.body)
	}
	var out recordResponse
	if err := json.Unmarshal([]byte(res.body), &out); err != nil {
		t.Fatal(err)
	}
	if out.Block != "limit-record" || out.Kind != "record" || out.Record.Fields["setting"] == "" || out.Record.Run != "" {
		t.Errorf("response = %+v", out)
	}
	if !strings.Contains(out.HTML, `data-testid="record-saved"`) || !strings.Contains(out.HTML, "LIMIT=10 on WORKERS=1") {
		t.Errorf("block HTML does not show the saved record:\n%s", out.HTML)
	}
	if learnerOf(t, site, c) == "" {
		t.Error("no learner cookie after saving")
	}
}

func TestRecordValidation(t *testing.T) {
	site := newSite(t)
	c := site.client()
	learner := newLearner(t, site, c)
	saveTestRun(t, site, "r-theirs", "someone-else")
	saveTestRun(t, site, "r-mine", learner)
	long := strings.Repeat("é", maxRecordField+1)

	tests := []struct {
		name   string
		edit   func(url.Values)
		errors map[string]string // field → part of its message
		first  string            // the field that takes autofocus
	}{
		// The number and the criterion must be filled.
		{"number and criterion empty", func(f url.Values) { f.Set("number", "  "); f.Set("criterion", "") }, map[string]string{
			"number":    "Number is empty",
			"criterion": "Criterion is empty",
		}, "criterion"},
		// A field over 2,000 characters is refused, counted in characters not bytes.
		{"reverse too long", func(f url.Values) { f.Set("reverse", long) }, map[string]string{
			"reverse": "What would reverse it is 2001 characters long: the limit is 2000",
		}, "reverse"},
		// Another learner's run cannot be attached.
		{"someone else's run", func(f url.Values) { f.Set("run", "r-theirs") }, map[string]string{
			"run": `Run "r-theirs" is not one of your saved runs`,
		}, "run"},
		// A run that does not exist cannot be attached either.
		{"unknown run", func(f url.Values) { f.Set("run", "r-nope") }, map[string]string{
			"run": `Run "r-nope" is not one of your saved runs`,
		}, "run"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := recordForm("r-mine")
			tc.edit(f)

			// JSON: 400 with a message per field and the block's HTML.
			res := site.postJSON(c, recordPath, f)
			if res.StatusCode != http.StatusBadRequest {
				t.Fatalf("JSON: %d %s", res.StatusCode, res.body)
			}
			var out recordRefused
			if err := json.Unmarshal([]byte(res.body), &out); err != nil {
				t.Fatal(err)
			}
			if out.Error == nil || out.Error.Code != CodeInvalid || len(out.Errors) != len(tc.errors) {
				t.Errorf("JSON errors = %+v %v, want %v", out.Error, out.Errors, tc.errors)
			}
			for k, want := range tc.errors {
				if !strings.Contains(out.Errors[k], want) {
					t.Errorf("JSON errors[%s] = %q, want it to contain %q", k, out.Errors[k], want)
				}
			}

			// No JS: the lesson page again, 400, with what was typed and the messages.
			res = site.post(c, recordPath, f)
			if res.StatusCode != http.StatusBadRequest {
				t.Fatalf("form: %d", res.StatusCode)
			}
			for k, want := range tc.errors {
				if got := testIDText(t, res.body, "record-error-"+k); !strings.Contains(got, want) {
					t.Errorf("form message for %s = %q, want %q", k, got, want)
				}
			}
			// The first bad field in the form's order takes autofocus, so
			// the page opens at it.
			if !hasAttr(t, res.body, "record-"+tc.first, "autofocus") {
				t.Errorf("want autofocus on record-%s", tc.first)
			}
			if got := testIDText(t, res.body, "record-setting"); got != f.Get("setting") {
				t.Errorf("setting came back as %q, want what was typed", got)
			}
			if f.Get("reverse") == long && !strings.Contains(res.body, long) {
				t.Error("the over-long text was not given back")
			}
			// Nothing was saved.
			if _, err := site.store.Record(context.Background(), learner, "limit-record"); err == nil {
				t.Error("a refused record was saved")
			}
		})
	}
}

func TestRecordMarkdownNotSaved(t *testing.T) {
	site := newSite(t)
	tests := []struct {
		path string
		want int
	}{
		// Nothing saved yet: 404 with a message saying so.
		{recordPath + ".md", http.StatusNotFound},
		// Without .md the address is not a download.
		{recordPath, http.StatusNotFound},
		// A block that is not a record block.
		{"/lessons/admission-limit/record/limit-predict.md", http.StatusNotFound},
	}
	for _, tc := range tests {
		if res := site.get(nil, tc.path); res.StatusCode != tc.want {
			t.Errorf("GET %s = %d, want %d", tc.path, res.StatusCode, tc.want)
		}
	}
}

func TestRecordInLessonsAndExport(t *testing.T) {
	site := newSite(t)
	// /api/lessons counts lesson 7's record block.
	var out struct {
		Lessons []lessonJSON `json:"lessons"`
	}
	if err := json.Unmarshal([]byte(site.get(nil, "/api/lessons").body), &out); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range out.Lessons {
		if l.Slug == "admission-limit" {
			found = true
			if l.Blocks["record"] != 1 {
				t.Errorf("admission-limit blocks = %v, want record: 1", l.Blocks)
			}
		}
	}
	if !found {
		t.Fatal("admission-limit is not in /api/lessons")
	}
	// A newcomer's export has an empty list of records, not null.
	var e map[string]json.RawMessage
	if err := json.Unmarshal([]byte(site.get(nil, "/api/progress").body), &e); err != nil {
		t.Fatal(err)
	}
	if string(e["records"]) != "[]" {
		t.Errorf("newcomer export records = %s, want []", e["records"])
	}
}

// A kept run label changes with the run's status, the one field of a
// saved run that changes, and is what runLabel writes.
func TestRunLabelCacheFollowsStatus(t *testing.T) {
	s := &server{runLabels: newCache[string](runLabelCacheSize)}
	r := store.Run{ID: "r1", Status: store.RunRunning, CreatedAt: time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC),
		Request: json.RawMessage(`{"workers":2,"spin_ms":2,"wait_ms":18,"cpus":1,"rates":[20,40],"seconds":2}`)}
	for _, status := range []store.RunStatus{store.RunRunning, store.RunDone, store.RunDone} {
		r.Status = status
		got := s.runLabelOf(r)
		if want := runLabel(r); got != want || !strings.Contains(got, string(status)) {
			t.Errorf("status %s: kept label %q, want %q", status, got, want)
		}
	}
	if n := s.runLabels.len(); n != 2 {
		t.Errorf("kept %d labels, want one per status (2)", n)
	}
}
