package web

import (
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"

	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/runner"
)

// The prediction beside a run is the two-ceilings throughput and the
// M/M/c latency; in M/M/1 the response time is exponential with mean
// S ÷ (1 − ρ), so its p-th percentile is −ln(1 − p) × S ÷ (1 − ρ).
func TestPredictAt(t *testing.T) {
	mm1 := func(p, serviceMS, rho float64) float64 { return -math.Log(1-p) * serviceMS / (1 - rho) }
	tests := []struct {
		name     string
		lab      labsvc.Config
		offered  float64
		ok       float64
		p50, p99 float64 // NaN: no steady state
	}{
		// One worker of 20 ms at half load: workers bind, M/M/1 with S = 20 ms.
		{"worker bound, half load", labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1}, 25, 25, mm1(0.5, 20, 0.5), mm1(0.99, 20, 0.5)},
		// Beyond the 50/s ceiling: throughput is the ceiling, latency has no steady state.
		{"worker bound, overloaded", labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1}, 80, 50, math.NaN(), math.NaN()},
		// Twenty workers but one CPU spinning 2 ms: the processor binds at 500/s;
		// the queue is the CPU (S = 2 ms) and every request then waits 18 ms more.
		{"processor bound", labsvc.Config{Workers: 20, SpinMS: 2, WaitMS: 18, CPUs: 1}, 250, 250, mm1(0.5, 2, 0.5) + 18, mm1(0.99, 2, 0.5) + 18},
		// No work per request: no queue to model, throughput is what is offered.
		{"no work", labsvc.Config{Workers: 1, SpinMS: 0, WaitMS: 0, CPUs: 1}, 100, 100, math.NaN(), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := predictAt(runner.Request{Config: tt.lab}, tt.offered)
			if math.Abs(p.OKPerSec-tt.ok) > 1e-9 {
				t.Errorf("ok/s %v, want %v", p.OKPerSec, tt.ok)
			}
			check := func(name string, got *float64, want float64) {
				if math.IsNaN(want) {
					if got != nil {
						t.Errorf("%s = %v, want none (no steady state)", name, *got)
					}
					return
				}
				if got == nil || math.Abs(*got-want) > 0.01*want {
					t.Errorf("%s = %v, want %.3f", name, got, want)
				}
			}
			check("p50", p.P50MS, tt.p50)
			check("p99", p.P99MS, tt.p99)
		})
	}
}

// The chart is well-formed SVG with a title and description, one measured
// point per row for each series, and the model drawn even with no rows.
func TestRunChartSVG(t *testing.T) {
	q := runner.Request{Config: labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1}, Rates: []float64{20, 40, 60}, Seconds: 1}
	rows := []loadrun.Row{
		{Window: 0, Offered: 20, OKPerSec: 21, P50MS: 30, P99MS: 78},
		{Window: 1, Offered: 40, OKPerSec: 27, P50MS: 45, P99MS: 95},
	}
	tests := []struct {
		name string
		rows []loadrun.Row
	}{
		// Before the first row: only the model.
		{"no rows", nil},
		// Mid-run: two of three windows.
		{"two rows", rows},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svg := runChartSVG(q, tt.rows, predict(q, tt.rows), "c1")
			dec := xml.NewDecoder(strings.NewReader(svg))
			for {
				if _, err := dec.Token(); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("not well-formed: %v\n%s", err, svg)
				}
			}
			for _, want := range []string{`aria-labelledby="c1-title c1-desc"`, `<title id="c1-title">`, `class="chart-model-ok"`, `class="chart-model-p50"`} {
				if !strings.Contains(svg, want) {
					t.Errorf("chart lacks %s", want)
				}
			}
			for _, series := range []string{"chart-ok-point", "chart-p50-point", "chart-p99-point"} {
				if got := strings.Count(svg, `class="`+series+`"`); got != len(tt.rows) {
					t.Errorf("%d %s marks, want one per row (%d)", got, series, len(tt.rows))
				}
			}
			if strings.Contains(svg, "style=") {
				t.Error("chart uses style attributes, which the page's CSP forbids")
			}
		})
	}
}

// BenchmarkRunChartSVG draws the chart of a finished 8-window run, as
// /runs/{id}/chart.svg does after every row.
func BenchmarkRunChartSVG(b *testing.B) {
	q := runner.Request{Config: labsvc.Config{Workers: 4, SpinMS: 2, WaitMS: 18, CPUs: 1}, Rates: []float64{25, 50, 75, 100, 125, 150, 175, 200}, Seconds: 1}
	var rows []loadrun.Row
	for i, r := range q.Rates {
		rows = append(rows, loadrun.Row{Window: i, Offered: r, OKPerSec: math.Min(r, 190), P50MS: 20 + float64(i), P99MS: 40 + 10*float64(i)})
	}
	for b.Loop() {
		runChartSVG(q, rows, predict(q, rows), "bench")
	}
}
