package labsvc

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"capacitylab/admit"
	"capacitylab/dist"
	"capacitylab/envflag"
	"capacitylab/input"
	"capacitylab/result"
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
		{"LOCK_MS", "lock-ms", "time in `ms` each request holds the lab's one lock after its spin, one request at a time in the order they reach it (no processor): at most 1000/LOCK_MS requests a second, 0 = no lock", 0, MaxLockMS, func(c *Config) *int { return &c.LockMS }},
		{"COHERENCY_US", "coherency-us", "processor time in `µs` each request spends, on top of SPIN_MS, for each other request in service as its spin starts, 0 = none", 0, MaxCoherencyUS, func(c *Config) *int { return &c.CoherencyUS }},
	}
}

// acceptUsage is the -h text of --accept.
const acceptUsage = "who accepts connections: `door` (the lab accepts every caller at once and queues it) or workers (each free worker accepts the next; the rest wait in the kernel's accept queue)"

// PolicyUsage is the -h text of --policy, for the lab and the proxy.
const PolicyUsage = "the admission `policy`: queue (LIMIT bounds the callers waiting), inflight,quota=N, aimd, gradient or sojourn (drops a request that waited in the queue past a bound), with parameters as name=value after commas, e.g. aimd,backoff=0.5 (package admit documents each)"

// PolicyAllowed is what --policy allows, for -h and the README, for the lab
// and the proxy.
const PolicyAllowed = "queue, inflight,quota=N, aimd, gradient, sojourn, each with parameters after commas"

// DistAllowed is what --dist allows, for -h and the README (the ranges
// are in dist.Allowed, which the errors say).
const DistAllowed = "constant, exponential, lognormal,scv=S, bimodal,p=P,x=X, each with seed=N after a comma"

// DistUsage is the -h text of --dist.
const DistUsage = "how each request's service time varies about SPIN_MS + WAIT_MS, its mean: `constant`, exponential, lognormal,scv=S or bimodal,p=P,x=X (a share P of requests X times as long), any with seed=N (package dist documents each)"

// ErrUsage is wrapped by ParseSettings errors that come from the command line
// itself (unknown flag, stray argument, -h). Such errors, like the
// input.FieldErrors a bad knob gives, should end the program with exit
// status 2, except flag.ErrHelp (also wrapped, for -h), after which the
// usage has been written and the program may exit 0.
var ErrUsage = errors.New("usage")

// ExitStatus is the exit status of a command (lab, proxy) that ends with
// err: 2 for a configuration or usage mistake (input.FieldErrors,
// ErrUsage), 1 otherwise.
func ExitStatus(err error) int {
	var fe input.FieldErrors
	if errors.As(err, &fe) || errors.Is(err, ErrUsage) {
		return 2
	}
	return 1
}

// ParseSettings reads the knobs and addresses from args (flags such as
// --workers=4) with the environment (WORKERS=4, read through getenv) as
// fallback, then defaults (package envflag). A value that is not a whole
// number or is out of range yields input.FieldErrors with one "VAR: value
// is not allowed: want lo to hi" per bad knob, whether it came from a flag or the
// environment; a flag given with an empty value (--workers=) is such a bad
// value, while an empty environment variable counts as unset. An unknown
// flag or a stray argument yields an ErrUsage error that lists the flags
// there are. The usage text for -h is written to usage (which may be nil).
func ParseSettings(name string, args []string, getenv func(string) string, usage io.Writer) (Settings, error) {
	fs, kf, addr, control := labFlags(name)
	if err := fs.Parse(args, getenv, usage); err != nil {
		return Settings{}, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if flags := fs.FlagSet(); flags.NArg() > 0 {
		return Settings{}, fmt.Errorf("%w: unexpected argument %q; want only the flags %s (-h explains them)", ErrUsage, flags.Arg(0), strings.Join(fs.Flags(), ", "))
	}
	for _, a := range []*envflag.Setting{addr, control} {
		if strings.TrimSpace(a.Value) == "" {
			return Settings{}, fmt.Errorf("%w: %s is empty: want host:port, such as %s", ErrUsage, a.Name(), a.Default)
		}
	}
	cfg, err := kf.Config()
	if err != nil {
		return Settings{}, err
	}
	return Settings{Config: cfg, Addr: addr.Value, Control: control.Value}, nil
}

// Flags is the terminal lab's flags, for a test that keeps the README's
// table of them true.
func Flags() *envflag.Set {
	fs, _, _, _ := labFlags("lab")
	return fs
}

// labFlags defines the terminal lab's flags: the knobs and the two
// addresses.
func labFlags(name string) (fs *envflag.Set, kf *KnobFlags, addr, control *envflag.Setting) {
	fs = envflag.New(name)
	kf = AddKnobFlags(fs)
	addr = fs.Add(envflag.Setting{Flag: "addr", Env: "ADDR", Default: DefaultAddr, Usage: "`host:port` for requests"})
	control = fs.Add(envflag.Setting{Flag: "control", Env: "CONTROL_ADDR", Default: DefaultControl, Usage: "`host:port` for the control API"})
	return fs, kf, addr, control
}

// KnobFlags are the lab's knob flags on a Set of someone else's (cmd/load
// --simulate takes them too), read after the set is parsed.
type KnobFlags struct {
	knobs  []*envflag.Setting // in knobs() order
	accept *envflag.Setting
	policy *envflag.Setting
	dist   *envflag.Setting
}

// AddKnobFlags defines a setting for every knob (--workers, --spin-ms, …,
// --backlog, --accept, --policy) on fs, each with its environment variable.
func AddKnobFlags(fs *envflag.Set) *KnobFlags {
	kf := &KnobFlags{}
	def := DefaultConfig()
	for _, k := range knobs() {
		kf.knobs = append(kf.knobs, fs.Add(envflag.Setting{Flag: k.flag, Env: k.env, Default: strconv.Itoa(*k.field(&def)),
			Allowed: fmt.Sprintf("%d to %d", k.lo, k.hi), Usage: k.usage}))
	}
	kf.accept = fs.Add(envflag.Setting{Flag: "accept", Env: "ACCEPT", Default: def.Accept.String(), Allowed: "door or workers", Usage: acceptUsage})
	kf.policy = fs.Add(envflag.Setting{Flag: "policy", Env: "POLICY", Shown: "queue", Allowed: PolicyAllowed, Usage: PolicyUsage})
	kf.dist = fs.Add(envflag.Setting{Flag: "dist", Env: "DIST", Shown: "constant", Allowed: DistAllowed, Usage: DistUsage})
	return kf
}

// Given lists the knob flags given on the command line, as "--name".
func (kf *KnobFlags) Given() []string {
	var out []string
	for _, st := range append(append([]*envflag.Setting(nil), kf.knobs...), kf.accept, kf.policy, kf.dist) {
		if st.Given() {
			out = append(out, "--"+st.Flag)
		}
	}
	return out
}

// Config reads the knobs from the parsed settings (a flag, else the
// environment, else the default), with the errors ParseSettings documents.
func (kf *KnobFlags) Config() (Config, error) {
	c := DefaultConfig()
	errs := input.FieldErrors{}
	var err error
	for i, k := range knobs() {
		st := kf.knobs[i]
		if st.Source == "" {
			continue // the default
		}
		v := strings.TrimSpace(st.Value)
		n, err := strconv.Atoi(v)
		if err != nil || n < k.lo || n > k.hi {
			errs.Add(k.env, input.NotAllowed(v, fmt.Sprintf("%d to %d", k.lo, k.hi)))
			continue
		}
		*k.field(&c) = n
	}
	if kf.accept.Source != "" {
		v := strings.TrimSpace(kf.accept.Value)
		if c.Accept = parseAccept(v); c.Accept != AcceptDoor && c.Accept != AcceptWorkers {
			errs.Add("ACCEPT", input.NotAllowed(v, "door or workers"))
		}
	}
	if kf.policy.Source != "" {
		v := strings.TrimSpace(kf.policy.Value)
		var se *admit.SpecError
		if c.Policy, err = admit.ParseSpec(v); errors.As(err, &se) {
			errs.Add("POLICY", input.NotAllowed(se.Value, se.Allowed))
		} else if v == "" {
			errs.Add("POLICY", input.NotAllowed(v, admit.Allowed))
		}
	}
	if kf.dist.Source != "" {
		v := strings.TrimSpace(kf.dist.Value)
		var se *dist.SpecError
		if c.Dist, err = dist.ParseSpec(v); errors.As(err, &se) {
			errs.Add("DIST", input.NotAllowed(se.Value, se.Allowed))
		}
	}
	if len(errs) > 0 {
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
	return append(out, "--accept="+c.Accept.String(), "--policy="+c.Policy.String(), "--dist="+c.Dist.String())
}

// String renders c the way the lessons write it: "WORKERS=1 SPIN_MS=2 ...".
// The knobs a lesson sets only now and then are left out while they are
// off: the stall knobs while both are 0, BACKLOG, LOCK_MS and COHERENCY_US
// while 0, ACCEPT while door, POLICY while queue.
func (c Config) String() string {
	var b strings.Builder
	for i, k := range knobs() {
		switch {
		case (k.env == "STALL_EVERY" || k.env == "STALL_MS") && c.StallEvery == 0 && c.StallMS == 0:
			continue
		case k.env == "BACKLOG" && c.Backlog == 0,
			k.env == "LOCK_MS" && c.LockMS == 0,
			k.env == "COHERENCY_US" && c.CoherencyUS == 0:
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
	if c.Dist != "" {
		b.WriteString(" DIST=" + c.Dist.String())
	}
	return b.String()
}

// ChangeableKnobs are the knobs a running lab may change (POST /config),
// as their environment variables spell them. WORKERS changes only with
// ACCEPT=door (see Config.Set).
const ChangeableKnobs = "WORKERS, SPIN_MS, WAIT_MS, LIMIT, STALL_EVERY, STALL_MS, BACKLOG, POLICY, DIST, LOCK_MS, COHERENCY_US"

// workersFixed says what WORKERS allows while a lab of workers workers
// runs with ACCEPT=workers, and why.
func workersFixed(workers int) string {
	return fmt.Sprintf("%d, as the lab started, with ACCEPT=workers "+
		"(a free worker waits in the kernel's accept queue itself and cannot be stopped there without taking one more caller): "+
		"WORKERS changes while the lab runs only with ACCEPT=door", workers)
}

// Set returns c with one knob changed as a running lab would change it
// (POST /config): knob as its environment variable spells it (one of
// ChangeableKnobs), value as the variable would hold it. A knob that does
// not exist, or cannot change while the lab runs (CPUS, ACCEPT), is an
// error saying which may; a bad value an input.FieldErrors as Validate
// gives, and so is a knob whose new value does not go with the others
// (LIMIT with a POLICY but queue, a new WORKERS with ACCEPT=workers).
func (c Config) Set(knob, value string) (Config, error) {
	value = strings.TrimSpace(value)
	switch knob {
	case "CPUS", "ACCEPT":
		return c, fmt.Errorf("%s cannot change while the lab runs: want one of %s", knob, ChangeableKnobs)
	case "POLICY":
		spec, err := admit.ParseSpec(value)
		var se *admit.SpecError
		if errors.As(err, &se) {
			return c, input.FieldErrors{"POLICY": input.NotAllowed(se.Value, se.Allowed)}
		}
		next := c
		next.Policy = spec
		return c.change(next)
	case "DIST":
		spec, err := dist.ParseSpec(value)
		var se *dist.SpecError
		if errors.As(err, &se) {
			return c, input.FieldErrors{"DIST": input.NotAllowed(se.Value, se.Allowed)}
		}
		next := c
		next.Dist = spec
		return c.change(next)
	}
	for _, k := range knobs() {
		if k.env != knob {
			continue
		}
		n, err := strconv.Atoi(value)
		if err != nil || n < k.lo || n > k.hi {
			return c, input.FieldErrors{k.env: input.NotAllowed(value, fmt.Sprintf("%d to %d", k.lo, k.hi))}
		}
		next := c
		*k.field(&next) = n
		return c.change(next)
	}
	return c, fmt.Errorf("unknown knob %q: want one of %s", knob, ChangeableKnobs)
}

// change returns next, the knobs of a running lab whose knobs are c after
// a change, if the lab takes it: next is valid, and WORKERS changes only
// with ACCEPT=door. Otherwise it returns c and input.FieldErrors. (CPUS
// and ACCEPT are never changed: Set refuses them by name, and POST
// /config has no way to.)
func (c Config) change(next Config) (Config, error) {
	if err := next.Validate(); err != nil {
		return c, err
	}
	if next.Workers != c.Workers && c.Accept == AcceptWorkers {
		return c, input.FieldErrors{"WORKERS": input.NotAllowed(strconv.Itoa(next.Workers), workersFixed(c.Workers))}
	}
	return next, nil
}

// CheckChanges says what is wrong with knob changes against a lab whose
// knobs are c, or nil: each must name a knob the lab can change while
// it runs (ChangeableKnobs) with a value it allows, given the
// knobs in force then (c with the changes before it, in time order).
// Their times are the sweep's to check (they must fall in the window).
func (c Config) CheckChanges(changes []result.KnobChange) error {
	cfg := c
	sorted := slices.Clone(changes)
	slices.SortStableFunc(sorted, func(a, b result.KnobChange) int { return cmp.Compare(a.At, b.At) })
	for _, k := range sorted {
		if err := k.Err(); err != nil {
			return err
		}
		next, err := cfg.Set(k.Knob, k.Value)
		var fe input.FieldErrors
		if errors.As(err, &fe) && len(fe) == 1 && fe[k.Knob] != "" {
			// The change's own knob: "knob change 1s:WAIT_MS=20000:
			// 20000 is not allowed: want 0 to 10000".
			return fmt.Errorf("knob change %s: %s", k, fe[k.Knob])
		}
		if err != nil {
			return fmt.Errorf("knob change %s: %w", k, err)
		}
		cfg = next
	}
	return nil
}
