package runner

import (
	"context"
	"errors"
	"time"

	"capacitylab/store"
)

// ErrCancelledByOwner is the cause a RunClaimed context ends with when the
// run's learner cancelled it (package fleet maps River's remote job
// cancel to it): the run ends cancelled. Any other end of the context
// ends the run interrupted, as Close does.
var ErrCancelledByOwner = errCancelled

// Claimed is a run another queue stored and this process claimed
// (store.ClaimRun): package fleet's runner role executes it with
// RunClaimed.
type Claimed struct {
	ID, Learner, Addr string
	Request           Request
	Created, Started  time.Time
	// LastSeq is the seq of the run's last stored event: its log goes on
	// from there.
	LastSeq int
	// Owner is the runner id the claim recorded (store.ClaimRun): every
	// write of the run is fenced by it (store.WriteRun).
	Owner string
}

// RunClaimed executes a claimed run with this Runner's execution path (the
// same children, rows, records and events as a run of its own queue: its
// events numbered after c.LastSeq), and returns how it ended. The run is
// the Runner's while it runs (Get, Subscribe, Active, Close: Close ends it
// interrupted). When ctx ends first, the run ends cancelled if its cause
// is ErrCancelledByOwner, interrupted otherwise. A Runner that is closed
// ends the run interrupted at once.
func (r *Runner) RunClaimed(ctx context.Context, c Claimed) store.RunStatus {
	q := c.Request
	if q.Mode == "" {
		q.Mode = ModeOpen
	}
	var dropped func()
	if r.met != nil {
		dropped = r.met.dropped.Inc
	}
	ru := &run{id: c.ID, learner: c.Learner, addr: c.Addr, owner: c.Owner, req: q, estimate: Estimate(q), log: newEventLog(r.cfg.SubscriberBuffer, r.now, dropped),
		status: store.RunRunning, created: c.Created, started: c.Started}
	ru.log.seq = c.LastSeq
	r.storeLog(ru)
	r.mu.Lock()
	r.byID[ru.id] = ru
	if r.shut {
		r.finishLocked(ru, store.RunInterrupted, "The server stopped before this run started. Nothing was measured; run it again.", Event{Kind: KindInterrupted})
		r.mu.Unlock()
		return store.RunInterrupted
	}
	ru.ctx, ru.cancel = context.WithCancelCause(r.ctx)
	r.running[ru.id] = ru
	r.wg.Add(1)
	if r.met != nil {
		r.met.wait.Observe(ru.started.Sub(ru.created).Seconds())
	}
	r.mu.Unlock()
	defer r.wg.Done()
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), ErrCancelledByOwner) {
			r.mu.Lock()
			ru.cancelled = true
			r.mu.Unlock()
			ru.cancel(errCancelled)
			return
		}
		ru.cancel(errShutdown)
	})
	defer stop()
	r.execute(ru)
	r.mu.Lock()
	defer r.mu.Unlock()
	return ru.status
}
