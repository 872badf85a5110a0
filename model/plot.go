package model

import (
	"html"
	"math"
	"strconv"
	"strings"
)

// Plot geometry, in SVG user units (the SVG scales to its container).
const (
	plotW, plotH                         = 640, 320
	padLeft, padRight, padTop, padBottom = 64, 24, 60, 52
)

// n writes a coordinate with one decimal, so output is byte-for-byte stable.
func n(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// esc escapes text for SVG content and attribute values.
func esc(s string) string { return html.EscapeString(s) }

// niceStep returns a step of 1, 2 or 5 × 10^k that cuts span into about
// `want` parts.
func niceStep(span float64, want int) float64 {
	if !(span > 0) {
		return 1
	}
	raw := span / float64(want)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// axis maps a data range onto pixels.
type axis struct{ d0, d1, p0, p1 float64 }

func (a axis) at(v float64) float64 { return a.p0 + (v-a.d0)/(a.d1-a.d0)*(a.p1-a.p0) }

// QueueCurveSVG draws the queue curve as a self-contained, accessible SVG:
// mean response time (solid) and p99 (dashed), in ms, against offered load
// per second from 0 to 95% of capacity; dashed verticals where utilisation
// passes 0.7 and 0.9; a dot at the knee; and the learner's load, or a note
// that it has no steady state. id prefixes the element ids the title and
// description use (aria-labelledby), so give each plot on a page its own.
// Colours come from currentColor and classes (qc-mean, qc-p99, qc-mark,
// qc-knee, qc-now) a stylesheet may restyle. Output depends only on q and
// id.
func QueueCurveSVG(q Queue, id string) string {
	capacity := float64(q.Capacity)
	maxY := 0.0
	for _, p := range q.Curve {
		maxY = math.Max(maxY, float64(p.P99ResponseMS))
	}
	yStep := niceStep(maxY, 5)
	yTop := math.Ceil(maxY/yStep) * yStep
	xs := axis{0, capacity, padLeft, plotW - padRight}
	ys := axis{0, yTop, plotH - padBottom, padTop}

	var b strings.Builder
	w := func(parts ...string) {
		for _, s := range parts {
			b.WriteString(s)
		}
	}
	tid, did := esc(id+"-title"), esc(id+"-desc")
	w(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 `, strconv.Itoa(plotW), " ", strconv.Itoa(plotH),
		`" role="img" aria-labelledby="`, tid, " ", did, `" class="plot queue-curve" font-size="12" font-family="sans-serif">`, "\n")
	w(`<title id="`, tid, `">Queue curve: response time against offered load</title>`, "\n")
	w(`<desc id="`, did, `">`, esc(queueDesc(q)), `</desc>`, "\n")

	// Grid and axes.
	w(`<g class="qc-axes" stroke="currentColor" stroke-opacity="0.25" fill="currentColor">`, "\n")
	for i := 0; float64(i)*yStep <= yTop*(1+1e-9); i++ {
		v := float64(i) * yStep
		y := n(ys.at(v))
		w(`<line x1="`, n(xs.p0), `" x2="`, n(xs.p1), `" y1="`, y, `" y2="`, y, `"/>`)
		w(`<text x="`, n(xs.p0-6), `" y="`, y, `" dy="4" text-anchor="end" stroke="none">`, Format(v), `</text>`, "\n")
	}
	xStep := niceStep(capacity, 6)
	for i := 0; float64(i)*xStep <= capacity*(1+1e-9); i++ {
		v := float64(i) * xStep
		x := n(xs.at(v))
		w(`<line x1="`, x, `" x2="`, x, `" y1="`, n(ys.p0), `" y2="`, n(ys.p0+5), `"/>`)
		w(`<text x="`, x, `" y="`, n(ys.p0+18), `" text-anchor="middle" stroke="none">`, Format(v), `</text>`, "\n")
	}
	w(`<line x1="`, n(xs.p0), `" x2="`, n(xs.p1), `" y1="`, n(ys.p0), `" y2="`, n(ys.p0), `" stroke-opacity="1"/>`)
	w(`<line x1="`, n(xs.p0), `" x2="`, n(xs.p0), `" y1="`, n(ys.p0), `" y2="`, n(ys.p1), `" stroke-opacity="1"/>`, "\n")
	w(`<text x="`, n((xs.p0+xs.p1)/2), `" y="`, n(plotH-8), `" text-anchor="middle" stroke="none">offered load (requests a second; capacity `, Format(capacity), `)</text>`, "\n")
	w(`<text transform="translate(14 `, n((ys.p0+ys.p1)/2), `) rotate(-90)" text-anchor="middle" stroke="none">response time (ms)</text>`, "\n")
	w(`</g>`, "\n")

	// Utilisation marks.
	for _, m := range []QueuePoint{q.At70, q.At90} {
		x := n(xs.at(float64(m.Arrivals)))
		w(`<g class="qc-mark" stroke="currentColor" fill="currentColor"><line x1="`, x, `" x2="`, x, `" y1="`, n(ys.p0), `" y2="`, n(ys.p1),
			`" stroke-dasharray="2 4" stroke-opacity="0.6"/><text x="`, x, `" y="`, n(ys.p1-6), `" text-anchor="middle" stroke="none">ρ = `,
			Format(float64(m.Utilisation)), `</text></g>`, "\n")
	}

	// The two curves.
	line := func(get func(QueuePoint) Num) string {
		var d strings.Builder
		for i, p := range q.Curve {
			if i == 0 {
				d.WriteString("M")
			} else {
				d.WriteString(" L")
			}
			d.WriteString(n(xs.at(float64(p.Arrivals))) + " " + n(ys.at(float64(get(p)))))
		}
		return d.String()
	}
	w(`<path class="qc-mean" d="`, line(func(p QueuePoint) Num { return p.MeanResponseMS }), `" fill="none" stroke="currentColor" stroke-width="2"/>`, "\n")
	w(`<path class="qc-p99" d="`, line(func(p QueuePoint) Num { return p.P99ResponseMS }), `" fill="none" stroke="currentColor" stroke-width="1.5" stroke-dasharray="6 4"/>`, "\n")

	// Legend.
	// Legend, in a row above the plot area where no curve can reach it.
	lx, ly := xs.p0, 14.0
	w(`<g class="qc-legend" stroke="currentColor" fill="currentColor">`)
	w(`<line x1="`, n(lx), `" x2="`, n(lx+24), `" y1="`, n(ly), `" y2="`, n(ly), `" stroke-width="2"/><text x="`, n(lx+30), `" y="`, n(ly+4), `" stroke="none">mean</text>`)
	w(`<line x1="`, n(lx+90), `" x2="`, n(lx+114), `" y1="`, n(ly), `" y2="`, n(ly), `" stroke-width="1.5" stroke-dasharray="6 4"/><text x="`, n(lx+120), `" y="`, n(ly+4), `" stroke="none">p99</text>`)
	w(`</g>`, "\n")

	// Knee.
	kx, ky := n(xs.at(float64(q.Knee.Arrivals))), n(ys.at(float64(q.Knee.MeanResponseMS)))
	w(`<g class="qc-knee" stroke="currentColor" fill="currentColor"><circle cx="`, kx, `" cy="`, ky, `" r="4"/><circle cx="`, n(lx+192), `" cy="`, n(ly),
		`" r="4"/><text x="`, n(lx+200), `" y="`, n(ly+4), `" stroke="none">knee at `, Format(float64(q.Knee.Arrivals)), `/s</text></g>`, "\n")

	// The learner's load; a point above the curve's range (a load past
	// 95% of capacity) is pinned to the top edge, and the desc has its value.
	clampY := func(v Num) float64 { return ys.at(math.Min(float64(v), yTop)) }
	if q.Stable {
		x := n(xs.at(float64(q.Arrivals)))
		w(`<g class="qc-now" stroke="currentColor" fill="currentColor"><line x1="`, x, `" x2="`, x, `" y1="`, n(ys.p0), `" y2="`, n(clampY(q.At.P99ResponseMS)),
			`" stroke-width="1"/><circle cx="`, x, `" cy="`, n(clampY(q.At.MeanResponseMS)), `" r="5" fill="none" stroke-width="2"/><circle cx="`, x,
			`" cy="`, n(clampY(q.At.P99ResponseMS)), `" r="3"/><text x="`, x, `" y="`, n(clampY(q.At.P99ResponseMS)-10), `" text-anchor="middle" stroke="none">`,
			Format(float64(q.Arrivals)), `/s</text></g>`, "\n")
	} else {
		w(`<g class="qc-now qc-unstable" fill="currentColor"><text x="`, n(xs.p1), `" y="`, n(ly+18), `" text-anchor="end" font-weight="bold">`,
			Format(float64(q.Arrivals)), `/s is beyond capacity: no steady state</text></g>`, "\n")
	}
	w(`</svg>`, "\n")
	return b.String()
}

// queueDesc is the plot's text alternative: the same facts in words.
func queueDesc(q Queue) string {
	c := Format(float64(q.Servers))
	s := c + " " + plural(c, "server", "servers") + " of " + Format(float64(q.ServiceMS)) + " ms, capacity " + Format(float64(q.Capacity)) +
		" requests a second. Mean response time rises from " + Format(float64(q.Curve[0].MeanResponseMS)) + " ms idle to " +
		Format(float64(q.At70.MeanResponseMS)) + " ms at 70% busy and " + Format(float64(q.At90.MeanResponseMS)) + " ms at 90% busy (p99 " +
		Format(float64(q.At70.P99ResponseMS)) + " and " + Format(float64(q.At90.P99ResponseMS)) + " ms). The knee is at " +
		Format(float64(q.Knee.Arrivals)) + " requests a second. "
	return s + q.Sentence
}

// CeilingsSVG draws the two ceilings as horizontal bars on one scale, the
// binding one filled and marked "binds"; an infinite ceiling runs to the edge
// and says "no limit". id prefixes the title and description ids.
func CeilingsSVG(c Ceilings, id string) string {
	const h, barH = 132, 28
	wc, pc := float64(c.WorkerCeiling), float64(c.ProcessorCeiling)
	top := 0.0
	for _, v := range []float64{wc, pc} {
		if !math.IsInf(v, 1) {
			top = math.Max(top, v)
		}
	}
	if top == 0 {
		top = 1
	}
	step := niceStep(top*1.15, 5)
	top = math.Ceil(top*1.15/step) * step
	xs := axis{0, top, 150, plotW - padRight}
	tid, did := esc(id+"-title"), esc(id+"-desc")
	var b strings.Builder
	w := func(parts ...string) {
		for _, s := range parts {
			b.WriteString(s)
		}
	}
	w(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 `, strconv.Itoa(plotW), " ", strconv.Itoa(h),
		`" role="img" aria-labelledby="`, tid, " ", did, `" class="plot two-ceilings" font-size="12" font-family="sans-serif">`, "\n")
	w(`<title id="`, tid, `">Two ceilings: requests a second the workers and the processors allow</title>`, "\n")
	w(`<desc id="`, did, `">`, esc(c.Sentence), `</desc>`, "\n")
	bar := func(row int, label, class string, v float64, binds bool) {
		y := float64(padTop/2 + row*(barH+16))
		end, value := xs.p1, "no limit"
		if !math.IsInf(v, 1) {
			end, value = xs.at(v), Format(v)+" a second"
		}
		fill := `fill="none"`
		if binds {
			class += " binds"
			fill = `fill="currentColor" fill-opacity="0.35"`
			value += " — binds"
		}
		w(`<g class="`, class, `" stroke="currentColor"><text x="`, n(xs.p0-8), `" y="`, n(y+barH/2+4), `" text-anchor="end" fill="currentColor" stroke="none">`, label, `</text>`)
		w(`<rect x="`, n(xs.p0), `" y="`, n(y), `" width="`, n(end-xs.p0), `" height="`, strconv.Itoa(barH), `" `, fill, `/>`)
		w(`<text x="`, n(xs.p0+6), `" y="`, n(y+barH/2+4), `" fill="currentColor" stroke="none">`, esc(value), `</text></g>`, "\n")
	}
	both := c.Binds == BindsBoth
	bar(0, "worker ceiling", "tc-workers", wc, both || c.Binds == BindsWorkers)
	bar(1, "processor ceiling", "tc-processor", pc, both || c.Binds == BindsProcessor)
	y := float64(padTop/2 + 2*(barH+16))
	w(`<g class="tc-axis" stroke="currentColor" fill="currentColor"><line x1="`, n(xs.p0), `" x2="`, n(xs.p1), `" y1="`, n(y), `" y2="`, n(y), `"/>`)
	for i := 0; float64(i)*step <= top*(1+1e-9); i++ {
		v := float64(i) * step
		x := n(xs.at(v))
		w(`<line x1="`, x, `" x2="`, x, `" y1="`, n(y), `" y2="`, n(y+4), `"/><text x="`, x, `" y="`, n(y+16), `" text-anchor="middle" stroke="none">`, Format(v), `</text>`)
	}
	w(`</g>`, "\n", `</svg>`, "\n")
	return b.String()
}
