package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"capacitylab/admit"
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
	limit         int           // LIMIT: the queue policy's bound on waiting callers
	workers       int           // WORKERS: requests sent upstream at once; 0 = every one admitted
	timeout       time.Duration // TIMEOUT: how long to wait for the upstream's answer; 0 = as long as the caller
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

// parseSettings reads the flags with the environment (through getenv) as
// fallback, then defaults. A bad value, from a flag or the environment (an
// empty variable counts as unset, an empty flag does not), is reported as
// labsvc.FieldErrors, one "VAR=value is not allowed: want ..." per
// setting; an unknown flag or a stray argument as a labsvc.ErrUsage error
// listing the flags there are; -h writes the usage to usage and returns
// flag.ErrHelp (wrapped in ErrUsage).
func parseSettings(args []string, getenv func(string) string, usage io.Writer) (settings, error) {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "", "`host:port` for callers' requests (env ADDR, default "+defaultAddr+")")
	control := fs.String("control", "", "`host:port` for GET /healthz, /config and /metrics (env CONTROL_ADDR, default "+defaultControl+")")
	upstream := fs.String("upstream", "", "the `URL` of the service behind (env UPSTREAM, default "+defaultUpstream+")")
	policy := fs.String("policy", "", labsvc.PolicyUsage+" (env POLICY, default queue)")
	limit := fs.String("limit", "", fmt.Sprintf("the queue policy's bound on callers waiting for a worker, `0` = none (env LIMIT, default 0, 0 to %d; needs --workers)", admit.MaxLimit))
	workers := fs.String("workers", "", fmt.Sprintf("requests sent upstream at once, the rest waiting in a queue; `0` = every one admitted (env WORKERS, default 0, 0 to %d)", maxWorkers))
	timeout := fs.String("timeout", "", "how long to wait for the upstream's answer, e.g. 2.5s; `0` = as long as the caller waits (env TIMEOUT, default 0, at most "+maxTimeout.String()+")")
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	allowed := fmt.Sprintf("want only the flags %s (-h explains them)", strings.Join(names, ", "))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if usage != nil {
				fmt.Fprintf(usage, "usage: proxy [flags]\n")
				fs.SetOutput(usage)
				fs.PrintDefaults()
				fmt.Fprintf(usage, "policies and their parameters' defaults (package admit):\n%s", admit.Help())
			}
			return settings{}, fmt.Errorf("%w: %w", labsvc.ErrUsage, err)
		}
		return settings{}, fmt.Errorf("%w: %w; %s", labsvc.ErrUsage, err, allowed)
	}
	if fs.NArg() > 0 {
		return settings{}, fmt.Errorf("%w: unexpected argument %q; %s", labsvc.ErrUsage, fs.Arg(0), allowed)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	// value is a setting's text: the flag if given, else the environment.
	value := func(name, env string, flagValue *string) (string, bool) {
		if given[name] {
			return strings.TrimSpace(*flagValue), true
		}
		v := strings.TrimSpace(getenv(env))
		return v, v != ""
	}
	s := settings{addr: defaultAddr, control: defaultControl, upstream: defaultUpstream}
	var errs labsvc.FieldErrors
	bad := func(field, v, want string) {
		errs = append(errs, labsvc.FieldError{Field: field, Value: v, Allowed: want})
	}
	if v, ok := value("addr", "ADDR", addr); ok {
		s.addr = v
	}
	if v, ok := value("control", "CONTROL_ADDR", control); ok {
		s.control = v
	}
	if v, ok := value("upstream", "UPSTREAM", upstream); ok {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			bad("UPSTREAM", v, "an http:// or https:// URL with a host, such as "+defaultUpstream)
		} else {
			s.upstream = v
		}
	}
	if v, ok := value("policy", "POLICY", policy); ok {
		var se *admit.SpecError
		var err error
		if s.policy, err = admit.ParseSpec(v); errors.As(err, &se) {
			bad("POLICY", se.Value, se.Allowed)
		} else if v == "" {
			bad("POLICY", v, admit.Allowed)
		}
	}
	whole := func(name, env string, flagValue *string, hi int, dst *int) {
		if v, ok := value(name, env, flagValue); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > hi {
				bad(env, v, fmt.Sprintf("0 to %d", hi))
				return
			}
			*dst = n
		}
	}
	whole("limit", "LIMIT", limit, admit.MaxLimit, &s.limit)
	whole("workers", "WORKERS", workers, maxWorkers, &s.workers)
	if v, ok := value("timeout", "TIMEOUT", timeout); ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > maxTimeout {
			bad("TIMEOUT", v, "a duration from 0 to "+maxTimeout.String()+", such as 2.5s or 500ms")
		} else {
			s.timeout = d
		}
	}
	if errs != nil {
		return settings{}, errs
	}
	kind := s.policy.Kind()
	switch {
	case s.limit > 0 && kind != admit.Queue:
		bad("LIMIT", strconv.Itoa(s.limit), fmt.Sprintf("0 with POLICY=%s (LIMIT bounds the queue policy's waiting callers; %s's own parameters are in POLICY)", kind, kind))
	case s.limit > 0 && s.workers == 0:
		bad("LIMIT", strconv.Itoa(s.limit), "0 with WORKERS=0 (nobody waits at the proxy unless WORKERS bounds the requests it sends at once)")
	}
	if kind == admit.CoDel && s.workers == 0 {
		bad("WORKERS", "0", "1 or more with POLICY=codel (codel bounds the time callers wait for a worker; with WORKERS=0 nobody waits)")
	}
	if errs != nil {
		return settings{}, errs
	}
	return s, nil
}
