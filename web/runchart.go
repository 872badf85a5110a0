package web

import (
	"math"
	"strconv"
	"strings"

	"capacitylab/chart"
	"capacitylab/model"
	"capacitylab/result"
	"capacitylab/runner"
)

// prediction is what the model says at one offered rate (model.Lab.At):
// throughput from the two ceilings, latency from the M/M/c queue; with a
// client of fixed workers (MaxInFlight), throughput, client busy and
// latency from the M/M/c/K queue behind them. The latencies are null where
// the queue has no steady state or the lab does no work per request.
type prediction struct {
	Offered  float64  `json:"offered"`
	OKPerSec float64  `json:"ok_per_sec"`
	P50MS    *float64 `json:"p50_ms"`
	P99MS    *float64 `json:"p99_ms"`
	// ClientBusyPerSec is the arrivals a second the client's workers turn
	// away (only with MaxInFlight).
	ClientBusyPerSec float64 `json:"client_busy_per_sec,omitempty"`
}

// labOf is the lab a request measures, and the client in front of it, as
// the models see them.
func labOf(q runner.Request) model.Lab {
	return model.Lab{Workers: float64(q.Workers), CPUs: float64(q.CPUs), SpinMS: float64(q.SpinMS), WaitMS: float64(q.WaitMS),
		ClientWorkers: float64(q.MaxInFlight)}
}

// predictAt applies the models to one offered rate.
func predictAt(q runner.Request, offered float64) prediction {
	pt := labOf(q).At(offered)
	p := prediction{Offered: offered, OKPerSec: pt.OKPerSec, ClientBusyPerSec: pt.ClientBusyPerSec}
	if !math.IsNaN(pt.P50MS) {
		p.P50MS = &pt.P50MS
	}
	if !math.IsNaN(pt.P99MS) {
		p.P99MS = &pt.P99MS
	}
	return p
}

// predict gives the model's prediction at every window's offered rate: the
// requested rates (open loop), or the measured offered rate of each row
// (closed loop, where the rate is an outcome).
func predict(q runner.Request, rows []result.Row) []prediction {
	var rates []float64
	if q.Mode == runner.ModeClosed {
		for _, r := range rows {
			rates = append(rates, r.Offered)
		}
	} else {
		rates = q.Rates
	}
	out := make([]prediction, 0, len(rates))
	for _, r := range rates {
		out = append(out, predictAt(q, r))
	}
	return out
}

// numText writes a measured or modelled number as the run's table does
// (one decimal at most, as recorder.RowCells), so a chart's stops, marks
// and description read the figures the table beside them shows; "—" for
// NaN.
func numText(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmtNum(math.Round(v*10) / 10)
}

// windowName is a window as people count it: from 1.
func windowName(w int) string { return "Window " + strconv.Itoa(w+1) }

// runChart draws a run's rows against offered rate: ok a second (with the
// two-ceilings model and the "everything answered" diagonal), then p50 and
// p99 latency (with the M/M/c model's p50 and p99); with a client of fixed
// workers, both models are the M/M/c/K queue behind them. Each quantity has one
// colour: measured solid with points, the model dashed across the whole
// range. Each window is a stop showing its numbers beside the model's.
func runChart(q runner.Request, rows []result.Row, preds []prediction, id string) chart.Chart {
	xMax := 0.0
	for _, r := range q.Rates {
		xMax = math.Max(xMax, r)
	}
	for _, r := range rows {
		xMax = math.Max(xMax, r.Offered)
	}
	xMax, _ = chart.Axis(xMax*1.05, 5)
	lab := labOf(q)
	c := lab.Ceilings()
	ceiling := math.Min(xMax, float64(c.Ceiling))

	var rx, rok, rp50, rp99 []float64
	yOK, yLat := ceiling, 0.0
	for _, r := range rows {
		rx = append(rx, r.Offered)
		rok = append(rok, r.OKPerSec)
		rp50 = append(rp50, r.P50MS)
		rp99 = append(rp99, r.P99MS)
		yOK = math.Max(yOK, r.OKPerSec)
		yLat = math.Max(yLat, r.P99MS)
	}
	// The latency axis is the measurements' (the model's p99 near its
	// capacity would flatten them; its dashed line leaves at the top). With
	// no rows yet, it is the model's at the first window. Behind client
	// workers the model's p99 is bounded (no request waits for more than
	// the client's workers ahead of it), so the axis also takes it in.
	if yLat == 0 && len(preds) > 0 && preds[0].P99MS != nil {
		yLat = 2 * *preds[0].P99MS
	}
	if yLat == 0 {
		yLat = float64(q.SpinMS+q.WaitMS) * 3
	}
	var mx, mok, m50, m99 []float64
	for _, pt := range lab.Curve(xMax) {
		mx = append(mx, pt.Offered)
		mok = append(mok, pt.OKPerSec)
		m50 = append(m50, pt.P50MS)
		m99 = append(m99, pt.P99MS)
		if q.MaxInFlight > 0 && !math.IsNaN(pt.P99MS) {
			yLat = math.Max(yLat, pt.P99MS)
		}
	}
	okModel := chart.Series{Name: "ok/s, model (two ceilings)", Quantity: "ok", Style: chart.Model, X: []float64{0, ceiling, xMax}, Y: []float64{0, ceiling, ceiling}}
	queueName := "M/M/c"
	if q.MaxInFlight > 0 {
		queueName = "M/M/c/K, K = " + strconv.Itoa(q.MaxInFlight)
		okModel = chart.Series{Name: "ok/s, model (" + queueName + ")", Quantity: "ok", Style: chart.Model, X: mx, Y: mok}
	}

	throughput := chart.Panel{Title: "Throughput: ok answers a second", YMax: yOK * 1.05, Series: []chart.Series{
		{Name: "all answered", Quantity: "muted", Style: chart.Guide, X: []float64{0, xMax}, Y: []float64{0, xMax}},
		okModel,
		{Name: "ok/s, measured", Quantity: "ok", Style: chart.Measured, X: rx, Y: rok},
	}}
	latency := chart.Panel{Title: "Latency of ok answers, ms", YMax: yLat * 1.1, Series: []chart.Series{
		{Name: "p50, model (" + queueName + ")", Quantity: "p50", Style: chart.Model, X: mx, Y: m50},
		{Name: "p99, model (" + queueName + ")", Quantity: "p99", Style: chart.Model, X: mx, Y: m99},
		{Name: "p50, measured", Quantity: "p50", Style: chart.Measured, X: rx, Y: rp50},
		{Name: "p99, measured", Quantity: "p99", Style: chart.Measured, X: rx, Y: rp99},
	}}
	table := chart.Table{Caption: "Each window's measurements beside the model's prediction",
		Head: []string{"window", "offered /s", "ok /s", "model ok /s", "p50 ms", "model p50 ms", "p99 ms", "model p99 ms"}}
	for i := 0; i < max(len(rows), len(preds)); i++ {
		var p prediction
		if i < len(preds) {
			p = preds[i]
		}
		var r *result.Row
		if i < len(rows) {
			r = &rows[i]
		}
		offered, measured := p.Offered, []string{"not yet", "not yet", "not yet"}
		if r != nil {
			offered = r.Offered
			measured = []string{numText(r.OKPerSec), numText(r.P50MS), numText(r.P99MS)}
			head := windowName(r.Window) + ": offered " + numText(r.Offered) + " a second"
			lines := []string{head, "ok " + numText(r.OKPerSec) + "/s (model " + numText(p.OKPerSec) + ")"}
			if q.MaxInFlight > 0 && r.Seconds > 0 {
				lines = append(lines, "client busy "+numText(float64(r.ClientBusy)/r.Seconds)+"/s (model "+numText(p.ClientBusyPerSec)+")")
			}
			throughput.Stops = append(throughput.Stops, chart.Stop{X: r.Offered, Focus: true, Lines: lines})
			latency.Stops = append(latency.Stops, chart.Stop{X: r.Offered, Focus: true, Lines: []string{
				head, "p50 " + numText(r.P50MS) + " ms (model " + modelMS(p.P50MS) + ")", "p99 " + numText(r.P99MS) + " ms (model " + modelMS(p.P99MS) + ")"}})
		}
		table.Rows = append(table.Rows, []string{strconv.Itoa(i + 1), numText(offered), measured[0], numText(p.OKPerSec),
			measured[1], modelMS(p.P50MS), measured[2], modelMS(p.P99MS)})
	}
	desc := strconv.Itoa(len(rows)) + " measured windows. The two-ceilings model says at most " + model.Format(float64(c.Ceiling)) +
		" answers a second (" + c.Binds + " bind)." + clientText(q, lab, xMax)
	desc += changesNote(q) + " The numbers are in the table under the chart."
	return chart.Chart{ID: id, Title: "Measured against the model", Desc: desc, XTitle: "Offered load, requests a second", XMax: xMax,
		Panels: []chart.Panel{throughput, latency}, Table: table}
}

// clientText says what a client of fixed workers does to the model, in a
// sentence for the chart's description ("" with no limit): the most its
// workers can send if nothing waited, and what the M/M/c/K model says
// gets through at the right edge of the chart.
func clientText(q runner.Request, lab model.Lab, xMax float64) string {
	if q.MaxInFlight <= 0 {
		return ""
	}
	w := strconv.Itoa(q.MaxInFlight)
	s := " A client of " + counted(q.MaxInFlight, "worker", "workers") + " sends at most " + model.Format(lab.ClientCeiling()) +
		" a second, if no request ever waited"
	if math.IsInf(lab.ClientCeiling(), 1) {
		s = " A client of " + counted(q.MaxInFlight, "worker", "workers") + " is never busy when a request takes no time"
	}
	at := lab.At(xMax)
	return s + "; offered " + model.Format(xMax) + " a second, the model (M/M/c/K, K = " + w + ") has " + model.Format(at.OKPerSec) +
		" answered and " + model.Format(at.ClientBusyPerSec) + " turned away as client busy."
}

// modelMS is a modelled latency, or "no steady state".
func modelMS(p *float64) string {
	if p == nil {
		return "no steady state"
	}
	return numText(*p)
}

// compareChart draws the compared runs on the same axes, one panel each
// for ok a second, p50 and p99: run A in blue with round points, run B in
// orange with square ones, run C in green with diamonds. Each offered
// rate is a stop with every run's numbers.
func compareChart(runs []compareRun, rows []compareRow, id string) chart.Chart {
	xMax := 0.0
	for _, cr := range runs {
		for _, r := range cr.View.Request.Rates {
			xMax = math.Max(xMax, r)
		}
		for _, r := range cr.View.Rows {
			xMax = math.Max(xMax, r.Offered)
		}
	}
	xMax, _ = chart.Axis(xMax*1.05, 5)
	panels := []chart.Panel{{Title: "Throughput: ok answers a second"}, {Title: "p50 latency of ok answers, ms"}, {Title: "p99 latency of ok answers, ms"}}
	get := []func(result.Row) float64{
		func(r result.Row) float64 { return r.OKPerSec },
		func(r result.Row) float64 { return r.P50MS },
		func(r result.Row) float64 { return r.P99MS },
	}
	unit := []string{"/s", " ms", " ms"}
	for _, cr := range runs {
		for k := range panels {
			var xs, ys []float64
			for _, r := range cr.View.Rows {
				xs = append(xs, r.Offered)
				ys = append(ys, get[k](r))
			}
			panels[k].Series = append(panels[k].Series, chart.Series{Name: "run " + cr.Letter, Quantity: cr.Quantity, Style: chart.Measured, Marker: cr.Marker, X: xs, Y: ys})
		}
	}
	cell := func(r *result.Row, k int) string {
		if r == nil {
			return "—"
		}
		return numText(get[k](*r)) + unit[k]
	}
	for _, r := range rows {
		for k := range panels {
			var parts []string
			for j, cr := range runs {
				parts = append(parts, cr.Letter+" "+cell(r.Runs[j], k))
			}
			panels[k].Stops = append(panels[k].Stops, chart.Stop{X: r.Offered, Focus: true, Lines: []string{
				"Offered " + numText(r.Offered) + " a second", strings.Join(parts, " · ")}})
		}
	}
	var names []string
	for _, cr := range runs {
		names = append(names, "run "+cr.Letter+" ("+strconv.Itoa(len(cr.View.Rows))+" windows)")
	}
	desc := strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] +
		": ok answers a second, p50 and p99 latency against offered rate. The table below the chart has every number."
	title := "Run A against run B"
	if len(runs) == 3 {
		title = "Runs A, B and C"
	}
	return chart.Chart{ID: id, Title: title, Desc: desc, XTitle: "Offered load, requests a second", XMax: xMax, Panels: panels}
}

// distribution is the latency distribution of one window's ok answers,
// from its raw records, with the other outcomes counted.
type distribution struct {
	Window                     int
	OK, Refused, Gaveup, Error int
	NotSent                    int       // due but not sent, for whatever reason (ClientBusy included)
	ClientBusy                 int       // of NotSent: found every client worker busy (result.ReasonClientBusy)
	LatMS                      []float64 // ok latencies, sorted
}

// add counts one record.
func (d *distribution) add(r result.Record) {
	switch r.Outcome {
	case result.OK:
		d.OK++
		d.LatMS = append(d.LatMS, float64(r.Latency().Microseconds())/1000)
	case result.Refused:
		d.Refused++
	case result.Gaveup:
		d.Gaveup++
	case result.Error:
		d.Error++
	case result.NotSent:
		d.NotSent++
		if r.Reason == result.ReasonClientBusy {
			d.ClientBusy++
		}
	}
}

// nearestRank is the p-th percentile (0 < p ≤ 1) of sorted values by
// nearest rank, as loadrun's rows compute it.
func nearestRank(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// maxBins bounds the histogram's bins.
const maxBins = 40

// distributionChart draws a window's ok latencies as a histogram, with its
// p50 and p99 marked. Bins are a round width; when the longest answer is
// far beyond the p99 (more than three times), the axis stops at twice the
// p99 and the note counts the answers past it.
func distributionChart(d distribution, id string) chart.Chart {
	n := len(d.LatMS)
	p50, p99 := nearestRank(d.LatMS, 0.5), nearestRank(d.LatMS, 0.99)
	longest := 0.0
	if n > 0 {
		longest = d.LatMS[n-1]
	}
	upper := longest
	if p99 > 0 && longest > 3*p99 {
		upper = 2 * p99
	}
	width := chart.NiceCeil(math.Max(upper, 0.001) / maxBins)
	bins := max(1, int(math.Ceil(upper/width*(1-1e-12))))
	counts := make([]float64, bins)
	over := 0
	for _, v := range d.LatMS {
		i := int(v / width)
		if v > upper && upper < longest {
			over++
			continue
		}
		counts[min(i, bins-1)]++
	}
	xs := make([]float64, bins)
	for i := range xs {
		xs[i] = float64(i) * width
	}
	panel := chart.Panel{Title: "ok answers per " + model.Format(width) + " ms of latency", Series: []chart.Series{
		{Name: "answers in the bin", Quantity: "count", Style: chart.Histogram, X: xs, Y: counts, Width: width},
	}}
	table := chart.Table{Caption: windowName(d.Window) + ": ok answers by latency", Head: []string{"latency ms", "answers", "share", "at or below"}}
	cum := 0
	share := func(k int) string {
		if n == 0 {
			return "—"
		}
		return model.Format(100*float64(k)/float64(n)) + "%"
	}
	for i, c := range counts {
		cum += int(c)
		span := model.Format(xs[i]) + "–" + model.Format(xs[i]+width)
		table.Rows = append(table.Rows, []string{span, strconv.Itoa(int(c)), share(int(c)), share(cum)})
		if c > 0 {
			panel.Stops = append(panel.Stops, chart.Stop{X: xs[i] + width/2, Lines: []string{span + " ms", strconv.Itoa(int(c)) + " answers (" + share(int(c)) + ")"}})
		}
	}
	if over > 0 {
		table.Rows = append(table.Rows, []string{"over " + model.Format(upper), strconv.Itoa(over), share(over), share(n)})
		panel.Note = strconv.Itoa(over) + " past " + model.Format(upper) + " ms (longest " + model.Format(longest) + " ms)"
	}
	if n > 0 {
		panel.Marks = []chart.Mark{
			{X: p50, Label: "p50 " + numText(p50) + " ms", Quantity: "p50", Solid: true},
			{X: p99, Label: "p99 " + numText(p99) + " ms", Quantity: "p99", Solid: true},
		}
		// The percentiles are the stops a keyboard reaches; the bins are
		// in the table.
		panel.Stops = append(panel.Stops,
			chart.Stop{X: p50, Focus: true, Lines: []string{"p50: " + numText(p50) + " ms", "half the ok answers took this long or less"}},
			chart.Stop{X: p99, Focus: true, Lines: []string{"p99: " + numText(p99) + " ms", "99 in 100 took this long or less"}})
		sortStops(panel.Stops)
	}
	desc := windowName(d.Window) + ": " + strconv.Itoa(n) + " ok answers, p50 " + numText(p50) + " ms, p99 " + numText(p99) +
		" ms, longest " + numText(longest) + " ms. " + outcomesText(d) + " The table under the chart has every bin."
	return chart.Chart{ID: id, Title: "Latency of the ok answers in " + lowerFirst(windowName(d.Window)), Desc: desc,
		XTitle: "Latency from the intended send time, ms", XMax: float64(bins) * width, Panels: []chart.Panel{panel}, Table: table,
		Legend: []chart.Series{}}
}

// sortStops orders stops by x (the chart needs them in order).
func sortStops(s []chart.Stop) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].X < s[j-1].X; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// outcomesText counts a window's requests by outcome, in words.
func outcomesText(d distribution) string {
	s := "Of " + strconv.Itoa(d.OK+d.Refused+d.Gaveup+d.Error) + " requests sent, " + strconv.Itoa(d.OK) + " were answered ok"
	for _, o := range []struct {
		n    int
		what string
	}{{d.Refused, "refused"}, {d.Gaveup, "given up on by the caller"}, {d.Error, "errors"}} {
		if o.n > 0 {
			s += ", " + strconv.Itoa(o.n) + " " + o.what
		}
	}
	s += "."
	if busy := d.ClientBusy; busy > 0 {
		s += " " + strconv.Itoa(busy) + " " + wasWere(busy) + " due when every client worker was busy, so the client did not send " + itThem(busy) + "."
	}
	if other := d.NotSent - d.ClientBusy; other > 0 {
		s += " " + strconv.Itoa(other) + " " + wasWere(other) + " due but not sent."
	}
	return s
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

func itThem(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]|0x20) + s[1:]
}
