// Package hedge is the load generator's hedged requests: when a request
// (or a fanned-out sub-request) has not answered within a delay of its
// send, the client sends a copy of it to the same target, takes the first
// answer that is ok and cancels the other ("The Tail at Scale", Dean and
// Barroso, 2013). One implementation serves the real generator (package
// loadrun, which calls it under its window's lock) and the simulator
// (package sim, in simulated time), so a simulated hedge is the real
// client's.
//
// # The spec
//
// A hedging client is written as one string, as package retry's is:
// parameters name=value joined by commas, written with no spaces (Parse
// takes them around the commas and = signs: package params). Times are in
// milliseconds. The empty string is a client that never hedges. Give one
// of delay_ms and percentile.
//
//	delay_ms    1 to 60000: a fixed delay
//	percentile  50 to 99.9: the delay is this percentile (nearest rank) of
//	            the latencies of the last window copies that ended (see
//	            below), recomputed after every window/20 of them (at least 1)
//	window      10 to 100000, 1000: how many recent latencies the
//	            percentile is over (fewer while fewer have ended)
//	warmup      1 to 100000, 100, at most window: with percentile, no copy
//	            is sent until this many latencies have been seen, so the
//	            first requests of a window are never hedged
//	max         1 to 5, 1: copies of one request at most; copy n is due n
//	            delays after the request's send
//
// The latency of a copy (the original included) is from its own send to
// its answer when it ended ok, or to its cancellation when another copy
// answered first and it had been out longer than the delay: it was at
// least that slow, so counting it keeps the slow ones in the window even
// though hedging cuts them short (a copy cancelled sooner says nothing of
// how long it would have taken, and is not counted). Copies that failed
// (refused, gave up, error) are not counted: a fast 503 says nothing
// about how long an answer takes. A percentile at the edge of a slow
// mode is unstable: when the share of slow requests is about 1 − the
// percentile, the cancelled ones put the percentile among them, each
// recomputation a little later, until it is the slow mode's and hedging
// stops, as the definition says it should (the p95 of a service whose
// requests are 5.2% slow is a slow one).
//
// A copy is sent only while no copy of its request has answered ok and
// one is still out; a copy that fails leaves the others running, and a
// request whose copies all failed ends as its last one did. The lab
// serves every request it has read even when its caller has closed the
// connection (package labsvc), so a cancelled copy's work is still done:
// hedging's cost at the lab is every copy sent, which the rows count in
// attempts and hedges.
package hedge

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"capacitylab/internal/params"
)

// Spec is a hedging client, parsed by Parse. The zero Spec never hedges.
type Spec struct {
	Delay      time.Duration // a fixed delay, or 0 with Percentile
	Percentile float64       // the delay as a percentile of recent latencies, or 0 with Delay
	Window     int           // latencies the percentile is over
	Warmup     int           // latencies seen before the first copy (Percentile)
	Max        int           // copies of one request at most
}

// Allowed says what a spec may hold, for error messages.
const Allowed = "parameters name=value joined by commas, one of delay_ms (1 to 60000) and percentile (50 to 99.9), then window (10 to 100000), warmup (1 to 100000, at most window), max (1 to 5)"

// Default is the spec with every parameter but the delay at its default.
func Default() Spec { return Spec{Window: 1000, Warmup: 100, Max: 1} }

// Error is a spec that cannot be parsed (package params): its Field
// names the parameter, or is "" for the spec as a whole.
type Error = params.Error

// bad is the error of parameter field (or the whole spec, "") given as v.
func bad(field, v, want string) error {
	return &Error{Spec: "hedge", Field: field, Value: v, Want: want}
}

// number reads p as a decimal in [lo, hi], whole when asked.
func number(p params.Param, lo, hi float64, whole bool) (float64, error) {
	return params.Number("hedge", p, lo, hi, whole)
}

// Parse reads a spec as String writes it (see the package doc), spaces
// around the commas and = signs allowed; "" is the zero Spec.
func Parse(s string) (Spec, error) {
	if strings.TrimSpace(s) == "" {
		return Spec{}, nil
	}
	sp := Default()
	ps, err := params.Split("hedge", s, Allowed)
	if err != nil {
		return Spec{}, err
	}
	seen := map[string]bool{}
	for _, p := range ps {
		name, v := p.Name, p.Value
		seen[name] = true
		var err error
		var f float64
		switch name {
		case "delay_ms":
			f, err = number(p, 1, 60000, true)
			sp.Delay = time.Duration(f) * time.Millisecond
		case "percentile":
			sp.Percentile, err = number(p, 50, 99.9, false)
		case "window":
			f, err = number(p, 10, 100000, true)
			sp.Window = int(f)
		case "warmup":
			f, err = number(p, 1, 100000, true)
			sp.Warmup = int(f)
		case "max":
			f, err = number(p, 1, 5, true)
			sp.Max = int(f)
		default:
			return Spec{}, bad(name, v, "a parameter of "+Allowed)
		}
		if err != nil {
			return Spec{}, err
		}
	}
	switch {
	case seen["delay_ms"] == seen["percentile"]:
		return Spec{}, bad("", s, "one of delay_ms (a fixed delay) and percentile (of recent latencies), not both and not neither")
	case seen["delay_ms"] && (seen["window"] || seen["warmup"]):
		return Spec{}, bad("", s, "window and warmup only with percentile: delay_ms is a fixed delay")
	case sp.Warmup > sp.Window:
		return Spec{}, bad("warmup", strconv.Itoa(sp.Warmup), fmt.Sprintf("at most window (%d)", sp.Window))
	}
	return sp, nil
}

// IsZero says whether s never hedges.
func (s Spec) IsZero() bool { return s.Delay == 0 && s.Percentile == 0 }

// String writes s as Parse reads it, every parameter that differs from
// Default in the package doc's order; "" for the zero Spec.
func (s Spec) String() string {
	if s.IsZero() {
		return ""
	}
	d := Default()
	var b []string
	if s.Delay > 0 {
		b = append(b, "delay_ms="+strconv.FormatInt(s.Delay.Milliseconds(), 10))
	} else {
		b = append(b, "percentile="+strconv.FormatFloat(s.Percentile, 'f', -1, 64))
		if s.Window != d.Window {
			b = append(b, "window="+strconv.Itoa(s.Window))
		}
		if s.Warmup != d.Warmup {
			b = append(b, "warmup="+strconv.Itoa(s.Warmup))
		}
	}
	if s.Max != d.Max {
		b = append(b, "max="+strconv.Itoa(s.Max))
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

// Words says what the client does in a sentence for a page ("" for the
// zero Spec): "Callers send a copy of a request that has not answered
// within 20 ms, and take the first answer."
func (s Spec) Words() string {
	if s.IsZero() {
		return ""
	}
	copies := "a copy"
	if s.Max > 1 {
		copies = "up to " + strconv.Itoa(s.Max) + " copies, one each delay,"
	}
	when := strconv.FormatInt(s.Delay.Milliseconds(), 10) + " ms"
	if s.Delay == 0 {
		when = "the " + strconv.FormatFloat(s.Percentile, 'f', -1, 64) + "th percentile of their last " + strconv.Itoa(s.Window) + " latencies"
	}
	return "Callers send " + copies + " of a request that has not answered within " + when + ", take the first answer and cancel the rest."
}

// Client is one window's hedging client: the recent latencies its
// percentile is over. It is not safe for concurrent use; loadrun calls it
// under the window's lock.
type Client struct {
	spec    Spec
	ring    []time.Duration // the last Window latencies, oldest overwritten
	next    int             // where the next latency goes in ring
	seen    int             // latencies seen in all
	fresh   int             // seen since delay was computed
	delay   time.Duration   // the percentile as last computed
	scratch []time.Duration
}

// New returns the client of spec s for one window.
func New(s Spec) *Client { return &Client{spec: s} }

// Spec returns the client's spec.
func (c *Client) Spec() Spec { return c.spec }

// Observe counts the latency of a copy that ended ok, or that was
// cancelled when another answered first (see the package doc).
func (c *Client) Observe(d time.Duration) {
	if c.spec.Percentile == 0 {
		return
	}
	if len(c.ring) < c.spec.Window {
		c.ring = append(c.ring, d)
	} else {
		c.ring[c.next] = d
		c.next = (c.next + 1) % len(c.ring)
	}
	c.seen++
	c.fresh++
}

// Delay is the delay after which a request sent now gets its first copy
// (copy n is due n delays after its send), and false when it gets none:
// a percentile client before its warmup.
func (c *Client) Delay() (time.Duration, bool) {
	if c.spec.Delay > 0 {
		return c.spec.Delay, true
	}
	if c.seen < c.spec.Warmup || len(c.ring) == 0 {
		return 0, false
	}
	if c.delay == 0 || c.fresh >= max(1, c.spec.Window/20) {
		c.scratch = append(c.scratch[:0], c.ring...)
		slices.Sort(c.scratch)
		rank := int(math.Ceil(c.spec.Percentile * float64(len(c.scratch)) / 100))
		c.delay = max(c.scratch[min(max(rank, 1), len(c.scratch))-1], time.Microsecond)
		c.fresh = 0
	}
	return c.delay, true
}
