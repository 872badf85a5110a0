package store

import (
	"context"
	"sync"
)

// learnerRunsQuery lists one learner's runs (?1), newest first, at most ?2
// of them, using the runs_learner index.
const learnerRunsQuery = `SELECT ` + runColumns + ` FROM runs WHERE learner = ?1
	ORDER BY created_at DESC, id LIMIT ?2`

// LearnerRuns lists up to limit of the learner's own runs without their
// rows, newest first: what a lesson page's record form offers to attach.
// The query is prepared once, and its answer is kept in memory until a
// run of the learner's is saved or runs are interrupted (runListCache),
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

// runListCache keeps LearnerRuns' answers by learner, on the same terms
// as stateCache: SaveRun forgets the learner's list and InterruptRuns
// every list, each after its write, and a read that raced with any write
// (the generation moved) does not keep what it read. At most
// stateCacheLearners learners are kept.
type runListCache struct {
	mu  sync.Mutex
	gen uint64
	m   map[string]runList
}

type runList struct {
	limit int
	runs  []Run
}

func (c *runListCache) get(learner string, limit int) ([]Run, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.m[learner]; ok && l.limit == limit {
		return l.runs, 0, true
	}
	return nil, c.gen, false
}

func (c *runListCache) put(learner string, limit int, gen uint64, runs []Run) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.m == nil {
		c.m = map[string]runList{}
	}
	if _, ok := c.m[learner]; !ok && len(c.m) >= stateCacheLearners {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[learner] = runList{limit, runs}
}

func (c *runListCache) forget(learner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.m, learner)
}

func (c *runListCache) forgetAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.m = nil
}
