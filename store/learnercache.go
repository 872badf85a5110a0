package store

import "sync"

// cacheLearners bounds the learners whose answers a learnerCache keeps. A
// lesson state is a few maps of a handful of entries; 4,096 learners of
// ten lessons each is a few megabytes.
const cacheLearners = 4096

// learnerCache keeps answers read from the database by learner and key,
// so a returning learner's page views read memory instead of SQLite. It
// holds the learners' lesson states (key: lesson) and their own run lists
// (key: limit).
//
// Every write that changes what is kept goes through this Store and calls
// forget (or forgetAll) after it reaches the database, which drops the
// learner's entries and moves the cache's generation on; a read that raced
// with any write sees the generation moved and does not keep what it read
// (over-careful for other learners, never wrong). This is sound because
// the server is the only process writing its database file (cmd/server
// opens it once). When full, one learner (whichever the map yields first)
// makes room.
//
// On Postgres (OpenPostgres) the cache is off: other servers write the
// same database, so nothing is kept and every read asks the database,
// which answers a page view's state in one round trip.
//
// A kept answer is shared by every caller that reads it: callers must not
// change its maps or slices. The zero value is ready to use.
type learnerCache[K comparable, V any] struct {
	mu  sync.Mutex
	off bool               // keep nothing: other processes write the database
	gen uint64             // writes seen
	m   map[string]map[K]V // learner → key → answer
}

// get returns the learner's kept answer for key, or the generation a read
// from the database must quote to put its result.
func (c *learnerCache[K, V]) get(learner string, key K) (V, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[learner][key]; ok {
		return v, 0, true
	}
	var zero V
	return zero, c.gen, false
}

// put keeps v unless something was written since gen.
func (c *learnerCache[K, V]) put(learner string, key K, gen uint64, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off || c.gen != gen {
		return
	}
	if c.m == nil {
		c.m = map[string]map[K]V{}
	}
	byKey, ok := c.m[learner]
	if !ok {
		if len(c.m) >= cacheLearners {
			for k := range c.m {
				delete(c.m, k)
				break
			}
		}
		byKey = map[K]V{}
		c.m[learner] = byKey
	}
	byKey[key] = v
}

// forget drops the learner's answers after a write.
func (c *learnerCache[K, V]) forget(learner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.m, learner)
}

// forgetAll drops every learner's answers after a write that touched many.
func (c *learnerCache[K, V]) forgetAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.m = nil
}
