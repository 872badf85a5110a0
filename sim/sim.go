package sim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"capacitylab/admit"
	"capacitylab/dist"
	"capacitylab/hedge"
	"capacitylab/labsvc"
	"capacitylab/result"
	"capacitylab/retry"
)

// DefaultRefuse is how long a refused caller waits for its 503 when
// Model.Refuse is 0: what the live lab's door took on loopback to read a
// refused request and answer it, connection included (median 0.051 ms of
// 13,561 refusals; docs/BENCHMARKS.md). It is never 0, so closed-loop
// clients that are refused and retry at once still move time forward.
const DefaultRefuse = 50 * time.Microsecond

// MeasuredCPUPerRequest is the processor time the live lab spends on each
// request beyond SPIN_MS (accepting, reading, answering and closing it, and
// its share of the Go runtime's work), as this project measured it: the
// lab's process_cpu_ms per request served, less SPIN_MS, at SPIN_MS=0 and
// at saturation with SPIN_MS=2 (docs/BENCHMARKS.md, "The simulator"). It
// lowers the processor ceiling with SPIN_MS=2 and CPUS=1 from 500 to about
// 483 a second. Model.CPUPerRequest is 0 unless a caller sets it.
const MeasuredCPUPerRequest = 70 * time.Microsecond

// Model is a simulated lab with its callers. It is a result.Driver: set it
// as a loadrun.Sweep's Driver and the sweep's windows are simulated
// instead of sent. The zero value is not valid: Lab must pass
// labsvc.Config.Validate.
type Model struct {
	// Lab holds the lab's knobs as each window starts: WORKERS, SPIN_MS,
	// WAIT_MS, LIMIT, CPUS, STALL_EVERY, STALL_MS, POLICY, LOCK_MS and
	// COHERENCY_US, with the lab's own ranges. A window's knob changes
	// (result.Window.Changes) change them at their times, as the lab's
	// POST /config does.
	Lab labsvc.Config
	// Timeout is the caller's timeout, from its send; 0 means
	// result.DefaultTimeout.
	Timeout time.Duration
	// CPUPerRequest is processor time the lab spends on each request
	// beyond SPIN_MS (accepting, reading, answering and closing it),
	// spent with the spin and shared with the spins on the CPUS
	// processors, spread over the spin's turns (each turn's quantum
	// stretched by the same share) so that a spin takes as many turns as
	// SPIN_MS alone: the live lab's own work is not a turn of its own. 0, the knobs alone, is the default; MeasuredCPUPerRequest
	// is what the live lab measured.
	CPUPerRequest time.Duration
	// Refuse is how long a refused caller waits for its 503; 0 means
	// DefaultRefuse.
	Refuse time.Duration

	// quantum is the processors' time slice: labsvc.SpinQuantum, the
	// lab's, when 0. Only the package's tests set it, to compare the
	// round robin with queueing theory's disciplines.
	quantum time.Duration
	// classOf is the class of each arrival by its Seq (its X-Criticality),
	// nil for every one default (admit.Normal), as the generator sends
	// them. Only the package's tests set it for now (WithClasses).
	classOf func(seq int) admit.Class
}

// Validate says what is wrong with the model, or nil: the lab's knobs as
// labsvc reports them (input.FieldErrors), then the caller's timeout as
// loadrun reports it.
func (m Model) Validate() error {
	if err := m.Lab.Validate(); err != nil {
		return err
	}
	if m.Lab.Accept != labsvc.AcceptDoor || m.Lab.Backlog != 0 {
		return fmt.Errorf("ACCEPT=%s BACKLOG=%d is not simulated: the simulator models the lab's door (ACCEPT=door, BACKLOG=0); run the lab for the kernel's accept queue", m.Lab.Accept, m.Lab.Backlog)
	}
	if m.Timeout != 0 {
		if err := result.CheckTimeout(m.Timeout); err != nil {
			return err
		}
	}
	switch {
	case m.CPUPerRequest < 0 || m.CPUPerRequest > time.Second:
		return fmt.Errorf("processor time per request %v is not allowed: want 0 to 1s", m.CPUPerRequest)
	case m.Refuse < 0 || m.Refuse > result.MaxTimeout:
		return fmt.Errorf("refusal time %v is not allowed: want 0 (the default, %v) to %v", m.Refuse, DefaultRefuse, result.MaxTimeout)
	}
	return nil
}

// CheckChanges says what is wrong with knob changes made into each window
// of a simulation of the model, or nil: what the lab itself would refuse,
// in labsvc.Config.CheckChanges's words (a knob it cannot change while it runs,
// a value out of range or that does not go with the knobs in force then),
// and a change of BACKLOG, which belongs to the kernel's accept queue the
// simulator does not model. Their times are the sweep's to check.
func (m Model) CheckChanges(changes []result.KnobChange) error {
	if len(changes) == 0 {
		return nil
	}
	if err := m.Lab.CheckChanges(changes); err != nil {
		return err
	}
	for _, c := range changes {
		if c.Knob == "BACKLOG" {
			return fmt.Errorf("knob change %s is not simulated: BACKLOG is the kernel's accept queue, and the simulator models the lab's door only; run the lab to change it", c)
		}
	}
	return nil
}

// RunWindow simulates one window from an empty lab (see the package doc for
// the model) and returns its records and the lab's counters as they were
// when the window's last request ended.
func (m Model) RunWindow(ctx context.Context, w result.Window) (result.Result, result.LabStats, error) {
	if err := m.Validate(); err != nil {
		return result.Result{}, result.LabStats{}, err
	}
	if err := m.CheckChanges(w.Changes); err != nil {
		return result.Result{}, result.LabStats{}, err
	}
	if err := ctx.Err(); err != nil {
		return result.Result{}, result.LabStats{}, err
	}
	spec, err := retry.Parse(w.Retry)
	if err != nil {
		return result.Result{}, result.LabStats{}, err
	}
	if w.Clients > 0 && !spec.IsZero() {
		return result.Result{}, result.LabStats{}, fmt.Errorf("retry %q is for an open loop only: a closed loop's clients do not retry", w.Retry)
	}
	hs, err := hedge.Parse(w.Hedge)
	if err != nil {
		return result.Result{}, result.LabStats{}, err
	}
	switch {
	case w.Fanout < 0 || w.Fanout > maxFanout:
		return result.Result{}, result.LabStats{}, fmt.Errorf("fan-out %d is not allowed: want 1 (or 0: each arrival one request) to %d", w.Fanout, maxFanout)
	case (w.Fanout > 1 || !hs.IsZero()) && w.Clients > 0:
		return result.Result{}, result.LabStats{}, fmt.Errorf("fan-out and hedging are for an open loop only: a closed loop's clients send one request at a time")
	case (w.Fanout > 1 || !hs.IsZero()) && !spec.IsZero():
		return result.Result{}, result.LabStats{}, fmt.Errorf("retry %q does not go with fan-out or hedging yet: give one client option", w.Retry)
	case len(w.Schedule)*max(w.Fanout, 1) > result.MaxArrivals:
		return result.Result{}, result.LabStats{}, fmt.Errorf("fan-out %d of %d arrivals is %d sub-requests: want at most %d in one window", w.Fanout, len(w.Schedule), len(w.Schedule)*w.Fanout, int(result.MaxArrivals))
	}
	if w.Classes != nil && len(w.Classes) != len(w.Schedule) {
		return result.Result{}, result.LabStats{}, fmt.Errorf("classes: %d for %d arrivals, want one class per arrival of the schedule", len(w.Classes), len(w.Schedule))
	}
	if w.Clients > 0 && w.Think == 0 && m.Lab.SpinMS == 0 && m.Lab.WaitMS == 0 && m.Lab.LockMS == 0 && m.CPUPerRequest == 0 && (m.Lab.StallEvery == 0 || m.Lab.StallMS == 0) {
		return result.Result{}, result.LabStats{}, fmt.Errorf("a closed loop with no think time against a lab whose requests take no time (SPIN_MS=0, WAIT_MS=0, LOCK_MS=0) " +
			"sends without end in no time; the simulator cannot run it: give the requests some service time or the clients a think time")
	}
	s := newWindow(m, w)
	if !spec.IsZero() {
		s.retry = retry.New(spec, w.RetrySeed)
	}
	if !hs.IsZero() {
		s.hedge = hedge.New(hs)
	}
	s.run()
	if s.tooMany {
		return result.Result{}, result.LabStats{}, fmt.Errorf("the closed loop of %d clients sends more than %d requests in one %v window, the generator's cap on one window: "+
			"fewer clients, a think time, slower requests or a shorter window", w.Clients, int(result.MaxArrivals), w.Length)
	}
	return s.result()
}

// maxFanout is the most sub-requests an arrival may fan out to, as
// loadrun.MaxFanout (which this package's tests import loadrun to check).
const maxFanout = 100

// never is a time later than any event.
const never = math.MaxInt64

// timer is a job due at a time: a spin, wait or stall ending (took is
// when a worker was assigned it), a caller being refused, a closed-loop
// client's next send (job is then the client).
type timer struct {
	at   int64
	took int64
	job  int32 // a record index
}

// turn is a spinning job on a processor, or in line for one: rem is the
// processor time it still needs as of start, when its turn began; its turn
// ends at end (a quantum later, or when its spin is done if nobody waits).
// Its quantum and the wait that follows its spin are those of the knobs
// in force when its service began (the lab reads SPIN_MS and WAIT_MS then):
// knobs indexes window.knobs.
type turn struct {
	start, end, rem, took int64
	job, knobs            int32
}

// queued is a job waiting for a worker.
type queued struct {
	job   int32
	stall bool
	class admit.Class
}

// lanes is the door's queue, as the lab's (package labsvc): a FIFO lane
// per class, indexed by admit.Class. A job joins its class's lane while
// the policy sheds by class (admit.Door.Classes), and the default lane
// otherwise, so that without classes the queue is one FIFO; pop takes the
// oldest job of the first lane not empty: critical, default, then
// sheddable.
type lanes struct {
	lane [3]fifo[queued]
	n    int
}

func (q *lanes) push(v queued, byClass bool) {
	c := admit.Normal
	if byClass {
		c = v.class
	}
	q.lane[c].push(v)
	q.n++
}

func (q *lanes) len() int    { return q.n }
func (q *lanes) empty() bool { return q.n == 0 }

// pop takes the next job; the queue must not be empty.
func (q *lanes) pop() queued {
	c := admit.Critical
	for _, c = range [...]admit.Class{admit.Critical, admit.Normal, admit.Sheddable} {
		if !q.lane[c].empty() {
			break
		}
	}
	q.n--
	return q.lane[c].pop()
}

// classCounts are one class's counters in a window, as the lab's stats
// count them.
type classCounts struct {
	accepted, refused, dropped, done int64
}

// fifo is a first-in first-out queue of T in a ring that doubles when
// full (its length is a power of two).
type fifo[T any] struct {
	buf  []T
	head int
	n    int
}

func (q *fifo[T]) push(v T) {
	if q.n == len(q.buf) {
		nb := make([]T, max(16, 2*len(q.buf)))
		for i := range q.n {
			nb[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = v
	q.n++
}

func (q *fifo[T]) empty() bool { return q.n == 0 }
func (q *fifo[T]) peek() *T    { return &q.buf[q.head] }

func (q *fifo[T]) pop() T {
	v := q.buf[q.head]
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return v
}

// insert puts t in q, a queue of timers in the order they are due, after
// every timer due at or before it. Timers of one length arrive in that
// order, so it is a push unless a knob change made a wait or stall
// shorter than those begun before it.
func insert(q *fifo[timer], t timer) {
	if q.n == 0 || q.buf[(q.head+q.n-1)&(len(q.buf)-1)].at <= t.at {
		q.push(t)
		return
	}
	insertEarly(q, t)
}

// insertEarly is insert for a timer due before the last one in q.
func insertEarly(q *fifo[timer], t timer) {
	q.push(t)
	mask := len(q.buf) - 1
	for i := q.n - 1; i > 0; i-- {
		at, prev := (q.head+i)&mask, (q.head+i-1)&mask
		if q.buf[prev].at <= t.at {
			break
		}
		q.buf[at], q.buf[prev] = q.buf[prev], q.buf[at]
	}
}

// window is one simulated window. Times are int64 nanoseconds from the
// window's start.
type window struct {
	m      Model
	w      result.Window
	rec    []result.Record
	client []int32       // closed loop: whose each request is
	class  []admit.Class // each request's class, by record

	timeoutNS, refuseNS int64

	// the lab's knobs: at the window's start, then after each of its
	// changes in time order (the changes sorted, in w.Changes), and what a
	// request spends under each; changed of the changes are made, so
	// cfgs[changed] and knobs[changed] are in force
	cfgs    []labsvc.Config
	knobs   []knobsNS
	changed int
	cfg0    [1]labsvc.Config // cfgs' storage when there are no changes
	knobs0  [1]knobsNS

	// the lab
	door      *admit.Door // the door's policy, on the window's clock
	idle      int         // free workers
	retire    int         // busy workers to stop once done with their request (WORKERS fell)
	queue     lanes
	turns     []turn      // spins on a processor now: at most CPUS
	line      fifo[turn]  // spins waiting for their next turn, in order
	ending    int         // the turn whose end is the next spin event (nextLab)
	lockFree  int64       // when the last request in line for the lab's lock (LOCK_MS) lets go of it
	waits     fifo[timer] // in the order they end
	stalls    fifo[timer] // in the order they end
	last      int64       // when cpuNS was last brought up to date
	admitted  int64
	refused   int64 // every 503: refused at the door, or dropped
	dropped   int64 // admitted, then dropped from the queue
	done      int64
	byClass   [3]classCounts // by admit.Class
	queuedMax int
	serviceNS int64   // sum of the service times of done requests
	serviceSq float64 // sum of their squares, in ms²
	waitNS    int64   // sum of their waits in the queue

	// demand draws each admitted request's factor (DIST) in the order the
	// door admits them, as the lab's does, from the seed again at every
	// window and every change of DIST; scale holds each job's (1 until
	// admitted).
	demand *dist.Sampler
	scale  []float64
	cpuNS  int64 // processor time the spins have used

	// the callers
	next     int // open loop: the next scheduled arrival
	sends    fifo[timer]
	giveup   int // the first record whose caller may still give up: deadlines follow send order
	refusals fifo[timer]
	inFlight int
	maxIn    int
	full     string // the reason of an arrival not sent for maxIn: inflight_cap or client_busy
	end      int64  // the last caller's end so far
	length   int64
	tooMany  bool // a closed loop reached result.MaxArrivals requests

	// a retrying client (open loop): nil when it never retries. Its
	// retries due are in retries, a heap by due time (then by when they
	// were decided, took); retried counts the retries sent, whose Seqs
	// follow the schedule's arrivals'. Records are kept in send order
	// and put in Seq order at the end.
	retry   *retry.Client
	retries []timer
	decided int64
	retried int

	// fan-out (w.Fanout > 1): k sub-requests an arrival, sent together.
	// A hedging client (nil without one): its copies due are in hedges,
	// a heap as retries' (took the order they were decided); each
	// (sub-)request's state by its first record (copy 0) in hedged, and
	// each record's (sub-)request in of; copied counts the copies sent,
	// whose Seqs follow every sub-request's.
	k      int
	hedge  *hedge.Client
	hedges []timer
	hedged map[int32]*copies
	of     []int32
	copied int

	// a run over time: the lab as it was at each boundary (Result.Lab)
	every      int64 // w.SampleEvery; 0: none
	nextSample int64
	labAt      []result.LabStats
	breakerAt  []string // the retrying client's breaker at each boundary (Result.Breaker)
}

func newWindow(m Model, w result.Window) *window {
	s := &window{m: m, w: w, idle: m.Lab.Workers}
	// Validate has checked the policy: a fresh one each window, as the
	// lab's forgets what it learned at each reset.
	s.door, _ = admit.NewDoor(m.Lab.Policy, m.Lab.Limit, m.Lab.Workers)
	s.every, s.nextSample = int64(w.SampleEvery), never
	if s.every > 0 {
		s.nextSample = s.every
	}
	s.cfg0[0] = m.Lab
	s.cfgs = s.cfg0[:]
	if len(w.Changes) > 0 {
		// CheckChanges has checked the changes: each is one the lab takes.
		changes := slices.SortedStableFunc(slices.Values(w.Changes), func(a, b result.KnobChange) int { return cmp.Compare(a.At, b.At) })
		cfg := m.Lab
		for _, c := range changes {
			cfg, _ = cfg.Set(c.Knob, c.Value)
			s.cfgs = append(s.cfgs, cfg)
		}
		s.w.Changes = changes
	}
	s.knobs = s.knobs0[:]
	if len(s.cfgs) > 1 {
		s.knobs = make([]knobsNS, len(s.cfgs))
	}
	for i, cfg := range s.cfgs {
		s.knobs[i] = m.knobsNS(cfg)
	}
	s.timeoutNS = int64(orDefault(m.Timeout, result.DefaultTimeout))
	s.refuseNS = int64(orDefault(m.Refuse, DefaultRefuse))
	s.length = int64(w.Length)
	s.turns = make([]turn, 0, m.Lab.CPUs)
	n := len(w.Schedule)
	if w.Clients > 0 {
		n = w.Clients * 16
		for c := range w.Clients {
			s.sends.push(timer{at: 0, job: int32(c)})
		}
	}
	s.rec = make([]result.Record, 0, n)
	s.class = make([]admit.Class, 0, n)
	s.scale = make([]float64, 0, n)
	s.demand = s.cfgs[0].Dist.Sampler()
	if w.Clients > 0 {
		s.client = make([]int32, 0, n)
	}
	s.k = min(max(w.Fanout, 1), maxFanout)
	s.maxIn, s.full = w.MaxInFlight, result.ReasonInFlightCap
	if s.maxIn <= 0 {
		s.maxIn = min(result.DefaultMaxInFlight*s.k, result.MaxMaxInFlight)
	}
	if w.ClientWorkers > 0 {
		s.maxIn, s.full = w.ClientWorkers, result.ReasonClientBusy
	}
	return s
}

// knobsNS is what a request whose service begins under some knobs spends:
// its spin (CPUPerRequest, own, included), wait and stall, in
// nanoseconds, and its spin's quantum; its hold of the lab's lock
// (LOCK_MS), and the processor time its spin spends on top of spin for
// each other request in service as it starts (COHERENCY_US). A request's
// DIST factor scales its spin (less own) and wait (spinOf, scaled), not
// the contention.
type knobsNS struct {
	spin, wait, stall, quantum, own int64
	lock, coherency                 int64
}

// spinOf is the spin of a request whose factor is f: SPIN_MS times f, and
// the lab's own work per request, which does not vary with it.
func (k knobsNS) spinOf(f float64) int64 {
	if f == 1 {
		return k.spin
	}
	return scaled(k.spin-k.own, f) + k.own
}

// scaled is ns times a request's factor f, in whole nanoseconds.
func scaled(ns int64, f float64) int64 {
	if f == 1 {
		return ns
	}
	return int64(math.Round(float64(ns) * f))
}

func (m Model) knobsNS(cfg labsvc.Config) knobsNS {
	k := knobsNS{
		spin:    int64(cfg.SpinMS)*int64(time.Millisecond) + int64(m.CPUPerRequest),
		wait:    int64(cfg.WaitMS) * int64(time.Millisecond),
		stall:   int64(cfg.StallMS) * int64(time.Millisecond),
		quantum: int64(orDefault(m.quantum, labsvc.SpinQuantum)),
		own:     int64(m.CPUPerRequest),

		lock:      int64(cfg.LockMS) * int64(time.Millisecond),
		coherency: int64(cfg.CoherencyUS) * int64(time.Microsecond),
	}
	// The lab's own work on a request is not a turn of its own: the live
	// lab's runs outside the spins' turns, on the same processors, so each
	// turn takes a little longer and a spin takes as many turns as its
	// SPIN_MS alone would. Spread over the turns, it stretches the quantum
	// by the same share as the spin.
	if spin := int64(cfg.SpinMS) * int64(time.Millisecond); m.CPUPerRequest > 0 && spin > 0 {
		k.quantum = k.quantum * k.spin / spin
	}
	return k
}

// nextChange is when the window's next knob change is due.
func (s *window) nextChange() int64 {
	if s.changed < len(s.w.Changes) {
		return int64(s.w.Changes[s.changed].At)
	}
	return never
}

// change makes the window's next knob change at t, as the lab's POST
// /config does: a new POLICY or LIMIT starts a fresh policy at once
// (counting the requests inside, having learned nothing); a new WORKERS
// holds at once (resize); SPIN_MS, WAIT_MS, STALL_MS, LOCK_MS and
// COHERENCY_US hold for requests whose service begins from now on,
// STALL_EVERY for requests admitted from now on (counted on from the
// window's start).
func (s *window) change(t int64) {
	was, next := s.cfgs[s.changed], s.cfgs[s.changed+1]
	s.changed++
	if next.Policy != was.Policy || next.Limit != was.Limit {
		// CheckChanges has checked it: the lab's SetConfig takes it.
		_ = s.door.Set(next.Policy, next.Limit)
	}
	if next.Dist != was.Dist {
		s.demand = next.Dist.Sampler()
	}
	if next.Workers != was.Workers {
		_ = s.door.SetWorkers(next.Workers) // 1 or more: CheckChanges has checked it
		s.resize(was.Workers, next.Workers, t)
	}
}

// resize changes the workers from was to now at t, as the lab does. More:
// busy workers that were to stop go on (and take from the queue when
// done, as any worker does); each worker added beyond them takes the
// oldest queued request at once (asking the policy, which may drop it) or
// is free. Fewer: free workers stop at once, then busy ones as each
// finishes the request it holds (finish), so none is abandoned.
func (s *window) resize(was, now int, t int64) {
	if now < was {
		fewer := was - now
		free := min(fewer, s.idle)
		s.idle -= free
		s.retire += fewer - free
		return
	}
	more := now - was
	kept := min(more, s.retire)
	s.retire -= kept
	s.advance(t)
	for range more - kept {
		q, ok := s.take(t)
		if !ok {
			s.idle++
			continue
		}
		if !s.begin(q, t) {
			s.finish(q.job, t, t)
		}
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// run processes events in time order until every sent request has ended
// for its caller and nothing more is due to be sent. At one instant the
// lab's events come first (a worker finishing frees itself before the
// door sees a new caller), then callers giving up or reading a refusal,
// then sends. A knob change due at an instant comes before all of them.
func (s *window) run() {
	for !s.tooMany {
		tLab, which := s.nextLab()
		tEnd, isRefusal := s.nextEnd()
		tSend := s.nextSend()
		tChange := s.nextChange()
		tSample := s.nextSample
		switch {
		case tLab == never && tEnd == never && tSend == never:
			return
		case tSend == never && s.inFlight == 0:
			// Nothing more to send and no caller waiting: the window is
			// over, whatever the lab still has to do, and changes not yet
			// due are not made.
			return
		case tSample <= tChange && tSample <= tLab && tSample <= tEnd && tSample <= tSend:
			s.sample()
		case tChange <= tLab && tChange <= tEnd && tChange <= tSend:
			s.change(tChange)
		case tLab <= tEnd && tLab <= tSend:
			s.lab(tLab, which)
		case tEnd <= tSend:
			s.callerEnd(tEnd, isRefusal)
		default:
			s.send(tSend)
		}
	}
}

// sample reads the lab at a boundary of a run over time, as a live run
// reads GET /stats there: before anything else due at that instant.
func (s *window) sample() {
	s.labAt = append(s.labAt, s.stats())
	if s.retry != nil && s.retry.Spec().Breaker > 0 {
		s.breakerAt = append(s.breakerAt, s.retry.State(time.Duration(s.nextSample)))
	}
	s.nextSample += s.every
}

// stats is the lab's GET /stats as it stands: its counters, its queue,
// the requests in service, its policy's limit and what it dropped.
func (s *window) stats() result.LabStats {
	st := result.LabStats{
		Accepted:     s.admitted,
		Refused:      s.refused,
		Done:         s.done,
		Queued:       s.queue.len(),
		QueuedMax:    s.queuedMax,
		InService:    s.inService(),
		ProcessCPUMS: float64(s.cpuNS) / 1e6,
		Dropped:      s.dropped,
		PolicyLimit:  s.door.Limit(),
	}
	of := func(c admit.Class) result.LabClass {
		k := s.byClass[c]
		return result.LabClass{Accepted: k.accepted, Refused: k.refused, Dropped: k.dropped, Done: k.done, Inside: int(k.accepted - k.done - k.dropped)}
	}
	st.Classes = result.LabClasses{Critical: of(admit.Critical), Default: of(admit.Normal), Sheddable: of(admit.Sheddable)}
	if s.done > 0 {
		n := float64(s.done)
		mean := float64(s.serviceNS) / n / 1e6
		st.ServiceMS = result.LabSummary{N: int(s.done), Mean: mean}
		if mean > 0 {
			st.ServiceMS.SCV = max(0, s.serviceSq/n-mean*mean) / (mean * mean)
		}
		st.QueueWaitMS = result.LabSummary{N: int(s.done), Mean: float64(s.waitNS) / n / 1e6}
	}
	return st
}

// The lab's event sources.
const (
	evSpin = iota
	evWait
	evStall
)

// nextLab returns the time of the lab's next event and its source.
func (s *window) nextLab() (int64, int) {
	t, which := int64(never), -1
	for i := range s.turns {
		if at := s.turns[i].end; at < t {
			t, which, s.ending = at, evSpin, i
		}
	}
	if !s.waits.empty() {
		if at := s.waits.peek().at; at < t {
			t, which = at, evWait
		}
	}
	if !s.stalls.empty() {
		if at := s.stalls.peek().at; at < t {
			t, which = at, evStall
		}
	}
	return t, which
}

// advance counts the processors' busy time up to t.
func (s *window) advance(t int64) {
	if t > s.last {
		s.cpuNS += (t - s.last) * int64(len(s.turns))
	}
	s.last = t
}

// play starts tr's turn on a processor at t: a quantum, or all it needs
// if nobody waits (a spin that joins the line later cuts it to the
// quantum's end: wait).
func (s *window) play(tr turn, t int64) turn {
	tr.start, tr.end = t, t+tr.rem
	if !s.line.empty() {
		tr.end = t + min(tr.rem, s.knobs[tr.knobs].quantum)
	}
	return tr
}

// wait puts a spin that needs rem, taken at took, on a processor at t, or
// in line for one. A spin joining an empty line ends the turns on the
// processors at their quantum's end, the next multiple of the quantum
// after t from their start (at t itself the lab's events came first:
// those turns went on, nobody waiting).
func (s *window) wait(tr turn, t int64) {
	if len(s.turns) < s.m.Lab.CPUs {
		s.turns = append(s.turns, s.play(tr, t))
		return
	}
	if s.line.empty() {
		for i := range s.turns {
			r := &s.turns[i]
			q := s.knobs[r.knobs].quantum
			r.end = min(r.end, r.start+((t-r.start)/q+1)*q)
		}
	}
	s.line.push(tr)
}

// spun moves the job of turn r, its spin done at t, on to its wait.
func (s *window) spun(r turn, t int64) {
	if !s.afterSpin(r.job, r.took, r.knobs, t) {
		s.finish(r.job, r.took, t)
	}
}

// afterSpin moves job j, taken at took, its spin done at t (or none to
// do), on to the lab's lock and its wait, with the knobs knobs[k]: it
// holds the lock for LOCK_MS from when the last in line lets go of it, or
// from t if that is later, then waits WAIT_MS, as the lab does when its
// own work takes no time. It reports false when there is neither (the
// job finishes at t).
func (s *window) afterSpin(j int32, took int64, k int32, t int64) bool {
	kn := &s.knobs[k]
	wait := scaled(kn.wait, s.scale[j]) // WAIT_MS times its DIST factor
	if kn.lock > 0 {
		s.lockFree = max(t, s.lockFree) + kn.lock
		t = s.lockFree
	} else if wait == 0 {
		return false
	}
	insert(&s.waits, timer{at: t + wait, took: took, job: j})
	return true
}

// lab handles the lab's event at t.
func (s *window) lab(t int64, which int) {
	s.advance(t)
	switch which {
	case evSpin:
		// A turn ends: its spin is done, or its quantum is up.
		i := s.ending
		r := s.turns[i]
		r.rem -= t - r.start
		switch {
		case r.rem > 0 && s.line.empty():
			s.turns[i] = s.play(r, t) // nobody waits: it goes on
		case r.rem > 0:
			s.line.push(r) // to the back of the line
			s.turns[i] = s.play(s.line.pop(), t)
		case s.line.empty():
			s.turns[i] = s.turns[len(s.turns)-1]
			s.turns = s.turns[:len(s.turns)-1]
		default:
			s.turns[i] = s.play(s.line.pop(), t)
		}
		if r.rem <= 0 {
			s.spun(r, t)
		}
	case evWait:
		w := s.waits.pop()
		s.finish(w.job, w.took, t)
	case evStall:
		w := s.stalls.pop()
		s.finish(w.job, w.took, t)
	}
}

// begin puts job q in service at t: it spins, then waits, or stalls, as
// the knobs in force at t say. It reports false when the job needs no time
// at all (it finishes at t).
func (s *window) begin(q queued, t int64) bool {
	j := q.job
	k := &s.knobs[s.changed]
	switch {
	case q.stall:
		if k.stall == 0 {
			return false
		}
		insert(&s.stalls, timer{at: t + k.stall, took: t, job: j})
	case k.spin > 0 || k.coherency > 0 && s.inService() > 1:
		// COHERENCY_US for each other request in service as the spin
		// starts, the job itself counted in.
		rem := k.spinOf(s.scale[j]) + k.coherency*int64(s.inService()-1)
		s.wait(turn{rem: rem, took: t, job: j, knobs: int32(s.changed)}, t)
	default:
		return s.afterSpin(j, t, int32(s.changed), t)
	}
	return true
}

// inService is the lab's in_service now: admitted, not done, dropped or
// queued.
func (s *window) inService() int {
	return int(s.admitted - s.done - s.dropped - int64(s.queue.len()))
}

// finish completes job j, taken at took, at t, answers its caller if it
// still listens, and lets the worker take the oldest queued job (or go
// idle), or stop if WORKERS fell while it was busy.
func (s *window) finish(j int32, took, t int64) {
	for {
		s.done++
		s.byClass[s.class[j]].done++
		service := t - took
		s.serviceNS += service
		s.serviceSq += float64(service) * float64(service) / 1e12
		r := &s.rec[j]
		s.waitNS += took - int64(r.Sent)
		s.door.Done(time.Duration(t), time.Duration(t)-r.Sent, admit.Served)
		if r.Outcome == result.Unfinished && t <= int64(r.Sent)+s.timeoutNS {
			r.Outcome, r.Status, r.End = result.OK, 200, time.Duration(t)
			r.QueueWaitMS = headerMS(took - int64(r.Intended))
			r.ServiceMS = headerMS(service)
			s.callerDone(j, t)
		}
		if s.retire > 0 {
			s.retire--
			return
		}
		q, ok := s.take(t)
		if !ok {
			s.idle++
			return
		}
		if s.begin(q, t) {
			return
		}
		j, took = q.job, t
	}
}

// take takes the next queued job for a worker at t (the oldest; with
// classes, the oldest of the most critical class waiting), asking the
// policy first: the jobs it drops (they waited too long, sojourn) are
// refused then, as the lab refuses them. ok is false when none is left.
func (s *window) take(t int64) (q queued, ok bool) {
	for !s.queue.empty() {
		q = s.queue.pop()
		r := &s.rec[q.job]
		if s.door.Start(time.Duration(t), time.Duration(t)-r.Sent) {
			return q, true
		}
		s.dropped++
		s.refused++
		s.byClass[q.class].dropped++
		s.byClass[q.class].refused++
		// Its caller reads the 503 a refusal's time later, unless it
		// gives up first (then it has, or will have, its gaveup).
		if r.Outcome == result.Unfinished && t+s.refuseNS <= int64(r.Sent)+s.timeoutNS {
			r.Outcome, r.Status, r.End = result.Refused, 503, time.Duration(t+s.refuseNS)
			s.refusals.push(timer{at: t + s.refuseNS, job: q.job})
		}
	}
	return queued{}, false
}

// headerMS is a time as the lab writes it in X-Queue-Wait-Ms and
// X-Service-Ms: milliseconds to the microsecond.
func headerMS(ns int64) float64 { return float64((ns+500)/1000) / 1e3 }

// callerDone ends a caller's request at t; a closed-loop client sends its
// next one after its think time.
func (s *window) callerDone(j int32, t int64) {
	s.inFlight--
	s.end = max(s.end, t)
	if s.hedge != nil {
		if s.hedged[s.of[j]] != nil {
			s.answered(j, t)
		} else if s.rec[j].Outcome == result.OK {
			s.hedge.Observe(time.Duration(t - int64(s.rec[j].Sent))) // answered before any copy
		}
	}
	if s.w.Clients > 0 {
		s.sends.push(timer{at: t + int64(s.w.Think), job: s.client[j]})
	}
	if s.retry != nil {
		// The lab's 503 asks to wait a second (admit.RetryAfter).
		var after time.Duration
		if s.rec[j].Outcome == result.Refused {
			after = time.Second
		}
		r := s.rec[j]
		if again, at := s.retry.Retry(time.Duration(t), r.Attempt, r, after); again {
			push(&s.retries, timer{at: int64(at), took: s.decided, job: j})
			s.decided++
		}
	}
}

// push puts a retry or copy due in its heap.
func push(hp *[]timer, t timer) {
	h := append(*hp, t)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !earlier(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	*hp = h
}

// pop takes the retry or copy due first out of its heap.
func pop(hp *[]timer) timer {
	h := *hp
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && earlier(h[l], h[m]) {
			m = l
		}
		if l+1 < n && earlier(h[l+1], h[m]) {
			m = l + 1
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*hp = h
	return top
}

// earlier orders retries by when they are due, then by when they were
// decided.
func earlier(a, b timer) bool {
	return a.at < b.at || a.at == b.at && a.took < b.took
}

// nextEnd is when the next caller gives up or reads its refusal.
func (s *window) nextEnd() (int64, bool) {
	// Callers that have their answer (or were not sent) no longer wait
	// to give up.
	for s.giveup < len(s.rec) && s.rec[s.giveup].Outcome != result.Unfinished {
		s.giveup++
	}
	t, refusal := int64(never), false
	if s.giveup < len(s.rec) {
		t = int64(s.rec[s.giveup].Sent) + s.timeoutNS
	}
	if !s.refusals.empty() {
		if at := s.refusals.peek().at; at < t {
			t, refusal = at, true
		}
	}
	return t, refusal
}

// callerEnd handles a caller giving up, or reading its 503, at t.
func (s *window) callerEnd(t int64, refusal bool) {
	if refusal {
		s.callerDone(s.refusals.pop().job, t)
		return
	}
	j := int32(s.giveup)
	s.giveup++
	r := &s.rec[j]
	r.Outcome, r.Reason, r.End = result.Gaveup, result.ReasonReadTimeout, time.Duration(t)
	s.callerDone(j, t)
}

// nextSend is when the next request is due: the next scheduled arrival
// (open loop) or the next client's (closed loop; a client whose next send
// would be at or after the window's length stops).
func (s *window) nextSend() int64 {
	if s.w.Clients == 0 {
		t := int64(never)
		if s.next < len(s.w.Schedule) {
			t = int64(s.w.Schedule[s.next])
		}
		if len(s.retries) > 0 {
			t = min(t, s.retries[0].at)
		}
		if len(s.hedges) > 0 {
			t = min(t, s.hedges[0].at)
		}
		return t
	}
	for !s.sends.empty() && s.sends.peek().at >= s.length {
		s.sends.pop()
	}
	if s.sends.empty() {
		return never
	}
	return s.sends.peek().at
}

// send sends the next request at t and the door admits, hands or refuses
// it: a closed-loop client's, the schedule's next arrival, or a retry due
// (after the schedule's arrival due at the same instant).
func (s *window) send(t int64) {
	client := int32(-1)
	arrival := -1
	switch {
	case s.w.Clients > 0:
		if len(s.rec) == result.MaxArrivals {
			s.tooMany = true
			return
		}
		client = s.sends.pop().job
	case s.next < len(s.w.Schedule) && int64(s.w.Schedule[s.next]) <= t:
		arrival = s.next
		s.next++
	case len(s.retries) > 0 && s.retries[0].at <= t:
		s.sendRetry(pop(&s.retries), t)
		return
	default:
		s.sendCopy(pop(&s.hedges), t)
		return
	}
	j := s.newRecord(t)
	if client >= 0 {
		s.client = append(s.client, client)
	}
	r := &s.rec[j]
	if arrival >= 0 {
		r.Seq = arrival
		if s.w.Classes != nil {
			r.Class = s.w.Classes[arrival]
		}
	}
	// A fanned-out arrival's other sub-requests: numbered after the
	// arrivals, sent with it or not at all.
	for sub := 1; sub < s.k; sub++ {
		js := s.newRecord(t)
		rs, r0 := &s.rec[js], s.rec[j]
		rs.Seq, rs.Request, rs.Sub, rs.Class = len(s.w.Schedule)+r0.Seq*(s.k-1)+sub-1, r0.Seq, sub, r0.Class
	}
	if client < 0 && s.inFlight+s.k > s.maxIn {
		for i := range s.k {
			r := &s.rec[int(j)+i]
			r.Outcome, r.Reason = result.NotSent, s.full
		}
		return
	}
	if s.retry != nil && !s.retry.Send(time.Duration(t), true) {
		r.Outcome, r.Reason = result.NotSent, result.ReasonBreakerOpen
		return
	}
	for i := range s.k {
		s.attempt(j+int32(i), t)
		if s.hedge != nil {
			s.firstCopy(j+int32(i), t)
		}
	}
}

// copies is a hedged (sub-)request: its records (copy 0 first), its
// delay and send, and whether a copy has answered ok.
type copies struct {
	recs        [6]int32 // hedge.Spec's Max is at most 5
	n           int
	delay, base int64
	won         bool
}

// firstCopy starts hedging (sub-)request j, sent at t: its first copy is
// due the client's delay later (none before a percentile's warmup).
func (s *window) firstCopy(j int32, t int64) {
	d, ok := s.hedge.Delay()
	if !ok {
		return
	}
	if s.hedged == nil {
		s.hedged = map[int32]*copies{}
	}
	c := &copies{n: 1, delay: int64(d), base: t}
	c.recs[0] = j
	s.hedged[j] = c
	s.of[j] = j
	push(&s.hedges, timer{at: t + c.delay, took: s.decided, job: j})
	s.decided++
}

// out says whether record j's caller still waits for its answer at t.
func (s *window) out(j int32, t int64) bool {
	r := &s.rec[j]
	return r.Outcome == result.Unfinished || r.Outcome == result.Refused && int64(r.End) > t
}

// sendCopy sends the copy due at t of (sub-)request h.job, while none
// of its copies has answered ok, one is still out and the in-flight cap
// has room; then its next copy is due, up to the spec's Max.
func (s *window) sendCopy(h timer, t int64) {
	c := s.hedged[h.job]
	still := false
	for _, j := range c.recs[:c.n] {
		still = still || s.out(j, t)
	}
	if c.won || !still {
		return
	}
	if s.inFlight < s.maxIn {
		first := s.rec[h.job]
		j := s.newRecord(t)
		r := &s.rec[j]
		r.Seq = len(s.w.Schedule)*s.k + s.copied
		s.copied++
		r.Request, r.Sub, r.Copy, r.Class = first.LogicalSeq(), first.Sub, c.n, first.Class
		c.recs[c.n] = j
		s.of[j] = h.job
		s.attempt(j, t)
	}
	if c.n++; c.n <= s.hedge.Spec().Max {
		push(&s.hedges, timer{at: c.base + int64(c.n)*c.delay, took: s.decided, job: h.job})
		s.decided++
	}
}

// answered is told that copy j of a hedged (sub-)request answered at t:
// an ok answer wins and the copies still out are cancelled (their
// callers stop listening; the lab still serves them). The client is fed
// the latencies of the copies that answered ok and of those cancelled
// after more than the delay (package hedge).
func (s *window) answered(j int32, t int64) {
	c := s.hedged[s.of[j]]
	if c == nil || c.won || s.rec[j].Outcome != result.OK {
		return
	}
	c.won = true
	s.hedge.Observe(time.Duration(t - int64(s.rec[j].Sent)))
	for _, o := range c.recs[:c.n] {
		r := &s.rec[o]
		if o == j || r.Outcome != result.Unfinished {
			continue
		}
		r.Outcome, r.End = result.Cancelled, time.Duration(t)
		s.inFlight--
		if lat := t - int64(r.Sent); lat > c.delay {
			s.hedge.Observe(time.Duration(lat))
		}
	}
}

// sendRetry sends the retry rt due at t, of the attempt rt.job, when the
// in-flight cap has room and the breaker lets it through; otherwise its
// request ended with that attempt, and there is no record.
func (s *window) sendRetry(rt timer, t int64) {
	if s.inFlight >= s.maxIn || !s.retry.Send(time.Duration(t), false) {
		return
	}
	prev := s.rec[rt.job]
	j := s.newRecord(t)
	r := &s.rec[j]
	r.Seq = len(s.w.Schedule) + s.retried
	s.retried++
	r.Request, r.Attempt, r.Class = prev.LogicalSeq(), prev.Attempt+1, prev.Class
	s.attempt(j, t)
}

// newRecord starts the record of a request sent (or due) at t, numbered
// in send order, and returns its index.
func (s *window) newRecord(t int64) int32 {
	j := int32(len(s.rec))
	// Fields are set in place: the records are most of the simulation's
	// memory traffic.
	if len(s.rec) < cap(s.rec) {
		s.rec = s.rec[:j+1]
	} else {
		s.rec = append(s.rec, result.Record{})
	}
	s.class = append(s.class, admit.Normal) // set as it is sent (attempt)
	if s.hedge != nil {
		s.of = append(s.of, -1) // a hedged (sub-)request's first copy: firstCopy
	}
	s.scale = append(s.scale, 1) // drawn as it is admitted (attempt)
	r := &s.rec[j]
	r.Window, r.Seq = s.w.Index, int(j)
	r.Intended, r.Sent, r.End = time.Duration(t), time.Duration(t), time.Duration(t)
	r.QueueWaitMS, r.ServiceMS = -1, -1
	return j
}

// attempt sends request j at t: the door admits, hands or refuses it.
func (s *window) attempt(j int32, t int64) {
	r := &s.rec[j]
	class := s.arrivalClass(j)
	s.class[j] = class
	s.inFlight++
	if !s.door.AdmitClass(time.Duration(t), s.idle, s.queue.len(), class) {
		s.refused++
		s.byClass[class].refused++
		r.Outcome, r.Status, r.End = result.Refused, 503, time.Duration(t+s.refuseNS)
		s.refusals.push(timer{at: t + s.refuseNS, job: j})
		return
	}
	s.admitted++
	s.byClass[class].accepted++
	s.scale[j] = s.demand.Next()
	every := int64(s.cfgs[s.changed].StallEvery)
	q := queued{job: j, stall: every > 0 && s.admitted%every == 0, class: class}
	if s.idle > 0 {
		s.door.Start(time.Duration(t), 0) // a caller that did not wait is served
		s.idle--
		s.advance(t)
		if !s.begin(q, t) {
			s.finish(j, t, t)
		}
		return
	}
	s.queue.push(q, s.door.Classes())
	s.queuedMax = max(s.queuedMax, s.queue.len())
}

// arrivalClass is the class request j (record j) carries as its
// X-Criticality: its record's (the window's Classes, a retry its
// request's), unless a test gave the simulation classes of its own
// (WithClasses). The door (AdmitClass), the queue's lanes and the counts
// by class follow it.
func (s *window) arrivalClass(j int32) admit.Class {
	if s.m.classOf != nil {
		return s.m.classOf(int(j))
	}
	switch s.rec[j].Class {
	case result.Critical:
		return admit.Critical
	case result.Sheddable:
		return admit.Sheddable
	}
	return admit.Normal
}

// result folds the records into the window's statistics with result's
// Metrics, as loadrun folds a real window's, and reports the lab's counters at the last caller's end.
func (s *window) result() (result.Result, result.LabStats, error) {
	s.advance(max(s.end, s.last))
	var breaker []string
	if s.retry != nil && s.retry.Spec().Breaker > 0 {
		breaker = append(s.breakerAt, s.retry.State(time.Duration(s.end)))
	}
	if s.retried > 0 || s.k > 1 || s.copied > 0 {
		slices.SortFunc(s.rec, func(a, b result.Record) int { return cmp.Compare(a.Seq, b.Seq) })
	}
	// Rows count logical requests, each with its attempts, and a
	// fanned-out window's sub-requests (result.Fold returns the records as
	// they are when nothing was retried, fanned out or hedged).
	logical, subs := result.Fold(s.rec)
	m := &result.Metrics{}
	m.Grow(len(logical))
	m.GrowSub(len(subs))
	for _, r := range logical {
		m.Add(r)
	}
	for _, r := range subs {
		m.AddSub(r)
	}
	return result.Result{Records: s.rec, Metrics: m, Elapsed: time.Duration(s.end), Changed: s.changed, Lab: s.labAt, Breaker: breaker}, s.stats(), nil
}
