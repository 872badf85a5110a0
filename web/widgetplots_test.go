package web

import (
	"context"
	"math"
	"strings"
	"testing"

	"capacitylab/chart"
	"capacitylab/model"
)

// The queue curve's axes depend only on the curve: the learner's load is a
// mark and a stop, so a load near capacity (where p99 is far above the
// curve's range) does not flatten the curve. Past capacity there is no
// mark but a note.
func TestQueueCurveChart(t *testing.T) {
	near := queueCurveChart(model.QueueCurve(1, 20, 49.95), "qc")
	normal := queueCurveChart(model.QueueCurve(1, 20, 40), "qc")
	if near.Panels[0].YMax != normal.Panels[0].YMax || near.XMax != normal.XMax {
		t.Error("the axes changed with the learner's load")
	}
	labels := func(c []string) string { return strings.Join(c, ",") }
	var marks []string
	for _, m := range normal.Panels[0].Marks {
		marks = append(marks, m.Label)
	}
	if labels(marks) != "ρ = 0.7,ρ = 0.9,your load" {
		t.Errorf("marks %q", marks)
	}
	for i, s := range normal.Panels[0].Stops {
		if !s.Focus || i > 0 && s.X < normal.Panels[0].Stops[i-1].X {
			t.Errorf("stop %d: %+v (want focusable, in x order)", i, s)
		}
	}
	over := queueCurveChart(model.QueueCurve(4, 20, 250), "qc")
	if over.Panels[0].Note != "250/s is beyond capacity: no steady state" || len(over.Panels[0].Marks) != 2 {
		t.Errorf("past capacity: note %q, %d marks", over.Panels[0].Note, len(over.Panels[0].Marks))
	}
}

// The two ceilings: the binding one is strong and says so; no spin means
// no processor ceiling, a bar to the edge that says "no limit".
func TestCeilingsChart(t *testing.T) {
	c := ceilingsChart(model.TwoCeilings(4, 1, 0, 18), "tc")
	bars := c.Panels[0].Bars
	if !bars[0].Strong || !strings.Contains(bars[0].Class, "binds") || bars[0].Value != "222 a second — binds" {
		t.Errorf("worker bar %+v", bars[0])
	}
	if bars[1].Strong || bars[1].Value != "no limit" {
		t.Errorf("processor bar %+v", bars[1])
	}
	if len(c.Table.Rows) != 2 || c.Table.Rows[1][1] != "no limit" {
		t.Errorf("table %q", c.Table.Rows)
	}
}

// The late-scaling chart draws the hand-worked case: the backlog rises to
// 1,200 at the landing (60 s) and is gone at 100 s; the waits rise to 10 s
// for the request arriving at 50 s and are 0 from 100 s; both run to the
// axis's end, 150 s. Below the demand the backlog never drains and says so.
func TestLateScalingChart(t *testing.T) {
	c := lateScalingChart(model.LateScaling(120, 100, 150, 60, 1000), "ls")
	if len(c.Panels) != 2 || c.XMax != 150 {
		t.Fatalf("%d panels to %v s, want 2 to 150", len(c.Panels), c.XMax)
	}
	pts := func(s chart.Series) string {
		var out []string
		for i := range s.X {
			out = append(out, model.Format(s.X[i])+":"+model.Format(s.Y[i]))
		}
		return strings.Join(out, " ")
	}
	if got := pts(c.Panels[0].Series[0]); got != "0:0 50:1000 60:1200 100:0 150:0" {
		t.Errorf("backlog %s", got)
	}
	if got := pts(c.Panels[1].Series[0]); got != "0:0 50:10 60:8 100:0 150:0" {
		t.Errorf("waits %s", got)
	}
	if got := pts(c.Panels[1].Series[1]); got != "0:1 150:1" {
		t.Errorf("timeout %s", got)
	}
	var marks []string
	for _, m := range c.Panels[0].Marks {
		marks = append(marks, m.Label+"@"+model.Format(m.X))
	}
	if strings.Join(marks, ",") != "lands@60,drained@100" {
		t.Errorf("marks %q", marks)
	}
	never := lateScalingChart(model.LateScaling(120, 100, 110, 60, 1000), "ls")
	if never.Panels[0].Note != "Never drains" || len(never.Panels[0].Marks) != 1 {
		t.Errorf("below the demand: note %q, %d marks", never.Panels[0].Note, len(never.Panels[0].Marks))
	}
}

// The retry chart: the capacity line at 1 ÷ u when it is within reach,
// a note instead when it is above every point, and the budget's line only
// with a budget.
func TestRetryChart(t *testing.T) {
	c := retryChart(model.RetryAmplification(0.5, 3, 0.1, 0.8), "ra")
	p := c.Panels[0]
	if len(p.Series) != 3 || p.Series[1].Name != "with a budget of 0.1" || p.Series[2].Y[0] != 1.25 || p.Note != "" {
		t.Errorf("series %d (%q), note %q: want no budget, the budget, and capacity at 1.25", len(p.Series), p.Series[1].Name, p.Note)
	}
	if len(p.Series[0].X) != model.RetryCurveSteps+1 || p.Series[0].Y[model.RetryCurveSteps] != 4 {
		t.Errorf("the curve has %d points ending at %v", len(p.Series[0].X), p.Series[0].Y[len(p.Series[0].Y)-1])
	}
	low := retryChart(model.RetryAmplification(0.5, 3, 0, 0.1), "ra").Panels[0]
	if len(low.Series) != 1 || low.Note != "The capacity, 10 attempts a request, is above every point" {
		t.Errorf("at 10%% of capacity: %d series, note %q", len(low.Series), low.Note)
	}
}

// stopsInOrder reports a panel's stops that are not focusable or not in x
// order.
func stopsInOrder(t *testing.T, what string, p chart.Panel) {
	t.Helper()
	for i, s := range p.Stops {
		if !s.Focus || i > 0 && s.X < p.Stops[i-1].X {
			t.Errorf("%s: stop %d %+v: want focusable, in x order", what, i, s)
		}
	}
}

// The variability chart: a curve for cs² = 0, 1, 2 and the learner's, the
// learner's in the accent colour and named as theirs; the title says so
// only when the wait is Kingman's approximation; the table every tenth of
// ρ.
func TestVariabilityChart(t *testing.T) {
	c := variabilityChart(model.VariabilityWait(1, 20, 0.7, 1, 5), "vw")
	p := c.Panels[0]
	var names []string
	for _, s := range p.Series {
		names = append(names, s.Name+"/"+s.Quantity)
	}
	if got := strings.Join(names, ", "); got != "cs² = 0, constant/mean, cs² = 1, exponential/b, cs² = 2/c, cs² = 5 (yours)/accent" {
		t.Errorf("series %q", got)
	}
	if strings.Contains(c.Title, "approximation") || len(c.Table.Rows) != 10 || len(c.Table.Head) != 5 || c.Table.Rows[5][0] != "50%" || c.Table.Rows[5][2] != "20" {
		t.Errorf("title %q, table %q: want no approximation (Pollaczek–Khinchine is exact), 10 rows, 20 ms at 50%% for cs² = 1", c.Title, c.Table.Rows)
	}
	stopsInOrder(t, "variability", p)
	if approx := variabilityChart(model.VariabilityWait(4, 20, 0.7, 1, 2), "vw"); !strings.HasSuffix(approx.Title, "(Kingman's approximation)") || len(approx.Panels[0].Series) != 3 ||
		approx.Panels[0].Series[2].Quantity != "accent" {
		t.Errorf("four servers, cs² = 2: title %q, %d series, the learner's in %q", approx.Title, len(approx.Panels[0].Series), approx.Panels[0].Series[2].Quantity)
	}
}

// The fan-out chart: the slow share in percent from k = 1 to the curve's
// end, the learner's k marked, the half-slow k marked and a stop unless it
// is the learner's own, and a note when nothing is slow.
func TestFanoutChart(t *testing.T) {
	c := fanoutChart(model.FanoutTail(100, 0.01, 0.99), "ft")
	p := c.Panels[0]
	s := p.Series[0]
	if c.XMax != 100 || p.YMax != 100 || s.X[0] != 1 || math.Abs(s.Y[len(s.Y)-1]-63.39676587267705) > 1e-9 {
		t.Errorf("x to %v, y to %v, the curve from %v to %v%%", c.XMax, p.YMax, s.X[0], s.Y[len(s.Y)-1])
	}
	if len(p.Marks) != 2 || p.Marks[1].Label != "half slow" || p.Marks[1].X != 69 || len(p.Stops) != 2 {
		t.Errorf("marks %+v, %d stops: want k = 100 and half slow at 69", p.Marks, len(p.Stops))
	}
	stopsInOrder(t, "fan-out", p)
	at := fanoutChart(model.FanoutTail(69, 0.01, 0.99), "ft").Panels[0]
	if len(at.Stops) != 1 {
		t.Errorf("k = 69, where half are slow: %d stops, want the learner's alone", len(at.Stops))
	}
	var ks []string
	for _, r := range c.Table.Rows {
		ks = append(ks, r[0])
	}
	if got := strings.Join(ks, ","); got != "1,10,20,30,40,50,60,70,80,90,100" || c.Table.Rows[10][1] != "63.4" {
		t.Errorf("table rows at k = %s, %q at 100", got, c.Table.Rows[10][1])
	}
	far := fanoutChart(model.FanoutTail(450, 0, 0.99), "ft")
	if far.XMax != 500 || far.Panels[0].Note != "No sub-request is slow: no request is" || len(far.Panels[0].Marks) != 1 {
		t.Errorf("k = 450, p = 0: x to %v, note %q, %d marks", far.XMax, far.Panels[0].Note, len(far.Panels[0].Marks))
	}
}

// The USL chart: X(N) and λN over N = 1 … N max, the y axis half again
// above X's top (λN is clipped there, so X keeps the height); the peak
// marked within N max, noted past it or when there is none; the table
// ends at N max.
func TestUSLChart(t *testing.T) {
	u := model.UniversalScalability(100, 0.05, 0.001, 64)
	c := uslChart(u, "usl")
	p := c.Panels[0]
	if c.XMax != 64 || math.Abs(p.YMax-1.5*float64(u.PeakX)) > 3 || len(p.Series) != 2 || len(p.Series[0].X) != 64 {
		t.Errorf("x to %v, y to %v (the peak is %v), %d series", c.XMax, p.YMax, u.PeakX, len(p.Series))
	}
	if len(p.Marks) != 1 || !strings.HasPrefix(p.Marks[0].Label, "peak N* = 30.82") || p.Note != "" {
		t.Errorf("marks %+v, note %q", p.Marks, p.Note)
	}
	stopsInOrder(t, "usl", p)
	if rows := c.Table.Rows; rows[len(rows)-1][0] != "64" || rows[0][0] != "1" {
		t.Errorf("table from %q to %q", rows[0][0], rows[len(rows)-1][0])
	}
	short := uslChart(model.UniversalScalability(100, 0.05, 0.001, 20), "usl").Panels[0]
	if short.Note != "The peak, N* = 30.82, is past N max" || len(short.Marks) != 0 {
		t.Errorf("20 clients: note %q, %d marks", short.Note, len(short.Marks))
	}
	none := uslChart(model.UniversalScalability(100, 0.05, 0, 64), "usl").Panels[0]
	if none.Note != "No peak: κ = 0" || len(none.Marks) != 0 {
		t.Errorf("κ = 0: note %q, %d marks", none.Note, len(none.Marks))
	}
	if one := uslChart(model.UniversalScalability(100, 0.05, 0.001, 1), "usl"); len(one.Panels[0].Series[0].X) != 1 {
		t.Errorf("one client: %d points", len(one.Panels[0].Series[0].X))
	}
}

// BenchmarkQueueCurvePlot builds and renders a queue curve's plot, as a
// widget page does for values the cache has not seen.
func BenchmarkQueueCurvePlot(b *testing.B) {
	q := model.QueueCurve(4, 20, 150)
	ctx := context.Background()
	for b.Loop() {
		if _, err := renderString(ctx, chart.Figure(queueCurveChart(q, "qc"))); err != nil {
			b.Fatal(err)
		}
	}
}
