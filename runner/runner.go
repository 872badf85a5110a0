package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"capacitylab/labsvc"
	"capacitylab/measure"
	"capacitylab/result"
	"capacitylab/store"
)

// Defaults of Config.
const (
	DefaultQueueCapacity    = 8   // runs in the queue, the running ones included
	DefaultConcurrent       = 1   // runs at once: more would measure each other
	DefaultSubscriberBuffer = 256 // live events a watcher may fall behind before it is dropped
	DefaultRetain           = 16  // finished runs whose event logs stay in memory (about 1 MB each at most)
	// DefaultPerAddress is how many runs one client address may have
	// waiting or running at once (learners behind one address, such as
	// a school's, share it): no one client can hold the queue.
	DefaultPerAddress = 3
	// WindowOverhead is what a window costs beyond its seconds, for
	// estimates: the pause (measure.WindowPause), draining, resetting, the
	// last requests' tail.
	WindowOverhead = measure.WindowPause + 250*time.Millisecond
	// StartOverhead is what starting and stopping a run's two children
	// costs, for estimates.
	StartOverhead = time.Second
	// saveTimeout bounds each write to the store, its tries again while
	// the database cannot be reached included (save): an outage shorter
	// than this delays a run's writes, one longer fails the run.
	saveTimeout = 2 * time.Minute
)

// Errors Submit and Cancel return for requests that cannot be served. The
// learner's own mistakes in a request come back as FieldErrors.
var (
	ErrQueueFull     = errors.New("the queue of runs is full")
	ErrAlreadyQueued = errors.New("you already have a run waiting or running")
	ErrClosed        = errors.New("the runner is shutting down")
	ErrNoRun         = errors.New("no such run")
	ErrNotYours      = errors.New("the run belongs to someone else")
	ErrFinished      = errors.New("the run has already finished")
)

// QueueFullError is ErrQueueFull with when to try again.
type QueueFullError struct {
	RetryAfter time.Duration // estimated time until a place frees up
}

func (e *QueueFullError) Error() string {
	return fmt.Sprintf("%v: try again in about %v", ErrQueueFull, e.RetryAfter.Round(time.Second))
}

// Unwrap makes errors.Is(err, ErrQueueFull) true.
func (e *QueueFullError) Unwrap() error { return ErrQueueFull }

// ErrAddressShare is returned when a client address already has its
// share of the queue.
var ErrAddressShare = errors.New("this address already has its share of runs waiting or running")

// ShareError is ErrAddressShare with the share and when to try again.
type ShareError struct {
	Share      int           // runs one address may have waiting or running
	RetryAfter time.Duration // estimated time until one of them ends
}

func (e *ShareError) Error() string {
	return fmt.Sprintf("%v (%d): try again in about %v", ErrAddressShare, e.Share, e.RetryAfter.Round(time.Second))
}

// Unwrap makes errors.Is(err, ErrAddressShare) true.
func (e *ShareError) Unwrap() error { return ErrAddressShare }

// AlreadyQueuedError is ErrAlreadyQueued with the run in the way.
type AlreadyQueuedError struct {
	ID string // the learner's run that is waiting or running
}

func (e *AlreadyQueuedError) Error() string {
	return fmt.Sprintf("%v (run %s): cancel it or wait for it to finish", ErrAlreadyQueued, e.ID)
}

// Unwrap makes errors.Is(err, ErrAlreadyQueued) true.
func (e *AlreadyQueuedError) Unwrap() error { return ErrAlreadyQueued }

// Saver is the storage a Runner writes every run to. *store.Store
// implements it.
type Saver interface {
	SaveRun(ctx context.Context, r store.Run) error
	// WriteRun stores a run's events, with a window's records and row or
	// the run's end, in one write fenced by owner's claim on the run.
	WriteRun(ctx context.Context, id, owner string, w store.RunWrite) error
}

// Config configures a Runner. Lab and Load are required; zero values
// elsewhere take the defaults.
type Config struct {
	Lab              labsvc.ChildCommand // how to start a run's lab child (the server re-executes itself with "lab-child")
	Load             labsvc.ChildCommand // how to start a run's load child (the server re-executes itself with "load-child")
	QueueCapacity    int                 // runs in the queue, running ones included; DefaultQueueCapacity
	PerAddress       int                 // runs one client address may have waiting or running; DefaultPerAddress
	Concurrent       int                 // runs at once; DefaultConcurrent
	Limits           Limits              // sandbox caps; HostLimits() when MaxRates is 0
	SubscriberBuffer int                 // DefaultSubscriberBuffer
	Retain           int                 // DefaultRetain
	DrainWait        time.Duration       // how long the lab may take to drain between windows; 0: loadrun.DefaultDrainWait
	Generator        []int               // processors kept free for load children (measure.Config.Generator); nil: all but the lab's
	Store            Saver               // nil: runs are kept in memory only
	// EventBatch is the most events one write to the store carries
	// (with a store): every event waiting when the last write ended, up
	// to this; 0 for no bound. 1 writes each event on its own.
	EventBatch int
	Logger     *slog.Logger          // nil: discard
	Registerer prometheus.Registerer // where the runner's metrics go; nil: none
	Now        func() time.Time      // nil: time.Now
	// Finished, if set, is told of each run that started once it has
	// ended (saved, its terminal event sent), outside the runner's lock:
	// package lti posts the learner's new score when a lab run is done.
	Finished func(learner, lesson, block string, status store.RunStatus)
}

// Ticket is what Submit returns: the new run's id and place in the queue.
type Ticket struct {
	ID             string    `json:"id"`
	Position       int       `json:"position"` // 1 = next to start
	EstimatedStart time.Time `json:"estimated_start"`
}

// Snapshot is a run as the runner holds it now.
type Snapshot struct {
	ID             string          `json:"id"`
	Learner        string          `json:"-"`
	Request        Request         `json:"request"`
	Status         store.RunStatus `json:"status"`
	Reason         string          `json:"reason,omitempty"`
	Position       int             `json:"position,omitempty"` // queued only
	EstimatedStart time.Time       `json:"estimated_start,omitzero"`
	CreatedAt      time.Time       `json:"created_at"`
	StartedAt      time.Time       `json:"started_at,omitzero"`
	EndedAt        time.Time       `json:"ended_at,omitzero"`
	Rows           []result.Row    `json:"rows"`
	// Samples are a run over time's seconds so far (its sample events'),
	// in order; none for other runs.
	Samples []result.Sample `json:"samples,omitempty"`
	LastSeq int             `json:"last_seq"`
	// Starting: the run is running but its lab and load children are
	// not up yet (no started event): the lab is starting.
	Starting bool `json:"starting,omitempty"`
	LabPID   int  `json:"-"` // the running lab child's process id, 0 when none
	LoadPID  int  `json:"-"` // the running load child's process id, 0 when none
}

// run is one run's state; fields other than id, learner, req and log are
// guarded by Runner.mu.
type run struct {
	id       string
	learner  string
	addr     string // the client address that asked ("" for class runs)
	owner    string // the runner that claimed it (store.ClaimRun); "" for a run of this queue
	req      Request
	estimate time.Duration
	log      *eventLog

	status    store.RunStatus
	reason    string
	created   time.Time
	started   time.Time
	ended     time.Time
	rows      []result.Row
	samples   []result.Sample         // a run over time's, as logged
	ctx       context.Context         // set while running
	cancel    context.CancelCauseFunc // set while running
	cancelled bool                    // the learner asked to cancel
	measuring bool                    // its children are up: the started event is logged
	labPID    int                     // the lab child's pid while it runs
	loadPID   int                     // the load child's pid while it runs
	saveErr   error                   // the first failure to store its rows or records
}

// Runner is the queue of sweep runs: bounded, one run at a time by
// default, one waiting or running run per learner. Each run is one
// measure.Measure: a lab child and a load child of its own. Every run has an event
// log that watchers subscribe to from any sequence number.
type Runner struct {
	cfg    Config
	limits Limits
	log    *slog.Logger
	now    func() time.Time
	met    *metrics // nil without Config.Registerer

	ctx    context.Context
	stop   context.CancelCauseFunc
	wake   chan struct{}
	wg     sync.WaitGroup
	closed chan struct{}

	mu       sync.Mutex
	queue    []*run          // waiting, oldest first
	running  map[string]*run // by id
	byID     map[string]*run // queued, running and the last Retain finished
	finished []string        // ids of finished runs in byID, oldest first
	shut     bool
}

// UnsavedEndReason is the reason of a stored run left queued or running
// with no runner holding it: the server stopped (or was killed) first, or
// could not store the run's end (a full disk). cmd/server marks such runs
// interrupted with it at start, and package web shows them so.
const UnsavedEndReason = "The server stopped before this run's end was saved (it was waiting or running, or the disk was full when it ended); " +
	"the rows stored before are kept. Run it again."

// errShutdown is the cause a running run's context ends with at Close.
var errShutdown = errors.New("the server is shutting down")

// errCancelled is the cause when the learner cancels.
var errCancelled = errors.New("cancelled by its owner")

// New starts a Runner; Close stops it.
func New(cfg Config) (*Runner, error) {
	if cfg.Lab.Path == "" {
		return nil, errors.New("runner: Config.Lab.Path is empty: want the program that runs a lab child")
	}
	if cfg.Load.Path == "" {
		return nil, errors.New("runner: Config.Load.Path is empty: want the program that runs a load child")
	}
	if cfg.QueueCapacity <= 0 {
		cfg.QueueCapacity = DefaultQueueCapacity
	}
	if cfg.Concurrent <= 0 {
		cfg.Concurrent = DefaultConcurrent
	}
	if cfg.PerAddress <= 0 {
		cfg.PerAddress = DefaultPerAddress
	}
	if cfg.SubscriberBuffer <= 0 {
		cfg.SubscriberBuffer = DefaultSubscriberBuffer
	}
	if cfg.Retain <= 0 {
		cfg.Retain = DefaultRetain
	}
	limits := cfg.Limits
	if limits.MaxRates == 0 {
		limits = HostLimits()
	}
	r := &Runner{
		cfg:     cfg,
		limits:  limits,
		log:     cfg.Logger,
		now:     cfg.Now,
		wake:    make(chan struct{}, cfg.Concurrent),
		closed:  make(chan struct{}),
		running: map[string]*run{},
		byID:    map[string]*run{},
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	if cfg.Registerer != nil {
		r.met = newMetrics(cfg.Registerer, r)
	}
	r.ctx, r.stop = context.WithCancelCause(context.Background())
	for range cfg.Concurrent {
		r.wg.Add(1)
		go r.work()
	}
	return r, nil
}

// Limits returns the caps requests are validated against.
func (r *Runner) Limits() Limits { return r.limits }

// Capacity returns how many runs the queue holds, running ones included.
func (r *Runner) Capacity() int { return r.cfg.QueueCapacity }

// Validate checks a request against the runner's limits without queueing
// it: nil or FieldErrors.
func (r *Runner) Validate(q Request) error { return r.limits.Validate(q) }

// Estimate is how long a run of q is expected to take, start to end.
func Estimate(q Request) time.Duration {
	n := time.Duration(q.Windows())
	return StartOverhead + n*(time.Duration(q.Seconds*float64(time.Second))+WindowOverhead)
}

// Submit validates q and queues it for learner. It returns FieldErrors for
// a bad request, a *QueueFullError when the queue is full, an
// *AlreadyQueuedError when the learner already has a run waiting or
// running, and ErrClosed after Close. Nothing is queued on error.
func (r *Runner) Submit(ctx context.Context, learner string, q Request) (Ticket, error) {
	return r.SubmitFrom(ctx, learner, "", q)
}

// SubmitFrom is Submit for a learner at client address addr, which may
// have at most Config.PerAddress runs waiting or running (a *ShareError
// past that); "" is not counted.
func (r *Runner) SubmitFrom(ctx context.Context, learner, addr string, q Request) (Ticket, error) {
	if learner == "" {
		return Ticket{}, errors.New("runner: Submit needs a learner id")
	}
	if err := r.limits.Validate(q); err != nil {
		return Ticket{}, err
	}
	if q.Mode == "" {
		q.Mode = ModeOpen
	}
	id, err := newID()
	if err != nil {
		return Ticket{}, err
	}
	reqJSON, err := json.Marshal(q)
	if err != nil {
		return Ticket{}, err
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shut {
		return Ticket{}, ErrClosed
	}
	for _, other := range r.queue {
		if other.learner == learner {
			return Ticket{}, &AlreadyQueuedError{ID: other.id}
		}
	}
	for _, other := range r.running {
		if other.learner == learner {
			return Ticket{}, &AlreadyQueuedError{ID: other.id}
		}
	}
	if len(r.queue)+len(r.running) >= r.cfg.QueueCapacity {
		return Ticket{}, &QueueFullError{RetryAfter: r.planLocked().UntilFree()}
	}
	if addr != "" {
		if n, wait := r.planLocked().AddressRuns(addr); n >= r.cfg.PerAddress {
			return Ticket{}, &ShareError{Share: r.cfg.PerAddress, RetryAfter: wait}
		}
	}
	now := r.now()
	var dropped func()
	if r.met != nil {
		dropped = r.met.dropped.Inc
	}
	ru := &run{id: id, learner: learner, addr: addr, req: q, estimate: Estimate(q), log: newEventLog(r.cfg.SubscriberBuffer, r.now, dropped),
		status: store.RunQueued, created: now}
	// Saved before it is queued, under the lock, so the stored status
	// never goes backwards and a 202 always names a stored run.
	if r.cfg.Store != nil {
		sr := store.Run{ID: id, Learner: learner, Lesson: q.Lesson, Block: q.Block, Request: reqJSON, Status: store.RunQueued, CreatedAt: now}
		if err := r.cfg.Store.SaveRun(ctx, sr); err != nil {
			return Ticket{}, err
		}
	}
	r.storeLog(ru)
	r.queue = append(r.queue, ru)
	r.byID[id] = ru
	pos := len(r.queue)
	start := r.startEstimateLocked(pos - 1)
	r.queueEventLocked(ru, Event{Kind: KindQueued, Position: pos, EstimatedStart: start, WindowProgress: q.at()})
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return Ticket{ID: id, Position: pos, EstimatedStart: start}, nil
}

// planLocked is the queue as its estimates see it (Plan): the running
// runs, then the queued ones in order, so the queued run at index i of
// r.queue is at len(r.running)+i.
func (r *Runner) planLocked() Plan {
	p := Plan{Slots: r.cfg.Concurrent, Now: r.now(), Runs: make([]Planned, 0, len(r.running)+len(r.queue))}
	for _, ru := range r.running {
		p.Runs = append(p.Runs, Planned{Addr: ru.addr, Running: true, Started: ru.started, Estimate: ru.estimate})
	}
	for _, ru := range r.queue {
		p.Runs = append(p.Runs, Planned{Addr: ru.addr, Estimate: ru.estimate})
	}
	return p
}

// startEstimateLocked estimates when the queued run at index i starts.
func (r *Runner) startEstimateLocked(i int) time.Time {
	return r.planLocked().StartAt(len(r.running) + i)
}

// RetryAfter is how long a learner turned away by a full queue should wait.
func (r *Runner) RetryAfter() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.planLocked().UntilFree()
}

// Cancel cancels learner's run id, queued or running. It returns ErrNoRun,
// ErrNotYours or ErrFinished when it cannot.
func (r *Runner) Cancel(id, learner string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ru, ok := r.byID[id]
	if !ok {
		return ErrNoRun
	}
	if ru.learner != learner {
		return ErrNotYours
	}
	switch ru.status {
	case store.RunQueued:
		i := slices.Index(r.queue, ru)
		r.queue = slices.Delete(r.queue, i, i+1)
		r.finishLocked(ru, store.RunCancelled, "You cancelled it before it started.", Event{Kind: KindCancelled})
		r.requeueEventsLocked(i)
		return nil
	case store.RunRunning:
		if !ru.cancelled {
			ru.cancelled = true
			ru.cancel(errCancelled)
		}
		return nil
	}
	return ErrFinished
}

// requeueEventsLocked tells every queued run from index i on its new
// position and estimated start.
func (r *Runner) requeueEventsLocked(from int) {
	for j := from; j < len(r.queue); j++ {
		ru := r.queue[j]
		r.queueEventLocked(ru, Event{Kind: KindQueued, Position: j + 1, EstimatedStart: r.startEstimateLocked(j), WindowProgress: ru.req.at()})
	}
}

// queueEventLocked logs a queued run's event and waits until it is
// stored, the lock held, as its status is (saveLocked): what the store
// says of the queue is never behind what the runner answers.
func (r *Runner) queueEventLocked(ru *run, e Event) {
	if logged := ru.log.append(e); logged.Seq != 0 {
		ru.log.wait(logged.Seq)
	}
}

// finishLocked ends a run: status, reason, end time, and its terminal
// event, stored with its final state in one write (storeLog), before any
// watcher has it; it waits for that write with the lock held, which keeps
// the stored status in step with the queue. A run is reported done only
// once that is stored: when a write fails for good the log ends with a
// failed event saying so instead, and the run ends as that event says
// (and, unless the run was ended elsewhere, its end is stored later:
// keepEnd).
func (r *Runner) finishLocked(ru *run, status store.RunStatus, reason string, e Event) {
	ru.status, ru.reason, ru.ended = status, reason, r.now()
	e.Reason = reason
	end := r.storedRun(ru)
	if logged := ru.log.add(pending{e: e, end: &end}); logged.Seq != 0 {
		ru.log.wait(logged.Seq)
	}
	if err := ru.log.failure(); err != nil {
		// A write failed: the log ended with a failed event saying so.
		last, _ := ru.log.last()
		ru.status, ru.reason, e = store.RunFailed, last.Reason, last
		if !errors.Is(err, store.ErrNotOwner) {
			r.keepEnd(ru, last)
		}
	}
	if r.met != nil {
		r.met.runs.WithLabelValues(string(e.Kind)).Inc()
	}
	delete(r.running, ru.id)
	r.finished = append(r.finished, ru.id)
	for len(r.finished) > r.cfg.Retain {
		delete(r.byID, r.finished[0])
		r.finished = r.finished[1:]
	}
}

// storedRun is ru as the store keeps it.
func (r *Runner) storedRun(ru *run) store.Run {
	sr := store.Run{ID: ru.id, Learner: ru.learner, Lesson: ru.req.Lesson, Block: ru.req.Block, Status: ru.status, Reason: ru.reason,
		CreatedAt: ru.created, StartedAt: ru.started, EndedAt: ru.ended}
	sr.Request, _ = json.Marshal(ru.req)
	return sr
}

// keepEnd stores the end of a run whose log ended because a write failed
// (the failed event its watchers had, with the status failed), trying
// again every endRetry until it is stored, the run turns out to be ended
// elsewhere, or the runner closes: the final status a watcher saw is the
// one kept, as soon as the store can take it (a disk with room again).
func (r *Runner) keepEnd(ru *run, last Event) {
	if r.cfg.Store == nil {
		return
	}
	end := r.storedRun(ru)
	w := store.RunWrite{Events: []store.RunEvent{{Seq: last.Seq, Kind: string(last.Kind), JSON: last.JSON}}, End: &end}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			ctx, cancel := context.WithTimeout(r.ctx, saveTimeout)
			err := r.cfg.Store.WriteRun(ctx, ru.id, ru.owner, w)
			cancel()
			if err == nil || errors.Is(err, store.ErrNotOwner) {
				r.log.Info("the end of a run whose writes failed is stored", "run", ru.id, "status", end.Status, "err", err)
				return
			}
			select {
			case <-r.ctx.Done():
				r.log.Error("the end of a run was never stored: the server stopped first", "run", ru.id, "err", err)
				return
			case <-time.After(endRetry):
			}
		}
	}()
}

// endRetry is how often keepEnd tries to store a run's end again.
const endRetry = 2 * time.Second

func (r *Runner) saveLocked(ru *run) error {
	if r.cfg.Store == nil {
		return nil
	}
	sr := store.Run{ID: ru.id, Learner: ru.learner, Lesson: ru.req.Lesson, Block: ru.req.Block, Status: ru.status, Reason: ru.reason,
		CreatedAt: ru.created, StartedAt: ru.started, EndedAt: ru.ended}
	sr.Request, _ = json.Marshal(ru.req)
	err := r.save("run", ru.id, func(ctx context.Context) error { return r.cfg.Store.SaveRun(ctx, sr) })
	if err != nil {
		r.log.Error("saving run", "run", ru.id, "status", ru.status, "err", err)
	}
	return err
}

// save runs one write of run id to the store (what names it for the log),
// and while it fails because the database cannot be reached
// (store.IsUnreachable: Postgres restarting, the network to it down),
// tries again after 100 ms, doubling to 2 s, for up to saveTimeout in
// all. Every write of a run replaces what it wrote before at the same
// keys (store.WriteRun, SaveRun), so one that may have been applied
// before its connection was lost is safe to send again. So an outage of
// the database delays a run's writes (and, since each event is stored
// before it is sent, its events) instead of losing them; and the claim
// the writes are fenced by keeps a runner that was declared lost
// meanwhile from writing on.
func (r *Runner) save(what, id string, write func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	wait := 100 * time.Millisecond
	for {
		err := write(ctx)
		if err == nil || !store.IsUnreachable(err) {
			return err
		}
		r.log.Warn("the database cannot be reached: trying the write again", "write", what, "run", id, "in", wait, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// storeLog makes ru's log store its events (with a Store): each write
// carries the events waiting (at most Config.EventBatch), with a
// window's records and row or the run's end, fenced by the run's claim
// (store.WriteRun). When a write fails for good (a full disk, the run
// ended elsewhere, the database gone past saveTimeout), the log ends with
// a failed event saying so and the run is stopped.
func (r *Runner) storeLog(ru *run) {
	if r.cfg.Store == nil {
		return
	}
	l := ru.log
	l.batch = r.cfg.EventBatch
	l.write = func(batch []pending) error {
		var w store.RunWrite
		for _, p := range batch {
			w.Events = append(w.Events, store.RunEvent{Seq: p.e.Seq, Kind: string(p.e.Kind), JSON: p.e.JSON})
			w.Records = append(w.Records, p.records...)
			if p.row != nil {
				w.Rows = append(w.Rows, *p.row)
			}
			if p.end != nil {
				w.End = p.end
			}
		}
		err := r.save("events", ru.id, func(ctx context.Context) error { return r.cfg.Store.WriteRun(ctx, ru.id, ru.owner, w) })
		if err != nil {
			r.log.Error("saving run events: the run stops", "run", ru.id, "seq", w.Events[0].Seq, "err", err)
		}
		return err
	}
	l.failed = func(err error, first Event) Event {
		// Stop the run; not under this log's lock, which the runner's
		// lock may be waiting for (finishLocked).
		go r.stopUnsaved(ru, err)
		// The windows finished are those before the first event not
		// stored (a done event's window counts them all).
		e := Event{Kind: KindFailed, WindowProgress: result.WindowProgress{Window: first.Window, Windows: first.Windows}}
		if errors.Is(err, store.ErrNotOwner) {
			e.Reason = lostReason
		} else {
			e.Reason = notSavedReason(err, first.Window, ru.req.Windows())
		}
		return e
	}
}

// lostReason is the reason of a run whose writes were refused because it
// was ended elsewhere while this runner ran it.
const lostReason = "This run was ended by another server while this one was running it (its runner was taken for lost), " +
	"so the run stopped; the rows stored before are kept. Run it again."

// stopUnsaved stops a run whose log ended because a write failed.
func (r *Runner) stopUnsaved(ru *run, err error) {
	r.notSaved(ru, err)
	r.mu.Lock()
	defer r.mu.Unlock()
	if ru.cancel != nil {
		ru.cancel(errNotSaved)
	}
}

// Get returns a run the runner still holds in memory (queued, running, or
// among the last Retain finished).
func (r *Runner) Get(id string) (Snapshot, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ru, ok := r.byID[id]
	if !ok {
		return Snapshot{}, false
	}
	s := Snapshot{ID: ru.id, Learner: ru.learner, Request: ru.req, Status: ru.status, Reason: ru.reason,
		CreatedAt: ru.created, StartedAt: ru.started, EndedAt: ru.ended, Rows: slices.Clone(ru.rows), Samples: slices.Clone(ru.samples), LabPID: ru.labPID, LoadPID: ru.loadPID,
		Starting: ru.status == store.RunRunning && !ru.measuring}
	if s.Rows == nil {
		s.Rows = []result.Row{}
	}
	if i := slices.Index(r.queue, ru); i >= 0 {
		s.Position = i + 1
		s.EstimatedStart = r.startEstimateLocked(i)
	}
	if e, ok := ru.log.last(); ok {
		s.LastSeq = e.Seq
	}
	return s, true
}

// Active returns the running runs then the queued ones, in order.
func (r *Runner) Active() []Snapshot {
	r.mu.Lock()
	ids := make([]string, 0, len(r.running)+len(r.queue))
	for id := range r.running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, ru := range r.queue {
		ids = append(ids, ru.id)
	}
	r.mu.Unlock()
	out := make([]Snapshot, 0, len(ids))
	for _, id := range ids {
		if s, ok := r.Get(id); ok {
			out = append(out, s)
		}
	}
	return out
}

// Subscribe returns run id's events after seq since (every event for 0)
// and a subscription to the ones that follow. Events come exactly once and
// in order: the replay, then the subscription's channel. The caller must
// Close the subscription when it stops reading. It returns ErrNoRun for a
// run the runner does not hold in memory.
func (r *Runner) Subscribe(id string, since int) ([]Event, *Subscription, error) {
	r.mu.Lock()
	ru, ok := r.byID[id]
	r.mu.Unlock()
	if !ok {
		return nil, nil, ErrNoRun
	}
	replay, sub := ru.log.subscribe(since)
	return replay, sub, nil
}

// Watchers returns how many subscriptions to run id's events are live
// (0 for a run the runner does not hold).
func (r *Runner) Watchers(id string) int {
	r.mu.Lock()
	ru, ok := r.byID[id]
	r.mu.Unlock()
	if !ok {
		return 0
	}
	return ru.log.subscribers()
}

// Close stops the runner: queued runs and the running ones are marked
// interrupted (what was measured so far is kept), their lab children are
// stopped, and Close returns when every goroutine of the runner has ended.
func (r *Runner) Close() error {
	r.mu.Lock()
	if r.shut {
		r.mu.Unlock()
		<-r.closed
		return nil
	}
	r.shut = true
	for _, ru := range r.queue {
		r.finishLocked(ru, store.RunInterrupted, "The server stopped before this run started. Nothing was measured; run it again.", Event{Kind: KindInterrupted})
	}
	r.queue = nil
	r.mu.Unlock()
	r.stop(errShutdown)
	r.wg.Wait()
	close(r.closed)
	return nil
}

// work runs queued runs one after another until the runner stops.
func (r *Runner) work() {
	defer r.wg.Done()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.wake:
		}
		for {
			ru := r.next()
			if ru == nil {
				break
			}
			r.execute(ru)
		}
	}
}

// next takes the oldest queued run and marks it running, or returns nil.
func (r *Runner) next() *run {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) == 0 || r.shut {
		return nil
	}
	ru := r.queue[0]
	r.queue = r.queue[1:]
	ru.ctx, ru.cancel = context.WithCancelCause(r.ctx)
	ru.status, ru.started = store.RunRunning, r.now()
	if r.met != nil {
		r.met.wait.Observe(ru.started.Sub(ru.created).Seconds())
	}
	r.running[ru.id] = ru
	r.saveLocked(ru)
	r.requeueEventsLocked(0)
	return ru
}

// NewID returns a new random run id, as the runner's own runs get (for
// runs queued elsewhere: package fleet).
func NewID() (string, error) { return newID() }

// newID returns a random run id: 16 lower-case hex digits.
func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
