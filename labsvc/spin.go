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

// spinner burns processor time for one worker.
type spinner struct {
	x uint64 // state of the computation; kept so the work cannot be optimised away
}

// spin computes until the calling goroutine has used d of processor time and
// returns the processor time it measured. The goroutine is locked to its OS
// thread for the duration so the thread's CPU clock is the goroutine's: time
// spent waiting for a processor (another worker running, the process
// throttled to CPUS, another process on the core) does not count, so the cost
// of a request does not shrink when workers compete. If the thread clock is
// unavailable it falls back to wall time and reports fellBack.
func (s *spinner) spin(ctx context.Context, d time.Duration) (used time.Duration, fellBack bool) {
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
		// Run about half of what is left, at most 10 ms between readings
		// so that a cancelled spin stops soon.
		perChunk := max(used/time.Duration(done), 1)
		chunks = int(max(1, min(d-used, 20*time.Millisecond)/perChunk/2))
	}
}
