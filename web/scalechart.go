package web

import (
	"math"
	"slices"
	"strconv"

	"capacitylab/chart"
	"capacitylab/lessons"
	"capacitylab/model"
	"capacitylab/recorder"
	"capacitylab/result"
	"capacitylab/runner"
)

// scalable says whether q's rows make a scalability chart: a closed loop
// with at least three different client counts measured, which the
// Universal Scalability Law's three coefficients need.
func scalable(q runner.Request, rows []result.Row) bool {
	if q.Mode != runner.ModeClosed {
		return false
	}
	var ns []int
	for _, r := range rows {
		if r.Clients > 0 && r.OKPerSec > 0 && !slices.Contains(ns, r.Clients) {
			ns = append(ns, r.Clients)
		}
	}
	return len(ns) >= 3
}

// scalabilityChart draws a closed loop's throughput against its clients
// with the Universal Scalability Law fitted to it (model.FitUSL): the
// measured points, the fitted curve (dashed) and the line of perfect
// scaling, λN (faint), with the peak the fit puts marked when it falls in
// the chart; and the p50 and p99 latency beside it. The description gives
// the fit's coefficients and error in words (fitWords, returned too for a
// caller that words a description of its own); the table every number.
func scalabilityChart(q runner.Request, rows []result.Row, id string) (chart.Chart, string) {
	var rx, rok, rp50, rp99 []float64
	nTop, yOK, yLat := 0.0, 0.0, 0.0
	for _, r := range rows {
		n := float64(r.Clients)
		rx, rok, rp50, rp99 = append(rx, n), append(rok, r.OKPerSec), append(rp50, r.P50MS), append(rp99, r.P99MS)
		nTop, yOK, yLat = math.Max(nTop, n), math.Max(yOK, r.OKPerSec), math.Max(yLat, r.P99MS)
	}
	xMax, _ := chart.Axis(nTop*1.05, 5)
	fit, err := scaleFit(rows)
	throughput := chart.Panel{Title: "Throughput: ok answers a second"}
	words := fitWords(fit, err, rows)
	desc := strconv.Itoa(len(rows)) + " closed-loop windows, from " + numText(rx[0]) + " to " + numText(nTop) + " clients. " + words
	lambda, sigma, kappa := float64(fit.Lambda), float64(fit.Sigma), float64(fit.Kappa)
	if err == nil {
		var fx, fy []float64
		for i := 0; i <= 200; i++ {
			n := 1 + (nTop-1)*float64(i)/200
			fx, fy = append(fx, n), append(fy, model.USLThroughput(lambda, sigma, kappa, n))
		}
		guideTop := math.Min(xMax, 1.3*yOK/lambda)
		throughput.Series = append(throughput.Series,
			chart.Series{Name: "λN, if nothing were shared", Quantity: "muted", Style: chart.Guide, X: []float64{0, guideTop}, Y: []float64{0, lambda * guideTop}},
			chart.Series{Name: "USL fit", Quantity: "ok", Style: chart.Model, X: fx, Y: fy})
		if peak := float64(fit.PeakN); peak <= xMax {
			throughput.Marks = append(throughput.Marks, chart.Mark{X: peak, Label: "fit's peak", Quantity: "ok"})
		}
	}
	throughput.Series = append(throughput.Series, chart.Series{Name: "ok/s, measured", Quantity: "ok", Style: chart.Measured, X: rx, Y: rok})
	throughput.YMax = yOK * 1.15
	latency := chart.Panel{Title: "Latency of ok answers, ms", YMax: yLat * 1.1, Series: []chart.Series{
		{Name: "p50, measured", Quantity: "p50", Style: chart.Measured, X: rx, Y: rp50},
		{Name: "p99, measured", Quantity: "p99", Style: chart.Measured, X: rx, Y: rp99},
	}}
	table := chart.Table{Caption: "Each window's throughput beside the fit's, and its latency",
		Head: []string{"clients", "ok /s", "USL fit ok /s", "p50 ms", "p99 ms"}}
	for i, r := range rows {
		fitted := "—"
		if err == nil {
			fitted = numText(model.USLThroughput(lambda, sigma, kappa, rx[i]))
		}
		table.Rows = append(table.Rows, []string{strconv.Itoa(r.Clients), numText(r.OKPerSec), fitted, numText(r.P50MS), numText(r.P99MS)})
		head := strconv.Itoa(r.Clients) + " clients"
		throughput.Stops = append(throughput.Stops, chart.Stop{X: rx[i], Focus: true, Lines: []string{head, "ok " + numText(r.OKPerSec) + "/s (fit " + fitted + ")"}})
		latency.Stops = append(latency.Stops, chart.Stop{X: rx[i], Focus: true, Lines: []string{head, "p50 " + numText(r.P50MS) + " ms, p99 " + numText(r.P99MS) + " ms"}})
	}
	desc += changesNote(q) + " The numbers are in the table under the chart."
	return chart.Chart{ID: id, Title: "Throughput against clients, with the Universal Scalability Law", Desc: desc, XTitle: "Clients (closed loop)", XMax: xMax,
		Panels: []chart.Panel{throughput, latency}, Table: table}, words
}

// scaleFit fits the Universal Scalability Law to a closed loop's rows:
// each window's clients and ok answers a second.
func scaleFit(rows []result.Row) (model.USLFit, error) {
	var pts []model.USLPoint
	for _, r := range rows {
		if r.Clients > 0 && r.OKPerSec > 0 {
			pts = append(pts, model.USLPoint{N: float64(r.Clients), X: r.OKPerSec})
		}
	}
	return model.FitUSL(pts)
}

// poorFit is the root-mean-square relative error past which a chart
// says the law fits its points poorly: the lab's sweep with a coherency
// cost (more-workers-slower's third, recorded) fits within 7.1%, while a
// hard ceiling's corner (its first two, and simulated sweeps like them)
// leaves 12% to 13%.
const poorFit = 0.10

// fitWords says a fit of rows (or why there is none) in sentences: its
// coefficients, its error and its peak; and, when it fits them poorly,
// so, and when it puts a peak among clients whose measured throughput
// does not fall past it, that the peak is the fit's, not theirs.
func fitWords(fit model.USLFit, err error, rows []result.Row) string {
	if err != nil {
		return "The Universal Scalability Law could not be fitted: " + err.Error() + "."
	}
	s := "The Universal Scalability Law fitted to them has λ = " + model.Format(float64(fit.Lambda)) + " a second, σ = " + model.Format(float64(fit.Sigma)) +
		" (contention) and κ = " + model.Format(float64(fit.Kappa)) + " (coherency), off the measured throughput by " +
		model.Format(100*float64(fit.RMSRelErr)) + "% (root mean square)."
	if float64(fit.RMSRelErr) > poorFit {
		s += " That is a poor fit: the law's curve bends smoothly, and these points turn a sharper corner."
	}
	peak := float64(fit.PeakN)
	if math.IsInf(peak, 1) || math.IsNaN(peak) {
		return s + " With κ = 0 it has no peak: it levels off towards λ ÷ σ."
	}
	s += " It peaks at " + model.Format(peak) + " clients, " + model.Format(float64(fit.PeakX)) + " a second."
	best, last := 0.0, result.Row{}
	for _, r := range rows {
		best = math.Max(best, r.OKPerSec)
		if r.Clients > last.Clients {
			last = r
		}
	}
	if float64(last.Clients) > peak && last.OKPerSec >= 0.95*best {
		s += " The measured throughput does not fall past it: " + strconv.Itoa(last.Clients) + " clients got " + numText(last.OKPerSec) +
			" a second, within 5% of the most measured, so that peak is the fit's, not the service's."
	}
	return s
}

// tableScaleChart is a recorded closed-loop table's scalability chart
// (scalabilityChart), for a lab block with a window per client count;
// false for any other table.
func tableScaleChart(t *lessons.Table) (chart.Chart, bool) {
	if t.Lab == nil || len(t.Lab.Clients) < 2 || t.TimeTable() {
		return chart.Chart{}, false
	}
	var rows []result.Row
	for i, cells := range t.Rows {
		r := rowOfCells(t.Columns, cells)
		r.Window = i
		rows = append(rows, r)
	}
	q := runner.Request{Preset: recorder.Preset(t.Lab)}
	if !scalable(q, rows) {
		return chart.Chart{}, false
	}
	c, _ := scalabilityChart(q, rows, t.ID+"-scale")
	c.Title = "The recorded throughput against clients, with the Universal Scalability Law"
	return c, true
}
