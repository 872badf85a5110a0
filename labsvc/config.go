package labsvc

import (
	"errors"
	"fmt"
	"strings"

	"capacitylab/admit"
	"capacitylab/dist"
	"capacitylab/input"
)

// Sandbox caps for the lab's knobs. The server validates sweeps from the
// browser with the same type, so these are the outer limits of what any
// caller can ask the lab to do.
const (
	MaxWorkers = 1024
	MaxSpinMS  = 1000
	MaxWaitMS  = 10000
	MaxLimit   = 100000
	MaxCPUs    = 64
	MaxBacklog = 65535

	MaxStallEvery = 1000000
	MaxStallMS    = 10000

	MaxLockMS      = 1000
	MaxCoherencyUS = 100000
)

// Config holds the lab's knobs. The zero value is not valid; start from
// DefaultConfig.
type Config struct {
	Workers int `json:"workers"` // WORKERS: requests served at once
	SpinMS  int `json:"spin_ms"` // SPIN_MS: processor time per request
	WaitMS  int `json:"wait_ms"` // WAIT_MS: waiting (sleep) per request
	Limit   int `json:"limit"`   // LIMIT: admission queue depth, 0 = off
	CPUs    int `json:"cpus"`    // CPUS: parallelism of the lab process

	// StallEvery and StallMS are a periodic stall: the Nth, 2Nth, …
	// request the door admits in a window (counted from 1) takes StallMS
	// of waiting instead of its spin and wait. StallEvery 0 is off.
	StallEvery int `json:"stall_every"` // STALL_EVERY
	StallMS    int `json:"stall_ms"`    // STALL_MS

	Backlog int        `json:"backlog"` // BACKLOG: listen backlog, 0 = the system's maximum
	Accept  AcceptMode `json:"accept"`  // ACCEPT: who accepts connections; the zero value is the door

	// Policy is the door's admission policy (POLICY, package admit): the
	// zero value is the queue policy, whose bound is LIMIT; every other
	// policy carries its parameters in the Spec and needs LIMIT 0.
	Policy admit.Spec `json:"policy"`

	// Dist is how a request's service demand varies (DIST, package dist):
	// SPIN_MS and WAIT_MS times a factor of mean 1 drawn for it in the
	// order the door admits requests, from a source that starts again from
	// the Spec's seed at every reset. The zero value is constant, every
	// factor 1.
	Dist dist.Spec `json:"dist"`

	// LockMS and CoherencyUS are contention, the two costs of Gunther's
	// Universal Scalability Law: LockMS is how long each request holds
	// the lab's one lock after its spin, one request at a time (the
	// serial part: at most 1000/LockMS requests a second); CoherencyUS is
	// processor time a request spends on top of SPIN_MS for each other
	// request in service as its spin starts (the coherency part). 0 is
	// off.
	LockMS      int `json:"lock_ms"`      // LOCK_MS
	CoherencyUS int `json:"coherency_us"` // COHERENCY_US
}

// AcceptMode says who accepts the lab's connections (ACCEPT). Its zero
// value is AcceptDoor, so a Config that does not mention it has the door.
type AcceptMode string

const (
	// AcceptDoor (ACCEPT=door, the default): the lab's door accepts every
	// connection at once and queues it where the lab counts it (queued).
	AcceptDoor AcceptMode = ""
	// AcceptWorkers (ACCEPT=workers): each worker accepts the next
	// connection from the listening socket itself when it is free, as a
	// pre-forked or thread-per-connection server does. The rest wait in
	// the kernel's accept queue, at most BACKLOG, where the lab's own
	// counters do not see them (backlogged reads its depth).
	AcceptWorkers AcceptMode = "workers"
)

// String names the mode as ACCEPT spells it: door or workers.
func (m AcceptMode) String() string {
	if m == AcceptDoor {
		return "door"
	}
	return string(m)
}

// MarshalText writes the mode as ACCEPT spells it.
func (m AcceptMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads door (or nothing) as AcceptDoor and keeps anything
// else as given, for Validate to accept or name.
func (m *AcceptMode) UnmarshalText(b []byte) error {
	*m = parseAccept(string(b))
	return nil
}

func parseAccept(s string) AcceptMode {
	if s = strings.TrimSpace(s); s == "door" {
		return AcceptDoor
	}
	return AcceptMode(s)
}

// DefaultConfig returns the knobs the lessons start from.
func DefaultConfig() Config {
	return Config{Workers: 1, SpinMS: 2, WaitMS: 18, Limit: 0, CPUs: 1}
}

// Validate checks every knob against the sandbox caps and returns nil or
// an input.FieldErrors naming each bad knob by its environment variable
// ("WORKERS"), with the value given and what is allowed.
func (c Config) Validate() error {
	errs := input.FieldErrors{}
	check := func(field string, v, lo, hi int) {
		if v < lo || v > hi {
			errs.Add(field, input.NotAllowed(fmt.Sprint(v), fmt.Sprintf("%d to %d", lo, hi)))
		}
	}
	check("WORKERS", c.Workers, 1, MaxWorkers)
	check("SPIN_MS", c.SpinMS, 0, MaxSpinMS)
	check("WAIT_MS", c.WaitMS, 0, MaxWaitMS)
	check("LIMIT", c.Limit, 0, MaxLimit)
	check("CPUS", c.CPUs, 1, MaxCPUs)
	check("STALL_EVERY", c.StallEvery, 0, MaxStallEvery)
	check("STALL_MS", c.StallMS, 0, MaxStallMS)
	check("BACKLOG", c.Backlog, 0, MaxBacklog)
	check("LOCK_MS", c.LockMS, 0, MaxLockMS)
	check("COHERENCY_US", c.CoherencyUS, 0, MaxCoherencyUS)
	switch c.Accept {
	case AcceptDoor:
	case AcceptWorkers:
		if c.Limit != 0 {
			errs.Add("LIMIT", input.NotAllowed(fmt.Sprint(c.Limit),
				"0 with ACCEPT=workers (the workers take callers straight from the kernel's accept queue; BACKLOG bounds that)"))
		}
	default:
		errs.Add("ACCEPT", input.NotAllowed(string(c.Accept), "door or workers"))
	}
	c.policyErrors(errs)
	var de *dist.SpecError
	if err := c.Dist.Validate(); errors.As(err, &de) {
		errs.Add("DIST", input.NotAllowed(de.Value, de.Allowed))
	}
	return errs.Err()
}

// policyErrors adds to errs what is wrong with POLICY, and with LIMIT and
// ACCEPT against it.
func (c Config) policyErrors(errs input.FieldErrors) {
	var se *admit.SpecError
	if err := c.Policy.Validate(); errors.As(err, &se) {
		errs.Add("POLICY", input.NotAllowed(se.Value, se.Allowed))
		return
	}
	kind := c.Policy.Kind()
	if kind != admit.Queue && c.Limit != 0 && c.Accept != AcceptWorkers {
		errs.Add("LIMIT", input.NotAllowed(fmt.Sprint(c.Limit),
			fmt.Sprintf("0 with POLICY=%s (LIMIT bounds the queue policy's waiting callers; %s's own parameters are in POLICY)", kind, kind)))
	}
	switch {
	case kind != admit.Queue && c.Accept == AcceptWorkers:
		errs.Add("POLICY", input.NotAllowed(string(c.Policy),
			"queue with ACCEPT=workers (the workers take callers straight from the kernel's accept queue: there is no door to admit or refuse them at; BACKLOG bounds that queue)"))
	case c.Policy.Classes() && c.Accept == AcceptWorkers:
		errs.Add("POLICY", input.NotAllowed(string(c.Policy),
			"queue without classes with ACCEPT=workers (the kernel's accept queue is the queue: there is no door to serve callers critical first or shed them by class at; the stats still count each class)"))
	}
}
