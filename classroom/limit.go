package classroom

import (
	"sync"
	"time"
)

// Join-code guessing limits: a client address that asked for MissLimit
// well-formed codes that do not exist within MissWindow is refused until
// the oldest of those misses is MissWindow old.
//
// Sized for a lecture hall behind one address (a school's NAT): a few
// dozen learners mistyping a character must not lock out the rest, and
// those who join by the link or QR code are never held (Session.JoinKey).
// A guesser gets MissLimit tries per MissWindow from an address: 4,320 a
// day, each with a chance of (sessions live) in 31^6 ≈ 887 million, so
// with 50 classes live about one in 4,000 of finding one in a day.
const (
	MissLimit  = 30
	MissWindow = 10 * time.Minute
	// maxTracked bounds the addresses remembered; beyond it the expired
	// ones are pruned first.
	maxTracked = 50_000
)

// missLimiter counts join-code misses per client address.
type missLimiter struct {
	mu     sync.Mutex
	misses map[string][]time.Time // oldest first, at most MissLimit
}

func newMissLimiter() *missLimiter {
	return &missLimiter{misses: map[string][]time.Time{}}
}

// blocked returns how long addr must wait, or 0 if it may look up a code.
func (l *missLimiter) blocked(addr string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	ts := l.prune(addr, now)
	if len(ts) < MissLimit {
		return 0
	}
	return ts[0].Add(MissWindow).Sub(now)
}

// miss records a lookup of a code that does not exist.
func (l *missLimiter) miss(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ts := l.prune(addr, now)
	if len(ts) >= MissLimit {
		ts = ts[1:]
	}
	if len(l.misses) >= maxTracked {
		for a := range l.misses {
			l.prune(a, now)
		}
	}
	l.misses[addr] = append(ts, now)
}

func (l *missLimiter) prune(addr string, now time.Time) []time.Time {
	ts := l.misses[addr]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= MissWindow {
		i++
	}
	if i == len(ts) {
		delete(l.misses, addr)
		return nil
	}
	ts = ts[i:]
	l.misses[addr] = ts
	return ts
}
