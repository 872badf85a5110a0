package web

import (
	"net/url"
	"strings"
	"testing"

	"capacitylab/lessons"
	"capacitylab/store"
)

// Counts say what was done out of what exists; right first time is
// counted only out of the checks answered, and only once one was.
func TestProgressCounts(t *testing.T) {
	c := loadCourse(t)
	l := c.Lessons[findLesson(c, "littles-law")]
	tests := []struct {
		name string
		st   store.LessonState
		want string
		not  string
	}{
		// Nothing answered: no "right first time" at all.
		{"nothing", (&store.Export{}).State(), "0 of 1 prediction locked in|0 of 2 checks answered|0 of 1 model goal reached", "right first time"},
		// One check answered, wrong at first.
		{"one wrong check", store.LessonState{Checks: map[string]store.CheckState{"littles-size": {First: store.Attempt{Correct: false}}}},
			"0 of 1 prediction locked in|1 of 2 checks answered|0 of 1 answered right first time|0 of 1 model goal reached", ""},
		// A prediction skipped is done but not locked in, as the grade
		// counts it; both checks right first time.
		{"done but the goal", store.LessonState{Predictions: map[string]store.Prediction{"littles-double": {Skipped: true}},
			Checks: map[string]store.CheckState{"littles-size": {First: store.Attempt{Correct: true}}, "littles-throughput": {First: store.Attempt{Correct: true}}}},
			"0 of 1 prediction locked in, 1 skipped|2 of 2 checks answered|2 of 2 answered right first time|0 of 1 model goal reached", ""},
		// A prediction locked in is made.
		{"locked", store.LessonState{Predictions: map[string]store.Prediction{"littles-double": {Option: "b"}}},
			"1 of 1 prediction locked in|0 of 2 checks answered|0 of 1 model goal reached", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := lessonProgress(l, tt.st)
			got := strings.Join(p.Counts(), "|")
			if got != tt.want || tt.not != "" && strings.Contains(got, tt.not) {
				t.Errorf("counts %q, want %q", got, tt.want)
			}
		})
	}
	if p := lessonProgress(l, (&store.Export{}).State()); p.Next != "littles-double" {
		t.Errorf("first block not done is %q, want the predict", p.Next)
	}
}

// Continue where you left off: the first block not done in the lesson
// last answered in; the next lesson with something to do when that one is
// done; the first lesson for a newcomer; nothing when all is done.
func TestContinueFrom(t *testing.T) {
	c := loadCourse(t)
	empty := (&store.Export{}).State()
	if at, done := continueFrom(c, empty, ""); at == nil || done || at.URL != "/lessons/littles-law" {
		t.Errorf("newcomer: %+v %v, want the first lesson", at, done)
	}
	at, _ := continueFrom(c, empty, "saturation")
	if at == nil || !strings.HasPrefix(at.URL, "/lessons/saturation#") || !strings.HasPrefix(at.What, "You last answered something here. Next: the ") {
		t.Errorf("mid-lesson: %+v", at)
	}
	// Every block of littles-law done: on to the next lesson.
	l := c.Lessons[findLesson(c, "littles-law")]
	st := store.LessonState{Predictions: map[string]store.Prediction{}, Checks: map[string]store.CheckState{}, Goals: map[string]store.Goal{}}
	for _, b := range l.Blocks() {
		switch b.Kind() {
		case "predict":
			st.Predictions[b.BlockID()] = store.Prediction{}
		case "check":
			st.Checks[b.BlockID()] = store.CheckState{}
		case "model":
			st.Goals[b.BlockID()] = store.Goal{}
		}
	}
	if at, _ := continueFrom(c, st, "littles-law"); at == nil || !strings.HasPrefix(at.URL, "/lessons/saturation#") || strings.HasPrefix(at.What, "You last") {
		t.Errorf("after a finished lesson: %+v", at)
	}
}

// The progress page: continue, counts, the learner's runs and records
// with links, and Delete my progress as a destructive secondary action.
func TestProgressPage(t *testing.T) {
	site := newSite(t)
	c := site.client()
	site.post(c, "/lessons/littles-law/check/littles-size", url.Values{"option": {"b"}})
	me := learnerOf(t, site, c)
	saveRunWithRecords(t, site, "pr1", me, "littles-law", "littles-lab", testPreset, nil, nil)
	page := site.get(c, "/progress")
	if got := testIDText(t, page.body, "progress-continue"); !strings.Contains(got, "How many requests are inside your service") ||
		!strings.Contains(page.body, `href="/lessons/littles-law#littles-double" data-testid="progress-continue-link"`) {
		t.Errorf("continue: %q", got)
	}
	counts := testIDText(t, page.body, "progress-lesson-littles-law")
	if !strings.Contains(counts, "1 of 2 checks answered") || !strings.Contains(counts, "0 of 1 answered right first time") {
		t.Errorf("littles-law counts: %q", counts)
	}
	if sat := testIDText(t, page.body, "progress-lesson-saturation"); strings.Contains(sat, "right first time") || !strings.Contains(sat, "0 of 2 checks answered") {
		t.Errorf("an unanswered lesson: %q", sat)
	}
	if !strings.Contains(page.body, `<a href="/runs/pr1">How many requests are inside your service — 1 worker, 10–40/s</a>`) {
		t.Error("the learner's run is not listed with its link")
	}
	if !hasTestID(t, page.body, "progress-records-none") {
		t.Error("no records yet, but the page does not say so")
	}
	doc := parse(t, page.body)
	reset := find(doc, byTestID("progress-reset"))
	if len(reset) != 1 || must(attr(reset[0], "class")) != "danger" {
		t.Error("Delete my progress is not styled as a destructive action")
	}
}

// A lesson page has its contents: every section of the lesson, and the
// lessons before and after, in one nav that the page serves without
// script.
func TestLessonContents(t *testing.T) {
	site := newSite(t)
	page := site.get(nil, "/lessons/saturation")
	doc := parse(t, page.body)
	navs := find(doc, byTestID("lesson-nav"))
	if len(navs) != 1 {
		t.Fatalf("%d lesson navs", len(navs))
	}
	var hrefs []string
	for _, a := range find(navs[0], func(n nodeT) bool { return n.Data == "a" }) {
		hrefs = append(hrefs, must(attr(a, "href")))
	}
	var want []string
	for _, h := range find(doc, func(n nodeT) bool { return n.Data == "h2" && must(attr(n, "id")) != "" }) {
		if !strings.Contains(must(attr(h.Parent, "class")), "block") && h.Parent.Data == "article" {
			want = append(want, "#"+must(attr(h, "id")))
		}
	}
	got := strings.Join(hrefs, " ")
	if len(want) < 3 || !strings.Contains(got, "#lesson-start "+strings.Join(want, " ")) {
		t.Errorf("contents %q, want every section %q", got, want)
	}
	if !strings.Contains(got, "/lessons/littles-law") || !strings.Contains(got, "/lessons/overload") {
		t.Errorf("contents lack the lessons before and after: %q", got)
	}
}

// The progress page and a graded lesson count predictions alike
// (predictionCounts): in every course lesson, with each Predict skipped,
// locked in or left, the predictions locked in on the progress page are
// the grade's points for predictions, and a skip is done on the progress
// page but earns no point.
func TestProgressAndGradeCountSkipsAlike(t *testing.T) {
	c := loadCourse(t)
	for _, l := range courseLessons(c) {
		var ids []string
		for _, b := range l.Blocks() {
			if q, ok := b.(*lessons.Question); ok && q.Type == "predict" {
				ids = append(ids, q.ID)
			}
		}
		for _, how := range []string{"skipped", "locked", "mixed", "none"} {
			st := (&store.Export{}).State()
			st.Predictions = map[string]store.Prediction{}
			locked, skipped := 0, 0
			for i, id := range ids {
				switch {
				case how == "skipped" || how == "mixed" && i%2 == 0:
					st.Predictions[id] = store.Prediction{Block: id, Skipped: true}
					skipped++
				case how == "locked" || how == "mixed":
					st.Predictions[id] = store.Prediction{Block: id, Option: "a"}
					locked++
				}
			}
			p, g := lessonProgress(l, st), gradeLesson(l, st, nil)
			if p.LockedIn != g.Predictions || p.Predicts != g.PredictionsMax || p.LockedIn != locked || p.Skipped != skipped {
				t.Errorf("%s, %s: progress %d of %d locked in, %d skipped; grade %d of %d; want %d locked in and %d skipped",
					l.Slug, how, p.LockedIn, p.Predicts, p.Skipped, g.Predictions, g.PredictionsMax, locked, skipped)
			}
			if p.Done != locked+skipped {
				t.Errorf("%s, %s: %d done on the progress page, want the %d predictions locked in or skipped", l.Slug, how, p.Done, locked+skipped)
			}
		}
	}
}

// A learner who skips lesson 1's Predict reads on the progress page that
// it was skipped, not locked in, as their grade would count it.
func TestProgressPageSaysSkipped(t *testing.T) {
	s := newSite(t)
	c := s.client()
	s.post(c, "/lessons/littles-law/predict/littles-double", url.Values{"action": {"skip"}})
	counts := testIDText(t, s.get(c, "/progress").body, "progress-lesson-littles-law")
	if !strings.Contains(counts, "0 of 1 prediction locked in, 1 skipped") {
		t.Errorf("the progress page's counts read %q", counts)
	}
}
