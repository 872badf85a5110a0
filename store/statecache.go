package store

import "sync"

// stateCacheLearners bounds the learners whose lesson states are kept.
// A lesson state is a few maps of a handful of entries; 4,096 learners of
// ten lessons each is a few megabytes.
const stateCacheLearners = 4096

// stateCache keeps LessonState by learner and lesson, so a returning
// learner's page views read memory instead of SQLite. Every write to a
// learner's progress goes through this Store and calls forget after it
// reaches the database, which drops the learner's entries and moves the
// cache's generation on; a read that raced with any write sees the
// generation moved and does not keep what it read (over-careful for other
// learners, never wrong). This is sound because the server is the
// only process writing its database file (cmd/server opens it once). When
// full, one learner (whichever the map yields first) makes room.
//
// A cached LessonState is shared by every caller that reads it: callers
// must not change its maps.
type stateCache struct {
	mu  sync.Mutex
	gen uint64                            // writes seen
	m   map[string]map[string]LessonState // learner → lesson → state
}

// get returns the learner's cached state in lesson, or the generation a
// read from the database must quote to put its result.
func (c *stateCache) get(learner, lesson string) (LessonState, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[learner][lesson]; ok {
		return st, 0, true
	}
	return LessonState{}, c.gen, false
}

// put keeps st unless the learner's progress changed since gen.
func (c *stateCache) put(learner, lesson string, gen uint64, st LessonState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.m == nil {
		c.m = map[string]map[string]LessonState{}
	}
	byLesson, ok := c.m[learner]
	if !ok {
		if len(c.m) >= stateCacheLearners {
			for k := range c.m {
				delete(c.m, k)
				break
			}
		}
		byLesson = map[string]LessonState{}
		c.m[learner] = byLesson
	}
	byLesson[lesson] = st
}

// forget drops the learner's cached states after a write.
func (c *stateCache) forget(learner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.m, learner)
}
