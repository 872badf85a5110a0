package web

import (
	"context"
	"math"
	"strings"
	"testing"

	"capacitylab/chart"
	"capacitylab/labsvc"
	"capacitylab/measure"
	"capacitylab/result"
	"capacitylab/runner"
)

// predictAt is model.Lab.At for a run's request, with "no steady state"
// as null (the formulas are tested in package model).
func TestPredictAt(t *testing.T) {
	q := runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1}}}
	if p := predictAt(q, 25); p.OKPerSec != 25 || p.P50MS == nil || p.P99MS == nil || *p.P99MS < *p.P50MS {
		t.Errorf("half load: %+v", p)
	}
	if p := predictAt(q, 80); p.OKPerSec != 50 || p.P50MS != nil || p.P99MS != nil {
		t.Errorf("overloaded: %+v, want the ceiling and no latency", p)
	}
}

// With client workers (MaxInFlight) the prediction is the M/M/c/K model
// behind them: past the lab's capacity the client turns arrivals away
// (client busy) instead of the queue growing without end, so there is a
// latency to show; the chart's model lines, the throughput stops and the
// description say so.
func TestPredictWithClientWorkers(t *testing.T) {
	q := runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 2, WaitMS: 20, CPUs: 1}, Rates: []float64{50, 150}, Seconds: 1,
		MaxInFlight: 6}}
	over := predictAt(q, 150)
	if over.P99MS == nil || over.ClientBusyPerSec <= 0 || over.OKPerSec >= 100 || math.Abs(over.OKPerSec+over.ClientBusyPerSec-150) > 1e-9 {
		t.Errorf("overloaded behind 6 client workers: %+v, want ok under the 100/s ceiling, the rest client busy, and a p99", over)
	}
	rows := []result.Row{{Window: 0, Offered: 50, OKPerSec: 49, ClientBusy: 1, Seconds: 1, P50MS: 22, P99MS: 40}}
	c := runChart(q, rows, predict(q, rows), "c1")
	okModel := c.Panels[0].Series[1]
	if !strings.Contains(okModel.Name, "M/M/c/K, K = 6") || len(okModel.X) < 50 || !strings.Contains(c.Panels[1].Series[1].Name, "M/M/c/K") {
		t.Errorf("model series %q (%d points), %q: want the M/M/c/K curve", okModel.Name, len(okModel.X), c.Panels[1].Series[1].Name)
	}
	if top, p99 := c.Panels[1].YMax, c.Panels[1].Series[1].Y[len(c.Panels[1].Series[1].Y)-1]; top < p99 {
		t.Errorf("latency axis up to %v, below the model's bounded p99 %v: its line would leave the chart", top, p99)
	}
	if got := strings.Join(c.Panels[0].Stops[0].Lines, " | "); !strings.Contains(got, "client busy 1/s (model ") {
		t.Errorf("throughput stop %q, want the client busy beside the model's", got)
	}
	if !strings.Contains(c.Desc, "A client of 6 workers sends at most 300 a second") {
		t.Errorf("description %q, want the client's limit named", c.Desc)
	}
	if !strings.Contains(modelNote(q), "client of 6 workers") {
		t.Errorf("model note %q, want the client's workers named", modelNote(q))
	}
}

// The run chart: a stop per measured window in each panel, named as
// people count windows (from 1) with the model's value beside the
// measurement; the table has every window, measured or not yet.
func TestRunChart(t *testing.T) {
	q := runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1}, Rates: []float64{20, 40, 60}, Seconds: 1}}
	rows := []result.Row{
		{Window: 0, Offered: 20, OKPerSec: 21, P50MS: 30, P99MS: 78},
		{Window: 1, Offered: 40, OKPerSec: 27, P50MS: 45, P99MS: 95},
	}
	tests := []struct {
		name string
		rows []result.Row
	}{
		// Before the first row: only the model, every window "not yet".
		{"no rows", nil},
		// Mid-run: two of three windows.
		{"two rows", rows},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := runChart(q, tt.rows, predict(q, tt.rows), "c1")
			if len(c.Panels) != 2 {
				t.Fatalf("%d panels, want throughput and latency", len(c.Panels))
			}
			for _, p := range c.Panels {
				if len(p.Stops) != len(tt.rows) {
					t.Errorf("%s: %d stops, want one per row", p.Title, len(p.Stops))
				}
				for i, s := range p.Stops {
					if !s.Focus || !strings.HasPrefix(s.Lines[0], windowName(i)+": offered") || !strings.Contains(strings.Join(s.Lines, " "), "(model ") {
						t.Errorf("%s stop %d: %q", p.Title, i, s.Lines)
					}
				}
			}
			if len(c.Table.Rows) != 3 || c.Table.Rows[0][0] != "1" || c.Table.Rows[2][0] != "3" {
				t.Errorf("table rows %q, want windows 1 to 3", c.Table.Rows)
			}
			if len(tt.rows) == 0 && c.Table.Rows[0][2] != "not yet" {
				t.Errorf("an unmeasured window shows %q", c.Table.Rows[0][2])
			}
			if windowName(0) != "Window 1" {
				t.Error("windows are not counted from 1")
			}
		})
	}
}

// The latency distribution of a window: the bins hold every ok answer
// (or count it past the axis), p50 and p99 are nearest rank and marked,
// and the other outcomes are counted in words.
func TestDistributionChart(t *testing.T) {
	d := distribution{Window: 2, Refused: 3, Gaveup: 1}
	for i := 1; i <= 100; i++ {
		d.OK++
		d.LatMS = append(d.LatMS, float64(i)) // 1..100 ms
	}
	d.OK++
	d.LatMS = append(d.LatMS, 900) // one far outlier: past 3 × p99
	c := distributionChart(d, "dist")
	p := c.Panels[0]
	total := 0.0
	for _, y := range p.Series[0].Y {
		total += y
	}
	if total != 100 || !strings.Contains(p.Note, "1 past 200 ms (longest 900 ms)") {
		t.Errorf("bins hold %v answers, note %q; want 100 and the outlier counted past 200 ms", total, p.Note)
	}
	if len(p.Marks) != 2 || p.Marks[0].Label != "p50 51 ms" || p.Marks[1].Label != "p99 100 ms" {
		t.Errorf("marks %+v, want nearest-rank p50 51 and p99 100 of 101 answers", p.Marks)
	}
	focus := 0
	for i, s := range p.Stops {
		if s.Focus {
			focus++
		}
		if i > 0 && s.X < p.Stops[i-1].X {
			t.Error("stops out of order")
		}
	}
	if focus != 2 {
		t.Errorf("%d stops reachable by keyboard, want the two percentiles", focus)
	}
	if !strings.Contains(c.Title, "window 3") || !strings.Contains(c.Desc, "105 requests sent, 101 were answered ok, 3 refused, 1 given up on") {
		t.Errorf("title %q desc %q", c.Title, c.Desc)
	}
	// An empty window draws an empty axis, not a NaN.
	empty := distributionChart(distribution{Window: 0}, "e")
	var b strings.Builder
	if err := chart.Figure(empty).Render(context.Background(), &b); err != nil || strings.Contains(b.String(), "NaN") {
		t.Errorf("empty window: %v %s", err, b.String())
	}
}

// Compare marks exactly the settings that differ, and says which in words.
func TestCompareSettings(t *testing.T) {
	a := runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1}, Rates: []float64{40, 80}, Seconds: 2, Seed: 1, Mode: runner.ModeOpen}}
	b := a
	b.Limit = 9
	b.Rates = []float64{40, 80, 120}
	ps := compareSettings(a, b)
	var differ []string
	for _, p := range ps {
		if p.Differs {
			differ = append(differ, p.Label)
		}
	}
	if strings.Join(differ, ",") != "Admission limit,Load" {
		t.Errorf("differing settings %q, want the limit and the load", differ)
	}
	if got := differingLabels(ps); got != "The runs differ in 2 settings: admission limit and load." {
		t.Errorf("summary %q", got)
	}
	if got := differingLabels(compareSettings(a, a)); !strings.HasPrefix(got, "The two runs have the same settings") {
		t.Errorf("same settings: %q", got)
	}
	// Who accepts callers and the backlog are settings like the others.
	d := a
	d.Accept, d.Backlog = labsvc.AcceptWorkers, 8
	if got := differingLabels(compareSettings(a, d)); got != "The runs differ in 2 settings: who accepts callers and listen backlog." {
		t.Errorf("door against workers: %q", got)
	}
	// A closed loop has no schedule: seeds that differ are not a difference.
	c1 := runner.Request{Preset: measure.Preset{Config: a.Config, Clients: []int{8}, Seconds: 2, Seed: 1, Mode: runner.ModeClosed}}
	c2 := c1
	c2.Seed = 99
	if got := differingLabels(compareSettings(c1, c2)); !strings.HasPrefix(got, "The two runs have the same settings") {
		t.Errorf("closed loops differing only in seed: %q", got)
	}
}

// Run titles are in words: the lesson and the preset.
func TestRunTitle(t *testing.T) {
	q := runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1}, Rates: []float64{10, 20, 40}, Mode: runner.ModeOpen}}
	if got := runTitle("How many requests are inside your service", q); got != "How many requests are inside your service — 1 worker, 10–40/s" {
		t.Errorf("title %q", got)
	}
	q.Workers, q.CPUs, q.Limit, q.Mode, q.Clients = 4, 2, 10, runner.ModeClosed, []int{16}
	if got := runTitle("", q); got != "A sweep — 4 workers, 2 CPUs, limit 10, 16 clients" {
		t.Errorf("title %q", got)
	}
	q.Clients = []int{1}
	if got := runTitle("", q); got != "A sweep — 4 workers, 2 CPUs, limit 10, 1 client" {
		t.Errorf("title %q", got)
	}
}

// Two runs of cap-inside's bad release, one with no limit and one with a
// quota of 5, have titles that tell them apart, naming the policy, the
// client's workers and the knob change; the quota run's settings do not
// say "Admission limit: none", and they name the policy in words.
func TestOverTimeRunsToldApart(t *testing.T) {
	c := loadCourse(t)
	lab := func(id string) runner.Request {
		l, _, ok := c.Lab(id)
		if !ok {
			t.Fatalf("no lab %s", id)
		}
		return labPreset(l)
	}
	queue, quota := lab("cap-release-queue"), lab("cap-release-quota")
	if got, want := runTitle("Cap what is inside", queue), "Cap what is inside — 7 workers, 50/s, a client of 10 workers, WAIT_MS=200 at 10 s"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	if got, want := runTitle("Cap what is inside", quota), "Cap what is inside — 7 workers, quota 5, 50/s, a client of 10 workers, WAIT_MS=200 at 10 s"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	if got := presetWords(lab("moves-aimd")); !strings.Contains(got, "policy aimd") {
		t.Errorf("AIMD run's words %q do not name the policy", got)
	}
	settings := map[string]string{}
	for _, st := range settingList(quota) {
		settings[st.Key] = st.Value
	}
	if strings.HasPrefix(settings["limit"], "none") || !strings.Contains(settings["limit"], "the admission policy decides") {
		t.Errorf("quota run's admission limit reads %q", settings["limit"])
	}
	if !strings.Contains(settings["policy"], "at most 5 requests inside") || !strings.Contains(settings["policy"], "inflight,quota=5") {
		t.Errorf("quota run's policy reads %q", settings["policy"])
	}
	if settings["at"] != "WAIT_MS=200 at 10 s, in every window" || !strings.Contains(settings["max_inflight"], "10 workers") {
		t.Errorf("quota run's changes %q, client workers %q", settings["at"], settings["max_inflight"])
	}
	differ := []string{}
	for _, p := range compareSettings(queue, quota) {
		if p.Differs {
			differ = append(differ, p.Label)
		}
	}
	if strings.Join(differ, ",") != "Admission limit,Admission policy" {
		t.Errorf("settings that differ: %v", differ)
	}
}

// BenchmarkRunChart builds and renders the chart of a finished 8-window
// run, as the server does once per row (the chart cache keeps it).
func BenchmarkRunChart(b *testing.B) {
	q := runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 4, SpinMS: 2, WaitMS: 18, CPUs: 1}, Rates: []float64{25, 50, 75, 100, 125, 150, 175, 200}, Seconds: 1}}
	var rows []result.Row
	for i, r := range q.Rates {
		rows = append(rows, result.Row{Window: i, Offered: r, OKPerSec: math.Min(r, 190), P50MS: 20 + float64(i), P99MS: 40 + 10*float64(i)})
	}
	benchRunChart(b, q, rows)
}

// BenchmarkRunChartClientWorkers is BenchmarkRunChart behind a client of
// the most workers a run may have (256): the M/M/c/K model at every curve
// point and window instead of one M/M/c curve.
func BenchmarkRunChartClientWorkers(b *testing.B) {
	q := runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 4, SpinMS: 2, WaitMS: 18, CPUs: 1}, Rates: []float64{25, 50, 75, 100, 125, 150, 175, 200}, Seconds: 1,
		MaxInFlight: 256}}
	var rows []result.Row
	for i, r := range q.Rates {
		rows = append(rows, result.Row{Window: i, Offered: r, OKPerSec: math.Min(r, 190), P50MS: 20 + float64(i), P99MS: 40 + 10*float64(i), Seconds: 1})
	}
	benchRunChart(b, q, rows)
}

func benchRunChart(b *testing.B, q runner.Request, rows []result.Row) {
	ctx := context.Background()
	for b.Loop() {
		c := runChart(q, rows, predict(q, rows), "bench")
		if _, err := renderString(ctx, chart.Figure(c)); err != nil {
			b.Fatal(err)
		}
	}
}

// The window's outcomes in words tell arrivals the client's own workers
// could not take (client_busy) from arrivals the generator did not send.
func TestOutcomesTextClientBusy(t *testing.T) {
	var d distribution
	for _, r := range []result.Record{
		{Outcome: result.OK}, {Outcome: result.OK}, {Outcome: result.Refused},
		{Outcome: result.NotSent, Reason: result.ReasonClientBusy},
		{Outcome: result.NotSent, Reason: result.ReasonClientBusy},
		{Outcome: result.NotSent, Reason: result.ReasonInFlightCap},
	} {
		d.add(r)
	}
	want := "Of 3 requests sent, 2 were answered ok, 1 refused. 2 were due when every client worker was busy, so the client did not send them. 1 was due but not sent."
	if got := outcomesText(d); got != want {
		t.Errorf("outcomesText = %q, want %q", got, want)
	}
}
