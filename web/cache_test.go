package web

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCacheKeepsTheRecent checks the one eviction policy: the cache keeps
// what it is given, replaces an entry in place, never holds more than max,
// and when full drops the entry used longest ago.
func TestCacheKeepsTheRecent(t *testing.T) {
	c := newCache[int](2)
	if _, ok := c.get("a"); ok {
		t.Fatal("an empty cache has a")
	}
	c.put("a", 1)
	c.put("b", 2)
	c.put("b", 3) // in place: a stays
	if v, ok := c.get("a"); !ok || v != 1 {
		t.Fatalf("a = %d, %v after replacing b", v, ok)
	}
	if v, _ := c.get("b"); v != 3 {
		t.Fatalf("b = %d, want 3", v)
	}
	c.get("a")    // a is now the most recently used
	c.put("c", 4) // full: b, used longest ago, makes room
	if n := c.len(); n != 2 {
		t.Fatalf("%d entries, want 2", n)
	}
	if _, ok := c.get("b"); ok {
		t.Error("b is kept, but it was the least recently used")
	}
	for key, want := range map[string]int{"a": 1, "c": 4} {
		if v, ok := c.get(key); !ok || v != want {
			t.Errorf("%s = %d, %v; want %d", key, v, ok, want)
		}
	}
}

// TestCacheBuildsOnce checks that those who ask for a key while it is being
// built share the one build, that a value built to be handed out but not
// kept is built again next time, and that a failed build is not handed to
// the others: each builds for itself.
func TestCacheBuildsOnce(t *testing.T) {
	c := newCache[string](8)
	var builds atomic.Int32
	started, release := make(chan struct{}, 1), make(chan struct{})
	build := func() (string, bool, error) {
		builds.Add(1)
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		return "panel", true, nil
	}
	const askers = 20
	var wg sync.WaitGroup
	got := make([]string, askers)
	for i := range askers {
		wg.Go(func() {
			v, err := c.getOrMake("run/1", build)
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		})
	}
	// The first asker builds; the others find the build going (or, once
	// it is done, the kept value): one build in all.
	<-started
	close(release)
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Fatalf("%d builds for %d askers, want 1", n, askers)
	}
	for i, v := range got {
		if v != "panel" {
			t.Errorf("asker %d got %q", i, v)
		}
	}
	before := builds.Load()
	if v, err := c.getOrMake("run/1", build); err != nil || v != "panel" || builds.Load() != before {
		t.Errorf("a kept value was built again (%q, %v, %d builds)", v, err, builds.Load()-before)
	}

	// Not kept: built again on the next ask.
	var fresh atomic.Int32
	for range 2 {
		c.getOrMake("run/2", func() (string, bool, error) { fresh.Add(1); return "moved on", false, nil })
	}
	if n := fresh.Load(); n != 2 {
		t.Errorf("a value not to be kept was built %d times in two asks, want 2", n)
	}

	// A failure is the builder's own.
	boom := errors.New("the request ended")
	if _, err := c.getOrMake("run/3", func() (string, bool, error) { return "", true, boom }); !errors.Is(err, boom) {
		t.Errorf("error %v, want %v", err, boom)
	}
	if v, err := c.getOrMake("run/3", func() (string, bool, error) { return "ok", true, nil }); err != nil || v != "ok" {
		t.Errorf("after a failed build: %q, %v; want a fresh build", v, err)
	}
}

// TestCacheNil checks that a nil cache keeps nothing and builds every time.
func TestCacheNil(t *testing.T) {
	var c *cache[int]
	c.put("a", 1)
	if _, ok := c.get("a"); ok {
		t.Error("a nil cache kept a value")
	}
	n := 0
	for range 2 {
		c.getOrMake("a", func() (int, bool, error) { n++; return n, true, nil })
	}
	if n != 2 || c.len() != 0 {
		t.Errorf("%d builds, %d kept; want 2 and 0", n, c.len())
	}
}
