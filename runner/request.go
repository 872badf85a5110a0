package runner

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"

	"capacitylab/evidence"
	"capacitylab/hedge"
	"capacitylab/input"
	"capacitylab/loadrun"
	"capacitylab/measure"
	"capacitylab/result"
	"capacitylab/retry"
)

// Sandbox caps on one run, the defaults of Limits. A sweep from the browser
// runs on the server's own machine, so these bound what any learner can ask
// of it.
const (
	DefaultMaxRates         = 8    // windows in one run (rates, or client counts)
	DefaultMaxWindowSeconds = 30   // length of one window, seconds
	DefaultMaxOffered       = 2000 // offered rate of one window, arrivals a second
	DefaultMaxClients       = 256  // closed-loop clients in one window
	DefaultMaxTimeoutMS     = 10000
	// DefaultMaxRunSeconds bounds how long one run holds the lab:
	// windows × seconds (the lessons' presets need at most 50).
	DefaultMaxRunSeconds = 120
	// DefaultMaxRunCPUSeconds bounds the processor time one run asks of
	// the lab (CPUSeconds: the lessons' presets ask at most 22.5): a run
	// asking far more than its processors can give leaves a backlog that
	// holds the lab long after its windows end.
	DefaultMaxRunCPUSeconds = 60
	// MaxChanges is how many knob changes (at) one run may make in each
	// window.
	MaxChanges = 8
	// MinWindowSeconds is the shortest window: shorter ones measure
	// next to nothing (a window of a nanosecond sends no request and
	// would be "done").
	MinWindowSeconds = 0.5
)

// The runner's cap on the offered rate is within the generator's own (this
// fails to compile otherwise).
const _ uint = result.MaxRate - DefaultMaxOffered

// Modes of a run: measure.Preset's.
const (
	ModeOpen   = measure.ModeOpen   // open loop: arrivals at the offered rates, whatever the answers
	ModeClosed = measure.ModeClosed // closed loop: N clients, each sending its next request after an answer
)

// Request is what a learner asks to run: a measure.Preset (the lab's
// knobs, then the sweep) and where it was started. Its JSON form is flat:
// {"workers":1,"spin_ms":2,"wait_ms":18,"limit":0,"policy":"queue","cpus":1,
// "stall_every":0,"stall_ms":0,"rates":[40,80],"seconds":2,"seed":1,"rng":"pcg",
// "mode":"open","clients":[],"timeout_ms":2000,"lesson":"...","block":"..."}.
type Request struct {
	measure.Preset
	Lesson string `json:"lesson,omitempty"` // where the run was started, if from a lesson
	Block  string `json:"block,omitempty"`
	// Upload, when set, makes the run a learner's own results file
	// uploaded to the server's "Your service" page rather than a sweep
	// of the lab: the Preset then holds only the file's windows (Rates
	// or Clients, Seconds, Mode) and no lab. The runner never runs one;
	// Validate refuses it.
	Upload *Upload `json:"upload,omitempty"`
}

// Upload is what the server keeps of an uploaded results file beside
// its rows and records (stored as the run's): the file as read, without
// its records, the analysis at the budget given with it, and the budget.
type Upload struct {
	Dataset  evidence.Dataset  `json:"dataset"`
	Analysis evidence.Analysis `json:"analysis"`
	BudgetMS float64           `json:"budget_ms,omitempty"`
}

// at is where a run of q stands before it starts: its windows and their
// length.
func (q Request) at() result.WindowProgress {
	return result.WindowProgress{Windows: q.Windows(), Seconds: q.Seconds}
}

// CPUSeconds is the processor time the run asks of the lab, in seconds:
// summed over its windows, an open-loop window's offered rate × seconds ×
// SPIN_MS, and a closed-loop window's clients × seconds × SPIN_MS /
// (SPIN_MS + WAIT_MS) (each client has at most one request at a time,
// which takes at least its spin and wait), whatever the lab can give.
func (q Request) CPUSeconds() float64 {
	spin := float64(q.SpinMS) / 1000
	total := 0.0
	if q.Closed() {
		if q.SpinMS == 0 {
			return 0
		}
		for _, n := range q.Clients {
			total += float64(n) * q.Seconds * float64(q.SpinMS) / float64(q.SpinMS+q.WaitMS)
		}
		return total
	}
	for _, r := range q.Rates {
		total += r * q.Seconds * spin
	}
	return total
}

// Limits are the sandbox caps a Request is validated against.
type Limits struct {
	MaxRates         int     // windows in one run
	MaxWindowSeconds float64 // seconds in one window
	MaxOffered       float64 // arrivals a second in one window
	MaxRunSeconds    float64 // windows × seconds
	MaxRunCPUSeconds float64 // processor time the run asks of the lab (CPUSeconds)
	MaxClients       int     // closed-loop clients in one window
	MaxTimeoutMS     int     // the caller's timeout
	MaxCPUs          int     // the lab's CPUS knob
}

// MinWindowSeconds is MinWindowSeconds, for pages that show the limits.
func (Limits) MinWindowSeconds() float64 { return MinWindowSeconds }

// DefaultLimits returns the default caps for a host with hostCPUs cores:
// the lab may use every core but one (the load generator needs one), and
// one on a single-core host.
func DefaultLimits(hostCPUs int) Limits {
	return Limits{
		MaxRates:         DefaultMaxRates,
		MaxWindowSeconds: DefaultMaxWindowSeconds,
		MaxOffered:       DefaultMaxOffered,
		MaxRunSeconds:    DefaultMaxRunSeconds,
		MaxRunCPUSeconds: DefaultMaxRunCPUSeconds,
		MaxClients:       DefaultMaxClients,
		MaxTimeoutMS:     DefaultMaxTimeoutMS,
		MaxCPUs:          max(1, hostCPUs-1),
	}
}

// HostLimits is DefaultLimits for this machine (runtime.NumCPU).
func HostLimits() Limits { return DefaultLimits(runtime.NumCPU()) }

// FieldErrors maps a field of Request (its JSON name) to what is wrong with
// it and what is allowed: the one field-error type (package input). It is
// the error Validate and Runner.Submit return for a learner's mistakes.
type FieldErrors = input.FieldErrors

// Validate checks a request against the limits and returns nil or
// FieldErrors with one message per bad field.
func (l Limits) Validate(q Request) error {
	fe := FieldErrors{}
	if q.Upload != nil {
		fe["upload"] = "an upload is not a sweep: upload a results file on the page Your service (/service) instead"
	}
	var cerrs FieldErrors
	if err := q.Config.Validate(); err != nil {
		cerrs, _ = err.(FieldErrors)
	}
	for knob, msg := range cerrs {
		fe[strings.ToLower(knob)] = msg // WORKERS is the request's "workers"
	}
	if _, bad := fe["cpus"]; !bad && q.CPUs > l.MaxCPUs {
		fe["cpus"] = fmt.Sprintf("%d is not allowed here: want 1 to %d (the processors this server leaves to labs: the load generators keep their own)", q.CPUs, l.MaxCPUs)
		if l.MaxCPUs == 1 {
			fe["cpus"] = fmt.Sprintf("%d is not allowed here: want 1 (the lab gets one core; the load generator needs the other)", q.CPUs)
		}
	}

	switch cmp.Or(q.Mode, ModeOpen) {
	case ModeOpen:
		switch {
		case len(q.Rates) == 0:
			fe["rates"] = fmt.Sprintf("give at least one offered rate: want 1 to %d rates, each more than 0 and at most %s a second", l.MaxRates, num(l.MaxOffered))
		case len(q.Rates) > l.MaxRates:
			fe["rates"] = fmt.Sprintf("%d rates is too many: want 1 to %d", len(q.Rates), l.MaxRates)
		default:
			for _, r := range q.Rates {
				if math.IsNaN(r) || r <= 0 || r > l.MaxOffered {
					fe["rates"] = fmt.Sprintf("rate %s is not allowed: want more than 0 and at most %s a second", num(r), num(l.MaxOffered))
					break
				}
			}
		}
		if len(q.Clients) > 0 {
			fe["clients"] = "client counts are for closed mode: leave them empty in open mode, or set mode to closed"
		}
	case ModeClosed:
		switch {
		case len(q.Clients) == 0:
			fe["clients"] = fmt.Sprintf("give at least one client count: want 1 to %d counts, each 1 to %d", l.MaxRates, l.MaxClients)
		case len(q.Clients) > l.MaxRates:
			fe["clients"] = fmt.Sprintf("%d client counts is too many: want 1 to %d", len(q.Clients), l.MaxRates)
		default:
			for _, c := range q.Clients {
				if c < 1 || c > l.MaxClients {
					fe["clients"] = fmt.Sprintf("%d clients is not allowed: want 1 to %d", c, l.MaxClients)
					break
				}
			}
		}
		if len(q.Rates) > 0 {
			fe["rates"] = "rates are for open mode: leave them empty in closed mode, or set mode to open"
		}
	default:
		fe["mode"] = fmt.Sprintf("mode %q is not known: want open or closed", q.Mode)
	}

	secondsOK := false
	switch {
	case math.IsNaN(q.Seconds) || q.Seconds < MinWindowSeconds || q.Seconds > l.MaxWindowSeconds:
		fe["seconds"] = fmt.Sprintf("%s seconds a window is not allowed: want at least %s and at most %s", num(q.Seconds), num(MinWindowSeconds), num(l.MaxWindowSeconds))
	default:
		secondsOK = true
	}
	if secondsOK && q.Windows() > 0 && float64(q.Windows())*q.Seconds > l.MaxRunSeconds {
		fe["seconds"] = fmt.Sprintf("%d windows of %s s is %s s, longer than a run may be: want at most %s s in all (fewer windows or shorter ones)",
			q.Windows(), num(q.Seconds), num(float64(q.Windows())*q.Seconds), num(l.MaxRunSeconds))
	}
	if fe["spin_ms"] == "" && fe["wait_ms"] == "" && fe["rates"] == "" && fe["clients"] == "" && fe["mode"] == "" && secondsOK && l.MaxRunCPUSeconds > 0 {
		if cpu := q.CPUSeconds(); cpu > l.MaxRunCPUSeconds {
			fe["spin_ms"] = fmt.Sprintf("the run asks %s s of processor time in all (each window's rate × seconds × SPIN_MS), more than a run may (%s s): "+
				"lower SPIN_MS, the rates or the seconds", num(cpu), num(l.MaxRunCPUSeconds))
		}
	}
	if q.RNG != "" {
		if _, err := loadrun.ParseSource(q.RNG); err != nil {
			fe["rng"] = err.Error()
		}
	}
	switch {
	case q.MaxInFlight < 0 || q.MaxInFlight > l.MaxClients:
		fe["max_inflight"] = fmt.Sprintf("%d client workers is not allowed: want 0 (no fixed pool) or 1 to %d", q.MaxInFlight, l.MaxClients)
	case q.MaxInFlight > 0 && q.Closed():
		fe["max_inflight"] = "a fixed pool of client workers is for open mode: a closed loop's clients are its workers; leave it 0"
	}
	if sp, err := retry.Parse(q.Retry); err != nil {
		fe["retry"] = err.Error()
	} else if !sp.IsZero() && q.Closed() {
		fe["retry"] = "a retrying client is for open mode: a closed loop's clients wait for each answer and never retry; leave it empty"
	}
	switch {
	case q.Fanout < 0 || q.Fanout > loadrun.MaxFanout:
		fe["fanout"] = fmt.Sprintf("%d is not allowed: want 1 (each arrival one request) to %d sub-requests an arrival", q.Fanout, loadrun.MaxFanout)
	case q.Fanout > 1 && q.Closed():
		fe["fanout"] = "fan-out is for open mode: a closed loop's clients send one request at a time; leave it 1"
	case q.Fanout > 1 && q.Retry != "":
		fe["fanout"] = "fan-out does not go with retries: a fanned-out request's sub-requests are not retried; leave one of them out"
	case q.Fanout > 1 && fe["rates"] == "" && q.Mode != ModeClosed:
		for _, r := range q.Rates {
			if r*float64(q.Fanout) > l.MaxOffered {
				fe["fanout"] = fmt.Sprintf("%d sub-requests an arrival at %s a second is %s requests a second: want at most %s in all (a lower rate or fan-out)",
					q.Fanout, num(r), num(r*float64(q.Fanout)), num(l.MaxOffered))
				break
			}
		}
	}
	if sp, err := hedge.Parse(q.Hedge); err != nil {
		fe["hedge"] = err.Error()
	} else if !sp.IsZero() && q.Closed() {
		fe["hedge"] = "hedging is for open mode: a closed loop's clients send one request at a time; leave it empty"
	} else if !sp.IsZero() && q.Retry != "" {
		fe["hedge"] = "hedging does not go with retries: a hedged request is not also retried; leave one of them out"
	}
	for _, c := range []struct {
		name  string
		share float64
	}{{"critical", q.Critical}, {"sheddable", q.Sheddable}} {
		switch {
		case math.IsNaN(c.share) || c.share < 0 || c.share > 1:
			fe[c.name] = fmt.Sprintf("%s is not allowed: want a share of the arrivals from 0 to 1, e.g. 0.2", num(c.share))
		case c.share > 0 && q.Closed():
			fe[c.name] = "shares of the arrivals by criticality are for open mode: leave it 0"
		}
	}
	if fe["critical"] == "" && fe["sheddable"] == "" && q.Critical+q.Sheddable > 1 {
		fe["sheddable"] = fmt.Sprintf("critical %s and sheddable %s are %s of the arrivals: want together at most 1 (the rest are sent without a class)", num(q.Critical), num(q.Sheddable), num(q.Critical+q.Sheddable))
	}
	switch {
	case len(q.At) > MaxChanges:
		fe["at"] = fmt.Sprintf("%d knob changes is too many: want at most %d", len(q.At), MaxChanges)
	case len(q.At) > 0:
		for _, c := range q.At {
			if err := c.Err(); err != nil {
				fe["at"] = err.Error()
				break
			}
		}
		if fe["at"] == "" && secondsOK {
			if err := loadrun.CheckChangeTimes(q.At, q.Seconds); err != nil {
				fe["at"] = err.Error()
			}
		}
		if fe["at"] == "" {
			if err := q.Config.CheckChanges(q.At); err != nil {
				fe["at"] = err.Error()
			}
		}
	}
	if q.OverTime && secondsOK && secondsToSample(q.Seconds) {
		fe["over_time"] = fmt.Sprintf("a run over time takes a sample every %v: want windows of at least %v (seconds), or leave over_time off", measure.SampleEvery, measure.SampleEvery)
	}
	if q.TimeoutMS < 0 || q.TimeoutMS > l.MaxTimeoutMS {
		fe["timeout_ms"] = fmt.Sprintf("timeout %d ms is not allowed: want 0 (the default, %v) to %d", q.TimeoutMS, result.DefaultTimeout, l.MaxTimeoutMS)
	}
	if len(fe) == 0 {
		return nil
	}
	return fe
}

// secondsToSample reports whether a window of seconds is too short to be
// sampled over time: shorter than one sample.
func secondsToSample(seconds float64) bool { return seconds < measure.SampleEvery.Seconds() }

// num formats a number without trailing zeros, and one far from the
// ones a form takes in exponent form (1e+308, 1e-09), never hundreds of
// digits.
func num(v float64) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	if a := math.Abs(v); a >= 1e9 || (a != 0 && a < 1e-3) {
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}
