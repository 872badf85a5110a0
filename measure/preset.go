package measure

import (
	"errors"
	"fmt"
	"time"

	"capacitylab/hedge"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/retry"
)

// Modes of a preset.
const (
	ModeOpen   = "open"   // open loop: arrivals at the offered rates, whatever the answers
	ModeClosed = "closed" // closed loop: N clients, each sending its next request after an answer
)

// Preset is what one measurement runs: the lab's knobs, then the sweep
// against it. Its JSON form is flat: {"workers":1,"spin_ms":2,"wait_ms":18,
// "limit":0,"policy":"queue","cpus":1,"stall_every":0,"stall_ms":0,
// "backlog":0,"accept":"door","rates":[40,80],"seconds":2,"seed":1,
// "rng":"pcg","mode":"open","timeout_ms":2000}, and optionally
// "max_inflight":10, "at":["30s:WAIT_MS=2000"], "over_time":true,
// "retry":"retries=3,backoff=jitter", "critical":0.2, "sheddable":0.3,
// "fanout":10 and "hedge":"percentile=95". A learner's run (runner.Request) and a lesson's lab
// block (package recorder maps one to a Preset) are both a Preset.
type Preset struct {
	labsvc.Config
	Rates     []float64 `json:"rates,omitempty"`   // open loop: one window per rate
	Clients   []int     `json:"clients,omitempty"` // closed loop: one window per client count
	Seconds   float64   `json:"seconds"`           // length of every window
	Seed      uint64    `json:"seed"`              // the arrival schedule's seed
	RNG       string    `json:"rng,omitempty"`     // the schedule's random source: "" or "pcg" (the default), or "python"
	Mode      string    `json:"mode"`              // ModeOpen ("" too) or ModeClosed
	TimeoutMS int       `json:"timeout_ms"`        // the caller's timeout; 0 = result.DefaultTimeout
	// MaxInFlight, when not 0, gives the open-loop client a fixed pool of
	// that many workers (loadrun.Sweep.ClientWorkers): an arrival that
	// finds them all busy is counted in client_busy, not sent.
	MaxInFlight int `json:"max_inflight,omitempty"`
	// At are knob changes made at their times into every window, through
	// the lab's control API: ["30s:WAIT_MS=2000"] (result.KnobChange).
	At []result.KnobChange `json:"at,omitempty"`
	// OverTime makes the measurement a run over time: every window is
	// sampled every SampleEvery (loadrun.Sweep.SampleEvery), the lab read
	// at each sample's end.
	OverTime bool `json:"over_time,omitempty"`
	// Retry is the open-loop client's retries, backoff, budget and
	// circuit breaker as package retry writes a spec:
	// "retries=3,backoff=jitter,budget=0.1" (loadrun.Sweep.Retry); "" for
	// a client that never retries.
	Retry string `json:"retry,omitempty"`
	// Critical and Sheddable are the shares of arrivals (0 to 1, together
	// at most 1) sent with X-Criticality critical and sheddable, the rest
	// without a class (loadrun.Sweep.Critical, Sheddable; open loop).
	Critical  float64 `json:"critical,omitempty"`
	Sheddable float64 `json:"sheddable,omitempty"`
	// Fanout, when more than 1, makes each arrival a request of that
	// many sub-requests sent at once (loadrun.Sweep.Fanout), and Hedge is
	// a hedging client as package hedge writes a spec, "percentile=95"
	// ("" sends no copies); open loop.
	Fanout int    `json:"fanout,omitempty"`
	Hedge  string `json:"hedge,omitempty"`
}

// SampleEvery is the interval of a run over time (Preset.OverTime): a
// sample every second.
const SampleEvery = time.Second

// Closed reports whether the preset is a closed loop.
func (p Preset) Closed() bool { return p.Mode == ModeClosed }

// Windows is how many windows the preset has.
func (p Preset) Windows() int {
	if p.Closed() {
		return len(p.Clients)
	}
	return len(p.Rates)
}

// Timeout is the caller's timeout the preset runs with.
func (p Preset) Timeout() time.Duration {
	if p.TimeoutMS <= 0 {
		return result.DefaultTimeout
	}
	return time.Duration(p.TimeoutMS) * time.Millisecond
}

// Sweep is the sweep the preset asks for, without a target: its windows
// (the rates, or the client counts of a closed loop), seed and random
// source. It is the one mapping from a preset to a sweep: the load child
// sends it at a lab child, and a simulation (package sim) runs it with
// sim.Model{Lab: p.Config, Timeout: p.Timeout()}. A Retry that does not
// parse is left out of it; Validate says why.
func (p Preset) Sweep() loadrun.Sweep {
	sw := loadrun.Sweep{Seconds: p.Seconds, Seed: p.Seed, RNG: loadrun.Source(p.RNG), ClientWorkers: p.MaxInFlight, Changes: p.At,
		Critical: p.Critical, Sheddable: p.Sheddable}
	sw.Retry, _ = retry.Parse(p.Retry)
	sw.Fanout = p.Fanout
	sw.Hedge, _ = hedge.Parse(p.Hedge)
	if p.OverTime {
		sw.SampleEvery = SampleEvery
	}
	if p.Closed() {
		sw.Clients = p.Clients
	} else {
		sw.Rates = p.Rates
	}
	return sw
}

// Validate says what in the preset the lab or the generator would refuse,
// or nil: the lab's knobs (labsvc.Config.Validate), the mode, the
// retrying client's spec (retry.Parse, its *retry.Error naming the
// parameter), the windows, the random source and the client's classes
// (loadrun.Sweep.ValidatePlan) and the timeout. A
// learner's request meets tighter caps first (runner.Limits).
func (p Preset) Validate() error {
	var errs []error
	if err := p.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch p.Mode {
	case "", ModeOpen:
		if len(p.Clients) > 0 {
			errs = append(errs, errors.New("client counts are for a closed loop: leave them out of an open-loop preset"))
		}
	case ModeClosed:
		if len(p.Rates) > 0 {
			errs = append(errs, errors.New("rates are for an open loop: leave them out of a closed-loop preset"))
		}
	default:
		errs = append(errs, fmt.Errorf("mode %q is not known: want open or closed", p.Mode))
	}
	if _, err := retry.Parse(p.Retry); err != nil {
		errs = append(errs, err)
	}
	if _, err := hedge.Parse(p.Hedge); err != nil {
		errs = append(errs, err)
	}
	if err := p.Sweep().ValidatePlan(); err != nil {
		errs = append(errs, err)
	}
	if err := result.CheckTimeout(p.Timeout()); err != nil {
		errs = append(errs, err)
	}
	if err := p.Config.CheckChanges(p.At); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
