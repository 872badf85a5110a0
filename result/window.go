package result

import (
	"fmt"
	"time"
)

// DefaultTimeout is how long a caller waits, from its actual send, for a
// complete answer (connect, write and read together) before giving up.
const DefaultTimeout = 2 * time.Second

// MaxTimeout caps the caller timeout.
const MaxTimeout = 60 * time.Second

// CheckTimeout says what is wrong with a caller's timeout, or nil.
func CheckTimeout(timeout time.Duration) error {
	if timeout <= 0 || timeout > MaxTimeout {
		return fmt.Errorf("timeout %v is not allowed: want more than 0 and at most %v", timeout, MaxTimeout)
	}
	return nil
}

// Sandbox caps on what one window may ask for. They protect the machine the
// generator runs on; arrivals beyond MaxInFlight are recorded as not_sent.
const (
	MaxRate            = 10000 // arrivals per second in one window
	MaxSeconds         = 600   // length of one window
	MaxArrivals        = 1e6   // arrivals in one window (rate × seconds)
	MaxClients         = 1024  // closed-loop clients
	DefaultMaxInFlight = 2048  // requests in flight at once, open loop, at least (see loadrun.Open.MaxInFlight)
	MaxMaxInFlight     = 16384 // upper bound for MaxInFlight
)

// Result is one finished window: every record, in Seq order, and the
// statistics folded from them.
type Result struct {
	Records []Record
	Metrics *Metrics
	Elapsed time.Duration // from the window's start until its last request ended
	// Samples are the window's samples when it was sampled (loadrun.Sampling),
	// in order.
	Samples []Sample
	// Lab is a Driver's lab as it was at each of the window's
	// Window.SampleEvery boundaries (Lab[k] at the end of interval k), as
	// GET /stats would have read it, when the driver knows it; a sweep
	// fills its samples' lab fields from it.
	Lab []LabStats
	// Changed is how many of a Driver's Window.Changes (in time order) it
	// made before the window's last request ended; the rest were not
	// made. loadrun.Open and Closed leave it 0: a real run's changes are made
	// beside them.
	Changed int
	// Breaker is a Driver's retrying client's breaker state (retry.Closed,
	// Opened, HalfOpen) at each Window.SampleEvery boundary the window
	// passed, then at its end (the last sample's), when it has a breaker;
	// a sweep fills its samples' Breaker from it.
	Breaker []string
}
