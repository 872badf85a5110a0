// Package retry is the load generator's retrying client: which failed
// attempts it retries, after what backoff, within what budget, and the
// circuit breaker that stops it sending at all. One implementation serves
// the real generator (package loadrun, which calls it under a lock as
// attempts end) and the simulator (package sim, in simulated time), so a
// simulated retry storm is the real client's.
//
// # The spec
//
// A client is written as one string, as the lab's POLICY is: parameters
// as name=value separated by commas, written with no spaces so it needs
// no quotes in a shell ("retries=3,backoff=jitter,budget=0.1"; Parse takes
// spaces around the commas and = signs, and names in any case, as package
// params reads every such spec). Times are in
// milliseconds. The empty string is a client that never retries, and
// retries=0 one that never retries but may still have a breaker.
//
//	retries       0 to 10, 0           retries of a request after its first attempt
//	on            timeout+refused+error   which failures are retried, joined by +:
//	              timeout (gave up), refused (503, or 429), error (anything
//	              else that is not ok: a reset, a refused connection, another
//	              status)
//	backoff       none, fixed, exp, jitter; none
//	              the wait before retry n: none 0; fixed base_ms; exp
//	              min(cap_ms, base_ms × 2^(n−1)); jitter a uniform draw from 0
//	              to exp's (the "full jitter" of the AWS Builders' Library)
//	base_ms       1 to 60000, 100
//	cap_ms        1 to 60000, 2000
//	retry_after   on or off, off: wait at least the reply's Retry-After
//	budget        0 to 1, 0 (none): retries at most this share of first
//	              attempts, as a token bucket: each first attempt sent adds
//	              budget tokens, a retry takes one, and a retry finding less
//	              than one is not made (as Finagle's RetryBudget and gRPC's
//	              retry throttling do)
//	burst         1 to 1000, 10: the tokens the bucket starts with and holds
//	              at most
//	breaker       0 to 1, 0 (none): the circuit breaker opens when at least
//	              this share of the attempts ended in its current window
//	              failed (any outcome but ok), once the window holds
//	              breaker_min of them
//	breaker_min   1 to 100000, 20
//	window_ms     10 to 60000, 1000: the breaker's window, tumbling
//	open_ms       10 to 600000, 2000: how long it stays open before it lets
//	              probes through (half open)
//	probes        1 to 100, 3: attempts let through half open; all ok
//	              closes it, any failure opens it again
//
// While the breaker is open, nothing is sent: a request due then is not
// sent (reason breaker_open), and a retry due then is not made (its
// request ends as its last attempt did). Half open, attempts beyond the
// probes are treated as open.
package retry

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"capacitylab/internal/params"
	"capacitylab/result"
)

// On is the set of failures retried.
type On uint8

// The failures a client may retry.
const (
	OnTimeout On = 1 << iota // the attempt gave up (result.Gaveup)
	OnRefused                // 503 (result.Refused) or 429
	OnError                  // any other failure
)

// Backoff kinds.
const (
	None   = "none"
	Fixed  = "fixed"
	Exp    = "exp"
	Jitter = "jitter"
)

// Spec is a retrying client, parsed by Parse. The zero Spec never
// retries and has no breaker.
type Spec struct {
	Retries    int
	On         On
	Backoff    string
	Base, Cap  time.Duration
	RetryAfter bool
	Budget     float64
	Burst      int
	Breaker    float64
	BreakerMin int
	Window     time.Duration
	Open       time.Duration
	Probes     int
}

// Allowed says what a spec may hold, for error messages.
const Allowed = "parameters name=value joined by commas: retries (0 to 10), on (timeout, refused, error joined by +), backoff (none, fixed, exp, jitter), base_ms and cap_ms (1 to 60000), retry_after (on, off), budget (0 to 1), burst (1 to 1000), breaker (0 to 1), breaker_min (1 to 100000), window_ms (10 to 60000), open_ms (10 to 600000), probes (1 to 100)"

// Default is the spec of a client with retries and nothing else set.
func Default() Spec {
	return Spec{On: OnTimeout | OnRefused | OnError, Backoff: None, Base: 100 * time.Millisecond, Cap: 2 * time.Second,
		Burst: 10, BreakerMin: 20, Window: time.Second, Open: 2 * time.Second, Probes: 3}
}

// Error is a spec that cannot be parsed (package params): its Field
// names the parameter, or is "" for the spec as a whole.
type Error = params.Error

// bad is the error of parameter field (or the whole spec, "") given as v.
func bad(field, v, want string) error {
	return &Error{Spec: "retry", Field: field, Value: v, Want: want}
}

// number reads p as a decimal in [lo, hi], whole when asked.
func number(p params.Param, lo, hi float64, whole bool) (float64, error) {
	return params.Number("retry", p, lo, hi, whole)
}

// Parse reads a spec as String writes it (see the package doc), spaces
// around the commas and = signs allowed; "" is the zero Spec.
func Parse(s string) (Spec, error) {
	if strings.TrimSpace(s) == "" {
		return Spec{}, nil
	}
	sp := Default()
	ps, err := params.Split("retry", s, Allowed)
	if err != nil {
		return Spec{}, err
	}
	for _, p := range ps {
		name, v := p.Name, p.Value
		ms := func(lo, hi float64) (time.Duration, error) {
			f, err := number(p, lo, hi, true)
			return time.Duration(f) * time.Millisecond, err
		}
		var err error
		var f float64
		switch name {
		case "retries":
			f, err = number(p, 0, 10, true)
			sp.Retries = int(f)
		case "on":
			sp.On = 0
			for _, w := range strings.Split(v, "+") {
				switch w {
				case "timeout":
					sp.On |= OnTimeout
				case "refused":
					sp.On |= OnRefused
				case "error":
					sp.On |= OnError
				default:
					return Spec{}, bad(name, v, "timeout, refused and error joined by +, e.g. timeout+refused")
				}
			}
		case "backoff":
			switch v {
			case None, Fixed, Exp, Jitter:
				sp.Backoff = v
			default:
				return Spec{}, bad(name, v, "none, fixed, exp or jitter")
			}
		case "base_ms":
			sp.Base, err = ms(1, 60000)
		case "cap_ms":
			sp.Cap, err = ms(1, 60000)
		case "retry_after":
			switch v {
			case "on":
				sp.RetryAfter = true
			case "off":
				sp.RetryAfter = false
			default:
				return Spec{}, bad(name, v, "on or off")
			}
		case "budget":
			sp.Budget, err = number(p, 0, 1, false)
		case "burst":
			f, err = number(p, 1, 1000, true)
			sp.Burst = int(f)
		case "breaker":
			sp.Breaker, err = number(p, 0, 1, false)
		case "breaker_min":
			f, err = number(p, 1, 100000, true)
			sp.BreakerMin = int(f)
		case "window_ms":
			sp.Window, err = ms(10, 60000)
		case "open_ms":
			sp.Open, err = ms(10, 600000)
		case "probes":
			f, err = number(p, 1, 100, true)
			sp.Probes = int(f)
		default:
			return Spec{}, bad(name, v, "a parameter of "+Allowed)
		}
		if err != nil {
			return Spec{}, err
		}
	}
	if sp.Cap < sp.Base {
		return Spec{}, bad("cap_ms", strconv.Itoa(int(sp.Cap.Milliseconds())), fmt.Sprintf("at least base_ms (%d)", sp.Base.Milliseconds()))
	}
	if sp.Retries == 0 && sp.Breaker == 0 {
		return Spec{}, nil
	}
	return sp, nil
}

// IsZero says whether s is the client that never retries and has no
// breaker: the generator's plain path.
func (s Spec) IsZero() bool { return s.Retries == 0 && s.Breaker == 0 }

// String writes s as Parse reads it, every parameter that differs from
// Default, in the package doc's order; "" for the zero Spec.
func (s Spec) String() string {
	if s.IsZero() {
		return ""
	}
	d := Default()
	var b []string
	add := func(name, v string) { b = append(b, name+"="+v) }
	add("retries", strconv.Itoa(s.Retries))
	if s.On != d.On {
		var w []string
		for _, o := range []struct {
			on   On
			name string
		}{{OnTimeout, "timeout"}, {OnRefused, "refused"}, {OnError, "error"}} {
			if s.On&o.on != 0 {
				w = append(w, o.name)
			}
		}
		add("on", strings.Join(w, "+"))
	}
	if s.Backoff != d.Backoff {
		add("backoff", s.Backoff)
	}
	if s.Base != d.Base {
		add("base_ms", strconv.FormatInt(s.Base.Milliseconds(), 10))
	}
	if s.Cap != d.Cap {
		add("cap_ms", strconv.FormatInt(s.Cap.Milliseconds(), 10))
	}
	if s.RetryAfter {
		add("retry_after", "on")
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	if s.Budget != 0 {
		add("budget", f(s.Budget))
	}
	if s.Burst != d.Burst {
		add("burst", strconv.Itoa(s.Burst))
	}
	if s.Breaker != 0 {
		add("breaker", f(s.Breaker))
	}
	if s.BreakerMin != d.BreakerMin {
		add("breaker_min", strconv.Itoa(s.BreakerMin))
	}
	if s.Window != d.Window {
		add("window_ms", strconv.FormatInt(s.Window.Milliseconds(), 10))
	}
	if s.Open != d.Open {
		add("open_ms", strconv.FormatInt(s.Open.Milliseconds(), 10))
	}
	if s.Probes != d.Probes {
		add("probes", strconv.Itoa(s.Probes))
	}
	return strings.Join(b, ",")
}

// MarshalText writes the spec as String does.
func (s Spec) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a spec as Parse does.
func (s *Spec) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// The breaker's states, as samples name them.
const (
	Closed   = "closed"
	Opened   = "open"
	HalfOpen = "half_open"
)

// Client is one window's retrying client: its budget's tokens, its
// breaker, and the source its jitter is drawn from. It is not safe for
// concurrent use; loadrun calls it under the window's lock. Times are
// offsets from the window's start.
type Client struct {
	spec   Spec
	rng    *rand.Rand
	tokens float64

	state     string
	until     time.Duration // open: when it turns half open
	winStart  time.Duration // the breaker's current window
	n, failed int           // attempts ended in it, and failed
	probes    int           // half open: probes let through
	probesOK  int           // half open: of them, answered ok
}

// New returns the client of spec s for one window, its jitter drawn from
// a source seeded with seed (the window's seed), so a simulated window
// repeats.
func New(s Spec, seed uint64) *Client {
	return &Client{spec: s, rng: rand.New(rand.NewPCG(seed, 0x7265747279)), tokens: float64(s.Burst), state: Closed}
}

// Spec returns the client's spec.
func (c *Client) Spec() Spec { return c.spec }

// State is the breaker's state at now (Closed without a breaker).
func (c *Client) State(now time.Duration) string {
	if c.state == Opened && now >= c.until {
		return HalfOpen
	}
	return c.state
}

// Send says whether an attempt due at now may be sent (the breaker
// allows it), and counts it when it does: a first attempt deposits into
// the budget, a half-open probe is counted.
func (c *Client) Send(now time.Duration, first bool) bool {
	if c.spec.Breaker > 0 {
		switch c.State(now) {
		case Opened:
			return false
		case HalfOpen:
			if c.state == Opened {
				c.state, c.probes, c.probesOK = HalfOpen, 0, 0
			}
			if c.probes >= c.spec.Probes {
				return false
			}
			c.probes++
		}
	}
	if first && c.spec.Budget > 0 {
		c.tokens = min(c.tokens+c.spec.Budget, float64(c.spec.Burst))
	}
	return true
}

// Retry is told that attempt n (0 for the first) of a request ended at
// now as r says (its outcome, status and reason), the reply asking to
// wait retryAfter (0 when it did not). It feeds the breaker, and says
// whether the request is retried and when its next attempt is due. A
// retry that the budget allows takes its token here; whether it is sent
// when due is Send's to say.
func (c *Client) Retry(now time.Duration, n int, r result.Record, retryAfter time.Duration) (bool, time.Duration) {
	c.observe(now, r.Outcome == result.OK)
	if r.Outcome == result.OK || r.Outcome == result.NotSent || n >= c.spec.Retries || !c.spec.retries(r) {
		return false, 0
	}
	if c.spec.Budget > 0 {
		if c.tokens < 1 {
			return false, 0
		}
		c.tokens--
	}
	wait := c.backoff(n + 1)
	if c.spec.RetryAfter {
		wait = max(wait, retryAfter)
	}
	return true, now + wait
}

// retries says whether s retries the failure r.
func (s Spec) retries(r result.Record) bool {
	switch {
	case r.Outcome == result.Gaveup:
		return s.On&OnTimeout != 0
	case r.Outcome == result.Refused || r.Status == 429:
		return s.On&OnRefused != 0
	default:
		return s.On&OnError != 0
	}
}

// backoff is the wait before retry n (from 1).
func (c *Client) backoff(n int) time.Duration {
	s := c.spec
	switch s.Backoff {
	case Fixed:
		return s.Base
	case Exp, Jitter:
		d := s.Cap
		if n-1 < 30 {
			d = min(s.Cap, s.Base<<(n-1))
		}
		if s.Backoff == Jitter {
			d = time.Duration(c.rng.Float64() * float64(d))
		}
		return d
	}
	return 0
}

// observe feeds the breaker an attempt that ended at now.
func (c *Client) observe(now time.Duration, ok bool) {
	if c.spec.Breaker <= 0 {
		return
	}
	switch c.State(now) {
	case Opened:
		return // an attempt sent before it opened: it has decided already
	case HalfOpen:
		if c.state == Opened {
			return // no probe sent yet: this attempt predates the opening
		}
		if !ok {
			c.open(now)
			return
		}
		c.probesOK++
		if c.probesOK >= c.spec.Probes {
			c.state, c.winStart, c.n, c.failed = Closed, now, 0, 0
		}
		return
	}
	if now-c.winStart >= c.spec.Window {
		c.winStart, c.n, c.failed = now-(now-c.winStart)%c.spec.Window, 0, 0
	}
	c.n++
	if !ok {
		c.failed++
	}
	if c.n >= c.spec.BreakerMin && float64(c.failed) >= c.spec.Breaker*float64(c.n) {
		c.open(now)
	}
}

func (c *Client) open(now time.Duration) {
	c.state, c.until, c.n, c.failed = Opened, now+c.spec.Open, 0, 0
}

// Words says what the client does in a sentence for a page ("" for the
// zero Spec): "Callers retry up to 3 times, on a timeout or a 503, at
// once, within a retry budget of 10% of their requests."
func (s Spec) Words() string {
	if s.IsZero() {
		return ""
	}
	var on []string
	for _, o := range []struct {
		on   On
		name string
	}{{OnTimeout, "a timeout"}, {OnRefused, "a 503 or 429"}, {OnError, "another error"}} {
		if s.On&o.on != 0 {
			on = append(on, o.name)
		}
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + " ms" }
	var b strings.Builder
	if s.Retries > 0 {
		fmt.Fprintf(&b, "Callers retry up to %d %s, on %s, ", s.Retries, plural(s.Retries, "time", "times"), strings.Join(on, " or "))
		switch s.Backoff {
		case Fixed:
			b.WriteString("after " + ms(s.Base))
		case Exp:
			b.WriteString("after " + ms(s.Base) + ", doubling each time up to " + ms(s.Cap))
		case Jitter:
			b.WriteString("after a random wait up to " + ms(s.Base) + ", doubling each time up to " + ms(s.Cap) + " (full jitter)")
		default:
			b.WriteString("at once")
		}
		if s.RetryAfter {
			b.WriteString(", waiting at least the reply's Retry-After")
		}
		if s.Budget > 0 {
			fmt.Fprintf(&b, ", within a retry budget of %s%% of their requests", strconv.FormatFloat(s.Budget*100, 'f', -1, 64))
		}
	} else {
		b.WriteString("Callers do not retry")
	}
	if s.Breaker > 0 {
		fmt.Fprintf(&b, "; a circuit breaker stops them sending for %s when %s%% of the attempts in %s fail", ms(s.Open),
			strconv.FormatFloat(s.Breaker*100, 'f', -1, 64), ms(s.Window))
	}
	b.WriteString(".")
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
