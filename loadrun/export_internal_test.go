package loadrun

import "time"

// DefaultInFlight is defaultInFlight, for the external tests (test builds
// only).
func DefaultInFlight(sched []time.Duration, timeout time.Duration) int {
	return defaultInFlight(sched, timeout)
}
