package classroom

import (
	"hash/maphash"
	"sync"
	"time"
)

// Join-code guessing limits: each client address may miss (ask for a
// well-formed code that does not exist) MissLimit times at once, and
// after that once every MissWindow/MissLimit (20 s): MissLimit misses per
// MissWindow in the long run. An address over its allowance is refused
// until one miss's worth of time has passed.
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
	// maxTracked bounds the addresses a Limiter remembers (about 45
	// bytes each);
	// past it the least recently missing are forgotten first, which
	// gives them back at most the allowance they would have had anyway
	// after MissWindow.
	maxTracked = 100_000
	// missShards splits the addresses so that misses from different
	// addresses rarely wait for each other.
	missShards = 64
)

// newMissLimiter is the join-code miss limiter: MissLimit misses per
// MissWindow.
func newMissLimiter() *Limiter { return NewLimiter(MissLimit, MissWindow) }

// Limiter limits events (join-code misses, joins, new sessions) per client
// address: burst at once, and after that one every per/burst, so burst
// per per in the long run; an address over its allowance waits until one
// event's worth of time has passed.
//
// Each address has one number, the time its allowance is next full again
// (a generic cell rate algorithm): an event moves it one interval later
// (from now if it had passed), and an address is held while it is more
// than per-interval ahead of now. An event and a check are O(1): a map
// look-up in one of missShards shards. Memory is bounded: each shard
// keeps two generations of addresses; when the newer one is full, the
// older is dropped and the newer takes its place, so an address is
// forgotten only after maxTracked/2 others had events since its last.
// Checks take only a shard's read lock (shared).
type Limiter struct {
	interval, ahead time.Duration // one event's cost; how far ahead an address may be
	seed            maphash.Seed
	shards          [missShards]limitShard
}

type limitShard struct {
	mu        sync.RWMutex
	cur, prev map[string]int64 // address → when its allowance is full again (Unix ns)
}

// NewLimiter returns a Limiter allowing burst events at once and burst
// per per in the long run, for each address.
func NewLimiter(burst int, per time.Duration) *Limiter {
	burst = max(burst, 1)
	l := &Limiter{interval: per / time.Duration(burst), seed: maphash.MakeSeed()}
	l.ahead = per - l.interval
	for i := range l.shards {
		l.shards[i].cur = map[string]int64{}
	}
	return l
}

func (l *Limiter) shard(addr string) *limitShard {
	return &l.shards[maphash.String(l.seed, addr)%missShards]
}

// shardCap is how many addresses one generation of a shard holds.
const shardCap = maxTracked / missShards / 2

// Wait returns how long addr must wait before its next event, or 0.
func (l *Limiter) Wait(addr string, now time.Time) time.Duration {
	sh := l.shard(addr)
	sh.mu.RLock()
	full, ok := sh.cur[addr]
	if !ok {
		full = sh.prev[addr]
	}
	sh.mu.RUnlock()
	return max(0, time.Duration(full-now.UnixNano())-l.ahead)
}

// Take counts an event of addr.
func (l *Limiter) Take(addr string, now time.Time) {
	sh := l.shard(addr)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l.takeLocked(sh, addr, now.UnixNano())
}

// Allow counts an event of addr and returns 0 if addr's allowance has
// room for it; otherwise it counts nothing and returns how long to wait.
func (l *Limiter) Allow(addr string, now time.Time) time.Duration {
	sh := l.shard(addr)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := now.UnixNano()
	full, ok := sh.cur[addr]
	if !ok {
		full = sh.prev[addr]
	}
	if wait := time.Duration(full-t) - l.ahead; wait > 0 {
		return wait
	}
	l.takeLocked(sh, addr, t)
	return 0
}

func (l *Limiter) takeLocked(sh *limitShard, addr string, t int64) {
	full, ok := sh.cur[addr]
	if !ok {
		full = sh.prev[addr]
		if len(sh.cur) >= shardCap {
			sh.prev, sh.cur = sh.cur, make(map[string]int64, shardCap)
		}
	}
	sh.cur[addr] = max(full, t) + int64(l.interval)
}

// tracked is how many addresses are remembered (some may be counted in
// both generations).
func (l *Limiter) tracked() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.RLock()
		n += len(sh.cur) + len(sh.prev)
		sh.mu.RUnlock()
	}
	return n
}
