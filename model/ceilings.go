package model

import "math"

// Which ceiling binds, as Ceilings.Binds reports it.
const (
	BindsWorkers   = "workers"
	BindsProcessor = "processor"
	BindsBoth      = "both"
	BindsNone      = "none"
)

// Ceilings is the two-ceilings model of the lab: each request holds a
// worker for spin + wait ms and a processor for spin ms, so throughput can
// reach neither workers ÷ (spin + wait) nor cpus ÷ spin (per second: × 1000).
type Ceilings struct {
	Workers Num `json:"workers"`
	CPUs    Num `json:"cpus"`
	SpinMS  Num `json:"spin_ms"`
	WaitMS  Num `json:"wait_ms"`
	// WorkerCeiling is workers × 1000 ÷ (spin + wait) per second; +Inf
	// (null in JSON) when spin + wait is 0.
	WorkerCeiling Num `json:"worker_ceiling"`
	// ProcessorCeiling is cpus × 1000 ÷ spin per second; +Inf (null in JSON)
	// when spin is 0: a request that never spins puts no load on a processor.
	ProcessorCeiling Num    `json:"processor_ceiling"`
	Binds            string `json:"binds"`      // BindsWorkers, BindsProcessor, BindsBoth or BindsNone
	Ceiling          Num    `json:"ceiling"`    // the lower of the two
	OneWorker        Num    `json:"one_worker"` // what one worker alone serves: 1000 ÷ (spin + wait)
	// SpinShare is spin ÷ (spin + wait), the part of each request that needs
	// a processor (NaN when both are 0).
	SpinShare Num `json:"spin_share"`
	// SpeedupCap is how many times one worker's rate adding workers can
	// reach before the processors bind: cpus × (spin + wait) ÷ spin, which
	// is 1 ÷ SpinShare for one CPU (2 ms of 20 → at most 10×). +Inf when
	// spin is 0.
	SpeedupCap Num    `json:"speedup_cap"`
	Message    string `json:"message,omitempty"`
	Sentence   string `json:"sentence"`
}

// CeilingRates is the two ceilings, per second, from what one request
// holds: a worker for workerMS and a processor for processorMS, so
// workers × 1000 ÷ workerMS and cpus × 1000 ÷ processorMS, each +Inf when
// its hold is 0. TwoCeilings takes the holds from the lab's knobs (spin +
// wait, and spin); cmd/load --check from what it measures at rest (the
// service time, and the processor time a request costs).
func CeilingRates(workers, cpus, workerMS, processorMS float64) (worker, processor float64) {
	worker, processor = math.Inf(1), math.Inf(1)
	if workerMS > 0 {
		worker = workers * 1000 / workerMS
	}
	if processorMS > 0 {
		processor = cpus * 1000 / processorMS
	}
	return worker, processor
}

// TwoCeilings computes both ceilings, which binds and the speedup cap.
// Inputs are validated by the caller (workers, cpus ≥ 1; spin, wait ≥ 0).
func TwoCeilings(workers, cpus, spinMS, waitMS float64) Ceilings {
	inf := math.Inf(1)
	total := spinMS + waitMS
	r := Ceilings{Workers: Num(workers), CPUs: Num(cpus), SpinMS: Num(spinMS), WaitMS: Num(waitMS)}
	wc, pc := CeilingRates(workers, cpus, total, spinMS)
	one, share := inf, math.NaN()
	if total > 0 {
		one, share = 1000/total, spinMS/total
	}
	capx := inf
	if spinMS > 0 {
		capx = cpus * total / spinMS
	}
	r.WorkerCeiling, r.ProcessorCeiling, r.OneWorker, r.SpinShare, r.SpeedupCap = Num(wc), Num(pc), Num(one), Num(share), Num(capx)
	r.Ceiling = Num(math.Min(wc, pc))
	w, c := Format(workers), Format(cpus)
	workersText := w + " " + plural(w, "worker", "workers") + " holding each request " + Format(total) + " ms"
	cpusText := c + " " + plural(c, "CPU", "CPUs") + " spending " + Format(spinMS) + " ms on each request"
	workersServe := workersText + " " + plural(w, "serves", "serve")
	cpusServe := cpusText + " " + plural(c, "serves", "serve")
	switch {
	case math.IsInf(wc, 1) && math.IsInf(pc, 1):
		r.Binds = BindsNone
		r.Message = "With no spin and no wait a request takes no time, so nothing limits the rate in this model; real requests always take some time."
		r.Sentence = r.Message
		return r
	case math.IsInf(pc, 1):
		r.Binds = BindsWorkers
		r.Message = "With no spin a request puts no load on a processor, so there is no processor ceiling."
		r.Sentence = "The worker ceiling binds: " + workersServe + " at most " + Format(wc) + " requests a second; with no spin there is no processor ceiling."
		return r
	case math.Abs(wc-pc) <= 1e-9*math.Max(wc, pc):
		r.Binds = BindsBoth
		r.Sentence = "Both ceilings meet at " + Format(wc) + " requests a second: " + workersText + " and " + cpusText + "."
	case wc < pc:
		r.Binds = BindsWorkers
		r.Sentence = "The worker ceiling binds: " + workersServe + " at most " + Format(wc) + " requests a second, below the processor ceiling of " + Format(pc) + "."
	default:
		r.Binds = BindsProcessor
		r.Sentence = "The processor ceiling binds: " + cpusServe + " at most " + Format(pc) + " requests a second, below the worker ceiling of " + Format(wc) + "."
	}
	r.Sentence += " Adding workers raises the rate at most " + Format(capx) + " times one worker's " + Format(one) + " a second."
	return r
}
