package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"capacitylab/lessons"
	"capacitylab/result"
	"capacitylab/store"
)

// referencePage renders a lesson page the slow way, the whole lessonPage
// component with no plan, for the learner (and query) of the request: what
// the plan-assembled page must equal byte for byte.
func referencePage(t *testing.T, srv *server, c *lessons.Course, slug, learner, query string) string {
	t.Helper()
	i := findLesson(c, slug)
	l := c.Lessons[i]
	r := httptest.NewRequest("GET", lessonURL(slug)+query, nil)
	if learner != "" {
		r.AddCookie(&http.Cookie{Name: LearnerCookie, Value: learner})
	}
	r, err := srv.lessonWidgets(httptest.NewRecorder(), r, l)
	if err != nil {
		t.Fatal(err)
	}
	r.Context().Value(widgetCtxKey{}).(*widgetCtx).Models = nil // compute afresh, no shared cache
	if r, err = srv.withRecords(r, l, nil); err != nil {
		t.Fatal(err)
	}
	if r, err = srv.withLesson(r, l); err != nil {
		t.Fatal(err)
	}
	st, err := srv.state(r, slug)
	if err != nil {
		t.Fatal(err)
	}
	prev, next := neighbours(c, i)
	var builds []lessonLink
	for _, b := range l.BuildsOn {
		if j := findLesson(c, b); j >= 0 {
			builds = append(builds, lessonLink{b, c.Lessons[j].Title})
		}
	}
	var buf bytes.Buffer
	if err := lessonPage(srv.lessonPageInfo(l), l, prev, next, builds, st).Render(r.Context(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// fillLearner stores, for every block of l, the state a busy learner
// leaves: predictions locked on option opt (revealed when reveal, the
// recorded results opened), checks answered twice (last on option opt),
// goals reached, records saved with a run attached, a finished run of
// every lab block.
func fillLearner(t *testing.T, st *store.Store, learner string, l *lessons.Lesson, opt int, reveal bool, at time.Time) {
	t.Helper()
	ctx := context.Background()
	run := "run-" + learner[:6]
	if err := st.SaveRun(ctx, store.Run{ID: run, Learner: learner, Lesson: l.Slug, Status: store.RunDone, CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	for _, b := range l.Blocks() {
		var err error
		switch b := b.(type) {
		case *lessons.Question:
			if b.Type == "predict" {
				if _, err = st.Lock(ctx, learner, l.Slug, b.ID, b.Options[opt].ID); err == nil && reveal {
					if _, err = st.OpenResults(ctx, learner, b.ID); err == nil {
						_, err = st.Reveal(ctx, learner, b.ID)
					}
				}
			} else {
				st.RecordAttempt(ctx, learner, l.Slug, b.ID, b.Options[1-opt].ID, b.Options[1-opt].Correct)
				_, err = st.RecordAttempt(ctx, learner, l.Slug, b.ID, b.Options[opt].ID, b.Options[opt].Correct)
			}
		case *lessons.Model:
			_, err = st.RecordGoal(ctx, learner, l.Slug, b.ID, map[string]float64{"x": 1})
		case *lessons.Lab:
			id := "run-" + learner[:6] + "-" + b.ID
			q, _ := json.Marshal(labPreset(b))
			if err = st.SaveRun(ctx, store.Run{ID: id, Learner: learner, Lesson: l.Slug, Block: b.ID, Request: q, Status: store.RunDone, CreatedAt: at}); err == nil {
				for i, rate := range b.Rates {
					if err = st.AddRow(ctx, id, result.Row{Window: i, Offered: rate, Sent: 10, OK: 9, N: 9, Gaveup: 1, OKPerSec: rate * 0.9, P50MS: 21, P99MS: 40, MeanMS: 23.5, Seconds: b.Seconds}); err != nil {
						break
					}
				}
			}
		case *lessons.RecordBlock:
			_, err = st.SaveRecord(ctx, learner, store.Record{Lesson: l.Slug, Block: b.ID, Run: run,
				Fields: map[string]string{lessons.FieldNumber: "12", lessons.FieldCriterion: "p99 <= 230 ms & \"quoted\""}})
		}
		if err != nil {
			t.Fatalf("%s/%s: %v", l.Slug, b.BlockID(), err)
		}
	}
}

// TestLessonPlanMatchesRender checks that the page a request gets (the
// plan's stored HTML with the learner's blocks rendered or taken from
// their kept HTML) is byte for byte the page lessonPage renders whole,
// for every lesson and several learners.
func TestLessonPlanMatchesRender(t *testing.T) {
	s := newSite(t)
	c := s.course
	srv := &server{assets: newAssets(t), store: s.store, course: func() (*lessons.Course, error) { return c, nil }}
	skipped := "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"
	busy := "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0"
	revealed := "c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1"
	other := "d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2"
	at := time.Date(2026, 11, 30, 13, 14, 15, 0, time.UTC)
	for _, l := range c.Lessons {
		for _, q := range l.Blocks() {
			if p, ok := q.(*lessons.Question); ok && p.Type == "predict" {
				if _, err := s.store.Skip(context.Background(), skipped, l.Slug, p.ID); err != nil {
					t.Fatal(err)
				}
			} else if ok {
				// One answer, the right one: "the first answer counts".
				o := correctOption(p)
				if _, err := s.store.RecordAttempt(context.Background(), skipped, l.Slug, p.ID, o.ID, true); err != nil {
					t.Fatal(err)
				}
			}
		}
		fillLearner(t, s.store, busy, l, 0, false, at)
		fillLearner(t, s.store, revealed, l, 0, true, at.Add(time.Hour))
		fillLearner(t, s.store, other, l, 1, false, at.Add(2*time.Hour))
	}
	type learnerCase struct {
		name    string // who asks
		learner string
	}
	for _, l := range c.Lessons {
		var model *lessons.Model
		for _, b := range l.Blocks() {
			if m, ok := b.(*lessons.Model); ok && model == nil {
				model = m
			}
		}
		for _, lc := range []learnerCase{
			{"a newcomer (no cookie)", ""},
			{"a learner with a cookie and nothing stored", "00000000000000000000000000000000"},
			{"a learner who skipped every prediction and answered every check once, rightly", skipped},
			{"a learner with every block answered, goals reached, a record and a run", busy},
			{"the same with every prediction revealed", revealed},
			{"a busy learner who chose the second option everywhere", other},
		} {
			queries := []string{""}
			if model != nil {
				// The no-JavaScript widget form: the block's own values, then a changed one.
				queries = append(queries, "?widget="+model.ID, fmt.Sprintf("?widget=%s&%s=oops", model.ID, specOf(model).Params[0].Name))
			}
			for _, q := range queries {
				want := referencePage(t, srv, c, l.Slug, lc.learner, q)
				req, _ := http.NewRequest("GET", s.srv.URL+lessonURL(l.Slug)+q, nil)
				if lc.learner != "" {
					req.AddCookie(&http.Cookie{Name: LearnerCookie, Value: lc.learner})
				}
				res, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				var got bytes.Buffer
				got.ReadFrom(res.Body)
				res.Body.Close()
				if got.String() != want {
					t.Errorf("%s%s for %s: served page differs from the whole render at byte %d:\nserved: %.300s\nwhole:  %.300s",
						l.Slug, q, lc.name, firstDiff(got.String(), want), got.String()[min(got.Len(), firstDiff(got.String(), want)):],
						want[min(len(want), firstDiff(got.String(), want)):])
				}
			}
		}
	}
}

// A learner who answered every Predict of a course where nobody has run
// anything yet sees unfolded lab blocks with no runs and closed tables:
// kept variants of their own (lessonplan.go), which must equal the whole
// render too.
func TestLessonPlanUnfoldedWithoutRuns(t *testing.T) {
	s := newSite(t)
	c := s.course
	srv := &server{assets: newAssets(t), store: s.store, course: func() (*lessons.Course, error) { return c, nil }}
	learner := "6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e"
	for _, l := range c.Lessons {
		for _, b := range l.Blocks() {
			if q, ok := b.(*lessons.Question); ok && q.Type == "predict" {
				if _, err := s.store.Lock(context.Background(), learner, l.Slug, q.ID, q.Options[0].ID); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, l := range c.Lessons {
		want := referencePage(t, srv, c, l.Slug, learner, "")
		for range 2 { // built, then kept
			req, _ := http.NewRequest("GET", s.srv.URL+lessonURL(l.Slug), nil)
			req.AddCookie(&http.Cookie{Name: LearnerCookie, Value: learner})
			res, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			got.ReadFrom(res.Body)
			res.Body.Close()
			if got.String() != want {
				i := firstDiff(got.String(), want)
				t.Fatalf("%s: served page differs from the whole render at byte %d:\nserved: %.300s\nwhole:  %.300s", l.Slug, i, got.String()[min(got.Len(), i):], want[min(len(want), i):])
			}
			if !strings.Contains(got.String(), `data-testid="lab-run"`) && len(lessonLabs(l)) > 0 {
				t.Errorf("%s: no Run offered after answering", l.Slug)
			}
		}
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestLessonPlanPieces checks the plan itself: every learner-dependent
// block is cut out (none of their HTML is in the stored parts) and every
// model block keeps a reached form with its two time holes.
func TestLessonPlanPieces(t *testing.T) {
	c := loadCourse(t)
	srv := &server{assets: newAssets(t)}
	srv.makeCaches()
	for i, l := range c.Lessons {
		p, err := srv.lessonPlan(c, i, srv.defaultMenu())
		if err != nil {
			t.Fatal(err)
		}
		var blocks []string
		for _, b := range l.Blocks() {
			if perLearner(b) {
				blocks = append(blocks, b.BlockID())
			}
		}
		var cut []string
		for _, part := range p.parts {
			if part.block == nil {
				for _, id := range blocks {
					if bytes.Contains(part.html, []byte(`id="`+id+`"`)) {
						t.Errorf("%s: block %s is in the stored HTML", l.Slug, id)
					}
				}
				continue
			}
			cut = append(cut, part.block.BlockID())
			if part.blank == nil {
				t.Errorf("%s/%s: no blank HTML kept", l.Slug, part.block.BlockID())
			}
			if _, ok := part.block.(*lessons.Model); ok && part.reached == nil {
				t.Errorf("%s/%s: no reached HTML kept", l.Slug, part.block.BlockID())
			}
		}
		if strings.Join(cut, ",") != strings.Join(blocks, ",") {
			t.Errorf("%s: plan cut out %v, want %v", l.Slug, cut, blocks)
		}
		if again, _ := srv.lessonPlan(c, i, srv.defaultMenu()); again != p {
			t.Errorf("%s: the plan was built twice for one course value", l.Slug)
		}
	}
}

// TestLessonPlanReload checks that a new course value (author mode after a
// file changed) gives returning learners the new page, not the old plan.
func TestLessonPlanReload(t *testing.T) {
	var current atomic.Pointer[lessons.Course]
	current.Store(loadCourse(t))
	s := newSiteAt(t, t.TempDir()+"/p.db", func(d *Deps) {
		d.Course = func() (*lessons.Course, error) { return current.Load(), nil }
	})
	learner := s.client()
	s.post(learner, samplePredict, url.Values{"action": {"lock"}, "option": {"b"}})
	before := s.get(learner, "/lessons/sample").body
	if !hasTestID(t, before, "predict-locked") {
		t.Fatal("learner does not see their lock")
	}
	c2 := loadCourse(t)
	for _, l := range c2.Lessons {
		if l.Slug == "sample" {
			l.Title = "Reloaded title"
			for _, part := range l.Body {
				if tb, ok := part.Block.(*lessons.Table); ok {
					tb.Caption = "A reloaded caption"
				}
			}
		}
	}
	current.Store(c2)
	after := s.get(learner, "/lessons/sample").body
	for _, want := range []string{"Reloaded title", "A reloaded caption"} {
		if !strings.Contains(after, want) {
			t.Errorf("after a reload a learner's page lacks %q", want)
		}
	}
	if !hasTestID(t, after, "predict-locked") {
		t.Error("after a reload the learner lost their lock")
	}
}
