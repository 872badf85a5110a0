package web

import (
	"math"
	"slices"
	"strings"
	"testing"

	"capacitylab/chart"
	"capacitylab/lessons"
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
	c, words := scalabilityChart(q, rows, "t")
	if !strings.Contains(c.Desc, words) || words == "" {
		t.Errorf("the chart's description %q does not hold the fit's words %q", c.Desc, words)
	}
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

// The recorded sweep of more-workers-slower's third lab (coherency_us:
// 100) meets the goal for the Universal Scalability Law: the
// fit's peak throughput is within 10% of the highest measured, at about
// the client count measured highest, and throughput at the most clients
// is measurably lower than at the peak (below 80% of it); the lock's
// sweep fits with no peak inside it (κ about 0 or a peak past its
// clients), as Amdahl's law says.
func TestUSLFitOfTheRecordedSweeps(t *testing.T) {
	c := loadCourse(t)
	rowsOf := func(id string) []result.Row {
		t.Helper()
		for _, l := range c.Lessons {
			if b, ok := l.Block(id); ok {
				tb, ok := b.(*lessons.Table)
				if !ok {
					t.Fatalf("%s is not a table", id)
				}
				var rows []result.Row
				for _, cells := range tb.Rows {
					rows = append(rows, rowOfCells(tb.Columns, cells))
				}
				return rows
			}
		}
		t.Fatalf("no table %s in the course", id)
		return nil
	}
	rows := rowsOf("usl-coherency-result")
	fit, err := scaleFit(rows)
	if err != nil {
		t.Fatal(err)
	}
	best, bestN, last := 0.0, 0, rows[len(rows)-1]
	for _, r := range rows {
		if r.OKPerSec > best {
			best, bestN = r.OKPerSec, r.Clients
		}
	}
	peakX, peakN := float64(fit.PeakX), float64(fit.PeakN)
	t.Logf("coherency sweep: measured peak %.1f/s at %d clients, %.1f/s at %d; fit λ %.1f σ %.4f κ %.5f, peak %.1f/s at %.1f clients, RMS error %.1f%%",
		best, bestN, last.OKPerSec, last.Clients, float64(fit.Lambda), float64(fit.Sigma), float64(fit.Kappa), peakX, peakN, 100*float64(fit.RMSRelErr))
	if math.Abs(peakX-best)/best > 0.10 {
		t.Errorf("the fit's peak %.1f/s is not within 10%% of the measured %.1f/s", peakX, best)
	}
	if peakN < float64(bestN)/2 || peakN > float64(bestN)*2 {
		t.Errorf("the fit's peak at %.1f clients is far from the measured at %d", peakN, bestN)
	}
	if last.OKPerSec > 0.8*best {
		t.Errorf("at %d clients %.1f/s, not measurably below the peak %.1f/s", last.Clients, last.OKPerSec, best)
	}
	lock, err := scaleFit(rowsOf("usl-lock-result"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lock sweep: fit λ %.1f σ %.4f κ %.6f, peak at %.1f clients, RMS error %.1f%%", float64(lock.Lambda), float64(lock.Sigma), float64(lock.Kappa), float64(lock.PeakN), 100*float64(lock.RMSRelErr))
	free, err := scaleFit(rowsOf("usl-free-result"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("free sweep: fit peak at %.1f clients, RMS error %.1f%%", float64(free.PeakN), 100*float64(free.RMSRelErr))
	// The chart tells the sweeps the law describes from those it does not.
	if float64(fit.RMSRelErr) > poorFit || float64(lock.RMSRelErr) <= poorFit || float64(free.RMSRelErr) <= poorFit {
		t.Errorf("RMS errors %.3f (coherency), %.3f (lock), %.3f (free): want the first at most poorFit %.2f, the others above it", float64(fit.RMSRelErr), float64(lock.RMSRelErr), float64(free.RMSRelErr), poorFit)
	}
	if float64(lock.Sigma) < 0.05 {
		t.Errorf("the lock's sweep fits σ %.4f: want the serial part it has (a 2 ms lock in 12 ms of service, about 0.17)", float64(lock.Sigma))
	}
}

// A Predict settled by a closed loop of several windows reads its row by
// its client count: "with 64 clients", the recorded row's value; and the
// recorded table of such a preset is drawn against its clients.
func TestClosedSweepReadingAndChart(t *testing.T) {
	c := loadCourse(t)
	var tb *lessons.Table
	var q *lessons.Question
	for _, l := range c.Lessons {
		if b, ok := l.Block("usl-coherency-result"); ok {
			tb = b.(*lessons.Table)
		}
		if b, ok := l.Block("usl-predict"); ok {
			q = b.(*lessons.Question)
		}
	}
	if tb == nil || q == nil {
		t.Fatal("more-workers-slower's table or predict is missing")
	}
	rows := windowCells(q, tb.Lab, tb.Columns, tb.Rows)
	last := tb.Rows[len(tb.Rows)-1]
	if len(rows) != 1 || rows[0].Label != "with 64 clients" || rows[0].Gone != "" || len(rows[0].Cells) != 1 ||
		rows[0].Cells[0].Value != last[slices.Index(tb.Columns, "ok_per_sec")] {
		t.Errorf("reading = %+v, want the 64-client row's ok_per_sec %v", rows, last)
	}
	ch, ok := tableScaleChart(tb)
	if !ok || ch.XTitle != "Clients (closed loop)" || len(ch.Table.Rows) != len(tb.Rows) {
		t.Errorf("tableScaleChart = %v, %+v: want the recorded sweep against its clients", ok, ch.Table)
	}
}
