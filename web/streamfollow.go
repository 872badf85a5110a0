package web

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"capacitylab/runner"
	"capacitylab/store"
	"capacitylab/wsconn"
)

// Following a run another process holds. With Deps.SharedRuns (a web
// replica whose runs run in runner processes sharing the store), a run
// that is stored queued or running and that the local runner does not
// hold is live elsewhere: its stream follows the store. Per run and
// replica one follower watches the store (store.WatchRun, first) and
// reads the run's events (RunEvents after the last it has) at the start
// and after every wake-up, into a runner.Relay, whose subscriptions feed
// every socket on the run exactly as the runner's own log does (the same
// runSource: replay after since, live events, panels, the
// liveChartWatchers rule counted on this replica's sockets). A class of
// 300 on one run costs one watch and one reader, not 300.

// followCheckEvery is how long a follower waits without a wake-up before
// it reads the run's events and status again: wake-ups are complete
// while the store listens (and a lost listener says so with Missed), so
// this only ends a follow whose run ended without its terminal event
// being stored (a full disk), as a stored run's stream does.
const followCheckEvery = 15 * time.Second

// followRetry is how long a follower waits after a failed read.
const followRetry = time.Second

// follows is a server's followed runs, by id.
type follows struct {
	store *store.Store
	log   *slog.Logger
	// ended makes the terminal event of a run whose status is final but
	// whose stored events do not end (storedLog's).
	ended func(ctx context.Context, r store.Run, since int) ([]runner.Event, error)

	check time.Duration // followCheckEvery (tests shorten it)

	mu      sync.Mutex
	runs    map[string]*follower
	watches int // store watches ever opened (one per follower), for tests and metrics
}

// follower is one followed run: its relay, the sockets on it, and the
// reader goroutine.
type follower struct {
	id    string
	relay *runner.Relay
	refs  int // sockets holding it, under follows.mu
	stop  context.CancelFunc
	done  chan struct{} // closed when the reader ends
	first chan struct{} // closed after the first read
	err   error         // the first read's failure, if it failed
}

// newFollows makes a server's follows, its two metrics registered in reg:
// capacitylab_followed_runs, the runs this server follows now, and
// capacitylab_followed_run_watches_total, the store watches it opened to
// follow them (one per run followed, however many watch it).
func newFollows(st *store.Store, log *slog.Logger, ended func(context.Context, store.Run, int) ([]runner.Event, error), reg prometheus.Registerer) *follows {
	fs := &follows{store: st, log: log, ended: ended, check: followCheckEvery, runs: map[string]*follower{}}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "capacitylab_followed_runs",
			Help: "Runs live on another process that this server follows from the store now."},
			func() float64 { n, _ := fs.counts(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "capacitylab_followed_run_watches_total",
			Help: "Store watches this server opened to follow runs live on another process: one per run followed, however many watch it."},
			func() float64 { _, n := fs.counts(); return float64(n) }))
	return fs
}

// acquire returns run id's follower, starting it (watch, then the first
// read) if none runs, once its first read is in the relay. The caller
// must release it.
func (fs *follows) acquire(ctx context.Context, id string) (*follower, error) {
	fs.mu.Lock()
	f := fs.runs[id]
	if f == nil {
		rctx, stop := context.WithCancel(context.Background())
		f = &follower{id: id, relay: runner.NewRelay(0), stop: stop, done: make(chan struct{}), first: make(chan struct{})}
		fs.runs[id] = f
		fs.watches++
		w := fs.store.WatchRun(id) // before the first read: nothing written after it is missed
		go fs.read(rctx, f, w)
	}
	f.refs++
	fs.mu.Unlock()
	select {
	case <-f.first:
	case <-ctx.Done():
		fs.release(f)
		return nil, ctx.Err()
	}
	if f.err != nil {
		fs.release(f)
		return nil, f.err
	}
	return f, nil
}

// release lets go of f; the last socket to go stops its reader.
func (fs *follows) release(f *follower) {
	fs.mu.Lock()
	f.refs--
	last := f.refs == 0
	if last && fs.runs[f.id] == f {
		delete(fs.runs, f.id)
	}
	fs.mu.Unlock()
	if last {
		f.stop()
		<-f.done
	}
}

// counts returns the followers running now and the store watches ever
// opened.
func (fs *follows) counts() (running, watches int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.runs), fs.watches
}

// read is f's reader: read the run's events after the last it has, hand
// them to the relay, wait for a wake-up, until the run's terminal event
// (then the follower leaves the map: a later socket finds the run
// finished in the store) or the last socket goes.
func (fs *follows) read(ctx context.Context, f *follower, w *store.Watch) {
	defer close(f.done)
	defer w.Close()
	last, check := 0, false
	timer := time.NewTimer(fs.check)
	defer timer.Stop()
	for first := true; ; first = false {
		es, err := fs.events(ctx, f.id, last, check)
		ended := false
		if err == nil {
			last, ended = f.relay.Add(es)
		} else if ctx.Err() == nil {
			fs.log.WarnContext(ctx, "reading a followed run's events", "run", f.id, "err", err)
		}
		if first {
			f.err = err
			close(f.first)
		}
		if ended || (first && err != nil) {
			fs.mu.Lock()
			if fs.runs[f.id] == f {
				delete(fs.runs, f.id)
			}
			fs.mu.Unlock()
			return
		}
		wait := fs.check
		if err != nil {
			wait = followRetry
		}
		timer.Reset(wait)
		select {
		case <-w.C():
			check = false
		case <-timer.C:
			check = true
		case <-ctx.Done():
			return
		}
	}
}

// events reads run id's stored events after last. With check, it also
// reads the run's status and, when the run is over though its events do
// not say so, ends them with the terminal event the status says.
func (fs *follows) events(ctx context.Context, id string, last int, check bool) ([]runner.Event, error) {
	if check {
		r, err := fs.store.Run(ctx, id)
		if err != nil {
			return nil, err
		}
		if r.Status != store.RunQueued && r.Status != store.RunRunning {
			return fs.ended(ctx, r, last)
		}
	}
	stored, err := fs.store.RunEvents(ctx, id, last)
	if err != nil {
		return nil, err
	}
	out := make([]runner.Event, 0, len(stored))
	for _, e := range stored {
		out = append(out, runner.Event{Seq: e.Seq, Kind: runner.Kind(e.Kind), JSON: e.JSON})
	}
	return out, nil
}

// followStream is the stream of a run stored queued or running that the
// runner does not hold, with Deps.SharedRuns: followed from the store
// (see follows). It returns nil for a run that is not so.
func (s *server) followStream(ctx context.Context, stored store.Run, since int) (streamOpener, error) {
	if !s.followed(stored) {
		return nil, nil
	}
	f, err := s.follows.acquire(ctx, stored.ID)
	if err != nil {
		return nil, err
	}
	return func() (wsconn.Source, func()) {
		replay, sub := f.relay.Subscribe(since)
		src := newRunSource(replay, sub, since, s.withPanel(ctx, stored.ID))
		src.liveChart = func() bool { return f.relay.Watchers() <= liveChartWatchers }
		return src, func() {
			sub.Close()
			s.follows.release(f)
		}
	}, nil
}

// followed reports whether a stored run the runner does not hold is live
// on another process: stored queued or running, with Deps.SharedRuns.
// Without it (one server) such a run is over (settled).
func (s *server) followed(r store.Run) bool {
	return s.sharedRuns && (r.Status == store.RunQueued || r.Status == store.RunRunning)
}
