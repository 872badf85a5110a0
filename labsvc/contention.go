package labsvc

import (
	"sync"
	"time"
)

// contention is what a request spends on the lab's contention knobs,
// read with SPIN_MS and WAIT_MS as its service begins (see the package
// doc, Contention): the time it holds the lab's one lock after its spin
// (LOCK_MS), and the processor time it spends on top of SPIN_MS for each
// other request in service as its spin starts (COHERENCY_US). A stalled
// request spends neither.
type contention struct {
	lock      time.Duration
	coherency time.Duration
}

// contention returns what a request whose service begins under c spends
// on contention.
func (c Config) contention() contention {
	return contention{
		lock:      time.Duration(c.LockMS) * time.Millisecond,
		coherency: time.Duration(c.CoherencyUS) * time.Microsecond,
	}
}

// serialLock is the lab's one lock (LOCK_MS): requests hold it one at a
// time, in the order they reach it, each for its LOCK_MS, waiting (no
// processor) meanwhile. Since holding it is waiting, the lab keeps the
// lock's timeline rather than a mutex: a request that reaches it takes it
// when the last one in line is due to let go of it (or at once, if it is
// free), and holds it until LOCK_MS later. So the holds never overlap and
// follow one another without a gap while requests wait for the lock: a
// worker's late wake-up from its hold does not lengthen the next one's,
// as a mutex's hand-off would, and the lab finishes at most 1000/LOCK_MS
// requests a second, and that many while the lock is always wanted.
type serialLock struct {
	mu   sync.Mutex
	free time.Time // when the last request in line lets go of the lock
}

// take puts a request that reaches the lock at now, to hold it for d, in
// line, and returns when it lets go of it: d after the last one in line
// lets go, or after now if that is later.
func (l *serialLock) take(now time.Time, d time.Duration) (until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.free = later(now, l.free).Add(d)
	return l.free
}
