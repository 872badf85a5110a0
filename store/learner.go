package store

import "context"

// learnerRunsQuery lists one learner's runs (?1), newest first, at most ?2
// of them, using the runs_learner index.
const learnerRunsQuery = `SELECT ` + runColumns + ` FROM runs WHERE learner = ?1
	ORDER BY created_at DESC, id LIMIT ?2`

// LearnerRuns lists up to limit of the learner's own runs without their
// rows, newest first: what a lesson page's record form offers to attach.
// The query is prepared once, and its answer is kept in memory until a
// run of the learner's is saved or runs are interrupted (Store.runLists),
// as it is read on every view of such a page. The returned slice may be
// shared with other callers and must not be changed.
func (s *Store) LearnerRuns(ctx context.Context, learner string, limit int) ([]Run, error) {
	runs, gen, ok := s.runLists.get(learner, limit)
	if ok {
		return runs, nil
	}
	runs, err := s.queryLearnerRuns(ctx, learner, limit)
	if err != nil {
		return nil, err
	}
	s.runLists.put(learner, limit, gen, runs)
	return runs, nil
}

func (s *Store) queryLearnerRuns(ctx context.Context, learner string, limit int) ([]Run, error) {
	rows, err := s.learnerRuns.QueryContext(ctx, learner, limit)
	if err != nil {
		return nil, err
	}
	return scanRuns(rows)
}
