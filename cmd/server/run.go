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
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"capacitylab/classroom"
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
}

// run is the whole program: args are the command-line arguments without
// the program name, getenv reads the environment. It returns when ctx is
// cancelled (after a graceful shutdown) or on a fatal error.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 1 && args[0] == "lessons" && args[1] == "record" {
		return runRecord(ctx, args[2:], stderr)
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
	log := slog.New(slog.NewTextHandler(stderr, nil))

	var course web.CourseFunc
	if cfg.content != "" {
		dc, err := newDiskCourse(cfg.content, log)
		if err != nil {
			return err
		}
		course = dc.get
	} else {
		c, err := lessons.LoadWith(lessons.Content(), recorder.LoadOptions())
		if err != nil {
			return fmt.Errorf("embedded lessons do not validate:\n%w", err)
		}
		course = func() (*lessons.Course, error) { return c, nil }
	}

	assets, err := web.NewAssets(static.FS())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.data, 0o750); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	st, err := store.Open(filepath.Join(cfg.data, dbFile))
	if err != nil {
		return err
	}
	defer st.Close()
	// Runs the last server left queued or running are over. On a full
	// disk this cannot be stored; the pages show them interrupted anyway
	// (package web), so it is only logged and the server starts.
	if n, err := st.InterruptRuns(ctx, runner.UnsavedEndReason); err != nil {
		log.Error("marking the runs the last server left unfinished as interrupted", "err", err)
	} else if n > 0 {
		log.Warn("runs left unfinished by the last server marked interrupted", "runs", n)
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
	rn, err := runner.New(runner.Config{
		Lab:           labsvc.ChildCommand{Path: labCmd, Args: []string{"lab-child"}},
		Load:          labsvc.ChildCommand{Path: self, Args: []string{"load-child"}},
		QueueCapacity: cfg.queue,
		PerAddress:    cfg.perAddress,
		Limits:        limits,
		Store:         st,
		Logger:        log,
		Registerer:    reg,
		// A lab run to the end counts in the learner's LTI grade.
		Finished: func(learner, lesson, _ string, status store.RunStatus) {
			if status == store.RunDone {
				tool.ProgressChanged(ctx, learner, lesson)
			}
		},
	})
	if err != nil {
		return err
	}
	defer rn.Close()

	classes, err := classroom.New(classroom.Config{
		Store:    st,
		Lessons:  web.ClassLessons(course),
		StartRun: web.ClassRuns(course, rn),
		Idle:     cfg.sessionIdle,
		Logger:   log,
	})
	if err != nil {
		return err
	}
	defer classes.Close()

	handler := web.NewServer(web.Deps{
		Registry:             reg,
		Course:               course,
		Store:                st,
		Assets:               assets,
		Logger:               log,
		FrameAncestors:       cfg.frameAncestors,
		WidgetFrameAncestors: cfg.widgetAncestors,
		Runner:               rn,
		Classes:              classes,
		InstructorKey:        cfg.instructorKey,
		LTI:                  tool,
		PublicURL:            cfg.publicURL,
		TrustedProxies:       cfg.trustedProxies,
		JoinsPerMinute:       cfg.joinsPerMinute,
		SessionsPerHour:      cfg.sessionsPerHour,
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

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.StringVar(&cfg.addr, "addr", cmpOr(getenv("ADDR"), ":8080"), "listen address (env ADDR)")
	fs.StringVar(&cfg.content, "content", getenv("CONTENT"), "serve lessons from this directory, re-read on change (env CONTENT; default: embedded)")
	fs.StringVar(&cfg.data, "data", cmpOr(getenv("DATA"), "./data"), "directory for the SQLite file (env DATA)")
	fs.StringVar(&cfg.frameAncestors, "frame-ancestors", cmpOr(getenv("FRAME_ANCESTORS"), "'self'"), "CSP frame-ancestors sources, space-separated: who may frame lessons and other pages (env FRAME_ANCESTORS)")
	fs.StringVar(&cfg.widgetAncestors, "widget-frame-ancestors", cmpOr(getenv("WIDGET_FRAME_ANCESTORS"), "*"), "CSP frame-ancestors sources of the standalone widgets (/widgets/...), which change nothing: by default any course page may frame them (env WIDGET_FRAME_ANCESTORS)")
	fs.StringVar(&cfg.labCommand, "lab-command", getenv("LAB_COMMAND"), "program run with \"lab-child\" as each sweep's lab (env LAB_COMMAND; default: this binary)")
	// Whole-number flags, each with its environment variable, default
	// and allowed range.
	wholes := []wholeFlag{
		{"queue", "QUEUE", runner.DefaultQueueCapacity, 1, 100, "runs the queue holds, the running one included", &cfg.queue},
		{"queue-per-address", "QUEUE_PER_ADDRESS", runner.DefaultPerAddress, 1, 100, "runs one client address may have waiting or running", &cfg.perAddress},
		{"max-run-seconds", "MAX_RUN_SECONDS", runner.DefaultMaxRunSeconds, 1, 3600, "seconds of windows one run may ask for (windows × seconds)", &cfg.maxRunSeconds},
		{"max-run-cpu", "MAX_RUN_CPU", runner.DefaultMaxRunCPUSeconds, 1, 1_000_000, "seconds of processor time one run may ask of the lab (each window's rate × seconds × SPIN_MS, summed)", &cfg.maxRunCPU},
		{"joins-per-minute", "JOINS_PER_MINUTE", web.DefaultJoinsPerMinute, 1, 100_000, "times one client address may join class sessions a minute", &cfg.joinsPerMinute},
		{"sessions-per-hour", "SESSIONS_PER_HOUR", web.DefaultSessionsPerHour, 1, 100_000, "class sessions one client address may start an hour when there is no instructor key", &cfg.sessionsPerHour},
	}
	wholeText := make([]string, len(wholes))
	for i, w := range wholes {
		wholeText[i] = cmpOr(getenv(w.env), strconv.Itoa(w.def))
		fs.Func(w.name, fmt.Sprintf("%s, %d to %d (env %s; default %d)", w.usage, w.lo, w.hi, w.env, w.def), func(v string) error { wholeText[i] = v; return nil })
	}
	fs.StringVar(&cfg.instructorKey, "instructor-key", getenv("INSTRUCTOR_KEY"), "key needed to start a class session (env INSTRUCTOR_KEY; default: none, anyone may)")
	fs.StringVar(&cfg.publicURL, "public-url", getenv("PUBLIC_URL"), "the site's origin as learning platforms and browsers reach it, such as https://lab.example.org, for the LTI URLs (env PUBLIC_URL; default: each request's)")
	fs.StringVar(&cfg.ltiPlatforms, "lti-platforms", getenv("LTI_PLATFORMS"), "JSON file of LTI 1.3 platforms, beside those `server lti add` stored (env LTI_PLATFORMS)")
	proxies := getenv("TRUSTED_PROXIES")
	fs.Func("trusted-proxies", "reverse proxies in front of the server, addresses or networks such as 10.0.0.1,192.168.0.0/16: their Forwarded and X-Forwarded-For/-Proto headers are believed (env TRUSTED_PROXIES; default: none, the headers are ignored)", func(v string) error { proxies = v; return nil })
	idle := cmpOr(getenv("SESSION_IDLE"), classroom.DefaultIdle.String())
	fs.Func("session-idle", "class sessions end after this long without activity, 1m to 168h (env SESSION_IDLE; default "+classroom.DefaultIdle.String()+")", func(v string) error { idle = v; return nil })
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	// A bad value is named as it was given: by its flag, or by its
	// environment variable when the flag was not set.
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	source := func(flagName, env string) string {
		if given[flagName] {
			return "--" + flagName
		}
		return env
	}
	for i, w := range wholes {
		n, err := strconv.Atoi(wholeText[i])
		if err != nil || n < w.lo || n > w.hi {
			return cfg, usageError{fmt.Sprintf("%s %q is not allowed: want a whole number from %d to %d", source(w.name, w.env), wholeText[i], w.lo, w.hi)}
		}
		*w.dst = n
	}
	if d, err := time.ParseDuration(idle); err != nil || d < time.Minute || d > 168*time.Hour {
		return cfg, usageError{fmt.Sprintf("%s %q is not allowed: want a duration from 1m to 168h, such as 90m or 3h", source("session-idle", "SESSION_IDLE"), idle)}
	} else {
		cfg.sessionIdle = d
	}
	if tp, err := web.ParseTrustedProxies(proxies); err != nil {
		return cfg, usageError{fmt.Sprintf("%s: %v", source("trusted-proxies", "TRUSTED_PROXIES"), err)}
	} else {
		cfg.trustedProxies = tp
	}
	if fs.NArg() > 0 {
		return cfg, usageError{fmt.Sprintf("unexpected argument %q: want flags only, or a subcommand: \"lessons check [DIR]\", \"lessons record\", \"lti add|list|remove|rotate-key\"", fs.Arg(0))}
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
			return cfg, usageError{fmt.Sprintf("%s %q is not an origin: want scheme://host[:port], such as https://lab.example.org", source("public-url", "PUBLIC_URL"), cfg.publicURL)}
		}
		cfg.publicURL = strings.TrimSuffix(cfg.publicURL, "/")
	}
	return cfg, nil
}

// wholeFlag is a whole-number flag with its environment variable, default
// and allowed range.
type wholeFlag struct {
	name, env   string
	def, lo, hi int
	usage       string
	dst         *int
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

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// runLessons is "server lessons check [DIR]": it validates the lesson files
// in DIR (default: the embedded course) and prints each problem, or
// "ok: N lessons".
func runLessons(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "check" || len(args) > 2 {
		return usageError{"usage: server lessons check [DIR] | server lessons record [--content DIR] [--lesson SLUG] [--lab ID] [--seconds-scale F]"}
	}
	var fsys fs.FS = lessons.Content()
	where := "embedded course"
	if len(args) == 2 {
		info, err := os.Stat(args[1])
		if err != nil || !info.IsDir() {
			return usageError{fmt.Sprintf("lessons check: %q is not a directory: want the directory holding the lesson *.md files", args[1])}
		}
		fsys = os.DirFS(args[1])
		where = args[1]
	}
	c, err := lessons.LoadWith(fsys, recorder.LoadOptions())
	if err != nil {
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
	fmt.Fprintf(stdout, "ok: %d lessons\n", len(c.Lessons))
	return nil
}
