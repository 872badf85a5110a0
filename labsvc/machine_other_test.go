//go:build !linux

package labsvc_test

import (
	"errors"
	"time"
)

// wakeLate is measured on Linux only (see machine_linux_test.go).
func wakeLate([]int, <-chan struct{}) (<-chan []time.Duration, error) {
	return nil, errors.New("the wake-up floor is measured on Linux only")
}

// interruptTime is read on Linux only.
func interruptTime() (time.Duration, error) {
	return 0, errors.New("interrupt time is read on Linux only")
}
