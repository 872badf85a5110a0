// Package fleet is the sweep queue across processes: web
// replicas (server --role web) submit runs into a River job queue on the
// shared Postgres, in the same transaction as the run's row and its first
// event (Queue), and runner processes (--role runner) take the jobs and run
// each with package runner's execution path (Node). It is a package of its
// own, not part of runner, so that runner's in-process queue (--role all,
// SQLite or Postgres) stays free of River and Postgres.
//
// The queue's rules are runner.Runner's, across replicas: at most Capacity
// runs waiting or running, one per learner, PerAddress per client address;
// each submission takes a transaction-scoped advisory lock
// (store.SubmitRun), so exactly Capacity are accepted however many arrive
// at once on however many replicas. A run's event log in the store is the
// truth: the submission stores its queued event as seq 1, a runner claims
// the run (only a queued run starts) and numbers its events after the last
// stored one, and queued runs get a queued event with their new position
// and estimate whenever a run starts or ends.
//
// Runners heartbeat every HeartbeatEvery; every runner and every web
// replica (Queue.ReapLoop) also reaps, in a plain loop rather than a
// periodic job on River's leader: any process alive ends the runs of a
// runner that is not, even when no runner is left, without waiting for a
// leader election, and the store's conditional updates make reapers racing
// end each run once: a running run whose runner's heartbeat is older than LostAfter
// ends failed, its reason beginning "runner lost", with its terminal event
// stored, so every stream of it ends. Jobs run once (MaxAttempts 1): a
// lost run is reported, never silently retried.
//
// A reaper judges heartbeats only once it has itself reached the database
// for LostAfter without a break: after an outage (Postgres stopped, or
// the network to it down) every runner alive has had that long to beat
// again, so the beats the outage kept from being written fail nothing. A
// run has one owner at a time: its runner's writes are fenced by its
// claim (store.WriteRun), so a runner taken for lost that is in fact
// alive (cut off from the database while the others were not) has its
// next write refused and stops the run, and the run keeps the one
// terminal event the reaper stored.
//
// With Config.Registerer set, a Queue exports the shared queue's depth and
// its runners for a web replica's /metrics (metrics.go).
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"capacitylab/runner"
	"capacitylab/store"
)

// Defaults.
const (
	HeartbeatEvery = time.Second      // how often a runner says it is alive
	LostAfter      = 10 * time.Second // a runner silent this long is lost, and so are its runs
	reapEvery      = 2 * time.Second
	opTimeout      = 30 * time.Second
)

// SweepArgs is a sweep job: the run to execute.
type SweepArgs struct {
	Run string `json:"run"`
}

// Kind is River's name of the job kind.
func (SweepArgs) Kind() string { return "sweep" }

// Config configures a Queue.
type Config struct {
	Store         *store.Store // on Postgres
	QueueCapacity int          // runner.DefaultQueueCapacity when 0
	PerAddress    int          // runner.DefaultPerAddress when 0
	Limits        runner.Limits
	LostAfter     time.Duration // LostAfter when 0: runners counted live for estimates
	Now           func() time.Time
	// Registerer, if set, gets the shared queue's gauges (metrics.go:
	// capacitylab_runs_queued, _runs_running, _runners, _runner_slots).
	Registerer prometheus.Registerer
}

// Queue is the web side of the distributed queue: what package web calls
// on runner.Runner, with runs stored and executed elsewhere. It holds no
// run in memory: Get reports none, Subscribe ErrNoRun and Watchers 0, so
// package web serves every run from the store.
type Queue struct {
	cfg    Config
	st     *store.Store
	client *river.Client[pgx.Tx] // insert-only: submits and cancels jobs
	now    func() time.Time
}

// NewQueue makes a Queue on cfg.Store, which must be on Postgres.
func NewQueue(cfg Config) (*Queue, error) {
	if cfg.Store == nil || cfg.Store.Pool() == nil {
		return nil, store.ErrNotPostgres
	}
	cfg.QueueCapacity = cmpOr(cfg.QueueCapacity, runner.DefaultQueueCapacity)
	cfg.PerAddress = cmpOr(cfg.PerAddress, runner.DefaultPerAddress)
	if cfg.Limits.MaxRates == 0 {
		cfg.Limits = runner.HostLimits()
	}
	cfg.LostAfter = cmpOr(cfg.LostAfter, LostAfter)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	client, err := newClient(cfg.Store, nil)
	if err != nil {
		return nil, err
	}
	q := &Queue{cfg: cfg, st: cfg.Store, client: client, now: cfg.Now}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(newDepthCollector(q)); err != nil {
			return nil, fmt.Errorf("fleet: registering the queue's metrics: %w", err)
		}
	}
	return q, nil
}

func newClient(st *store.Store, rc *river.Config) (*river.Client[pgx.Tx], error) {
	if rc == nil {
		rc = &river.Config{}
	}
	rc.Schema = st.Schema()
	rc.JobTimeout = -1 // a sweep runs as long as its windows: Estimate, not a fixed bound
	return river.NewClient(riverpgxv5.New(st.Pool()), rc)
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Limits returns the caps requests are validated against.
func (q *Queue) Limits() runner.Limits { return q.cfg.Limits }

// Capacity returns how many runs the queue holds, running ones included.
func (q *Queue) Capacity() int { return q.cfg.QueueCapacity }

// Validate checks a request against the limits without queueing it.
func (q *Queue) Validate(r runner.Request) error { return q.cfg.Limits.Validate(r) }

// Get reports no run: the Queue holds none in memory.
func (q *Queue) Get(string) (runner.Snapshot, bool) { return runner.Snapshot{}, false }

// Subscribe returns runner.ErrNoRun for every run: follow it in the store.
func (q *Queue) Subscribe(string, int) ([]runner.Event, *runner.Subscription, error) {
	return nil, nil, runner.ErrNoRun
}

// Watchers is 0: no run's subscriptions are here.
func (q *Queue) Watchers(string) int { return 0 }

// Submit is SubmitFrom with no client address.
func (q *Queue) Submit(ctx context.Context, learner string, r runner.Request) (runner.Ticket, error) {
	return q.SubmitFrom(ctx, learner, "", r)
}

// SubmitFrom validates r and queues it for learner at client address addr,
// with runner.Runner's rules and errors (FieldErrors, *QueueFullError,
// *AlreadyQueuedError, *ShareError), across every replica.
func (q *Queue) SubmitFrom(ctx context.Context, learner, addr string, r runner.Request) (runner.Ticket, error) {
	if learner == "" {
		return runner.Ticket{}, errors.New("fleet: Submit needs a learner id")
	}
	if err := q.cfg.Limits.Validate(r); err != nil {
		return runner.Ticket{}, err
	}
	if r.Mode == "" {
		r.Mode = runner.ModeOpen
	}
	id, err := runner.NewID()
	if err != nil {
		return runner.Ticket{}, err
	}
	reqJSON, err := json.Marshal(r)
	if err != nil {
		return runner.Ticket{}, err
	}
	slots, err := q.slots(ctx)
	if err != nil {
		return runner.Ticket{}, err
	}
	now := q.now()
	var tk runner.Ticket
	err = q.st.SubmitRun(ctx, store.Submission{
		Run:  store.Run{ID: id, Learner: learner, Lesson: r.Lesson, Block: r.Block, Request: reqJSON, Status: store.RunQueued, CreatedAt: now},
		Addr: addr,
		Decide: func(active []store.QueueRun) (store.RunEvent, error) {
			p := plan(active, slots, now)
			for _, a := range p.runs {
				if a.Learner == learner {
					return store.RunEvent{}, &runner.AlreadyQueuedError{ID: a.ID}
				}
			}
			if len(active) >= q.cfg.QueueCapacity {
				return store.RunEvent{}, &runner.QueueFullError{RetryAfter: p.UntilFree()}
			}
			if addr != "" {
				if n, wait := p.AddressRuns(addr); n >= q.cfg.PerAddress {
					return store.RunEvent{}, &runner.ShareError{Share: q.cfg.PerAddress, RetryAfter: wait}
				}
			}
			p.Runs = append(p.Runs, runner.Planned{Addr: addr, Estimate: runner.Estimate(r)})
			pos := len(p.Runs) - p.RunningRuns()
			start := p.StartAt(len(p.Runs) - 1)
			tk = runner.Ticket{ID: id, Position: pos, EstimatedStart: start}
			return runner.StoreEvent(runner.QueuedEvent(r, pos, start), 1, now), nil
		},
		InsertJob: func(ctx context.Context, tx pgx.Tx) (int64, error) {
			res, err := q.client.InsertTx(ctx, tx, SweepArgs{Run: id}, &river.InsertOpts{MaxAttempts: 1})
			if err != nil {
				return 0, err
			}
			return res.Job.ID, nil
		},
	})
	if err != nil {
		return runner.Ticket{}, err
	}
	return tk, nil
}

// slots is how many runs the live runners run at once (at least 1, so
// that an estimate with none live still counts the runs ahead).
func (q *Queue) slots(ctx context.Context) (int, error) {
	n, err := q.st.LiveSlots(ctx, q.cfg.LostAfter)
	return max(n, 1), err
}

// Cancel cancels learner's run id: a queued run at once (cancelled, with
// its event), a running one through River's JobCancel, which ends the job's
// context on its runner, which ends the run cancelled.
func (q *Queue) Cancel(id, learner string) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	now := q.now()
	found, err := q.st.CancelQueuedRun(ctx, id, learner, "You cancelled it before it started.", now, func(seq int) store.RunEvent {
		return runner.StoreEvent(runner.Event{Kind: runner.KindCancelled, Reason: "You cancelled it before it started."}, seq, now)
	})
	switch {
	case errors.Is(err, store.ErrNoRun):
		return runner.ErrNoRun
	case err != nil:
		return err
	case found.Learner != learner:
		return runner.ErrNotYours
	case found.Status == store.RunQueued:
		requeue(ctx, q.st, q.cfg.LostAfter, q.now)
		return nil
	case found.Status == store.RunRunning:
		if _, err := q.client.JobCancel(ctx, found.JobID); err != nil {
			return fmt.Errorf("fleet: cancelling run %s's job %d: %w", id, found.JobID, err)
		}
		return nil
	}
	return runner.ErrFinished
}

// queuePlan is the queue as the estimates see it (runner.Plan: running
// runs then queued ones, oldest first, over the live runners' slots), with
// each run's stored row beside its place.
type queuePlan struct {
	runner.Plan
	runs []store.QueueRun // runs[i] is Plan.Runs[i]
}

func plan(active []store.QueueRun, slots int, now time.Time) *queuePlan {
	runs := slices.Clone(active)
	// Running first, each group oldest first (stable).
	slices.SortStableFunc(runs, func(a, b store.QueueRun) int {
		return boolInt(a.Status != store.RunRunning) - boolInt(b.Status != store.RunRunning)
	})
	p := &queuePlan{Plan: runner.Plan{Slots: slots, Now: now}, runs: runs}
	for _, a := range runs {
		var r runner.Request
		json.Unmarshal(a.Request, &r)
		p.Runs = append(p.Runs, runner.Planned{Addr: a.Addr, Running: a.Status == store.RunRunning, Started: a.StartedAt, Estimate: runner.Estimate(r)})
	}
	return p
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// requeue gives every queued run a queued event with its position and
// estimated start now; a run that stopped being queued meanwhile gets none.
// Failures are left: the next start or end tells them again.
func requeue(ctx context.Context, st *store.Store, lostAfter time.Duration, now func() time.Time) {
	active, err := st.ActiveRuns(ctx)
	if err != nil {
		return
	}
	slots, _ := st.LiveSlots(ctx, lostAfter)
	t := now()
	p := plan(active, slots, t)
	pos := 0
	for i, a := range p.runs {
		if a.Status != store.RunQueued {
			continue
		}
		pos++
		var r runner.Request
		json.Unmarshal(a.Request, &r)
		e := runner.QueuedEvent(r, pos, p.StartAt(i))
		st.AppendQueuedEvent(ctx, a.ID, func(seq int) store.RunEvent { return runner.StoreEvent(e, seq, t) })
	}
}
