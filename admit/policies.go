package admit

import "time"

// newPolicy builds the arithmetic of a parsed spec (see the package doc
// for what each does).
func newPolicy(p parsed, limit, slots int) policy {
	switch p.kind {
	case InFlight:
		return &inflight{quota: int(p.v[0])}
	case AIMD:
		return &aimd{lim: p.v[0], lo: p.v[1], hi: p.v[2], inc: p.v[3], backoff: p.v[4], interval: p.ms(5), latency: p.ms(6)}
	case Gradient:
		return &gradient{lim: p.v[0], lo: p.v[1], hi: p.v[2], smoothing: p.v[3], tolerance: p.v[4], headroom: p.v[5],
			interval: p.ms(6), samples: int(p.v[7]), longN: p.v[8]}
	case Sojourn:
		return &sojourn{target: p.ms(0), interval: p.ms(1), timeout: p.ms(2)}
	}
	return &queue{limit: limit, slots: slots}
}

// queue refuses a caller when every worker is taken and LIMIT callers
// already wait (LIMIT 0: never): the lab's door as it always was.
type queue struct{ limit, slots int }

func (q *queue) bound() int {
	if q.limit == 0 || q.slots == 0 {
		return 0
	}
	return q.slots + q.limit
}

func (q *queue) admit(_ time.Duration, _, free, waiting int) bool {
	return q.limit == 0 || free > 0 || waiting < q.limit
}

func (q *queue) start(time.Duration, time.Duration) bool         { return true }
func (q *queue) done(time.Duration, time.Duration, Outcome, int) {}

// inflight refuses a caller when quota requests are inside.
type inflight struct{ quota int }

func (f *inflight) bound() int { return f.quota }

func (f *inflight) admit(_ time.Duration, inside, _, _ int) bool { return inside < f.quota }

func (f *inflight) start(time.Duration, time.Duration) bool         { return true }
func (f *inflight) done(time.Duration, time.Duration, Outcome, int) {}

// aimd is a limit on requests inside that grows by inc once an interval
// while it is used and answers come back in time, and is cut to backoff
// of itself by an overload signal (see the package doc).
type aimd struct {
	lim                  float64
	lo, hi, inc, backoff float64
	interval, latency    time.Duration

	started bool
	next    time.Duration // the limit may grow at the first answer from then on
	cut     time.Duration // when the limit was last cut
	hasCut  bool
	peak    int // the most inside since next was set
}

func (a *aimd) bound() int { return int(a.lim) }

func (a *aimd) begin(now time.Duration) {
	if !a.started {
		a.started = true
		a.next = now + a.interval
	}
}

func (a *aimd) admit(now time.Duration, inside, _, _ int) bool {
	a.begin(now)
	return admitUnder(a.lim, &a.peak, inside)
}

// admitUnder is the adaptive policies' door: a caller is let in while
// fewer than lim are inside, and peak keeps the most inside (counting one
// refused at the limit as the limit reached) since the policy last looked.
func admitUnder(lim float64, peak *int, inside int) bool {
	if inside >= int(lim) {
		*peak = max(*peak, inside)
		return false
	}
	*peak = max(*peak, inside+1)
	return true
}

func (a *aimd) start(time.Duration, time.Duration) bool { return true }

func (a *aimd) done(now, latency time.Duration, o Outcome, inside int) {
	a.begin(now)
	switch {
	case o == Abandoned || o == LongLived:
	case o != Served || a.latency > 0 && latency > a.latency:
		// An overload signal, unless the request was admitted before
		// the last cut: it was let in under the old limit and says
		// nothing of the new one (one cut per congestion event, as TCP
		// makes one per window of losses).
		if a.hasCut && now-latency < a.cut {
			return
		}
		a.lim = max(a.lo, a.lim*a.backoff)
		a.cut, a.hasCut = now, true
		a.next, a.peak = now+a.interval, inside
	case now >= a.next:
		// An answer in time, an interval after the last change: grow if
		// the limit was used (at least half of it inside at some
		// moment), as Netflix's AIMD does; an idle service proves
		// nothing.
		if float64(2*a.peak) >= a.lim {
			a.lim = min(a.hi, a.lim+a.inc)
		}
		a.next, a.peak = now+a.interval, inside
	}
}

// gradient is a limit on requests inside moved, once a window, by the
// ratio of a long-run baseline latency to the window's mean latency, in
// the style of Netflix's Gradient2 (see the package doc).
type gradient struct {
	lim, lo, hi                    float64
	smoothing, tolerance, headroom float64
	interval                       time.Duration
	samples                        int
	longN                          float64

	started bool
	end     time.Duration // the window ends at the first sample from then on with samples in it
	n       int
	sum     float64 // of the window's latencies, ns
	peak    int     // the most inside in the window
	long    float64 // the baseline latency, ns
	windows int     // windows closed, for the baseline's warm-up
}

// gradientWarmup is how many windows the baseline is a plain mean of
// before it becomes an exponential average (Gradient2's warm-up).
const gradientWarmup = 10

func (g *gradient) bound() int { return int(g.lim) }

func (g *gradient) begin(now time.Duration) {
	if !g.started {
		g.started = true
		g.end = now + g.interval
	}
}

func (g *gradient) admit(now time.Duration, inside, _, _ int) bool {
	g.begin(now)
	return admitUnder(g.lim, &g.peak, inside)
}

func (g *gradient) start(time.Duration, time.Duration) bool { return true }

func (g *gradient) done(now, latency time.Duration, o Outcome, inside int) {
	g.begin(now)
	if o != Served && o != TimedOut {
		// A quick refusal is no sample of the service's latency, nor
		// is a long-lived answer.
		return
	}
	g.n++
	g.sum += float64(latency)
	if now < g.end || g.n < g.samples {
		return
	}
	g.update(g.sum / float64(g.n))
	g.end, g.n, g.sum, g.peak = now+g.interval, 0, 0, inside
}

// update moves the limit by a closed window whose mean latency was short.
func (g *gradient) update(short float64) {
	g.windows++
	if g.windows <= gradientWarmup {
		g.long += (short - g.long) / float64(g.windows)
	} else {
		f := 2 / (g.longN + 1)
		g.long = g.long*(1-f) + short*f
	}
	long := g.long
	if short > 0 && long/short > 2 {
		// Latency fell far below the baseline (a long overload ended):
		// let the baseline fall faster than its average would.
		g.long *= 0.95
	}
	if float64(g.peak) < g.lim/2 {
		return // the limit was not used: no evidence either way
	}
	grad := 1.0
	if short > 0 {
		grad = min(1, max(0.5, g.tolerance*long/short))
	}
	next := g.lim*grad + g.headroom
	g.lim = min(g.hi, max(g.lo, g.lim*(1-g.smoothing)+next*g.smoothing))
}

// sojourn drops, as a worker takes it, a request whose own wait (its
// sojourn in the queue) passed a bound: more than twice target while the
// queue stands, that is while the least wait of the requests taken in the
// last interval was above target; and, with a timeout, more than the
// timeout less the service time it has measured lately, whatever the
// queue (see the package doc). It keeps no drop rate: it is not CoDel.
type sojourn struct {
	target, interval time.Duration
	timeout          time.Duration // 0: none

	// Smoothed latencies of served requests from admission and waits of
	// the requests served (ns, factor sojournSmoothing a sample): the
	// service time is their difference.
	latency, wait float64
	served        bool // latency has a sample

	started    bool
	overloaded bool
	end        time.Duration // the interval ends at the first start from then on
	least      time.Duration // the least wait taken in the interval
}

func (s *sojourn) bound() int { return 0 }

func (s *sojourn) admit(time.Duration, int, int, int) bool { return true }

func (s *sojourn) start(now, waited time.Duration) bool {
	switch {
	case !s.started:
		s.started, s.end, s.least = true, now+s.interval, waited
	case now >= s.end:
		s.overloaded = s.least > s.target
		s.end, s.least = now+s.interval, waited
	default:
		s.least = min(s.least, waited)
	}
	if s.timeout > 0 && s.served && waited+time.Duration(max(0, s.latency-s.wait)) > s.timeout {
		return false // its caller will have given up before it is served
	}
	if s.overloaded && waited > 2*s.target {
		return false
	}
	s.wait += (float64(waited) - s.wait) * sojournSmoothing
	return true
}

// sojournSmoothing is the weight of a new sample in sojourn's smoothed
// latency and wait, TCP's for its smoothed round-trip time (RFC 6298):
// at the lab's 35 answers a second after the bad release, a change of
// service time is mostly learned within about half a second.
const sojournSmoothing = 1.0 / 8

func (s *sojourn) done(_, latency time.Duration, o Outcome, _ int) {
	if o != Served {
		return
	}
	if !s.served {
		s.latency, s.served = float64(latency), true
		return
	}
	s.latency += (float64(latency) - s.latency) * sojournSmoothing
}
