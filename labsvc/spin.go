package labsvc

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// spinChunk is a unit of work: a few microseconds of xorshift rounds. A spin
// runs as many chunks as half the time it has left seems to need, then reads
// the clock again, so it reads the clock a dozen times or so and overshoots
// by about one chunk.
const spinChunk = 2048

// SpinQuantum is the most processor time a spin uses at a time while
// other spins wait for a processor: the time slice of the lab's round
// robin. A spin that has used its quantum while another waits goes to the
// back of the line; one that nobody waits for goes on. So spins share the
// CPUS processors in turns a quantum long, as a kernel time-slices
// threads, which approximates processor sharing (each of k spins on one
// processor progressing at 1/k of it) to within a quantum. Short enough
// that a 2 ms spin is overtaken by the spins that came after it; long
// enough that handing a processor on costs little (docs/BENCHMARKS.md).
const SpinQuantum = 250 * time.Microsecond

// processors are the lab's CPUS processors, which the spins share in
// turns (round robin): at most CPUS spins compute at once, each for at most
// SpinQuantum while others wait, then at the back of the line. The lab
// runs with one Go P more than CPUS (ApplySandbox), so everything that is
// not a spin (the door, the workers' reads and writes, the control API)
// always has a P and never waits in Go's run queue behind a spinning
// worker; the kernel shares the lab's processors among them.
//
// A worker whose spin finds a processor free computes on it itself (a
// runner). At the end of a quantum, while other spins wait, the runner
// puts the spin it computed for at the back of the line and computes for
// the one at its front: a turn passes inside the runner's own goroutine,
// so it costs no more than reading the clock (waking the waiting worker's
// goroutine instead, and with it the spare P's thread, cost about 16 µs of
// processor a turn: docs/BENCHMARKS.md). A spin a runner finishes for
// another worker wakes that worker. A runner whose own spin is over hands
// its processor to the first waiting worker in the line, whose goroutine
// becomes the runner, and goes on to its request's wait.
type processors struct {
	n       int
	mu      sync.Mutex
	running int        // runners: at most n
	line    ring[*job] // spins waiting for their next turn, in order
}

func newProcessors(n int) *processors { return &processors{n: max(n, 1)} }

// job is one worker's spin.
type job struct {
	d, used  time.Duration // processor time to spend, and spent so far
	waited   time.Duration // time spent in the line, waiting for turns
	inLine   time.Time     // when it last joined the line
	fellBack bool          // a slice was timed by wall time
	done     bool          // spent (or abandoned at shutdown)
	runner   bool          // its worker is a runner now
	wake     chan struct{} // its worker's: told when done, or when it becomes a runner
}

// tell wakes j's worker if it waits (it reads done and runner under mu).
func (j *job) tell() {
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// spinner burns processor time for one worker.
type spinner struct {
	x        uint64        // state of the computation; kept so the work cannot be optimised away
	perChunk time.Duration // processor time a chunk took last time, to plan the first readings
	wake     chan struct{} // the worker's wake-up, reused by its jobs
}

// spin spends d of processor time for the calling worker, in turns on
// procs (see processors), and returns the processor time spent for it. The
// time is read from the clock of the OS thread that computed each slice
// (the goroutine is locked to it meanwhile), so time spent waiting for a
// turn or for the processor (another process on the core) does not count,
// and the cost of a request does not shrink when workers compete. It also
// returns waited, the time the spin spent in the line waiting for turns
// while the lab's other spins computed. If the thread clock is unavailable
// it falls back to wall time and reports fellBack. A cancelled ctx ends it
// early.
func (s *spinner) spin(ctx context.Context, d time.Duration, procs *processors) (used, waited time.Duration, fellBack bool) {
	if d <= 0 {
		return 0, 0, false
	}
	if s.wake == nil {
		s.wake = make(chan struct{}, 1)
	}
	select {
	case <-s.wake: // left over from the last spin
	default:
	}
	j := &job{d: d, wake: s.wake}
	procs.mu.Lock()
	if procs.running < procs.n {
		procs.running++
		j.runner = true
		procs.mu.Unlock()
		// A free processor. This goroutine often runs on the thread that
		// was waiting in Go's network poller (a request's bytes woke it),
		// and computing keeps that thread, so until it parks no thread
		// waits for the network: Go's monitor polls only every 10 ms, and
		// a request arriving meanwhile would not even be read, let alone
		// get its turn. Starting a goroutine wakes an idle P's thread (the
		// lab has one more P than CPUS), which, finding nothing else to
		// do, goes to wait in the poller. A worker handed a processor by a
		// runner needs no such help: waking it woke a thread.
		go func() {}()
	} else {
		procs.join(j)
		procs.mu.Unlock()
	}
	for {
		procs.mu.Lock()
		runner, done := j.runner, j.done
		procs.mu.Unlock()
		switch {
		case done:
		case runner:
			if !s.run(ctx, procs, j) {
				continue
			}
		default:
			select {
			case <-j.wake:
				continue
			case <-ctx.Done():
			}
		}
		procs.mu.Lock()
		defer procs.mu.Unlock()
		return j.used, j.waited, j.fellBack
	}
}

// run computes on one of procs, as a runner (see processors), starting
// with own, the calling worker's spin. It returns true once own is spent
// (or ctx ended), having handed the processor on; false when own is being
// computed on another processor and nothing else waits, having given the
// processor up (the worker then waits for own like any other).
func (s *spinner) run(ctx context.Context, p *processors, own *job) bool {
	cur := own
	for {
		u, fb := s.slice(ctx, min(cur.d-cur.used, SpinQuantum))
		p.mu.Lock()
		cur.used += u
		cur.fellBack = cur.fellBack || fb
		switch {
		case cur.used >= cur.d || ctx.Err() != nil:
			cur.done = true
			if cur != own {
				cur.tell()
			}
			cur = nil
		case p.line.n > 0:
			// Its quantum is up and another spin waits: its turn.
			p.join(cur)
			cur = nil
		}
		if own.done || ctx.Err() != nil {
			own.runner = false
			p.handOn(cur)
			p.mu.Unlock()
			return true
		}
		if cur == nil {
			if p.line.n == 0 {
				// own is being computed on another processor.
				own.runner = false
				p.running--
				p.mu.Unlock()
				return false
			}
			cur = p.leave(p.line.pop())
		}
		p.mu.Unlock()
		// Between turns, let Go run what is waiting on this P: above
		// all the workers whose spins this runner just finished, which
		// answer their callers and take the next requests. Without it
		// they waited for another thread to steal them, and the lab's
		// processor stood idle part of the time at saturation (busy 55
		// to 98% instead of 99.7 to 99.98%, BenchmarkSpinTurns).
		runtime.Gosched()
	}
}

// handOn passes a leaving runner's processor to the worker of the first
// spin in the line whose worker waits, which becomes a runner; or frees
// it. cur, a spin the runner was computing and has not spent (the line was
// empty when its quantum ended), goes into the line first, so its worker
// gets the processor when it waits; when its worker is a runner itself
// (with CPUS > 1 a runner's own spin can be in another runner's hands),
// it stays in the line for a runner to compute. Handing cur to a worker
// that is already a runner would lose it: that runner computes only what
// it takes from the line, and the processor would stay counted as taken.
// p.mu is held.
func (p *processors) handOn(cur *job) {
	if cur != nil {
		p.join(cur)
	}
	next, _ := p.line.take(func(j *job) bool { return !j.runner })
	if next == nil {
		p.running--
		return
	}
	p.leave(next)
	next.runner = true
	next.tell()
}

// join puts j at the back of the line. p.mu is held.
func (p *processors) join(j *job) {
	j.inLine = time.Now()
	p.line.push(j)
}

// leave counts the time j, just taken from the line, waited there, and
// returns it. p.mu is held.
func (p *processors) leave(j *job) *job {
	j.waited += time.Since(j.inLine)
	return j
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
	chunks := 1 // chunks to run before the next clock reading
	if s.perChunk > 0 {
		chunks = int(max(1, d/s.perChunk/2))
	}
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
		perChunk := max(used/time.Duration(done), 1)
		if used >= d || ctx.Err() != nil {
			s.x, s.perChunk = x, perChunk
			return used, !ok
		}
		// Run about half of what is left between readings, so that a
		// cancelled spin stops soon.
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
