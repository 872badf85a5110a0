package chart

import (
	"math"
	"strings"
	"testing"
	"time"

	"capacitylab/result"
)

// badRelease is two windows of 3 s, sampled every second, with a knob
// change at 1 s of each: 50 ok a second, then 20 ok and 30 given up; the
// lab's queue grows to its limit. The second window's last sample is half
// a second (a request that ended after the window's 3 s).
func badRelease() TimeRun {
	var ss []result.Sample
	for w := 0; w < 2; w++ {
		for k := 0; k < 3; k++ {
			s := result.Sample{Window: w, AtS: float64(k), Seconds: 1, OK: 50, P50MS: 100, P99MS: 110, InFlight: 5,
				Lab: true, Queued: 0, InService: 5, Limit: 10}
			if k > 0 {
				s.OK, s.GaveUp, s.P50MS, s.P99MS, s.InFlight, s.Queued, s.InService, s.Limit = 20, 30, 200, 240, 10, 3, 7, 8+k
			}
			ss = append(ss, s)
		}
	}
	ss = append(ss, result.Sample{Window: 1, AtS: 3, Seconds: 0.5, GaveUp: 2, Lab: true, InService: 2, Limit: 11})
	return TimeRun{ID: "t", Samples: ss, Windows: 2, Seconds: 3, TimeoutMS: 250,
		Changes: []result.KnobChange{{At: time.Second, Knob: "WAIT_MS", Value: "200"}}}
}

func seriesOf(t *testing.T, p Panel, name string) Series {
	t.Helper()
	for _, s := range p.Series {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("panel %q has no series %q", p.Title, name)
	return Series{}
}

// The x axis is seconds of the run, windows one after another; points
// stand at their second's end; a window's boundary breaks every line.
func TestTimeChartScales(t *testing.T) {
	c := TimeChart(badRelease())
	if len(c.Panels) != 3 {
		t.Fatalf("%d panels, want 3", len(c.Panels))
	}
	// Window 1 spans 0–3 s, window 2 3–6.5 s: the axis rounds 6.5 up to 7.
	if top, _ := c.xAxis(); top != 7 {
		t.Errorf("x axis top %v, want 7", top)
	}
	ok := seriesOf(t, c.Panels[0], "ok")
	wantX := []float64{1, 2, 3, 3, 4, 5, 6, 6.5}
	if len(ok.X) != len(wantX) {
		t.Fatalf("ok x %v, want %v", ok.X, wantX)
	}
	for i, x := range wantX {
		if ok.X[i] != x {
			t.Errorf("ok x[%d] = %v, want %v", i, ok.X[i], x)
		}
	}
	if !math.IsNaN(ok.Y[3]) {
		t.Errorf("ok y at the boundary = %v, want NaN (lines do not join across windows)", ok.Y[3])
	}
	// Rates are per second of the sample: 2 given up in half a second is 4 a second.
	if g := seriesOf(t, c.Panels[0], "gave up"); g.Y[7] != 4 {
		t.Errorf("gave up in the last half second = %v a second, want 4", g.Y[7])
	}
	// No ok answers: no latency point (the line breaks), not a 0 ms one.
	if p := seriesOf(t, c.Panels[2], "p50"); !math.IsNaN(p.Y[7]) {
		t.Errorf("p50 of a second without ok answers = %v, want NaN", p.Y[7])
	}
	// Axes hold what they show: 50 a second, the limit of 11, the timeout over the p99.
	if top, _ := c.Panels[0].yAxis(); top < 50 {
		t.Errorf("rates axis top %v, below 50", top)
	}
	if top, _ := c.Panels[1].yAxis(); top < 11 {
		t.Errorf("inside axis top %v, below the limit of 11", top)
	}
	if top, _ := c.Panels[2].yAxis(); top < 250 {
		t.Errorf("latency axis top %v, below the timeout", top)
	}
	in := seriesOf(t, c.Panels[1], "lab: queued + in service")
	if in.Y[1] != 10 {
		t.Errorf("lab inside at 2 s = %v, want 3 queued + 7 in service", in.Y[1])
	}
	// The limit is a step: each read holds until the next one.
	lim := seriesOf(t, c.Panels[1], "policy's limit")
	wantLim := [][2]float64{{1, 10}, {2, 10}, {2, 9}, {3, 9}, {3, 10}}
	for i, p := range wantLim {
		if lim.X[i] != p[0] || lim.Y[i] != p[1] {
			t.Errorf("limit point %d = (%v, %v), want %v", i, lim.X[i], lim.Y[i], p)
		}
	}
	to := seriesOf(t, c.Panels[2], "caller's timeout, 250 ms")
	if to.Style != Model || to.Y[0] != 250 || to.Y[1] != 250 {
		t.Errorf("timeout line %+v, want dashed at 250", to)
	}
	// A client busy series only when a client was busy.
	for _, s := range c.Panels[0].Series {
		if s.Name == "client busy" || s.Name == "errors" {
			t.Errorf("series %q drawn with none in any second", s.Name)
		}
	}
	if len(c.Table.Rows) != 7 {
		t.Errorf("%d table rows, want one a sample (7)", len(c.Table.Rows))
	}
	if got := strings.Join(c.Table.Rows[1], ","); got != "1,1,2,20,0,30,0,0,10,3,7,9,200,240" {
		t.Errorf("table row 2 = %s", got)
	}
}

// Each knob change is a line across all three plots, its change written
// once (on the first plot, at the first window); each window boundary a
// solid line labelled on the middle plot.
func TestTimeChartMarks(t *testing.T) {
	c := TimeChart(badRelease())
	labels := map[string]int{}
	for i, p := range c.Panels {
		var changes, bounds []Mark
		for _, m := range p.Marks {
			if m.Label != "" {
				labels[m.Label]++
			}
			if m.Solid {
				bounds = append(bounds, m)
			} else {
				changes = append(changes, m)
			}
		}
		if len(changes) != 2 || changes[0].X != 1 || changes[1].X != 4 {
			t.Errorf("panel %d: changes %+v, want at 1 s and 4 s (1 s into each window)", i, changes)
		}
		if len(bounds) != 1 || bounds[0].X != 3 {
			t.Errorf("panel %d: boundaries %+v, want one at 3 s", i, bounds)
		}
	}
	if labels["WAIT_MS=200 at 1 s"] != 1 || labels["window 2"] != 1 || len(labels) != 2 {
		t.Errorf("mark labels %v, want the change and the window written once each", labels)
	}
	// Unlabelled marks take no label row: the change's label is on row 0.
	for _, m := range marksOf(c.Panels[0].Marks, scale{7, 1}) {
		if m.Label != "" && m.Row != 0 {
			t.Errorf("change label on row %d, want 0", m.Row)
		}
	}
	html := render(t, c, false)
	if n := strings.Count(html, ">WAIT_MS=200 at 1 s</text>"); n != 1 {
		t.Errorf("the change is written %d times in the figure, want once", n)
	}
	if !strings.Contains(c.Desc, "WAIT_MS becomes 200 at 1 s") {
		t.Errorf("description %q does not name the change", c.Desc)
	}
}

// Every fifth second and each window's last is a stop a pointer and a
// keyboard reach; a run of at most ten seconds has a stop every second.
func TestTimeChartStops(t *testing.T) {
	var ss []result.Sample
	for k := 0; k < 12; k++ {
		ss = append(ss, result.Sample{AtS: float64(k), Seconds: 1, OK: 10, P50MS: 5, P99MS: 9, ClientBusy: k % 2})
	}
	c := TimeChart(TimeRun{ID: "s", Samples: ss, Windows: 1, Seconds: 12})
	for _, p := range c.Panels {
		var at []float64
		for _, s := range p.Stops {
			if !s.Focus {
				t.Errorf("panel %q: a stop at %v the keyboard does not reach", p.Title, s.X)
			}
			at = append(at, s.X)
		}
		if len(at) != 3 || at[0] != 5 || at[1] != 10 || at[2] != 12 {
			t.Errorf("panel %q: stops at %v, want 5, 10, 12", p.Title, at)
		}
	}
	if short := TimeChart(TimeRun{ID: "s", Samples: ss[:10]}); len(short.Panels[0].Stops) != 10 {
		t.Errorf("a run of 10 s has %d stops, want one a second", len(short.Panels[0].Stops))
	}
	if got := c.Panels[0].Stops[1].Lines; got[0] != "9–10 s" || got[2] != "gave up 0/s, client busy 1/s" {
		t.Errorf("second 10's rate lines %q", got)
	}
	seriesOf(t, c.Panels[0], "client busy")
	// No lab statistics: no lab series, no limit, "—" in the table.
	if len(c.Panels[1].Series) != 1 {
		t.Errorf("inside panel has %d series without the lab's statistics, want the generator's alone", len(c.Panels[1].Series))
	}
	if row := c.Table.Rows[0]; row[9] != "—" || row[11] != "—" {
		t.Errorf("lab cells without statistics %q", row[9:12])
	}
}

// No samples yet: the axis spans the run it expects (2 windows of 3 s,
// each with the 250 ms timeout after it: 6.5 s, to 7 as when it ends), the
// marks are there, the plots say nothing was measured, and it renders.
func TestTimeChartEmpty(t *testing.T) {
	r := badRelease()
	r.Samples = nil
	c := TimeChart(r)
	if top, _ := c.xAxis(); top != 7 {
		t.Errorf("x axis top %v, want 7 for the expected 2 × (3 + 0.25) s", top)
	}
	if top, _ := TimeChart(badRelease()).xAxis(); top != 7 {
		t.Errorf("the whole run's x axis ends at %v, not where it began", top)
	}
	if c.Panels[0].Note == "" || len(c.Table.Rows) != 0 {
		t.Errorf("empty chart: note %q, %d rows", c.Panels[0].Note, len(c.Table.Rows))
	}
	if n := len(c.Panels[0].Marks); n != 3 {
		t.Errorf("%d marks before any sample, want 2 changes and 1 boundary", n)
	}
	if !strings.HasPrefix(c.Desc, "No seconds") {
		t.Errorf("description %q", c.Desc)
	}
	for _, svg := range []bool{false, true} {
		if out := render(t, c, svg); strings.Contains(out, "NaN") || strings.Contains(out, "Inf") {
			t.Errorf("empty chart renders NaN or Inf")
		}
	}
	// Nothing known at all: still an axis.
	if top, _ := TimeChart(TimeRun{ID: "z"}).xAxis(); top != 1 {
		t.Errorf("x axis of nothing %v, want 1", top)
	}
}

// One sample: one point in each line, a stop a keyboard reaches, no NaN
// or Inf in the output.
func TestTimeChartOneSample(t *testing.T) {
	c := TimeChart(TimeRun{ID: "o", Samples: []result.Sample{{AtS: 0, Seconds: 1, OK: 3, P50MS: 10, P99MS: 12, InFlight: 1}}, TimeoutMS: 250})
	if top, _ := c.xAxis(); top != 1 {
		t.Errorf("x axis top %v, want 1", top)
	}
	if s := c.Panels[0].Stops; len(s) != 1 || !s[0].Focus {
		t.Errorf("stops %+v, want one a keyboard reaches", s)
	}
	for _, svg := range []bool{false, true} {
		out := render(t, c, svg)
		if strings.Contains(out, "NaN") || strings.Contains(out, "Inf") {
			t.Errorf("one-sample chart renders NaN or Inf")
		}
	}
	if !strings.Contains(c.Desc, "1 second measured over 1 window") {
		t.Errorf("description %q", c.Desc)
	}
}

// A 30 s window whose last requests end at 30.25 s: the axis ends at 35 s
// in 5 s steps, not at 40 in steps of 10.
func TestTimeChartAxisOfAWindow(t *testing.T) {
	var ss []result.Sample
	for k := 0; k < 30; k++ {
		ss = append(ss, result.Sample{AtS: float64(k), Seconds: 1, OK: 50})
	}
	ss = append(ss, result.Sample{AtS: 30, Seconds: 0.25, OK: 1})
	c := TimeChart(TimeRun{ID: "w", Samples: ss, Windows: 1, Seconds: 30})
	if top, step := c.xAxis(); top != 35 || step != 5 {
		t.Errorf("x axis to %v in steps of %v, want 35 in 5", top, step)
	}
	if !c.Stacked || !c.PanelLegends {
		t.Error("a time chart's panels are stacked, each with its legend")
	}
}

// A live run's x axis is fixed from its first second: the chart of a
// 30 s window with a 250 ms timeout has the same axis with no sample, with
// each second as it comes and with the last sample's tail; so has a run of
// two such windows, and a window whose last requests end later than its
// timeout still widens it to show them.
func TestTimeChartAxisFixedFromTheStart(t *testing.T) {
	for _, windows := range []int{1, 2} {
		var ss []result.Sample
		for w := range windows {
			for k := 0; k < 30; k++ {
				ss = append(ss, result.Sample{Window: w, AtS: float64(k), Seconds: 1, OK: 50})
			}
			ss = append(ss, result.Sample{Window: w, AtS: 30, Seconds: 0.25, OK: 1})
		}
		run := TimeRun{ID: "live", Windows: windows, Seconds: 30, TimeoutMS: 250}
		final := TimeChart(TimeRun{ID: "live", Samples: ss, Windows: windows, Seconds: 30, TimeoutMS: 250})
		top, step := final.xAxis()
		for n := 0; n <= len(ss); n++ {
			run.Samples = ss[:n]
			if gotTop, gotStep := TimeChart(run).xAxis(); gotTop != top || gotStep != step {
				t.Errorf("%d window(s), %d samples: x axis to %v in steps of %v, want %v in %v as at the end", windows, n, gotTop, gotStep, top, step)
			}
		}
	}
	// A sample past the window and its timeout widens the axis to show it.
	late := []result.Sample{{AtS: 0, Seconds: 1, OK: 5}, {AtS: 30, Seconds: 12, OK: 1}}
	if top, _ := TimeChart(TimeRun{ID: "late", Samples: late, Windows: 1, Seconds: 30, TimeoutMS: 250}).xAxis(); top < 42 {
		t.Errorf("a sample ending at 42 s on an axis to %v", top)
	}
}

// A retrying client's run draws its attempts a second, dashed, and what
// its breaker stopped, and the table has both; a run without retries has
// neither.
func TestTimeChartRetrying(t *testing.T) {
	r := badRelease()
	for i := range r.Samples {
		s := &r.Samples[i]
		s.Attempts = s.OK + 4*s.GaveUp
		if i == 2 {
			s.BreakerOpen = 7
		}
	}
	if c := TimeChart(r); len(c.Panels[0].Series) != 3 {
		t.Errorf("without Retrying: %d series on the first plot, want ok, refused, gave up", len(c.Panels[0].Series))
	}
	r.Retrying = true
	c := TimeChart(r)
	att := seriesOf(t, c.Panels[0], "attempts sent")
	if att.Style != Model || att.Y[1] != 140 {
		t.Errorf("attempts: style %v, second 2 at %v a second; want dashed, 20 + 4 × 30 = 140", att.Style, att.Y[1])
	}
	if br := seriesOf(t, c.Panels[0], "stopped by the breaker"); br.Y[2] != 7 {
		t.Errorf("breaker: second 3 at %v, want 7", br.Y[2])
	}
	if c.Panels[0].YMax < 140 {
		t.Errorf("the first plot's y axis reaches %v: want room for 140 attempts a second", c.Panels[0].YMax)
	}
	head := c.Table.Head
	if head[len(head)-2] != "attempts /s" || c.Table.Rows[1][len(head)-2] != "140" {
		t.Errorf("table head %v, second row %v: want attempts /s, 140", head, c.Table.Rows[1])
	}
}
