//go:build !linux

package labsvc_test

import (
	"errors"
	"time"
)

// wakeLate is measured on Linux only (see wakeprobe_linux_test.go).
func wakeLate([]int, <-chan struct{}) (<-chan []time.Duration, error) {
	return nil, errors.New("the wake-up floor is measured on Linux only")
}
