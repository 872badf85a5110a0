package admit

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcome is how an admitted request ended, as its policy learns it.
type Outcome uint8

const (
	// Served: answered; its latency is a sample of the service's (an
	// AIMD policy still counts it as overload when it is slower than
	// latency_ms).
	Served Outcome = iota
	// Overloaded: the service said it is overloaded or failed: a 503 or
	// 429 from the upstream, another 5xx, or no connection to it.
	Overloaded
	// TimedOut: no answer within the timeout, or the caller gave up
	// first; its latency is how long it had waited by then.
	TimedOut
	// Abandoned: nothing to learn from it (a caller that never sent a
	// whole request, a service shutting down).
	Abandoned
	// LongLived: the service began a long-lived answer, a protocol
	// upgrade (a websocket) or an event stream, whose life is the
	// caller's choice and not the service's work. Its user calls Done
	// when the answer begins, so it is inside only until then, and the
	// policy learns nothing from it: neither its time to the answer nor
	// its life is a latency sample.
	LongLived
)

// Door applies one policy to the requests of one service. Its user keeps
// the service's own queue and workers, and tells the door of each
// request's three moments:
//
//	Admit  a request arrives: admit it (true) or refuse it (false)
//	Start  a worker takes an admitted request: serve it (true), or drop
//	       it (false), refusing it then (sojourn); a request handed to a
//	       free worker at once starts with waited 0
//	Done   an admitted request that started (or never did, such as one
//	       still queued when the service stops) ends: its latency from
//	       admission and its Outcome; not for a request Start dropped
//
// Times are durations since an origin of the user's choosing (the lab:
// when it started; the simulator: the window's start), passed in, so the
// simulator and tests drive a Door with a clock of their own and a Door
// never reads the time itself.
//
// A Door is not safe for concurrent use: its user calls it under its own
// lock (the lab's door holds its mutex). What Register exports is read
// safely from any goroutine.
type Door struct {
	spec    Spec
	limit   int // LIMIT: the queue policy's bound on waiting callers
	slots   int // workers; 0 = as many as are admitted (a proxy)
	pol     policy
	inside  int  // admitted and not done: waiting or in service
	byClass bool // classes=on: AdmitClass sheds by class

	inst                    *instruments // nil until Register
	shownLimit, shownInside atomic.Int64
}

// policy is one policy's arithmetic. inside counts the requests admitted
// and not done, before this one.
type policy interface {
	// bound is the limit on requests inside now, 0 when there is none.
	bound() int
	admit(now time.Duration, inside, free, waiting int) bool
	start(now, waited time.Duration) bool
	// done learns from an admitted request's end; inside no longer
	// counts it.
	done(now, latency time.Duration, o Outcome, inside int)
}

// NewDoor returns a door applying spec, with limit the LIMIT knob (the
// queue policy's bound on callers waiting for a worker; 0 = none, and 0
// for every other policy) and slots the service's workers (0 when it has
// no bound of its own on requests in service, such as a proxy that sends
// every admitted request upstream at once).
func NewDoor(spec Spec, limit, slots int) (*Door, error) {
	if slots < 0 {
		return nil, fmt.Errorf("admit: %d workers: want 0 or more", slots)
	}
	d := &Door{slots: slots}
	if err := d.Set(spec, limit); err != nil {
		return nil, err
	}
	return d, nil
}

// Set changes the policy (a new spec or LIMIT), keeping the requests
// inside; what the old policy learned is forgotten, and the new one starts
// at the next request. On an error nothing changes.
func (d *Door) Set(spec Spec, limit int) error {
	p, err := parse(string(spec))
	if err != nil {
		return err
	}
	switch {
	case limit < 0 || limit > MaxLimit:
		return fmt.Errorf("admit: LIMIT %d: want 0 to %d", limit, MaxLimit)
	case limit != 0 && p.kind != Queue:
		return errors.New("admit: LIMIT is the queue policy's: want 0 with " + p.kind)
	}
	d.spec, d.limit = p.spec(), limit
	d.pol = newPolicy(p, limit, d.slots)
	d.byClass = p.v[len(params(p.kind))-1] != 0
	if d.inst != nil {
		d.inst.info.Reset()
		d.inst.info.WithLabelValues(p.kind, d.spec.Describe()).Set(1)
		d.show()
	}
	return nil
}

// SetWorkers changes the service's workers (the slots NewDoor was given)
// to n, keeping the requests inside and what the policy has learned: only
// the queue policy counts workers (its bound is workers + LIMIT), and it
// learns nothing. The lab calls it when WORKERS changes while it runs. A
// negative n is an error and changes nothing.
func (d *Door) SetWorkers(n int) error {
	if n < 0 {
		return fmt.Errorf("admit: %d workers: want 0 or more", n)
	}
	d.slots = n
	if q, ok := d.pol.(*queue); ok {
		q.slots = n
	}
	if d.inst != nil {
		d.show()
	}
	return nil
}

// Reset forgets what the policy has learned (an adaptive limit goes back
// to its start), keeping the requests inside: the lab does it at every
// POST /reset, so each window of a sweep starts from the same policy, as
// each simulated window does.
func (d *Door) Reset() {
	_ = d.Set(d.spec, d.limit)
}

// Spec returns the policy in force, canonical.
func (d *Door) Spec() Spec { return d.spec }

// Limit is the policy's bound on requests inside now (waiting or in
// service), 0 when it has none: the quota, an adaptive policy's current
// limit, workers + LIMIT for the queue policy with a LIMIT, 0 for the
// queue policy without one and for sojourn.
func (d *Door) Limit() int { return d.pol.bound() }

// Inside is how many requests are admitted and not done.
func (d *Door) Inside() int { return d.inside }

// Admit decides on a request arriving at now, with free workers free and
// waiting requests waiting for one. An admitted request counts as inside
// until Done (or a Start that drops it).
func (d *Door) Admit(now time.Duration, free, waiting int) bool {
	return d.decide(d.pol.admit(now, d.inside, free, waiting))
}

// decide counts a decision at the door: an admitted request is inside.
func (d *Door) decide(ok bool) bool {
	if ok {
		d.inside++
	}
	if d.inst != nil {
		if !ok {
			d.inst.refused.Inc()
		}
		d.show()
	}
	return ok
}

// AdmitSheddable is Admit for a Sheddable request: it is refused too
// while all but a quarter of the policy's bound (rounded down) is inside,
// which keeps that quarter for Normal requests (see Class). With no bound
// (Limit 0) it is Admit.
func (d *Door) AdmitSheddable(now time.Duration, free, waiting int) bool {
	if b := d.pol.bound(); b > 0 && d.inside >= sheddableBound(b) {
		return d.decide(false)
	}
	return d.Admit(now, free, waiting)
}

// Classes says whether the policy sheds by class (classes=on): then
// AdmitClass treats the classes apart, and the door's user serves its
// queue Critical first, then Normal, then Sheddable, first come first
// served within a class.
func (d *Door) Classes() bool { return d.byClass }

// AdmitClass is Admit for a request of class c at a door whose user
// tells it the class of every request (the lab's, by X-Criticality, and
// its simulation). Without classes=on it is Admit, whatever c. With it:
//
//	Sheddable  AdmitSheddable: refused too once all but a quarter of the
//	           bound is inside
//	Normal     Admit
//	Critical   Admit, but a request the policy refuses is admitted all
//	           the same while fewer than twice the bound are inside
//
// With no bound (Limit 0) every class is Admit. The policy is asked of
// every request but a Sheddable one refused at its lower bound, and
// learns from it as from any other.
func (d *Door) AdmitClass(now time.Duration, free, waiting int, c Class) bool {
	if !d.byClass {
		return d.Admit(now, free, waiting)
	}
	switch c {
	case Sheddable:
		return d.AdmitSheddable(now, free, waiting)
	case Critical:
		ok := d.pol.admit(now, d.inside, free, waiting)
		if b := d.pol.bound(); !ok && b > 0 && d.inside < criticalBound(b) {
			ok = true
		}
		return d.decide(ok)
	}
	return d.Admit(now, free, waiting)
}

// Start decides on an admitted request a worker takes at now, after it
// waited waited for one: serve it (true), or drop it (false: it is no
// longer inside, and its caller is to be refused as at the door). A
// request that did not wait (waited 0, handed to a free worker at once)
// is always served, though the policy learns from it too.
func (d *Door) Start(now, waited time.Duration) bool {
	if d.inst != nil {
		d.inst.queue.Observe(waited.Seconds())
	}
	if d.pol.start(now, waited) || waited <= 0 {
		return true
	}
	d.inside--
	if d.inst != nil {
		d.inst.dropped.Inc()
		d.show()
	}
	return false
}

// Done ends an admitted request at now, latency after it was admitted.
func (d *Door) Done(now, latency time.Duration, o Outcome) {
	d.inside--
	d.pol.done(now, latency, o, d.inside)
	if d.inst != nil {
		d.show()
	}
}

func (d *Door) show() {
	d.shownInside.Store(int64(d.inside))
	d.shownLimit.Store(int64(d.pol.bound()))
}

// instruments are a Door's Prometheus collectors.
type instruments struct {
	queue            prometheus.Histogram
	refused, dropped prometheus.Counter
	info             *prometheus.GaugeVec
}

// Register exports the door on reg (the counters count from Register on):
//
//	admit_limit              gauge: Limit, the bound on requests inside (0 = none)
//	admit_inflight           gauge: Inside, requests admitted and not done
//	admit_queue_seconds      histogram: how long each request waited for a worker (Start's waited)
//	admit_refused_total      counter: requests refused at arrival
//	admit_dropped_total      counter: requests dropped from the queue (sojourn)
//	admit_policy_info        gauge 1 labelled policy (its name) and spec (every parameter in force)
//
// Register may be called once, before the door is used from more than one
// goroutine.
func (d *Door) Register(reg prometheus.Registerer) error {
	buckets := []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10}
	in := &instruments{
		queue:   prometheus.NewHistogram(prometheus.HistogramOpts{Name: "admit_queue_seconds", Help: "Time each admitted request waited for a worker, dropped ones included.", Buckets: buckets}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "admit_refused_total", Help: "Requests the admission policy refused on arrival (503)."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "admit_dropped_total", Help: "Admitted requests dropped from the queue for waiting too long (503, POLICY=sojourn)."}),
		info:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "admit_policy_info", Help: "The admission policy in force: its name and every parameter."}, []string{"policy", "spec"}),
	}
	limit := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "admit_limit", Help: "The admission policy's bound on requests inside (waiting or in service) now; 0 = none."},
		func() float64 { return float64(d.shownLimit.Load()) })
	inflight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "admit_inflight", Help: "Requests admitted and not yet done (waiting or in service)."},
		func() float64 { return float64(d.shownInside.Load()) })
	for _, c := range []prometheus.Collector{in.queue, in.refused, in.dropped, in.info, limit, inflight} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	in.info.WithLabelValues(d.spec.Kind(), d.spec.Describe()).Set(1)
	d.inst = in
	d.show()
	return nil
}
