//go:build !linux

package childproc

import (
	"errors"
	"fmt"
	"runtime"
)

// Sched is how the kernel schedules one thread (read on Linux only).
type Sched struct {
	Nice       int
	Policy     string
	RTPriority int
}

// SetNice does nothing here: threads' niceness is set on Linux only.
func SetNice(nice int) error {
	return fmt.Errorf("niceness %d not set on %s: %w", nice, runtime.GOOS, errors.ErrUnsupported)
}

// SetRoundRobin does nothing here: threads' policy is set on Linux only.
func SetRoundRobin(priority int) error {
	return fmt.Errorf("real-time priority %d not set on %s: %w", priority, runtime.GOOS, errors.ErrUnsupported)
}

// MayRoundRobin says no: threads' policy is set on Linux only.
func MayRoundRobin(priority int) error { return SetRoundRobin(priority) }

// ThreadScheds cannot read threads' scheduling on this system.
func ThreadScheds(int) (map[int]Sched, error) {
	return nil, fmt.Errorf("threads' scheduling is not read on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
