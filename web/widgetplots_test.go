package web

import (
	"context"
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
