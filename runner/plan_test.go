package runner

import (
	"testing"
	"time"
)

// Plan's estimates by hand: two slots, one run 10 s into its 30 s, two
// waiting runs of 20 s, one of them from address "a".
func TestPlanEstimates(t *testing.T) {
	now := time.Unix(1000, 0)
	p := Plan{Slots: 2, Now: now, Runs: []Planned{
		{Addr: "a", Running: true, Started: now.Add(-10 * time.Second), Estimate: 30 * time.Second},
		{Addr: "b", Estimate: 20 * time.Second},
		{Addr: "a", Estimate: 20 * time.Second},
	}}
	if got := p.StartAt(1); !got.Equal(now) {
		t.Errorf("the first waiting run starts at %v, want now: a slot is free", got.Sub(now))
	}
	// Behind it: (20 s left of the running one + 20 s) over 2 slots.
	if got := p.StartAt(2).Sub(now); got != 20*time.Second {
		t.Errorf("the second waiting run starts in %v, want 20s", got)
	}
	if got := p.UntilFree(); got != 20*time.Second {
		t.Errorf("UntilFree %v, want 20s (the running run's rest)", got)
	}
	if n, first := p.AddressRuns("a"); n != 2 || first != 20*time.Second {
		t.Errorf(`AddressRuns("a") = %d, %v; want 2, 20s (its running run ends first)`, n, first)
	}
	if n, first := p.AddressRuns("b"); n != 1 || first != 20*time.Second {
		t.Errorf(`AddressRuns("b") = %d, %v; want 1, 20s (starts now, runs 20 s)`, n, first)
	}
	if got := (Plan{Now: now}).UntilFree(); got != time.Second {
		t.Errorf("UntilFree with nothing running: %v, want the 1 s floor", got)
	}
}
