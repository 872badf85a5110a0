package web

import (
	"html"
	"math"
	"strconv"
	"strings"

	"capacitylab/loadrun"
	"capacitylab/model"
	"capacitylab/runner"
)

// prediction is what the model says at one offered rate: throughput from
// the two ceilings (model.TwoCeilings: min(offered, ceiling)), latency from
// the M/M/c queue (model.QueueCurve). Latencies are null where the queue
// has no steady state (offered at or above the ceiling) or the lab does no
// work per request.
type prediction struct {
	Offered  float64  `json:"offered"`
	OKPerSec float64  `json:"ok_per_sec"`
	P50MS    *float64 `json:"p50_ms"`
	P99MS    *float64 `json:"p99_ms"`
}

// predictAt applies the models to one offered rate. Which queue: when the
// processors bind (cpus ÷ spin below workers ÷ (spin + wait)) the servers
// are the CPUs with the spin as service time, and every request then also
// waits WAIT_MS; otherwise the servers are the workers, each holding a
// request for spin + wait.
func predictAt(q runner.Request, offered float64) prediction {
	c := model.TwoCeilings(float64(q.Workers), float64(q.CPUs), float64(q.SpinMS), float64(q.WaitMS))
	p := prediction{Offered: offered, OKPerSec: math.Min(offered, float64(c.Ceiling))}
	servers, service, extra, ok := queueOf(q)
	if !ok || offered <= 0 {
		return p
	}
	qc := model.QueueCurve(servers, service, offered)
	if !qc.Stable {
		return p
	}
	p50, p99 := float64(qc.At.P50ResponseMS)+extra, float64(qc.At.P99ResponseMS)+extra
	if !math.IsNaN(p50) && !math.IsInf(p50, 0) {
		p.P50MS = &p50
	}
	if !math.IsNaN(p99) && !math.IsInf(p99, 0) {
		p.P99MS = &p99
	}
	return p
}

// queueOf says which M/M/c queue models the lab (see predictAt): its
// servers, service time and the wait every request adds outside it. ok is
// false when a request does no work, so there is no queue.
func queueOf(q runner.Request) (servers, serviceMS, extraMS float64, ok bool) {
	c := model.TwoCeilings(float64(q.Workers), float64(q.CPUs), float64(q.SpinMS), float64(q.WaitMS))
	servers, serviceMS = float64(q.Workers), float64(q.SpinMS+q.WaitMS)
	if c.Binds == model.BindsProcessor {
		servers, serviceMS, extraMS = float64(q.CPUs), float64(q.SpinMS), float64(q.WaitMS)
	}
	return servers, serviceMS, extraMS, serviceMS > 0 && servers >= 1
}

// predict gives the model's prediction at every window's offered rate: the
// requested rates (open loop), or the measured offered rate of each row
// (closed loop, where the rate is an outcome).
func predict(q runner.Request, rows []loadrun.Row) []prediction {
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

// Chart geometry, in SVG user units.
const (
	chartW, chartPanelH                          = 640, 250
	chartLeft, chartRight, chartTop, chartBottom = 64, 150, 30, 44
)

// fmtCoord writes a coordinate with one decimal, so output is stable.
func fmtCoord(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// niceTop rounds v up to a round number: 1, 1.2, 1.6, 2, 2.4, 3, 4, 6
// or 8 × 10^k (each divides into four labelled ticks).
func niceTop(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.6, 2, 2.4, 3, 4, 6, 8, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// panel maps data onto one panel of the chart.
type panel struct {
	top        float64 // y of the panel's top edge in the whole SVG
	xMax, yMax float64
}

func (p panel) x(v float64) float64 {
	return chartLeft + v/p.xMax*(chartW-chartLeft-chartRight)
}

func (p panel) y(v float64) float64 {
	h := float64(chartPanelH - chartTop - chartBottom)
	return p.top + chartTop + h - math.Min(v, p.yMax)/p.yMax*h
}

// axes draws a panel's frame, ticks and labels; the title names the
// y axis.
func (p panel) axes(b *strings.Builder, title string) {
	x0, x1 := float64(chartLeft), float64(chartW-chartRight)
	y0, y1 := p.y(0), p.y(p.yMax)
	b.WriteString(`<text x="` + fmtCoord(x0) + `" y="` + fmtCoord(p.top+18) + `" font-weight="bold">` + html.EscapeString(title) + `</text>`)
	b.WriteString(`<path d="M` + fmtCoord(x0) + ` ` + fmtCoord(y1) + `V` + fmtCoord(y0) + `H` + fmtCoord(x1) + `" fill="none" stroke="currentColor"/>`)
	for i := 0; i <= 4; i++ {
		xv, yv := p.xMax*float64(i)/4, p.yMax*float64(i)/4
		b.WriteString(`<text x="` + fmtCoord(p.x(xv)) + `" y="` + fmtCoord(y0+16) + `" text-anchor="middle" font-size="11">` + fmtNum(math.Round(xv*10)/10) + `</text>`)
		b.WriteString(`<text x="` + fmtCoord(x0-6) + `" y="` + fmtCoord(p.y(yv)+4) + `" text-anchor="end" font-size="11">` + fmtNum(math.Round(yv*10)/10) + `</text>`)
		if i > 0 {
			b.WriteString(`<path d="M` + fmtCoord(x0) + ` ` + fmtCoord(p.y(yv)) + `H` + fmtCoord(x1) + `" stroke="currentColor" stroke-opacity="0.12"/>`)
		}
	}
	b.WriteString(`<text x="` + fmtCoord((x0+x1)/2) + `" y="` + fmtCoord(y0+34) + `" text-anchor="middle" font-size="12">offered, requests a second</text>`)
}

// line draws a polyline through points (skipping NaN), solid or dashed.
func (p panel) line(b *strings.Builder, xs, ys []float64, color string, dashed bool, class string) {
	var d strings.Builder
	pen := false
	for i := range xs {
		if math.IsNaN(ys[i]) {
			pen = false
			continue
		}
		if pen {
			d.WriteString("L")
		} else {
			d.WriteString("M")
		}
		d.WriteString(fmtCoord(p.x(xs[i])) + " " + fmtCoord(p.y(ys[i])))
		pen = true
	}
	if d.Len() == 0 {
		return
	}
	dash := ""
	if dashed {
		dash = ` stroke-dasharray="6 4"`
	}
	b.WriteString(`<path class="` + class + `" d="` + d.String() + `" fill="none" stroke="` + color + `" stroke-width="2"` + dash + `/>`)
}

// dots marks measured points: circles, or squares when square is set.
func (p panel) dots(b *strings.Builder, xs, ys []float64, color string, square bool, class string) {
	for i := range xs {
		x, y := p.x(xs[i]), p.y(ys[i])
		if square {
			b.WriteString(`<rect class="` + class + `" x="` + fmtCoord(x-4) + `" y="` + fmtCoord(y-4) + `" width="8" height="8" fill="` + color + `"/>`)
		} else {
			b.WriteString(`<circle class="` + class + `" cx="` + fmtCoord(x) + `" cy="` + fmtCoord(y) + `" r="4" fill="` + color + `"/>`)
		}
	}
}

// legend writes one legend entry at row i of a panel.
func (p panel) legend(b *strings.Builder, i int, color string, dashed bool, text string) {
	x := float64(chartW - chartRight + 12)
	y := p.top + chartTop + 8 + float64(i)*18
	dash := ""
	if dashed {
		dash = ` stroke-dasharray="6 4"`
	}
	b.WriteString(`<path d="M` + fmtCoord(x) + ` ` + fmtCoord(y) + `h22" stroke="` + color + `" stroke-width="2"` + dash + `/>`)
	b.WriteString(`<text x="` + fmtCoord(x+28) + `" y="` + fmtCoord(y+4) + `" font-size="11">` + html.EscapeString(text) + `</text>`)
}

// Chart colours: measured in the text colour, p99 and the model in two
// colours that read on light and dark backgrounds.
const (
	colMeasured = "currentColor"
	colP99      = "#d95f02"
	colModel    = "#1b9e77"
)

// runChartSVG draws a run's rows against offered rate: ok a second (with
// the two-ceilings model and the "everything answered" diagonal), then p50
// and p99 latency (with the M/M/c model's p50 and p99). The model is drawn
// as dashed lines across the whole range, the measurements as points
// joined by solid lines. id prefixes the ids the title and description
// use. Output depends only on its arguments.
func runChartSVG(q runner.Request, rows []loadrun.Row, preds []prediction, id string) string {
	xMax := 0.0
	for _, r := range q.Rates {
		xMax = math.Max(xMax, r)
	}
	for _, r := range rows {
		xMax = math.Max(xMax, r.Offered)
	}
	xMax = niceTop(xMax * 1.05)

	// The throughput model across the range: offered up to the ceiling,
	// then flat.
	c := model.TwoCeilings(float64(q.Workers), float64(q.CPUs), float64(q.SpinMS), float64(q.WaitMS))
	okX := []float64{0, math.Min(xMax, float64(c.Ceiling)), xMax}
	okY := []float64{0, okX[1], math.Min(xMax, float64(c.Ceiling))}
	// The latency model: the queue's own curve, from no load to 95% of
	// its capacity (one model.QueueCurve call; its points are exact).
	var xs, modelP50, modelP99 []float64
	if servers, service, extra, ok := queueOf(q); ok {
		for _, pt := range model.QueueCurve(servers, service, 0).Curve {
			if float64(pt.Arrivals) > xMax {
				break
			}
			xs = append(xs, float64(pt.Arrivals))
			modelP50 = append(modelP50, float64(pt.P50ResponseMS)+extra)
			modelP99 = append(modelP99, float64(pt.P99ResponseMS)+extra)
		}
	}
	var rx, rok, rp50, rp99 []float64
	yOK, yLat := 0.0, 0.0
	for _, r := range rows {
		rx = append(rx, r.Offered)
		rok = append(rok, r.OKPerSec)
		rp50 = append(rp50, r.P50MS)
		rp99 = append(rp99, r.P99MS)
		yOK = math.Max(yOK, r.OKPerSec)
		yLat = math.Max(yLat, r.P99MS)
	}
	for _, p := range preds {
		if p.P99MS != nil {
			yLat = math.Max(yLat, *p.P99MS)
		}
	}
	if yLat == 0 {
		yLat = float64(q.SpinMS+q.WaitMS) * 3
	}
	// The model's latency grows without bound near the ceiling: the axis
	// stops at the highest point the run or the model at its rates reach,
	// and the model's curve stops where it leaves the chart.
	yLat = niceTop(yLat * 1.05)
	for i := range modelP99 {
		if modelP99[i] > yLat {
			modelP99[i] = math.NaN()
		}
		if modelP50[i] > yLat {
			modelP50[i] = math.NaN()
		}
	}

	top := panel{top: 0, xMax: xMax, yMax: math.Max(xMax, niceTop(yOK*1.05))}
	bot := panel{top: chartPanelH, xMax: xMax, yMax: yLat}
	var b strings.Builder
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ` + strconv.Itoa(chartW) + ` ` + strconv.Itoa(2*chartPanelH) +
		`" role="img" aria-labelledby="` + id + `-title ` + id + `-desc" font-family="system-ui, sans-serif" fill="currentColor" data-rows="` + strconv.Itoa(len(rows)) + `">`)
	b.WriteString(`<title id="` + id + `-title">Measured against the model</title>`)
	desc := strconv.Itoa(len(rows)) + " measured windows. The two-ceilings model says at most " + model.Format(float64(c.Ceiling)) +
		" answers a second (" + c.Binds + " bind). The table below has every number."
	b.WriteString(`<desc id="` + id + `-desc">` + html.EscapeString(desc) + `</desc>`)

	top.axes(&b, "Throughput: ok answers a second")
	b.WriteString(`<path d="M` + fmtCoord(top.x(0)) + ` ` + fmtCoord(top.y(0)) + `L` + fmtCoord(top.x(xMax)) + ` ` + fmtCoord(top.y(xMax)) + `" stroke="currentColor" stroke-opacity="0.25"/>`)
	top.line(&b, okX, okY, colModel, true, "chart-model-ok")
	top.line(&b, rx, rok, colMeasured, false, "chart-ok")
	top.dots(&b, rx, rok, colMeasured, false, "chart-ok-point")
	top.legend(&b, 0, colMeasured, false, "measured ok/s")
	top.legend(&b, 1, colModel, true, "two ceilings")

	bot.axes(&b, "Latency of ok answers, ms")
	bot.line(&b, xs, modelP50, colModel, true, "chart-model-p50")
	bot.line(&b, xs, modelP99, colP99, true, "chart-model-p99")
	bot.line(&b, rx, rp50, colMeasured, false, "chart-p50")
	bot.line(&b, rx, rp99, colP99, false, "chart-p99")
	bot.dots(&b, rx, rp50, colMeasured, false, "chart-p50-point")
	bot.dots(&b, rx, rp99, colP99, true, "chart-p99-point")
	bot.legend(&b, 0, colMeasured, false, "measured p50")
	bot.legend(&b, 1, colP99, false, "measured p99")
	bot.legend(&b, 2, colModel, true, "M/M/c p50")
	bot.legend(&b, 3, colP99, true, "M/M/c p99")
	b.WriteString(`</svg>`)
	return b.String()
}

// compareChartSVG draws two runs on the same axes: ok a second, then p50
// (dashed) and p99 (solid) latency, run A in the text colour with round
// marks and run B in orange with square marks. The table beside it has
// every number.
func compareChartSVG(a, b runView, id string) string {
	xMax, yOK, yLat := 0.0, 0.0, 0.0
	for _, v := range []runView{a, b} {
		for _, r := range v.Request.Rates {
			xMax = math.Max(xMax, r)
		}
		for _, r := range v.Rows {
			xMax = math.Max(xMax, r.Offered)
			yOK = math.Max(yOK, r.OKPerSec)
			yLat = math.Max(yLat, r.P99MS)
		}
	}
	xMax = niceTop(xMax * 1.05)
	top := panel{top: 0, xMax: xMax, yMax: math.Max(xMax, niceTop(yOK*1.05))}
	bot := panel{top: chartPanelH, xMax: xMax, yMax: niceTop(math.Max(yLat, 1) * 1.05)}

	var sb strings.Builder
	sb.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ` + strconv.Itoa(chartW) + ` ` + strconv.Itoa(2*chartPanelH) +
		`" role="img" aria-labelledby="` + id + `-title ` + id + `-desc" font-family="system-ui, sans-serif" fill="currentColor">`)
	sb.WriteString(`<title id="` + id + `-title">Run A against run B</title>`)
	sb.WriteString(`<desc id="` + id + `-desc">` + html.EscapeString("Run A ("+strconv.Itoa(len(a.Rows))+" windows) and run B ("+
		strconv.Itoa(len(b.Rows))+" windows): ok answers a second and latency against offered rate. The table has every number.") + `</desc>`)
	top.axes(&sb, "Throughput: ok answers a second")
	sb.WriteString(`<path d="M` + fmtCoord(top.x(0)) + ` ` + fmtCoord(top.y(0)) + `L` + fmtCoord(top.x(xMax)) + ` ` + fmtCoord(top.y(xMax)) + `" stroke="currentColor" stroke-opacity="0.25"/>`)
	bot.axes(&sb, "Latency of ok answers, ms")
	for i, v := range []runView{a, b} {
		color, square, name := colMeasured, false, "A"
		if i == 1 {
			color, square, name = colP99, true, "B"
		}
		var xs, ok, p50, p99 []float64
		for _, r := range v.Rows {
			xs = append(xs, r.Offered)
			ok = append(ok, r.OKPerSec)
			p50 = append(p50, r.P50MS)
			p99 = append(p99, r.P99MS)
		}
		cls := "compare-" + strings.ToLower(name)
		top.line(&sb, xs, ok, color, false, cls+"-ok")
		top.dots(&sb, xs, ok, color, square, cls+"-ok-point")
		bot.line(&sb, xs, p50, color, true, cls+"-p50")
		bot.line(&sb, xs, p99, color, false, cls+"-p99")
		bot.dots(&sb, xs, p99, color, square, cls+"-p99-point")
		top.legend(&sb, i, color, false, "run "+name+" ok/s")
		bot.legend(&sb, 2*i, color, false, "run "+name+" p99")
		bot.legend(&sb, 2*i+1, color, true, "run "+name+" p50")
	}
	sb.WriteString(`</svg>`)
	return sb.String()
}
