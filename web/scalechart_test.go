package web

import (
	"strings"
	"testing"

	"capacitylab/chart"
	"capacitylab/model"
	"capacitylab/result"
	"capacitylab/runner"
)

// A closed loop over several client counts is drawn against its clients
// with the Universal Scalability Law fitted to it: rows from a known curve
// (λ 100, σ 0.05, κ 0.01, peak at sqrt(0.95/0.01) ≈ 9.75 clients) give the
// fit's curve through them, the peak marked, and the coefficients in the
// description; an open loop, or fewer than three client counts, is not
// such a chart.
func TestScalabilityChart(t *testing.T) {
	q := runner.Request{}
	q.Mode = runner.ModeClosed
	var rows []result.Row
	for i, n := range []int{1, 2, 4, 8, 16, 32, 64} {
		rows = append(rows, result.Row{Window: i, Clients: n, OKPerSec: model.USLThroughput(100, 0.05, 0.01, float64(n)), P50MS: float64(n), P99MS: 2 * float64(n)})
	}
	if !scalable(q, rows) || scalable(q, rows[:2]) {
		t.Fatalf("scalable(7 client counts) = %v, (2) = %v; want true and false", scalable(q, rows), scalable(q, rows[:2]))
	}
	open := q
	open.Mode = runner.ModeOpen
	if scalable(open, rows) {
		t.Errorf("an open loop is scalable")
	}
	c := scalabilityChart(q, rows, "t")
	var fit, measured *chart.Series
	for i, s := range c.Panels[0].Series {
		switch s.Name {
		case "USL fit":
			fit = &c.Panels[0].Series[i]
		case "ok/s, measured":
			measured = &c.Panels[0].Series[i]
		}
	}
	if fit == nil || measured == nil || len(measured.X) != 7 || measured.X[6] != 64 {
		t.Fatalf("series %+v: want the fit and the 7 measured points at their client counts", c.Panels[0].Series)
	}
	if len(c.Panels[0].Marks) != 1 || c.Panels[0].Marks[0].X < 9.5 || c.Panels[0].Marks[0].X > 9.9 {
		t.Errorf("marks %+v: want the peak near 9.75 clients", c.Panels[0].Marks)
	}
	for _, want := range []string{"7 closed-loop windows, from 1 to 64 clients", "σ = 0.05", "κ = 0.01", "It peaks at 9.75 clients"} {
		if !strings.Contains(c.Desc, want) {
			t.Errorf("description %q lacks %q", c.Desc, want)
		}
	}
	if len(c.Table.Rows) != 7 || c.Table.Rows[3][0] != "8" || c.Table.Rows[3][1] != c.Table.Rows[3][2] {
		t.Errorf("table row for 8 clients %v: want the measured ok/s and the fit's equal on an exact curve", c.Table.Rows[3])
	}
}
