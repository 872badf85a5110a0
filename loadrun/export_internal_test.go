package loadrun

import (
	"testing"
	"time"
)

// DefaultInFlight is defaultInFlight, for the external tests (test builds
// only).
func DefaultInFlight(sched []time.Duration, timeout time.Duration) int {
	return defaultInFlight(sched, timeout)
}

// StealTicks is stealTicks: the whole machine's stolen time so far, in
// /proc/stat's 10 ms ticks (test builds only).
func StealTicks(b *testing.B) int64 { return stealTicks(b) }

// RaceEnabled is raceEnabled: built with the race detector (test builds
// only).
const RaceEnabled = raceEnabled
