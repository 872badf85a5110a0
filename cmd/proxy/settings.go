package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"capacitylab/admit"
	"capacitylab/envflag"
	"capacitylab/forwarding"
	"capacitylab/input"
	"capacitylab/labsvc"
)

// Defaults of the proxy's settings: loopback addresses next to the lab's
// (8000, 8001), in front of the lab's default request address.
const (
	defaultAddr     = "127.0.0.1:7000"
	defaultControl  = "127.0.0.1:7001"
	defaultUpstream = "http://" + labsvc.DefaultAddr
	// maxWorkers bounds WORKERS, as the policies bound their limits.
	maxWorkers = admit.MaxLimit
	// maxTimeout bounds TIMEOUT.
	maxTimeout = 10 * time.Minute
)

// settings are the proxy's, read by parseSettings.
type settings struct {
	addr, control string
	upstream      string // an http:// or https:// URL with a host
	policy        admit.Spec
	limit         int            // LIMIT: the queue policy's bound on waiting callers
	workers       int            // WORKERS: requests sent upstream at once; 0 = every one admitted
	timeout       time.Duration  // TIMEOUT: how long to wait for the upstream's response headers; 0 = as long as the caller
	trusted       []netip.Prefix // TRUSTED_PROXIES: callers whose forwarding headers are passed on; none: they are replaced
}

// String renders the policy settings as a terminal writes them.
func (s settings) String() string {
	out := "POLICY=" + s.policy.String()
	if s.policy.Kind() == admit.Queue {
		out += " LIMIT=" + strconv.Itoa(s.limit)
	}
	out += " WORKERS=" + strconv.Itoa(s.workers)
	if s.timeout > 0 {
		out += " TIMEOUT=" + s.timeout.String()
	}
	return out
}

// proxyFlags are the proxy's settings, each a flag with an environment
// variable as its fallback (package envflag).
type proxyFlags struct {
	set                                                               *envflag.Set
	addr, control, upstream, policy, limit, workers, timeout, trusted *envflag.Setting
}

// newProxyFlags defines the proxy's settings: the README's table of them,
// which TestREADMEProxyTable keeps true.
func newProxyFlags() *proxyFlags {
	fs := envflag.New("proxy")
	return &proxyFlags{
		set:      fs,
		upstream: fs.Add(envflag.Setting{Flag: "upstream", Env: "UPSTREAM", Default: defaultUpstream, Allowed: "an http:// or https:// URL", Usage: "the `URL` of the service behind"}),
		policy:   fs.Add(envflag.Setting{Flag: "policy", Env: "POLICY", Shown: "queue", Allowed: labsvc.PolicyAllowed, Usage: labsvc.PolicyUsage}),
		limit:    fs.Add(envflag.Setting{Flag: "limit", Env: "LIMIT", Default: "0", Allowed: fmt.Sprintf("0 to %d", admit.MaxLimit), Usage: "the queue policy's bound, `N` callers at most waiting for a worker (0 = none); needs --workers"}),
		workers:  fs.Add(envflag.Setting{Flag: "workers", Env: "WORKERS", Default: "0", Allowed: fmt.Sprintf("0 to %d", maxWorkers), Usage: "`N` requests sent upstream at once, the rest waiting in a queue (0 = every one admitted)"}),
		timeout:  fs.Add(envflag.Setting{Flag: "timeout", Env: "TIMEOUT", Default: "0", Allowed: "0 to " + maxTimeout.String(), Usage: "how long to wait for the upstream's response headers, a `DURATION` such as 2.5s (0 = as long as the caller waits); the body that follows is not bounded"}),
		trusted: fs.Add(envflag.Setting{Flag: "trusted-proxies", Env: "TRUSTED_PROXIES", Shown: "none", Allowed: "addresses and networks such as 10.0.0.1,192.168.0.0/16",
			Usage: "reverse proxies in front of this one, `addresses` or networks: from them the forwarding headers (Forwarded, X-Forwarded-For, -Host, -Proto) are passed on with this hop added (none: replaced by what this proxy saw)"}),
		addr:    fs.Add(envflag.Setting{Flag: "addr", Env: "ADDR", Default: defaultAddr, Usage: "`host:port` for callers' requests"}),
		control: fs.Add(envflag.Setting{Flag: "control", Env: "CONTROL_ADDR", Default: defaultControl, Usage: "`host:port` for GET /healthz, /config and /metrics"}),
	}
}

// parseSettings reads the flags with the environment (through getenv) as
// fallback, then defaults (package envflag). A bad value, from a flag or
// the environment (an empty variable counts as unset, an empty flag does
// not), is reported as input.FieldErrors, one "VAR: value is not allowed:
// want ..." per setting, as the lab reports its knobs; an empty address, an
// unknown flag or a stray argument as a labsvc.ErrUsage error (an unknown
// flag's listing the flags there are); -h writes the usage, with the
// policies' parameters, to usage and returns flag.ErrHelp (wrapped in
// ErrUsage).
func parseSettings(args []string, getenv func(string) string, usage io.Writer) (settings, error) {
	f := newProxyFlags()
	if err := f.set.Parse(args, getenv, usage); err != nil {
		if errors.Is(err, flag.ErrHelp) && usage != nil {
			fmt.Fprintf(usage, "policies and their parameters' defaults (package admit):\n%s", admit.Help())
		}
		return settings{}, fmt.Errorf("%w: %w", labsvc.ErrUsage, err)
	}
	if flags := f.set.FlagSet(); flags.NArg() > 0 {
		return settings{}, fmt.Errorf("%w: unexpected argument %q; want only the flags %s (-h explains them)", labsvc.ErrUsage, flags.Arg(0), strings.Join(f.set.Flags(), ", "))
	}
	for _, a := range []*envflag.Setting{f.addr, f.control} {
		if strings.TrimSpace(a.Value) == "" {
			return settings{}, fmt.Errorf("%w: %s is empty: want host:port, such as %s", labsvc.ErrUsage, a.Name(), a.Default)
		}
	}
	s := settings{addr: strings.TrimSpace(f.addr.Value), control: strings.TrimSpace(f.control.Value), upstream: defaultUpstream}
	errs := input.FieldErrors{}
	bad := func(st *envflag.Setting, v, want string) {
		errs.Add(st.Env, input.NotAllowed(v, want))
	}
	// value is a setting's text when a flag or the environment gave it.
	value := func(st *envflag.Setting) (string, bool) {
		return strings.TrimSpace(st.Value), st.Source != ""
	}
	if v, ok := value(f.upstream); ok {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			bad(f.upstream, v, "an http:// or https:// URL with a host, such as "+defaultUpstream)
		} else {
			s.upstream = v
		}
	}
	if v, ok := value(f.policy); ok {
		var se *admit.SpecError
		var err error
		if s.policy, err = admit.ParseSpec(v); errors.As(err, &se) {
			bad(f.policy, se.Value, se.Allowed)
		} else if v == "" {
			bad(f.policy, v, admit.Allowed)
		}
	}
	whole := func(st *envflag.Setting, hi int, dst *int) {
		if v, ok := value(st); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > hi {
				bad(st, v, fmt.Sprintf("0 to %d", hi))
				return
			}
			*dst = n
		}
	}
	whole(f.limit, admit.MaxLimit, &s.limit)
	whole(f.workers, maxWorkers, &s.workers)
	if v, ok := value(f.timeout); ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > maxTimeout {
			bad(f.timeout, v, "a duration from 0 to "+maxTimeout.String()+", such as 2.5s or 500ms")
		} else {
			s.timeout = d
		}
	}
	if v, ok := value(f.trusted); ok {
		tp, err := forwarding.ParseTrusted(v)
		if err != nil {
			bad(f.trusted, v, "addresses and networks such as 10.0.0.1,192.168.0.0/16 ("+err.Error()+")")
		} else {
			s.trusted = tp
		}
	}
	if len(errs) > 0 {
		return settings{}, errs
	}
	kind := s.policy.Kind()
	switch {
	case s.limit > 0 && kind != admit.Queue:
		bad(f.limit, strconv.Itoa(s.limit), fmt.Sprintf("0 with POLICY=%s (LIMIT bounds the queue policy's waiting callers; %s's own parameters are in POLICY)", kind, kind))
	case s.limit > 0 && s.workers == 0:
		bad(f.limit, strconv.Itoa(s.limit), "0 with WORKERS=0 (nobody waits at the proxy unless WORKERS bounds the requests it sends at once)")
	}
	if kind == admit.Sojourn && s.workers == 0 {
		bad(f.workers, "0", "1 or more with POLICY=sojourn (sojourn bounds the time callers wait for a worker; with WORKERS=0 nobody waits)")
	}
	if len(errs) > 0 {
		return settings{}, errs
	}
	return s, nil
}
