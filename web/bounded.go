package web

import "sync"

// bounded is a cache of at most max entries by string key, for results
// that are costly to make and cheap to keep (run labels, run charts, run
// panels). When full, one entry (whichever the map yields first) makes
// room. Set max before use; the map is made on the first put. A nil
// *bounded keeps nothing (get misses, put does nothing).
type bounded[V any] struct {
	max int

	mu sync.Mutex
	m  map[string]V
}

// get returns the entry for key, if it is kept.
func (b *bounded[V]) get(key string) (V, bool) {
	if b == nil {
		var zero V
		return zero, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[key]
	return v, ok
}

// put keeps v for key.
func (b *bounded[V]) put(key string, v V) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]V{}
	}
	if _, ok := b.m[key]; !ok && len(b.m) >= b.max {
		for k := range b.m {
			delete(b.m, k)
			break
		}
	}
	b.m[key] = v
}
