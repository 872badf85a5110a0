package evidence

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"

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

// cell is a table cell's text.
type reportTable struct {
	ID      string // the id of its caption, for the region's label
	Caption string
	Head    []string
	Rows    [][]string
	Note    []string // a note for each row, "" for none, shown in the last column when any is set
}

// fact is a term and its value in a definition list.
type fact struct{ Term, Value string }

// reportView is everything the report's template shows, as text.
type reportView struct {
	Title     string
	CSS       string
	Lead      string
	Tested    []fact
	Summary   []fact
	Charts    []chart.Chart
	Rows      reportTable
	Little    reportTable
	LittleP   string
	Queue     *reportTable
	QueueP    string
	Gauges    *reportTable
	Limit     *LimitAdvice
	LimitP    string
	Checklist []CheckItem
	Met       int
	Warnings  []string
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

// num is a figure for a reader (model.Format), "—" for a column the
// tool did not measure (-1).
func num(v float64) string {
	if v < 0 {
		return "—"
	}
	return model.Format(v)
}

// exact is a figure as load's rows carry it (already rounded: rates to
// two decimals, times to the µs), so the tables show load's own numbers.
func exact(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

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
	v := reportView{Title: "Capacity evidence: " + name, Checklist: a.Checklist, Warnings: a.Warnings, Limit: a.Limit}
	for _, c := range a.Checklist {
		if c.Met {
			v.Met++
		}
	}
	v.Tested = tested(d, a)
	v.Summary = summary(a)
	v.Lead = lead(a)
	v.Charts = charts(a)
	v.Rows = rowsTable(a)
	v.Little, v.LittleP = littleTable(d, a)
	v.Queue, v.QueueP = queueTable(a)
	v.Gauges = gaugeTable(a)
	v.LimitP = limitText(a)
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

func tested(d Dataset, a Analysis) []fact {
	f := []fact{{"Tool", tool(d)}, {"File", cmp.Or(d.Name, "—")}}
	if d.Data != nil {
		if d.Data.Target != "" {
			f = append(f, fact{"Target", d.Data.Target})
		}
		if !d.Data.StartedAt.IsZero() {
			f = append(f, fact{"Started", d.Data.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC")})
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
		f = append(f, fact{"Windows", ws})
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
	f = append(f, fact{"Timing", loop})
	if d.Data != nil && d.Data.TimeoutMS > 0 {
		f = append(f, fact{"Caller's timeout", model.Format(d.Data.TimeoutMS) + " ms"})
	}
	if d.Data != nil && d.Data.Stopped != "" {
		f = append(f, fact{"The knee search stopped", d.Data.Stopped})
	}
	// The records the rows were folded from (every arrival of every
	// window), so a report needs the analysis, not the records again.
	n := 0
	for _, r := range a.Rows {
		n += r.Arrivals
	}
	f = append(f, fact{"Records", strconv.Itoa(n)})
	return f
}

// quoted is the window whose percentiles the summary quotes: the busiest
// below the knee, or the lightest when none is below it.
func quoted(a Analysis) int {
	q := -1
	for i, r := range a.Rows {
		if below(a, i) && r.N > 0 && (q < 0 || r.Offered > a.Rows[q].Offered) {
			q = i
		}
	}
	if q < 0 {
		q = lightest(a.Rows)
	}
	return q
}

func summary(a Analysis) []fact {
	var f []fact
	if a.Knee >= 0 {
		f = append(f, fact{"First saturation point", a.KneeWhy})
	} else {
		f = append(f, fact{"First saturation point", "not reached: " + a.KneeWhy})
	}
	if a.CeilingWindow >= 0 {
		f = append(f, fact{"Ceiling", exact(a.Ceiling) + " ok answers a second, in " + windowName(a.Rows, a.CeilingWindow)})
	}
	if q := quoted(a); q >= 0 {
		r := a.Rows[q]
		f = append(f, fact{"Latency in " + windowName(a.Rows, q), fmt.Sprintf("p50 %s ms, p95 %s ms, p99 %s ms over n = %d ok answers", exact(r.P50MS), exact(r.P95MS), exact(r.P99MS), r.N)})
	}
	var ref, gave, bad, sent int
	for _, r := range a.Rows {
		ref, gave, bad, sent = ref+r.Refused, gave+r.Gaveup, bad+r.Error, sent+r.Sent
	}
	f = append(f, fact{"Not answered ok", fmt.Sprintf("%d refused, %d gave up, %d failed of %d sent", ref, gave, bad, sent)})
	if a.Limit != nil && a.Limit.Feasible {
		f = append(f, fact{"Admission limit", fmt.Sprintf("%d waiting (%d in flight at most) for a %s ms budget", a.Limit.Limit, a.Limit.InFlight, model.Format(a.Limit.BudgetMS))})
	}
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

// charts are ok answers a second and the latency percentiles against the
// offered rate: the sweep's windows joined in order of rate, the windows
// after the last saturated one (a recovery) as points of their own.
func charts(a Analysis) []chart.Chart {
	if len(a.Rows) == 0 {
		return nil
	}
	last := -1
	for i := range a.Rows {
		if sat, _ := Saturated(a.Rows, i); sat {
			last = i
		}
	}
	var sweep, after []int
	for i := range a.Rows {
		if last >= 0 && i > last {
			after = append(after, i)
		} else {
			sweep = append(sweep, i)
		}
	}
	slices.SortStableFunc(sweep, func(x, y int) int { return cmp.Compare(a.Rows[x].Offered, a.Rows[y].Offered) })
	xs := func(idx []int, get func(result.Row) float64) (x, y []float64) {
		for _, i := range idx {
			x = append(x, a.Rows[i].Offered)
			y = append(y, get(a.Rows[i]))
		}
		return x, y
	}
	hi := 0.0
	for _, r := range a.Rows {
		hi = max(hi, r.Offered, r.OKPerSec)
	}
	xMax, _ := chart.Axis(hi*1.05, 5)
	okOf := func(r result.Row) float64 { return r.OKPerSec }
	tx, ty := xs(sweep, okOf)
	thr := chart.Panel{Title: "Throughput: ok answers a second", Series: []chart.Series{
		{Name: "all answered", Quantity: "muted", Style: chart.Guide, X: []float64{0, xMax}, Y: []float64{0, xMax}},
		{Name: "ok/s", Quantity: "ok", Style: chart.Measured, X: tx, Y: ty},
	}}
	pcts := []struct {
		name, q string
		m       chart.Marker
		get     func(result.Row) float64
	}{
		{"p50", "p50", chart.Circle, func(r result.Row) float64 { return r.P50MS }},
		{"p95", "mean", chart.Diamond, func(r result.Row) float64 { return r.P95MS }},
		{"p99", "p99", chart.Square, func(r result.Row) float64 { return r.P99MS }},
	}
	lat := chart.Panel{Title: "Latency of ok answers, ms"}
	for _, p := range pcts {
		x, y := xs(sweepWithN(a, sweep), p.get)
		lat.Series = append(lat.Series, chart.Series{Name: p.name, Quantity: p.q, Style: chart.Measured, Marker: p.m, X: x, Y: y})
	}
	if len(after) > 0 {
		x, y := xs(after, okOf)
		thr.Series = append(thr.Series, chart.Series{Name: "after the overload", Quantity: "limit", Style: chart.Measured, Marker: chart.Square, X: x, Y: y})
		x, y = xs(sweepWithN(a, after), func(r result.Row) float64 { return r.P99MS })
		lat.Series = append(lat.Series, chart.Series{Name: "p99 after the overload", Quantity: "limit", Style: chart.Measured, Marker: chart.Circle, X: x, Y: y})
	}
	if a.Knee >= 0 {
		k := chart.Mark{X: a.Rows[a.Knee].Offered, Label: "knee", Quantity: "muted"}
		thr.Marks, lat.Marks = []chart.Mark{k}, []chart.Mark{k}
	}
	thrTable := chart.Table{Caption: "Ok answers a second in each window", Head: []string{"window", "offered /s", "ok /s"}}
	latTable := chart.Table{Caption: "Latency percentiles of the ok answers in each window", Head: []string{"window", "offered /s", "p50 ms", "p95 ms", "p99 ms", "n"}}
	for i, r := range a.Rows {
		head := windowName(a.Rows, i)
		thr.Stops = append(thr.Stops, chart.Stop{X: r.Offered, Focus: true, Lines: []string{head, "ok " + model.Format(r.OKPerSec) + "/s"}})
		thrTable.Rows = append(thrTable.Rows, []string{strconv.Itoa(i + 1), model.Format(r.Offered), model.Format(r.OKPerSec)})
		latTable.Rows = append(latTable.Rows, []string{strconv.Itoa(i + 1), model.Format(r.Offered), pctCell(r, r.P50MS), pctCell(r, r.P95MS), pctCell(r, r.P99MS), strconv.Itoa(r.N)})
		if r.N > 0 {
			lat.Stops = append(lat.Stops, chart.Stop{X: r.Offered, Focus: true, Lines: []string{head,
				fmt.Sprintf("p50 %s, p95 %s, p99 %s ms (n = %d)", model.Format(r.P50MS), model.Format(r.P95MS), model.Format(r.P99MS), r.N)}})
		}
	}
	kneeText := "No window saturated."
	if a.Knee >= 0 {
		kneeText = "The knee (first saturated window) is at " + model.Format(a.Rows[a.Knee].Offered) + " a second."
	}
	ceil := ""
	if a.CeilingWindow >= 0 {
		ceil = " The most answered was " + model.Format(a.Ceiling) + " a second, in " + windowName(a.Rows, a.CeilingWindow) + "."
	}
	return []chart.Chart{
		{ID: "throughput", Title: "Ok answers a second against the offered rate", XTitle: "Offered load, requests a second", XMax: xMax, Panels: []chart.Panel{thr}, Table: thrTable,
			Desc: fmt.Sprintf("%d windows. %s%s The table under the chart has every number.", len(a.Rows), kneeText, ceil)},
		{ID: "latency", Title: "Latency percentiles against the offered rate", XTitle: "Offered load, requests a second", XMax: xMax, Panels: []chart.Panel{lat}, Table: latTable,
			Desc: fmt.Sprintf("p50, p95 and p99 of the ok answers in each of %d windows. %s The table under the chart has every number.", len(a.Rows), kneeText)},
	}
}

// sweepWithN is idx without the windows that answered nothing ok, which
// have no percentiles to draw.
func sweepWithN(a Analysis, idx []int) []int {
	return slices.DeleteFunc(slices.Clone(idx), func(i int) bool { return a.Rows[i].N == 0 })
}

func pctCell(r result.Row, v float64) string {
	if r.N == 0 {
		return "—"
	}
	return model.Format(v)
}

func rowsTable(a Analysis) reportTable {
	t := reportTable{ID: "rows-caption", Caption: "Each window's row, as load computes it from the records",
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
	return t
}

func littleTable(d Dataset, a Analysis) (reportTable, string) {
	t := reportTable{ID: "little-caption", Caption: "In flight from the records beside Little's product, each window",
		Head: []string{"window", "offered", "in flight", "not ok", "ok/s × mean", "send lag", "reconciled"}}
	for i, w := range a.Windows {
		verdict := "past the knee"
		if below(a, i) && a.Rows[i].N > 0 {
			if ok, _ := LittleCheck(w); ok {
				verdict = "yes"
			} else {
				verdict = "no"
			}
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(i + 1), model.Format(a.Rows[i].Offered), model.Format(w.InFlight), model.Format(w.InFlightOther),
			model.Format(w.Little), model.Format(w.LittleLag), verdict})
	}
	p := "In flight is the mean number of requests outstanding over the window, from each record's send and end times. " +
		"Little's law says it equals the rate times the time in system: here ok answers a second times their mean latency (ok/s × mean). " +
		"The two differ by the requests that were refused, gave up or failed (not ok: in flight, but not among the ok answers) and by send lag " +
		"(time a latency counts before its request left the generator). Below the knee they should agree within " + pct(LittleTolerance) +
		" (reconciled); past it the queue grows through the window, so the law, which holds on average over a steady state, need not."
	if g := gaugesOf(d, "inflight"); len(g) > 0 {
		p += " The service's own in-flight gauges (" + strings.Join(g, ", ") + ") are in the table of gauges below."
	}
	return t, p
}

func queueTable(a Analysis) (*reportTable, string) {
	if !slices.ContainsFunc(a.Windows, func(w WindowAnalysis) bool { return w.QueueMS >= 0 }) {
		return nil, "The records carry no queue wait: the service did not say how long each request waited before its work began, so latency cannot be split into queueing and service. Have it report its queue wait in a response header that load reads."
	}
	t := &reportTable{ID: "queue-caption", Caption: "The ok answers' mean latency split into queueing and service, each window",
		Head: []string{"window", "offered", "mean latency ms", "queue wait ms", "service ms"}}
	for i, w := range a.Windows {
		t.Rows = append(t.Rows, []string{strconv.Itoa(i + 1), model.Format(a.Rows[i].Offered), pctCell(a.Rows[i], a.Rows[i].MeanMS), num(w.QueueMS), num(w.ServiceMS)})
	}
	return t, "The service reported how long each request queued; service is the rest of its latency (from when it was due, so it includes the network). Below the knee the queue wait stays small; past it, it is most of the latency."
}

func gaugeTable(a Analysis) *reportTable {
	var names []string
	seen := map[string]bool{}
	for _, w := range a.Windows {
		for _, n := range sortedKeys(w.Gauges) {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	t := &reportTable{ID: "gauges-caption", Caption: "The service's metrics beside each window: a gauge's mean (most), a counter's increase a second", Head: append([]string{"window", "offered"}, names...)}
	for i, w := range a.Windows {
		row := []string{strconv.Itoa(i + 1), model.Format(a.Rows[i].Offered)}
		for _, n := range names {
			g, ok := w.Gauges[n]
			switch {
			case !ok:
				row = append(row, "—")
			case g.Kind == "counter":
				row = append(row, model.Format(g.Mean)+"/s")
			default:
				row = append(row, model.Format(g.Mean)+" ("+model.Format(g.Max)+")")
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func limitText(a Analysis) string {
	l := a.Limit
	switch {
	case l == nil:
		return "No admission limit is derived: no latency budget was given, or no window answered ok."
	case !l.Feasible:
		return fmt.Sprintf("No admission limit: the %s ms budget is not longer than the service time S = %s ms (the p50 of %s, the lightest), so no queue fits even at rest.",
			model.Format(l.BudgetMS), model.Format(l.ServiceMS), windowName(a.Rows, l.Window))
	}
	return fmt.Sprintf("S = %s ms, the p50 of the ok answers in %s, the lightest window. The ceiling X = %s a second keeps X × S = %s workers' worth of requests in service. "+
		"The course's formula, limit = workers × (budget − S) ÷ S, rounded down, gives %d waiting for a %s ms budget; with those in service, at most ⌊X × budget⌋ = %d in flight.",
		model.Format(l.ServiceMS), windowName(a.Rows, l.Window), exact(l.Ceiling), model.Format(l.Workers), l.Limit, model.Format(l.BudgetMS), l.InFlight)
}
