package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"capacitylab/result"
	"capacitylab/store"
)

// blockOf returns the HTML of the element with data-testid id in page.
func blockOf(t *testing.T, page, id string) string {
	t.Helper()
	nodes := find(parse(t, page), byTestID(id))
	if len(nodes) != 1 {
		t.Fatalf("want one element with data-testid=%q, found %d", id, len(nodes))
	}
	return renderNode(nodes[0])
}

// saveDoneRun stores a finished run of the sample lab by learner, with a
// row at each of its rates.
func saveDoneRun(t *testing.T, s *testSite, id, learner string, at time.Time) {
	t.Helper()
	lab, _, _ := s.course.Lab("sample-lab")
	q, _ := json.Marshal(labPreset(lab))
	if err := s.store.SaveRun(t.Context(), store.Run{ID: id, Learner: learner, Lesson: "sample", Block: lab.ID, Request: q, Status: store.RunDone, CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	for i, rate := range lab.Rates {
		row := result.Row{Window: i, Offered: rate, Sent: 12, OK: 12, N: 12, OKPerSec: rate + 0.26, P50MS: 21.04, P99MS: 33, MeanMS: 22, Seconds: lab.Seconds}
		if err := s.store.AddRow(t.Context(), id, row); err != nil {
			t.Fatal(err)
		}
	}
}

// The folding rules: until a learner has locked in or skipped the Predict
// a lab block settles, that block offers no Run and no one else's run,
// and its recorded table shows no numbers, each saying why; afterwards the
// lab offers Run and the recorded run, and the table one button away.
// Opening the table is recorded and shows the learner's prediction beside
// the cells the Predict's read: names.
func TestFoldingRules(t *testing.T) {
	s := newSite(t)
	saveDoneRun(t, s, "someone-elses", "ffffffffffffffffffffffffffffffff", time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	c := s.client()

	// A newcomer (and a learner who has not answered): folded.
	for _, who := range []string{"a newcomer", "after answering the check only"} {
		if who != "a newcomer" {
			s.post(c, "/lessons/sample/check/sample-check", url.Values{"option": {"a"}})
		}
		page := s.get(c, "/lessons/sample").body
		lab := blockOf(t, page, "lab-sample-lab")
		for _, want := range []string{`data-folded="true"`, `data-testid="lab-folded"`, "Lock in or skip", `href="#sample-predict"`, `data-testid="lab-env"`} {
			if !strings.Contains(lab, want) {
				t.Errorf("%s: folded lab block lacks %q", who, want)
			}
		}
		for _, not := range []string{`data-testid="lab-run"`, `data-testid="lab-reference"`, `data-testid="lab-replay"`, "someone-elses", `data-run-panel`} {
			if strings.Contains(lab, not) {
				t.Errorf("%s: folded lab block shows %q", who, not)
			}
		}
		// The table, and all that follows the lab (the Predict's gate), is
		// not on the page: a note stands for it, naming what is to come.
		if strings.Contains(page, `id="sample-table"`) || strings.Contains(page, `id="sample-check"`) {
			t.Errorf("%s: a block past the Predict's gate is on the page", who)
		}
		gate := blockOf(t, page, "lesson-gate")
		for _, want := range []string{`data-gate="sample-predict"`, `href="#sample-predict"`, "Lock it in or skip it to read on"} {
			if !strings.Contains(gate, want) {
				t.Errorf("%s: the gate's note lacks %q: %s", who, want, gate)
			}
		}
		if strings.Contains(page, "fixture 5") {
			t.Errorf("%s: a recorded cell is somewhere on the page", who)
		}
	}

	// Lock: the JSON answer carries the unfolded lab and closed table.
	res := s.postJSON(c, samplePredict, url.Values{"action": {"lock"}, "option": {"b"}})
	var body blockResponse
	if err := json.Unmarshal([]byte(res.body), &body); err != nil || res.StatusCode != 200 {
		t.Fatalf("lock: %d %s", res.StatusCode, res.body)
	}
	related := map[string]string{}
	for _, rb := range body.Related {
		related[rb.Block] = rb.HTML
	}
	if !strings.Contains(related["sample-lab"], `data-testid="lab-run"`) || !strings.Contains(related["sample-table"], `data-testid="table-open"`) {
		t.Errorf("lock answers with related blocks %v, want the lab with Run and the table with its open button", body.Related)
	}
	if strings.Contains(body.HTML, `data-testid="predict-reveal"`) || !strings.Contains(body.HTML, `data-testid="predict-reveal-later"`) {
		t.Error("right after locking, the predict block offers Reveal")
	}
	page := s.get(c, "/lessons/sample").body
	lab := blockOf(t, page, "lab-sample-lab")
	for _, want := range []string{`data-folded="false"`, `data-testid="lab-run"`, `data-testid="lab-reference"`, `href="/runs/someone-elses"`, `data-testid="lab-replay"`} {
		if !strings.Contains(lab, want) {
			t.Errorf("unfolded lab lacks %q", want)
		}
	}
	table := blockOf(t, page, "table-sample-table")
	if strings.Contains(table, "<td") || !strings.Contains(table, `data-testid="table-open"`) {
		t.Errorf("after locking, the table shows its numbers before being opened: %s", table)
	}

	// Open: recorded, the numbers show, with the prediction beside the
	// cells read: names (the 20 row's ok_per_sec and p50_ms).
	res = s.postJSON(c, samplePredict, url.Values{"action": {"open"}})
	body = blockResponse{}
	json.Unmarshal([]byte(res.body), &body)
	if res.StatusCode != 200 || !strings.Contains(body.HTML, `data-testid="predict-reveal"`) {
		t.Fatalf("open: %d, predict block %s", res.StatusCode, body.HTML)
	}
	page = s.get(c, "/lessons/sample").body
	reading := testIDText(t, page, "reading")
	for _, want := range []string{"You predicted About 500", "Measured in the recorded run", "at 20 a second", "ok_per_sec fixture 5", "p50_ms fixture 6", "Back to your prediction"} {
		if !strings.Contains(reading, want) {
			t.Errorf("reading line %q lacks %q", reading, want)
		}
	}
	var e store.Export
	json.Unmarshal([]byte(s.get(c, "/api/progress").body), &e)
	if len(e.Predictions) != 1 || !e.Predictions[0].Opened() {
		t.Errorf("export after open: %+v", e.Predictions)
	}
}

// Reveal needs a measurement seen, and the server enforces it for forms
// and JSON alike: before a lock (409), after a lock with nothing seen
// (409, saying what to do), and then after the learner's own finished run
// of the preset (no table opened) it works.
func TestRevealNeedsMeasurement(t *testing.T) {
	s := newSite(t)
	c := s.client()
	res := s.postJSON(c, samplePredict, url.Values{"action": {"reveal"}})
	if res.StatusCode != 409 {
		t.Errorf("reveal before lock: %d %s", res.StatusCode, res.body)
	}
	if res := s.postJSON(c, samplePredict, url.Values{"action": {"open"}}); res.StatusCode != 409 {
		t.Errorf("open before lock: %d %s", res.StatusCode, res.body)
	}
	s.post(c, samplePredict, url.Values{"action": {"skip"}})
	res = s.postJSON(c, samplePredict, url.Values{"action": {"reveal"}})
	var body errorBody
	json.Unmarshal([]byte(res.body), &body)
	if res.StatusCode != 409 || body.Error == nil || !strings.Contains(body.Error.Message, "See a measurement first") {
		t.Errorf("JSON reveal before a measurement: %d %s", res.StatusCode, res.body)
	}
	form := s.post(c, samplePredict, url.Values{"action": {"reveal"}})
	if form.StatusCode != 409 || !strings.Contains(form.body, "See a measurement first") {
		t.Errorf("form reveal before a measurement: %d", form.StatusCode)
	}
	learner := learnerOf(t, s, c)
	st, _ := s.store.LessonState(t.Context(), learner, "sample")
	if st.Predictions["sample-predict"].Revealed() {
		t.Fatal("the refused reveal was stored")
	}

	// Another learner's run does not count; the learner's own does.
	saveDoneRun(t, s, "not-mine", "ffffffffffffffffffffffffffffffff", time.Now())
	if res := s.postJSON(c, samplePredict, url.Values{"action": {"reveal"}}); res.StatusCode != 409 {
		t.Errorf("reveal after someone else's run: %d", res.StatusCode)
	}
	saveDoneRun(t, s, "mine", learner, time.Now())
	page := s.get(c, "/lessons/sample").body
	lab := blockOf(t, page, "lab-sample-lab")
	for _, want := range []string{`data-run-id="mine"`, `data-testid="reading"`, "You skipped", "at 20 a second", "ok_per_sec", "20.3", `data-testid="lab-next"`, `href="#sample-record"`} {
		if !strings.Contains(lab, want) {
			t.Errorf("lab block after the learner's run lacks %q", want)
		}
	}
	// The run table counts windows from 1.
	rows := find(parse(t, lab), func(n nodeT) bool { v, ok := attr(n, "data-window"); return ok && v != "" })
	if len(rows) != 2 || !strings.HasPrefix(text(rows[0]), "1") || !strings.HasPrefix(text(rows[1]), "2") {
		t.Errorf("run table rows: %d, first %q", len(rows), text(rows[0]))
	}
	if !hasTestID(t, page, "predict-reveal") {
		t.Error("no Reveal after the learner's own run")
	}
	res = s.postJSON(c, samplePredict, url.Values{"action": {"reveal"}})
	if res.StatusCode != 200 || !strings.Contains(res.body, "predict-answer") {
		t.Errorf("reveal after own run: %d %s", res.StatusCode, res.body)
	}
}

// Options are shown in each learner's own order, the same on every view,
// and answers name them by id whatever their place.
func TestOptionOrderPerLearner(t *testing.T) {
	s := newSite(t)
	q, _, _ := s.course.Question("sample-predict")
	orderOn := func(learner string) string {
		c := s.client()
		if learner != "" {
			u, _ := url.Parse(s.srv.URL)
			c.Jar.SetCookies(u, []*http.Cookie{{Name: LearnerCookie, Value: learner}})
		}
		block := blockOf(t, s.get(c, "/lessons/sample").body, "predict-sample-predict")
		var b strings.Builder
		for _, n := range find(parse(t, block), func(n nodeT) bool { v, _ := attr(n, "name"); return v == "option" }) {
			v, _ := attr(n, "value")
			b.WriteString(v)
		}
		return b.String()
	}
	seen := map[string]bool{}
	for _, learner := range []string{"", "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210", "00000000000000001111111111111111", "abababababababababababababababab"} {
		got := orderOn(learner)
		if want := orderKey(q.Order(learner)); got != want {
			t.Errorf("learner %q sees %s, want %s", learner, got, want)
		}
		if again := orderOn(learner); again != got {
			t.Errorf("learner %q sees %s, then %s", learner, got, again)
		}
		seen[got] = true
	}
	if len(seen) < 2 {
		t.Errorf("five learners all saw one order: %v", seen)
	}
	// An answer names its option by id: the learner picks "a" wherever it
	// stands on their page, and the export says "a".
	c := s.client()
	s.post(c, samplePredict, url.Values{"action": {"lock"}, "option": {"a"}})
	var e store.Export
	json.Unmarshal([]byte(s.get(c, "/api/progress").body), &e)
	if len(e.Predictions) != 1 || e.Predictions[0].Option != "a" {
		t.Errorf("export %+v, want option a", e.Predictions)
	}
}

// A window with no answers has no latency: the reading says so rather
// than showing the zero its row holds.
func TestRunReadingNoAnswers(t *testing.T) {
	c := loadCourse(t)
	q, l, _ := c.Question("littles-double")
	lab := settlingLab(l, q)
	rows := []result.Row{
		{Window: 0, Offered: 20, Sent: 94, OK: 94, N: 94, OKPerSec: 18.8, MeanMS: 28.3},
		{Window: 1, Offered: 40, Sent: 210, OK: 0, N: 0, OKPerSec: 0, MeanMS: 0},
	}
	got := runReading(q, lab, runView{Rows: rows}, nil).Rows
	if len(got) != 2 || got[0].Cells[1] != (readCell{Column: "mean_ms", Value: "28.3"}) || got[1].Cells[1] != (readCell{Column: "mean_ms", Value: "none (no answers)"}) ||
		got[1].Cells[0] != (readCell{Column: "ok_per_sec", Value: "0.0"}) {
		t.Errorf("reading = %+v", got)
	}
	// A run of other rates has no 20 or 40 window: said, not invented.
	got = runReading(q, lab, runView{Rows: []result.Row{{Window: 0, Offered: 25, N: 1}}}, nil).Rows
	if len(got) != 2 || got[0].Gone == "" || got[1].Gone == "" {
		t.Errorf("reading of a run at other rates = %+v", got)
	}
}

// While the learner's run of a lab block is queued or running, the lesson
// page draws it in the block with Cancel offered and Run off (server
// side, for a page loaded or reloaded meanwhile, with or without script);
// Cancel without script posts the form to /runs/{id}/cancel and comes
// back to the block; afterwards Run is back and the run says cancelled.
func TestLabBlockWhileRunning(t *testing.T) {
	lab := buildLab(t)
	site, rn := newRunSite(t, filepath.Join(t.TempDir(), "db"), lab, 2)
	c := site.client()
	site.post(c, "/lessons/saturation/predict/sat-predict", url.Values{"action": {"skip"}})
	code, _, m := postSweep(t, c, site.srv.URL, `{"workers":1,"spin_ms":0,"wait_ms":1,"rates":[5],"seconds":30,"block":"sat-sweep"}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST: %d %v", code, m)
	}
	id := m["id"].(string)
	page := site.get(c, "/lessons/saturation").body
	block := blockOf(t, page, "lab-sat-sweep")
	doc := parse(t, block)
	run := find(doc, byTestID("lab-run"))
	cancel := find(doc, byTestID("lab-cancel"))
	if len(run) != 1 || len(cancel) != 1 {
		t.Fatalf("lab block has %d Run and %d Cancel buttons", len(run), len(cancel))
	}
	if _, off := attr(run[0], "disabled"); !off {
		t.Error("Run is offered while the learner's run goes")
	}
	if _, hidden := attr(cancel[0], "hidden"); hidden || must(attr(cancel[0], "formaction")) != "/runs/"+id+"/cancel" {
		t.Errorf("Cancel is not offered for run %s: %s", id, renderNode(cancel[0]))
	}
	if !strings.Contains(block, `data-run-id="`+id+`"`) || !strings.Contains(block, `data-live="true"`) {
		t.Error("the live run is not drawn in the block")
	}
	// Another lesson's lab block says a run is going, and Run is off there too.
	other := blockOf(t, site.get(c, "/lessons/littles-law").body, "lab-littles-sweep")
	if !strings.Contains(other, `data-folded="true"`) {
		t.Error("littles-sweep should still be folded for this learner")
	}

	res := site.post(c, "/runs/"+id+"/cancel", url.Values{"block": {"sat-sweep"}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/lessons/saturation#sat-sweep" {
		t.Errorf("cancel form: %d to %q, want 303 back to the block", res.StatusCode, res.Header.Get("Location"))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s, _ := rn.Get(id); s.Status == store.RunCancelled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run was not cancelled")
		}
		time.Sleep(50 * time.Millisecond)
	}
	block = blockOf(t, site.get(c, "/lessons/saturation").body, "lab-sat-sweep")
	run = find(parse(t, block), byTestID("lab-run"))
	if _, off := attr(run[0], "disabled"); off {
		t.Error("Run is still off after the run was cancelled")
	}
	if got := testIDText(t, block, "run-status"); !strings.HasPrefix(got, "Cancelled: ") {
		t.Errorf("status after cancelling: %q", got)
	}
}

// formValues returns the fields a browser would send for the form nodes
// under n: inputs with a name (radio buttons when checked) and selects
// (their selected option), in document order, as "name=value" lines.
func formValues(n *html.Node) []string {
	var out []string
	for _, f := range find(n, func(n *html.Node) bool { return n.Data == "input" || n.Data == "select" }) {
		name, ok := attr(f, "name")
		if !ok {
			continue
		}
		switch {
		case f.Data == "select":
			for _, o := range find(f, func(n *html.Node) bool { return n.Data == "option" }) {
				if _, sel := attr(o, "selected"); sel {
					out = append(out, name+"="+must(attr(o, "value")))
				}
			}
		case must(attr(f, "type")) == "radio" || must(attr(f, "type")) == "checkbox":
			if _, on := attr(f, "checked"); on {
				out = append(out, name+"="+must(attr(f, "value")))
			}
		default:
			out = append(out, name+"="+must(attr(f, "value")))
		}
	}
	return out
}

// A lesson page carries no lab block's knobs: "Change the settings" links
// to the lab's settings page (whose knobs runs.js brings in), and until
// then the Run form sends the preset's values, exactly those the knobs
// start at. The settings page folds like the block, and names a lab of
// another lesson as not found.
func TestLabSettingsPage(t *testing.T) {
	s := newSite(t)
	c := s.client()
	s.post(c, samplePredict, url.Values{"action": {"skip"}})
	page := s.get(c, "/lessons/sample").body
	lab := find(parse(t, page), byTestID("lab-sample-lab"))[0]
	if got := find(lab, byTestID("run-field-workers")); len(got) != 0 {
		t.Error("the lesson page carries the lab's knobs")
	}
	link := find(lab, byTestID("lab-settings-link"))
	if len(link) != 1 || must(attr(link[0], "href")) != "/lessons/sample/lab/sample-lab/settings" {
		t.Fatalf("no link to the settings page in %s", renderNode(lab))
	}
	preset := find(lab, func(n *html.Node) bool { _, ok := attr(n, "data-preset-fields"); return ok })
	if len(preset) != 1 {
		t.Fatal("no preset fields in the Run form")
	}
	res := s.get(c, "/lessons/sample/lab/sample-lab/settings")
	if res.StatusCode != 200 {
		t.Fatalf("settings page: %d", res.StatusCode)
	}
	knobs := find(parse(t, res.body), byTestID("lab-knobs"))
	if len(knobs) != 1 {
		t.Fatalf("settings page has no knobs:\n%s", res.body)
	}
	form := find(parse(t, res.body), byTestID("lab-settings-form"))[0]
	if got, want := strings.Join(formValues(form), "&"), "block=sample-lab&"+strings.Join(formValues(preset[0]), "&"); got != want {
		t.Errorf("the settings page's form sends\n%s\nthe lesson's Run form\n%s", got, want)
	}
	for _, id := range []string{"lab-run", "lab-settings-back", "run-field-rates", "run-mode-open", "run-field-rng"} {
		if !hasTestID(t, res.body, id) {
			t.Errorf("settings page lacks %s", id)
		}
	}

	// A newcomer has not answered the Predict: no knobs, no Run, the reason.
	folded := s.get(nil, "/lessons/sample/lab/sample-lab/settings")
	if folded.StatusCode != 200 || !hasTestID(t, folded.body, "lab-folded") || hasTestID(t, folded.body, "lab-run") || hasTestID(t, folded.body, "lab-knobs") {
		t.Errorf("a newcomer's settings page is not folded: %d\n%s", folded.StatusCode, folded.body)
	}
	for _, bad := range []string{"/lessons/sample/lab/nowhere/settings", "/lessons/littles-law/lab/sample-lab/settings"} {
		if res := s.get(c, bad); res.StatusCode != 404 {
			t.Errorf("%s: %d, want 404", bad, res.StatusCode)
		}
	}
}
