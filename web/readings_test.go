package web

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

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
