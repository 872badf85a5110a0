package web

import (
	"math"
	"slices"

	"capacitylab/chart"
	"capacitylab/model"
)

// queueCurveChart draws the queue curve: mean response time and p99, in
// ms, against offered load from 0 to 95% of capacity (both are the model,
// so both dashed, each in its quantity's colour); marks where utilisation
// passes 0.7 and 0.9, the knee, and the learner's load, or a note that it
// has no steady state. The marks are the stops a keyboard reaches.
func queueCurveChart(q model.Queue, id string) chart.Chart {
	var xs, mean, p99 []float64
	for _, p := range q.Curve {
		xs = append(xs, float64(p.Arrivals))
		mean = append(mean, float64(p.MeanResponseMS))
		p99 = append(p99, float64(p.P99ResponseMS))
	}
	capacity := float64(q.Capacity)
	panel := chart.Panel{Title: "Response time, ms", Series: []chart.Series{
		{Name: "mean, model", Quantity: "mean", Style: chart.Model, X: xs, Y: mean},
		{Name: "p99, model", Quantity: "p99", Style: chart.Model, X: xs, Y: p99},
	}}
	pooled := q.Servers > 1
	if pooled {
		panel.Series[0].Name, panel.Series[1].Name = "mean, one queue", "p99, one queue"
		var sep []float64
		for _, p := range q.SeparateCurve {
			sep = append(sep, float64(p.P99ResponseMS))
		}
		panel.Series = append(panel.Series, chart.Series{Name: "p99, a queue each", Quantity: "split", Style: chart.Model, X: xs, Y: sep})
	}
	stop := func(p model.QueuePoint, what string) chart.Stop {
		return chart.Stop{X: float64(p.Arrivals), Focus: true, Lines: []string{
			what + ": " + model.Format(float64(p.Arrivals)) + " a second (" + model.Format(100*float64(p.Utilisation)) + "% busy)",
			"mean " + model.Format(float64(p.MeanResponseMS)) + " ms, p99 " + model.Format(float64(p.P99ResponseMS)) + " ms"}}
	}
	panel.Marks = []chart.Mark{
		{X: float64(q.At70.Arrivals), Label: "ρ = 0.7"},
		{X: float64(q.At90.Arrivals), Label: "ρ = 0.9"},
	}
	panel.Stops = []chart.Stop{stop(q.Knee, "The knee"), stop(q.At70, "70% busy"), stop(q.At90, "90% busy")}
	if q.Stable {
		panel.Marks = append(panel.Marks, chart.Mark{X: float64(q.Arrivals), Label: "your load", Quantity: "accent", Solid: true})
		panel.Stops = append(panel.Stops, stop(q.At, "Your load"))
	} else {
		panel.Note = model.Format(float64(q.Arrivals)) + "/s is beyond capacity: no steady state"
	}
	sortStops(panel.Stops)
	table := chart.Table{Caption: "The queue curve, every tenth of capacity", Head: []string{"offered /s", "busy", "mean ms", "p99 ms"}}
	if pooled {
		table.Head = append(table.Head, "p99 ms, a queue each")
	}
	for i, p := range q.Curve {
		if i%10 == 0 || i == len(q.Curve)-1 {
			row := []string{model.Format(float64(p.Arrivals)), model.Format(100*float64(p.Utilisation)) + "%",
				model.Format(float64(p.MeanResponseMS)), model.Format(float64(p.P99ResponseMS))}
			if pooled {
				row = append(row, model.Format(float64(q.SeparateCurve[i].P99ResponseMS)))
			}
			table.Rows = append(table.Rows, row)
		}
	}
	return chart.Chart{ID: id + "-plot", Title: "Queue curve: response time against offered load", Desc: queueDesc(q),
		XTitle: "Offered load, requests a second (capacity " + model.Format(capacity) + ")", XMax: capacity, Panels: []chart.Panel{panel}, Table: table}
}

// queueDesc is the queue curve in words, for screen readers.
func queueDesc(q model.Queue) string {
	c := model.Format(float64(q.Servers))
	servers := c + " server"
	if c != "1" {
		servers += "s"
	}
	return servers + " of " + model.Format(float64(q.ServiceMS)) + " ms, capacity " + model.Format(float64(q.Capacity)) +
		" requests a second. Mean response time rises from " + model.Format(float64(q.Curve[0].MeanResponseMS)) + " ms idle to " +
		model.Format(float64(q.At70.MeanResponseMS)) + " ms at 70% busy and " + model.Format(float64(q.At90.MeanResponseMS)) + " ms at 90% busy (p99 " +
		model.Format(float64(q.At70.P99ResponseMS)) + " and " + model.Format(float64(q.At90.P99ResponseMS)) + " ms). The knee is at " +
		model.Format(float64(q.Knee.Arrivals)) + " requests a second. " + q.Sentence
}

// ceilingsChart draws the two ceilings as bars on one scale, the binding
// one filled and saying so; an infinite ceiling runs to the edge and says
// "no limit".
func ceilingsChart(c model.Ceilings, id string) chart.Chart {
	wc, pc := float64(c.WorkerCeiling), float64(c.ProcessorCeiling)
	top := 0.0
	for _, v := range []float64{wc, pc} {
		if !math.IsInf(v, 1) {
			top = math.Max(top, v)
		}
	}
	both := c.Binds == model.BindsBoth
	bar := func(label, formula, class string, v float64, binds bool) chart.Bar {
		value := "no limit"
		if !math.IsInf(v, 1) {
			value = model.Format(v) + " a second"
		}
		if binds {
			class += " binds"
			value += " — binds"
		}
		return chart.Bar{Label: label, Formula: formula, Value: value, X: v, Quantity: "accent", Strong: binds, Class: class}
	}
	const workersF, cpusF = "workers × 1000 ÷ (spin + wait)", "CPUs × 1000 ÷ spin"
	table := chart.Table{Caption: "The two ceilings", Head: []string{"ceiling", "requests a second", "binds", "formula"}}
	for _, r := range []struct {
		name, formula string
		v             float64
		binds         bool
	}{{"worker ceiling", workersF, wc, both || c.Binds == model.BindsWorkers}, {"processor ceiling", cpusF, pc, both || c.Binds == model.BindsProcessor}} {
		value := "no limit"
		if !math.IsInf(r.v, 1) {
			value = model.Format(r.v)
		}
		binds := "no"
		if r.binds {
			binds = "yes"
		}
		table.Rows = append(table.Rows, []string{r.name, value, binds, r.formula})
	}
	panel := chart.Panel{Bars: []chart.Bar{
		bar("Worker ceiling", workersF, "tc-workers", wc, both || c.Binds == model.BindsWorkers),
		bar("Processor ceiling", cpusF, "tc-processor", pc, both || c.Binds == model.BindsProcessor),
	}}
	return chart.Chart{ID: id + "-plot", Title: "Two ceilings: requests a second the workers and the processors allow", Desc: c.Sentence,
		XTitle: "Requests a second", XMax: top * 1.15, Panels: []chart.Panel{panel}, Table: table, Legend: []chart.Series{}}
}

// widgetPlotChart is the plot of a widget's result, if its kind has one.
func widgetPlotChart(res model.Result, id string) (chart.Chart, bool) {
	switch {
	case res.Queue != nil:
		return queueCurveChart(*res.Queue, id), true
	case res.Ceilings != nil:
		return ceilingsChart(*res.Ceilings, id), true
	case res.Quota != nil:
		return quotaChart(*res.Quota, id), true
	case res.AIMD != nil:
		return aimdChart(*res.AIMD, id), true
	case res.Retry != nil:
		return retryChart(*res.Retry, id), true
	case res.Scaling != nil:
		return lateScalingChart(*res.Scaling, id), true
	case res.Variability != nil:
		return variabilityChart(*res.Variability, id), true
	case res.Fanout != nil:
		return fanoutChart(*res.Fanout, id), true
	case res.USL != nil:
		return uslChart(*res.USL, id), true
	}
	return chart.Chart{}, false
}

// The quota chart's timeline: 60 s with the release at 20 s, as the
// recorded experiments run (model/doc.go says why against time).
const (
	quotaReleaseS = 20.0
	quotaEndS     = 60.0
)

// quotaChart draws the quota through the release against time: the ok
// answers a second with and without the quota over the origin's capacity,
// and the origin's queue, from the model's steady rates before and after.
func quotaChart(q model.Quota, id string) chart.Chart {
	f := model.Format
	rel, end := quotaReleaseS, quotaEndS
	step := func(before, after float64) ([]float64, []float64) {
		return []float64{0, rel, rel, end}, []float64{before, before, after, after}
	}
	timeout := float64(q.TimeoutMS)
	capX, capY := step(float64(q.CapacityBefore), float64(q.CapacityAfter))
	title := "Answered, a second"
	if timeout > 0 {
		title = "Answered within the " + f(timeout) + " ms timeout, a second"
	}
	ok := chart.Panel{Title: title, Series: []chart.Series{{Name: "the origin's capacity, c ÷ R", Quantity: "muted", Style: chart.Guide, X: capX, Y: capY}}}
	queue := chart.Panel{Title: "Waiting at the origin, requests"}
	rel0 := chart.Mark{X: rel, Label: "release", Quantity: "accent", Solid: true}
	ok.Marks, queue.Marks = []chart.Mark{rel0}, []chart.Mark{rel0}
	desc := q.Sentence
	table := chart.Table{Caption: "The quota through the release, the model's steady rates", Head: []string{"when", "with the quota /s", "without it /s", "capacity /s", "waiting without it"}}
	if !q.Defined {
		ok.Note = "No quota: N = X × R has no value here"
		return chart.Chart{ID: id + "-plot", Title: "A quota through a bad release", Desc: desc, XTitle: "Seconds (the release at 20 s)", XMax: end,
			Panels: []chart.Panel{ok}, Table: table}
	}
	x, n, c := float64(q.Arrivals), float64(q.Quota), float64(q.Workers)
	late := float64(q.LateAfterS)
	// With the quota: its answers are in time unless its own latency
	// passes the timeout.
	withAfter := float64(q.WithQuotaAfter)
	if q.QuotaLate {
		withAfter = 0
	}
	withX, withY := step(float64(q.WithQuotaBefore), withAfter)
	// Without it: the origin serves its capacity, in time until the queue
	// outlasts the timeout, then nothing in time.
	served := float64(q.WithoutQuotaAfter)
	beforeWithout := math.Min(x, float64(q.CapacityBefore))
	woX, woY := step(beforeWithout, served)
	switch {
	case math.IsNaN(late):
	case late == 0:
		woY[2], woY[3] = 0, 0
	case rel+late < end:
		woX = []float64{0, rel, rel, rel + late, rel + late, end}
		woY = []float64{beforeWithout, beforeWithout, served, served, 0, 0}
	}
	ok.Series = append(ok.Series,
		chart.Series{Name: "without a quota", Quantity: "b", Style: chart.Model, X: woX, Y: woY},
		chart.Series{Name: "with the quota N = " + f(n), Quantity: "a", Style: chart.Model, X: withX, Y: withY})
	inside := n
	if withAfter >= x {
		inside = x * float64(q.ReleaseMS) / 1000
	}
	waitingQuota := math.Max(0, inside-c)
	growth := float64(q.QueueGrowth)
	queue.Series = []chart.Series{
		{Name: "without a quota", Quantity: "b", Style: chart.Model, X: []float64{0, rel, end}, Y: []float64{0, 0, growth * (end - rel)}},
		{Name: "with the quota N = " + f(n), Quantity: "a", Style: chart.Model, X: []float64{0, rel, rel, end}, Y: []float64{0, 0, waitingQuota, waitingQuota}},
	}
	if !math.IsNaN(late) && late > 0 && rel+late < end {
		ok.Marks = append(ok.Marks, chart.Mark{X: rel + late, Label: "callers give up"})
	}
	withText := f(withAfter) + " a second"
	if q.QuotaLate {
		withText = "none in time (each takes " + f(float64(q.QuotaLatencyMS)) + " ms)"
	}
	withoutText := f(served) + " a second, each later than the last"
	switch {
	case math.IsNaN(late) && growth == 0:
		withoutText = f(served) + " a second"
	case !math.IsNaN(late) && late == 0:
		withoutText = "none in time (the work alone passes the timeout)"
	case !math.IsNaN(late):
		withoutText = f(served) + " a second for " + f(late) + " s, then none in time"
	}
	ok.Stops = []chart.Stop{
		{X: rel / 2, Focus: true, Lines: []string{"Before the release (R = " + f(float64(q.LatencyMS)) + " ms)",
			"with the quota " + f(float64(q.WithQuotaBefore)) + " a second, without " + f(beforeWithout) + "; capacity " + f(float64(q.CapacityBefore))}},
		{X: (rel + end) / 2, Focus: true, Lines: []string{"After the release (R' = " + f(float64(q.ReleaseMS)) + " ms, capacity " + f(float64(q.CapacityAfter)) + ")",
			"with the quota: " + withText + ", " + f(float64(q.RefusedAfter)) + " refused", "without: " + withoutText}},
	}
	queue.Stops = []chart.Stop{{X: end, Focus: true, Lines: []string{"At " + f(end) + " s: " + f(growth*(end-rel)) + " waiting without a quota, " + f(waitingQuota) + " with it"}}}
	table.Rows = [][]string{
		{"before the release", f(float64(q.WithQuotaBefore)), f(beforeWithout), f(float64(q.CapacityBefore)), "0"},
		{"after it", withText, withoutText, f(float64(q.CapacityAfter)), "grows by " + f(growth) + " a second"},
	}
	return chart.Chart{ID: id + "-plot", Title: "A quota through a bad release: answers a second over time", Desc: desc,
		XTitle: "Seconds (the release at 20 s)", XMax: end, Panels: []chart.Panel{ok, queue}, Table: table}
}

// aimdChart draws the AIMD limit L(t) as a step line against the capacity
// C(t), with the step, the settling point and the last half marked.
func aimdChart(a model.AIMD, id string) chart.Chart {
	f := model.Format
	n := len(a.Limit)
	end := float64(a.DurationS)
	var lx, ly, cx, cy []float64
	for k := 0; k < n; k++ {
		t0 := float64(a.TimeS[k])
		t1 := end
		if k+1 < n {
			t1 = float64(a.TimeS[k+1])
		}
		lx = append(lx, t0, t1)
		ly = append(ly, float64(a.Limit[k]), float64(a.Limit[k]))
		if k == 0 || a.Capacity[k] != a.Capacity[k-1] {
			cx = append(cx, t0)
			cy = append(cy, float64(a.Capacity[k]))
		}
	}
	cx = append(cx, end)
	cy = append(cy, float64(a.Capacity[n-1]))
	// The capacity as a step line too: repeat each level up to the next.
	var sx, sy []float64
	for i := range cx {
		if i > 0 {
			sx, sy = append(sx, cx[i]), append(sy, cy[i-1])
		}
		sx, sy = append(sx, cx[i]), append(sy, cy[i])
	}
	top := 0.0
	for _, v := range append(ly, sy...) {
		top = math.Max(top, v)
	}
	p := chart.Panel{Title: "Requests in flight", YMax: top * 1.1, Series: []chart.Series{
		// The limit changes every interval: a thin solid line reads as a
		// saw-tooth where a dashed one breaks into noise; the capacity,
		// the model's assumption, is dashed.
		{Name: "capacity C(t)", Quantity: "muted", Style: chart.Model, X: sx, Y: sy},
		{Name: "the limit L(t)", Quantity: "a", Style: chart.Guide, X: lx, Y: ly},
	}}
	step := float64(a.StepS)
	table := chart.Table{Caption: "The limit over time", Head: []string{"from, s", "capacity", "limit"}}
	every := int(math.Max(1, math.Ceil(float64(n)/15)))
	for k := 0; k < n; k += every {
		table.Rows = append(table.Rows, []string{f(float64(a.TimeS[k])), f(float64(a.Capacity[k])), f(float64(a.Limit[k]))})
	}
	if every > 1 {
		table.Caption += ", every " + f(float64(every)*float64(a.IntervalMS)/1000) + " s"
	}
	if !a.Stepped {
		p.Note = "No step in the time shown"
		return chart.Chart{ID: id + "-plot", Title: "An AIMD limit against a capacity step", Desc: a.Sentence, XTitle: "Seconds", XMax: end, Panels: []chart.Panel{p}, Table: table}
	}
	p.Marks = []chart.Mark{{X: step, Label: "capacity steps", Quantity: "accent", Solid: true}}
	p.Stops = []chart.Stop{{X: step, Focus: true, Lines: []string{"At " + f(step) + " s the capacity steps from " + f(float64(a.CapacityBefore)) + " to " + f(float64(a.CapacityAfter)),
		"from then on the limit runs from " + f(float64(a.MinAfter)) + " to " + f(float64(a.MaxAfter))}}}
	if s := float64(a.SettleS); !math.IsNaN(s) {
		p.Marks = append(p.Marks, chart.Mark{X: step + s, Label: "settled"})
		if s > 0 {
			p.Stops = append(p.Stops, chart.Stop{X: step + s, Focus: true, Lines: []string{"Settled " + f(s) + " s after the step", "the first cut to at or under " + f(float64(a.CapacityAfter))}})
		}
	}
	if tail := float64(a.TailFromS); !math.IsNaN(float64(a.MeanLimit)) {
		p.Stops = append(p.Stops, chart.Stop{X: (tail + end) / 2, Focus: true, Lines: []string{"From " + f(tail) + " s to the end",
			"mean limit " + f(float64(a.MeanLimit)) + ", " + f(float64(a.DeliveredPct)) + "% of the new capacity let in"}})
	}
	sortStops(p.Stops)
	return chart.Chart{ID: id + "-plot", Title: "An AIMD limit against a capacity step", Desc: a.Sentence, XTitle: "Seconds", XMax: end, Panels: []chart.Panel{p}, Table: table}
}

// retryChart draws the attempts a request sends against the chance p that
// an attempt fails, from 0 to 1, for the widget's retries: without a
// budget and, when there is one, with it. The service's capacity is the
// line where the load reaches it, 1 ÷ u attempts a request; the
// learner's p is marked, and where the load passes capacity is a stop.
func retryChart(r model.Retry, id string) chart.Chart {
	f := model.Format
	var xs, un, with []float64
	for i := range r.CurveP {
		xs = append(xs, float64(r.CurveP[i]))
		un = append(un, float64(r.CurveUnbudgeted[i]))
		with = append(with, float64(r.CurveAttempts[i]))
	}
	p, u, b := float64(r.P), float64(r.Utilisation), float64(r.Budget)
	top := float64(r.Retries) + 1
	panel := chart.Panel{Title: "Attempts a request", Series: []chart.Series{{Name: "no budget", Quantity: "b", Style: chart.Model, X: xs, Y: un}}}
	if b > 0 {
		panel.Series[0].Name = "without a budget"
		panel.Series = append(panel.Series, chart.Series{Name: "with a budget of " + f(b), Quantity: "a", Style: chart.Model, X: xs, Y: with})
	}
	ymax := top
	switch capA := 1 / u; {
	case u == 0:
		panel.Note = "No load offered: nothing reaches the capacity"
	case capA <= 1.5*top:
		panel.Series = append(panel.Series, chart.Series{Name: "the service's capacity, 1 ÷ u = " + f(capA) + " attempts", Quantity: "muted", Style: chart.Guide,
			X: []float64{0, 1}, Y: []float64{capA, capA}})
		ymax = math.Max(ymax, capA)
	default:
		panel.Note = "The capacity, " + f(capA) + " attempts a request, is above every point"
	}
	panel.YMax = ymax * 1.1
	panel.Marks = []chart.Mark{{X: p, Label: "p = " + f(p), Quantity: "accent", Solid: true}}
	here := "p = " + f(p) + ": " + f(float64(r.Unbudgeted)) + " attempts a request"
	if b > 0 {
		here += ", " + f(float64(r.Attempts)) + " with the budget"
	}
	load := "load " + f(float64(r.LoadPct)) + "% of capacity: within it"
	if r.Over {
		load = "load " + f(float64(r.LoadPct)) + "% of capacity: over it"
	}
	panel.Stops = []chart.Stop{{X: p, Focus: true, Lines: []string{here, load}}}
	// Where the load passes capacity: u × (1 + p + … + p^r) = 1, found
	// by bisection (the attempts rise with p). With a budget the line
	// passes it at the same p, if 1 + b is above 1 ÷ u at all.
	switch {
	case u == 0 || u*top <= 1:
	case u >= 1:
		panel.Stops = append(panel.Stops, chart.Stop{X: 0, Focus: true, Lines: []string{"At p = 0 the first attempts alone are " + f(100*u) + "% of capacity"}})
	default:
		lo, hi := 0.0, 1.0
		for i := 0; i < 60; i++ {
			mid := (lo + hi) / 2
			if u*model.RetryAttempts(mid, int(r.Retries)) > 1 {
				hi = mid
			} else {
				lo = mid
			}
		}
		lines := []string{"From p = " + f(hi) + " the load passes the capacity"}
		if b > 0 && u*(1+b) <= 1 {
			lines = append(lines, "without a budget; the budget of "+f(b)+" keeps it within, at most "+f(100*u*(1+b))+"%")
		}
		panel.Stops = append(panel.Stops, chart.Stop{X: hi, Focus: true, Lines: lines})
	}
	sortStops(panel.Stops)
	table := chart.Table{Caption: "Attempts a request against the chance an attempt fails, " + f(float64(r.Retries)) + " retries", Head: []string{"p", "attempts, no budget"}}
	if b > 0 {
		table.Head = append(table.Head, "with the budget")
	}
	table.Head = append(table.Head, "load, % of capacity")
	for i := 0; i < len(xs); i += model.RetryCurveSteps / 10 {
		row := []string{f(xs[i]), f(un[i])}
		if b > 0 {
			row = append(row, f(with[i]))
		}
		table.Rows = append(table.Rows, append(row, f(100*u*with[i])))
	}
	return chart.Chart{ID: id + "-plot", Title: "Retries: attempts a request against the chance an attempt fails", Desc: r.Sentence,
		XTitle: "Chance an attempt fails, p", XMax: 1, Panels: []chart.Panel{panel}, Table: table}
}

// lateScalingChart draws capacity that lands late over time: the backlog
// (rising until the landing, then draining) and the wait of a request
// arriving at each moment, with the caller's timeout; the landing and the
// moment the backlog is gone are marked. It runs a quarter past the
// drained moment, or to twice the lag when the backlog never drains, and
// on to the next round axis value.
func lateScalingChart(s model.Scaling, id string) chart.Chart {
	f := model.Format
	lag, b := float64(s.LagS), float64(s.Backlog)
	lam, mu1, mu2 := float64(s.Demand), float64(s.CapacityBefore), float64(s.CapacityAfter)
	end := math.Max(2*lag, 10)
	if s.Drains {
		end = math.Max(1.25*math.Max(float64(s.DrainedAtS), lag), 10)
	}
	// The lines run to the axis's end (its top, as the chart rounds it).
	end, _ = chart.Axis(end, 5)
	// The backlog and the waits are straight between these moments.
	at := []float64{0, lag, end}
	if b > 0 {
		at = append(at, mu1*lag/lam)
	}
	if s.Drains {
		at = append(at, float64(s.DrainedAtS))
	}
	slices.Sort(at)
	at = slices.Compact(at)
	var wx, wy, bx, by []float64
	for _, t := range at {
		if t > end {
			continue
		}
		bx, by = append(bx, t), append(by, s.BacklogAt(t))
		wx, wy = append(wx, t), append(wy, s.WaitAtS(t))
	}
	backlog := chart.Panel{Title: "Backlog, requests", Series: []chart.Series{{Name: "backlog", Quantity: "a", Style: chart.Model, X: bx, Y: by}}}
	wait := chart.Panel{Title: "Wait of a request arriving then, s", Series: []chart.Series{{Name: "wait", Quantity: "b", Style: chart.Model, X: wx, Y: wy}}}
	timeout := float64(s.TimeoutMS) / 1000
	if timeout > 0 {
		wait.Series = append(wait.Series, chart.Series{Name: "the timeout, " + f(timeout) + " s", Quantity: "muted", Style: chart.Guide, X: []float64{0, end}, Y: []float64{timeout, timeout}})
	}
	landing := chart.Mark{X: lag, Label: "lands", Quantity: "accent", Solid: true}
	backlog.Marks, wait.Marks = []chart.Mark{landing}, []chart.Mark{landing}
	backlog.Stops = []chart.Stop{{X: lag, Focus: true, Lines: []string{"The new capacity lands at " + f(lag) + " s: " + f(b) + " waiting",
		"capacity " + f(mu1) + " → " + f(mu2) + " a second, demand " + f(lam)}}}
	if s.Drains && float64(s.DrainedAtS) > lag {
		d := float64(s.DrainedAtS)
		drained := chart.Mark{X: d, Label: "drained"}
		backlog.Marks, wait.Marks = append(backlog.Marks, drained), append(wait.Marks, drained)
		backlog.Stops = append(backlog.Stops, chart.Stop{X: d, Focus: true, Lines: []string{"Drained at " + f(d) + " s", f(float64(s.DrainS)) + " s after the landing"}})
	}
	if !s.Drains {
		backlog.Note = "Never drains"
		backlog.Stops = append(backlog.Stops, chart.Stop{X: end, Focus: true, Lines: []string{"At " + f(end) + " s: " + f(s.BacklogAt(end)) + " waiting",
			"growing by " + f(float64(s.GrowthAfter)) + " a second"}})
	}
	if b > 0 && s.WorstWaitMS.Finite() {
		pk := float64(s.PeakAtS)
		wait.Stops = append(wait.Stops, chart.Stop{X: pk, Focus: true, Lines: []string{"The longest wait: " + f(float64(s.WorstWaitMS)/1000) + " s",
			"for the request arriving at " + f(pk) + " s"}})
	}
	if b > 0 && float64(s.PeakAtS) != lag {
		wait.Stops = append(wait.Stops, chart.Stop{X: lag, Focus: true, Lines: []string{"Arriving at the landing: waits " + f(float64(s.LandingWaitMS)/1000) + " s"}})
	}
	if from := float64(s.LateFromS); s.LateFromS.Finite() && from <= end {
		until := "and every arrival after"
		if s.LateUntilS.Finite() {
			until = "until " + f(float64(s.LateUntilS)) + " s: " + f(float64(s.LateS)) + " s of arrivals"
		}
		wait.Stops = append(wait.Stops, chart.Stop{X: from, Focus: true, Lines: []string{"From " + f(from) + " s arrivals wait past the " + f(timeout) + " s timeout", until}})
	}
	sortStops(backlog.Stops)
	sortStops(wait.Stops)
	table := chart.Table{Caption: "The backlog and the waits at each turn", Head: []string{"time, s", "backlog, requests", "wait of a request arriving then, s"}}
	for i := range bx {
		table.Rows = append(table.Rows, []string{f(bx[i]), f(by[i]), f(wy[i])})
	}
	return chart.Chart{ID: id + "-plot", Title: "Capacity that lands late: the backlog and the waits over time", Desc: s.Sentence,
		XTitle: "Seconds from the start (the new capacity lands at " + f(lag) + " s)", XMax: end, Panels: []chart.Panel{backlog, wait}, Table: table,
		PanelLegends: true, Stacked: true}
}

// variabilityChart draws the mean wait in queue against utilisation for
// service times of variability cs² = 0, 1 and 2 and the learner's (in the
// accent colour, named as theirs), with the learner's arrivals: the
// learner's utilisation is a mark and a stop, and the title says when the
// curves are Kingman's approximation rather than an exact result.
func variabilityChart(v model.Variability, id string) chart.Chart {
	f := model.Format
	var xs []float64
	for _, r := range v.CurveRho {
		xs = append(xs, float64(r))
	}
	// The learner's curve is the accent's blue, so the others take
	// colours apart from it.
	colours := []string{"mean", "b", "c", "count"}
	panel := chart.Panel{Title: "Mean wait in queue, ms"}
	name := func(c model.WaitCurve) string {
		n := "cs² = " + f(float64(c.ServiceSCV))
		switch float64(c.ServiceSCV) {
		case 0:
			n += ", constant"
		case 1:
			n += ", exponential"
		}
		if c.Chosen {
			n += " (yours)"
		}
		return n
	}
	for i, c := range v.Curves {
		s := chart.Series{Name: name(c), Quantity: colours[i%len(colours)], Style: chart.Model, X: xs}
		if c.Chosen {
			s.Quantity = "accent"
		}
		for _, w := range c.WaitMS {
			s.Y = append(s.Y, float64(w))
		}
		panel.Series = append(panel.Series, s)
	}
	rho := float64(v.Utilisation)
	panel.Marks = []chart.Mark{{X: rho, Label: "your load", Quantity: "accent", Solid: true}}
	at := func(i int) chart.Stop {
		r := float64(v.CurveRho[i])
		lines := []string{f(100*r) + "% busy: the mean wait"}
		for _, c := range v.Curves {
			lines = append(lines, name(c)+": "+f(float64(c.WaitMS[i]))+" ms")
		}
		return chart.Stop{X: r, Focus: true, Lines: lines}
	}
	panel.Stops = []chart.Stop{at(50), at(90),
		{X: rho, Focus: true, Lines: []string{"Your load, " + f(100*rho) + "% busy: waits " + f(float64(v.MeanWaitMS)) + " ms (cs² = " + f(float64(v.ServiceSCV)) + ")",
			"with constant service " + f(float64(v.ConstantWaitMS)) + " ms; M/M/" + f(float64(v.Servers)) + " " + f(float64(v.MMcWaitMS)) + " ms"}}}
	sortStops(panel.Stops)
	table := chart.Table{Caption: "Mean wait in queue, ms, against utilisation, every tenth", Head: []string{"busy"}}
	for _, c := range v.Curves {
		table.Head = append(table.Head, name(c))
	}
	for i := 0; i < len(xs); i += 10 {
		row := []string{f(100*xs[i]) + "%"}
		for _, c := range v.Curves {
			row = append(row, f(float64(c.WaitMS[i])))
		}
		table.Rows = append(table.Rows, row)
	}
	s := f(float64(v.Servers))
	servers := s + " server"
	if s != "1" {
		servers += "s"
	}
	title := "The wait against the load: " + servers + " of " + f(float64(v.ServiceMS)) + " ms, ca² = " + f(float64(v.ArrivalSCV))
	if !v.Exact {
		// In the title, not a note in the panel: a note sits where the
		// learner's mark may be.
		title += " (Kingman's approximation)"
	}
	return chart.Chart{ID: id + "-plot", Title: title, Desc: v.Sentence, XTitle: "Utilisation ρ", XMax: 1, Panels: []chart.Panel{panel}, Table: table}
}

// fanoutChart draws the share of fanned-out requests that are slow against
// the fan-out k, from 1 to FanoutCurveEnd, with the line where half are
// slow; the learner's k and the least k that makes half of them slow are
// marked.
func fanoutChart(fo model.Fanout, id string) chart.Chart {
	f := model.Format
	var xs, ys []float64
	for i := range fo.CurveK {
		xs = append(xs, float64(fo.CurveK[i]))
		ys = append(ys, 100*float64(fo.CurveSlow[i]))
	}
	end := xs[len(xs)-1]
	k, p := float64(fo.Fanout), float64(fo.P)
	panel := chart.Panel{Title: "Requests slow, %", YMax: 100, Series: []chart.Series{
		{Name: "slow, 1 − (1 − p)^k, p = " + f(p), Quantity: "a", Style: chart.Model, X: xs, Y: ys},
		{Name: "half the requests", Quantity: "muted", Style: chart.Guide, X: []float64{0, end}, Y: []float64{50, 50}},
	}}
	panel.Marks = []chart.Mark{{X: k, Label: "k = " + f(k), Quantity: "accent", Solid: true}}
	medAbout, medName := model.PercentileName(float64(fo.MedianBackendPercentile))
	panel.Stops = []chart.Stop{{X: k, Focus: true, Lines: []string{"k = " + f(k) + ": " + f(100*float64(fo.SlowShare)) + "% of requests slow",
		"their median is " + medAbout + "each backend's " + medName}}}
	if h := float64(fo.HalfSlowFanout); fo.HalfSlowFanout.Finite() && h <= end && h != k {
		panel.Marks = append(panel.Marks, chart.Mark{X: h, Label: "half slow"})
		panel.Stops = append(panel.Stops, chart.Stop{X: h, Focus: true, Lines: []string{"From k = " + f(h) + " half the requests or more are slow"}})
	}
	if p == 0 {
		panel.Note = "No sub-request is slow: no request is"
	}
	sortStops(panel.Stops)
	// The table: k = 1, then every tenth of the way to the curve's end.
	table := chart.Table{Caption: "Requests slow against the fan-out, p = " + f(p), Head: []string{"k", "requests slow, %"}}
	for i, x := range xs {
		if i == 0 || math.Mod(x, end/10) == 0 {
			table.Rows = append(table.Rows, []string{f(x), f(ys[i])})
		}
	}
	return chart.Chart{ID: id + "-plot", Title: "The slowest of many: requests slow against the fan-out", Desc: fo.Sentence,
		XTitle: "Sub-requests a request fans out to, k", XMax: end, Panels: []chart.Panel{panel}, Table: table}
}

// uslChart draws the Universal Scalability Law's throughput X(N) for N = 1
// to N max, with λN (neither contention nor coherency) for reference,
// clipped a little above the curve's top so the curve keeps the height;
// the peak is marked when it is within N max, and noted when past it or
// absent.
func uslChart(u model.USL, id string) chart.Chart {
	f := model.Format
	var xs, ys, lin []float64
	top := 0.0
	for i := range u.CurveN {
		xs = append(xs, float64(u.CurveN[i]))
		ys = append(ys, float64(u.CurveX[i]))
		lin = append(lin, float64(u.CurveLinear[i]))
		top = math.Max(top, float64(u.CurveX[i]))
	}
	nMax := float64(u.NMax)
	panel := chart.Panel{Title: "Throughput, a second", YMax: top * 1.5, Series: []chart.Series{
		{Name: "X(N), the USL (σ = " + f(float64(u.Sigma)) + ", κ = " + f(float64(u.Kappa)) + ")", Quantity: "a", Style: chart.Model, X: xs, Y: ys},
		{Name: "λN, neither contention nor coherency", Quantity: "muted", Style: chart.Guide, X: xs, Y: lin},
	}}
	panel.Stops = []chart.Stop{{X: nMax, Focus: true, Lines: []string{"N = " + f(nMax) + ": " + f(float64(u.XAtMax)) + " a second",
		f(float64(u.SpeedupAtMax)) + " times one client's " + f(float64(u.Lambda))}}}
	pn := float64(u.PeakN)
	switch {
	case !u.HasPeak:
		panel.Note = "No peak: κ = 0"
	case pn <= nMax:
		panel.Marks = []chart.Mark{{X: pn, Label: "peak N* = " + f(pn), Quantity: "accent", Solid: true}}
		if pn != nMax {
			panel.Stops = append(panel.Stops, chart.Stop{X: pn, Focus: true, Lines: []string{"The peak: " + f(float64(u.PeakX)) + " a second at N* = " + f(pn),
				"√((1 − σ) ÷ κ)"}})
		}
	default:
		panel.Note = "The peak, N* = " + f(pn) + ", is past N max"
	}
	sortStops(panel.Stops)
	table := chart.Table{Caption: "Throughput against clients", Head: []string{"N", "X(N) a second", "λN a second"}}
	every := int(math.Max(1, math.Ceil(float64(len(xs))/16)))
	for i := 0; i < len(xs); i += every {
		table.Rows = append(table.Rows, []string{f(xs[i]), f(ys[i]), f(lin[i])})
	}
	if last := len(xs) - 1; last%every != 0 {
		table.Rows = append(table.Rows, []string{f(xs[last]), f(ys[last]), f(lin[last])})
	}
	return chart.Chart{ID: id + "-plot", Title: "The Universal Scalability Law: throughput against clients", Desc: u.Sentence,
		XTitle: "Clients N", XMax: nMax, Panels: []chart.Panel{panel}, Table: table}
}
