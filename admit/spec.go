package admit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The policies, by the name POLICY gives them.
const (
	Queue    = "queue"    // a bound on callers waiting for a worker (LIMIT)
	InFlight = "inflight" // a fixed quota on requests inside
	AIMD     = "aimd"     // additive increase, multiplicative decrease
	Gradient = "gradient" // a latency-gradient limit
	Sojourn  = "sojourn"  // a bound on each request's time in the queue
)

// Kinds lists the policies in the order the documentation gives them.
func Kinds() []string { return []string{Queue, InFlight, AIMD, Gradient, Sojourn} }

// Sandbox caps shared by the policies' parameters.
const (
	// MaxLimit is the most any limit or quota may be: the lab's own cap
	// on LIMIT.
	MaxLimit = 100000
	// MaxIntervalMS bounds every interval and time parameter, in ms.
	MaxIntervalMS = 600000
)

// param describes one parameter of a policy: its name in POLICY, its
// default, its range, and what it means (for errors and -h).
type param struct {
	name     string
	def      float64
	lo, hi   float64
	whole    bool // a whole number
	required bool // no default: POLICY must give it
	onOff    bool // written on or off, held as 1 or 0
	says     string
}

// format writes a value of the parameter as POLICY spells it.
func (pr param) format(v float64) string {
	if pr.onOff {
		if v != 0 {
			return "on"
		}
		return "off"
	}
	return formatNum(v)
}

// classes is the parameter every policy has, last: whether the door
// sheds by class (see the package doc, Door.AdmitClass).
var classes = param{name: "classes", def: 0, lo: 0, hi: 1, whole: true, onOff: true,
	says: "on: the queue is served critical first, sheddable requests are refused at three quarters of the bound, critical ones at twice it; off: every request alike"}

// params are the parameters of a policy, in the order a canonical Spec
// writes them, classes last; nil for a name that is not a policy. The
// index of each is fixed: the policies read their values by it.
func params(kind string) []param {
	if own := ownParams(kind); own != nil {
		return append(own, classes)
	}
	return nil
}

// ownParams are the parameters of a policy but classes.
func ownParams(kind string) []param {
	switch kind {
	case Queue:
		return []param{}
	case InFlight:
		return []param{
			{name: "quota", lo: 1, hi: MaxLimit, whole: true, required: true, says: "requests allowed inside at once, waiting or in service"},
		}
	case AIMD:
		return []param{
			{name: "start", def: 10, lo: 1, hi: MaxLimit, whole: true, says: "the limit at the start and after a reset"},
			{name: "min", def: 1, lo: 1, hi: MaxLimit, whole: true, says: "the least a cut leaves"},
			{name: "max", def: 1000, lo: 1, hi: MaxLimit, whole: true, says: "the most the limit grows to"},
			{name: "increase", def: 1, lo: 0.01, hi: 1000, says: "added once an interval while the limit is used and answers come back in time"},
			{name: "backoff", def: 0.75, lo: 0.5, hi: 0.99, says: "the fraction of the limit an overload signal leaves"},
			{name: "interval_ms", def: 100, lo: 1, hi: MaxIntervalMS, whole: true, says: "how often the limit may grow, in ms"},
			{name: "latency_ms", def: 2000, lo: 0, hi: MaxIntervalMS, whole: true, says: "an answer slower than this from admission is an overload signal, in ms; 0 = none"},
		}
	case Gradient:
		return []param{
			{name: "start", def: 20, lo: 1, hi: MaxLimit, whole: true, says: "the limit at the start and after a reset"},
			{name: "min", def: 1, lo: 1, hi: MaxLimit, whole: true, says: "the least the limit shrinks to"},
			{name: "max", def: 1000, lo: 1, hi: MaxLimit, whole: true, says: "the most the limit grows to"},
			{name: "smoothing", def: 0.2, lo: 0.01, hi: 1, says: "how much of each new estimate the limit takes"},
			{name: "tolerance", def: 1.5, lo: 1, hi: 10, says: "how many times the baseline latency a window's may be before the limit shrinks"},
			{name: "headroom", def: 4, lo: 0, hi: 1000, says: "requests added to each estimate, room to find more capacity"},
			{name: "interval_ms", def: 100, lo: 1, hi: MaxIntervalMS, whole: true, says: "the shortest window of latencies, in ms"},
			{name: "samples", def: 10, lo: 1, hi: 100000, whole: true, says: "the fewest latencies a window needs"},
			{name: "long", def: 600, lo: 1, hi: 100000, whole: true, says: "windows the baseline latency is averaged over"},
		}
	case Sojourn:
		return []param{
			{name: "target_ms", def: 5, lo: 1, hi: MaxIntervalMS, whole: true, says: "the wait a standing queue may keep: while it stands, a request that waited more than twice this is dropped, in ms"},
			{name: "interval_ms", def: 100, lo: 1, hi: MaxIntervalMS, whole: true, says: "how long the least wait must stay above target for the queue to count as standing, in ms"},
			{name: "timeout_ms", def: 0, lo: 0, hi: MaxIntervalMS, whole: true, says: "what callers wait: a request whose wait plus the service time measured lately exceeds it is dropped, overloaded or not, in ms; 0 = none"},
		}
	}
	return nil
}

// maxParams is the most parameters any policy has (gradient's nine and
// classes).
const maxParams = 10

// Spec is an admission policy as the POLICY knob spells it: the policy's
// name, then any of its parameters as name=value, separated by commas and
// no spaces, so that it needs no quoting in a shell:
//
//	queue
//	inflight,quota=5
//	aimd,backoff=0.5,interval_ms=200
//	queue,classes=on
//
// The zero value is the queue policy. ParseSpec returns the canonical
// form: the parameters given, in the order the package doc lists them
// (classes last), numbers in their shortest form, and "" for queue alone. A Spec read with
// UnmarshalText that does not parse is kept as given, for Validate to
// name what is wrong.
type Spec string

// ParseSpec reads text as POLICY spells it and returns the canonical Spec,
// or a *SpecError saying what is wrong and what is allowed. Spaces around
// the commas and the = signs are allowed.
func ParseSpec(text string) (Spec, error) {
	p, err := parse(text)
	if err != nil {
		return Spec(strings.TrimSpace(text)), err
	}
	return p.spec(), nil
}

// Kind returns the policy's name: queue, inflight, aimd, gradient or sojourn
// (whatever is before the first comma of a Spec that does not parse).
func (s Spec) Kind() string {
	name, _, _ := strings.Cut(string(s), ",")
	if name = strings.TrimSpace(name); name == "" {
		return Queue
	}
	return name
}

// String is the Spec as POLICY spells it, "queue" for the zero value.
func (s Spec) String() string {
	if s == "" {
		return Queue
	}
	return string(s)
}

// Validate returns nil, or a *SpecError saying what is wrong.
func (s Spec) Validate() error {
	_, err := parse(string(s))
	return err
}

// MarshalText writes the Spec as POLICY spells it.
func (s Spec) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a Spec, canonical when it parses and as given
// otherwise.
func (s *Spec) UnmarshalText(b []byte) error {
	*s, _ = ParseSpec(string(b))
	return nil
}

// Param is the value of the policy's parameter name in force (the
// default when the Spec does not give it); ok is false when the Spec does
// not parse or its policy has no such parameter.
func (s Spec) Param(name string) (v float64, ok bool) {
	p, err := parse(string(s))
	if err != nil {
		return 0, false
	}
	for i, pr := range params(p.kind) {
		if pr.name == name {
			return p.v[i], true
		}
	}
	return 0, false
}

// Classes says whether the policy sheds by class (classes=on; see the
// package doc): false when it does not, or when the Spec does not parse.
func (s Spec) Classes() bool {
	v, ok := s.Param(classes.name)
	return ok && v != 0
}

// Describe is the Spec with every parameter in force, defaults included
// ("aimd,start=10,min=1,..."), classes only when on, or the Spec as it is
// when it does not parse.
func (s Spec) Describe() string {
	p, err := parse(string(s))
	if err != nil {
		return s.String()
	}
	var b strings.Builder
	b.WriteString(p.kind)
	for i, pr := range params(p.kind) {
		if pr.required && p.given&(1<<i) == 0 || pr.onOff && p.v[i] == 0 {
			continue
		}
		b.WriteString("," + pr.name + "=" + pr.format(p.v[i]))
	}
	return b.String()
}

// SpecError says what is wrong with a POLICY value: Value as given, and
// Allowed, what is allowed instead.
type SpecError struct {
	Value   string
	Allowed string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("policy %q is not allowed: want %s", e.Value, e.Allowed)
}

// parsed is a Spec read into numbers.
type parsed struct {
	kind  string
	v     [maxParams]float64 // every parameter, defaults filled in
	given uint16             // which were given, by index
}

func (p parsed) spec() Spec {
	if p.kind == Queue && p.given == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(p.kind)
	for i, pr := range params(p.kind) {
		if p.given&(1<<i) != 0 {
			b.WriteString("," + pr.name + "=" + pr.format(p.v[i]))
		}
	}
	return Spec(b.String())
}

// ms is parameter i as a duration of milliseconds.
func (p parsed) ms(i int) time.Duration {
	return time.Duration(p.v[i] * float64(time.Millisecond))
}

func formatNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Allowed says what a POLICY value may be, as the errors say it.
const Allowed = "queue, inflight, aimd, gradient or sojourn, then the policy's parameters as name=value, separated by commas (inflight,quota=5)"

func parse(text string) (parsed, error) {
	text = strings.TrimSpace(text)
	fail := func(allowed string, args ...any) (parsed, error) {
		return parsed{}, &SpecError{Value: text, Allowed: fmt.Sprintf(allowed, args...)}
	}
	parts := strings.Split(text, ",")
	p := parsed{kind: strings.TrimSpace(parts[0])}
	if p.kind == "" {
		if text == "" {
			p.kind = Queue
			return p, nil
		}
		return fail("a policy's name first: %s", Allowed)
	}
	table := params(p.kind)
	if strings.EqualFold(p.kind, oldSojourn) {
		return fail("%s", renamed(parts))
	}
	if table == nil {
		return fail("%s", Allowed)
	}
	names := make([]string, len(table))
	for i, pr := range table {
		names[i] = pr.name
		p.v[i] = pr.def
	}
	for _, part := range parts[1:] {
		name, val, ok := strings.Cut(part, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		i := indexOf(names, name)
		switch {
		case !ok || name == "" || val == "":
			return fail("each of %s's parameters as name=value (%s)", p.kind, strings.Join(names, ", "))
		case i < 0 && p.kind == Queue:
			return fail("queue alone, or queue,classes=on: the queue policy's bound on callers waiting for a worker is the LIMIT knob")
		case i < 0:
			return fail("%s's parameters only: %s", p.kind, strings.Join(names, ", "))
		case p.given&(1<<i) != 0:
			return fail("%s once", name)
		}
		pr := table[i]
		v, ok := pr.value(val)
		if !ok {
			return fail("%s %s: %s", name, rangeText(pr), pr.says)
		}
		p.v[i] = v
		p.given |= 1 << i
	}
	for i, pr := range table {
		if pr.required && p.given&(1<<i) == 0 {
			return fail("%s,%s=N with N %s: %s", p.kind, pr.name, rangeText(pr), pr.says)
		}
	}
	if p.kind == AIMD || p.kind == Gradient {
		// start, min and max are the first three of both.
		if start, lo, hi := p.v[0], p.v[1], p.v[2]; !(lo <= start && start <= hi) {
			return fail("min ≤ start ≤ max (min=%s start=%s max=%s)", formatNum(lo), formatNum(start), formatNum(hi))
		}
	}
	return p, nil
}

// oldSojourn is what the sojourn policy was called until it was renamed
// for what it does: it is not CoDel. Runs saved with it keep it, and
// parse names the new one.
const oldSojourn = "codel"

// renamed is what a spec under the old name should be instead: the same
// parameters under sojourn (canonical when they parse), then Allowed.
func renamed(parts []string) string {
	use := Sojourn + ",target_ms=.."
	if p, err := parse(strings.Join(append([]string{Sojourn}, parts[1:]...), ",")); err == nil {
		use = p.spec().String()
	}
	return fmt.Sprintf("%s (%q is now called sojourn: it drops each request that waited past a bound, not at CoDel's rising rate; its parameters are the same); the policies are %s",
		use, oldSojourn, Allowed)
}

// value reads text as a value of the parameter; ok is false when it is
// not one.
func (pr param) value(text string) (v float64, ok bool) {
	if pr.onOff {
		switch text {
		case "on":
			return 1, true
		case "off":
			return 0, true
		}
		return 0, false
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(v) || v < pr.lo || v > pr.hi || pr.whole && v != float64(int64(v)) {
		return 0, false
	}
	return v, true
}

// rangeText says a parameter's range: "a whole number from 1 to 100000",
// "from 0.5 to 0.99", "on or off".
func rangeText(pr param) string {
	if pr.onOff {
		return "on or off"
	}
	if pr.whole {
		return fmt.Sprintf("a whole number from %s to %s", formatNum(pr.lo), formatNum(pr.hi))
	}
	return fmt.Sprintf("from %s to %s", formatNum(pr.lo), formatNum(pr.hi))
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

// Help is one line per policy with its parameters and their defaults
// (classes, which only a Door's user that gives classes takes, left out),
// for a command's -h text and the documentation.
func Help() string {
	var b strings.Builder
	for _, k := range Kinds() {
		b.WriteString(k)
		if k == Queue {
			b.WriteString(" (the default): callers waiting for a worker bounded by LIMIT\n")
			continue
		}
		for _, pr := range ownParams(k) {
			if pr.required {
				b.WriteString("," + pr.name + "=N")
			} else {
				b.WriteString("," + pr.name + "=" + formatNum(pr.def))
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
