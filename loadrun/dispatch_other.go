//go:build !linux

package loadrun

import "time"

// dispatcher is Linux's (see dispatch_linux.go); here it holds nothing and
// sleeps with preciseSleep.
type dispatcher struct{ held bool }

func holdDispatcher() (*dispatcher, func()) { return new(dispatcher), func() {} }

func (d *dispatcher) sleep(dur time.Duration) { preciseSleep(dur) }
