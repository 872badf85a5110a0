package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"capacitylab/admit"
	"capacitylab/classroom"
	"capacitylab/envflag"
	"capacitylab/fleet"
	"capacitylab/forwarding"
	"capacitylab/labsvc"
	"capacitylab/lessons"
	"capacitylab/measure"
	"capacitylab/recorder"
	"capacitylab/runner"
	"capacitylab/static"
	"capacitylab/store"
	"capacitylab/web"
)

// Server timeouts and limits.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10
	shutdownTimeout   = 10 * time.Second
	dbFile            = "capacitylab.db"
)

// usageError is a mistake in the command line; main exits 2 for it.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

// config is the server's configuration after flags and environment.
type config struct {
	addr            string
	content         string
	data            string
	databaseURL     string // Postgres; "" = the SQLite file in data
	frameAncestors  string
	widgetAncestors string // frame-ancestors of the standalone widgets
	labCommand      string // program run as a lab child with "lab-child"; "" = this binary
	queue           int    // runs the queue holds, the running one included
	perAddress      int    // runs one client address may have waiting or running
	maxRunSeconds   int    // windows × seconds of one run
	maxRunCPU       int    // processor seconds one run may ask of the lab
	joinsPerMinute  int    // class joins one address may make a minute
	sessionsPerHour int    // class sessions one address may start an hour without a key

	instructorKey string        // needed to start a class session; "" = anyone may
	sessionIdle   time.Duration // class sessions end after this long without activity

	publicURL    string // the site's origin as platforms and browsers reach it; "" = each request's
	ltiPlatforms string // LTI platforms file; "" = only those `server lti add` stored

	trustedProxies []netip.Prefix // reverse proxies whose forwarding headers are believed

	role        string // all, web or runner (roles.go)
	runnerSlots int    // runs a runner role runs at once; 0 = one per core pair it may use

	requestLog  web.RequestLog // which requests get a log line
	admit       admit.Spec     // the front door's policy (web.Deps.Gate)
	workers     int            // requests the front door lets be served at once
	admitWait   time.Duration  // the processors' line past which anonymous requests are refused; 0 = not watched
	memoryLimit int64          // the Go runtime's soft memory limit, bytes; math.MaxInt64 = off
}

// run is the whole program: args are the command-line arguments without
// the program name, getenv reads the environment. It returns when ctx is
// cancelled (after a graceful shutdown) or on a fatal error.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 1 && args[0] == "lessons" && args[1] == "record" {
		return runRecord(ctx, args[2:], stderr)
	}
	if len(args) > 1 && args[0] == "lessons" && args[1] == "marks" {
		return runMarks(args[2:], stdout)
	}
	if len(args) > 0 && args[0] == "lessons" {
		return runLessons(args[1:], stdout)
	}
	if len(args) > 0 && args[0] == "lti" {
		return runLTI(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "lab-child" {
		// Hidden: the runner starts each sweep's lab as this binary with
		// "lab-child" (labsvc.StartChild passes its listeners).
		return labsvc.RunChild(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) == 1 && args[0] == "load-child" {
		// Hidden: each sweep's load generator is this binary with
		// "load-child", speaking package measure's pipe protocol on its
		// stdin and stdout (the one place the server reads its stdin).
		return measure.RunLoadChild(ctx, os.Stdin, stdout, stderr)
	}
	cfg, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // -h: the usage is printed, nothing else to do
	}
	if err != nil {
		return err
	}
	// Once, at start: the runtime collects harder as the heap nears the
	// limit and gives memory back to the system below it, so the process
	// returns near its resting size after a burst.
	debug.SetMemoryLimit(cfg.memoryLimit)
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if cfg.role == roleRunner {
		return runRunner(ctx, cfg, log, stdout)
	}

	course, err := loadCourse(cfg, log)
	if err != nil {
		return err
	}

	assets, err := web.NewAssets(static.FS())
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg.databaseURL, cfg.data)
	if err != nil {
		return err
	}
	defer st.Close()
	// Runs the last server left queued or running are over. On a full
	// disk this cannot be stored; the pages show them interrupted anyway
	// (package web), so it is only logged and the server starts.
	// Only the single server does: a web replica's runs belong to the
	// runners, whose lost runs are reaped ("runner lost", package fleet).
	if cfg.role == roleAll {
		if n, err := st.InterruptRuns(ctx, runner.UnsavedEndReason); err != nil {
			log.Error("marking the runs the last server left unfinished as interrupted", "err", err)
		} else if n > 0 {
			log.Warn("runs left unfinished by the last server marked interrupted", "runs", n)
		}
	}
	if since, err := st.WriteHealth(ctx); err != nil {
		log.Error("the store cannot write: pages are served, changes are refused (503) until there is room", "since", since, "err", err)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary to run a sweep's children: %w", err)
	}
	labCmd := cmpOr(cfg.labCommand, self)
	// One registry for every part's metrics, served by web at /metrics.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	tool, err := newLTITool(ctx, cfg, st, course, log)
	if err != nil {
		return err
	}
	defer tool.Close()
	limits := runner.HostLimits()
	limits.MaxRunSeconds, limits.MaxRunCPUSeconds = float64(cfg.maxRunSeconds), float64(cfg.maxRunCPU)
	var queue web.Queue
	if cfg.role == roleWeb {
		q, err := fleet.NewQueue(fleet.Config{Store: st, QueueCapacity: cfg.queue, PerAddress: cfg.perAddress, Limits: limits, Registerer: reg})
		if err != nil {
			return err
		}
		queue = q
		reap, stopReap := context.WithCancel(ctx)
		reaped := make(chan struct{})
		go func() {
			defer close(reaped)
			q.ReapLoop(reap, log)
		}()
		defer func() {
			stopReap()
			<-reaped
		}()
	} else {
		generator, unpin := keepGeneratorsFree(max(1, cfg.runnerSlots), &limits, log)
		defer unpin()
		rn, err := newRunner(cfg, st, log, reg, labCmd, self, limits, generator, gradeDoneRuns(ctx, tool))
		if err != nil {
			return err
		}
		defer rn.Close()
		queue = rn
	}

	classes, err := classroom.New(classroom.Config{
		Store:     st,
		Lessons:   web.ClassLessons(course),
		StartRun:  web.ClassRuns(course, queue),
		CancelRun: web.CancelClassRuns(queue),
		Idle:      cfg.sessionIdle,
		Logger:    log,
	})
	if err != nil {
		return err
	}
	defer classes.Close()

	gate, err := admit.NewGate(cfg.admit, 0, cfg.workers)
	if err != nil {
		return err
	}
	if cfg.admitWait > 0 {
		gate.BoundWait(cfg.admitWait)
	}
	handler := web.NewServer(web.Deps{
		Gate:                 gate,
		Registry:             reg,
		Course:               course,
		Store:                st,
		Assets:               assets,
		Logger:               log,
		FrameAncestors:       cfg.frameAncestors,
		WidgetFrameAncestors: cfg.widgetAncestors,
		Runner:               queue,
		SharedRuns:           cfg.role == roleWeb, // runs run in runner processes: follow them from the store
		Classes:              classes,
		InstructorKey:        cfg.instructorKey,
		LTI:                  tool,
		PublicURL:            cfg.publicURL,
		TrustedProxies:       cfg.trustedProxies,
		JoinsPerMinute:       cfg.joinsPerMinute,
		SessionsPerHour:      cfg.sessionsPerHour,
		RequestLog:           cfg.requestLog,
	})
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.addr, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	fmt.Fprintf(stdout, "serving on %s\n", serveURL(ln.Addr()))
	log.Info("server started", "addr", ln.Addr().String(), "content", cmpOr(cfg.content, "embedded"), "data", cfg.data)
	if note := exposure(ln.Addr(), cfg.instructorKey != ""); note != "" {
		log.Warn(note, "addr", ln.Addr().String())
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	<-errc
	return nil
}

// loadCourse is the course the server serves: --content's directory,
// re-read on change, or the embedded lessons.
func loadCourse(cfg config, log *slog.Logger) (web.CourseFunc, error) {
	if cfg.content != "" {
		dc, err := newDiskCourse(cfg.content, log)
		if err != nil {
			return nil, err
		}
		return dc.get, nil
	}
	c, err := lessons.LoadWith(lessons.Content(), recorder.LoadOptions())
	if err != nil {
		return nil, fmt.Errorf("embedded lessons do not validate:\n%w", err)
	}
	return func() (*lessons.Course, error) { return c, nil }, nil
}

// defaultAddr is where the server listens unless told: this machine only.
const defaultAddr = "127.0.0.1:8080"

// serverFlags are the server's settings, each a flag with an environment
// variable as its fallback (package envflag).
type serverFlags struct {
	set                                              *envflag.Set
	addr, content, data, databaseURL, frameAncestors *envflag.Setting
	widgets                                          *envflag.Setting
	labCommand, instructorKey, publicURL, platforms  *envflag.Setting
	proxies, idle                                    *envflag.Setting
	role, runnerSlots                                *envflag.Setting
	requestLog                                       *envflag.Setting
	admit, admitWait, memoryLimit                    *envflag.Setting
	wholes                                           []wholeFlag
}

// wholeFlag is a whole-number setting with its allowed range.
type wholeFlag struct {
	*envflag.Setting
	lo, hi int
	dst    func(*config) *int
}

// newServerFlags defines the server's settings: the README's table of
// them, which TestREADMEServerTable keeps true.
func newServerFlags() *serverFlags {
	fs := envflag.New("server")
	f := &serverFlags{set: fs}
	f.addr = fs.Add(envflag.Setting{Flag: "addr", Env: "ADDR", Default: defaultAddr, Usage: "`host:port` to listen on: 127.0.0.1 is this machine only; :8080 (no host) listens on every interface, where anyone who reaches it may read the lessons, run sweeps and, without --instructor-key, start class sessions"})
	f.content = fs.Add(envflag.Setting{Flag: "content", Env: "CONTENT", Shown: "embedded", Usage: "serve lessons from this `directory`, re-read on change"})
	f.data = fs.Add(envflag.Setting{Flag: "data", Env: "DATA", Default: "./data", Usage: "`directory` for the SQLite file"})
	f.databaseURL = fs.Add(envflag.Setting{Flag: "database-url", Env: "DATABASE_URL", Shown: "none", Usage: "Postgres `URL` to keep everything in instead of the SQLite file in --data, such as postgres://user:password@host:5432/capacitylab"})
	f.frameAncestors = fs.Add(envflag.Setting{Flag: "frame-ancestors", Env: "FRAME_ANCESTORS", Default: "'self'", Usage: "CSP frame-ancestors `sources`, space-separated: who may frame lessons and other pages"})
	f.widgets = fs.Add(envflag.Setting{Flag: "widget-frame-ancestors", Env: "WIDGET_FRAME_ANCESTORS", Default: "*", Usage: "CSP frame-ancestors `sources` of the standalone widgets (/widgets/...), which change nothing: by default any course page may frame them"})
	whole := func(name, env string, def, lo, hi int, usage string, dst func(*config) *int) {
		st := fs.Add(envflag.Setting{Flag: name, Env: env, Default: strconv.Itoa(def), Allowed: fmt.Sprintf("%d to %d", lo, hi), Usage: usage})
		f.wholes = append(f.wholes, wholeFlag{st, lo, hi, dst})
	}
	whole("queue", "QUEUE", runner.DefaultQueueCapacity, 1, 100, "runs the queue holds, the running one included", func(c *config) *int { return &c.queue })
	whole("queue-per-address", "QUEUE_PER_ADDRESS", runner.DefaultPerAddress, 1, 100, "runs one client address may have waiting or running", func(c *config) *int { return &c.perAddress })
	whole("max-run-seconds", "MAX_RUN_SECONDS", runner.DefaultMaxRunSeconds, 1, 3600, "seconds of windows one run may ask for (windows × seconds)", func(c *config) *int { return &c.maxRunSeconds })
	whole("max-run-cpu", "MAX_RUN_CPU", runner.DefaultMaxRunCPUSeconds, 1, 1_000_000, "seconds of processor time one run may ask of the lab (each window's rate × seconds × SPIN_MS, summed)", func(c *config) *int { return &c.maxRunCPU })
	f.labCommand = fs.Add(envflag.Setting{Flag: "lab-command", Env: "LAB_COMMAND", Shown: "this binary", Usage: "`program` run with \"lab-child\" as each sweep's lab"})
	f.instructorKey = fs.Add(envflag.Setting{Flag: "instructor-key", Env: "INSTRUCTOR_KEY", Shown: "none", Usage: "`key` needed to start a class session (none: anyone may)"})
	whole("joins-per-minute", "JOINS_PER_MINUTE", web.DefaultJoinsPerMinute, 1, 100_000, "times one client address may join class sessions (or start LTI launches) a minute", func(c *config) *int { return &c.joinsPerMinute })
	whole("sessions-per-hour", "SESSIONS_PER_HOUR", web.DefaultSessionsPerHour, 1, 100_000, "class sessions one client address may start an hour when there is no instructor key", func(c *config) *int { return &c.sessionsPerHour })
	f.idle = fs.Add(envflag.Setting{Flag: "session-idle", Env: "SESSION_IDLE", Default: classroom.DefaultIdle.String(), Shown: "3h", Allowed: "1m to 168h", Usage: "class sessions end after this long without activity"})
	f.publicURL = fs.Add(envflag.Setting{Flag: "public-url", Env: "PUBLIC_URL", Shown: "each request's", Usage: "the site's `origin` as learning platforms and browsers reach it, such as https://lab.example.org, for the LTI URLs"})
	f.platforms = fs.Add(envflag.Setting{Flag: "lti-platforms", Env: "LTI_PLATFORMS", Shown: "none", Usage: "JSON `file` of LTI 1.3 platforms, beside those \"server lti add\" stored"})
	f.proxies = fs.Add(envflag.Setting{Flag: "trusted-proxies", Env: "TRUSTED_PROXIES", Shown: "none", Usage: "reverse proxies in front of the server, `addresses` or networks such as 10.0.0.1,192.168.0.0/16: their Forwarded and X-Forwarded-For/-Proto headers are believed (none: the headers are ignored)"})
	f.role = fs.Add(envflag.Setting{Flag: "role", Env: "ROLE", Default: roleAll, Allowed: "all, web or runner",
		Usage: "all: one server with its own queue of sweeps; web: pages and APIs, sweeps queued for the runners (needs --database-url); runner: runs the queued sweeps, serving only /healthz and /metrics (needs --database-url)"})
	f.runnerSlots = fs.Add(envflag.Setting{Flag: "runner-slots", Env: "RUNNER_SLOTS", Shown: "one per 2 cores it may use", Allowed: "1 to 64",
		Usage: "sweeps a runner role runs at once (each run's lab and load generator take a core each)"})
	f.requestLog = fs.Add(envflag.Setting{Flag: "request-log", Env: "REQUEST_LOG", Default: string(web.RequestLogSampled), Allowed: "sampled, all or errors",
		Usage: fmt.Sprintf("which requests get a log line: sampled (server errors, requests slower than %v and at most %d others a second), all, or errors (server errors and slow requests only); /metrics counts every request", web.SlowRequest, web.SampledPerSecond)})
	f.admit = fs.Add(envflag.Setting{Flag: "admit", Env: "ADMIT", Default: string(defaultAdmit), Allowed: admitAllowed,
		Usage: "the front door's admission `policy` (package admit): page loads and API reads by anonymous visitors are refused first, health checks, websockets and LTI launches never; refused requests get 503 with Retry-After"})
	f.admitWait = fs.Add(envflag.Setting{Flag: "admit-wait", Env: "ADMIT_WAIT", Default: defaultAdmitWait.String(), Allowed: "off, or a duration from 1ms to 1s",
		Usage: "the front door refuses anonymous page loads and API reads while requests wait longer than this for a processor (the 90th percentile over 50 ms), and everyone else but the critical while they wait four times as long: the line that forms before a request is read, which no count of requests inside sees"})
	whole("admit-workers", "ADMIT_WORKERS", defaultAdmitWorkers, 1, 1024, "requests the front door lets be served at once; the others it admits wait for one, first come first served, and count as inside", func(c *config) *int { return &c.workers })
	f.memoryLimit = fs.Add(envflag.Setting{Flag: "memory-limit", Env: "GOMEMLIMIT", Default: defaultMemoryLimit, Allowed: "off, or a size such as 512MiB or 1GiB",
		Usage: "the Go runtime's soft memory `limit`: it collects harder as the heap nears it and gives memory back below it"})
	return f
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	f := newServerFlags()
	var cfg config
	if err := f.set.Parse(args, getenv, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, usageError{err.Error()}
	}
	cfg.addr, cfg.content, cfg.data, cfg.databaseURL = f.addr.Value, f.content.Value, f.data.Value, f.databaseURL.Value
	cfg.frameAncestors, cfg.widgetAncestors = f.frameAncestors.Value, f.widgets.Value
	cfg.labCommand, cfg.instructorKey = f.labCommand.Value, f.instructorKey.Value
	cfg.publicURL, cfg.ltiPlatforms = f.publicURL.Value, f.platforms.Value
	// A bad value is named as it was given: by its flag, or by its
	// environment variable when the flag was not set.
	for _, w := range f.wholes {
		n, err := strconv.Atoi(w.Value)
		if err != nil || n < w.lo || n > w.hi {
			return cfg, usageError{fmt.Sprintf("%s %q is not allowed: want a whole number from %d to %d", w.Name(), w.Value, w.lo, w.hi)}
		}
		*w.dst(&cfg) = n
	}
	if d, err := time.ParseDuration(f.idle.Value); err != nil || d < time.Minute || d > 168*time.Hour {
		return cfg, usageError{fmt.Sprintf("%s %q is not allowed: want a duration from 1m to 168h, such as 90m or 3h", f.idle.Name(), f.idle.Value)}
	} else {
		cfg.sessionIdle = d
	}
	if tp, err := forwarding.ParseTrusted(f.proxies.Value); err != nil {
		return cfg, usageError{fmt.Sprintf("%s: %v", f.proxies.Name(), err)}
	} else {
		cfg.trustedProxies = tp
	}
	if rl, err := web.ParseRequestLog(f.requestLog.Value); err != nil {
		return cfg, usageError{fmt.Sprintf("%s: %v", f.requestLog.Name(), err)}
	} else {
		cfg.requestLog = rl
	}
	if spec, err := parseAdmit(f.admit.Value); err != nil {
		return cfg, usageError{fmt.Sprintf("%s %q is not allowed: want %s", f.admit.Name(), f.admit.Value, err)}
	} else {
		cfg.admit = spec
	}
	if d, err := parseAdmitWait(f.admitWait.Value); err != nil {
		return cfg, usageError{fmt.Sprintf("%s %q is not allowed: want off, or a duration from 1ms to 1s, such as 10ms", f.admitWait.Name(), f.admitWait.Value)}
	} else {
		cfg.admitWait = d
	}
	if n, err := parseSize(f.memoryLimit.Value); err != nil {
		return cfg, usageError{fmt.Sprintf("%s %q is not allowed: want off, or a size from %s up, such as 512MiB or 1GiB (%v)", f.memoryLimit.Name(), f.memoryLimit.Value, minMemoryLimitText, err)}
	} else {
		cfg.memoryLimit = n
	}
	if err := parseRole(&cfg, f); err != nil {
		return cfg, err
	}
	if fs := f.set.FlagSet(); fs.NArg() > 0 {
		return cfg, usageError{fmt.Sprintf("unexpected argument %q: want flags only, or a subcommand: \"lessons check [DIR]\", \"lessons marks\", \"lessons record\", \"lti add|list|remove|rotate-key\"", fs.Arg(0))}
	}
	if err := checkFrameAncestors("--frame-ancestors", cfg.frameAncestors); err != nil {
		return cfg, err
	}
	if err := checkFrameAncestors("--widget-frame-ancestors", cfg.widgetAncestors); err != nil {
		return cfg, err
	}
	if cfg.data == "" {
		return cfg, usageError{"--data is empty: want a directory for the SQLite file"}
	}
	if cfg.publicURL != "" {
		u, err := url.Parse(cfg.publicURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
			return cfg, usageError{fmt.Sprintf("%s %q is not an origin: want scheme://host[:port], such as https://lab.example.org", f.publicURL.Name(), cfg.publicURL)}
		}
		cfg.publicURL = strings.TrimSuffix(cfg.publicURL, "/")
	}
	return cfg, nil
}

// checkFrameAncestors accepts, for the flag named, a space-separated CSP
// source list: 'self', 'none' (alone), * , schemes such as https:, or hosts
// such as https://*.example.org.
func checkFrameAncestors(flag, v string) error {
	fields := strings.Fields(v)
	if len(fields) == 0 {
		return usageError{flag + " is empty: want 'self', 'none', * or space-separated origins such as https://course.example.org"}
	}
	for _, f := range fields {
		switch {
		case f == "'none'" && len(fields) > 1:
			return usageError{flag + ": 'none' must be the only source"}
		case f == "'self'" || f == "'none'":
		case strings.ContainsAny(f, ";,'\"") || strings.ContainsFunc(f, func(r rune) bool { return r < 0x21 || r > 0x7e }):
			return usageError{fmt.Sprintf("%s: %q is not a CSP source: want 'self', 'none', *, a scheme (https:) or an origin (https://course.example.org)", flag, f)}
		}
	}
	return nil
}

// openStore opens the Postgres database at databaseURL, or when that is
// empty the SQLite file in the data directory (creating both).
func openStore(ctx context.Context, databaseURL, data string) (*store.Store, error) {
	if databaseURL != "" {
		return store.OpenPostgres(ctx, databaseURL)
	}
	if err := os.MkdirAll(data, 0o750); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	st, err := store.Open(filepath.Join(data, dbFile))
	if errors.Is(err, store.ErrReadOnly) {
		return nil, fmt.Errorf("%w (--data, DATA: the directory for the SQLite file)", err)
	}
	return st, err
}

func serveURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String() + "/"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// exposure is what the log says when the server listens on every
// interface (an address without a host, or 0.0.0.0 or ::): who else may
// use it, and what an instructor key keeps to instructors. "" when it
// listens on one address (127.0.0.1 by default: this machine only).
func exposure(a net.Addr, key bool) string {
	host, _, err := net.SplitHostPort(a.String())
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsUnspecified() {
		return ""
	}
	if key {
		return "listening on every interface: anyone who reaches this address may read the lessons, run sweeps and join classes; starting a class session needs the instructor key"
	}
	return "listening on every interface without --instructor-key: anyone who reaches this address may read the lessons, run sweeps, and start class sessions (with class runs on this machine's lab)"
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// lessonsUsage lists the lessons subcommands.
const lessonsUsage = "usage: server lessons check [--pending] [DIR] | server lessons marks [--content DIR] [--all] [--fix] | server lessons record [--content DIR] [--lesson SLUG] [--lab ID] [--seconds-scale F] [--max-load F] [--busy]"

// runLessons is "server lessons check [--pending] [DIR]": it validates the
// lesson files in DIR (default: the embedded course), recomputes every mark
// from the tables, and prints each problem, or "ok: N lessons the site
// lists" and the fixtures it does not list (checkedText). With
// --pending, tables still to be recorded are allowed (and listed).
func runLessons(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "check" {
		return usageError{lessonsUsage}
	}
	fset := flag.NewFlagSet("server lessons check", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	pending := fset.Bool("pending", false, "allow tables still to be recorded (pending: true), and list them")
	if err := fset.Parse(args[1:]); err != nil || fset.NArg() > 1 {
		return usageError{lessonsUsage}
	}
	var fsys fs.FS = lessons.Content()
	where := "embedded course"
	if fset.NArg() == 1 {
		dir := fset.Arg(0)
		info, err := os.Stat(dir)
		if err != nil || !info.IsDir() {
			return usageError{fmt.Sprintf("lessons check: %q is not a directory: want the directory holding the lesson *.md files", dir)}
		}
		fsys = os.DirFS(dir)
		where = dir
	}
	opts := recorder.LoadOptions()
	opts.Pending = *pending
	if err := lessons.Check(fsys, opts); err != nil {
		var errs lessons.Errors
		if errors.As(err, &errs) {
			for _, e := range errs {
				fmt.Fprintln(stdout, e.Error())
			}
			return fmt.Errorf("%s: %d problem(s)", where, len(errs))
		}
		fmt.Fprintln(stdout, err)
		return fmt.Errorf("%s: lessons do not validate", where)
	}
	c, err := lessons.LoadWith(fsys, opts)
	if err != nil {
		return err
	}
	n := 0
	for _, l := range c.Lessons {
		for _, b := range l.Blocks() {
			if t, ok := b.(*lessons.Table); ok && t.Pending {
				fmt.Fprintf(stdout, "%s:%d: to record: server lessons record --lab %s\n", l.File, t.Line, t.Preset)
				n++
			}
		}
	}
	fmt.Fprintln(stdout, checkedText(c, n))
	return nil
}

// checkedText is what `lessons check` says of a course that validates:
// the lessons the site lists (lessons.Course.Listed), the fixtures it
// serves without listing, and the tables still to be recorded (n).
func checkedText(c *lessons.Course, n int) string {
	listed := c.Listed()
	out := fmt.Sprintf("ok: %d lesson(s) the site lists", len(listed))
	var fixtures []string
	for _, l := range c.Lessons {
		if l.Fixture() {
			fixtures = append(fixtures, l.Slug)
		}
	}
	if len(fixtures) > 0 {
		out += fmt.Sprintf(", and %d test fixture(s) it serves without listing (%s)", len(fixtures), strings.Join(fixtures, ", "))
	}
	if n > 0 {
		out += fmt.Sprintf("; %d table(s) still to be recorded", n)
	}
	return out
}

// runMarks is "server lessons marks [--content DIR] [--all] [--fix]": it
// recomputes every mark of the lessons in DIR (default lessons/content)
// from their tables and lists, as file:line, each one that no longer
// holds (a number that no longer rounds to what is written, a claim now
// false, one that cannot be computed) and each that reads a table still to
// be recorded; --all lists every mark. --fix rewrites each stale number to
// what the tables give (same decimals and rule) and lists what it changed,
// so the sentences around them can be re-read. It fails while any mark
// does not hold.
func runMarks(args []string, stdout io.Writer) error {
	fset := flag.NewFlagSet("server lessons marks", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	dir := fset.String("content", defaultContentDir, "lesson directory")
	all := fset.Bool("all", false, "list every mark, not only those that do not hold")
	fix := fset.Bool("fix", false, "rewrite stale numbers to what the tables give")
	if err := fset.Parse(args); err != nil || fset.NArg() > 0 {
		return usageError{lessonsUsage}
	}
	if info, err := os.Stat(*dir); err != nil || !info.IsDir() {
		return usageError{fmt.Sprintf("lessons marks: --content %q is not a directory: want the directory holding the lesson *.md files (run from the repository root for the default, lessons/content)", *dir)}
	}
	opts := recorder.LoadOptions()
	opts.Pending = true
	c, err := lessons.LoadWith(os.DirFS(*dir), opts)
	if err != nil {
		return fmt.Errorf("%s does not load:\n%w", *dir, err)
	}
	results := c.CheckMarks()
	counts := map[string]int{}
	for _, r := range results {
		counts[r.Status]++
		if *all || r.Status != lessons.MarkOK {
			fmt.Fprintln(stdout, r.String())
		}
	}
	fixed := 0
	if *fix {
		if fixed, err = lessons.FixMarks(*dir, results); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "marks: %d ok, %d stale, %d broken, %d pending", counts[lessons.MarkOK], counts[lessons.MarkStale], counts[lessons.MarkBroken], counts[lessons.MarkPending])
	if *fix {
		fmt.Fprintf(stdout, "; rewrote %d number(s): read the sentences around them, and reword the claims that no longer hold", fixed)
	}
	fmt.Fprintln(stdout)
	if bad := counts[lessons.MarkStale] + counts[lessons.MarkBroken] - fixed; bad > 0 {
		return fmt.Errorf("%d mark(s) do not hold", bad)
	}
	return nil
}
