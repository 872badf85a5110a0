package recorder

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"capacitylab/input"
	"capacitylab/labsvc"
	"capacitylab/lessons"
	"capacitylab/loadrun"
	"capacitylab/measure"
	"capacitylab/result"
	"capacitylab/sim"
)

// Preset is the preset a lesson's lab block runs: its knobs (the door's
// policy among them) and its sweep, one window per rate, or one window of
// Closed clients for a closed loop. It is the one mapping from a lab block
// to what is measured or simulated: the recorder records it (or, for a
// simulated block, simulates it: SimulatePreset), and a lesson page's Run
// and Simulate send it (package web).
func Preset(l *lessons.Lab) measure.Preset {
	p := measure.Preset{
		Config: labsvc.Config{Workers: l.Workers, SpinMS: l.SpinMS, WaitMS: l.WaitMS, Limit: l.Limit, CPUs: l.CPUs,
			StallEvery: l.StallEvery, StallMS: l.StallMS, Backlog: l.Backlog, Accept: labsvc.AcceptMode(l.Accept), Policy: l.Policy,
			Dist: l.Dist, LockMS: l.LockMS, CoherencyUS: l.CoherencyUS},
		Rates: l.Rates, Seconds: l.Seconds, Seed: uint64(l.Seed), RNG: l.RNG, Mode: measure.ModeOpen, TimeoutMS: l.TimeoutMS,
	}
	if l.Closed > 0 {
		p.Mode, p.Rates, p.Clients = measure.ModeClosed, nil, l.ClientCounts()
	}
	p.MaxInFlight, p.OverTime = l.MaxInFlight, l.OverTime
	p.Retry, p.Critical, p.Sheddable = l.Retry, l.Critical, l.Sheddable
	p.Fanout, p.Hedge = l.Fanout, l.Hedge
	for _, s := range l.At {
		var c result.KnobChange
		_ = c.UnmarshalText([]byte(s)) // kept with why when it is not a change: CheckLab names it
		p.At = append(p.At, c)
	}
	return p
}

// CheckLab says what in a lab block's settings the lab or the load
// generator would refuse: its knobs (labsvc.Config.Validate) and its
// random source (loadrun.ParseSource). It is the lessons.LoadOptions
// CheckLab that the server and the recorder load the course with.
func CheckLab(l *lessons.Lab) []lessons.LabProblem {
	var out []lessons.LabProblem
	if err := Preset(l).Config.Validate(); err != nil {
		var fes input.FieldErrors
		if !errors.As(err, &fes) {
			return []lessons.LabProblem{{Msg: err.Error()}}
		}
		for _, knob := range fes.Names() {
			key := strings.ToLower(knob) // the block's key: WORKERS is workers
			out = append(out, lessons.LabProblem{Key: key, Msg: key + " " + fes[knob]})
		}
	}
	if l.Gives("at") {
		p := Preset(l)
		if err := loadrun.CheckChangeTimes(p.At, p.Seconds); err != nil {
			out = append(out, lessons.LabProblem{Key: "at", Msg: "at: " + err.Error()})
		} else if err := p.Config.CheckChanges(p.At); err != nil {
			out = append(out, lessons.LabProblem{Key: "at", Msg: "at: " + err.Error()})
		} else if l.Simulated {
			// A simulated preset's changes are the simulator's to make.
			if err := (sim.Model{Lab: p.Config}).CheckChanges(p.At); err != nil {
				out = append(out, lessons.LabProblem{Key: "at", Msg: "at: " + err.Error()})
			}
		}
	}
	if l.OverTime && l.Seconds < measure.SampleEvery.Seconds() {
		out = append(out, lessons.LabProblem{Key: "over_time", Msg: fmt.Sprintf("over_time: a run over time takes a sample every %v: want seconds of at least %v, or leave over_time out", measure.SampleEvery, measure.SampleEvery.Seconds())})
	}
	if l.Gives("rng") {
		if _, err := loadrun.ParseSource(l.RNG); err != nil {
			out = append(out, lessons.LabProblem{Key: "rng", Msg: fmt.Sprintf("rng: %v (pcg is the default; python draws CPython's random.seed and expovariate arrivals)", err)})
		}
	}
	return out
}

// LoadOptions is how the course is loaded wherever its presets will be
// run: with CheckLab.
func LoadOptions() lessons.LoadOptions { return lessons.LoadOptions{CheckLab: CheckLab} }

// RowCells formats one row as a recorded table holds it, a cell for
// each of cols (a lab's lessons.Lab.Columns, or lessons.AllColumns; pages
// use it for a run of a preset too, so a run and a recorded table show
// the same figures): counts as whole numbers, rates and milliseconds to
// one decimal (send_lag_p99_ms to two, as it is often under 0.1 ms),
// shares and amplification to three, and "-" for a lab counter that
// could not be read or a column the row does not have.
func RowCells(r result.Row, cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = RowCell(r, c)
	}
	return out
}

// RowCell is RowCells' cell of column c.
func RowCell(r result.Row, c string) string {
	opt := func(v int) string {
		if v < 0 {
			return "-"
		}
		return strconv.Itoa(v)
	}
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	optf := func(v float64) string {
		if v < 0 {
			return "-"
		}
		return f(v, 1)
	}
	class := func(k result.Class) (result.ClassRow, bool) {
		for _, cr := range r.ByClass {
			if cr.Class == k {
				return cr, true
			}
		}
		return result.ClassRow{}, false
	}
	i := strconv.Itoa
	switch c {
	case "clients":
		return i(r.Clients)
	case "offered":
		return fmtNum(r.Offered)
	case "sent":
		return i(r.Sent)
	case "ok":
		return i(r.OK)
	case "refused":
		return i(r.Refused)
	case "gaveup":
		return i(r.Gaveup)
	case "error":
		return i(r.Error)
	case "ok_per_sec":
		return f(r.OKPerSec, 1)
	case "p50_ms":
		return f(r.P50MS, 1)
	case "p99_ms":
		return f(r.P99MS, 1)
	case "done":
		return opt(r.Done)
	case "lost":
		return i(r.Lost)
	case "queued":
		return opt(r.Queued)
	case "backlogged":
		return opt(r.Backlogged)
	case "mean_ms":
		return f(r.MeanMS, 1)
	case "p95_ms":
		return f(r.P95MS, 1)
	case "n":
		return i(r.N)
	case "late":
		return i(r.Late)
	case "send_lag_p99_ms":
		return f(r.SendLagP99MS, 2)
	case "lab_service_ms":
		return optf(r.LabServiceMS)
	case "lab_cpu_ms":
		return optf(r.LabCPUMS)
	case "lab_wait_ms":
		return optf(r.LabWaitMS)
	case "lab_service_scv":
		if r.LabServiceSCV < 0 {
			return "-"
		}
		return f(r.LabServiceSCV, 2)
	case "attempts":
		return i(r.Attempts)
	case "attempts_per_sec":
		return f(r.AttemptsPerSec, 1)
	case "amplification":
		return f(r.Amplification, 3)
	case "breaker_open":
		return i(r.BreakerOpen)
	case "sub_requests":
		return i(r.SubRequests)
	case "sub_p50_ms":
		return f(r.SubP50MS, 1)
	case "sub_p99_ms":
		return f(r.SubP99MS, 1)
	case "over_sub_p99":
		return f(r.OverSubP99, 3)
	case "hedges":
		return i(r.Hedges)
	case "critical_arrivals":
		if cr, ok := class(result.Critical); ok {
			return i(cr.Arrivals)
		}
	case "critical_ok_share", "default_ok_share", "sheddable_ok_share":
		var k result.Class
		_ = k.UnmarshalText([]byte(c[:len(c)-len("_ok_share")]))
		if cr, ok := class(k); ok {
			return f(cr.OKShare, 3)
		}
	}
	return "-"
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
