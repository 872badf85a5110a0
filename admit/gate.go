package admit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Class is how critical a request is to whoever serves it, which decides
// who is refused first when a Gate's policy must refuse. There are three,
// and a request is of exactly one:
//
//	Critical   never refused, and not counted inside: health checks, the
//	           long-lived connections of people at work (a class's
//	           sockets, a run's stream), a login half done
//	Normal     refused when the policy's bound is reached: the requests of
//	           someone already using the service
//	Sheddable  refused first: once all but a quarter of the bound (rounded
//	           down) is inside, so that a crowd of newcomers or a crawler
//	           leaves room for Normal requests
//
// The site's table of which request is which is in package web
// (admission.go); the proxy has no classes and sends every request as
// Normal. The queue policy and sojourn have no bound (Limit 0) unless the
// queue policy has a LIMIT and workers: without one, Sheddable is Normal.
//
// That is what the classes mean at a Gate. At a Door whose policy has
// classes=on (Door.AdmitClass: the lab's, whose callers say their class
// in X-Criticality) a Critical request counts inside and has room beyond
// the bound instead (see the package doc, Shedding by class).
type Class uint8

const (
	Normal Class = iota
	Sheddable
	Critical
)

// Classes lists the classes, as the metrics label them.
func Classes() []Class { return []Class{Critical, Normal, Sheddable} }

// String names the class as the metrics label it.
func (c Class) String() string {
	switch c {
	case Critical:
		return "critical"
	case Sheddable:
		return "sheddable"
	}
	return "normal"
}

// sheddableBound is the most requests inside at which a Sheddable request
// is still admitted: all but a quarter of the bound, rounded down (with a
// bound of 3 or less, the whole bound).
func sheddableBound(bound int) int { return bound - bound/4 }

// criticalBound is how many requests inside turn a Critical request away
// at a door with classes=on (Door.AdmitClass): twice the bound, room
// beyond it that the other classes cannot take, so that a queue full of
// them does not turn critical requests away, while a flood of requests
// all marked critical is still bounded.
func criticalBound(bound int) int { return 2 * bound }

// ErrRefused is Gate.Enter's error for a request its policy refused (at
// arrival, or dropped from the queue): its caller gets Refuse, or the
// service's own form of it.
var ErrRefused = errors.New("admit: refused")

// Gate is a Door for an HTTP service whose handlers run concurrently: it
// holds the door's lock, the origin of its clock (when it was made), and,
// with workers, the FIFO queue of callers waiting for one. A handler
// calls Enter when a request arrives and, if it was let in, Leave when it
// ends; the Gate tells the Door of the three moments (Admit, Start, Done)
// and reads the clock for it. The proxy (cmd/proxy) and the course site
// (package web) each stand behind one.
//
// With workers 0 every admitted request goes on at once, so "inside" is
// the requests in progress; with workers N at most N go on at once and
// the rest wait in the queue, bounded by LIMIT (the queue policy) or by
// their time in it (sojourn), as at the lab's door.
type Gate struct {
	workers int
	epoch   time.Time
	counted *prometheus.CounterVec // by class and decision; nil until Register

	mu        sync.Mutex
	line      *processorWait // the processors' line (wait.go); nil: not watched
	lineBound time.Duration  // BoundWait's bound
	door      *Door          // its times are since epoch
	busy      int            // admitted requests given a worker and not yet left
	queue     []*waiter      // callers waiting for a worker, oldest first
}

// waiter is a caller waiting for a worker: ready says true when it may
// go on, false when the policy dropped it.
type waiter struct {
	at    time.Time
	ready chan bool // buffered: the sender never waits
}

// Ticket is an admitted request, for Leave. A Critical request's ticket
// is exempt: Leave does nothing with it.
type Ticket struct {
	at     time.Time
	exempt bool
}

// NewGate returns a gate applying spec, with limit the queue policy's
// LIMIT and workers the requests let on at once (0: every one admitted),
// as NewDoor takes them. A policy with classes=on is refused: a gate's
// classes are its user's, treated as Class says.
func NewGate(spec Spec, limit, workers int) (*Gate, error) {
	door, err := NewDoor(spec, limit, workers)
	if err != nil {
		return nil, err
	}
	if door.Classes() {
		return nil, fmt.Errorf("admit: policy %s is not allowed for a gate: want it without classes=on (a gate's requests are of the classes its user gives them, and treated as Class says)", spec)
	}
	return &Gate{workers: workers, epoch: time.Now(), door: door}, nil
}

// Register exports the gate's door on reg (Door.Register) and counts the
// requests that came to it:
//
//	admit_requests_total  counter by class (critical, normal, sheddable) and decision
//	                      (admitted, refused, exempt: a critical request let by uncounted)
//
// Call it once, before the gate is used.
func (g *Gate) Register(reg prometheus.Registerer) error {
	if err := g.door.Register(reg); err != nil {
		return err
	}
	cv := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "admit_requests_total",
		Help: "Requests that came to the admission gate, by class (critical, normal, sheddable) and decision (admitted, refused, exempt: critical, let by and not counted inside)."},
		[]string{"class", "decision"})
	for _, c := range Classes() {
		if c == Critical {
			cv.WithLabelValues(c.String(), "exempt")
			continue
		}
		cv.WithLabelValues(c.String(), "admitted")
		cv.WithLabelValues(c.String(), "refused")
	}
	if err := reg.Register(cv); err != nil {
		return err
	}
	if g.line != nil {
		if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "admit_processor_wait_seconds",
			Help: "The processors' line as the gate last measured it: the 90th percentile of how long goroutines ready to run waited for a processor over 50 ms or more (BoundWait)."},
			func() float64 { g.mu.Lock(); defer g.mu.Unlock(); return g.line.wait.Seconds() })); err != nil {
			return err
		}
	}
	g.counted = cv
	return nil
}

func (g *Gate) count(c Class, decision string) {
	if g.counted != nil {
		g.counted.WithLabelValues(c.String(), decision).Inc()
	}
}

// BoundWait makes the gate refuse by the processors' line as well as by
// its policy (wait.go): a Sheddable request is refused while goroutines
// ready to run have waited more than d for a processor (the 90th
// percentile over the last 50 ms or more), a Normal one while they have
// waited more than four times d. It is for a service whose requests
// mostly compute, whose line forms before they are read, where no count
// of requests inside sees it. Call it once, before Register.
func (g *Gate) BoundWait(d time.Duration) {
	g.line, g.lineBound = newProcessorWait(), d
}

// normalWaitFactor is how many times BoundWait's bound a Normal request
// is refused at: the line may grow well past where anonymous visitors are
// turned away before those at work are.
const normalWaitFactor = 4

// Spec is the policy in force.
func (g *Gate) Spec() Spec {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.door.Spec()
}

// Busy is how many admitted requests have a worker (with workers 0, how
// many are in progress).
func (g *Gate) Busy() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.busy
}

// Waiting is how many admitted callers wait for a worker.
func (g *Gate) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// freeLocked is how many more requests may go on now.
func (g *Gate) freeLocked() int {
	if g.workers == 0 {
		return 1 // always one more: nothing here bounds them
	}
	return g.workers - g.busy
}

// Enter admits or refuses a request of class c arriving now, and waits
// for a worker if need be. It returns the request's Ticket when it may go
// on; ErrRefused when the policy refused it (at arrival, or dropped it
// from the queue); or ctx's error when the caller went away while it
// waited for a worker. A Critical request is let on at once, uncounted.
func (g *Gate) Enter(ctx context.Context, c Class) (Ticket, error) {
	arrived := time.Now()
	if c == Critical {
		g.count(c, "exempt")
		return Ticket{at: arrived, exempt: true}, nil
	}
	at := arrived.Sub(g.epoch)
	g.mu.Lock()
	if g.line != nil {
		bound := g.lineBound
		if c == Normal {
			bound *= normalWaitFactor
		}
		if over := g.line.at(arrived) - bound; over > 0 && rand.Float64() < float64(over)/float64(bound) {
			g.mu.Unlock()
			g.count(c, "refused")
			return Ticket{}, ErrRefused
		}
	}
	free, waiting := g.freeLocked(), len(g.queue)
	var ok bool
	if c == Sheddable {
		ok = g.door.AdmitSheddable(at, free, waiting)
	} else {
		ok = g.door.Admit(at, free, waiting)
	}
	if !ok {
		g.mu.Unlock()
		g.count(c, "refused")
		return Ticket{}, ErrRefused
	}
	if free > 0 {
		g.door.Start(at, 0)
		g.busy++
		g.mu.Unlock()
		g.count(c, "admitted")
		return Ticket{at: arrived}, nil
	}
	wt := &waiter{at: arrived, ready: make(chan bool, 1)}
	g.queue = append(g.queue, wt)
	g.mu.Unlock()
	if err := g.wait(ctx, wt); err != nil {
		if errors.Is(err, ErrRefused) {
			g.count(c, "refused")
		}
		return Ticket{}, err
	}
	g.count(c, "admitted")
	return Ticket{at: arrived}, nil
}

// wait waits for a worker for wt; it returns ErrRefused when the policy
// dropped it, or ctx's error when the caller went away meanwhile.
func (g *Gate) wait(ctx context.Context, wt *waiter) error {
	select {
	case ok := <-wt.ready:
		if !ok {
			return ErrRefused
		}
		return nil
	case <-ctx.Done():
	}
	// The caller gave up waiting: a timeout from its side.
	now := time.Now()
	g.mu.Lock()
	if i := slices.Index(g.queue, wt); i >= 0 {
		g.queue = slices.Delete(g.queue, i, i+1)
		g.door.Done(now.Sub(g.epoch), now.Sub(wt.at), TimedOut)
		g.mu.Unlock()
		return ctx.Err()
	}
	g.mu.Unlock()
	// A worker was given to it (or it was dropped) as the caller left.
	if <-wt.ready {
		g.release(now, wt.at, TimedOut)
	}
	return ctx.Err()
}

// Leave ends an admitted request: o is what the policy learns of it, and
// its latency is from its arrival to now. Its worker goes to the callers
// waiting, oldest first, as the policy lets them start.
func (g *Gate) Leave(t Ticket, o Outcome) {
	if t.exempt {
		return
	}
	g.release(time.Now(), t.at, o)
}

func (g *Gate) release(end, arrived time.Time, o Outcome) {
	at := end.Sub(g.epoch)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.door.Done(at, end.Sub(arrived), o)
	g.busy--
	for len(g.queue) > 0 && g.freeLocked() > 0 {
		wt := g.queue[0]
		g.queue = slices.Delete(g.queue, 0, 1)
		if g.door.Start(at, end.Sub(wt.at)) {
			g.busy++
			wt.ready <- true
		} else {
			wt.ready <- false
		}
	}
}
