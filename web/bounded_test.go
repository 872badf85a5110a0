package web

import "testing"

// TestBounded checks that the cache keeps what it is given, never holds
// more than max entries, and replaces an entry in place without evicting
// another.
func TestBounded(t *testing.T) {
	b := bounded[int]{max: 2}
	if _, ok := b.get("a"); ok {
		t.Fatal("an empty cache has a")
	}
	b.put("a", 1)
	b.put("b", 2)
	b.put("b", 3) // in place: a stays
	if v, ok := b.get("a"); !ok || v != 1 {
		t.Fatalf("a = %d, %v after replacing b", v, ok)
	}
	if v, _ := b.get("b"); v != 3 {
		t.Fatalf("b = %d, want 3", v)
	}
	b.put("c", 4) // full: one of a, b makes room
	if len(b.m) != 2 {
		t.Fatalf("%d entries, want at most 2", len(b.m))
	}
	if v, ok := b.get("c"); !ok || v != 4 {
		t.Fatalf("c = %d, %v", v, ok)
	}
}
