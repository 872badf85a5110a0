package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"capacitylab/affinity"
	"capacitylab/fleet"
	"capacitylab/labsvc"
	"capacitylab/lti"
	"capacitylab/runner"
	"capacitylab/store"
)

// The server's roles (--role): the single server, or the parts of a
// scaled-out site sharing one Postgres (package fleet).
const (
	roleAll    = "all"    // pages, APIs and the in-process queue of sweeps
	roleWeb    = "web"    // pages and APIs; sweeps queued for the runners
	roleRunner = "runner" // runs the queued sweeps; /healthz and /metrics only
)

// parseRole reads --role and --runner-slots into cfg.
func parseRole(cfg *config, f *serverFlags) error {
	switch cfg.role = f.role.Value; cfg.role {
	case roleAll, roleWeb, roleRunner:
	default:
		return usageError{fmt.Sprintf("%s %q is not allowed: want all, web or runner", f.role.Name(), cfg.role)}
	}
	if cfg.role != roleAll && cfg.databaseURL == "" {
		return usageError{fmt.Sprintf("%s %s needs --database-url (DATABASE_URL): web replicas and runners share one Postgres", f.role.Name(), cfg.role)}
	}
	if v := f.runnerSlots.Value; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 64 {
			return usageError{fmt.Sprintf("%s %q is not allowed: want a whole number from 1 to 64", f.runnerSlots.Name(), v)}
		}
		cfg.runnerSlots = n
	}
	return nil
}

// defaultSlots is one run per pair of cores this process may use (a run's
// lab child and load child take one each), or an error saying why there
// are none.
func defaultSlots() (int, error) {
	n := runtime.NumCPU()
	if cpus, err := affinity.ProcessCPUs(os.Getpid()); err == nil && len(cpus) > 0 {
		n = len(cpus)
	}
	if n < 2 {
		return 0, fmt.Errorf("a runner needs 2 cores it may use per run (one for the lab, one for the load generator); this process may use %d", n)
	}
	return n / 2, nil
}

// keepGeneratorsFree keeps slots processors free of the server's own work
// for its runs' load children (runner.KeepGeneratorsFree), caps limits'
// CPUS at the processors left (a lab child takes its processors from
// them), and logs what it did. It returns the free processors (nil: none
// kept) and what puts the process back, for when run returns.
func keepGeneratorsFree(slots int, limits *runner.Limits, log *slog.Logger) (free []int, undo func()) {
	free, kept, restore, err := runner.KeepGeneratorsFree(slots)
	undo = func() {
		if err := restore(); err != nil {
			log.Warn("putting the server's processors back", "err", err)
		}
	}
	if err != nil || free == nil {
		log.Info("no processor kept free for the load generators: they share the server's", "slots", slots, "err", err)
		return nil, undo
	}
	limits.MaxCPUs = max(1, min(limits.MaxCPUs, len(kept)))
	log.Info("processors kept free for the load generators", "generator_cpus", fmt.Sprint(free), "server_cpus", fmt.Sprint(kept), "gomaxprocs", runtime.GOMAXPROCS(0))
	return free, undo
}

// newRunner is the Runner that executes sweeps: the in-process queue of
// --role all, or the executor of a runner role's claimed runs. Its load
// children run on generator (keepGeneratorsFree; nil: any processor but
// their lab's).
func newRunner(cfg config, st *store.Store, log *slog.Logger, reg prometheus.Registerer, labCmd, self string, limits runner.Limits, generator []int,
	finished func(learner, lesson, block string, status store.RunStatus)) (*runner.Runner, error) {
	return runner.New(runner.Config{
		Lab:           labsvc.ChildCommand{Path: labCmd, Args: []string{"lab-child"}},
		Load:          labsvc.ChildCommand{Path: self, Args: []string{"load-child"}},
		Generator:     generator,
		QueueCapacity: cfg.queue,
		PerAddress:    cfg.perAddress,
		Concurrent:    cfg.runnerSlots,
		Limits:        limits,
		Store:         st,
		Logger:        log,
		Registerer:    reg,
		Finished:      finished,
	})
}

// gradeDoneRuns is the Runner's Finished: a lab run to the end counts in
// the learner's LTI grade.
func gradeDoneRuns(ctx context.Context, tool *lti.Tool) func(learner, lesson, block string, status store.RunStatus) {
	return func(learner, lesson, _ string, status store.RunStatus) {
		if status == store.RunDone {
			tool.ProgressChanged(ctx, learner, lesson)
		}
	}
}

// runRunner is --role runner: sweep jobs from the shared Postgres, run
// --runner-slots at once, and /healthz and /metrics on --addr. On SIGTERM
// (ctx ends) it takes no more jobs and ends its running runs interrupted.
func runRunner(ctx context.Context, cfg config, log *slog.Logger, stdout io.Writer) error {
	if cfg.runnerSlots == 0 {
		n, err := defaultSlots()
		if err != nil {
			return errors.New("runner: " + err.Error() + ": give it more cores, or run sweeps in a server of --role all")
		}
		cfg.runnerSlots = n
	}
	st, err := openStore(ctx, cfg.databaseURL, cfg.data)
	if err != nil {
		return err
	}
	defer st.Close()
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary to run a sweep's children: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	limits := runner.HostLimits()
	limits.MaxRunSeconds, limits.MaxRunCPUSeconds = float64(cfg.maxRunSeconds), float64(cfg.maxRunCPU)
	generator, unpin := keepGeneratorsFree(cfg.runnerSlots, &limits, log)
	defer unpin()
	// The runner that ends a lab run posts the learner's new LTI grade,
	// as the single server does.
	course, err := loadCourse(cfg, log)
	if err != nil {
		return err
	}
	tool, err := newLTITool(ctx, cfg, st, course, log)
	if err != nil {
		return err
	}
	defer tool.Close()
	rn, err := newRunner(cfg, st, log, reg, cmpOr(cfg.labCommand, self), self, limits, generator, gradeDoneRuns(ctx, tool))
	if err != nil {
		return err
	}
	defer rn.Close()
	host, _ := os.Hostname()
	var b [6]byte
	rand.Read(b[:])
	id := host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
	node, err := fleet.NewNode(fleet.NodeConfig{Store: st, Runner: rn, ID: id, Host: host, Slots: cfg.runnerSlots, Logger: log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.addr, err)
	}
	if err := node.Start(ctx); err != nil {
		ln.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := st.Ping(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "store unavailable")
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout, WriteTimeout: writeTimeout,
		IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes}
	// The same first line as the other roles, so whatever starts the
	// processes waits for it alike.
	fmt.Fprintf(stdout, "serving on %s\n", serveURL(ln.Addr()))
	log.Info("runner started", "runner", id, "slots", cfg.runnerSlots, "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	log.Info("runner stopping: no more jobs; running runs end interrupted")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := node.Stop(sctx); err != nil {
		log.Error("stopping the runner", "err", err)
	}
	if serveErr != nil {
		return fmt.Errorf("serve: %w", serveErr)
	}
	srv.Shutdown(sctx)
	<-errc
	return nil
}
