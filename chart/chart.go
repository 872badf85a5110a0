package chart

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Style says how a series is drawn.
type Style int

const (
	// Measured is a solid line through marked points: what was measured.
	Measured Style = iota
	// Model is a dashed line without marks: what a model predicts.
	Model
	// Guide is a thin, faint line (the "everything answered" diagonal).
	Guide
	// Histogram is bars from the x axis: X are the bins' left edges, Y
	// their counts, Width their width in x units.
	Histogram
	// Trace is a solid line without marks: a quantity sampled often (a
	// run over time, a point a second), where marks would hide the line.
	Trace
	// Simulated is what the simulator computed, drawn beside measurements
	// of the same quantity in its colour: a dotted, lighter line through
	// hollow points, so it differs from a measured series by more than
	// its points' shape, and from the model's dashes.
	Simulated
)

// Marker is the shape of a measured series' points.
type Marker int

const (
	Circle Marker = iota
	Square
	Diamond
)

// Series is one quantity drawn in a panel.
type Series struct {
	Name string // legend text, e.g. "p50 measured"
	// Quantity names the colour: "ok", "p50", "p99", "mean", "a", "b", "c",
	// "count", "split", "accent" or "muted" (see Colours). Every series of one
	// quantity has one colour, measured or modelled.
	Quantity string
	Style    Style
	Marker   Marker
	X, Y     []float64 // a NaN in Y breaks the line
	Width    float64   // Histogram: bin width in x units
}

// Mark is a vertical reference line across a panel with a short label
// (ρ = 0.7, p99, your load).
type Mark struct {
	X        float64
	Label    string
	Quantity string // colour; "" is muted
	Solid    bool   // a solid line; dashed otherwise
}

// Region is a stretch of x and a span of y shaded in a panel, with a
// short label at its top left: a prediction's band over the seconds it is
// about. Y0 == Y1 draws a line.
type Region struct {
	X0, X1   float64
	Y0, Y1   float64
	Label    string
	Detail   string // after the label, left out on narrow screens (the .region-detail rule of app.css)
	Quantity string // colour; "" is muted
}

// Stop is a place a reader can hover or, when Focus is set, reach with the
// keyboard: it shows Lines at X, and Lines joined is its accessible name.
type Stop struct {
	X     float64
	Lines []string
	Focus bool
}

// Bar is one horizontal bar of a bar panel (the two ceilings).
type Bar struct {
	Label    string  // above the bar
	Formula  string  // after the label (": formula"), left out on narrow screens (the .bar-formula rule of app.css): keep it in the table too
	Value    string  // inside the bar, at its start
	X        float64 // length in x units; +Inf runs to the edge
	Quantity string
	Strong   bool   // filled (the binding ceiling)
	Class    string // more classes for the bar's group
}

// Panel is one plot: a y axis over the chart's shared x axis, with series,
// marks and stops, or (when Bars is set) a horizontal bar chart.
type Panel struct {
	Title   string  // names what the y axis shows, with its unit
	YMax    float64 // the top of the y axis before rounding; 0: from the series
	Series  []Series
	Marks   []Mark
	Regions []Region
	Stops   []Stop
	Bars    []Bar
	Note    string // a sentence drawn in the panel (e.g. "no steady state")
}

// Table is the chart's numbers, shown under it (folded) and read by
// screen readers.
type Table struct {
	Caption string
	Head    []string
	Rows    [][]string
}

// Chart is one figure: a title, a legend, panels sharing one x axis from 0,
// the x axis's title, and the numbers as a table.
type Chart struct {
	ID     string // prefix of the element ids inside; unique on the page
	Title  string
	Desc   string // the chart in a sentence or two, for screen readers
	XTitle string
	XMax   float64 // the right end of the x axis before rounding; 0: from the data
	Panels []Panel
	Table  Table
	// Legend lists the series' names and styles; nil: every named series
	// of every panel, once per name.
	Legend []Series
	// PanelLegends puts each panel's own series in a legend under its
	// title, in place of the one legend above (Figure; the standalone SVG
	// keeps one legend): for panels that each draw other quantities.
	PanelLegends bool
	// Stacked puts the panels one above another at every width (Figure),
	// so their shared x axis lines up: a time chart's.
	Stacked bool
	// XSteps is how many steps the x axis is cut into at most; 0: 5.
	XSteps int
}

// NiceCeil returns the smallest 1, 2 or 5 × 10^k at or above v, or 1 when v
// is not positive. It is the one rounding rule of axes and sliders.
func NiceCeil(v float64) float64 { return nice(v, true) }

// NiceFloor returns the largest 1, 2 or 5 × 10^k at or below v, or 1 when v
// is not positive: NiceCeil's ladder, downward (a slider's step that must
// not pass over a goal's tolerance).
func NiceFloor(v float64) float64 { return nice(v, false) }

// nice walks the ladder 1, 2, 5, 10 × 10^k of the decade holding v, up to
// the first rung at or above v, or down to the last at or below it.
func nice(v float64, up bool) float64 {
	if !(v > 0) || math.IsInf(v, 1) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	ladder := []float64{1, 2, 5, 10}
	if up {
		for _, m := range ladder {
			if m*p >= v*(1-1e-12) {
				return m * p
			}
		}
		return 10 * p
	}
	for i := len(ladder) - 1; i >= 0; i-- {
		if ladder[i]*p <= v*(1+1e-12) {
			return ladder[i] * p
		}
	}
	return p
}

// Axis returns a round step that cuts [0, max] into at most want parts
// (NiceCeil of max ÷ want) and the first multiple of it at or above max.
func Axis(max float64, want int) (top, step float64) {
	if !(max > 0) || math.IsInf(max, 1) {
		max = 1
	}
	step = NiceCeil(max / float64(want))
	top = math.Ceil(max/step*(1-1e-12)) * step
	return top, step
}

// Ticks are the axis values 0, step, ... top.
func ticks(top, step float64) []float64 {
	var out []float64
	for i := 0; float64(i)*step <= top*(1+1e-9); i++ {
		out = append(out, float64(i)*step)
	}
	return out
}

// label writes an axis value with as many decimals as the step needs.
func label(v, step float64) string {
	d := 0
	for s := step; d < 6 && math.Abs(s-math.Round(s)) > 1e-9*math.Max(1, s); s *= 10 {
		d++
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// pct writes a fraction of the plot as a percentage with two decimals, so
// output is byte-for-byte stable.
func pct(f float64) string { return strconv.FormatFloat(f*100, 'f', 2, 64) + "%" }

// num writes a coordinate of the data layer (0 to 1000) with one decimal.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// dataSize is the data layer's viewBox: 0..1000 both ways, stretched to the
// plot (preserveAspectRatio none; strokes do not scale).
const dataSize = 1000

// scale maps data onto fractions of the plot, 0 at the left and bottom.
type scale struct{ xTop, yTop float64 }

func (s scale) fx(x float64) float64 { return clamp01(x / s.xTop) }
func (s scale) fy(y float64) float64 { return clamp01(y / s.yTop) }

func clamp01(v float64) float64 { return math.Max(0, math.Min(1, v)) }

// xTop is the chart's x axis top and step, from XMax or the data.
func (c Chart) xAxis() (top, step float64) {
	m := c.XMax
	if m == 0 {
		for _, p := range c.Panels {
			for _, s := range p.Series {
				for i, x := range s.X {
					if s.Style == Histogram {
						x += s.Width
					}
					if i < len(s.Y) && !math.IsNaN(x) {
						m = math.Max(m, x)
					}
				}
			}
			for _, b := range p.Bars {
				if !math.IsInf(b.X, 1) {
					m = math.Max(m, b.X)
				}
			}
		}
	}
	return Axis(m, cmp.Or(c.XSteps, 5))
}

// yAxis is the panel's y axis top and step, from YMax or the series.
func (p Panel) yAxis() (top, step float64) {
	m := p.YMax
	if m == 0 {
		for _, s := range p.Series {
			for _, y := range s.Y {
				if !math.IsNaN(y) && !math.IsInf(y, 0) {
					m = math.Max(m, y)
				}
			}
		}
	}
	return Axis(m, 4)
}

// pathOf is the data-layer path of a line series: a NaN, or a point
// outside the axis, lifts the pen.
func pathOf(s Series, sc scale) string {
	var b strings.Builder
	pen := false
	for i := range s.X {
		if i >= len(s.Y) || math.IsNaN(s.Y[i]) || math.IsNaN(s.X[i]) || s.X[i] > sc.xTop*(1+1e-9) {
			pen = false
			continue
		}
		if pen {
			b.WriteString("L")
		} else {
			b.WriteString("M")
		}
		// y above the axis is drawn past the top edge, where the plot clips it.
		y := math.Min(s.Y[i]/sc.yTop, 4)
		b.WriteString(num(sc.fx(s.X[i])*dataSize) + " " + num((1-y)*dataSize))
		pen = true
	}
	return b.String()
}

// rect is a histogram bin in the data layer.
type rect struct{ X, Y, W, H string }

func binsOf(s Series, sc scale) []rect {
	var out []rect
	for i := range s.X {
		if i >= len(s.Y) || math.IsNaN(s.Y[i]) || s.Y[i] <= 0 {
			continue
		}
		x0, x1 := sc.fx(s.X[i]), sc.fx(s.X[i]+s.Width)
		h := sc.fy(s.Y[i])
		out = append(out, rect{num(x0 * dataSize), num((1 - h) * dataSize), num((x1 - x0) * dataSize), num(h * dataSize)})
	}
	return out
}

// point is a measured point, in plot percentages.
type point struct{ X, Y string }

func pointsOf(s Series, sc scale) []point {
	var out []point
	for i := range s.X {
		if i >= len(s.Y) || math.IsNaN(s.Y[i]) || math.IsNaN(s.X[i]) {
			continue
		}
		out = append(out, point{pct(sc.fx(s.X[i])), pct(1 - sc.fy(s.Y[i]))})
	}
	return out
}

// tick is one axis label and its gridline, in plot percentages.
type tick struct {
	At, Text, Anchor string
}

func xTicks(top, step float64) []tick {
	ts := ticks(top, step)
	out := make([]tick, len(ts))
	for i, v := range ts {
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case len(ts) - 1:
			anchor = "end"
		}
		out[i] = tick{pct(v / top), label(v, step), anchor}
	}
	return out
}

func yTicks(top, step float64) []tick {
	ts := ticks(top, step)
	out := make([]tick, len(ts))
	for i, v := range ts {
		out[i] = tick{pct(1 - v/top), label(v, step), "start"}
	}
	return out
}

// band is a stop's hover area: from half way to the stop before to half
// way to the one after, in plot percentages.
type band struct {
	X, W, At, Anchor string
	Lines            []string
	Label            string
	Focus            bool
}

func bandsOf(stops []Stop, sc scale) []band {
	xs := make([]float64, len(stops))
	for i, s := range stops {
		xs[i] = sc.fx(s.X)
	}
	out := make([]band, len(stops))
	for i, s := range stops {
		// Half way to the neighbours, and at most 8% of the plot either side.
		lo, hi := math.Max(0, xs[i]-0.08), math.Min(1, xs[i]+0.08)
		if i > 0 {
			lo = math.Max(lo, (xs[i-1]+xs[i])/2)
		}
		if i < len(stops)-1 {
			hi = math.Min(hi, (xs[i]+xs[i+1])/2)
		}
		anchor := "start"
		if xs[i] > 0.5 {
			anchor = "end"
		}
		out[i] = band{X: pct(lo), W: pct(math.Max(hi-lo, 0.01)), At: pct(xs[i]), Anchor: anchor, Lines: s.Lines,
			Label: strings.Join(s.Lines, "; "), Focus: s.Focus}
	}
	return out
}

// regionView is a region: its rectangle in the data layer (0..1000), and
// its label's place in plot percentages.
type regionView struct {
	X, Y, W, H     string // the rectangle, data layer
	LabelX, LabelY string // the label's anchor, plot percentages
	// LabelDX moves the label right of its anchor: past the y axis's
	// tick labels (drawn at the plot's left edge) for a region that
	// starts there, so a line near a gridline does not write over its
	// number.
	LabelDX       string
	Label, Detail string
	Quantity      string
	Line          bool // a value, not a band: drawn as a line
	LineY         string
}

// regionsOf places regions on the plot, clipped to the axes (a band
// above the y axis's top is drawn to its edge).
func regionsOf(rs []Region, sc scale) []regionView {
	out := make([]regionView, 0, len(rs))
	for _, r := range rs {
		q := r.Quantity
		if q == "" {
			q = "muted"
		}
		x0, x1 := sc.fx(r.X0), sc.fx(r.X1)
		y0, y1 := sc.fy(math.Min(r.Y0, r.Y1)), sc.fy(math.Max(r.Y0, r.Y1))
		dx := "0.4em"
		if x0 <= 0 {
			dx = "3em"
		}
		out = append(out, regionView{X: num(x0 * dataSize), Y: num((1 - y1) * dataSize), W: num((x1 - x0) * dataSize), H: num((y1 - y0) * dataSize),
			LabelX: pct(x0), LabelY: pct(1 - y1), LabelDX: dx, Label: r.Label, Detail: r.Detail, Quantity: q, Line: r.Y0 == r.Y1, LineY: num((1 - y1) * dataSize)})
	}
	return out
}

// markView is a mark in plot percentages; Row is its label's row from the
// top of the plot.
type markView struct {
	At, Label, Quantity, Anchor string
	Solid                       bool
	Row                         int
}

// marksOf places each mark's label on a row of its own, in x order (a
// chart has a few marks; labels near each other, or running towards each
// other from either end, would overlap on a phone's plot).
func marksOf(ms []Mark, sc scale) []markView {
	order := make([]int, len(ms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ms[a].X, ms[b].X) })
	out := make([]markView, len(ms))
	row := 0
	for _, i := range order {
		m := ms[i]
		q := m.Quantity
		if q == "" {
			q = "muted"
		}
		f := sc.fx(m.X)
		anchor := "start"
		if f > 0.6 {
			anchor = "end"
		}
		out[i] = markView{At: pct(f), Label: m.Label, Quantity: q, Anchor: anchor, Solid: m.Solid, Row: row}
		if m.Label != "" {
			row++ // an unlabelled mark (a line repeated across panels) takes no row
		}
	}
	return out
}

// barView is a bar in plot percentages and rows of em.
type barView struct {
	Label, Formula, Value, Quantity, Class string
	W                                      string
	Strong                                 bool
	LabelY, BarY, ValueY                   string
}

// Bar rows, in em: a label line, then the bar.
const (
	barRowEm  = 3.6
	barLabel  = 1.15
	barTop    = 1.5
	barHeight = 1.6
)

// formula is what follows a bar's label: ": " and its formula, or "".
func (b barView) formula() string {
	if b.Formula == "" {
		return ""
	}
	return ": " + b.Formula
}

func em(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + "em" }

func barsOf(bs []Bar, sc scale) []barView {
	out := make([]barView, len(bs))
	for i, b := range bs {
		f := 1.0
		if !math.IsInf(b.X, 1) {
			f = sc.fx(b.X)
		}
		row := float64(i) * barRowEm
		out[i] = barView{Label: b.Label, Formula: b.Formula, Value: b.Value, Quantity: b.Quantity, Class: b.Class, W: pct(f), Strong: b.Strong,
			LabelY: em(row + barLabel), BarY: em(row + barTop), ValueY: em(row + barTop + barHeight*0.72)}
	}
	return out
}

// barsHeight is a bar panel's plot height in em, its axis line's y, and
// where its tick labels sit.
func barsHeight(n int) (height, axisY, labelY string, h float64) {
	h = float64(n)*barRowEm + 0.4
	return em(h), em(h - 0.2), em(h + 1.1), h
}

// legend is a panel's own legend: its named series, once per name.
func (p Panel) legend() []Series {
	return Chart{Panels: []Panel{p}}.legendOf()
}

// legendOf is the chart's legend: Legend, or every named series once.
func (c Chart) legendOf() []Series {
	if c.Legend != nil {
		return c.Legend
	}
	var out []Series
	seen := map[string]bool{}
	for _, p := range c.Panels {
		for _, s := range p.Series {
			if s.Name == "" || seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			out = append(out, s)
		}
	}
	return out
}

// Colours are the light-scheme colours of each quantity, written as
// presentation attributes so a chart opened on its own (an .svg file) has
// them; the site's stylesheet overrides them per colour scheme through
// the q-{quantity} classes. Each has at least 4.5:1 contrast on white.
var Colours = map[string]string{
	"ok":     "#1a5fb4",
	"p50":    "#0b7a55",
	"p99":    "#b4460b",
	"mean":   "#7a3db8",
	"a":      "#1a5fb4",
	"b":      "#b4460b",
	"c":      "#0b7a55",
	"count":  "#4f5d73",
	"accent": "#0b57d0",
	"muted":  "#4a5260",
	// A run over time (TimeChart): how requests ended, and what was inside.
	"refused":  "#7a3db8",
	"gaveup":   "#b3261e",
	"busy":     "#6b6b00",
	"inflight": "#00707a",
	"lab":      "#8a5a00",
	"limit":    "#c0177a",
	// The queue curve's same servers with a queue each.
	"split": "#0b7a55",
}

func colour(q string) string {
	if c, ok := Colours[q]; ok {
		return c
	}
	return Colours["muted"]
}

// dash is the stroke-dasharray of a style.
func dash(s Style) string {
	switch s {
	case Model:
		return "7 5"
	case Simulated:
		return "2 5"
	}
	return ""
}

// marked reports whether a style's series has a mark at each point.
func marked(s Style) bool { return s == Measured || s == Simulated }

// simulatedOpacity is the stroke opacity of a simulated series' line,
// lighter than a measured one's.
const simulatedOpacity = "0.7"

func classOf(kind string, s Series) string {
	st := "measured"
	switch s.Style {
	case Model:
		st = "model"
	case Guide:
		st = "guide"
	case Histogram:
		st = "hist"
	case Trace:
		st = "trace"
	case Simulated:
		st = "simulated"
	}
	return kind + " q-" + s.Quantity + " " + st
}

func (c Chart) panelID(i int) string { return c.ID + "-p" + strconv.Itoa(i) }

func barsHeightAttr(n int) string {
	h, _, _, _ := barsHeight(n)
	return h
}

func strokeWidth(s Style) string {
	switch s {
	case Guide:
		return "1"
	case Model, Simulated:
		return "2.5"
	}
	return "3"
}

func markDash(solid bool) string {
	if solid {
		return ""
	}
	return "3 4"
}

// anchorShift moves text off the line it labels, away from its anchor.
func anchorShift(anchor string) string {
	if anchor == "end" {
		return "-0.4em"
	}
	return "0.4em"
}

// markDY places mark labels in rows from the top of the plot.
func markDY(row int) string { return em(1.2 + 1.3*float64(row)) }

// svgLayout places a standalone SVG's parts, in px of a 960-wide image.
type svgLayout struct {
	W, H, PlotW string
	Legend      []legendItem
	Panels      []panelPlace
	XTitleY     string
}

type legendItem struct {
	X, Y string
	S    Series
}

type panelPlace struct{ TitleY, Y, H string }

// Standalone geometry, in px at 16 px text.
const (
	svgWidth    = 960
	svgMargin   = 16
	svgLinePlot = 260
	svgCharW    = 8.4 // a rough average advance of 16 px sans-serif text
)

func layoutSVG(c Chart) svgLayout {
	itoa := func(v float64) string { return strconv.FormatFloat(math.Round(v), 'f', 0, 64) }
	l := svgLayout{W: itoa(svgWidth), PlotW: itoa(svgWidth - 2*svgMargin)}
	x, y := float64(svgMargin), 44.0
	for _, s := range c.legendOf() {
		w := 36 + svgCharW*float64(len([]rune(s.Name))) + 24
		if x+w > svgWidth-svgMargin && x > svgMargin {
			x, y = svgMargin, y+24
		}
		l.Legend = append(l.Legend, legendItem{X: itoa(x), Y: itoa(y), S: s})
		x += w
	}
	y += 24
	for _, p := range c.Panels {
		var pp panelPlace
		if p.Title != "" {
			y += 24
			pp.TitleY = itoa(y)
		}
		y += 30 // room for the top tick label and the marks' labels
		h := float64(svgLinePlot)
		if len(p.Bars) > 0 {
			_, _, _, hem := barsHeight(len(p.Bars))
			h = hem * 16
			y -= 22
		}
		pp.Y, pp.H = itoa(y), itoa(h)
		y += h + 30 // the x tick labels
		l.Panels = append(l.Panels, pp)
	}
	if c.XTitle != "" {
		y += 8
		l.XTitleY = itoa(y)
	}
	l.H = itoa(y + svgMargin)
	return l
}
