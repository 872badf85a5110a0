package classroom

import (
	"context"
	"time"

	"capacitylab/store"
)

// Votes are the one thing a whole class sends at once, so they are written
// with group commit: one writer goroutine per Manager takes every vote
// waiting and stores each session's in one transaction. A voter's read
// pump waits for the commit before it is told "voted" (and the host gets
// the tally), so an acknowledged vote is on disk. Closing a round first
// waits, with a barrier, for the votes queued before it, so the store sees
// votes and round changes in the order the session applied them.

// maxBatch caps the votes written in one transaction.
const maxBatch = 1024

// voteOp is a vote to store, or (barrier) a request to be told when every
// vote queued before it is stored.
type voteOp struct {
	code    string
	vote    store.ClassVote
	barrier bool
	done    chan error
}

// queueVote hands a vote to the writer; the channel gets the result.
func (m *Manager) queueVote(code string, v store.ClassVote) chan error {
	done := make(chan error, 1)
	m.votes <- voteOp{code: code, vote: v, done: done}
	return done
}

// flushVotes waits until every vote queued before it is stored.
func (m *Manager) flushVotes() {
	done := make(chan error, 1)
	m.votes <- voteOp{barrier: true, done: done}
	<-done
}

// voteWriter is the writer goroutine; it ends when m.votes is closed.
func (m *Manager) voteWriter() {
	defer close(m.written)
	batch := make([]voteOp, 0, maxBatch)
	for op := range m.votes {
		batch = append(batch[:0], op)
	fill:
		for len(batch) < maxBatch {
			select {
			case op, ok := <-m.votes:
				if !ok {
					break fill
				}
				batch = append(batch, op)
			default:
				break fill
			}
		}
		m.writeBatch(batch)
	}
}

// writeBatch stores a batch in order: the votes before each barrier (one
// transaction per session), then the barrier's signal.
func (m *Manager) writeBatch(batch []voteOp) {
	var pending []voteOp
	commit := func() {
		if len(pending) == 0 {
			return
		}
		byCode := map[string][]int{}
		var order []string
		for i, op := range pending {
			if _, ok := byCode[op.code]; !ok {
				order = append(order, op.code)
			}
			byCode[op.code] = append(byCode[op.code], i)
		}
		for _, code := range order {
			idx := byCode[code]
			votes := make([]store.ClassVote, len(idx))
			for j, i := range idx {
				votes[j] = pending[i].vote
			}
			ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
			err := m.cfg.Store.SaveClassVotes(ctx, code, votes)
			cancel()
			if err != nil && len(votes) > 1 {
				// One refused vote must not sink the others: retry
				// each on its own.
				for _, i := range idx {
					ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
					pending[i].done <- m.cfg.Store.SaveClassVotes(ctx, code, []store.ClassVote{pending[i].vote})
					cancel()
				}
				continue
			}
			for _, i := range idx {
				pending[i].done <- err
			}
		}
		pending = pending[:0]
	}
	for _, op := range batch {
		if op.barrier {
			commit()
			op.done <- nil
			continue
		}
		pending = append(pending, op)
	}
	commit()
}

// writerIdle is how long Close waits for the writer to finish.
const writerIdle = 10 * time.Second
