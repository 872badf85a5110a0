package web

import (
	"context"
	"fmt"
	"strings"

	"capacitylab/lessons"
	"capacitylab/lti"
	"capacitylab/store"
)

// lessonGrade is a learner's score in one lesson placed as a graded item
// in a learning platform. Each of these counts one point:
//
//   - a prediction locked in (right or wrong: committing is what counts;
//     a skipped prediction scores nothing),
//   - a check answered right at the first answer,
//   - a model goal reached,
//   - a lab block with a run of the learner's own that finished (done).
//
// The score is the points over the lesson's points; a lesson with nothing
// of these scores 1 of 1 once opened. Record blocks and reveals do not
// count. docs/LTI.md and the progress page say the same.
type lessonGrade struct {
	Predictions, PredictionsMax int
	Checks, ChecksMax           int
	Goals, GoalsMax             int
	Labs, LabsMax               int
}

// gradeLesson counts l's points for a learner's state and finished labs.
func gradeLesson(l *lessons.Lesson, st store.LessonState, labs map[string]bool) lessonGrade {
	var g lessonGrade
	for _, b := range l.Blocks() {
		switch b := b.(type) {
		case *lessons.Question:
			if b.Type == "predict" {
				g.PredictionsMax++
				if _, made := predictionCounts(st, b.ID); made {
					g.Predictions++
				}
			} else {
				g.ChecksMax++
				if c, ok := st.Checks[b.ID]; ok && c.First.Correct {
					g.Checks++
				}
			}
		case *lessons.Model:
			if len(b.Goal.Want) > 0 {
				g.GoalsMax++
				if _, ok := st.Goals[b.ID]; ok {
					g.Goals++
				}
			}
		case *lessons.Lab:
			g.LabsMax++
			if labs[b.ID] {
				g.Labs++
			}
		}
	}
	return g
}

// predictionCounts is how a learner's prediction of the predict block id
// counts, on the progress page and in a graded lesson alike: done when
// locked in or skipped (nothing is left to do there: a skip cannot be
// undone, and what follows unfolds either way), and made only when locked
// in, committed to an option before the measurement, which is what the
// course asks. So a skipped prediction finishes its step of the lesson but
// is not a prediction locked in: the progress page says "0 of 1
// prediction locked in, 1 skipped" and the grade gives it no point.
func predictionCounts(st store.LessonState, id string) (done, made bool) {
	p, ok := st.Predictions[id]
	return ok, ok && !p.Skipped
}

// Points and Max are the score's numerator and denominator (1 of 1 for a
// lesson with nothing that counts).
func (g lessonGrade) Points() int {
	if g.Max() == 1 && g.PredictionsMax+g.ChecksMax+g.GoalsMax+g.LabsMax == 0 {
		return 1
	}
	return g.Predictions + g.Checks + g.Goals + g.Labs
}

func (g lessonGrade) Max() int {
	return max(1, g.PredictionsMax+g.ChecksMax+g.GoalsMax+g.LabsMax)
}

// Percent is the score rounded down to a whole percent.
func (g lessonGrade) Percent() int { return 100 * g.Points() / g.Max() }

// Parts says the points part by part, leaving out kinds the lesson has
// none of: "1 of 2 predictions locked in", ...
func (g lessonGrade) Parts() []string {
	var out []string
	for _, p := range []struct {
		n, of     int
		one, many string
	}{
		{g.Predictions, g.PredictionsMax, "prediction locked in", "predictions locked in"},
		{g.Checks, g.ChecksMax, "check right first time", "checks right first time"},
		{g.Goals, g.GoalsMax, "model goal reached", "model goals reached"},
		{g.Labs, g.LabsMax, "lab run", "labs run"},
	} {
		if p.of > 0 {
			noun := p.many
			if p.of == 1 {
				noun = p.one
			}
			out = append(out, fmt.Sprintf("%d of %d %s", p.n, p.of, noun))
		}
	}
	return out
}

// Summary is the score in words, as the platform's comment shows it.
func (g lessonGrade) Summary() string {
	s := fmt.Sprintf("%d of %d points", g.Points(), g.Max())
	if parts := g.Parts(); len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}

func (g lessonGrade) score() lti.Score {
	return lti.Score{Given: float64(g.Points()), Max: float64(g.Max()), Completed: g.Points() == g.Max(), Comment: g.Summary()}
}

// LessonScores is the score package lti posts for a learner's graded
// placement of a lesson: lessonGrade over their progress now.
func LessonScores(course CourseFunc, st *store.Store) lti.ScoreFunc {
	return func(ctx context.Context, learner, lesson string) (lti.Score, error) {
		g, err := gradeOf(ctx, course, st, learner, lesson)
		return g.score(), err
	}
}

func gradeOf(ctx context.Context, course CourseFunc, st *store.Store, learner, slug string) (lessonGrade, error) {
	c, err := course()
	if err != nil {
		return lessonGrade{}, fmt.Errorf("the lessons do not load: %w", err)
	}
	l, ok := c.Lesson(slug)
	if !ok {
		return lessonGrade{}, fmt.Errorf("lesson %q is no longer in the course", slug)
	}
	state, err := st.LessonState(ctx, learner, slug)
	if err != nil {
		return lessonGrade{}, err
	}
	labs, err := st.LabsRun(ctx, learner, slug)
	if err != nil {
		return lessonGrade{}, err
	}
	return gradeLesson(l, state, labs), nil
}

// gradeRow is one graded placement on the progress page or the
// instructor's grade list.
type gradeRow struct {
	G      store.LTIGrade
	Title  string      // the lesson's title (its slug if it is gone)
	Grade  lessonGrade // now
	Gone   bool        // the lesson is no longer in the course
	Posted string      // how posting the score stands, in words
}

// gradeRows makes the rows of gs with each learner's grade now.
func (s *server) gradeRows(ctx context.Context, gs []store.LTIGrade) ([]gradeRow, error) {
	c, err := s.loadCourse()
	if err != nil {
		return nil, err
	}
	out := make([]gradeRow, 0, len(gs))
	for _, g := range gs {
		row := gradeRow{G: g, Title: g.Lesson, Posted: postedText(g)}
		if l, ok := c.Lesson(g.Lesson); ok {
			row.Title = l.Title
			if row.Grade, err = gradeOf(ctx, s.course, s.store, g.Learner, g.Lesson); err != nil {
				return nil, err
			}
		} else {
			row.Gone = true
		}
		out = append(out, row)
	}
	return out, nil
}

// postedText says how posting a grade stands.
func postedText(g store.LTIGrade) string {
	sent := ""
	if !g.SentAt.IsZero() {
		sent = fmt.Sprintf(" (last sent %s: %s of %s)", fmtTime(g.SentAt), fmtNum(g.Given), fmtNum(g.Max))
	}
	switch g.Status {
	case store.GradeSent:
		return fmt.Sprintf("Sent at %s: %s of %s", fmtTime(g.SentAt), fmtNum(g.Given), fmtNum(g.Max))
	case store.GradeFailed:
		return fmt.Sprintf("Not sent: gave up after %s%s. Last error: %s", counted(g.Attempts, "attempt", "attempts"), sent, g.LastError)
	case store.GradePending:
		if g.Attempts > 0 {
			return fmt.Sprintf("Waiting to be sent: %s failed, next try at %s%s. Last error: %s", counted(g.Attempts, "attempt", "attempts"), fmtTime(g.NextAt), sent, g.LastError)
		}
		return "Being sent" + sent
	}
	return g.Status
}
