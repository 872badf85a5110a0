package web

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/go-chi/chi/v5"

	"capacitylab/chart"
	"capacitylab/lessons"
	"capacitylab/recorder"
	"capacitylab/result"
	"capacitylab/runner"
)

// A run over time (issue 17) samples every second of its windows
// (result.Sample). Its page and a lab block's live panel draw the samples
// as a time chart (chart.TimeChart) above the chart of its rows, kept per
// run and number of samples as the rows' chart is; the samples download
// as CSV; a lesson's recorded time table (lessons.Table.TimeTable) is drawn
// the same way above its table.

// timeRunOf is what the time chart needs of a run: its samples and the
// request's windows, knob changes and caller's timeout.
func timeRunOf(q runner.Request, samples []result.Sample, id string) chart.TimeRun {
	return chart.TimeRun{ID: id, Samples: samples, Changes: q.At, Windows: q.Windows(), Seconds: q.Seconds,
		TimeoutMS: float64(q.Timeout().Milliseconds()), Retrying: q.Retry != ""}
}

// overTime reports whether v's panel shows the time chart: it has samples.
func (v runView) overTime() bool { return len(v.Samples) > 0 }

// timeChartOf is the time chart of v's samples, rendered, kept per run and
// number of samples (a class of watchers costs one rendering a second,
// not one each).
func (s *server) timeChartOf(v runView) chartEntry {
	key := "time/" + v.ID + "/" + strconv.Itoa(len(v.Samples))
	e, _ := s.charts.getOrMake(key, func() (chartEntry, bool, error) {
		c := chart.TimeChart(timeRunOf(v.Request, v.Samples, "time-"+panelID(v)))
		return chartEntry{chart: c, html: renderChart(c)}, true, nil
	})
	return e
}

// renderChart is a chart's figure as HTML.
func renderChart(c chart.Chart) string {
	html, err := renderString(context.Background(), chart.Figure(c))
	if err != nil {
		// templ writes into memory here: only a bug gets this far.
		return "<p>The chart could not be drawn.</p>"
	}
	return html
}

// tableTimeChart is a recorded time table's chart: its rows as samples,
// with its preset's knob changes, windows and caller's timeout; false when
// the table is not a time table or its rows cannot be read (the lessons'
// check names a bad cell: the table still shows).
func tableTimeChart(t *lessons.Table) (chart.Chart, bool) {
	if !t.TimeTable() || len(t.Rows) == 0 {
		return chart.Chart{}, false
	}
	samples, err := result.ParseSamples(t.Columns, t.Rows)
	if err != nil {
		return chart.Chart{}, false
	}
	var q runner.Request
	if t.Lab != nil {
		q.Preset = recorder.Preset(t.Lab)
	}
	r := timeRunOf(q, samples, t.ID+"-time")
	r.QueuedOnly = !slices.Contains(t.Columns, "in_service")
	c := chart.TimeChart(r)
	c.Title = "The recorded run over time, a second at a time"
	return c, true
}

// storedSamples are the samples of a run the runner no longer holds, from
// its stored sample events.
func (s *server) storedSamples(ctx context.Context, id string) ([]result.Sample, error) {
	events, err := s.store.RunEvents(ctx, id, 0)
	if err != nil {
		return nil, err
	}
	var out []result.Sample
	for _, e := range events {
		if runner.Kind(e.Kind) != runner.KindSample {
			continue
		}
		var ev runner.Event
		if err := json.Unmarshal(e.JSON, &ev); err != nil {
			return nil, fmt.Errorf("run %s: stored event %d: %w", id, e.Seq, err)
		}
		if ev.Sample != nil {
			out = append(out, *ev.Sample)
		}
	}
	return out, nil
}

// samplesCSV is GET /runs/{id}/samples.csv: every sample of a run over
// time, one line a second (result.SampleColumns); a run without samples
// is a 404.
func (s *server) samplesCSV(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	v, err := s.loadRun(r, id, false)
	if err != nil {
		return err
	}
	if !v.overTime() {
		return &Error{Code: CodeNotFound, Title: "No samples", Message: "Run " + id + " has no samples: only a run over time samples every second.",
			Links: []errorLink{{"Back to the run", runURL(id)}}}
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="run-`+id+`-samples.csv"`)
	cw := csv.NewWriter(w)
	cw.Write(result.SampleColumns())
	for _, smp := range v.Samples {
		cw.Write(smp.Cells())
	}
	cw.Flush()
	return cw.Error()
}
