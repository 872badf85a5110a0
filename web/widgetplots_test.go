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
