package chart

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func render(t *testing.T, c Chart, svg bool) string {
	t.Helper()
	var b bytes.Buffer
	comp := Figure(c)
	if svg {
		comp = SVG(c)
	}
	if err := comp.Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// sample is a chart like a run's: measured and modelled series of two
// quantities, stops at the measured points, a mark, a table.
func sample() Chart {
	return Chart{ID: "c1", Title: "Measured against the model", Desc: "Two windows.", XTitle: "Offered load, requests a second",
		Panels: []Panel{
			{Title: "Throughput", Series: []Series{
				{Name: "ok/s, model", Quantity: "ok", Style: Model, X: []float64{0, 50, 80}, Y: []float64{0, 50, 50}},
				{Name: "ok/s, measured", Quantity: "ok", Style: Measured, X: []float64{20, 40}, Y: []float64{19.8, 39.5}},
			}, Stops: []Stop{
				{X: 20, Focus: true, Lines: []string{"Window 1: offered 20 a second", "ok 19.8/s (model 20)"}},
				{X: 40, Focus: true, Lines: []string{"Window 2: offered 40 a second", "ok 39.5/s (model 40)"}},
			}},
			{Title: "Latency, ms", Series: []Series{
				{Name: "p50, model", Quantity: "p50", Style: Model, X: []float64{0, 20, 40}, Y: []float64{20, 33, math.NaN()}},
				{Name: "p50, measured", Quantity: "p50", Style: Measured, X: []float64{20, 40}, Y: []float64{31, 60}},
				{Name: "p99, measured", Quantity: "p99", Style: Measured, Marker: Square, X: []float64{20, 40}, Y: []float64{80, 200}},
			}, Marks: []Mark{{X: 50, Label: "ceiling"}}},
		},
		Table: Table{Caption: "The numbers", Head: []string{"window", "ok /s"}, Rows: [][]string{{"1", "19.8"}, {"2", "39.5"}}},
	}
}

// Axes round up to 1, 2 or 5 × 10^k steps; the same rule rounds sliders,
// and rounds a goal's slider step down.
func TestNiceCeilAndAxis(t *testing.T) {
	for _, tt := range []struct {
		v, want float64
	}{
		{0.3, 0.5}, {1, 1}, {1.01, 2}, {2, 2}, {3, 5}, {7, 10}, {10, 10}, {42, 50}, {0, 1}, {-3, 1}, {math.Inf(1), 1},
	} {
		if got := NiceCeil(tt.v); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("NiceCeil(%v) = %v, want %v", tt.v, got, tt.want)
		}
	}
	// NiceFloor is the same ladder downward: a goal's tolerance of 0.3
	// gives slider steps of 0.2, never past the tolerance.
	for _, tt := range []struct {
		v, want float64
	}{
		{0.3, 0.2}, {1, 1}, {1.01, 1}, {2, 2}, {3, 2}, {7, 5}, {10, 10}, {42, 20}, {0.05, 0.05}, {0, 1}, {-3, 1},
	} {
		if got := NiceFloor(tt.v); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("NiceFloor(%v) = %v, want %v", tt.v, got, tt.want)
		}
	}
	for _, tt := range []struct {
		max             float64
		want            int
		top, step       float64
		why             string
		labels0, labelN string
	}{
		{84, 5, 100, 20, "84 in about 5 parts: steps of 20 to 100", "0", "100"},
		{2760, 4, 3000, 1000, "a p99 of 2760 ms: steps of 1000", "0", "3000"},
		{0.9, 4, 1, 0.5, "below 1: half steps, labelled with a decimal", "0.0", "1.0"},
		{0, 4, 1, 0.5, "nothing to show: 0 to 1 in halves", "0.0", "1.0"},
	} {
		top, step := Axis(tt.max, tt.want)
		if top != tt.top || step != tt.step {
			t.Errorf("%s: Axis(%v, %d) = %v, %v; want %v, %v", tt.why, tt.max, tt.want, top, step, tt.top, tt.step)
		}
		ts := ticks(top, step)
		if l0, ln := label(ts[0], step), label(ts[len(ts)-1], step); l0 != tt.labels0 || ln != tt.labelN {
			t.Errorf("%s: labels %s..%s, want %s..%s", tt.why, l0, ln, tt.labels0, tt.labelN)
		}
	}
}

// The figure's text is HTML or SVG text with no size of its own: it takes
// the page's body size at every width (the stylesheet sizes the plot, and
// nothing in the output scales text down with a viewBox).
func TestFigureTextTakesThePageSize(t *testing.T) {
	out := render(t, sample(), false)
	if regexp.MustCompile(`font-size="`).MatchString(out) {
		t.Error("the figure sets a font size; its text must take the page's")
	}
	doc, err := html.Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range all(doc) {
		if n.Data != "svg" || has(n, "class", "chart-key") {
			continue
		}
		if _, ok := attr(n, "viewBox"); ok && has(n, "class", "chart-plot") {
			t.Error("a plot has a viewBox: it would scale its text with its width")
		}
	}
	// Only the data layer (lines and bins, no text) is stretched.
	for _, n := range all(doc) {
		if vb, ok := attr(n, "viewbox"); ok && vb == "0 0 1000 1000" {
			for _, c := range all(n) {
				if c.Data == "text" {
					t.Error("text inside the stretched data layer")
				}
			}
		}
	}
	if strings.Contains(out, "style=") {
		t.Error("style attributes, which the site's CSP forbids")
	}
}

// One colour per quantity: every element of a quantity, measured or
// modelled, line, point or legend key, has that quantity's class and
// colour; measured is solid, the model dashed.
func TestOneColourPerQuantity(t *testing.T) {
	out := render(t, sample(), false)
	doc, _ := html.Parse(strings.NewReader(out))
	colours := map[string]map[string]bool{}
	for _, n := range all(doc) {
		cls, _ := attr(n, "class")
		m := regexp.MustCompile(`\bq-(\w+)\b`).FindStringSubmatch(cls)
		if m == nil || (n.Data != "path" && n.Data != "circle" && n.Data != "rect" && n.Data != "line") {
			continue
		}
		col, _ := attr(n, "stroke")
		if n.Data == "circle" || n.Data == "rect" {
			col, _ = attr(n, "fill")
		}
		if colours[m[1]] == nil {
			colours[m[1]] = map[string]bool{}
		}
		colours[m[1]][col] = true
		dashed, _ := attr(n, "stroke-dasharray")
		switch {
		case strings.Contains(cls, "model") && dashed == "":
			t.Errorf("a model line is solid: %s", cls)
		case strings.Contains(cls, "measured") && n.Data != "circle" && n.Data != "rect" && dashed != "":
			t.Errorf("a measured line is dashed: %s", cls)
		}
	}
	for _, q := range []string{"ok", "p50", "p99"} {
		if len(colours[q]) != 1 || !colours[q][Colours[q]] {
			t.Errorf("quantity %s is drawn in %v, want only %s", q, colours[q], Colours[q])
		}
	}
	if Colours["p50"] == Colours["p99"] || Colours["ok"] == Colours["p50"] {
		t.Error("two quantities of the run chart share a colour")
	}
}

// A simulated series differs from a measured one of the same quantity by
// more than its points' shape: in the page and in the standalone SVG its
// line is dotted (a dasharray of its own, not the model's) and lighter,
// its points hollow squares outlined in its colour, and its legend key
// draws the same, beside a name that says "simulated".
func TestSimulatedSeriesLookSimulated(t *testing.T) {
	c := sample()
	sim := c.Panels[0].Series[1]
	sim.Name, sim.Style, sim.Y = "ok/s, simulated", Simulated, []float64{19.9, 39.7}
	c.Panels[0].Series = append(c.Panels[0].Series, sim)
	for _, svg := range []bool{false, true} {
		doc, _ := html.Parse(strings.NewReader(render(t, c, svg)))
		var measuredLine, simLines, simPoints, measuredPoints int
		for _, n := range all(doc) {
			cls, _ := attr(n, "class")
			if !strings.Contains(cls, "q-ok") {
				continue
			}
			dash, _ := attr(n, "stroke-dasharray")
			opacity, _ := attr(n, "stroke-opacity")
			fill, _ := attr(n, "fill")
			stroke, _ := attr(n, "stroke")
			switch {
			case (n.Data == "path" || n.Data == "line") && strings.Contains(cls, "simulated"):
				simLines++
				if dash == "" || dash == dashOf(t, doc, "model") || opacity == "" || opacity == "1" || stroke != Colours["ok"] {
					t.Errorf("svg %v: a simulated line is drawn dash %q, opacity %q, stroke %q", svg, dash, opacity, stroke)
				}
			case (n.Data == "path" || n.Data == "line") && strings.Contains(cls, "measured"):
				measuredLine++
				if dash != "" || opacity != "" {
					t.Errorf("svg %v: a measured line is drawn dash %q, opacity %q", svg, dash, opacity)
				}
			case strings.HasPrefix(cls, "pt ") && strings.Contains(cls, "simulated"):
				simPoints++
				if n.Data != "rect" || fill == Colours["ok"] || stroke != Colours["ok"] {
					t.Errorf("svg %v: a simulated point is a %s filled %q outlined %q, want a hollow square", svg, n.Data, fill, stroke)
				}
			case strings.HasPrefix(cls, "pt "):
				measuredPoints++
				if fill != Colours["ok"] {
					t.Errorf("svg %v: a measured point is filled %q", svg, fill)
				}
			}
		}
		// The plot and the legend: a line each, and two points in the
		// plot plus one in the legend's key.
		if simLines != 2 || measuredLine != 2 || simPoints != 3 || measuredPoints != 3 {
			t.Errorf("svg %v: %d simulated lines, %d measured lines, %d simulated points, %d measured points; want 2, 2, 3, 3",
				svg, simLines, measuredLine, simPoints, measuredPoints)
		}
	}
	if out := render(t, c, false); !strings.Contains(out, "ok/s, simulated") {
		t.Error("the legend does not name the simulation")
	}
}

// dashOf is the dasharray of the first line of the style class in doc.
func dashOf(t *testing.T, doc *html.Node, style string) string {
	t.Helper()
	for _, n := range all(doc) {
		if cls, _ := attr(n, "class"); (n.Data == "path" || n.Data == "line") && strings.Contains(cls, " "+style) {
			d, _ := attr(n, "stroke-dasharray")
			return d
		}
	}
	t.Fatalf("no %s line", style)
	return ""
}

// Values on hover and on keyboard focus: each focusable stop is one tab
// stop with its values as its accessible name and in its tip; the same
// numbers are in a table for screen readers.
func TestStopsAndTable(t *testing.T) {
	out := render(t, sample(), false)
	doc, _ := html.Parse(strings.NewReader(out))
	var stops []*html.Node
	for _, n := range all(doc) {
		if has(n, "class", "stop") {
			stops = append(stops, n)
		}
	}
	if len(stops) != 2 {
		t.Fatalf("%d stops, want the 2 windows of the first panel", len(stops))
	}
	for i, s := range stops {
		tab, _ := attr(s, "tabindex")
		label, _ := attr(s, "aria-label")
		role, _ := attr(s, "role")
		if tab != "0" || role != "img" || !strings.HasPrefix(label, []string{"Window 1", "Window 2"}[i]) || !strings.Contains(label, "model") {
			t.Errorf("stop %d: tabindex %q role %q label %q", i, tab, role, label)
		}
		var tip string
		for _, c := range all(s) {
			if c.Data == "tspan" {
				tip += text(c) + "|"
			}
		}
		if !strings.Contains(tip, "ok 19.8/s") && !strings.Contains(tip, "ok 39.5/s") {
			t.Errorf("stop %d's tip shows %q", i, tip)
		}
	}
	var table *html.Node
	for _, n := range all(doc) {
		if n.Data == "table" {
			table = n
		}
	}
	if table == nil || !strings.Contains(text(table), "The numbers") || !strings.Contains(text(table), "39.5") {
		t.Error("no table of the chart's numbers")
	}
	// The figure is named by its caption and described in words.
	if !strings.Contains(out, `aria-labelledby="c1-title" aria-describedby="c1-desc"`) || !strings.Contains(out, `id="c1-desc" class="chart-desc visually-hidden">Two windows.`) {
		t.Error("the figure is not labelled and described")
	}
}

// A NaN lifts the pen (no steady state); a point past the y axis is drawn
// past the top edge, where the plot clips it, never at a wrong place.
func TestPathGaps(t *testing.T) {
	sc := scale{xTop: 100, yTop: 50}
	got := pathOf(Series{X: []float64{0, 20, 40, 60}, Y: []float64{10, math.NaN(), 20, 500}}, sc)
	if want := "M0.0 800.0M400.0 600.0L600.0 -3000.0"; got != want {
		t.Errorf("path %q, want %q", got, want)
	}
}

// The standalone SVG is well-formed, labelled, deterministic, and has the
// same panels; an id with markup in it stays inside its attribute.
func TestStandaloneSVG(t *testing.T) {
	c := sample()
	out := render(t, c, true)
	dec := xml.NewDecoder(strings.NewReader(out))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
	}
	if !strings.HasPrefix(out, `<svg xmlns="http://www.w3.org/2000/svg" width="960"`) || !strings.Contains(out, `<title id="c1-title">Measured against the model</title>`) {
		t.Errorf("standalone SVG lacks its size or title: %.200s", out)
	}
	if strings.Count(out, `class="chart-plot"`) != 2 || strings.Contains(out, "NaN") || strings.Contains(out, "Inf") {
		t.Error("want two plots and no NaN or Inf")
	}
	if render(t, c, true) != out {
		t.Error("output is not deterministic")
	}
	c.ID = `x"><script>`
	if bad := render(t, c, true); strings.Contains(bad, "<script>") {
		t.Error("the id was not escaped")
	}
}

// Bars: the binding ceiling is filled; an infinite one runs to the edge.
func TestBars(t *testing.T) {
	c := Chart{ID: "tc", Title: "Two ceilings", XTitle: "Requests a second", XMax: 57.5, Panels: []Panel{{Bars: []Bar{
		{Label: "Worker ceiling", Value: "50 a second — binds", X: 50, Quantity: "accent", Strong: true, Class: "tc-workers binds"},
		{Label: "Processor ceiling", Value: "no limit", X: math.Inf(1), Quantity: "accent", Class: "tc-processor"},
	}}}}
	out := render(t, c, false)
	if !strings.Contains(out, `class="bar-row q-accent tc-workers binds strong"`) || !strings.Contains(out, `width="100.00%"`) {
		t.Errorf("bars: %s", out)
	}
	if !strings.Contains(out, `height="7.60em"`) {
		t.Error("a bar panel's height is in em, so it grows with its text")
	}
}

func all(n *html.Node) []*html.Node {
	out := []*html.Node{n}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, all(c)...)
	}
	return out
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if strings.EqualFold(a.Key, key) {
			return a.Val, true
		}
	}
	return "", false
}

func has(n *html.Node, key, word string) bool {
	v, _ := attr(n, key)
	for _, f := range strings.Fields(v) {
		if f == word {
			return true
		}
	}
	return false
}

func text(n *html.Node) string {
	var b strings.Builder
	for _, c := range all(n) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

// Each mark's label has a row of its own, in x order, so labels near each
// other (or running towards each other from either end) never overlap.
func TestMarkRows(t *testing.T) {
	ms := marksOf([]Mark{{X: 427, Label: "p99"}, {X: 244, Label: "p50"}}, scale{xTop: 500, yTop: 1})
	if ms[1].Row != 0 || ms[0].Row != 1 || markDY(ms[0].Row) == markDY(ms[1].Row) {
		t.Errorf("rows %d and %d, want p50 first and each its own", ms[1].Row, ms[0].Row)
	}
	if ms[0].Anchor != "end" || ms[1].Anchor != "start" {
		t.Errorf("anchors %s, %s: a label near the right edge runs left", ms[0].Anchor, ms[1].Anchor)
	}
}
