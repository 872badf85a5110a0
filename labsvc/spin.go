package labsvc

import (
	"context"
	"runtime"
	"time"
)

// spinChunk is a unit of work: a few microseconds of xorshift rounds. A spin
// runs as many chunks as half the time it has left seems to need, then reads
// the clock again, so it reads the clock a dozen times or so and overshoots
// by about one chunk.
const spinChunk = 2048

// spinQuantum is the most processor time a spin uses before it lets the
// next waiting spin have the processor: a time slice, as Go's own scheduler
// (which preempts a goroutine after 10 ms) and an operating system's would
// give it. Spins shorter than this run to their end in one go.
const spinQuantum = 10 * time.Millisecond

// processors are the lab's CPUS processors as tokens: a spin holds one
// while it computes, so at most CPUS spins run at once, and the others
// wait their turn in order. The lab runs with one Go P more than CPUS
// (ApplySandbox), so everything that is not a spin (the door, the workers'
// reads and writes, the control API) always has a P and never waits in
// Go's run queue behind a spinning worker; the kernel shares the lab's
// processors among them.
type processors chan struct{}

func newProcessors(n int) processors { return make(processors, max(n, 1)) }

// spinner burns processor time for one worker.
type spinner struct {
	x uint64 // state of the computation; kept so the work cannot be optimised away
}

// spin computes until the calling goroutine has used d of processor time and
// returns the processor time it measured. It holds one of procs while it
// computes, at most spinQuantum at a time, and the goroutine is locked to
// its OS thread meanwhile so the thread's CPU clock is the goroutine's: time
// spent waiting for a processor (its turn among the spins, another process
// on the core) does not count, so the cost of a request does not shrink
// when workers compete. If the thread clock is unavailable it falls back to
// wall time and reports fellBack. A cancelled ctx ends it early.
func (s *spinner) spin(ctx context.Context, d time.Duration, procs processors) (used time.Duration, fellBack bool) {
	for used < d && ctx.Err() == nil {
		select {
		case procs <- struct{}{}:
		case <-ctx.Done():
			return used, fellBack
		}
		u, fb := s.slice(ctx, min(d-used, spinQuantum))
		<-procs
		used += u
		fellBack = fellBack || fb
	}
	return used, fellBack
}

// slice computes for d of processor time (or wall time, when the thread's
// clock cannot be read) on a locked thread.
func (s *spinner) slice(ctx context.Context, d time.Duration) (used time.Duration, fellBack bool) {
	if d <= 0 {
		return 0, false
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, ok := threadCPU()
	wallStart := time.Now()
	x := s.x | 1
	chunks := 1    // chunks to run before the next clock reading
	var done int64 // chunks run so far
	for {
		for range chunks {
			for range spinChunk {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
			}
		}
		done += int64(chunks)
		if ok {
			now, _ := threadCPU()
			used = now - start
		} else {
			used = time.Since(wallStart)
		}
		if used >= d || ctx.Err() != nil {
			s.x = x
			return used, !ok
		}
		// Run about half of what is left between readings, so that a
		// cancelled spin stops soon.
		perChunk := max(used/time.Duration(done), 1)
		chunks = int(max(1, (d-used)/perChunk/2))
	}
}

// waitTimer waits d with a Go timer, or until ctx ends.
func waitTimer(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
}
