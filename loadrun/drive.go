package loadrun

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"capacitylab/hedge"
	"capacitylab/result"
	"capacitylab/retry"
)

// ProgressEvery is how often a running window reports progress: four
// times a second. It is the one cadence of progress everywhere: a sweep's
// events, the load child's pipe and a run's log (package runner logs every
// report) all carry it.
const ProgressEvery = 250 * time.Millisecond

// Progress is a running window's counts so far.
type Progress struct {
	Elapsed time.Duration // since the window started
	Sent    int           // requests that have left
	Ended   int           // sent requests that have finished, whatever the outcome
	NotSent int           // arrivals that were due but not sent by the generator
	// ClientBusy is arrivals that found every client worker busy
	// (Open.ClientWorkers), not sent.
	ClientBusy int
	InFlight   int // Sent − Ended
}

// Open is one open-loop window: each arrival is sent at its scheduled time
// whether or not earlier ones were answered.
type Open struct {
	Target   Target
	Schedule []time.Duration // intended send offsets, increasing (see Schedule)
	// MaxInFlight caps the requests outstanding at once. 0 means as many as
	// arrive in one caller timeout at the schedule's mean rate, at least
	// DefaultMaxInFlight and at most MaxMaxInFlight: at 10,000 a second a
	// fixed 2,048 would turn a target's 0.2 s stall into arrivals not sent,
	// where a real caller would have sent them and waited.
	MaxInFlight int
	// Sampling, when its Every is not 0, samples the window over time.
	Sampling Sampling
	// ClientWorkers, when not 0, is a client with a fixed pool of that
	// many workers, each busy with one request from its send to its end:
	// an arrival that finds every one busy is recorded as NotSent with
	// ReasonClientBusy, and counted in the row's client_busy rather than
	// not_sent (it is the client's limit at work, not the generator
	// falling short). It replaces MaxInFlight.
	ClientWorkers int
	Window        int // copied into every record
	// Retry is the client's retries (package retry), its jitter drawn
	// from a source seeded with RetrySeed. Classes, when not nil, is each
	// arrival's class (Sweep.WindowClasses), sent as X-Criticality.
	Retry     retry.Spec
	RetrySeed uint64
	Classes   []result.Class
	// Fanout, when more than 1 (at most MaxFanout), makes each arrival a
	// logical request of that many sub-requests, all sent to the target
	// at its intended time; the request ends with its last sub-request.
	// Hedge is a hedging client (package hedge): a (sub-)request that
	// has not answered within its delay gets a copy. Neither goes with
	// Retry, which is then ignored (Sweep.ValidatePlan refuses the
	// combination).
	Fanout int
	Hedge  hedge.Spec
	// Split, when it has two or more targets (at most MaxSplit), is the
	// labs a fanned-out arrival's sub-requests are split across, in place
	// of Target: sub-request j goes to Split[j mod len(Split)], and its
	// hedged copies with it.
	Split []Target
}

// MaxFanout is the most sub-requests one arrival may fan out to, and
// MaxSplit the most labs they may be split across.
const (
	MaxFanout = 100
	MaxSplit  = 16
)

// Run sends the schedule from the calling goroutine and returns when every
// request has ended. It sleeps to each arrival's intended time
// (sleepUntil) and, unless ctx is done or the cap is reached, starts the
// request there (Target.begin: for a target given as an IP address it
// takes the send time and issues a non-blocking connect and write at
// once); the rest of the request runs on a goroutine of its own, so a slow
// one never delays the next send. Every send is timed from its intended
// time: how late it left is its send lag (Record.Lag), counted as late
// past LateAfter. An arrival that finds MaxInFlight requests outstanding
// is recorded as NotSent with ReasonInFlightCap (with ClientWorkers: that
// many, and ReasonClientBusy). Cancelling ctx stops sending (the rest of
// the schedule is recorded as NotSent with ReasonCanceled) and ends
// outstanding requests with Error/ReasonCanceled; every arrival still has
// exactly one record. progress, when not nil, is called every ProgressEvery
// from a goroutine of its own, and once more at the end.
func (o Open) Run(ctx context.Context, progress func(Progress)) result.Result {
	k := min(max(o.Fanout, 1), MaxFanout)
	limit, full := int64(o.MaxInFlight), result.ReasonInFlightCap
	if limit <= 0 {
		limit = int64(min(defaultInFlight(o.Schedule, o.Target.Timeout())*k, result.MaxMaxInFlight))
	}
	if o.ClientWorkers > 0 {
		limit, full = int64(o.ClientWorkers), result.ReasonClientBusy
	}
	// Replies end when they arrive only while the kernel stamps them; a
	// sweep also holds them between its windows.
	defer holdArrivalStamps()()
	n := len(o.Schedule)
	records := make([]result.Record, n*k)
	w := newLive()
	if k > 1 || !o.Hedge.IsZero() {
		w.pt = &parts{k: k, n: n, next: n * k}
		if !o.Hedge.IsZero() {
			w.pt.hc = hedge.New(o.Hedge)
		}
	} else if !o.Retry.IsZero() {
		w.rt = &retrier{c: retry.New(o.Retry, o.RetrySeed), next: len(o.Schedule)}
	}
	sp := o.Sampling.start(ctx, w, o.Window, o.Classes != nil)
	stopTicker := w.tick(progress)

	var wg sync.WaitGroup
	var inFlight atomic.Int64
	for i, off := range o.Schedule {
		r := &records[i]
		*r = result.Record{Window: o.Window, Seq: i, Intended: off, QueueWaitMS: -1, ServiceMS: -1}
		t := o.Target
		if o.Classes != nil {
			r.Class = o.Classes[i]
			t = t.forClass(r.Class)
		}
		sleepUntil(ctx, w.start.Add(off))
		switch {
		case ctx.Err() != nil:
			r.Outcome, r.Reason = result.NotSent, result.ReasonCanceled
		case inFlight.Load()+int64(k) > limit:
			r.Outcome, r.Reason = result.NotSent, full
		case w.rt != nil && !w.sendAttempt(off, true):
			r.Outcome, r.Reason = result.NotSent, result.ReasonBreakerOpen
		}
		if r.Outcome == result.NotSent {
			r.Sent, r.End = off, off
			for j := 1; j < k; j++ {
				records[w.pt.seq(i, j)] = w.pt.sub(*r, j)
			}
			w.finish(*r)
			continue
		}
		if w.pt != nil {
			// Every sub-request leaves now, from this goroutine, as an
			// arrival does; each is completed on a goroutine of its own.
			inFlight.Add(int64(k))
			req := &request{left: k, subs: make([]result.Record, k)}
			arrival := *r // sub-request 0's goroutine writes r from the first iteration on
			for j := range k {
				sr, t := r, t
				if j > 0 {
					sr = &records[w.pt.seq(i, j)]
					*sr = w.pt.sub(arrival, j)
				}
				if len(o.Split) > 1 {
					t = o.Split[j%len(o.Split)]
					if o.Classes != nil {
						t = t.forClass(r.Class)
					}
				}
				s := t.begin(sr, w.start, w.markSent)
				wg.Add(1)
				go func() {
					defer wg.Done()
					w.part(ctx, t, sr, s, req, &inFlight, limit)
				}()
			}
			continue
		}
		inFlight.Add(1)
		// begin takes Sent and starts the connection here, so neither
		// waits for the new goroutine to be scheduled; the goroutine
		// completes the request.
		s := t.begin(r, w.start, w.markSent)
		wg.Add(1)
		go func() {
			defer wg.Done()
			retryAfter := t.complete(ctx, r, w.start, s, w.markSent)
			inFlight.Add(-1)
			last := *r
			if w.rt != nil {
				last = w.follow(ctx, t, *r, retryAfter, &inFlight, limit)
			}
			w.finish(last)
		}()
	}
	wg.Wait()
	if w.rt != nil {
		for _, a := range w.rt.attempts {
			records = append(records, *a)
		}
	}
	if w.pt != nil {
		for _, c := range w.pt.copies {
			records = append(records, *c)
		}
	}
	return w.result(ctx, records, sp, stopTicker, progress)
}

// retrier is an open-loop window's retrying client (Open.Retry), under
// the window's lock: the client, the next retry's Seq (numbered after
// the first attempts, in the order retries are made) and the retries.
type retrier struct {
	c        *retry.Client
	next     int
	attempts []*result.Record
}

// breaker is the retrying client's breaker state at now, under the
// window's lock; "" without a breaker.
func (w *live) breaker(now time.Duration) string {
	if w.rt == nil || w.rt.c.Spec().Breaker <= 0 {
		return ""
	}
	return w.rt.c.State(now)
}

// sendAttempt says whether the retrying client's breaker lets an attempt
// due at due (an offset from the window's start) be sent.
func (w *live) sendAttempt(due time.Duration, first bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rt.c.Send(due, first)
}

// follow makes the retries of a request whose first attempt ended as
// first did (its reply asking to wait retryAfter), each when the client
// says, from the calling goroutine: it sleeps to the retry's due time,
// asks the breaker, and sends it as a new attempt record. It returns the
// request's logical record (result.Logical's): the first attempt's start,
// the last attempt's end and outcome, Attempt the last attempt's number.
// Every attempt but the last is counted in the samples' attempts here,
// the last with the request (live.finish). A retry counts in inFlight,
// the attempts outstanding, while it is out, and is not made when limit
// are (as package sim does: the cap bounds attempts, and a request in its
// backoff holds no connection). A cancelled run makes no more retries.
func (w *live) follow(ctx context.Context, t Target, first result.Record, retryAfter time.Duration, inFlight *atomic.Int64, limit int64) result.Record {
	last := first
	for {
		w.mu.Lock()
		again, due := w.rt.c.Retry(last.End, last.Attempt, last, retryAfter)
		w.mu.Unlock()
		if !again {
			break
		}
		sleepUntil(ctx, w.start.Add(due))
		if ctx.Err() != nil {
			break
		}
		w.mu.Lock()
		var a *result.Record
		if inFlight.Load() < limit && w.rt.c.Send(due, false) {
			inFlight.Add(1)
			a = &result.Record{Window: first.Window, Seq: w.rt.next, Request: first.Seq, Attempt: last.Attempt + 1,
				Intended: due, Class: first.Class, QueueWaitMS: -1, ServiceMS: -1}
			w.rt.next++
			w.rt.attempts = append(w.rt.attempts, a)
			if w.s != nil {
				w.s.foldAttempt(last)
			}
		}
		w.mu.Unlock()
		if a == nil {
			break
		}
		w.ended.Add(1) // last: an attempt that ended, not its request's last
		retryAfter = t.complete(ctx, a, w.start, t.begin(a, w.start, w.markSent), w.markSent)
		inFlight.Add(-1)
		last = *a
	}
	l := first
	l.End, l.Outcome, l.Status, l.Reason = last.End, last.Outcome, last.Status, last.Reason
	l.QueueWaitMS, l.ServiceMS, l.Attempt = last.QueueWaitMS, last.ServiceMS, last.Attempt
	return l
}

// parts is an open-loop window's fan-out (Open.Fanout) and hedging
// client (Open.Hedge), under the window's lock: k sub-requests an
// arrival, n arrivals, the hedging client (nil without one), the next
// copy's Seq (numbered after every sub-request, in the order copies are
// sent) and the copies.
type parts struct {
	k, n   int
	hc     *hedge.Client
	next   int
	copies []*result.Record
}

// seq is the Seq of sub-request j (1 to k−1) of arrival i: after the
// arrivals, whose Seq is sub-request 0's.
func (p *parts) seq(i, j int) int { return p.n + i*(p.k-1) + j - 1 }

// sub is sub-request j's record of the arrival whose sub-request 0 is r.
func (p *parts) sub(r result.Record, j int) result.Record {
	r.Seq, r.Request, r.Sub = p.seq(r.Seq, j), r.Seq, j
	return r
}

// request is a fanned-out arrival's sub-requests as they end, under the
// window's lock: how many are left, and each one folded (result.FoldSub).
type request struct {
	left int
	subs []result.Record
}

// part completes sub-request first (begin started it: s), hedged when the
// window has a hedging client, and folds it into its request, which ends
// with its last sub-request (result.FoldRequest).
func (w *live) part(ctx context.Context, t Target, first *result.Record, s send, req *request, inFlight *atomic.Int64, limit int64) {
	var sub result.Record
	if w.pt.hc == nil {
		t.complete(ctx, first, w.start, s, w.markSent)
		inFlight.Add(-1)
		w.endCopies(*first)
		sub = result.FoldSub([]result.Record{*first})
	} else {
		sub = w.hedged(ctx, t, first, s, inFlight, limit)
	}
	w.mu.Lock()
	req.subs[sub.Sub] = sub
	req.left--
	last := req.left == 0
	if w.pt.k > 1 {
		w.m.AddSub(sub)
	}
	if last {
		l := result.FoldRequest(req.subs)
		w.m.Add(l)
		if w.s != nil {
			w.s.fold(l)
		}
	}
	w.mu.Unlock()
}

// endCopies counts ended records of a fanned-out or hedging window: each
// in the samples' attempts, and in the window's ended (its requests are
// counted by part, not finish).
func (w *live) endCopies(rs ...result.Record) {
	w.mu.Lock()
	if w.s != nil {
		for _, r := range rs {
			w.s.foldAttempt(r)
		}
	}
	w.mu.Unlock()
	w.ended.Add(int64(len(rs)))
}

// hedged completes a (sub-)request whose first copy begin started (s),
// sending a copy each delay after its send (the hedging client's delay
// as it is sent; none before a percentile client's warmup) while no copy
// has answered ok and one is still out, at most the spec's Max, each a
// record of its own sent from this goroutine (its send lag measured from
// when it was due, on Go's timers). The first copy to answer ok wins: the
// others are cancelled (their connections closed, their records
// Cancelled; the lab still serves what it has read). A copy counts in
// inFlight while it is out and is not sent when limit are. It feeds the
// client the latencies of the copies that ended ok or were cancelled and
// returns the (sub-)request folded (result.FoldSub).
func (w *live) hedged(ctx context.Context, t Target, first *result.Record, s send, inFlight *atomic.Int64, limit int64) result.Record {
	w.mu.Lock()
	delay, hedging := w.pt.hc.Delay()
	most := w.pt.hc.Spec().Max
	w.mu.Unlock()
	copies := []*result.Record{first}
	var cancels []context.CancelFunc
	ended := make(chan int, most+1)
	start := func(i int, c *result.Record, s send) {
		cctx, cancel := context.WithCancel(ctx)
		cancels = append(cancels, cancel)
		go func() {
			t.complete(cctx, c, w.start, s, w.markSent)
			ended <- i
		}()
	}
	// Copies are due from the send, which begin took for a target given
	// as an IP address; otherwise from the intended time (the send is
	// then taken on the copy's own goroutine).
	base := first.Intended
	if s.taken {
		base = first.Sent
	}
	id := *first // read before its goroutine writes it
	start(0, first, s)
	out, won, next := 1, -1, 1
	var due <-chan time.Time
	var timer *time.Timer
	if hedging {
		timer = time.NewTimer(time.Until(w.start.Add(base + delay)))
		defer timer.Stop()
		due = timer.C
	}
	for out > 0 {
		select {
		case i := <-ended:
			out--
			inFlight.Add(-1)
			if won < 0 && copies[i].Outcome == result.OK {
				won, due = i, nil
				for j, cancel := range cancels {
					if j != i {
						cancel()
					}
				}
			}
		case <-due:
			at := base + time.Duration(next)*delay
			var c *result.Record
			w.mu.Lock()
			if ctx.Err() == nil && inFlight.Load() < limit {
				inFlight.Add(1)
				c = &result.Record{Window: id.Window, Seq: w.pt.next, Request: id.LogicalSeq(), Sub: id.Sub, Copy: next,
					Intended: at, Class: id.Class, QueueWaitMS: -1, ServiceMS: -1}
				w.pt.next++
				w.pt.copies = append(w.pt.copies, c)
			}
			w.mu.Unlock()
			if c != nil {
				copies = append(copies, c)
				start(len(copies)-1, c, t.begin(c, w.start, w.markSent))
				out++
			}
			if next++; next <= most {
				timer.Reset(time.Until(w.start.Add(base + time.Duration(next)*delay)))
			} else {
				due = nil
			}
		}
	}
	for _, cancel := range cancels {
		cancel()
	}
	done := make([]result.Record, len(copies))
	for i, c := range copies {
		if i != won && won >= 0 && ctx.Err() == nil && c.Outcome == result.Error && c.Reason == result.ReasonCanceled {
			c.Outcome, c.Reason = result.Cancelled, ""
		}
		done[i] = *c
	}
	w.mu.Lock()
	for _, c := range done {
		if lat := c.End - c.Sent; c.Outcome == result.OK || c.Outcome == result.Cancelled && lat > delay {
			w.pt.hc.Observe(lat)
		}
	}
	w.mu.Unlock()
	w.endCopies(done...)
	return result.FoldSub(done)
}

// defaultInFlight is the in-flight cap of an open-loop window that sets
// none: the arrivals of one caller timeout at the schedule's mean rate,
// within DefaultMaxInFlight and MaxMaxInFlight.
func defaultInFlight(sched []time.Duration, timeout time.Duration) int {
	n := result.DefaultMaxInFlight
	if len(sched) > 0 && sched[len(sched)-1] > 0 {
		rate := float64(len(sched)) / sched[len(sched)-1].Seconds()
		n = max(n, int(math.Ceil(rate*timeout.Seconds())))
	}
	return min(n, result.MaxMaxInFlight)
}

// Closed is one closed-loop window: Clients callers, each sending its next
// request when its previous one ended plus Think, until Length has passed
// since the start. Latency is counted from the actual send (Intended =
// Sent), which is what a closed-loop generator measures.
type Closed struct {
	Target  Target
	Clients int
	Think   time.Duration
	Length  time.Duration
	Window  int
	// Sampling, when its Every is not 0, samples the window over time.
	Sampling Sampling
}

// Run runs the clients and returns when every request has ended. Records
// are numbered in the order they were sent. Cancelling ctx stops the
// clients and ends outstanding requests with Error/ReasonCanceled.
func (c Closed) Run(ctx context.Context, progress func(Progress)) result.Result {
	defer holdArrivalStamps()()
	w := newLive()
	sp := c.Sampling.start(ctx, w, c.Window, false)
	stopTicker := w.tick(progress)
	var seq atomic.Int64
	perClient := make([][]result.Record, c.Clients)
	var wg sync.WaitGroup
	for ci := range c.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				now := time.Since(w.start)
				if now >= c.Length {
					return
				}
				r := result.Record{Window: c.Window, Seq: int(seq.Add(1) - 1), Intended: now}
				c.Target.do(ctx, &r, w.start, w.markSent)
				r.Intended = r.Sent
				w.finish(r)
				perClient[ci] = append(perClient[ci], r)
				if c.Think > 0 {
					sleepUntil(ctx, time.Now().Add(c.Think))
				}
			}
		}()
	}
	wg.Wait()
	records := slices.Concat(perClient...)
	slices.SortFunc(records, func(a, b result.Record) int { return a.Seq - b.Seq })
	return w.result(ctx, records, sp, stopTicker, progress)
}

// live is a window's shared state while it runs.
type live struct {
	start time.Time
	sent  atomic.Int64
	ended atomic.Int64
	not   atomic.Int64
	busy  atomic.Int64
	mu    sync.Mutex
	m     result.Metrics
	s     *sampler // when the window is sampled; folded with m, under mu
	rt    *retrier // an open-loop window's retrying client, under mu; nil without one
	pt    *parts   // an open-loop window's fan-out and hedging client, under mu; nil without either
}

func newLive() *live { return &live{start: time.Now()} }

func (w *live) markSent() { w.sent.Add(1) }

// finish folds a finished logical request in: a record, or a retrying
// client's logical record (its last attempt counted in the samples'
// attempts here), or an arrival of a fanned-out or hedging window that
// was not sent.
func (w *live) finish(r result.Record) {
	w.mu.Lock()
	w.m.Add(r)
	if w.s != nil {
		w.s.fold(r)
		w.s.foldAttempt(r)
	}
	w.mu.Unlock()
	switch {
	case r.Outcome == result.NotSent && r.Reason == result.ReasonClientBusy:
		w.busy.Add(1)
	case r.Outcome == result.NotSent:
		w.not.Add(1)
	default:
		w.ended.Add(1)
	}
}

func (w *live) progress() Progress {
	s, e := int(w.sent.Load()), int(w.ended.Load())
	return Progress{Elapsed: time.Since(w.start), Sent: s, Ended: e, NotSent: int(w.not.Load()), ClientBusy: int(w.busy.Load()), InFlight: s - e}
}

// tick calls progress every ProgressEvery until the returned stop is called.
func (w *live) tick(progress func(Progress)) (stop func()) {
	if progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				progress(w.progress())
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// result is the window's Result once its last request has ended: the
// sampler (when there is one) is stopped first, so the window's end falls
// after its last sample's boundary, and its last samples are sent after
// the last progress.
func (w *live) result(ctx context.Context, records []result.Record, sp *sampling, stopTicker func(), progress func(Progress)) result.Result {
	sp.stop()
	elapsed := time.Since(w.start)
	stopTicker()
	if progress != nil {
		progress(w.progress())
	}
	m := w.m
	return result.Result{Records: records, Metrics: &m, Elapsed: elapsed, Samples: sp.last(ctx, elapsed)}
}

// sleepChunk bounds one precise sleep, so that a cancelled context is
// noticed within this long.
const sleepChunk = 20 * time.Millisecond

// sleepUntil waits until t, or until ctx is done (noticed within
// sleepChunk). It sleeps with preciseSleep: Go's timers wake up to a
// millisecond late on Linux (the runtime's poller waits in whole
// milliseconds), which alone would make most sends "late".
func sleepUntil(ctx context.Context, t time.Time) {
	for ctx.Err() == nil {
		left := time.Until(t)
		if left <= 0 {
			return
		}
		preciseSleep(min(left, sleepChunk))
	}
}
