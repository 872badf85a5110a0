package evidence

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"

	"capacitylab/chart"
	"capacitylab/model"
	"capacitylab/result"
	"capacitylab/static"
)

// reportCSS is the report's own few rules, after the site's stylesheet
// (static's css/app.css, whose colours, light and dark, tables and charts
// the report uses as the site does).
const reportCSS = `
main.wide section > p, main.wide section > dl, main.wide section > ol { max-width: var(--measure); }
.checklist { list-style: none; padding: 0; }
.checklist li { margin: 0.6rem 0; padding: 0.5rem 0.8rem; border-left: 5px solid var(--line); background: var(--panel); }
.checklist li.met { border-left-color: var(--ok); }
.checklist li.unmet { border-left-color: var(--bad); border-left-style: double; border-left-width: 7px; }
.checklist .verdict { font-weight: 700; margin-right: 0.4rem; }
.checklist .met .verdict { color: var(--ok); }
.checklist .unmet .verdict { color: var(--bad); }
.checklist .item-title { font-weight: 600; }
.checklist p { margin: 0.25rem 0 0; }
table.numbers th:not(:first-child) { text-align: right; }
td.note { text-align: left; min-width: 12rem; }
@media (max-width: 30rem) {
	dl.values { grid-template-columns: minmax(0, 1fr); gap: 0; }
	dl.values dd { margin-bottom: 0.5rem; }
}
.report-foot { margin-top: 3rem; border-top: 1px solid var(--line); padding-top: 1rem; }
`

// reportView is everything the report's template shows, as text.
type reportView struct {
	Title    string
	CSS      string
	Lead     string
	Tested   []Fact
	Summary  []Fact
	Charts   []chart.Chart
	Rows     Part
	Little   Part
	Queue    Part
	Gauges   Part
	Analysis Analysis // its warnings, limit (Limit) and checklist (Checklist)
	Met      int
}

// WriteReport writes a's report of d as one self-contained HTML file: the
// site's stylesheet inlined, the charts as inline SVG (package chart),
// no script and nothing fetched, so it opens from a file in any browser,
// light or dark, at any width down to a phone's.
func WriteReport(w io.Writer, d Dataset, a Analysis) error {
	css, err := fs.ReadFile(static.FS(), "css/app.css")
	if err != nil {
		return fmt.Errorf("the site's stylesheet: %w", err)
	}
	v := view(d, a)
	v.CSS = string(css) + reportCSS
	return reportPage(v).Render(context.Background(), w)
}

func dash(v float64) string {
	if v < 0 {
		return "—"
	}
	return exact(v)
}

func count(v int) string {
	if v < 0 {
		return "—"
	}
	return strconv.Itoa(v)
}

func view(d Dataset, a Analysis) reportView {
	name := d.Name
	if name == "" {
		name = "a load test"
	}
	v := reportView{Title: "Capacity evidence: " + name, Analysis: a}
	for _, c := range a.Checklist {
		if c.Met {
			v.Met++
		}
	}
	v.Tested = tested(d, a)
	v.Summary = Summary(a)
	v.Lead = lead(a)
	v.Charts = Charts(a)
	v.Rows = rowsPart(a)
	v.Little = LittlePart(d, a)
	v.Queue = QueuePart(a)
	v.Gauges = GaugePart(a)
	return v
}

func tool(d Dataset) string {
	switch {
	case d.Data != nil && d.Data.Tool != "":
		return d.Data.Tool
	case d.Format == VegetaCSV:
		return "vegeta (its results as CSV)"
	case d.Format == K6JSON:
		return "k6 (its JSON output)"
	case d.Format == K6CSV:
		return "k6 (its CSV output)"
	}
	return "capacitylab load"
}

func tested(d Dataset, a Analysis) []Fact {
	f := []Fact{{Term: "Tool", Value: tool(d)}, {Term: "File", Value: cmp.Or(d.Name, "—")}}
	if d.Data != nil {
		if d.Data.Target != "" {
			f = append(f, Fact{Term: "Target", Value: d.Data.Target})
		}
		if !d.Data.StartedAt.IsZero() {
			f = append(f, Fact{Term: "Started", Value: d.Data.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC")})
		}
	}
	if len(a.Rows) > 0 {
		lo, hi := a.Rows[0].Offered, a.Rows[0].Offered
		secs := map[float64]bool{}
		for _, r := range a.Rows {
			lo, hi = min(lo, r.Offered), max(hi, r.Offered)
			secs[r.Seconds] = true
		}
		ws := fmt.Sprintf("%d, offered %s to %s a second", len(a.Rows), model.Format(lo), model.Format(hi))
		if len(secs) == 1 {
			ws += ", " + model.Format(a.Rows[0].Seconds) + " s each"
		}
		f = append(f, Fact{Term: "Windows", Value: ws})
	}
	loop := "open loop: arrivals on a schedule, latency from when each request was due"
	switch {
	case slices.ContainsFunc(a.Rows, func(r result.Row) bool { return r.Clients > 0 }):
		loop = "closed loop: a fixed number of clients, each waiting for its answer"
	case d.Timing == FromSent:
		loop = "latency from when each request was actually sent (hides a generator's own queueing)"
	}
	if d.Data != nil && d.Data.Schedule != "" && d.Timing == FromIntended {
		loop += ", " + d.Data.Schedule + " arrivals"
	}
	f = append(f, Fact{Term: "Timing", Value: loop})
	if d.Data != nil && d.Data.TimeoutMS > 0 {
		f = append(f, Fact{Term: "Caller's timeout", Value: model.Format(d.Data.TimeoutMS) + " ms"})
	}
	if d.Data != nil && d.Data.Stopped != "" {
		f = append(f, Fact{Term: "The knee search stopped", Value: d.Data.Stopped})
	}
	// The records the rows were folded from (every arrival of every
	// window), so a report needs the analysis, not the records again.
	n := 0
	for _, r := range a.Rows {
		n += r.Arrivals
	}
	f = append(f, Fact{Term: "Records", Value: strconv.Itoa(n)})
	return f
}

func lead(a Analysis) string {
	met := 0
	for _, c := range a.Checklist {
		if c.Met {
			met++
		}
	}
	return fmt.Sprintf("%d windows analysed by the course's method; the evidence meets %d of the checklist's %d items.", len(a.Rows), met, len(a.Checklist))
}

// rowsPart is each window's row, with every column load computes.
func rowsPart(a Analysis) Part {
	t := &Table{ID: "rows-caption", Caption: "Each window's row, as load computes it from the records",
		Head: []string{"window", "offered", "sent", "ok", "refused", "gaveup", "error", "ok_per_sec", "p50_ms", "p95_ms", "p99_ms", "n", "mean_ms", "max_ms",
			"not_sent", "client_busy", "late", "send_lag_p99_ms", "lost"}}
	lab := slices.ContainsFunc(a.Rows, func(r result.Row) bool { return r.Done >= 0 || r.Queued >= 0 })
	closed := slices.ContainsFunc(a.Rows, func(r result.Row) bool { return r.Clients > 0 })
	if lab {
		t.Head = append(t.Head, "done", "queued", "lab_service_ms", "lab_cpu_ms")
	}
	if closed {
		t.Head = slices.Insert(t.Head, 1, "clients")
	}
	for i, r := range a.Rows {
		ms := func(v float64) string {
			if r.N == 0 {
				return "—"
			}
			return exact(v)
		}
		c := []string{strconv.Itoa(i + 1), exact(r.Offered), count(r.Sent), count(r.OK), count(r.Refused), count(r.Gaveup), count(r.Error),
			exact(r.OKPerSec), ms(r.P50MS), ms(r.P95MS), ms(r.P99MS), count(r.N), ms(r.MeanMS), ms(r.MaxMS),
			count(r.NotSent), count(r.ClientBusy), count(r.Late), exact(r.SendLagP99MS), count(r.Lost)}
		if lab {
			c = append(c, count(r.Done), count(r.Queued), dash(r.LabServiceMS), dash(r.LabCPUMS))
		}
		if closed {
			c = slices.Insert(c, 1, count(r.Clients))
		}
		t.Rows = append(t.Rows, c)
		t.Note = append(t.Note, r.Note)
	}
	if !slices.ContainsFunc(t.Note, func(n string) bool { return n != "" }) {
		t.Note = nil
	}
	return Part{Table: t, Text: "One row a window, with the lessons' columns: counts of how requests ended, ok answers a second, nearest-rank percentiles of the ok answers' latency over n, " +
		"and whether the generator kept its schedule (late, send lag). A dash is a column this test did not measure."}
}
