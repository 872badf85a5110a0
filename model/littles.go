package model

import "math"

// Quantities of Little's law, as parameter names and Solve choices.
const (
	QArrivals  = "arrivals"
	QLatencyMS = "latency_ms"
	QInflight  = "inflight"
)

// LittlesLaw is Little's law, L = λ·W, with one quantity implied by the other
// two. Arrivals are per second, LatencyMS in milliseconds, so L = λ·W/1000.
type LittlesLaw struct {
	Solve     string `json:"solve"`      // which quantity was implied
	Arrivals  Num    `json:"arrivals"`   // λ, requests per second
	LatencyMS Num    `json:"latency_ms"` // W, mean time in system, ms
	Inflight  Num    `json:"inflight"`   // L, mean requests inside
	Defined   bool   `json:"defined"`    // false: the implied quantity has no value; Message says why
	Message   string `json:"message,omitempty"`
	Sentence  string `json:"sentence"` // the read-back, e.g. "48 requests a second that each stay 230 ms means 11.04 requests are inside at any moment."
}

// SolveLittlesLaw implies the quantity named by solve (QInflight, QArrivals
// or QLatencyMS) from the other two; the input given for the implied one is
// ignored. Dividing by a zero rate or time leaves the implied value NaN,
// Defined false and a message.
func SolveLittlesLaw(arrivals, latencyMS, inflight float64, solve string) LittlesLaw {
	r := LittlesLaw{Solve: solve, Arrivals: Num(arrivals), LatencyMS: Num(latencyMS), Inflight: Num(inflight), Defined: true}
	switch solve {
	case QArrivals:
		if latencyMS == 0 {
			r.Arrivals, r.Defined = Num(math.NaN()), false
			if inflight == 0 {
				r.Message = "With a time in system of 0 ms and nothing in flight, any arrival rate fits: set a time above 0 ms."
			} else {
				r.Message = "With a time in system of 0 ms, no arrival rate keeps " + Format(inflight) + " requests in flight: set a time above 0 ms."
			}
			break
		}
		a := inflight * 1000 / latencyMS
		r.Arrivals = Num(a)
		l := Format(inflight)
		r.Sentence = l + " " + plural(l, "request", "requests") + " in flight that each stay " + Format(latencyMS) +
			" ms sustain " + about(a) + Format(a) + " " + plural(Format(a), "request", "requests") + " a second."
	case QLatencyMS:
		if arrivals == 0 {
			r.LatencyMS, r.Defined = Num(math.NaN()), false
			if inflight == 0 {
				r.Message = "With no arrivals and nothing in flight, any time in system fits: set an arrival rate above 0."
			} else {
				r.Message = "With no arrivals, " + Format(inflight) + " requests can never be in flight: set an arrival rate above 0."
			}
			break
		}
		w := inflight * 1000 / arrivals
		r.LatencyMS = Num(w)
		l, a := Format(inflight), Format(arrivals)
		r.Sentence = l + " " + plural(l, "request", "requests") + " in flight at " + a + " " + plural(a, "request", "requests") +
			" a second means each stays " + about(w) + Format(w) + " ms."
	default: // QInflight
		l := arrivals * latencyMS / 1000
		r.Inflight = Num(l)
		a := Format(arrivals)
		r.Sentence = a + " " + plural(a, "request", "requests") + " a second that each stay " + Format(latencyMS) + " ms means " +
			about(l) + Format(l) + " " + plural(Format(l), "request is", "requests are") + " inside at any moment."
	}
	if !r.Defined {
		r.Sentence = r.Message
	}
	return r
}
