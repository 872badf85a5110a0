package model

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"capacitylab/input"
)

// Widget kinds, as a lesson's model block and /widgets/{kind} name them.
const (
	KindLittlesLaw     = "littles-law"
	KindAdmissionLimit = "admission-limit"
	KindTwoCeilings    = "two-ceilings"
	KindQueueCurve     = "queue-curve"
	KindQuota          = "quota"
	KindAIMD           = "aimd"
	KindRetry          = "retry-amplification"
	KindLateScaling    = "late-scaling"
	KindVariability    = "variability-wait"
	KindFanout         = "fanout-tail"
	KindUSL            = "usl"
)

// Param describes one input of a widget: its query-string name, the label a
// learner reads, its unit and the range a control may take.
type Param struct {
	Name    string  `json:"name"`
	Label   string  `json:"label"`
	Unit    string  `json:"unit"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Step    float64 `json:"step"`
	Default float64 `json:"default"`
	// Whole is set when only whole numbers make sense (workers, CPUs,
	// servers); Validate rejects fractions for such a parameter.
	Whole bool `json:"whole,omitempty"`
}

// Spec describes one widget kind: its inputs in display order.
type Spec struct {
	Kind   string  `json:"kind"`
	Title  string  `json:"title"`
	Params []Param `json:"params"`
	// Solves lists the quantities a learner may choose to have implied,
	// first one the default (littles-law and quota; empty for the others).
	Solves []string `json:"solves,omitempty"`
}

// Specs returns every widget kind's spec, keyed by kind. It is built fresh on
// each call so no caller can change another's copy.
func Specs() map[string]Spec {
	return map[string]Spec{
		KindLittlesLaw: {Kind: KindLittlesLaw, Title: "Little's law", Params: []Param{
			{Name: "arrivals", Label: "Arrival rate", Unit: "per second", Min: 0, Max: 5000, Step: 1, Default: 48},
			{Name: "latency_ms", Label: "Time in system", Unit: "ms", Min: 0, Max: 10000, Step: 1, Default: 230},
			{Name: "inflight", Label: "Requests in flight", Unit: "requests", Min: 0, Max: 1000, Step: 0.01, Default: 11.04},
		}, Solves: []string{"inflight", "arrivals", "latency_ms"}},
		KindAdmissionLimit: {Kind: KindAdmissionLimit, Title: "Admission limit", Params: []Param{
			{Name: "workers", Label: "Workers", Unit: "workers", Min: 1, Max: 1024, Step: 1, Default: 1, Whole: true},
			{Name: "budget_ms", Label: "Latency budget", Unit: "ms", Min: 1, Max: 60000, Step: 1, Default: 230},
			{Name: "service_ms", Label: "Service time", Unit: "ms", Min: 0.1, Max: 10000, Step: 0.1, Default: 21},
		}},
		KindTwoCeilings: {Kind: KindTwoCeilings, Title: "Two ceilings", Params: []Param{
			{Name: "workers", Label: "Workers", Unit: "workers", Min: 1, Max: 1024, Step: 1, Default: 1, Whole: true},
			{Name: "cpus", Label: "Processors", Unit: "cores", Min: 1, Max: 64, Step: 1, Default: 1, Whole: true},
			{Name: "spin_ms", Label: "Processor time per request", Unit: "ms", Min: 0, Max: 1000, Step: 0.1, Default: 2},
			{Name: "wait_ms", Label: "Waiting time per request", Unit: "ms", Min: 0, Max: 10000, Step: 1, Default: 18},
		}},
		KindQueueCurve: {Kind: KindQueueCurve, Title: "Queue curve", Params: []Param{
			{Name: "servers", Label: "Servers", Unit: "servers", Min: 1, Max: 256, Step: 1, Default: 1, Whole: true},
			{Name: "service_ms", Label: "Mean service time", Unit: "ms", Min: 0.1, Max: 10000, Step: 0.1, Default: 20},
			{Name: "arrivals", Label: "Offered load", Unit: "per second", Min: 0, Max: 100000, Step: 1, Default: 40},
		}},
		KindQuota: {Kind: KindQuota, Title: "An in-flight quota through a bad release", Params: []Param{
			{Name: "arrivals", Label: "Arrivals", Unit: "per second", Min: 0, Max: 100000, Step: 1, Default: 50},
			{Name: "latency_ms", Label: "Response time before the release", Unit: "ms", Min: 1, Max: 600000, Step: 1, Default: 100},
			{Name: "quota", Label: "Quota", Unit: "requests", Min: 1, Max: 100000, Step: 1, Default: 5},
			{Name: "release_ms", Label: "Response time after the release", Unit: "ms", Min: 1, Max: 600000, Step: 1, Default: 200},
			{Name: "workers", Label: "The origin's workers", Unit: "workers", Min: 1, Max: 100000, Step: 1, Default: 7, Whole: true},
			{Name: "timeout_ms", Label: "Caller's timeout (0: none)", Unit: "ms", Min: 0, Max: 600000, Step: 1, Default: 250},
		}, Solves: []string{"quota", "arrivals", "latency_ms"}},
		KindAIMD: {Kind: KindAIMD, Title: "An AIMD limit against a capacity step", Params: []Param{
			{Name: "capacity_before", Label: "Capacity before the step", Unit: "requests", Min: 0.25, Max: 100000, Step: 0.25, Default: 17.5},
			{Name: "capacity_after", Label: "Capacity after the step", Unit: "requests", Min: 0.25, Max: 100000, Step: 0.25, Default: 8.75},
			{Name: "step_s", Label: "Time of the step", Unit: "s", Min: 0, Max: 600, Step: 1, Default: 5},
			{Name: "increase", Label: "Increase each interval", Unit: "requests", Min: 0.01, Max: 1000, Step: 0.01, Default: 1},
			{Name: "backoff", Label: "Fraction a cut leaves", Unit: "of the limit", Min: 0.5, Max: 0.99, Step: 0.01, Default: 0.75},
			{Name: "interval_ms", Label: "Interval", Unit: "ms", Min: 100, Max: 60000, Step: 100, Default: 100},
			{Name: "floor", Label: "Floor", Unit: "requests", Min: 1, Max: 100000, Step: 1, Default: 1},
			{Name: "duration_s", Label: "Duration", Unit: "s", Min: 1, Max: 600, Step: 1, Default: 15},
		}},
		KindRetry: {Kind: KindRetry, Title: "Retries against a failing service", Params: []Param{
			{Name: "p", Label: "Chance an attempt fails", Unit: "of attempts", Min: 0, Max: 1, Step: 0.01, Default: 0.5},
			{Name: "retries", Label: "Retries", Unit: "retries", Min: 0, Max: 10, Step: 1, Default: 3, Whole: true},
			{Name: "budget", Label: "Retry budget (0: none)", Unit: "of first attempts", Min: 0, Max: 1, Step: 0.01, Default: 0},
			{Name: "utilisation", Label: "Load of the first attempts", Unit: "of capacity", Min: 0, Max: 2, Step: 0.01, Default: 0.8},
		}},
		KindLateScaling: {Kind: KindLateScaling, Title: "Capacity that lands late", Params: []Param{
			{Name: "demand", Label: "Demand", Unit: "per second", Min: 0, Max: 100000, Step: 1, Default: 120},
			{Name: "capacity_before", Label: "Capacity before the landing", Unit: "per second", Min: 0, Max: 100000, Step: 1, Default: 100},
			{Name: "capacity_after", Label: "Capacity after the landing", Unit: "per second", Min: 1, Max: 100000, Step: 1, Default: 150},
			{Name: "lag_s", Label: "Lag until the new capacity lands", Unit: "s", Min: 0, Max: 3600, Step: 1, Default: 60},
			{Name: "timeout_ms", Label: "Caller's timeout (0: none)", Unit: "ms", Min: 0, Max: 600000, Step: 1, Default: 1000},
		}},
		KindVariability: {Kind: KindVariability, Title: "Variability and the wait", Params: []Param{
			{Name: "servers", Label: "Servers", Unit: "servers", Min: 1, Max: 64, Step: 1, Default: 1, Whole: true},
			{Name: "service_ms", Label: "Mean service time", Unit: "ms", Min: 0.1, Max: 10000, Step: 0.1, Default: 20},
			{Name: "utilisation", Label: "Utilisation ρ", Unit: "of capacity", Min: 0, Max: 0.99, Step: 0.01, Default: 0.7},
			{Name: "arrival_scv", Label: "Variability of the gaps between arrivals, ca² (1: Poisson)", Unit: "SCV", Min: 0, Max: 25, Step: 0.01, Default: 1},
			{Name: "service_scv", Label: "Variability of the service times, cs² (0: constant, 1: exponential)", Unit: "SCV", Min: 0, Max: 25, Step: 0.01, Default: 2},
		}},
		KindFanout: {Kind: KindFanout, Title: "The slowest of many: fan-out and the tail", Params: []Param{
			{Name: "fanout", Label: "Sub-requests a request fans out to, k", Unit: "sub-requests", Min: 1, Max: 1000, Step: 1, Default: 100, Whole: true},
			{Name: "p", Label: "Chance a sub-request is slow", Unit: "of sub-requests", Min: 0, Max: 1, Step: 0.001, Default: 0.01},
			{Name: "percentile", Label: "Percentile of the requests to hold (0.99: p99)", Unit: "of requests", Min: 0.01, Max: 0.9999, Step: 0.001, Default: 0.99},
		}},
		KindUSL: {Kind: KindUSL, Title: "The Universal Scalability Law", Params: []Param{
			{Name: "lambda", Label: "Throughput of one client alone, λ", Unit: "per second", Min: 0.1, Max: 100000, Step: 0.1, Default: 100},
			{Name: "sigma", Label: "Contention σ (the serial share)", Unit: "of the work", Min: 0, Max: 1, Step: 0.001, Default: 0.05},
			{Name: "kappa", Label: "Coherency κ (the cost of keeping each pair in step)", Unit: "per pair of clients", Min: 0, Max: 1, Step: 0.00001, Default: 0.001},
			{Name: "n_max", Label: "Clients, up to", Unit: "clients", Min: 1, Max: 256, Step: 1, Default: 64, Whole: true},
		}},
	}
}

// Kinds returns the widget kinds in a stable order.
func Kinds() []string {
	specs := Specs()
	kinds := make([]string, 0, len(specs))
	for k := range specs {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// Validate checks values for a widget kind: the kind must exist, every name
// must be one of its parameters and every value within its range. Missing
// parameters are allowed (the widget takes its default). It returns nil or
// input.FieldErrors naming each bad parameter.
func Validate(kind string, values map[string]float64) error {
	spec, ok := Specs()[kind]
	if !ok {
		return input.FieldErrors{"kind": fmt.Sprintf("unknown widget %q: want one of %s", kind, strings.Join(Kinds(), ", "))}
	}
	byName := make(map[string]Param, len(spec.Params))
	for _, p := range spec.Params {
		byName[p.Name] = p
	}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	errs := input.FieldErrors{}
	for _, n := range names {
		p, ok := byName[n]
		if !ok {
			errs[n] = fmt.Sprintf("not a parameter of %s", kind)
			continue
		}
		if v := values[n]; !(v >= p.Min && v <= p.Max) {
			errs[n] = fmt.Sprintf("%g is out of range: want %g to %g %s", v, p.Min, p.Max, p.Unit)
		} else if p.Whole && v != math.Trunc(v) {
			errs[n] = fmt.Sprintf("%g is not a whole number: want a whole number from %g to %g %s", v, p.Min, p.Max, p.Unit)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// ResolveSolve returns the quantity a widget of this kind implies: solve
// itself when it is one of the kind's Solves, the first of them when solve is
// empty. Kinds without a choice take "" and reject anything else.
func ResolveSolve(kind, solve string) (string, error) {
	spec, ok := Specs()[kind]
	if !ok {
		return "", input.FieldErrors{"kind": fmt.Sprintf("unknown widget %q: want one of %s", kind, strings.Join(Kinds(), ", "))}
	}
	if len(spec.Solves) == 0 {
		if solve == "" {
			return "", nil
		}
		return "", input.FieldErrors{"solve": fmt.Sprintf("%s implies nothing to choose: leave solve out", kind)}
	}
	if solve == "" {
		return spec.Solves[0], nil
	}
	for _, s := range spec.Solves {
		if s == solve {
			return s, nil
		}
	}
	return "", input.FieldErrors{"solve": fmt.Sprintf("%q is not a quantity %s can imply: want one of %s", solve, kind, strings.Join(spec.Solves, ", "))}
}
