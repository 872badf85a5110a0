package web

import (
	"context"
	"encoding/json"
	"time"

	"capacitylab/lessons"
	"capacitylab/runner"
	"capacitylab/store"
)

// progressRunsMax bounds the runs the progress page lists.
const progressRunsMax = 20

// continueAt is where "Continue where you left off" leads: a lesson and
// the block to go on from, with why.
type continueAt struct {
	URL, Lesson, What string
}

// progressView is the progress page's content besides the lessons.
type progressView struct {
	Continue *continueAt
	AllDone  bool
	Runs     []progressRun
	Records  []progressRecord
	Uploads  int // uploads to Your service
}

// progressRun is one of the learner's runs, listed with a link.
type progressRun struct {
	ID, Title, Status string
	Created           time.Time
}

// progressRecord is one saved record, with links to its block and its
// Markdown.
type progressRecord struct {
	Lesson, URL, Download string
	Updated               time.Time
}

// lastActive returns the slug of the lesson the learner last answered
// something in (a prediction, a check, a goal or a record), or "".
func lastActive(e *store.Export) string {
	var slug string
	var at time.Time
	see := func(lesson string, t time.Time) {
		if t.After(at) {
			slug, at = lesson, t
		}
	}
	for _, p := range e.Predictions {
		see(p.Lesson, p.LockedAt)
		see(p.Lesson, p.RevealedAt)
	}
	for _, a := range e.Attempts {
		see(a.Lesson, a.At)
	}
	for _, g := range e.Goals {
		see(g.Lesson, g.ReachedAt)
	}
	for _, r := range e.Records {
		see(r.Lesson, r.UpdatedAt)
	}
	return slug
}

// continueFrom finds where the learner should go on: in the lesson they
// last answered something in, its first block not done; if that lesson
// is done, the next course lesson with something not done (from the start
// of the course when none follows); for a learner with no answers yet,
// the first lesson. nil with allDone when every lesson is done.
func continueFrom(c *lessons.Course, st store.LessonState, last string) (at *continueAt, allDone bool) {
	ls := courseLessons(c)
	if len(ls) == 0 {
		return nil, false
	}
	if last == "" {
		return &continueAt{URL: lessonURL(ls[0].Slug), Lesson: ls[0].Title, What: "Start with the first lesson."}, false
	}
	start := 0
	for i, l := range ls {
		if l.Slug == last {
			start = i
		}
	}
	for k := range ls {
		l := ls[(start+k)%len(ls)]
		p := lessonProgress(l, st)
		if p.Next == "" {
			continue
		}
		what := "Next: " + blockWords(l, p.Next)
		if k == 0 {
			what = "You last answered something here. " + what
		}
		return &continueAt{URL: lessonURL(l.Slug) + "#" + p.Next, Lesson: l.Title, What: what}, false
	}
	return nil, true
}

// blockWords names a block as a learner sees it: its heading and the
// section it is in ("the Check in “Reading the table”").
func blockWords(l *lessons.Lesson, id string) string {
	b, ok := l.Block(id)
	if !ok {
		return "the next question"
	}
	what := "the " + blockLabel(l, b)
	if _, isModel := b.(*lessons.Model); isModel {
		what = "the model's goal"
	}
	if sec := sectionOf(l, id); sec != "" {
		what += " in “" + sec + "”"
	}
	return what + "."
}

// sectionOf is the title of the section a block is in, or "".
func sectionOf(l *lessons.Lesson, id string) string {
	var title string
	for _, part := range l.Body {
		if part.Block == nil {
			if secs := lessonSections(&lessons.Lesson{Body: []lessons.Part{part}}); len(secs) > 0 {
				title = secs[len(secs)-1].Title
			}
			continue
		}
		if part.Block.BlockID() == id {
			return title
		}
	}
	return ""
}

// progressDetails gathers the continue link, the learner's runs and
// records for the progress page.
func (s *server) progressDetails(ctx context.Context, c *lessons.Course, e *store.Export, learner string) (progressView, error) {
	var v progressView
	v.Continue, v.AllDone = continueFrom(c, e.State(), lastActive(e))
	if learner != "" {
		runs, err := s.store.LearnerRuns(ctx, learner, progressRunsMax)
		if err != nil {
			return v, err
		}
		ups, err := s.store.Uploads(ctx, learner)
		if err != nil {
			return v, err
		}
		v.Uploads = len(ups)
		for _, sr := range runs {
			var q runner.Request
			json.Unmarshal(sr.Request, &q)
			v.Runs = append(v.Runs, progressRun{ID: sr.ID, Title: runTitle(s.lessonTitleOf(sr.Lesson), q), Status: statusText(sr.Status, 0), Created: sr.CreatedAt})
		}
	}
	for _, r := range e.Records {
		title := s.lessonTitleOf(r.Lesson)
		if title == "" {
			title = r.Lesson
		}
		v.Records = append(v.Records, progressRecord{Lesson: title, URL: lessonURL(r.Lesson) + "#" + r.Block, Download: recordURL(r.Lesson, r.Block), Updated: r.UpdatedAt})
	}
	return v, nil
}
