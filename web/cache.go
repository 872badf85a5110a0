package web

import (
	"container/list"
	"errors"
	"sync"
)

// cache keeps values that are costly to make and cheap to keep, by string
// key: rendered pages and panels, run charts and labels, widget results.
// It is the one cache of the package, with one eviction policy: it holds at
// most max entries, and when full the least recently used one makes room.
// A value being made is made once for everyone who asks for its key
// meanwhile (getOrMake). Make it with newCache; a nil *cache keeps nothing
// (get misses, put does nothing, getOrMake always makes).
type cache[V any] struct {
	max int

	mu     sync.Mutex
	byKey  map[string]*list.Element // of *entry[V]
	recent list.List                // most recently used first
	making map[string]*making[V]
}

// entry is one kept value.
type entry[V any] struct {
	key string
	v   V
}

// making is a value being made, for those who ask for it meanwhile.
type making[V any] struct {
	done chan struct{}
	v    V
	err  error
}

// newCache returns an empty cache of at most max entries.
func newCache[V any](max int) *cache[V] {
	return &cache[V]{max: max, byKey: map[string]*list.Element{}, making: map[string]*making[V]{}}
}

// get returns the value kept for key, if there is one.
func (c *cache[V]) get(key string) (V, bool) {
	if c == nil {
		var zero V
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(key)
}

func (c *cache[V]) getLocked(key string) (V, bool) {
	el, ok := c.byKey[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.recent.MoveToFront(el)
	return el.Value.(*entry[V]).v, true
}

// put keeps v for key, in place of any value kept for it before.
func (c *cache[V]) put(key string, v V) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(key, v)
}

func (c *cache[V]) putLocked(key string, v V) {
	if el, ok := c.byKey[key]; ok {
		el.Value.(*entry[V]).v = v
		c.recent.MoveToFront(el)
		return
	}
	for c.recent.Len() >= max(c.max, 1) {
		oldest := c.recent.Back()
		delete(c.byKey, oldest.Value.(*entry[V]).key)
		c.recent.Remove(oldest)
	}
	c.byKey[key] = c.recent.PushFront(&entry[V]{key: key, v: v})
}

// getOrMake returns the value kept for key, or builds it, keeping it when
// build says to (a value made from a state that has since moved on is
// handed out but not kept). Those who ask for key while it is being made
// wait for it and share it, so a class of watchers asking for the same
// new panel at once costs one render; if making it failed, each of them
// builds it again for itself, so one request's failure (its context ended)
// is not handed to the others.
func (c *cache[V]) getOrMake(key string, build func() (v V, keep bool, err error)) (V, error) {
	if c == nil {
		v, _, err := build()
		return v, err
	}
	c.mu.Lock()
	if v, ok := c.getLocked(key); ok {
		c.mu.Unlock()
		return v, nil
	}
	if m, ok := c.making[key]; ok {
		c.mu.Unlock()
		<-m.done
		if m.err == nil {
			return m.v, nil
		}
		v, _, err := build()
		return v, err
	}
	// Until build returns, m.err says so: if it panics, the waiters are
	// let go and build for themselves.
	m := &making[V]{done: make(chan struct{}), err: errNotBuilt}
	c.making[key] = m
	c.mu.Unlock()
	var keep bool
	defer func() {
		c.mu.Lock()
		delete(c.making, key)
		if m.err == nil && keep {
			c.putLocked(key, m.v)
		}
		c.mu.Unlock()
		close(m.done)
	}()
	m.v, keep, m.err = build()
	return m.v, m.err
}

// errNotBuilt is a value's error while it is being built.
var errNotBuilt = errors.New("not built")

// len returns how many values the cache keeps.
func (c *cache[V]) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recent.Len()
}
