package labsvc

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"capacitylab/admit"
)

// Default addresses of the terminal lab (cmd/lab). Both are loopback: the lab
// listens on other interfaces only when told to.
const (
	DefaultAddr    = "127.0.0.1:8000"
	DefaultControl = "127.0.0.1:8001"
)

// Settings is a Config plus the addresses the terminal lab listens on.
type Settings struct {
	Config
	Addr    string // --addr / ADDR: where requests are taken
	Control string // --control / CONTROL_ADDR: where the control API is served
}

// knob describes one numeric knob: its environment variable, its flag, its
// range and where it lives in a Config.
type knob struct {
	env, flag, usage string
	lo, hi           int
	field            func(*Config) *int
}

func knobs() []knob {
	return []knob{
		{"WORKERS", "workers", "`number` of requests served at once", 1, MaxWorkers, func(c *Config) *int { return &c.Workers }},
		{"SPIN_MS", "spin-ms", "processor time per request in `ms`", 0, MaxSpinMS, func(c *Config) *int { return &c.SpinMS }},
		{"WAIT_MS", "wait-ms", "waiting (sleep) per request in `ms`", 0, MaxWaitMS, func(c *Config) *int { return &c.WaitMS }},
		{"LIMIT", "limit", "admission queue `depth`, 0 = unbounded", 0, MaxLimit, func(c *Config) *int { return &c.Limit }},
		{"CPUS", "cpus", "`number` of processors the lab may use", 1, MaxCPUs, func(c *Config) *int { return &c.CPUs }},
		{"STALL_EVERY", "stall-every", "every `N`th request stalls, 0 = never", 0, MaxStallEvery, func(c *Config) *int { return &c.StallEvery }},
		{"STALL_MS", "stall-ms", "how long a stalled request takes in `ms`", 0, MaxStallMS, func(c *Config) *int { return &c.StallMS }},
		{"BACKLOG", "backlog", "listen backlog: `connections` the kernel holds before the lab accepts them, 0 = the system's maximum", 0, MaxBacklog, func(c *Config) *int { return &c.Backlog }},
	}
}

// acceptUsage is the -h text of --accept.
const acceptUsage = "who accepts connections: `door` (the lab accepts every caller at once and queues it) or workers (each free worker accepts the next; the rest wait in the kernel's accept queue) (env ACCEPT, default door)"

// PolicyUsage is the -h text of --policy, for the lab and the proxy.
const PolicyUsage = "the admission `policy`: queue (LIMIT bounds the callers waiting), inflight,quota=N, aimd, gradient or codel, with parameters as name=value after commas, e.g. aimd,backoff=0.5 (env POLICY, default queue; package admit documents each)"

// ErrUsage is wrapped by ParseSettings errors that come from the command line
// itself (unknown flag, stray argument, -h). Such errors, like FieldErrors,
// should end the program with exit status 2, except flag.ErrHelp (also
// wrapped, for -h), after which the usage has been written and the program
// may exit 0.
var ErrUsage = errors.New("usage")

// ParseSettings reads the knobs and addresses from args (flags such as
// --workers=4) with the environment (WORKERS=4, read through getenv) as
// fallback, then defaults. A value that is not a whole number or is out of
// range yields FieldErrors with one "VAR=value is not allowed: want lo to hi"
// per bad knob, whether it came from a flag or the environment; a flag given
// with an empty value (--workers=) is such a bad value, while an empty
// environment variable counts as unset. An unknown flag or a stray argument
// yields an ErrUsage error that lists the flags there are. The usage text for
// -h is written to usage (which may be nil).
func ParseSettings(name string, args []string, getenv func(string) string, usage io.Writer) (Settings, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	kf := AddKnobFlags(fs)
	addr := fs.String("addr", "", "`host:port` for requests (env ADDR, default "+DefaultAddr+")")
	control := fs.String("control", "", "`host:port` for the control API (env CONTROL_ADDR, default "+DefaultControl+")")
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	allowed := fmt.Sprintf("want only the flags %s (-h explains them)", strings.Join(names, ", "))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if usage != nil {
				fmt.Fprintf(usage, "usage: %s [flags]\n", name)
				fs.SetOutput(usage)
				fs.PrintDefaults()
			}
			return Settings{}, fmt.Errorf("%w: %w", ErrUsage, err)
		}
		return Settings{}, fmt.Errorf("%w: %w; %s", ErrUsage, err, allowed)
	}
	if fs.NArg() > 0 {
		return Settings{}, fmt.Errorf("%w: unexpected argument %q; %s", ErrUsage, fs.Arg(0), allowed)
	}
	cfg, err := kf.Config(getenv)
	if err != nil {
		return Settings{}, err
	}
	s := Settings{Config: cfg}
	s.Addr = pick(*addr, getenv("ADDR"), DefaultAddr)
	s.Control = pick(*control, getenv("CONTROL_ADDR"), DefaultControl)
	return s, nil
}

// KnobFlags are the lab's knob flags on a FlagSet of someone else's (cmd/load
// --simulate takes them too), read after the set is parsed.
type KnobFlags struct {
	fs     *flag.FlagSet
	raw    []*string
	accept *string
	policy *string
}

// AddKnobFlags defines a flag for every knob (--workers, --spin-ms, …,
// --backlog, --accept, --policy) on fs.
func AddKnobFlags(fs *flag.FlagSet) *KnobFlags {
	kf := &KnobFlags{fs: fs}
	def := DefaultConfig()
	for _, k := range knobs() {
		kf.raw = append(kf.raw, fs.String(k.flag, "", fmt.Sprintf("%s (env %s, default %d, %d to %d)", k.usage, k.env, *k.field(&def), k.lo, k.hi)))
	}
	kf.accept = fs.String("accept", "", acceptUsage)
	kf.policy = fs.String("policy", "", PolicyUsage)
	return kf
}

// Given lists the knob flags given on the command line, as "--name".
func (kf *KnobFlags) Given() []string {
	var out []string
	names := make([]string, 0, len(knobs())+1)
	for _, k := range knobs() {
		names = append(names, k.flag)
	}
	for _, name := range append(names, "accept", "policy") {
		kf.fs.Visit(func(f *flag.Flag) {
			if f.Name == name {
				out = append(out, "--"+name)
			}
		})
	}
	return out
}

// Config reads the knobs from the parsed flags with the environment
// (through getenv) as fallback, then defaults, with the errors ParseSettings
// documents.
func (kf *KnobFlags) Config(getenv func(string) string) (Config, error) {
	// A flag given with an empty value (--workers=$UNSET) is a mistake, not
	// "use the default": only an empty or absent environment variable is.
	given := map[string]bool{}
	kf.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	c := DefaultConfig()
	var errs FieldErrors
	var err error
	for i, k := range knobs() {
		v := strings.TrimSpace(*kf.raw[i])
		if !given[k.flag] {
			v = strings.TrimSpace(getenv(k.env))
			if v == "" {
				continue
			}
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < k.lo || n > k.hi {
			errs = append(errs, FieldError{Field: k.env, Value: v, Allowed: fmt.Sprintf("%d to %d", k.lo, k.hi)})
			continue
		}
		*k.field(&c) = n
	}
	if v := strings.TrimSpace(getenv("ACCEPT")); given["accept"] || v != "" {
		if given["accept"] {
			v = strings.TrimSpace(*kf.accept)
		}
		if c.Accept = parseAccept(v); c.Accept != AcceptDoor && c.Accept != AcceptWorkers {
			errs = append(errs, FieldError{Field: "ACCEPT", Value: v, Allowed: "door or workers"})
		}
	}
	if v := strings.TrimSpace(getenv("POLICY")); given["policy"] || v != "" {
		if given["policy"] {
			v = strings.TrimSpace(*kf.policy)
		}
		var se *admit.SpecError
		if c.Policy, err = admit.ParseSpec(v); errors.As(err, &se) {
			errs = append(errs, FieldError{Field: "POLICY", Value: se.Value, Allowed: se.Allowed})
		} else if v == "" {
			errs = append(errs, FieldError{Field: "POLICY", Value: v, Allowed: admit.Allowed})
		}
	}
	if errs != nil {
		return Config{}, errs
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// ParseConfig is ParseSettings for callers that only want the knobs; the
// address flags are accepted and ignored.
func ParseConfig(args []string, getenv func(string) string) (Config, error) {
	s, err := ParseSettings("lab", args, getenv, nil)
	return s.Config, err
}

// Args renders c as the flags ParseSettings reads, e.g. for a child process.
func (c Config) Args() []string {
	var out []string
	for _, k := range knobs() {
		out = append(out, fmt.Sprintf("--%s=%d", k.flag, *k.field(&c)))
	}
	return append(out, "--accept="+c.Accept.String(), "--policy="+c.Policy.String())
}

// String renders c the way the lessons write it: "WORKERS=1 SPIN_MS=2 ...".
// The knobs a lesson sets only now and then are left out while they are
// off: the stall knobs while both are 0, BACKLOG while 0, ACCEPT while door,
// POLICY while queue.
func (c Config) String() string {
	var b strings.Builder
	for i, k := range knobs() {
		switch {
		case (k.env == "STALL_EVERY" || k.env == "STALL_MS") && c.StallEvery == 0 && c.StallMS == 0:
			continue
		case k.env == "BACKLOG" && c.Backlog == 0:
			continue
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", k.env, *k.field(&c))
	}
	if c.Accept != AcceptDoor {
		b.WriteString(" ACCEPT=" + c.Accept.String())
	}
	if c.Policy != "" {
		b.WriteString(" POLICY=" + c.Policy.String())
	}
	return b.String()
}

func pick(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
