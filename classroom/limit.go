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
	// maxTracked bounds the addresses remembered (about 80 bytes each);
	// past it the least recently missing are forgotten first, which
	// gives them back at most the allowance they would have had anyway
	// after MissWindow.
	maxTracked = 100_000
	// missShards splits the addresses so that misses from different
	// addresses rarely wait for each other.
	missShards = 64
)

// missInterval is the time one miss costs an address.
const missInterval = MissWindow / MissLimit

// missLimiter counts join-code misses per client address. Each address
// has one number, the time its allowance is next full again (a generic
// cell rate algorithm): a miss moves it missInterval later (from now if
// it had passed), and an address is held while it is more than
// MissWindow-missInterval ahead of now. A miss and a check are O(1):
// a map look-up in one of missShards shards. Memory is bounded: each
// shard keeps two generations of addresses; when the newer one is full,
// the older is dropped and the newer takes its place, so an address is
// forgotten only after maxTracked/2 others missed since its last miss.
// Look-ups of codes take only a shard's read lock (shared), and joins by
// link, QR code or cookie do not come here at all.
type missLimiter struct {
	seed   maphash.Seed
	shards [missShards]missShard
}

type missShard struct {
	mu        sync.RWMutex
	cur, prev map[string]int64 // address → when its allowance is full again (Unix ns)
}

func newMissLimiter() *missLimiter {
	l := &missLimiter{seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].cur = map[string]int64{}
	}
	return l
}

func (l *missLimiter) shard(addr string) *missShard {
	return &l.shards[maphash.String(l.seed, addr)%missShards]
}

// shardCap is how many addresses one generation of a shard holds.
const shardCap = maxTracked / missShards / 2

// blocked returns how long addr must wait, or 0 if it may look up a code.
func (l *missLimiter) blocked(addr string, now time.Time) time.Duration {
	sh := l.shard(addr)
	sh.mu.RLock()
	full, ok := sh.cur[addr]
	if !ok {
		full = sh.prev[addr]
	}
	sh.mu.RUnlock()
	ahead := time.Duration(full - now.UnixNano())
	return max(0, ahead-(MissWindow-missInterval))
}

// miss records a lookup of a code that does not exist.
func (l *missLimiter) miss(addr string, now time.Time) {
	t := now.UnixNano()
	sh := l.shard(addr)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	full, ok := sh.cur[addr]
	if !ok {
		full = sh.prev[addr]
		if len(sh.cur) >= shardCap {
			sh.prev, sh.cur = sh.cur, make(map[string]int64, shardCap)
		}
	}
	sh.cur[addr] = max(full, t) + int64(missInterval)
}

// tracked is how many addresses are remembered (some may be counted in
// both generations).
func (l *missLimiter) tracked() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.RLock()
		n += len(sh.cur) + len(sh.prev)
		sh.mu.RUnlock()
	}
	return n
}
