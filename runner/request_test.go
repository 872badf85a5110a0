package runner_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"capacitylab/labsvc"
	"capacitylab/measure"
	"capacitylab/result"
	"capacitylab/runner"
)

// changes reads knob changes as a JSON request carries them (a bad one
// kept for Validate to name).
func changes(texts ...string) []result.KnobChange {
	out := make([]result.KnobChange, len(texts))
	for i, s := range texts {
		_ = out[i].UnmarshalText([]byte(s))
	}
	return out
}

// Validate returns one message per bad field, naming what is wrong and what
// is allowed, against the caps of the host and of the limits given.
func TestValidate(t *testing.T) {
	ok := runner.Request{Preset: measure.Preset{Config: labsvc.DefaultConfig(), Rates: []float64{40, 80}, Seconds: 2}}
	with := func(f func(*runner.Request)) runner.Request {
		q := ok
		q.Rates = append([]float64(nil), ok.Rates...)
		f(&q)
		return q
	}
	eightCores := runner.DefaultLimits(8)
	tight := runner.DefaultLimits(8)
	tight.MaxRunSeconds = 10
	tests := []struct {
		name   string
		limits runner.Limits
		q      runner.Request
		want   map[string]string // field → a piece of its message; nil = valid
	}{
		// The preset a lesson starts from is fine.
		{"valid", eightCores, ok, nil},
		// An upload is not a sweep: it comes only from the Your service page.
		{"upload", eightCores, with(func(q *runner.Request) { q.Upload = &runner.Upload{} }), map[string]string{"upload": "an upload is not a sweep"}},
		// A bad release at 1 s of a 2 s window, a client of 10 workers.
		{"knob change and client workers", eightCores, with(func(q *runner.Request) { q.At, q.MaxInFlight = changes("1s:WAIT_MS=2000"), 10 }), nil},
		// A knob change at the window's end or later.
		{"knob change past the window", eightCores, with(func(q *runner.Request) { q.At = changes("2s:WAIT_MS=2000") }),
			map[string]string{"at": "knob change 2s:WAIT_MS=2000 is past the end of the window: want a time from 0 to less than the window's 2s"}},
		// Fan-out and hedging: in range, open mode, without retries, the
		// sub-requests within the rate a run may send.
		{"fan-out and hedging", eightCores, with(func(q *runner.Request) { q.Fanout, q.Hedge = 10, "percentile=95" }), nil},
		{"fan-out too wide", eightCores, with(func(q *runner.Request) { q.Fanout = 500 }), map[string]string{"fanout": "500 is not allowed: want 1 (each arrival one request) to 100"}},
		{"fan-out over the rate", eightCores, with(func(q *runner.Request) { q.Fanout = 100 }), map[string]string{"fanout": "100 sub-requests an arrival at 40 a second is 4000 requests a second: want at most 2000"}},
		{"fan-out with retries", eightCores, with(func(q *runner.Request) { q.Fanout, q.Retry = 4, "retries=1" }), map[string]string{"fanout": "fan-out does not go with retries"}},
		{"bad hedge", eightCores, with(func(q *runner.Request) { q.Hedge = "percentile=100" }), map[string]string{"hedge": "percentile"}},
		{"hedge closed", eightCores, with(func(q *runner.Request) {
			q.Mode, q.Rates, q.Clients, q.Hedge = runner.ModeClosed, nil, []int{4}, "delay_ms=20"
		}),
			map[string]string{"hedge": "hedging is for open mode"}},
		// A knob the lab does not have, or cannot change while it runs.
		{"unknown knob", eightCores, with(func(q *runner.Request) { q.At = changes("1s:SPEED=2") }), map[string]string{"at": `unknown knob "SPEED": want one of WORKERS, SPIN_MS`}},
		{"fixed knob", eightCores, with(func(q *runner.Request) { q.At = changes("1s:CPUS=2") }), map[string]string{"at": "CPUS cannot change while the lab runs"}},
		// A value the lab would refuse.
		{"bad knob value", eightCores, with(func(q *runner.Request) { q.At = changes("1s:WAIT_MS=10001") }), map[string]string{"at": "knob change 1s:WAIT_MS=10001: 10001 is not allowed: want 0 to 10000"}},
		// Text that is not a change.
		{"not a change", eightCores, with(func(q *runner.Request) { q.At = changes("soon:WAIT_MS=1") }), map[string]string{"at": `the time "soon" is not allowed`}},
		// Too many changes.
		{"too many changes", eightCores, with(func(q *runner.Request) {
			q.At = changes("1s:WAIT_MS=1", "1s:WAIT_MS=2", "1s:WAIT_MS=3", "1s:WAIT_MS=4", "1s:WAIT_MS=5", "1s:WAIT_MS=6", "1s:WAIT_MS=7", "1s:WAIT_MS=8", "1s:WAIT_MS=9")
		}), map[string]string{"at": "9 knob changes is too many: want at most 8"}},
		// Client workers: open loop only, within the clients' cap.
		{"client workers closed", eightCores, with(func(q *runner.Request) { q.Mode, q.Rates, q.Clients, q.MaxInFlight = "closed", nil, []int{2}, 4 }),
			map[string]string{"max_inflight": "a fixed pool of client workers is for open mode"}},
		{"client workers over cap", eightCores, with(func(q *runner.Request) { q.MaxInFlight = 257 }), map[string]string{"max_inflight": "257 client workers is not allowed: want 0 (no fixed pool) or 1 to 256"}},
		// A run over time: windows of a second or more.
		{"over time", eightCores, with(func(q *runner.Request) { q.OverTime = true }), nil},
		{"over time, short windows", eightCores, with(func(q *runner.Request) { q.OverTime, q.Seconds = true, 0.5 }),
			map[string]string{"over_time": "a run over time takes a sample every 1s: want windows of at least 1s (seconds), or leave over_time off"}},
		// Closed loop with client counts is fine.
		{"valid closed", eightCores, with(func(q *runner.Request) { q.Mode, q.Rates, q.Clients = "closed", nil, []int{1, 4} }), nil},
		// One core: the lab may have it (the generator shares).
		{"one core host", runner.DefaultLimits(1), with(func(q *runner.Request) { q.CPUs = 1 }), nil},
		// Two cores: one for the lab, one for the generator.
		{"two core host", runner.DefaultLimits(2), with(func(q *runner.Request) { q.CPUs = 2 }), map[string]string{"cpus": "want 1 ("}},
		// Eight cores: seven for the lab.
		{"eight core host", eightCores, with(func(q *runner.Request) { q.CPUs = 8 }), map[string]string{"cpus": "want 1 to 7"}},
		// The lab's own caps come through labsvc.Config.Validate, one per knob.
		{"lab knobs", eightCores, with(func(q *runner.Request) { q.Workers, q.SpinMS, q.WaitMS, q.Limit = 0, -1, 10001, -3 }),
			map[string]string{"workers": "0 is not allowed: want 1 to 1024", "spin_ms": "-1 is not allowed", "wait_ms": "10001 is not allowed", "limit": "-3 is not allowed"}},
		// NaN is not a rate.
		{"rate NaN", eightCores, with(func(q *runner.Request) { q.Rates[0] = math.NaN() }), map[string]string{"rates": "rate NaN is not allowed"}},
		// 2,000 a second is the cap; 2,000.5 is over it.
		{"rate over cap", eightCores, with(func(q *runner.Request) { q.Rates[1] = 2000.5 }), map[string]string{"rates": "at most 2000 a second"}},
		// Exactly the caps is allowed: 8 windows of 15 s (120 s in all) at
		// 2,000/s with no spin.
		{"at the caps", eightCores, with(func(q *runner.Request) {
			q.Rates, q.Seconds, q.SpinMS = []float64{2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000}, 15, 0
		}), nil},
		// The heaviest run each field allows asks too much in all: 8 × 30 s
		// is 240 s of windows, and at a second of processor per request
		// 480,000 s of processor.
		{"heaviest", eightCores, with(func(q *runner.Request) {
			q.Workers, q.SpinMS, q.Rates, q.Seconds = 1024, 1000, []float64{2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000}, 30
		}), map[string]string{"seconds": "240 s, longer than a run may be", "spin_ms": "asks 480000 s of processor time in all"}},
		// Just over the processor bound: 61 s asked.
		{"processor over", eightCores, with(func(q *runner.Request) { q.SpinMS, q.Rates, q.Seconds = 61, []float64{100}, 10 }),
			map[string]string{"spin_ms": "asks 61 s of processor time"}},
		// A run longer than its limit, with windows each allowed.
		{"run too long", tight, with(func(q *runner.Request) { q.Seconds = 6 }), map[string]string{"seconds": "2 windows of 6 s is 12 s"}},
		// Mode must be open or closed.
		{"mode", eightCores, with(func(q *runner.Request) { q.Mode = "ajar" }), map[string]string{"mode": `mode "ajar" is not known`}},
		// Rates in closed mode are a mistake, and clients are missing.
		{"closed with rates", eightCores, with(func(q *runner.Request) { q.Mode = "closed" }),
			map[string]string{"rates": "rates are for open mode", "clients": "give at least one client count"}},
		// Every problem at once: each field has its own message.
		{"several", eightCores, with(func(q *runner.Request) { q.Rates, q.Seconds, q.TimeoutMS = nil, -1, 99999 }),
			map[string]string{"rates": "give at least one", "seconds": "-1 seconds a window is not allowed", "timeout_ms": "timeout 99999 ms is not allowed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.limits.Validate(tt.q)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var fe runner.FieldErrors
			if !errors.As(err, &fe) {
				t.Fatalf("Validate = %v, want FieldErrors", err)
			}
			if len(fe) != len(tt.want) {
				t.Errorf("fields %v, want exactly %v", fe, tt.want)
			}
			for field, piece := range tt.want {
				if !strings.Contains(fe[field], piece) {
					t.Errorf("%s: %q, want it to contain %q", field, fe[field], piece)
				}
			}
		})
	}
}

// A run's estimate counts its windows, their seconds and the overheads.
func TestEstimate(t *testing.T) {
	q := runner.Request{Preset: measure.Preset{Rates: []float64{1, 2, 3}, Seconds: 2}}
	want := runner.StartOverhead + 3*(2e9+runner.WindowOverhead)
	if got := runner.Estimate(q); got != want {
		t.Errorf("Estimate = %v, want %v", got, want)
	}
}

// CPUSeconds is the processor time a run asks of the lab: rate × seconds ×
// SPIN_MS per open-loop window, clients × seconds × SPIN_MS/(SPIN_MS +
// WAIT_MS) per closed-loop one, summed.
func TestCPUSeconds(t *testing.T) {
	tests := []struct {
		name string
		q    runner.Request
		want float64
	}{
		// Two open windows of 10 s at 50 and 100 a second, 2 ms each: 1 + 2 s.
		{"open", runner.Request{Preset: measure.Preset{Config: labsvc.Config{SpinMS: 2}, Rates: []float64{50, 100}, Seconds: 10}}, 3},
		// The heaviest run: 8 × 30 s at 2,000 a second, a second each.
		{"heaviest", runner.Request{Preset: measure.Preset{Config: labsvc.Config{SpinMS: 1000}, Rates: []float64{2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000}, Seconds: 30}}, 480000},
		// Four closed-loop clients for 10 s, 2 ms spin and 18 ms wait: each busy a tenth.
		{"closed", runner.Request{Preset: measure.Preset{Config: labsvc.Config{SpinMS: 2, WaitMS: 18}, Mode: runner.ModeClosed, Clients: []int{4}, Seconds: 10}}, 4},
		// No spin asks no processor.
		{"closed no spin", runner.Request{Preset: measure.Preset{Mode: runner.ModeClosed, Clients: []int{4}, Seconds: 10}}, 0},
	}
	for _, tt := range tests {
		if got := tt.q.CPUSeconds(); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: CPUSeconds = %v, want %v", tt.name, got, tt.want)
		}
	}
}
