package lti

import (
	"context"
	"time"

	"capacitylab/store"
)

// Grade poster.
const (
	// dueBatch is how many due grades the poster reads at a time.
	dueBatch = 20
	// idleWait is how long the poster sleeps with nothing pending (a
	// change of progress wakes it at once).
	idleWait = time.Hour
	// errorWait is how long it waits after the store failed.
	errorWait = 5 * time.Second
)

// poke wakes the poster.
func (t *Tool) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// ProgressChanged says that a learner's progress in a lesson ("" = in
// every lesson) changed: their scores in graded placements of it are due.
// It returns at once; the poster posts them.
func (t *Tool) ProgressChanged(ctx context.Context, learner, lesson string) {
	if learner == "" {
		return
	}
	n, err := t.store.MarkLTIGradesPending(ctx, learner, lesson, t.now())
	if err != nil {
		t.log.ErrorContext(ctx, "lti: marking grades due", "learner", learner, "lesson", lesson, "err", err)
		return
	}
	if n > 0 {
		t.poke()
	}
}

// post is the poster: it posts due scores, then sleeps until the next is
// due or a change wakes it, until Close.
func (t *Tool) post(ctx context.Context) {
	defer close(t.done)
	if t.score == nil {
		return
	}
	for {
		wait := t.postDue(ctx)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-t.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// postDue posts every due score and returns how long until the next one
// is due.
func (t *Tool) postDue(ctx context.Context) time.Duration {
	for ctx.Err() == nil {
		due, err := t.store.DueLTIGrades(ctx, t.now(), dueBatch)
		if err != nil {
			t.log.ErrorContext(ctx, "lti: reading due grades", "err", err)
			return errorWait
		}
		if len(due) == 0 {
			break
		}
		for _, g := range due {
			if err := t.sendGrade(ctx, g); err != nil {
				t.log.ErrorContext(ctx, "lti: recording a score post", "err", err)
				return errorWait
			}
		}
	}
	next, ok, err := t.store.NextLTIGradeDue(ctx)
	switch {
	case err != nil:
		t.log.ErrorContext(ctx, "lti: reading the next due grade", "err", err)
		return errorWait
	case !ok:
		return idleWait
	}
	return max(next.Sub(t.now()), time.Millisecond)
}

// sendGrade posts g's current score and records how it went; its error
// is the store's only.
func (t *Tool) sendGrade(ctx context.Context, g store.LTIGrade) error {
	var s Score
	p, err := t.platform(ctx, g.Issuer, g.ClientID)
	if err == nil {
		s, err = t.score(ctx, g.Learner, g.Lesson)
	}
	if err == nil {
		err = t.postScore(ctx, p, g, s)
	}
	if ctx.Err() != nil {
		return nil // stopping: the grade stays due for the next start
	}
	now := t.now()
	if err == nil {
		t.log.InfoContext(ctx, "lti: score posted", "issuer", g.Issuer, "lesson", g.Lesson, "learner", g.Learner,
			"given", s.Given, "max", s.Max, "lineitem", g.LineItem)
		return t.store.LTIGradeSent(ctx, g, g.Version, s.Given, s.Max, now)
	}
	attempts := g.Attempts + 1
	giveUp := attempts >= t.maxAttempts
	next := now.Add(t.backoff(attempts))
	t.log.WarnContext(ctx, "lti: score post failed", "issuer", g.Issuer, "lesson", g.Lesson, "learner", g.Learner,
		"attempt", attempts, "gave_up", giveUp, "next", next.UTC().Format(time.RFC3339), "err", err)
	return t.store.LTIGradeFailed(ctx, g, s.Given, s.Max, errText(err), next, giveUp, now)
}

// backoff is the wait after the n-th failed post in a row.
func (t *Tool) backoff(n int) time.Duration {
	d := t.retryBase
	for i := 1; i < n && d < t.retryMax; i++ {
		d *= 2
	}
	return min(d, t.retryMax)
}

// errText is what the instructor sees of a failed post.
func errText(err error) string {
	if r, ok := err.(*Refusal); ok {
		return r.Message
	}
	s := err.Error()
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// CourseGrades lists the grades of the course of an instructor's session.
func (t *Tool) CourseGrades(ctx context.Context, s Session) ([]store.LTIGrade, error) {
	return t.store.LTIGrades(ctx, store.LTIGradeQuery{Issuer: s.Issuer, ClientID: s.ClientID, ContextID: s.ContextID})
}

// LearnerGrades lists a learner's graded placements.
func (t *Tool) LearnerGrades(ctx context.Context, learner string) ([]store.LTIGrade, error) {
	return t.store.LTIGrades(ctx, store.LTIGradeQuery{Learner: learner})
}

// RetryCourse makes the failed grades of a session's course due again.
func (t *Tool) RetryCourse(ctx context.Context, s Session) (int, error) {
	n, err := t.store.RetryLTIGrades(ctx, s.Issuer, s.ClientID, s.ContextID, t.now())
	if n > 0 {
		t.poke()
	}
	return n, err
}
