//go:build !(linux && cgo)

package loadrun

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// ThreadSender says whether open-loop windows send from a thread of their
// own: only on Linux, in a build with cgo (see threadSender there).
const ThreadSender = false

// newSender is the Go sender: without cgo on Linux there is no thread
// sender.
func newSender(_ context.Context, t Target, start time.Time, _ []time.Duration, limit int64, inFlight *atomic.Int64, _ bool) sender {
	return newGoSender(t, start, limit, inFlight)
}

// floorSender is the thread sender's floor, which needs the thread sender.
func floorSender(context.Context, time.Time, []time.Duration) (sender, error) {
	return nil, errors.ErrUnsupported
}
