package labsvc

import (
	"fmt"
	"strings"
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

	MaxStallEvery = 1000000
	MaxStallMS    = 10000
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
}

// DefaultConfig returns the knobs the lessons start from.
func DefaultConfig() Config {
	return Config{Workers: 1, SpinMS: 2, WaitMS: 18, Limit: 0, CPUs: 1}
}

// FieldError says which knob is wrong, what it was given and what is allowed.
type FieldError struct {
	Field   string // the environment variable name, e.g. "WORKERS"
	Value   string // the value as given
	Allowed string // the allowed range, e.g. "1 to 1024"
}

func (e FieldError) Error() string {
	return fmt.Sprintf("%s=%s is not allowed: want %s", e.Field, e.Value, e.Allowed)
}

// FieldErrors is every problem found in one Config, in knob order.
type FieldErrors []FieldError

func (es FieldErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Validate checks every knob against the sandbox caps and returns nil or a
// FieldErrors naming each bad knob.
func (c Config) Validate() error {
	var errs FieldErrors
	check := func(field string, v, lo, hi int) {
		if v < lo || v > hi {
			errs = append(errs, FieldError{Field: field, Value: fmt.Sprint(v), Allowed: fmt.Sprintf("%d to %d", lo, hi)})
		}
	}
	check("WORKERS", c.Workers, 1, MaxWorkers)
	check("SPIN_MS", c.SpinMS, 0, MaxSpinMS)
	check("WAIT_MS", c.WaitMS, 0, MaxWaitMS)
	check("LIMIT", c.Limit, 0, MaxLimit)
	check("CPUS", c.CPUs, 1, MaxCPUs)
	check("STALL_EVERY", c.StallEvery, 0, MaxStallEvery)
	check("STALL_MS", c.StallMS, 0, MaxStallMS)
	if errs == nil {
		return nil
	}
	return errs
}
