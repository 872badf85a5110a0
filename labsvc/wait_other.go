//go:build !linux

package labsvc

import (
	"context"
	"time"
)

// waiter sleeps one worker's WAIT_MS with a Go timer.
type waiter struct{}

func newWaiter() *waiter { return &waiter{} }

// wait returns at deadline or when ctx ends, whichever is first.
func (w *waiter) wait(ctx context.Context, deadline time.Time) {
	if d := time.Until(deadline); d > 0 {
		waitTimer(ctx, d)
	}
}

func (w *waiter) close() {}
