package loadrun

import "time"

// DefaultInFlight is defaultInFlight, for the external tests (test builds
// only).
func DefaultInFlight(sched []time.Duration, timeout time.Duration) int {
	return defaultInFlight(sched, timeout)
}

// YieldSleep is o with a dispatcher that gives up its Go processor for the
// whole of every sleep (the dispatcher before holdLast), for the external
// side-by-side benchmark (test builds only).
func YieldSleep(o Open) Open {
	o.yieldSleep = true
	return o
}
