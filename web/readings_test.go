package web

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"capacitylab/lessons"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
)

// recordedSamples are a preset's recorded time table as samples.
func recordedSamples(t testing.TB, c *lessons.Course, preset string) []result.Sample {
	t.Helper()
	_, l, _ := c.Lab(preset)
	for _, b := range l.Blocks() {
		if tb, ok := b.(*lessons.Table); ok && tb.Preset == preset && tb.TimeTable() {
			smp, err := result.ParseSamples(tb.Columns, tb.Rows)
			if err != nil {
				t.Fatal(err)
			}
			return smp
		}
	}
	t.Fatalf("%s has no time table", preset)
	return nil
}

// saveOverTimeRun saves a finished run of preset for learner, over time:
// its row and its samples as the runner logs them (sample events).
func saveOverTimeRun(t *testing.T, s *testSite, id, learner, preset string, row result.Row, samples []result.Sample, at time.Time) {
	t.Helper()
	lab, l, _ := s.course.Lab(preset)
	q, _ := json.Marshal(labPreset(lab))
	if err := s.store.SaveRun(t.Context(), store.Run{ID: id, Learner: learner, Lesson: l.Slug, Block: lab.ID, Request: q, Status: store.RunDone, CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	for i, smp := range samples {
		ev, _ := json.Marshal(runner.Event{Seq: i + 1, Kind: runner.KindSample, Sample: &smp})
		if err := s.store.AddRunEvent(t.Context(), id, store.RunEvent{Seq: i + 1, Kind: string(runner.KindSample), JSON: ev}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.store.AddRow(t.Context(), id, row); err != nil {
		t.Fatal(err)
	}
}

// capacity-moves' AIMD predict asks how many ok answers a second from 12 s
// on. Its reading, beside the recorded time table and after the learner's
// own run, is that quantity: ok a second from 12 s to the window's end,
// 30.5 in the recorded run, not the whole window's ok_per_sec of 36.0;
// the learner's option is given in the same units, and drawn as a band
// over those seconds on the reading's chart.
func TestStretchReading(t *testing.T) {
	s := newSite(t)
	c := s.client()
	const predict = "/lessons/capacity-moves/predict/moves-predict-aimd"
	if res := s.post(c, predict, url.Values{"action": {"lock"}, "option": {"b"}}); res.StatusCode != 303 {
		t.Fatalf("lock: %d %s", res.StatusCode, res.body)
	}
	if res := s.post(c, predict, url.Values{"action": {"open"}}); res.StatusCode != 303 {
		t.Fatalf("open: %d %s", res.StatusCode, res.body)
	}
	page := s.get(c, "/lessons/capacity-moves").body
	timeTable := blockOf(t, page, "table-moves-aimd-time")
	reading := testIDText(t, timeTable, "reading")
	for _, want := range []string{"You predicted About 30, most but not all of them (27 to 33 a second)", "at 50 a second, from 12 s to 30 s:",
		"ok 30.5 a second", "gaveup 1.6 a second"} {
		if !strings.Contains(reading, want) {
			t.Errorf("the recorded reading %q lacks %q", reading, want)
		}
	}
	if strings.Contains(reading, "ok_per_sec") || strings.Contains(reading, "36.0") {
		t.Errorf("the recorded reading %q shows the whole window's ok_per_sec", reading)
	}
	chartHTML := testIDText(t, timeTable, "reading-chart")
	for _, want := range []string{"your prediction: 27 to 33 a second", "from 12 s", "WAIT_MS=200 at 10 s"} {
		if !strings.Contains(chartHTML, want) {
			t.Errorf("the reading's chart lacks %q", want)
		}
	}
	if n := len(find(parse(t, timeTable), func(n nodeT) bool {
		v, _ := attr(n, "class")
		return n.Data == "rect" && strings.HasPrefix(v, "region ")
	})); n != 1 {
		t.Errorf("the reading's chart draws %d bands, want the learner's option's", n)
	}
	// The window table, above, reads nothing: the reading is once, under
	// the table it reads.
	if hasTestID(t, blockOf(t, page, "table-moves-aimd-result"), "reading") {
		t.Error("the window table carries a reading too")
	}

	// The learner's own run of the preset: the same quantity from its
	// samples (here the recorded ones again).
	learner := learnerOf(t, s, c)
	samples := recordedSamples(t, s.course, "moves-aimd")
	saveOverTimeRun(t, s, "mine", learner, "moves-aimd", result.Row{Window: 0, Offered: 50, Sent: 1494, OK: 1087, OKPerSec: 36, N: 1087, Seconds: 30}, samples, time.Now())
	page = s.get(c, "/lessons/capacity-moves").body
	lab := blockOf(t, page, "lab-moves-aimd")
	reading = testIDText(t, lab, "reading")
	for _, want := range []string{"You predicted About 30", "(27 to 33 a second)", "Measured in your run", "from 12 s to 30 s", "ok 30.5 a second"} {
		if !strings.Contains(reading, want) {
			t.Errorf("the reading of the learner's run %q lacks %q", reading, want)
		}
	}
	if !hasTestID(t, lab, "reading-chart") {
		t.Error("the reading of the learner's run has no chart")
	}
}

// A run whose windows end before the stretch begins says so; a skipped
// prediction has no value to draw.
func TestStretchReadingShortRun(t *testing.T) {
	c := loadCourse(t)
	q, l, _ := c.Question("moves-predict-aimd")
	lab := settlingLab(l, q)
	v := runView{Request: labPreset(lab)}
	v.Request.Seconds = 10
	v.Samples = recordedSamples(t, c, "moves-aimd")[:10]
	rv := runReading(q, lab, v, nil)
	if len(rv.Rows) != 1 || !strings.Contains(rv.Rows[0].Gone, "10 s long: nothing from 12 s on") || rv.Chart != nil || rv.Value != "" {
		t.Errorf("reading of a 10 s run = %+v", rv)
	}
}

// Two of cap-inside's runs over time (no limit, a quota of 5) and the
// lesson's recorded quota run compare on one time axis, each in its
// colour; the stretch asked for (from 12 s) is summarised for each, ok a
// second over the same seconds the lesson reads; a stretch that is none
// is refused saying what is allowed.
func TestCompareOverTime(t *testing.T) {
	s := newSite(t)
	c := s.client()
	queue := recordedSamples(t, s.course, "cap-release-queue")
	quota := recordedSamples(t, s.course, "cap-release-quota")
	saveOverTimeRun(t, s, "queue", "someone", "cap-release-queue", result.Row{Window: 0, Offered: 50, OKPerSec: 20.9, Seconds: 30}, queue, time.Now())
	saveOverTimeRun(t, s, "quota", "someone", "cap-release-quota", result.Row{Window: 0, Offered: 50, OKPerSec: 27.4, Seconds: 30}, quota, time.Now())
	res := s.get(c, "/runs/compare?a=queue&b=quota&c=recorded:cap-release-quota&from=12")
	if res.StatusCode != 200 {
		t.Fatalf("compare: %d %s", res.StatusCode, res.body)
	}
	doc := parse(t, res.body)
	names := text(find(doc, func(n nodeT) bool { v, _ := attr(n, "class"); return v == "compare-runs" })[0])
	for _, want := range []string{"Run A: Cap what is inside — 7 workers, 50/s, a client of 10 workers, WAIT_MS=200 at 10 s",
		"Run B: Cap what is inside — 7 workers, quota 5, 50/s", "Run C: Recorded in the lesson: Cap what is inside — 7 workers, quota 5", "(the lesson's recorded table)"} {
		if !strings.Contains(names, want) {
			t.Errorf("the runs compared read %q, lacking %q", names, want)
		}
	}
	over := renderNode(find(doc, byTestID("compare-time-chart"))[0])
	for _, q := range []string{"a", "b", "c"} {
		// One line a run in each of the four plots.
		if n := strings.Count(over, `<path class="ln q-`+q+` trace"`); n != 4 {
			t.Errorf("run %s has %d lines over time, want 4 (ok, gave up, refused, p99)", q, n)
		}
	}
	if !strings.Contains(over, "summarised") || !strings.Contains(over, "WAIT_MS=200 at 10 s") {
		t.Error("the time chart does not shade the stretch or mark the release")
	}
	summary := map[string]string{}
	for _, tr := range find(find(doc, byTestID("compare-summary"))[0], func(n nodeT) bool { _, ok := attr(n, "data-run"); return ok }) {
		v, _ := attr(tr, "data-run")
		var cells []string
		for td := tr.FirstChild; td != nil; td = td.NextSibling {
			if td.Type == html.ElementNode {
				cells = append(cells, strings.TrimSpace(text(td)))
			}
		}
		summary[v] = strings.Join(cells, " ") + " "
	}
	// Ok a second from 12 s to 30 s: as the lesson's marks read it (7.5 is
	// the last ten seconds'; from 12 s the queue's is lower still).
	st := result.ReadStretch(queue, 0, 12, 30)
	if want := numText(st.Rate(st.OK)); !strings.Contains(summary["A"], " "+want+" ") {
		t.Errorf("A's summary %q lacks ok %s a second", summary["A"], want)
	}
	if !strings.Contains(summary["B"], " 22.1 ") || !strings.Contains(summary["C"], " 22.1 ") {
		t.Errorf("the quota's summaries %q and %q lack its 22.1 ok a second from 12 s", summary["B"], summary["C"])
	}
	if v := must(attr(find(doc, byTestID("compare-from"))[0], "value")); v != "12" {
		t.Errorf("the form's from reads %q, want 12", v)
	}
	for _, q := range []string{"&from=20&to=12", "&from=lots", "&window=2"} {
		bad := s.get(c, "/runs/compare?a=queue&b=quota"+q)
		if bad.StatusCode != 400 || !strings.Contains(bad.body, "No such stretch of seconds") || !strings.Contains(bad.body, "Compare the whole window") {
			t.Errorf("%s: %d %.300s", q, bad.StatusCode, bad.body)
		}
	}
	if res := s.get(c, "/runs/compare?a=queue&b=recorded:nope"); res.StatusCode != 404 || !strings.Contains(res.body, "Run B was not found") {
		t.Errorf("an unknown recorded preset: %d", res.StatusCode)
	}
}

// After a run in a lesson, the lab block leads to the saved run: its
// page and CSVs (its seconds too, over time), a comparison with the
// lesson's recorded run and, once there is one, with the learner's
// previous run of the block; each link opens.
func TestLabAfterLinks(t *testing.T) {
	s := newSite(t)
	c := s.client()
	s.post(c, "/lessons/capacity-moves/predict/moves-predict-aimd", url.Values{"action": {"skip"}})
	learner := learnerOf(t, s, c)
	samples := recordedSamples(t, s.course, "moves-aimd")
	row := result.Row{Window: 0, Offered: 50, Sent: 1494, OK: 1087, OKPerSec: 36, N: 1087, Seconds: 30}
	saveOverTimeRun(t, s, "first", learner, "moves-aimd", row, samples, time.Now().Add(-time.Hour))
	links := func() map[string]string {
		lab := blockOf(t, s.get(c, "/lessons/capacity-moves").body, "lab-moves-aimd")
		out := map[string]string{}
		for _, a := range find(parse(t, lab), func(n nodeT) bool { return n.Data == "a" }) {
			if id, ok := attr(a, "data-testid"); ok {
				out[id] = must(attr(a, "href"))
			}
		}
		return out
	}
	got := links()
	want := map[string]string{
		"lab-run-page":         "/runs/first",
		"lab-run-csv":          "/runs/first.csv",
		"lab-run-samples-csv":  "/runs/first/samples.csv",
		"lab-run-records-csv":  "/runs/first/records.csv",
		"lab-compare-recorded": "/runs/compare?a=first&b=recorded%3Amoves-aimd",
	}
	for id, href := range want {
		if got[id] != href {
			t.Errorf("%s links %q, want %q", id, got[id], href)
		}
	}
	if _, ok := got["lab-compare-previous"]; ok {
		t.Error("a first run offers to compare with a previous one")
	}
	saveOverTimeRun(t, s, "second", learner, "moves-aimd", row, samples, time.Now())
	got = links()
	if got["lab-compare-previous"] != "/runs/compare?a=first&b=second" || got["lab-run-page"] != "/runs/second" {
		t.Errorf("after a second run: previous %q, page %q", got["lab-compare-previous"], got["lab-run-page"])
	}
	for _, id := range []string{"lab-run-page", "lab-run-csv", "lab-run-samples-csv", "lab-compare-recorded", "lab-compare-previous"} {
		if res := s.get(c, got[id]); res.StatusCode != 200 {
			t.Errorf("%s: GET %s: %d", id, got[id], res.StatusCode)
		}
	}
	// A run not over time has no seconds to download.
	saveDoneRun(t, s, "plain", learner, time.Now())
	s.post(c, samplePredict, url.Values{"action": {"skip"}})
	lab := blockOf(t, s.get(c, "/lessons/sample").body, "lab-sample-lab")
	if !strings.Contains(lab, `data-testid="lab-run-page"`) || strings.Contains(lab, "lab-run-samples-csv") {
		t.Error("the sample lesson's run links are wrong")
	}
}

// The model's lines beside a run that changes a knob mid-run carry their
// caveat in the run's panel, so a lesson's lab block says it too (not only
// the run's page): they are for WAIT_MS=100, and the release to 200 at
// 10 s is not in them. A run without changes has no such note.
func TestModelCaveatInPanel(t *testing.T) {
	s := newSite(t)
	c := s.readingOn("cap-inside") // the quota lab is past the first Predict's gate
	learner := learnerOf(t, s, c)
	saveOverTimeRun(t, s, "quota", learner, "cap-release-quota", result.Row{Window: 0, Offered: 50, OKPerSec: 27.4, P99MS: 208.6, N: 800, Seconds: 30},
		recordedSamples(t, s.course, "cap-release-quota"), time.Now())
	want := "The dashed lines are the model for the knobs each window starts with (WAIT_MS=100). This run changes WAIT_MS=200 at 10 s, which the model does not see"
	lab := blockOf(t, s.get(c, "/lessons/cap-inside").body, "lab-cap-release-quota")
	if got := testIDText(t, lab, "run-model-caveat"); !strings.Contains(got, want) {
		t.Errorf("the lab block's caveat reads %q, want %q", got, want)
	}
	if panel := s.get(c, "/runs/quota/panel").body; !strings.Contains(panel, want) {
		t.Error("the run's panel fragment lacks the caveat")
	}
	// Said once on the run's page: in its panel, not again in the note
	// under it (the chart's description for screen readers keeps its own).
	if page := s.get(c, "/runs/quota").body; strings.Count(page, "which the model does not see") != 1 {
		t.Errorf("the run's page says the caveat %d times, want once", strings.Count(page, "which the model does not see"))
	}
	saveDoneRun(t, s, "plain", learner, time.Now())
	if strings.Contains(s.get(c, "/runs/plain/panel").body, "run-model-caveat") {
		t.Error("a run without knob changes carries the caveat")
	}
}

// overload asks what share of the requests sent come back ok: its reading
// is that share, in percent, with the two counts it is made of, and the
// learner's option in the same units.
func TestShareReading(t *testing.T) {
	s := newSite(t)
	c := s.client()
	const predict = "/lessons/overload/predict/overload-predict"
	s.post(c, predict, url.Values{"action": {"lock"}, "option": {"b"}})
	s.post(c, predict, url.Values{"action": {"open"}})
	reading := testIDText(t, blockOf(t, s.get(c, "/lessons/overload").body, "table-overload-sweep-result"), "reading")
	for _, want := range []string{"You predicted Under a third, though the worker never rests (1% to 33%)", "at 100 a second:", "ok/sent 21.2% (205 of 968)"} {
		if !strings.Contains(reading, want) {
			t.Errorf("reading %q lacks %q", reading, want)
		}
	}
}
