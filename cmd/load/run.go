package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"capacitylab/affinity"
	"capacitylab/envflag"
	"capacitylab/evidence"
	"capacitylab/hedge"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/measure"
	"capacitylab/model"
	"capacitylab/result"
	"capacitylab/retry"
	"capacitylab/sim"
)

// Defaults, as the lessons show them.
const (
	defaultTarget  = "http://127.0.0.1:8000"
	defaultControl = "http://127.0.0.1:8001"
	defaultRates   = "40,48,60,100"
	defaultSeconds = 20
	// checkRequests is how many sequential requests --check times, after
	// one warm-up request.
	checkRequests = 20
	// restGoal is how far above SPIN_MS + WAIT_MS the service time at rest
	// may be, as a fraction: the lab's own goal (docs/BENCHMARKS.md).
	restGoal = 0.01
)

// usageError is bad input: exit status 2, nothing sent.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// exitStatus is 2 for bad input, 1 for anything else.
func exitStatus(err error) int {
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// options are the parsed command line.
type options struct {
	target, control string
	rates           []float64
	clients         []int
	arrivals        []time.Duration
	seconds         float64
	seed            uint64
	timeout         time.Duration
	process         loadrun.ArrivalProcess
	rng             loadrun.Source
	records         string
	json, check     bool
	simulate        bool
	lab             labsvc.Config       // with simulate: the simulated lab's knobs
	maxInFlight     int                 // the client's fixed pool of workers, 0 for none
	retry           retry.Spec          // --retry: the client's retries, backoff, budget and breaker
	critical        float64             // --critical: share of arrivals sent X-Criticality: critical
	sheddable       float64             // --sheddable: share sent X-Criticality: sheddable
	fanout          int                 // --fanout: sub-requests an arrival, 1 for none
	hedge           hedge.Spec          // --hedge: the client's hedged requests
	changes         []result.KnobChange // --at, in the order given
	overTime        bool                // --over-time: a sample every second, a line for each
	samples         string              // --samples: write the samples as CSV to this file
	knee            *kneePlan           // --knee: a knee search instead of the rates given
	metricsURL      string              // --metrics: the service's Prometheus text endpoint
	metrics         []metricSpec        // --gauge and --counter, in the order given
	queueHeader     string              // --queue-header: the reply header read into queue_wait_ms
	report          string              // --report NAME: NAME.csv and NAME.json
}

// nameList is a repeatable flag's values, in order.
type nameList []string

func (l *nameList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, " ")
}

func (l *nameList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// changeList is --at: every knob change given, in order.
type changeList []result.KnobChange

func (l *changeList) String() string {
	if l == nil {
		return ""
	}
	s := make([]string, len(*l))
	for i, c := range *l {
		s[i] = c.String()
	}
	return strings.Join(s, " ")
}

func (l *changeList) Set(v string) error {
	c, err := result.ParseKnobChange(v)
	if err != nil {
		return err
	}
	*l = append(*l, c)
	return nil
}

// loadFlags defines load's flags: the target and the lab's control API
// with their environment variables, the load's own, and the lab's knobs for
// --simulate.
func loadFlags() (fs *envflag.Set, target, control *envflag.Setting, knobs *labsvc.KnobFlags) {
	fs = envflag.New("load")
	target = fs.Add(envflag.Setting{Flag: "target", Env: "TARGET", Default: defaultTarget, Usage: "where requests go"})
	control = fs.Add(envflag.Setting{Flag: "control", Env: "CONTROL", Default: defaultControl, Usage: `the lab's control API ("none" for no lab)`})
	f := fs.FlagSet()
	f.String("rate", defaultRates, "offered rates, arrivals a second, one window each")
	f.Float64("seconds", defaultSeconds, "length of each window, seconds")
	f.Uint64("seed", 1, "seed of the arrival schedules")
	f.Duration("timeout", result.DefaultTimeout, "how long a caller waits for an answer")
	f.String("schedule", string(loadrun.Poisson), "arrival process: poisson or uniform")
	f.String("closed", "", "closed loop with N clients (or a list, one window each)")
	f.String("records", "", "write raw records as CSV to this file")
	f.Bool("json", false, "one JSON object per row instead of the table")
	f.Bool("check", false, "check the service and print what to expect")
	f.String("rng", string(loadrun.PCG), "random source of the schedules: pcg, or python (CPython's random.seed and expovariate)")
	f.String("arrivals", "", "send at the times in this file (seconds from the window's start, one a line) instead of --rate")
	f.Bool("simulate", false, "simulate the lab (package sim) with the knob flags or WORKERS, SPIN_MS, ... instead of sending")
	f.Int("max-inflight", 0, "a client with this many workers (open loop): an arrival that finds them all busy is not sent and counts in client_busy; 0 for none")
	f.String("retry", "", `a retrying client (open loop), name=value joined by commas, e.g. "retries=3,backoff=jitter,budget=0.1": retries, on, backoff, base_ms, cap_ms, retry_after, budget, burst, breaker, breaker_min, window_ms, open_ms, probes (package retry); "" for none`)
	f.Float64("critical", 0, "share of arrivals (0 to 1) sent with X-Criticality: critical (open loop)")
	f.Float64("sheddable", 0, "share of arrivals (0 to 1) sent with X-Criticality: sheddable (open loop); critical + sheddable at most 1")
	f.Int("fanout", 1, "each arrival a request of this many sub-requests sent at once, done when the last answers (open loop; 1 to 100)")
	f.String("hedge", "", `hedged requests (open loop): a copy of a request not answered within a delay, e.g. "delay_ms=20" or "percentile=95": delay_ms or percentile, window, warmup, max (package hedge); "" for none`)
	f.Bool("over-time", false, "a run over time: a line every second of each window (ok/s, refused, gave up, in flight, the lab's limit and queue, p99)")
	f.String("samples", "", "with --over-time: write every second's sample as CSV to this file")
	f.Var(&changeList{}, "at", "change a lab knob at a time into every window, "+result.KnobChangeSyntax+", or 10s:WORKERS=8 (capacity that lands mid-run); the knobs that may change: "+labsvc.ChangeableKnobs+" (WORKERS with ACCEPT=door); repeatable")
	f.String("knee", "", "find the knee: rates from FROM up to TO (FROM:TO), each the last times --step, stopping by itself")
	f.Float64("step", defaultStep, "with --knee: each window's rate is the last one's times this")
	f.Duration("max-p99", 0, "with --knee: stop after a window whose p99 passes this (0 for no bound)")
	f.Float64("max-errors", defaultMaxErrors, "with --knee: stop after a window whose share of requests sent not ok passes this")
	f.Duration("budget", defaultBudget, "with --knee: the most time the search may take, its recovery window included")
	f.Bool("recovery", true, "with --knee: one window at FROM after the search stops, to see whether the service recovers")
	f.String("metrics", "", "the service's Prometheus text endpoint (e.g. http://127.0.0.1:8000/metrics), read every second in each window")
	f.Var(&nameList{}, "gauge", "with --metrics: a gauge to read, NAME or NAME{label=\"value\"}; repeatable")
	f.Var(&nameList{}, "counter", "with --metrics: a counter whose increase a second to read, NAME or NAME{label=\"value\"}; repeatable")
	f.String("queue-header", "", "the reply header (milliseconds) read into each record's queue_wait_ms instead of X-Queue-Wait-Ms")
	f.String("report", "", "write the records to NAME.csv and the report's data to NAME.json")
	knobs = labsvc.AddKnobFlags(fs)
	return fs, target, control, knobs
}

func parse(args []string, getenv func(string) string, usage io.Writer) (options, error) {
	fs, target, control, knobs := loadFlags()
	if err := fs.Parse(args, getenv, usage); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return options{}, err
		}
		return options{}, usageError{err.Error()}
	}
	f := fs.FlagSet()
	if f.NArg() > 0 {
		return options{}, usagef("unexpected argument %q: every setting is a flag, e.g. --rate 40,60", f.Arg(0))
	}
	get := func(name string) flag.Getter { return f.Lookup(name).Value.(flag.Getter) }
	text := func(name string) string { return f.Lookup(name).Value.String() }
	set := fs.Given
	rates, closed, arrivals := text("rate"), text("closed"), text("arrivals")

	o := options{
		target:  strings.TrimSpace(target.Value),
		control: strings.TrimSpace(control.Value),
		seconds: get("seconds").Get().(float64),
		seed:    get("seed").Get().(uint64),
		timeout: get("timeout").Get().(time.Duration),
		records: text("records"),
		json:    get("json").Get().(bool),
		check:   get("check").Get().(bool),
	}
	// A --target or --control left empty means the default, as an unset
	// variable does.
	if o.target == "" {
		o.target = defaultTarget
	}
	if o.control == "" {
		o.control = defaultControl
	}
	if o.control == "none" {
		o.control = ""
	}
	var err error
	if o.process, err = loadrun.ParseArrivalProcess(text("schedule")); err != nil {
		return o, usageError{err.Error()}
	}
	if o.rng, err = loadrun.ParseSource(text("rng")); err != nil {
		return o, usageError{"--rng: " + err.Error()}
	}
	o.simulate = get("simulate").Get().(bool)
	o.changes = *f.Lookup("at").Value.(*changeList)
	o.overTime, o.samples = get("over-time").Get().(bool), text("samples")
	if o.samples != "" && !o.overTime {
		return o, usagef("--samples writes a run over time's samples: add --over-time")
	}
	o.maxInFlight = get("max-inflight").Get().(int)
	if o.maxInFlight < 0 || o.maxInFlight > result.MaxMaxInFlight {
		return o, usagef("--max-inflight %d is not allowed: want 0 (no fixed pool of client workers) or 1 to %d", o.maxInFlight, result.MaxMaxInFlight)
	}
	if o.maxInFlight > 0 && closed != "" {
		return o, usagef("--max-inflight is for an open loop: with --closed the clients are the workers")
	}
	if err := parseClient(&o, f, closed != ""); err != nil {
		return o, err
	}
	if len(o.changes) > 0 && !o.simulate && o.control == "" {
		return o, usagef("--at changes the lab's knobs through its control API: give --control, not none")
	}
	if o.simulate {
		for _, name := range []string{"target", "control", "check"} {
			if set(name) {
				return o, usagef("--%s is for a real lab: --simulate sends nothing (give the lab's knobs instead, e.g. --workers 4)", name)
			}
		}
		if o.lab, err = knobs.Config(); err != nil {
			return o, usageError{err.Error()}
		}
	} else if given := knobs.Given(); len(given) > 0 {
		return o, usagef("%s sets the simulated lab's knobs: add --simulate, or set the knobs where the lab runs (cmd/lab)", given[0])
	}
	if err := parseService(&o, f, set); err != nil {
		return o, err
	}
	if o.knee, err = parseKnee(f, set, o.seconds, o.timeout); err != nil {
		return o, err
	}
	if o.knee != nil {
		o.rates = []float64{o.knee.from, o.knee.to} // checked as a sweep's; the search runs its own
		return o, checkSeconds(o.seconds)
	}
	if arrivals != "" {
		for _, name := range []string{"rate", "closed", "schedule", "rng", "seed"} {
			if set(name) {
				return o, usagef("--arrivals and --%s exclude each other: the file gives the send times itself", name)
			}
		}
		if o.arrivals, err = readArrivals(arrivals); err != nil {
			return o, err
		}
		if !set("seconds") {
			// The window lasts to the next whole second after the last arrival.
			last := o.arrivals[len(o.arrivals)-1].Seconds()
			if o.seconds = math.Floor(last) + 1; o.seconds > result.MaxSeconds {
				return o, usagef("--arrivals %s: the last time, %v s, is past the longest window there may be (%d s)", arrivals, last, result.MaxSeconds)
			}
		}
		return o, checkSeconds(o.seconds)
	}
	if closed != "" {
		if set("rate") {
			return o, usagef("--rate and --closed exclude each other: open loop sends at rates, closed loop with clients")
		}
		if o.clients, err = parseClients(closed); err != nil {
			return o, err
		}
	} else if o.rates, err = parseRates(rates); err != nil {
		return o, err
	}
	return o, checkSeconds(o.seconds)
}

// parseClient reads the flags about the open-loop client's requests:
// --retry, --critical and --sheddable.
func parseClient(o *options, f *flag.FlagSet, closed bool) error {
	spec := f.Lookup("retry").Value.String()
	var err error
	if o.retry, err = retry.Parse(spec); err != nil {
		return usagef("--retry: %v", err)
	}
	o.critical = f.Lookup("critical").Value.(flag.Getter).Get().(float64)
	o.sheddable = f.Lookup("sheddable").Value.(flag.Getter).Get().(float64)
	for _, c := range []struct {
		name  string
		share float64
	}{{"critical", o.critical}, {"sheddable", o.sheddable}} {
		if math.IsNaN(c.share) || c.share < 0 || c.share > 1 {
			return usagef("--%s %v is not allowed: want a share of the arrivals from 0 to 1, e.g. 0.2", c.name, c.share)
		}
	}
	if o.critical+o.sheddable > 1 {
		return usagef("--critical %v and --sheddable %v are not allowed: want shares of the arrivals together at most 1 (the rest are sent without a class)", o.critical, o.sheddable)
	}
	o.fanout = f.Lookup("fanout").Value.(flag.Getter).Get().(int)
	if o.fanout < 1 || o.fanout > loadrun.MaxFanout {
		return usagef("--fanout %d is not allowed: want 1 (each arrival one request) to %d sub-requests an arrival", o.fanout, loadrun.MaxFanout)
	}
	if o.hedge, err = hedge.Parse(f.Lookup("hedge").Value.String()); err != nil {
		return usagef("--hedge: %v", err)
	}
	if (o.fanout > 1 || !o.hedge.IsZero()) && !o.retry.IsZero() {
		return usagef("--retry does not go with --fanout or --hedge yet: give one client option")
	}
	if closed {
		switch {
		case !o.retry.IsZero():
			return usagef("--retry is for an open loop: with --closed each client waits for its answer and never retries")
		case o.critical > 0 || o.sheddable > 0:
			return usagef("--critical and --sheddable are for an open loop: with --closed every request is sent without a class")
		case o.fanout > 1 || !o.hedge.IsZero():
			return usagef("--fanout and --hedge are for an open loop: with --closed each client sends one request at a time")
		}
	}
	return nil
}

// parseService reads the flags about the service itself: --metrics with
// its --gauge and --counter names, --queue-header and --report.
func parseService(o *options, f *flag.FlagSet, set func(string) bool) error {
	o.metricsURL = strings.TrimSpace(f.Lookup("metrics").Value.String())
	o.queueHeader = f.Lookup("queue-header").Value.String()
	o.report = f.Lookup("report").Value.String()
	for _, kind := range []string{"gauge", "counter"} {
		for _, name := range *f.Lookup(kind).Value.(*nameList) {
			if o.metricsURL == "" {
				return usagef("--%s %s reads the service's metrics: add --metrics URL (its Prometheus text endpoint)", kind, name)
			}
			spec, err := parseMetricSpec(kind, name, kind == "counter")
			if err != nil {
				return err
			}
			o.metrics = append(o.metrics, spec)
		}
	}
	if o.metricsURL != "" {
		u, err := url.Parse(o.metricsURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("--metrics %q is not allowed: want the service's metrics as an http:// URL, e.g. http://127.0.0.1:8000/metrics", o.metricsURL)
		}
		if len(o.metrics) == 0 {
			return usagef("--metrics reads the metrics named: add --gauge NAME or --counter NAME (repeatable)")
		}
	}
	if o.simulate {
		for _, name := range []string{"metrics", "queue-header"} {
			if set(name) {
				return usagef("--%s reads a real service: --simulate sends nothing", name)
			}
		}
	}
	if set("queue-header") {
		if _, err := (loadrun.Target{}).WithQueueHeader(o.queueHeader); err != nil {
			return usagef("--queue-header: %v", err)
		}
	}
	if set("report") && (o.report == "" || strings.HasSuffix(o.report, "/")) {
		return usagef("--report %q is not allowed: want a file name without its ending, e.g. --report results (writes results.csv and results.json)", o.report)
	}
	return nil
}

func checkSeconds(seconds float64) error {
	if math.IsNaN(seconds) || seconds <= 0 || seconds > result.MaxSeconds {
		return usagef("--seconds %v is not allowed: want more than 0 and at most %d", seconds, result.MaxSeconds)
	}
	return nil
}

// readArrivals reads an --arrivals file; its mistakes name the file and line.
func readArrivals(path string) ([]time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("--arrivals %q cannot be read: %v", path, rootCause(err))
	}
	defer f.Close()
	arr, err := loadrun.ReadArrivals(f)
	if err != nil {
		return nil, usagef("--arrivals %s: %v", path, err)
	}
	return arr, nil
}

func parseRates(s string) ([]float64, error) {
	var out []float64
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		r, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(r) || math.IsInf(r, 0) {
			return nil, usagef("--rate %q: %q is not a number; want rates a second separated by commas, e.g. 40,48,60,100", s, f)
		}
		if r <= 0 || r > result.MaxRate {
			return nil, usagef("--rate %q: %v is not allowed; want more than 0 and at most %d a second", s, r, result.MaxRate)
		}
		out = append(out, r)
	}
	return out, nil
}

func parseClients(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > result.MaxClients {
			return nil, usagef("--closed %q: %q is not allowed; want client counts from 1 to %d separated by commas", s, f, result.MaxClients)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 1 && args[0] == "load-child" {
		// Hidden: a load child of package measure (the server's runs
		// start their own binary so; this one serves the same), speaking
		// its pipe protocol on stdin and stdout.
		return measure.RunLoadChild(ctx, os.Stdin, stdout, stderr)
	}
	o, err := parse(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the usage has been printed
	}
	if err != nil {
		return err
	}
	s := loadrun.Sweep{Rates: o.rates, Clients: o.clients, Arrivals: o.arrivals, Seconds: o.seconds, Seed: o.seed, Process: o.process, RNG: o.rng,
		ClientWorkers: o.maxInFlight, Changes: o.changes, Retry: o.retry, Critical: o.critical, Sheddable: o.sheddable, Fanout: o.fanout, Hedge: o.hedge}
	if o.overTime {
		s.SampleEvery = measure.SampleEvery
	}
	var target loadrun.Target
	var ctl *loadrun.Control
	if o.simulate {
		m := sim.Model{Lab: o.lab, Timeout: o.timeout}
		if err := m.Validate(); err != nil {
			return usageError{err.Error()}
		}
		s.Driver = m
	} else {
		var split []loadrun.Target
		for _, raw := range strings.Split(o.target, ",") {
			t, err := loadrun.NewTarget(strings.TrimSpace(raw), o.timeout)
			if err != nil {
				return usageError{err.Error()}
			}
			if o.queueHeader != "" {
				if t, err = t.WithQueueHeader(o.queueHeader); err != nil {
					return usagef("--queue-header: %v", err)
				}
			}
			split = append(split, t)
		}
		target = split[0]
		if len(split) > 1 {
			s.Split = split
			if o.check {
				return usagef("--check checks one lab: give one --target (and one --control)")
			}
		}
		if o.control != "" {
			c, err := loadrun.NewControl(o.control, nil)
			if err != nil {
				return usageError{err.Error()}
			}
			ctl = &c
			defer keepOffLab(ctx, ctl, stderr)()
		}
		if o.check {
			return check(ctx, target, ctl, stdout)
		}
		s.Target, s.Control = target, ctl
	}
	if err := s.Validate(); err != nil {
		return usageError{err.Error()}
	}
	if m, ok := s.Driver.(sim.Model); ok {
		// The knob changes are checked against the simulated lab's knobs
		// as a real lab's are against its own (checkChanges), before
		// anything is simulated.
		if err := m.CheckChanges(o.changes); err != nil {
			return usagef("--at: %v", err)
		}
	}
	var recFile, smpFile, repFile *os.File
	// Files made before anything is sent are removed when it turns out
	// nothing will be.
	var made []*os.File
	unmake := func() {
		for _, f := range made {
			f.Close()
			os.Remove(f.Name())
		}
	}
	create := func(flagName, path string) (*os.File, error) {
		f, err := os.Create(path)
		if err != nil {
			unmake()
			return nil, usagef("--%s %q cannot be written: %v", flagName, path, rootCause(err))
		}
		made = append(made, f)
		return f, nil
	}
	if o.records != "" {
		if recFile, err = create("records", o.records); err != nil {
			return err
		}
		defer recFile.Close()
	}
	if o.samples != "" {
		if smpFile, err = create("samples", o.samples); err != nil {
			return err
		}
		defer smpFile.Close()
	}
	if o.report != "" {
		if repFile, err = create("report", o.report+".csv"); err != nil {
			return err
		}
		defer repFile.Close()
		// The report's data is written at the end; its file is made now
		// so that a name that cannot be written is said before sending.
		j, err := create("report", o.report+".json")
		if err != nil {
			return err
		}
		j.Close()
	}
	var metrics *gaugeWatch
	if o.simulate {
		fmt.Fprintf(stderr, "load: simulating %s (package sim): nothing is sent\n", o.lab)
	} else {
		// Before anything is sent: the knob changes are ones this lab
		// takes, the control API answers, the target accepts a
		// connection (opened and closed, no request) and the service's
		// /metrics shows every metric named (read before the target is
		// touched).
		err := checkChanges(ctx, ctl, o.changes)
		if err == nil && o.metricsURL != "" {
			src := newMetricsSource(o.metricsURL, o.metrics)
			if _, rerr := src.read(ctx); rerr != nil {
				err = usagef("--metrics %s: %v", o.metricsURL, rootCause(rerr))
			}
			metrics = newGaugeWatch(src)
		}
		if err == nil {
			err = reachable(ctx, append([]loadrun.Target{target}, s.Split[min(1, len(s.Split)):]...), ctl)
		}
		if err != nil {
			unmake()
			return err
		}
	}
	if metrics != nil {
		mctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() {
			defer close(done)
			metrics.run(mctx)
		}()
		defer func() { stop(); <-done }()
	}

	out := &output{o: o, stdout: stdout, stderr: stderr, tbl: newTable(stdout, len(o.clients) > 0), live: isTerminal(stderr), lab: "the lab", metrics: metrics}
	if o.simulate {
		out.lab = "the simulated lab"
	}
	// Each window's records go to the files as the window ends, so an
	// interrupted sweep keeps the windows it finished.
	var recTo []io.Writer
	for _, f := range []*os.File{recFile, repFile} {
		if f != nil {
			recTo = append(recTo, f)
		}
	}
	if len(recTo) > 0 {
		out.recs = csv.NewWriter(io.MultiWriter(recTo...))
		if err := out.recs.Write(result.CSVHeader()); err != nil {
			return fmt.Errorf("writing records: %w", err)
		}
	}
	// Samples go to their file as they come, each flushed, so an
	// interrupted sweep keeps every second it measured.
	if smpFile != nil {
		out.smps = csv.NewWriter(smpFile)
		if err := out.smps.Write(result.SampleColumns()); err != nil {
			return fmt.Errorf("writing samples to %s: %w", o.samples, err)
		}
	}
	started := time.Now()
	var sum kneeSummary
	if o.knee != nil {
		sum, err = o.knee.search(ctx, s, o.seconds, o.timeout, out)
	} else {
		err = measure.Generate(ctx, s, out.handle)
	}
	for _, f := range []*os.File{recFile, repFile, smpFile} {
		if f != nil {
			if cerr := f.Close(); cerr != nil && err == nil {
				return fmt.Errorf("writing %s: %w", f.Name(), cerr)
			}
		}
	}
	if o.knee != nil && out.werr == nil {
		out.werr = sum.print(stdout, o.json)
	}
	if o.report != "" {
		if rerr := writeReport(o.report, out.report(started, sum.Stopped), o.reportBudget()); rerr != nil && err == nil {
			err = rerr
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted after %d of %d windows; every request sent was accounted for", out.windows, s.Windows())
		}
		return err
	}
	if o.knee != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted after %d windows; every request sent was accounted for", out.windows)
	}
	return out.werr
}

// output is what becomes of each window's events: its row printed (with
// the service's metrics beside it), its records and samples written, and
// both kept for the report. A knee search runs one window at a time
// (each a sweep of one rate): offset numbers its windows from the whole
// search's count, total is how many it may have, and note is added to the
// window's row.
type output struct {
	o       options
	stdout  io.Writer
	stderr  io.Writer
	tbl     *table
	live    bool
	lab     string // who took a knob change
	recs    *csv.Writer
	smps    *csv.Writer
	metrics *gaugeWatch // nil without --metrics

	offset, total int
	note          string

	windows int // windows ended
	rows    []result.Row
	gauges  []evidence.WindowGauges
	werr    error // the first error printing a row; printing stops there
}

// handle is measure.Generate's handler.
func (out *output) handle(e measure.Event) error {
	o := out.o
	e.Window += out.offset
	if out.total > 0 {
		e.Windows = out.total
	}
	if out.metrics != nil && e.Kind != measure.EventWindow {
		out.metrics.begin(e.Window)
	}
	switch e.Kind {
	case measure.EventProgress:
		if out.live {
			fmt.Fprintf(out.stderr, "\r\033[K%s", progressLine(e.WindowProgress))
		}
	case measure.EventKnob:
		if out.live {
			fmt.Fprint(out.stderr, "\r\033[K")
		}
		fmt.Fprintf(out.stderr, "load: window %d, %.3f s in: %s took %s\n", e.Window+1, e.ElapsedMS/1000, out.lab, e.Change)
	case measure.EventSample:
		if out.live {
			fmt.Fprint(out.stderr, "\r\033[K")
		}
		smp := *e.Sample
		smp.Window += out.offset
		fmt.Fprintln(out.stderr, sampleLine(smp, !o.retry.IsZero()))
		if out.smps != nil {
			if err := out.smps.Write(smp.Cells()); err != nil {
				return fmt.Errorf("writing samples to %s: %w", o.samples, err)
			}
			if out.smps.Flush(); out.smps.Error() != nil {
				return fmt.Errorf("writing samples to %s: %w", o.samples, out.smps.Error())
			}
		}
	case measure.EventWindow:
		out.windows++
		if out.live {
			fmt.Fprint(out.stderr, "\r\033[K")
		}
		row := *e.Row
		row.Window = e.Window
		if out.note != "" {
			row.Note = strings.TrimPrefix(row.Note+"; "+out.note, "; ")
		}
		var readings map[string]evidence.GaugeReading
		if out.metrics != nil {
			// Read even after Ctrl-C: the window's last reading is part of
			// what was measured (a read is bounded by metricsWait).
			readings = out.metrics.end(context.Background(), e.Window)
			out.gauges = append(out.gauges, evidence.WindowGauges{Window: e.Window, Readings: readings})
		}
		out.rows = append(out.rows, row)
		if out.recs != nil {
			for i := range e.Records {
				e.Records[i].Window = e.Window
			}
			if err := result.AppendCSV(out.recs, e.Records); err != nil {
				return fmt.Errorf("writing records: %w", err)
			}
			if out.recs.Flush(); out.recs.Error() != nil {
				return fmt.Errorf("writing records: %w", out.recs.Error())
			}
		}
		if out.werr != nil {
			return nil
		}
		if o.json {
			out.werr = json.NewEncoder(out.stdout).Encode(jsonRow{Row: row, Metrics: readings})
		} else if out.werr = out.tbl.row(row); out.werr == nil && readings != nil {
			_, out.werr = fmt.Fprintf(out.stdout, "  %s\n", gaugeText(out.metrics.src.specs, readings))
		}
	}
	return nil
}

// jsonRow is a row as --json prints it: the row's columns, and the
// service's metrics over the window when load read them.
type jsonRow struct {
	result.Row
	Metrics map[string]evidence.GaugeReading `json:"metrics,omitempty"`
}

// report is the report's data (--report NAME writes it as NAME.json):
// how load ran, every row printed, the metrics beside them, and why a
// knee search stopped.
func (out *output) report(started time.Time, stopped string) evidence.ReportData {
	o := out.o
	d := evidence.ReportData{Tool: "capacitylab load", Version: 1, StartedAt: started.UTC(), Target: o.target, Loop: "open",
		Schedule: string(o.process), Seed: o.seed, TimeoutMS: result.MS(o.timeout), QueueHeader: o.queueHeader,
		Rows: out.rows, Gauges: out.gauges, Stopped: stopped}
	if o.simulate {
		d.Target = "simulated: " + o.lab.String()
	}
	if d.Schedule == "" {
		d.Schedule = string(loadrun.Poisson)
	}
	if len(o.clients) > 0 {
		d.Loop, d.Schedule = "closed", ""
	}
	if d.Rows == nil {
		d.Rows = []result.Row{}
	}
	return d
}

// reportBudget is the latency budget the report derives its admission
// limit for: a knee search's --max-p99, else none.
func (o options) reportBudget() time.Duration {
	if o.knee == nil {
		return 0
	}
	return o.knee.maxP99
}

// writeReport writes the report's data as NAME.json, then the report
// itself, NAME.html, made from the two files as they were written
// (NAME.csv read back with evidence.Read, NAME.json attached), so the
// report shows exactly what an upload of them would. The latency budget
// its admission limit is derived for is --max-p99, when given.
func writeReport(name string, d evidence.ReportData, budget time.Duration) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(name+".json", append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the report's data: %w", err)
	}
	f, err := os.Open(name + ".csv")
	if err != nil {
		return fmt.Errorf("reading the records back for the report: %w", err)
	}
	defer f.Close()
	ds, err := evidence.Read(filepath.Base(name)+".csv", f, evidence.DefaultLimits())
	if err == nil {
		err = ds.Attach(&d)
	}
	if err != nil {
		return fmt.Errorf("reading the records back for the report: %w", err)
	}
	a := evidence.Analyze(ds, evidence.Options{BudgetMS: result.MS(budget)})
	var html bytes.Buffer
	if err := evidence.WriteReport(&html, ds, a); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if err := os.WriteFile(name+".html", html.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}

// keepOffLab pins this process (the generator) to the processors the lab
// does not use, when the lab's control API is on this machine (a loopback
// address) and says where the lab runs (GET /config: processors), sets
// GOMAXPROCS to the runtime's default for them at once, as the load child
// does (see measure's pinAway: the runtime would otherwise apply the
// pinning only within a second or so, stopping the world as it does), and
// says on stderr in one line what it did. The returned function undoes
// both (run may be called again in the same process, as the tests do). A
// lab elsewhere, or one that does not say, is left alone.
func keepOffLab(ctx context.Context, ctl *loadrun.Control, stderr io.Writer) (undo func()) {
	if !loopback(ctl.URL()) {
		return func() {}
	}
	var cfg struct {
		Processors []int `json:"processors"`
	}
	if err := ctl.Config(ctx, &cfg); err != nil || len(cfg.Processors) == 0 {
		return func() {} // reachable or check says what is wrong
	}
	pin, err := affinity.PinAwayFrom(cfg.Processors)
	if err != nil {
		fmt.Fprintf(stderr, "load: the generator may share the lab's processors %v: %v\n", cfg.Processors, err)
		return func() {}
	}
	fmt.Fprintf(stderr, "load: %s\n", pin)
	if !pin.Pinned() {
		return func() {}
	}
	runtime.SetDefaultGOMAXPROCS()
	return func() {
		_ = pin.Restore()
		runtime.SetDefaultGOMAXPROCS()
	}
}

// loopback reports whether rawURL's host is this machine's loopback.
func loopback(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

// reachable checks that the control API answers (each lab's) and that
// each target accepts a connection, which it closes at once without a
// request.
func reachable(ctx context.Context, targets []loadrun.Target, ctl *loadrun.Control) error {
	if ctl != nil {
		for _, u := range strings.Split(ctl.URL(), ",") {
			lab, err := loadrun.NewControl(u, nil)
			if err == nil {
				_, err = lab.Stats(ctx)
			}
			if err != nil {
				return usagef("the lab's control API at %s is not reachable (%v); start the lab, or pass --control none", u, rootCause(err))
			}
		}
	}
	d := net.Dialer{Timeout: 2 * time.Second}
	for _, t := range targets {
		c, err := d.DialContext(ctx, "tcp", t.Addr())
		if err != nil {
			return usagef("target http://%s is not reachable: %v", t.Addr(), rootCause(err))
		}
		c.Close()
	}
	return nil
}

// checkChanges checks --at against the lab's knobs in force (GET /config),
// as a run's preset is checked (labsvc.Config.CheckChanges), before anything is
// sent.
func checkChanges(ctx context.Context, ctl *loadrun.Control, changes []result.KnobChange) error {
	if len(changes) == 0 || ctl == nil {
		return nil
	}
	var cfg labsvc.Config
	if err := ctl.Config(ctx, &cfg); err != nil {
		return usagef("--at: the lab's knobs could not be read from %s: %v", ctl.URL(), rootCause(err))
	}
	if err := cfg.CheckChanges(changes); err != nil {
		return usagef("--at: %v", err)
	}
	return nil
}

// rootCause strips Go's operation prefixes down to the system's words.
func rootCause(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func progressLine(e result.WindowProgress) string {
	what := fmt.Sprintf("%g/s", e.Rate)
	if e.Clients > 0 {
		what = fmt.Sprintf("%d clients", e.Clients)
	}
	return fmt.Sprintf("window %d/%d  %s  %.1f/%g s  sent %d  ended %d  in flight %d  not sent %d  client busy %d",
		e.Window+1, e.Windows, what, e.ElapsedMS/1000, e.Seconds, e.Sent, e.Ended, e.Sent-e.Ended, e.NotSent, e.ClientBusy)
}

// sampleLine is a run over time's line for one sample (--over-time):
// window, the second it ends at, then ok a second, refused, gave up, the
// generator's in flight, the lab's limit and queue, and p99 of the ok
// answers:
//
//	w1  3s  ok/s 48.0  refused 0  gaveup 0  in flight 2  limit 3  queue 0  p99 24.7 ms
//
// limit is "none" when the lab's policy has no bound, and limit and
// queue are "?" when the lab was not read (no lab, or a read that took
// longer than the second). A retrying client's line ends with its
// attempts a second, and its breaker's state when it has one:
//
//	w1  9s  ok/s 0.0  refused 0  gaveup 112  in flight 176  limit 200  queue 198  p99 0.0 ms  attempts/s 398.0  breaker open
func sampleLine(s result.Sample, retrying bool) string {
	okPerSec := 0.0
	if s.Seconds > 0 {
		okPerSec = float64(s.OK) / s.Seconds
	}
	limit, queue := "?", "?"
	if s.Lab {
		limit, queue = strconv.Itoa(s.Limit), strconv.Itoa(s.Queued)
		if s.Limit == 0 {
			limit = "none"
		}
	}
	line := fmt.Sprintf("w%d  %gs  ok/s %.1f  refused %d  gaveup %d  in flight %d  limit %s  queue %s  p99 %.1f ms",
		s.Window+1, math.Round((s.AtS+s.Seconds)*1000)/1000, okPerSec, s.Refused, s.GaveUp, s.InFlight, limit, queue, s.P99MS)
	if retrying && s.Seconds > 0 {
		line += fmt.Sprintf("  attempts/s %.1f", float64(s.Attempts)/s.Seconds)
		if s.Breaker != "" {
			line += "  breaker " + s.Breaker
		}
	}
	return line
}

// table prints rows with aligned columns, one row at a time.
type table struct {
	w      io.Writer
	closed bool
	header bool
}

func newTable(w io.Writer, closedLoop bool) *table { return &table{w: w, closed: closedLoop} }

// columns are the lessons' columns, then the generator's honesty columns.
func columns(closedLoop bool) []string {
	cols := []string{"offered", "sent", "ok", "refused", "gaveup", "error", "ok_per_sec", "p50_ms", "p99_ms", "done", "lost", "queued", "backlogged",
		"not_sent", "client_busy", "late", "send_lag_p99_ms", "mean_ms", "p95_ms", "max_ms", "n"}
	if closedLoop {
		cols = append([]string{"clients"}, cols...)
	}
	return cols
}

func (t *table) row(r result.Row) error {
	cols := columns(t.closed)
	width := func(c string) int { return max(len(c), 7) }
	var b strings.Builder
	if !t.header {
		for i, c := range cols {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%*s", width(c), c)
		}
		b.WriteByte('\n')
		t.header = true
	}
	opt := func(v int) string {
		if v < 0 {
			return "-"
		}
		return strconv.Itoa(v)
	}
	vals := []string{
		strconv.FormatFloat(r.Offered, 'f', -1, 64),
		strconv.Itoa(r.Sent), strconv.Itoa(r.OK), strconv.Itoa(r.Refused), strconv.Itoa(r.Gaveup), strconv.Itoa(r.Error),
		fmt.Sprintf("%.2f", r.OKPerSec), fmt.Sprintf("%.1f", r.P50MS), fmt.Sprintf("%.1f", r.P99MS),
		opt(r.Done), strconv.Itoa(r.Lost), opt(r.Queued), opt(r.Backlogged),
		strconv.Itoa(r.NotSent), strconv.Itoa(r.ClientBusy), strconv.Itoa(r.Late), fmt.Sprintf("%.3f", r.SendLagP99MS),
		fmt.Sprintf("%.1f", r.MeanMS), fmt.Sprintf("%.1f", r.P95MS), fmt.Sprintf("%.1f", r.MaxMS), strconv.Itoa(r.N),
	}
	if t.closed {
		vals = append([]string{strconv.Itoa(r.Clients)}, vals...)
	}
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%*s", width(cols[i]), v)
	}
	if r.Note != "" {
		b.WriteString("  # " + r.Note)
	}
	b.WriteByte('\n')
	_, err := io.WriteString(t.w, b.String())
	return err
}

// check prints the four acceptance lines. A service that is down is exit 1.
func check(ctx context.Context, target loadrun.Target, ctl *loadrun.Control, w io.Writer) error {
	if ctl == nil {
		return usagef("--check reads the lab's knobs from its control API: give --control")
	}
	var cfg labsvc.Config
	if err := ctl.Config(ctx, &cfg); err != nil {
		fmt.Fprintf(w, "service NOT up: its control API at %s does not answer (%v)\n", ctl.URL(), rootCause(err))
		return errors.New("the service is not up")
	}
	first := target.Do(ctx)
	if first.Outcome != result.OK {
		why := first.Reason
		if first.Outcome == result.Refused {
			why = "it refused (503): its queue is full"
		}
		fmt.Fprintf(w, "service NOT up: a request to http://%s ended %s %s\n", target.Addr(), first.Outcome, why)
		return errors.New("the service is not up")
	}
	fmt.Fprintf(w, "service up at http://%s (control %s)\n", target.Addr(), ctl.URL())

	limit := "off"
	if cfg.Limit > 0 {
		limit = strconv.Itoa(cfg.Limit)
	}
	fmt.Fprintf(w, "%d %s, spin %d ms, wait %d ms, limit %s, cpus %d\n", cfg.Workers, plural(cfg.Workers, "worker", "workers"), cfg.SpinMS, cfg.WaitMS, limit, cfg.CPUs)

	// The processor time a request costs, from the lab's own count: its
	// process CPU over the requests, less what one GET /stats costs (read
	// twice back to back before them).
	s1, err1 := ctl.Stats(ctx)
	s2, err2 := ctl.Stats(ctx)
	var lat, lab []float64
	for range checkRequests {
		r := target.Do(ctx)
		if r.Outcome != result.OK {
			return fmt.Errorf("a request at rest ended %s %s: the service is not at rest", r.Outcome, r.Reason)
		}
		lat = append(lat, float64(r.Latency())/float64(time.Millisecond))
		if r.ServiceMS >= 0 {
			lab = append(lab, r.ServiceMS)
		}
	}
	s3, err3 := ctl.Stats(ctx)
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("reading the lab's stats: %w", err)
	}
	if len(lab) < checkRequests {
		return fmt.Errorf("%d of %d answers carried no X-Service-Ms: is %s the lab?", checkRequests-len(lab), checkRequests, target.Addr())
	}
	if !s3.Since.Equal(s1.Since) || s3.Done-s2.Done != checkRequests {
		return fmt.Errorf("the lab served %d requests (or was reset) while --check sent %d: it is not at rest, try again when nothing else uses it", s3.Done-s2.Done, checkRequests)
	}
	statsCost := s2.ProcessCPUMS - s1.ProcessCPUMS
	cpu := sig4((s3.ProcessCPUMS - s2.ProcessCPUMS - statsCost) / checkRequests)
	svc := sig4(median(lab))
	set := float64(cfg.SpinMS + cfg.WaitMS)
	over := ""
	if set > 0 {
		over = fmt.Sprintf(", %+.1f%%", 100*(svc-set)/set)
		if svc > set*(1+restGoal) {
			over += fmt.Sprintf(", more than the %g%% the lab aims for: is its processor busy?", 100*restGoal)
		}
	}
	fmt.Fprintf(w, "at rest (n=%d sequential requests): service time %s ms (median; set %s ms%s), processor time %s ms a request (mean; spin %d + the lab's own %s), latency %s ms (median)\n",
		checkRequests, fmtMS(svc), fmtMS(set), over, fmtMS(cpu), cfg.SpinMS, fmtMS(sig4(cpu-float64(cfg.SpinMS))), fmtMS(sig4(median(lat))))

	// Both ceilings from the figures printed above: the workers' from the
	// service time, the processors' from the processor time a request.
	workersCeiling, cpuCeiling := model.CeilingRates(float64(cfg.Workers), float64(cfg.CPUs), svc, cpu)
	binds, at := "workers", workersCeiling
	if cpuCeiling < workersCeiling {
		binds, at = "processors", cpuCeiling
	}
	fmt.Fprintf(w, "ceilings: workers ÷ service time = %d ÷ %s ms = %s/s; cpus ÷ processor time = %d ÷ %s ms = %s/s; the %s bind at %s/s\n",
		cfg.Workers, fmtMS(svc), fmtRate(workersCeiling), cfg.CPUs, fmtMS(cpu), fmtRate(cpuCeiling), binds, fmtRate(at))
	return nil
}

// sig4 rounds v to four significant digits, as --check prints it, so
// what it computes from a figure is what follows from the printed one.
func sig4(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	return r
}

// fmtMS prints milliseconds rounded by sig4, without an exponent.
func fmtMS(v float64) string { return strconv.FormatFloat(sig4(v), 'f', -1, 64) }

// fmtRate prints a rate a second: one decimal under 100, else whole, with
// thousands separated by commas.
func fmtRate(v float64) string {
	if v < 100 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
