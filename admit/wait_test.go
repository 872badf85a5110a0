package admit

import (
	"context"
	"errors"
	"runtime/metrics"
	"testing"
	"time"
)

// quantileSince reads only what was added since the earlier counts, and
// answers the upper bound of the bucket the quantile falls in (the lower
// bound for the last, unbounded bucket).
func TestQuantileSince(t *testing.T) {
	inf := 1.0 / zero()
	// Since prev: 5 waits under 1 ms, 90 of 1 to 10 ms, 5 of 10 to 100
	// ms; before it, 100 under 1 ms and 5 past 100 ms, not counted.
	h := &metrics.Float64Histogram{
		Buckets: []float64{0, 0.001, 0.010, 0.100, inf},
		Counts:  []uint64{105, 90, 5, 5},
	}
	prev := []uint64{100, 0, 0, 5}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{
		{0.04, time.Millisecond},
		{0.5, 10 * time.Millisecond},
		{0.9, 10 * time.Millisecond},
		{0.97, 100 * time.Millisecond},
	} {
		if got := quantileSince(h, prev, c.q); got != c.want {
			t.Errorf("q %.2f: %v, want %v", c.q, got, c.want)
		}
	}
	if got := quantileSince(h, h.Counts, 0.9); got != 0 {
		t.Errorf("nothing new: %v, want 0", got)
	}
	long := &metrics.Float64Histogram{Buckets: h.Buckets, Counts: []uint64{0, 0, 0, 7}}
	if got := quantileSince(long, nil, 0.9); got != 100*time.Millisecond {
		t.Errorf("every wait in the unbounded bucket: %v, want its lower bound, 100ms", got)
	}
}

func zero() float64 { return 0 }

// With a bound on the processors' line, a Sheddable request is refused
// once the line passes the bound (certainly at twice it), a Normal one only
// at four times it (certainly at eight), a Critical one never.
func TestGateBoundWait(t *testing.T) {
	g, err := NewGate("inflight,quota=100", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.BoundWait(10 * time.Millisecond)
	line := func(d time.Duration) {
		g.mu.Lock()
		g.line.wait, g.line.read = d, time.Now()
		g.mu.Unlock()
	}
	enter := func(c Class) error {
		tk, err := g.Enter(context.Background(), c)
		if err == nil {
			g.Leave(tk, Served)
		}
		return err
	}
	for _, c := range []struct {
		line  time.Duration
		class Class
		ok    bool
	}{
		{5 * time.Millisecond, Sheddable, true},
		{10 * time.Millisecond, Sheddable, true}, // at the bound, not past it
		{20 * time.Millisecond, Sheddable, false},
		{20 * time.Millisecond, Normal, true},
		{40 * time.Millisecond, Normal, true},
		{80 * time.Millisecond, Normal, false},
		{time.Second, Critical, true},
	} {
		line(c.line)
		err := enter(c.class)
		if ok := err == nil; ok != c.ok {
			t.Errorf("line %v, %s: admitted %v, want %v (%v)", c.line, c.class, ok, c.ok, err)
		}
		if err != nil && !errors.Is(err, ErrRefused) {
			t.Errorf("line %v, %s: %v, want ErrRefused", c.line, c.class, err)
		}
	}
	// Between the bound and twice it, some are refused and some not.
	line(15 * time.Millisecond)
	refused := 0
	for range 1000 {
		if enter(Sheddable) != nil {
			refused++
		}
	}
	if refused < 350 || refused > 650 {
		t.Errorf("half way between the bound and twice it, %d of 1000 refused, want about half", refused)
	}
}
