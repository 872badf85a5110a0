package labsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"capacitylab/admit"
	"capacitylab/dist"
)

// Server is one lab: a door, a FIFO queue, WORKERS workers and a control
// API. Build it with NewServer and run it once with Serve.
//
// WORKERS may change while it runs (SetConfig, with ACCEPT=door): new
// workers start at once and take the oldest queued connections; when
// there are fewer, free workers stop at once and busy ones finish the
// request they hold, then stop, so no request is abandoned.
//
// The door's admission policy (POLICY, package admit) decides who is let
// in: the queue policy refuses a caller when LIMIT callers already wait,
// others by their own arithmetic; sojourn may also drop a caller from the
// queue when a worker takes it. Every refusal is the same 503.
//
// The door reads each connection's request on a goroutine of its own
// (arrive), so that a caller slow to send it holds up nobody else, and
// then admits or refuses it by the request's class (X-Criticality). It
// hands an admitted connection straight to a worker when one is free, the
// way a kernel hands an accepted connection to a thread blocked in
// accept: the connection counts as in service from that moment, even if
// the worker has not yet had the processor to start on it. Only
// connections that find every worker taken wait in the queue, and only
// they count towards LIMIT and queued. So when the workers outnumber what
// the processor can run, the waiting for the processor shows up as longer
// service times, not as queue depth.
type Server struct {
	logger *slog.Logger
	reg    *prometheus.Registry
	m      metrics

	mu        sync.Mutex
	cond      *sync.Cond // signalled when the queue gains a connection or the server closes
	cfg       Config
	queue     lanes         // waiting for a worker: every worker was taken
	handed    ring[pending] // handed to a free worker that has not picked it up yet
	idle      int           // free workers not yet handed a connection
	inService int           // handed to a worker (picked up or not) and not finished
	reading   int           // accepted, their request being read: in no other count yet
	inside    [3]int        // by class (admit.Class): queued or in service
	closed    bool
	started   bool
	w         window
	wg        sync.WaitGroup // every goroutine Serve starts, including lingering closes
	readers   chan struct{}  // semaphore: connections the door is reading (arrive)
	bufs      sync.Pool      // *[]byte of MaxHeaderBytes, for the door's readers
	refusing  chan struct{}  // semaphore: refusals of dropped connections, and 400s with ACCEPT=workers
	procs     *processors    // the lab's CPUS processors, taken by spins
	lock      serialLock     // the lab's one lock (LOCK_MS)
	policy    *admit.Door    // the door's admission policy (POLICY)
	epoch     time.Time      // the origin of the policy's clock
	kq        *kernelQueue   // set by Serve: the request listener's accept queue, for BACKLOG and backlogged
	fellBack  atomic.Bool    // the thread CPU clock failed once (logged once)
	// hostNames are the names the control API answers to besides IP
	// addresses and localhost (AllowControlHost), set before Serve.
	hostNames []string

	// quit and retire (guarded by mu) are workers to stop after WORKERS fell: quit free
	// ones (counted in idle no more) that stop when they wake, retire
	// busy ones that stop once they have answered the request they hold.
	// The free workers' goroutines waiting for a connection are idle +
	// handed.n + quit.
	quit, retire int
	// spawn runs f(ctx) in a goroutine of Serve's (counted in wg), ctx
	// ending when Serve stops: set by Serve under mu (with ACCEPT=door,
	// for SetConfig to start workers), nil before then; called only
	// under mu and while the lab is not closed.
	spawn func(f func(ctx context.Context))

	// demand draws each admitted request's service factor (DIST), under
	// mu: from the Spec's seed again at every reset and every change of
	// DIST, so that each window of a sweep draws the same factors in the
	// same order.
	demand *dist.Sampler
}

// pending is an admitted connection on its way to a worker, its request
// read.
type pending struct {
	conn  net.Conn
	at    time.Time   // when the door admitted it, its request read (ACCEPT=workers: when the worker accepted it)
	took  time.Time   // when a worker was assigned to it: the end of its queue wait
	from  time.Time   // if its worker went straight on to it: when the last was due to end, or it arrived if later (see serve)
	stall bool        // it takes STALL_MS instead of its spin and wait
	scale float64     // its SPIN_MS and WAIT_MS are this many times the knobs' (DIST)
	class admit.Class // its X-Criticality
}

// demand is what p's service takes with the knobs c: its spin and wait,
// SPIN_MS and WAIT_MS times its factor (DIST), and its contention
// (LOCK_MS, COHERENCY_US, which DIST does not scale); or STALL_MS of wait
// and nothing else for a stalled request.
func (p pending) demand(c Config) (spin, wait time.Duration, ct contention) {
	if p.stall {
		return 0, time.Duration(c.StallMS) * time.Millisecond, contention{}
	}
	ms := float64(time.Millisecond) * p.scale
	return time.Duration(float64(c.SpinMS) * ms), time.Duration(float64(c.WaitMS) * ms), c.contention()
}

// lanes is the door's queue: a FIFO lane per class, indexed by
// admit.Class. A connection joins its class's lane while the policy sheds
// by class (admit.Door.Classes), and the default lane otherwise, so that
// without classes the queue is one FIFO; pop takes the oldest connection
// of the first lane not empty: critical, default, then sheddable.
type lanes struct {
	lane [3]ring[pending]
	n    int
}

func (q *lanes) push(p pending, byClass bool) {
	c := admit.Normal
	if byClass {
		c = p.class
	}
	q.lane[c].push(p)
	q.n++
}

// pop takes the next connection; the queue must not be empty.
func (q *lanes) pop() pending {
	c := admit.Critical
	for _, c = range [...]admit.Class{admit.Critical, admit.Normal, admit.Sheddable} {
		if q.lane[c].n > 0 {
			break
		}
	}
	q.n--
	return q.lane[c].pop()
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ring is a FIFO that reuses its storage.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

func (r *ring[T]) push(v T) {
	if r.n == len(r.buf) {
		nb := make([]T, max(16, 2*len(r.buf)))
		for i := range r.n {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = v
	r.n++
}

func (r *ring[T]) pop() T {
	v := r.buf[r.head]
	var zero T
	r.buf[r.head] = zero
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return v
}

// take removes and returns the first element for which ok is true,
// keeping the others in order.
func (r *ring[T]) take(ok func(T) bool) (T, bool) {
	var zero T
	for i := range r.n {
		at := (r.head + i) % len(r.buf)
		if !ok(r.buf[at]) {
			continue
		}
		v := r.buf[at]
		for k := i; k < r.n-1; k++ {
			r.buf[(r.head+k)%len(r.buf)] = r.buf[(r.head+k+1)%len(r.buf)]
		}
		r.buf[(r.head+r.n-1)%len(r.buf)] = zero
		r.n--
		return v, true
	}
	return zero, false
}

// NewServer returns a lab with the given knobs that logs to logger (nil
// discards). Its Prometheus registry is its own. An invalid cfg is reported
// by Serve.
func NewServer(cfg Config, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{logger: logger, cfg: cfg, reg: prometheus.NewRegistry(), epoch: time.Now()}
	s.cond = sync.NewCond(&s.mu)
	var err error
	if s.policy, err = admit.NewDoor(cfg.Policy, cfg.Limit, max(cfg.Workers, 0)); err != nil {
		// An invalid cfg: Serve reports it and serves nothing.
		s.policy, _ = admit.NewDoor("", 0, 0)
	}
	s.readers = make(chan struct{}, MaxReading)
	s.bufs.New = func() any { b := make([]byte, MaxHeaderBytes); return &b }
	s.refusing = make(chan struct{}, MaxRefusing)
	s.procs = newProcessors(cfg.CPUs)
	s.demand = cfg.Dist.Sampler()
	s.w.reset(time.Now(), 0, 0, s.inside)
	s.m = newMetrics(s.reg, s)
	return s
}

// AllowControlHost adds name to the host names the control API answers to
// besides IP addresses and localhost (see the package doc: a request to
// any other name is refused, against DNS rebinding); cmd/lab adds the host
// of its --control address. An IP address or "" adds nothing (every IP
// address passes). Call it before Serve.
func (s *Server) AllowControlHost(name string) {
	if _, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil || name == "" {
		return
	}
	s.mu.Lock()
	s.hostNames = append(s.hostNames, strings.ToLower(strings.TrimSuffix(name, ".")))
	s.mu.Unlock()
}

// Serve takes requests on the requests listener and serves the control API
// on the control listener until ctx ends or a listener fails. It then closes
// both listeners, closes the connections still queued, interrupts the
// workers, waits for every goroutine it started, and returns (nil when ctx
// ended). Serve may be called only once.
func (s *Server) Serve(ctx context.Context, requests, control net.Listener) error {
	defer requests.Close()
	defer control.Close()
	if err := s.cfg.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg := &s.wg
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("labsvc: Serve called twice")
	}
	s.started = true
	s.kq = newKernelQueue(requests)
	// ACCEPT never changes; BACKLOG and (with the door) WORKERS may,
	// through SetConfig, once the control API serves.
	cfg := s.cfg
	names := slices.Clone(s.hostNames)
	if cfg.Accept == AcceptDoor {
		// Every worker starts free, before the door opens, so the first
		// callers are handed a worker even if its goroutine has not run
		// yet.
		s.spawn = func(f func(context.Context)) { wg.Go(func() { f(ctx) }) }
		s.idle = cfg.Workers
		for range cfg.Workers {
			s.spawn(s.work)
		}
	}
	s.mu.Unlock()
	if cfg.Backlog > 0 {
		if err := s.kq.setBacklog(cfg.Backlog); err != nil {
			s.logger.Warn("BACKLOG not applied", "backlog", cfg.Backlog, "err", err)
		}
	}

	errc := make(chan error, 2)
	fail := func(err error) {
		select {
		case errc <- err:
		default: // one failure is enough to stop
		}
	}

	hs := &http.Server{
		Handler:           ownHostsOnly(names, s.controlHandler()),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	wg.Go(func() {
		if err := hs.Serve(control); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fail(fmt.Errorf("labsvc: control listener: %w", err))
		}
	})
	if cfg.Accept == AcceptWorkers {
		for range cfg.Workers {
			wg.Go(func() {
				if err := s.acceptWork(ctx, requests); err != nil {
					fail(err)
				}
			})
		}
	} else {
		wg.Go(func() {
			if err := s.door(ctx, requests); err != nil {
				fail(err)
			}
		})
	}

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel()
	_ = requests.Close()
	sctx, scancel := context.WithTimeout(context.Background(), time.Second)
	if hs.Shutdown(sctx) != nil {
		_ = hs.Close()
	}
	scancel()
	s.mu.Lock()
	s.closed = true
	at := s.since(time.Now())
	for s.queue.n > 0 {
		p := s.queue.pop()
		_ = p.conn.Close()
		s.inside[p.class]--
		s.policy.Done(at, 0, admit.Abandoned)
	}
	for s.handed.n > 0 {
		p := s.handed.pop()
		_ = p.conn.Close()
		s.inService--
		s.inside[p.class]--
		s.policy.Done(at, 0, admit.Abandoned)
	}
	s.mu.Unlock()
	s.cond.Broadcast()
	wg.Wait()
	s.mu.Lock()
	s.kq.close()
	s.kq = &kernelQueue{} // Stats called after Serve returned reads nothing
	s.mu.Unlock()
	return err
}

// accept takes the next connection from ln, first reading how many wait in
// the kernel's accept queue (found, -1 when it cannot be read). It returns
// a nil connection and error when the lab is stopping, and an error when the
// listener failed; transient failures (out of file descriptors, an aborted
// handshake) are logged and retried after a growing pause.
func (s *Server) accept(ctx context.Context, ln net.Listener) (c net.Conn, found int, err error) {
	backoff := 5 * time.Millisecond
	for {
		found = -1
		if depth, _, ok := s.kq.depth(); ok {
			found = depth
		}
		c, err := ln.Accept()
		if err == nil {
			return c, found, nil
		}
		if ctx.Err() != nil {
			return nil, 0, nil
		}
		if errors.Is(err, net.ErrClosed) {
			return nil, 0, fmt.Errorf("labsvc: request listener closed: %w", err)
		}
		s.logger.Warn("accept failed", "err", err, "retry_in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil, 0, nil
		}
		backoff = min(2*backoff, time.Second)
	}
}

// door accepts connections and hands each to a reader of its own
// (arrive), at most MaxReading at once, and returns when the listener is
// closed. It reads no request itself, so a caller slow to send its
// request holds up nobody else.
func (s *Server) door(ctx context.Context, ln net.Listener) error {
	for {
		c, found, err := s.accept(ctx, ln)
		if c == nil {
			return err
		}
		accepted := time.Now()
		select {
		case s.readers <- struct{}{}:
		case <-ctx.Done():
			_ = c.Close()
			return nil
		}
		s.mu.Lock()
		s.w.backlogMax = max(s.w.backlogMax, found)
		if s.closed {
			s.mu.Unlock()
			_ = c.Close()
			<-s.readers
			return nil
		}
		s.reading++
		s.mu.Unlock()
		s.wg.Go(func() {
			s.arrive(ctx, c, accepted)
			<-s.readers
		})
	}
}

// arrive reads the request of a connection the door accepted at accepted,
// by ReadTimeout from then, and then, at once: counts it bad (a 400 for
// garbage), or asks the policy to admit it by its class, and refuses it
// (503) or hands it to a free worker or queues it. The request arrives at
// the door when it has been read: its queue wait and its latency for the
// policy are from then. It runs on its own goroutine, and answers a
// refusal or a 400 there too.
func (s *Server) arrive(ctx context.Context, c net.Conn, accepted time.Time) {
	buf := s.bufs.Get().(*[]byte)
	res, why, class := readBy(ctx, c, *buf, accepted.Add(ReadTimeout))
	s.bufs.Put(buf)
	s.mu.Lock()
	s.reading--
	if s.closed || ctx.Err() != nil {
		s.mu.Unlock()
		_ = c.Close()
		return
	}
	if res != reqOK {
		// Accepted and bad, never admitted: no worker held it.
		s.w.accepted++
		s.badLocked(res, 0)
		s.mu.Unlock()
		s.m.accepted.Inc()
		s.m.bad(res)
		if res == reqGarbage {
			closeGracefully(c, badRequest(why))
		} else {
			_ = c.Close()
		}
		return
	}
	now := time.Now()
	at := s.since(now)
	if !s.policy.AdmitClass(at, s.idle, s.queue.n, class) {
		s.w.refused++
		s.w.classes[class].refused++
		s.mu.Unlock()
		s.m.refused.Inc()
		s.m.classes[class].refused.Inc()
		closeGracefully(c, refusedResponse)
		return
	}
	stall, scale := s.admitLocked(class)
	p := pending{conn: c, at: now, stall: stall, scale: scale, class: class}
	if s.idle > 0 {
		// A worker is free: it is this connection's now (a caller
		// that did not wait is never dropped).
		s.policy.Start(at, 0)
		s.idle--
		s.inService++
		p.took = now
		s.handed.push(p)
		s.mu.Unlock()
		s.cond.Signal()
	} else {
		s.queue.push(p, s.policy.Classes())
		s.w.queuedMax = max(s.w.queuedMax, s.queue.n)
		s.mu.Unlock()
	}
	s.m.accepted.Inc()
	s.m.classes[class].accepted.Inc()
}

// readBy reads c's request (readRequest) by deadline, or until ctx ends
// (the lab stopping: the read ends at once).
func readBy(ctx context.Context, c net.Conn, buf []byte, deadline time.Time) (outcome, string, admit.Class) {
	if err := c.SetReadDeadline(deadline); err != nil {
		return reqGone, "", admit.Normal
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetReadDeadline(time.Now()) })
	defer stop()
	return readRequest(c, buf)
}

// refuseLater answers a dropped connection's refusal (its request was
// read at the door) off the caller's goroutine, at most MaxRefusing at
// once (beyond that it waits for one to end). It returns false, having
// closed c, if ctx ends first.
func (s *Server) refuseLater(ctx context.Context, c net.Conn) bool {
	select {
	case s.refusing <- struct{}{}:
	case <-ctx.Done():
		_ = c.Close()
		return false
	}
	s.wg.Go(func() {
		closeGracefully(c, refusedResponse)
		<-s.refusing
	})
	return true
}

// refuseAll refuses the connections the policy dropped from the queue
// (refuseLater), closing those left if ctx ends first.
func (s *Server) refuseAll(ctx context.Context, dropped []pending) {
	s.m.refused.Add(float64(len(dropped)))
	for _, d := range dropped {
		s.m.classes[d.class].refused.Inc()
		s.m.classes[d.class].dropped.Inc()
	}
	for i, d := range dropped {
		if !s.refuseLater(ctx, d.conn) {
			for _, d := range dropped[i+1:] {
				_ = d.conn.Close()
			}
			return
		}
	}
}

// since is t as the policy's clock reads it.
func (s *Server) since(t time.Time) time.Duration { return t.Sub(s.epoch) }

// admitLocked counts a connection of class c admitted to service in the
// window, says whether it is the Nth, 2Nth, … of STALL_EVERY, which
// stalls, and draws its service demand's factor (DIST: 1 when constant). The door calls it for every caller it does not refuse, its
// request read; with ACCEPT=workers each worker calls it for the
// connection it accepted and read. s.mu is held.
func (s *Server) admitLocked(c admit.Class) (stall bool, scale float64) {
	s.w.accepted++
	s.w.admitted++
	s.w.classes[c].accepted++
	s.inside[c]++
	return s.cfg.StallEvery > 0 && s.w.admitted%int64(s.cfg.StallEvery) == 0, s.demand.Next()
}

// badLocked counts a connection accepted that never sent a complete
// request, which held a worker for busy. s.mu is held.
func (s *Server) badLocked(res outcome, busy time.Duration) {
	s.w.busy += busy
	switch res {
	case reqTimeout:
		s.w.bad.Timeout++
	case reqGone:
		s.w.bad.Gone++
	default:
		s.w.bad.Garbage++
	}
}

// acceptWork is one worker with ACCEPT=workers: whenever it is free it
// accepts the next connection from the listening socket itself and serves
// it. Callers beyond the free workers wait in the kernel's accept queue
// (at most BACKLOG), not in the lab's.
func (s *Server) acceptWork(ctx context.Context, ln net.Listener) error {
	buf := make([]byte, MaxHeaderBytes)
	out := make([]byte, 0, 256)
	var sp spinner
	wt := newWaiter()
	defer wt.close()
	for {
		c, found, err := s.accept(ctx, ln)
		if c == nil {
			return err
		}
		now := time.Now()
		s.mu.Lock()
		s.w.backlogMax = max(s.w.backlogMax, found)
		if s.closed {
			s.mu.Unlock()
			_ = c.Close()
			return nil
		}
		s.reading++
		s.mu.Unlock()
		// The worker reads the request itself, as a thread-per-connection
		// server does: a caller slow to send it holds the worker.
		res, why, class := readBy(ctx, c, buf, now.Add(ReadTimeout))
		s.mu.Lock()
		s.reading--
		if s.closed || ctx.Err() != nil {
			s.mu.Unlock()
			_ = c.Close()
			return nil
		}
		if res != reqOK {
			s.w.accepted++
			s.badLocked(res, time.Since(now))
			s.mu.Unlock()
			s.m.accepted.Inc()
			s.m.bad(res)
			if res == reqGarbage {
				s.answerLater(c, badRequest(why))
			} else {
				_ = c.Close()
			}
			continue
		}
		// The policy is queue with LIMIT 0 and no classes here
		// (Validate): it admits everyone, and counts them inside. The
		// class is only counted.
		at := s.since(now)
		s.policy.Admit(at, 0, 0)
		s.policy.Start(at, 0)
		stall, scale := s.admitLocked(class)
		s.inService++
		p := pending{conn: c, at: now, took: now, stall: stall, scale: scale, class: class}
		spin, wait, ct := p.demand(s.cfg)
		s.mu.Unlock()
		s.m.accepted.Inc()
		s.m.classes[class].accepted.Inc()
		// The lab does not know when the caller arrived in the kernel's
		// queue, so its service is reckoned from when the worker accepted
		// it (its reading included), never from when the worker's last
		// request was due to end (see serve).
		var answered net.Conn
		out, answered, _ = s.serve(ctx, p, spin, wait, ct, out, &sp, wt)
		if answered != nil {
			_, _ = answered.Write(out)
			_ = answered.Close()
		}
	}
}

// answerLater writes msg on c and closes it gracefully off the worker's
// goroutine, so that a caller that never closes does not hold the worker;
// past MaxRefusing such answers at once it closes c without one.
func (s *Server) answerLater(c net.Conn, msg string) {
	select {
	case s.refusing <- struct{}{}:
		s.wg.Go(func() {
			closeGracefully(c, msg)
			<-s.refusing
		})
	default:
		_ = c.Close()
	}
}

// work is one worker. It starts free (counted in s.idle by whoever started
// it), waits for the door to hand it a connection, serves it, then takes
// the oldest queued connection itself while any wait, and becomes free
// again when none does. Any free worker may pick up any handed connection:
// there are never more handed than there are free workers waiting. It
// stops when the lab closes, when it wakes free with no connection handed
// and a free worker is to stop (s.quit), or when it has answered a request
// and a busy worker is to stop (s.retire): after WORKERS fell.
func (s *Server) work(ctx context.Context) {
	out := make([]byte, 0, 256)
	var dropped []pending
	var sp spinner
	wt := newWaiter()
	defer wt.close()
	var due time.Time // when the last request served was due to end
	s.mu.Lock()
	for {
		for s.handed.n == 0 && s.quit == 0 && !s.closed {
			s.cond.Wait()
		}
		if s.closed {
			s.mu.Unlock()
			return
		}
		if s.handed.n == 0 {
			// WORKERS fell while this worker was free.
			s.quit--
			s.mu.Unlock()
			return
		}
		p := s.handed.pop()
		for {
			spin, wait, ct := p.demand(s.cfg)
			s.mu.Unlock()
			var answered net.Conn
			out, answered, due = s.serve(ctx, p, spin, wait, ct, out, &sp, wt)
			s.mu.Lock()
			// The worker is free once its reply is written: it becomes
			// free (or takes the next caller) before writing, so a caller
			// that reads its answer and connects again at once finds it
			// free, not still writing or closing.
			var next, stop bool
			dropped = dropped[:0]
			switch {
			case s.retire > 0:
				// WORKERS fell while this worker was busy: it has
				// finished its request, and stops.
				s.retire--
				stop = true
			default:
				p, next, dropped = s.takeLocked(dropped)
				if next {
					s.inService++
				} else {
					s.idle++
				}
			}
			if answered != nil || len(dropped) > 0 {
				s.mu.Unlock()
				if answered != nil {
					// The answer is far smaller than a fresh connection's
					// send buffer, so the write cannot block and needs no
					// deadline.
					_, _ = answered.Write(out)
					_ = answered.Close()
				}
				s.refuseAll(ctx, dropped)
				clear(dropped)
				s.mu.Lock()
			}
			if stop {
				s.mu.Unlock()
				return
			}
			if !next {
				break
			}
			// Its service started when the worker took it, before writing
			// the last answer: the writing and closing are the worker's
			// hand-off, part of its service, and made up in its wait, as
			// is the time since the last one was due to end, if it had
			// arrived by then (see serve).
			if !due.IsZero() {
				p.from = later(due, p.at)
			}
		}
	}
}

// takeLocked takes the next queued connection for a worker (the oldest;
// with classes, the oldest of the most critical class waiting), asking
// the policy first: the connections it drops (they waited too long,
// sojourn) are appended to dropped, counted as refused, for the worker to
// refuse once it has let go of s.mu. ok is false when none is left to
// take (or the lab is closing).
func (s *Server) takeLocked(dropped []pending) (p pending, ok bool, _ []pending) {
	if s.queue.n == 0 || s.closed {
		return p, false, dropped
	}
	now := time.Now()
	at := s.since(now)
	for s.queue.n > 0 {
		p = s.queue.pop()
		if s.policy.Start(at, now.Sub(p.at)) {
			p.took = now
			return p, true, dropped
		}
		s.w.dropped++
		s.w.refused++
		s.w.classes[p.class].dropped++
		s.w.classes[p.class].refused++
		s.inside[p.class]--
		dropped = append(dropped, p)
	}
	return pending{}, false, dropped
}

// serve serves one admitted connection, its request read. When it served
// the request it returns the answer in out, the connection, for the worker
// to write and close once it has marked itself free, and when the service
// was due to end (its wait's deadline); otherwise (the lab stopping) it
// has closed the connection and returns a nil one and a zero time.
//
// spin and wait are the request's (its demand: SPIN_MS and WAIT_MS times
// its DIST factor, or STALL_MS). The wait runs to a deadline spin + wait
// after its service began,
// plus the time the spin waited for its turns while the lab's other spins
// computed (processor sharing, which lasts as long as it lasts): the lab's
// own work (for a busy worker the hand-off from the last one; with
// ACCEPT=workers, reading the request), what the spin computed beyond SPIN_MS, and what other
// threads took of its processor while it computed fall within WAIT_MS
// instead of adding to it. A worker that
// went straight on from its last request to this queued one (p.from set)
// reckons this one's service from when that one was due to end (or this
// one arrived, if later), not from when it ended or when the worker took
// this one, though from at most WAIT_MS before it took it (what this wait
// can make up; the rest is dropped): the time the worker spent in between
// (waking late from the last wait, writing and closing its answer, taking
// this one) is made up in this wait instead of adding to it, and a busy
// worker starts one request every SPIN_MS + WAIT_MS on average, as set.
//
// Contention (ct): the spin is longer by COHERENCY_US for each other
// request in service as it starts, and between the spin and the wait the
// request holds the lab's one lock for LOCK_MS, in line behind those that
// reached it first (serialLock). The time from reaching the lock to
// letting go of it lasts as long as it lasts, as the spin's turns do, and
// is added to the wait's deadline likewise: so the wait ends WAIT_MS after
// the request let go of the lock, less what the lab's own work took
// before it (made up as above).
func (s *Server) serve(ctx context.Context, p pending, spin, wait time.Duration, ct contention, out []byte, sp *spinner, wt *waiter) ([]byte, net.Conn, time.Time) {
	take := p.took
	from := take
	if !p.from.IsZero() {
		from = later(p.from, take.Add(-wait))
	}
	queueWait := take.Sub(p.at)
	if ct.coherency > 0 {
		// in_service counts this request too.
		s.mu.Lock()
		others := max(s.inService-1, 0)
		s.mu.Unlock()
		spin += time.Duration(others) * ct.coherency
	}
	cpu, turns, fellBack := sp.spin(ctx, spin, s.procs)
	if fellBack && !s.fellBack.Swap(true) {
		s.logger.Warn("thread CPU clock unavailable; SPIN_MS spent as wall time")
	}
	due := from.Add(spin + turns + wait)
	if ct.lock > 0 && ctx.Err() == nil {
		reached := time.Now()
		until := s.lock.take(reached, ct.lock)
		wt.wait(ctx, until)
		due = due.Add(until.Sub(reached))
	}
	if wait > 0 {
		wt.wait(ctx, due)
	}
	if ctx.Err() != nil {
		// Shutting down: the request was not served.
		s.mu.Lock()
		s.inService--
		s.inside[p.class]--
		s.policy.Done(s.since(time.Now()), 0, admit.Abandoned)
		s.mu.Unlock()
		_ = p.conn.Close()
		return out, nil, time.Time{}
	}
	end := time.Now()
	service := end.Sub(take)
	// Count it before answering, so a caller that has its answer finds it in
	// the stats.
	s.mu.Lock()
	s.inService--
	s.inside[p.class]--
	s.policy.Done(s.since(end), end.Sub(p.at), admit.Served)
	s.w.done++
	s.w.classes[p.class].done++
	s.w.busy += service
	s.w.spinCPU += cpu
	s.w.sample(queueWait, service)
	s.mu.Unlock()
	s.m.observe(queueWait, service, cpu)
	s.m.classes[p.class].done.Inc()

	return appendOK(out[:0], queueWait, service), p.conn, due
}

// Config returns the knobs in force.
func (s *Server) Config() Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// ConfigPatch is a change to the knobs that may change while the lab runs;
// nil fields are left as they are.
type ConfigPatch struct {
	Workers    *int // with ACCEPT=door only
	SpinMS     *int
	WaitMS     *int
	Limit      *int
	StallEvery *int
	StallMS    *int
	Backlog    *int
	Policy     *admit.Spec
	Dist       *dist.Spec

	LockMS      *int
	CoherencyUS *int
}

// apply returns c changed by p.
func (p ConfigPatch) apply(c Config) Config {
	if p.Workers != nil {
		c.Workers = *p.Workers
	}
	if p.SpinMS != nil {
		c.SpinMS = *p.SpinMS
	}
	if p.WaitMS != nil {
		c.WaitMS = *p.WaitMS
	}
	if p.Limit != nil {
		c.Limit = *p.Limit
	}
	if p.StallEvery != nil {
		c.StallEvery = *p.StallEvery
	}
	if p.StallMS != nil {
		c.StallMS = *p.StallMS
	}
	if p.Backlog != nil {
		c.Backlog = *p.Backlog
	}
	if p.Policy != nil {
		c.Policy = *p.Policy
	}
	if p.Dist != nil {
		c.Dist = *p.Dist
	}
	if p.LockMS != nil {
		c.LockMS = *p.LockMS
	}
	if p.CoherencyUS != nil {
		c.CoherencyUS = *p.CoherencyUS
	}
	return c
}

// SetConfig applies p if the result is valid and returns the knobs now in
// force; otherwise it changes nothing and returns FieldErrors (or the
// system's error when a new BACKLOG cannot be applied). A lower LIMIT
// refuses new callers while the queue is longer, and a lower BACKLOG turns
// new callers away while the kernel's queue is longer; neither evicts
// anybody. A new POLICY (or LIMIT) starts a fresh policy at once, which
// counts the callers already inside but has learned nothing. A new WORKERS
// (ACCEPT=door only) holds at once: more workers start, each taking the
// oldest queued connection; with fewer, free workers stop and busy ones
// stop once they have answered the request they hold (see resizeLocked).
func (s *Server) SetConfig(p ConfigPatch) (Config, error) {
	s.mu.Lock()
	c, err := s.cfg.change(p.apply(s.cfg))
	if err != nil {
		s.mu.Unlock()
		return s.cfg, err
	}
	if c.Policy != s.cfg.Policy || c.Limit != s.cfg.Limit {
		if err := s.policy.Set(c.Policy, c.Limit); err != nil {
			s.mu.Unlock()
			return s.cfg, err
		}
	}
	if c.Backlog != s.cfg.Backlog && s.kq != nil {
		if err := s.kq.setBacklog(c.Backlog); err != nil {
			// Put the policy back as it was.
			_ = s.policy.Set(s.cfg.Policy, s.cfg.Limit)
			s.mu.Unlock()
			return s.cfg, err
		}
	}
	if c.Dist != s.cfg.Dist {
		s.demand = c.Dist.Sampler()
	}
	if c.Workers != s.cfg.Workers {
		// Validate has checked it: 1 or more.
		_ = s.policy.SetWorkers(c.Workers)
		s.resizeLocked(s.cfg.Workers, c.Workers)
	}
	s.cfg = c
	s.mu.Unlock()
	s.cond.Broadcast()
	return c, nil
}

// resizeLocked changes the running workers from was to now (ACCEPT=door).
// More: workers told to stop and not yet stopped go on first; then new
// ones start; each worker so added takes the oldest queued connection
// (asking the policy, as a worker does; those it drops are refused off
// the caller's goroutine) or becomes free. Fewer: free workers stop at
// once (quit), then busy ones once they have answered the request they
// hold (retire). Before Serve starts the workers (or once it has closed)
// it changes nothing: Serve starts the WORKERS in force. s.mu is held;
// the caller broadcasts s.cond after letting go of it.
func (s *Server) resizeLocked(was, now int) {
	if s.spawn == nil || s.closed {
		return
	}
	if now < was {
		fewer := was - now
		free := min(fewer, s.idle)
		s.idle -= free
		s.quit += free
		s.retire += fewer - free
		return
	}
	more := now - was
	// A busy worker that was to stop goes on, and takes from the queue
	// itself when it has answered.
	kept := min(more, s.retire)
	s.retire -= kept
	more -= kept
	// A free worker that was to stop is free again, as is each new one.
	woken := min(more, s.quit)
	s.quit -= woken
	for range more - woken {
		s.spawn(s.work)
	}
	var dropped []pending
	for range more {
		p, ok, d := s.takeLocked(dropped)
		dropped = d
		if !ok {
			s.idle++
			continue
		}
		s.inService++
		s.handed.push(p)
	}
	if len(dropped) > 0 {
		s.spawn(func(ctx context.Context) { s.refuseAll(ctx, dropped) })
	}
}

// Stats returns the current window.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	st, waits, svcs := s.snapshotLocked()
	s.mu.Unlock()
	st.QueueWaitMS = summarize(waits)
	st.ServiceMS = summarize(svcs)
	return st
}

// Reset closes the current window, returning it, and begins a new one.
// Connections queued or in service at that moment are carried into the new
// window (see Stats.Carried). The policy forgets what it learned (an
// adaptive limit starts again), so that each window of a sweep starts
// from the same policy, as each simulated window does.
func (s *Server) Reset() Stats {
	s.mu.Lock()
	st, waits, svcs := s.snapshotLocked()
	now := time.Now()
	s.w.reset(now, s.queue.n, s.inService, s.inside)
	s.policy.Reset()
	s.demand = s.cfg.Dist.Sampler()
	s.w.backlogMax = st.Backlogged
	s.mu.Unlock()
	st.QueueWaitMS = summarize(waits)
	st.ServiceMS = summarize(svcs)
	return st
}

func (s *Server) snapshotLocked() (Stats, []float64, []float64) {
	w := &s.w
	st := Stats{
		Since:     w.since,
		Workers:   s.cfg.Workers,
		Accepted:  w.accepted,
		Refused:   w.refused,
		Done:      w.done,
		Queued:    s.queue.n,
		QueuedMax: w.queuedMax,
		InService: s.inService,
		Bad:       w.bad.Timeout + w.bad.Gone + w.bad.Garbage,
		BadBy:     w.bad,
		Carried:   w.carried,
		BusyMS:    ms(w.busy),
		SpinCPUMS: ms(w.spinCPU),

		Dropped:     w.dropped,
		PolicyLimit: s.policy.Limit(),
		Reading:     s.reading,
		Classes:     w.classStats(s.inside),

		Backlogged: -1, BackloggedMax: -1, Backlog: -1,
	}
	if depth, limit, ok := s.kq.depth(); ok {
		st.Backlogged, st.BackloggedMax, st.Backlog = depth, max(w.backlogMax, depth), limit
	}
	if cpu, ok := processCPU(); ok {
		st.ProcessCPUMS = ms(cpu - w.processCPU)
	}
	return st, append([]float64(nil), w.waitSamples...), append([]float64(nil), w.svcSamples...)
}

// Registry returns the server's own Prometheus registry (served on
// GET /metrics), for callers that want to gather it in process.
func (s *Server) Registry() *prometheus.Registry { return s.reg }
