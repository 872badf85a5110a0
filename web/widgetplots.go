package web

import (
	"math"

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
	for i, p := range q.Curve {
		if i%10 == 0 || i == len(q.Curve)-1 {
			table.Rows = append(table.Rows, []string{model.Format(float64(p.Arrivals)), model.Format(100*float64(p.Utilisation)) + "%",
				model.Format(float64(p.MeanResponseMS)), model.Format(float64(p.P99ResponseMS))})
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
	}
	return chart.Chart{}, false
}
