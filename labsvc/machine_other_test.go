//go:build !linux

package labsvc_test

import (
	"errors"
	"time"
)

// interruptTime is read on Linux only.
func interruptTime() (time.Duration, error) {
	return 0, errors.New("interrupt time is read on Linux only")
}
