package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
)

// LostReasonPrefix begins the reason of every run whose runner was lost.
const LostReasonPrefix = "runner lost"

// NodeConfig configures a Node.
type NodeConfig struct {
	Store  *store.Store   // on Postgres
	Runner *runner.Runner // executes the claimed runs (its Lab, Load, Store, Limits)
	ID     string         // this runner's id, unique among the runners
	Host   string         // where it runs, for people reading "runner lost"
	Slots  int            // runs at once (River's MaxWorkers); at least 1
	// HeartbeatEvery and LostAfter: the defaults when 0.
	HeartbeatEvery, LostAfter time.Duration
	Logger                    *slog.Logger
	Now                       func() time.Time
}

// Node is a runner process's part of the fleet: a River client working
// sweep jobs, Slots at once, each claimed and executed by cfg.Runner; a
// heartbeat; and the reaper of lost runners' runs (see the package doc).
type Node struct {
	cfg    NodeConfig
	client *river.Client[pgx.Tx]
	log    *slog.Logger
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

// NewNode makes a Node; Start starts it.
func NewNode(cfg NodeConfig) (*Node, error) {
	if cfg.Store == nil || cfg.Store.Pool() == nil {
		return nil, store.ErrNotPostgres
	}
	if cfg.Runner == nil || cfg.ID == "" {
		return nil, errors.New("fleet: NodeConfig needs a Runner and an ID")
	}
	if cfg.Slots < 1 {
		return nil, fmt.Errorf("fleet: %d slots: a runner needs at least one", cfg.Slots)
	}
	cfg.HeartbeatEvery = cmpOr(cfg.HeartbeatEvery, HeartbeatEvery)
	cfg.LostAfter = cmpOr(cfg.LostAfter, LostAfter)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	n := &Node{cfg: cfg, log: cfg.Logger}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &sweepWorker{node: n}); err != nil {
		return nil, err
	}
	client, err := newClient(cfg.Store, &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Slots}},
		Workers: workers,
		Logger:  n.log,
	})
	if err != nil {
		return nil, err
	}
	n.client = client
	return n, nil
}

// Start beats once (so the runner counts before its first job), starts the
// heartbeat and reaper loop, and starts taking jobs.
func (n *Node) Start(ctx context.Context) error {
	if err := n.cfg.Store.Heartbeat(ctx, n.cfg.ID, n.cfg.Host, n.cfg.Slots); err != nil {
		return fmt.Errorf("fleet: first heartbeat: %w", err)
	}
	loop, stop := context.WithCancel(context.Background())
	n.stop = stop
	n.wg.Add(1)
	go n.beat(loop)
	if err := n.client.Start(ctx); err != nil {
		stop()
		n.wg.Wait()
		return err
	}
	return nil
}

// Stop stops taking jobs and ends the running runs interrupted, as the
// Runner's Close does: River's StopAndCancel ends the jobs' contexts, which
// interrupts their runs (rows so far kept, terminal event stored), and
// returns once they have; then the Runner closes and the runner is
// forgotten.
func (n *Node) Stop(ctx context.Context) error {
	err := n.client.StopAndCancel(ctx)
	n.cfg.Runner.Close()
	n.stop()
	n.wg.Wait()
	rctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if rerr := n.cfg.Store.RemoveRunner(rctx, n.cfg.ID); err == nil {
		err = rerr
	}
	return err
}

// beat heartbeats every HeartbeatEvery and reaps lost runners' runs every
// reapEvery until ctx ends.
func (n *Node) beat(ctx context.Context) {
	defer n.wg.Done()
	tick := time.NewTicker(n.cfg.HeartbeatEvery)
	defer tick.Stop()
	rp := reaper{st: n.cfg.Store, lostAfter: n.cfg.LostAfter, now: n.cfg.Now, log: n.log}
	lastReap := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		bctx, cancel := context.WithTimeout(ctx, opTimeout)
		if err := n.cfg.Store.Heartbeat(bctx, n.cfg.ID, n.cfg.Host, n.cfg.Slots); err != nil && ctx.Err() == nil {
			n.log.Error("runner heartbeat", "runner", n.cfg.ID, "err", err)
		}
		if time.Since(lastReap) >= reapEvery {
			lastReap = time.Now()
			if err := rp.reap(bctx); err != nil && ctx.Err() == nil {
				n.log.Error("reaping lost runners' runs", "err", err)
			}
		}
		cancel()
	}
}

// reaper is one process's reaping loop's memory: since when it has
// reached the database without a break. A heartbeat is judged only by a
// reaper that has itself reached the database for lostAfter: after an
// outage (of the database, or of this process's way to it), every
// runner that is alive has had lostAfter to beat again before any is
// taken for lost, so the beats an outage kept from being written do not
// fail live runs. (A runner that truly stopped is reaped lostAfter
// later than it would have been.)
type reaper struct {
	st        *store.Store
	lostAfter time.Duration
	now       func() time.Time
	log       *slog.Logger
	reaching  time.Time // when the current run of successful round trips began; zero after a failure
	last      time.Time // the last successful round trip
}

// reap reaps (Reap) if the database has been reached for lostAfter
// without a break, and otherwise only checks that it is reached. A gap of
// more than maxGap between two round trips that succeeded counts as a
// break: this process cannot tell whether the database was reachable
// meanwhile.
func (rp *reaper) reap(ctx context.Context) error {
	start := time.Now()
	if !rp.reaching.IsZero() && start.Sub(rp.last) > rp.maxGap() {
		rp.reaching = time.Time{}
	}
	if rp.reaching.IsZero() || start.Sub(rp.reaching) < rp.lostAfter {
		if err := rp.st.Ping(ctx); err != nil {
			rp.reaching = time.Time{}
			return err
		}
		if rp.reaching.IsZero() {
			rp.reaching = start
			rp.log.Info("reaching the database: runners are judged by their heartbeats once it has been reached for the bound", "bound", rp.lostAfter)
		}
		rp.last = start
		return nil
	}
	_, err := Reap(ctx, rp.st, rp.lostAfter, rp.now, rp.log)
	if err != nil {
		rp.reaching = time.Time{}
		return err
	}
	rp.last = start
	return nil
}

// maxGap is the longest time between two round trips of a reaping loop
// that still counts as reaching the database throughout.
func (rp *reaper) maxGap() time.Duration { return 2*reapEvery + rp.lostAfter/4 }

// Reap ends the runs of runners silent for longer than lostAfter: failed,
// "runner lost: ...", with their terminal event; then tells the queued
// runs their new places. It returns the runs it ended.
func Reap(ctx context.Context, st *store.Store, lostAfter time.Duration, now func() time.Time, log *slog.Logger) ([]store.LostRun, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := now()
	lost, err := st.ReapLostRuns(ctx, lostAfter, t, func(l store.LostRun) string {
		if l.Runner == "" {
			return fmt.Sprintf("%s: the runner process that took it from the queue stopped before it started it (for more than %v), "+
				"so nothing was measured. Run it again.", LostReasonPrefix, lostAfter)
		}
		host := ""
		if l.Host != "" {
			host = " on " + l.Host
		}
		return fmt.Sprintf("%s: the runner process running it (%s%s) stopped answering for more than %v, so the run stopped "+
			"(the rows stored before are kept). Run it again.", LostReasonPrefix, l.Runner, host, lostAfter)
	}, func(l store.LostRun, seq int, reason string) store.RunEvent {
		// Its window is how many windows finished (their rows are
		// stored), as a runner's own terminal event says.
		var q runner.Request
		json.Unmarshal(l.Request, &q) // a web replica wrote it
		e := runner.Event{Kind: runner.KindFailed, Reason: reason, WindowProgress: result.WindowProgress{Window: l.Rows, Windows: q.Windows()}}
		return runner.StoreEvent(e, seq, t)
	})
	for _, l := range lost {
		log.Warn("run's runner lost: run failed", "run", l.ID, "runner", l.Runner, "host", l.Host)
	}
	if len(lost) > 0 {
		requeue(ctx, st, lostAfter, now)
	}
	return lost, err
}

// ReapLoop reaps lost runners' runs every few seconds until ctx ends, for a
// web replica: with every runner gone, their runs still end (and their
// streams with them) rather than wait for a runner to come back.
func (q *Queue) ReapLoop(ctx context.Context, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tick := time.NewTicker(reapEvery)
	defer tick.Stop()
	rp := reaper{st: q.st, lostAfter: q.cfg.LostAfter, now: q.now, log: log}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, opTimeout)
		if err := rp.reap(rctx); err != nil && ctx.Err() == nil {
			log.Error("reaping lost runners' runs", "err", err)
		}
		cancel()
	}
}

// sweepWorker is River's worker of sweep jobs.
type sweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	node *Node
}

// Work claims the job's run (a run no longer queued, cancelled before it
// started, is left) and executes it through the Runner.
func (w *sweepWorker) Work(ctx context.Context, job *river.Job[SweepArgs]) error {
	n := w.node
	st := n.cfg.Store
	cctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	claimed, last, ok, err := st.ClaimRun(cctx, job.Args.Run, n.cfg.ID, n.cfg.Now())
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	var q runner.Request
	if err := json.Unmarshal(claimed.Request, &q); err != nil {
		return fmt.Errorf("fleet: run %s's stored request: %w", claimed.ID, err)
	}
	requeue(cctx, st, n.cfg.LostAfter, n.cfg.Now)
	// River's remote cancel (Queue.Cancel) is the learner's; any other
	// end of the job's context is this process stopping.
	rctx, rcancel := context.WithCancelCause(context.Background())
	defer rcancel(nil)
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), river.ErrJobCancelledRemotely) {
			rcancel(runner.ErrCancelledByOwner)
			return
		}
		rcancel(context.Cause(ctx))
	})
	defer stop()
	status := n.cfg.Runner.RunClaimed(rctx, runner.Claimed{ID: claimed.ID, Learner: claimed.Learner, Addr: claimed.Addr, Request: q,
		Created: claimed.CreatedAt, Started: claimed.StartedAt, LastSeq: last, Owner: n.cfg.ID})
	n.log.Info("run ended", "run", claimed.ID, "status", status)
	ectx, ecancel := context.WithTimeout(context.Background(), opTimeout)
	defer ecancel()
	requeue(ectx, st, n.cfg.LostAfter, n.cfg.Now)
	return nil
}
