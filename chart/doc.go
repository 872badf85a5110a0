// Package chart is the site's one plotter. Every chart (a run's chart,
// the comparison of two runs, a window's latency distribution, the model
// widgets' plots, a run over time) is a Chart: a title, a sentence for
// screen readers, panels sharing one x axis from 0, and the numbers as a
// Table. Package web builds them from runs and model results; this
// package only draws, but for TimeChart, which lays out a run over time
// from its loadrun.Samples (a run's page, a lab block's live panel and a
// lesson's recorded time table all draw one): seconds of the run on x,
// windows one after another; three stacked plots (Stacked, each with its
// own legend: PanelLegends) of how requests ended a second, what was
// inside at each second's end (the policy's limit a step line), and the
// ok answers' p50 and p99 under the caller's timeout; each knob change a
// line across all three, written once.
//
// # Two renderings
//
// Figure is the chart for a page: a <figure> with the title as its
// caption, the legend as an HTML list, each panel's y title as text, its
// plot as an inline SVG, and the numbers in a folded table. A plot has no
// viewBox: its gridlines, tick labels, marks and points are placed in
// percentages of the plot's own box (and in em for the bars), which the
// site's stylesheet sizes (width 100%, a height that grows with the
// screen), so a plot fills any width while its text stays the page's own
// size: no text shrinks with the chart. Only the data layer (lines and
// histogram bins, no text) is a nested SVG with viewBox 0 0 1000 1000
// stretched to the box (preserveAspectRatio none, strokes that do not
// scale). Tick labels sit inside the plot above their gridline, so no
// label needs a margin that a narrow screen cannot give.
//
// SVG is the same panels as one self-contained image, 960 units wide,
// with the title, legend and axis titles as SVG text: the .svg downloads.
//
// # Colours and styles
//
// Each quantity has one colour (Colours, and the stylesheet's --q-*
// properties for the light and dark schemes): ok (throughput), p50, p99,
// mean, a and b (two runs compared), count (histogram bins), refused,
// gaveup, busy (client busy), inflight (the generator's), lab (queued and
// in service) and limit (a policy's), accent and muted. Measured series
// are solid lines through round (or square) points, or without points
// (Trace) when sampled every second; the model is dashed, in the same
// colour as what it predicts; a simulation (Simulated) is dotted and
// lighter, through hollow squares, in the colour of what it simulates.
// Elements carry q-{quantity} classes, and ln (lines), pt (points), bins;
// the colours are also written as presentation attributes, which the
// stylesheet overrides.
//
// # Reading values
//
// A panel's Stops are places a reader can hover (a band around each) to
// see their lines of text; with Focus they are also keyboard stops
// (tabindex 0, role img, named by their lines), so a keyboard reaches the
// same values a pointer does. Stops are in x order. Marks are labelled
// vertical lines (ρ = 0.7, p99). The Table has every number, for screen
// readers and for copying.
//
// # Axes
//
// NiceCeil is the one rounding rule: the smallest 1, 2 or 5 × 10^k at or
// above a value, used for axis steps (Axis) and by the widgets' sliders;
// NiceFloor is the same ladder downward (a slider's step within a goal's
// tolerance).
// Output is byte-for-byte the same for the same Chart.
package chart
