package evidence

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"capacitylab/chart"
	"capacitylab/model"
	"capacitylab/result"
)

// The parts of an analysis as a reader sees them, built here once for
// every page that shows one: the report (WriteReport) and web's page of
// an upload. Each is plain data (facts, tables of cells, sentences,
// charts), drawn by the small templ components of parts.templ (Facts,
// PartView, Limit, Checklist) and chart.Figure; a page lays them out
// under its own headings.

// Fact is a term and its value in a definition list. ID names it for a
// page ("knee", "ceiling"), "" for none.
type Fact struct{ ID, Term, Value string }

// Table is a table of figures: its caption (ID is the caption's id, which
// labels the table's scrolling region), its header, and rows of cells,
// the first of each the row's header. Note is a note for each row, shown
// in a last column when set (nil: no column).
type Table struct {
	ID      string
	Caption string
	Head    []string
	Rows    [][]string
	Note    []string
}

// Part is one part of the analysis in words and figures: what it shows
// (Text, "" for nothing to say) and its table (nil for none).
type Part struct {
	Text  string
	Table *Table
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

// pctCell is a percentile of row r's ok answers, "—" when it has none.
func pctCell(r result.Row, v float64) string {
	if r.N == 0 {
		return "—"
	}
	return model.Format(v)
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

// Summary is the analysis in a few facts: the first saturation point and
// what showed it (ID "knee"), the ceiling ("ceiling"), the latency of
// the busiest window below the knee ("latency"), what was not answered
// ok ("not-ok") and the admission limit for the budget ("admission").
func Summary(a Analysis) []Fact {
	knee := Fact{ID: "knee", Term: "First saturation point", Value: upper(a.KneeWhy)}
	if a.Knee < 0 {
		knee.Value = "Not reached: " + a.KneeWhy + "; sweep on to more load to find it"
	}
	ceiling := Fact{ID: "ceiling", Term: "Ceiling", Value: "None: no window had an ok answer"}
	if a.CeilingWindow >= 0 {
		ceiling.Value = exact(a.Ceiling) + " ok answers a second, in " + windowName(a.Rows, a.CeilingWindow)
	}
	f := []Fact{knee, ceiling}
	if q := quoted(a); q >= 0 {
		r := a.Rows[q]
		f = append(f, Fact{ID: "latency", Term: "Latency in " + windowName(a.Rows, q),
			Value: fmt.Sprintf("p50 %s ms, p95 %s ms, p99 %s ms over n = %d ok answers", exact(r.P50MS), exact(r.P95MS), exact(r.P99MS), r.N)})
	}
	var ref, gave, bad, sent int
	for _, r := range a.Rows {
		ref, gave, bad, sent = ref+r.Refused, gave+r.Gaveup, bad+r.Error, sent+r.Sent
	}
	f = append(f, Fact{ID: "not-ok", Term: "Not answered ok", Value: fmt.Sprintf("%d refused, %d gave up, %d failed of %d sent", ref, gave, bad, sent)})
	if l := a.Limit; l != nil && l.Feasible {
		f = append(f, Fact{ID: "admission", Term: "Admission limit",
			Value: fmt.Sprintf("The course's formula gives %d waiting for a %s ms budget, %d in flight at most", l.Limit, model.Format(l.BudgetMS), l.InFlight)})
	}
	return f
}

// LittlePart is in flight from the records beside Little's product,
// each window, and what reconciles them.
func LittlePart(d Dataset, a Analysis) Part {
	t := &Table{ID: "little-caption", Caption: "In flight from the records beside Little's product, each window",
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
		" (reconciled); where they do not, the records are missing requests, the window was not steady, or the generator fell behind. " +
		"Past the knee the queue grows through the window, so the law, which holds on average over a steady state, need not."
	if g := gaugesOf(d, "inflight"); len(g) > 0 {
		p += " The service's own in-flight gauges (" + strings.Join(g, ", ") + ") are in the table of gauges below."
	}
	return Part{Text: p, Table: t}
}

// QueuePart is the ok answers' mean latency split into queueing and
// service, each window, where the service reported its queue wait; where
// it did not, what to do so it does.
func QueuePart(a Analysis) Part {
	if !slices.ContainsFunc(a.Windows, func(w WindowAnalysis) bool { return w.QueueMS >= 0 }) {
		return Part{Text: "The records carry no queue wait: the service did not say how long each request waited before its work began, so latency cannot be split into queueing and service. Have it report its queue wait in a response header that load reads."}
	}
	t := &Table{ID: "queue-caption", Caption: "The ok answers' mean latency split into queueing and service, each window",
		Head: []string{"window", "offered", "mean latency ms", "queue wait ms", "service ms"}}
	for i, w := range a.Windows {
		t.Rows = append(t.Rows, []string{strconv.Itoa(i + 1), model.Format(a.Rows[i].Offered), pctCell(a.Rows[i], a.Rows[i].MeanMS), num(w.QueueMS), num(w.ServiceMS)})
	}
	return Part{Text: "The service reported how long each request queued; service is the rest of its latency (from when it was due, so it includes the network). Below the knee the queue wait stays small; past it, it is most of the latency.", Table: t}
}

// GaugePart is the service's own metrics read beside each window, or,
// when none were, how to read them.
func GaugePart(a Analysis) Part {
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
		return Part{Text: "None were read. Given the service's Prometheus endpoint and the names to read (load --metrics URL --gauge NAME --counter NAME), load reads them beside each window, so queue depth and processor use are measured rather than guessed."}
	}
	t := &Table{ID: "gauges-caption", Caption: "The service's metrics beside each window: a gauge's mean (most), a counter's increase a second", Head: append([]string{"window", "offered"}, names...)}
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
	return Part{Table: t}
}

// LimitText says, in paragraphs, how the admission limit follows from the
// measured ceiling and service time for the budget, or why there is
// none; model.AdmissionLimit's working (LimitAdvice.Steps) and answer
// (Sentence) follow it (Limit draws all three).
func LimitText(a Analysis) []string {
	l := a.Limit
	switch {
	case l == nil && a.BudgetMS == 0:
		return []string{"No admission limit is derived: no latency budget was given."}
	case l == nil:
		return []string{"No admission limit is derived for a budget of " + model.Format(a.BudgetMS) + " ms: no window answered ok with a service time to derive it from."}
	}
	out := []string{fmt.Sprintf("Service time S = %s ms, the p50 of the ok answers in the lightest window, %s; measured ceiling X = %s a second; so X × S = %s workers' worth of requests in service.",
		model.Format(l.ServiceMS), windowName(a.Rows, l.Window), exact(l.Ceiling), model.Format(l.Workers))}
	if !l.Feasible {
		return append(out, "For a budget of "+model.Format(l.BudgetMS)+" ms no queue fits: the budget is not longer than S, so no request can wait at all. The working:")
	}
	return append(out, fmt.Sprintf("For a budget of %s ms: admit %d waiting beyond the workers, at most ⌊X × budget⌋ = %d in flight. The course's formula, limit = workers × (budget − S) ÷ S rounded down, step by step:",
		model.Format(l.BudgetMS), l.Limit, l.InFlight))
}

// plots are the analysis's two panels against the offered rate, on one
// x axis up to xMax, and every window's numbers they draw.
type plots struct {
	xMax     float64
	thr, lat chart.Panel
	// table is each window's offered rate, ok answers a second, p50, p95
	// and p99 of the ok answers and n.
	table chart.Table
	// knee and ceil say where the knee and the ceiling are, in sentences.
	knee, ceil string
}

// plotsOf draws ok answers a second (with the "all answered" diagonal
// and the ceiling) and the latency percentiles (with the budget) against
// the offered rate: the sweep's windows joined in order of rate, the
// windows after the last saturated one (a recovery) as points of their
// own, the knee marked on both.
func plotsOf(a Analysis) plots {
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
	withN := func(idx []int) []int {
		return slices.DeleteFunc(slices.Clone(idx), func(i int) bool { return a.Rows[i].N == 0 })
	}
	hi, yOK, yLat := 0.0, 0.0, 0.0
	for _, r := range a.Rows {
		hi, yOK = max(hi, r.Offered, r.OKPerSec), max(yOK, r.OKPerSec)
		if r.N > 0 {
			yLat = max(yLat, r.P99MS)
		}
	}
	var p plots
	p.xMax, _ = chart.Axis(hi*1.05, 5)
	okOf := func(r result.Row) float64 { return r.OKPerSec }
	tx, ty := xs(sweep, okOf)
	p.thr = chart.Panel{Title: "Throughput: ok answers a second", YMax: max(yOK, 1) * 1.05, Series: []chart.Series{
		{Name: "all answered", Quantity: "muted", Style: chart.Guide, X: []float64{0, p.xMax}, Y: []float64{0, p.xMax}},
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
	p.lat = chart.Panel{Title: "Latency of ok answers, ms", YMax: max(yLat, 1) * 1.1}
	for _, pc := range pcts {
		x, y := xs(withN(sweep), pc.get)
		p.lat.Series = append(p.lat.Series, chart.Series{Name: pc.name, Quantity: pc.q, Style: chart.Measured, Marker: pc.m, X: x, Y: y})
	}
	if len(after) > 0 {
		x, y := xs(after, okOf)
		p.thr.Series = append(p.thr.Series, chart.Series{Name: "after the overload", Quantity: "limit", Style: chart.Measured, Marker: chart.Square, X: x, Y: y})
		x, y = xs(withN(after), func(r result.Row) float64 { return r.P99MS })
		p.lat.Series = append(p.lat.Series, chart.Series{Name: "p99 after the overload", Quantity: "limit", Style: chart.Measured, Marker: chart.Circle, X: x, Y: y})
	}
	p.knee = "No window saturated."
	if a.Knee >= 0 {
		k := chart.Mark{X: a.Rows[a.Knee].Offered, Label: "knee", Quantity: "accent"}
		p.thr.Marks, p.lat.Marks = []chart.Mark{k}, []chart.Mark{k}
		p.knee = "The knee (first saturated window) is at " + model.Format(a.Rows[a.Knee].Offered) + " a second."
	}
	if a.CeilingWindow >= 0 {
		p.thr.Regions = []chart.Region{{X0: 0, X1: p.xMax, Y0: a.Ceiling, Y1: a.Ceiling, Label: "ceiling " + model.Format(a.Ceiling) + "/s"}}
		p.ceil = " The most answered was " + model.Format(a.Ceiling) + " a second, in " + windowName(a.Rows, a.CeilingWindow) + "."
	}
	if b := a.BudgetMS; b > 0 && b <= p.lat.YMax {
		p.lat.Regions = []chart.Region{{X0: 0, X1: p.xMax, Y0: b, Y1: b, Label: "budget " + model.Format(b) + " ms"}}
	}
	p.table = chart.Table{Caption: "Each window's ok answers a second and the latency percentiles of its ok answers",
		Head: []string{"window", "offered /s", "ok /s", "p50 ms", "p95 ms", "p99 ms", "n"}}
	for i, r := range a.Rows {
		head := windowName(a.Rows, i)
		p.thr.Stops = append(p.thr.Stops, chart.Stop{X: r.Offered, Focus: true, Lines: []string{head, "ok " + model.Format(r.OKPerSec) + "/s"}})
		p.table.Rows = append(p.table.Rows, []string{strconv.Itoa(i + 1), model.Format(r.Offered), model.Format(r.OKPerSec),
			pctCell(r, r.P50MS), pctCell(r, r.P95MS), pctCell(r, r.P99MS), strconv.Itoa(r.N)})
		if r.N > 0 {
			p.lat.Stops = append(p.lat.Stops, chart.Stop{X: r.Offered, Focus: true, Lines: []string{head,
				fmt.Sprintf("p50 %s, p95 %s, p99 %s ms (n = %d)", model.Format(r.P50MS), model.Format(r.P95MS), model.Format(r.P99MS), r.N)}})
		}
	}
	return p
}

// columns is t's columns cols, under caption.
func columns(t chart.Table, caption string, cols ...int) chart.Table {
	out := chart.Table{Caption: caption}
	for _, c := range cols {
		out.Head = append(out.Head, t.Head[c])
	}
	for _, row := range t.Rows {
		cells := make([]string, len(cols))
		for k, c := range cols {
			cells[k] = row[c]
		}
		out.Rows = append(out.Rows, cells)
	}
	return out
}

// Charts are the analysis against the offered rate as the report draws
// it: ok answers a second (ID "throughput") and the latency percentiles
// of the ok answers ("latency"), each a chart of one panel with its
// numbers; none for an analysis without windows.
func Charts(a Analysis) []chart.Chart {
	if len(a.Rows) == 0 {
		return nil
	}
	p := plotsOf(a)
	const x = "Offered load, requests a second"
	return []chart.Chart{
		{ID: "throughput", Title: "Ok answers a second against the offered rate", XTitle: x, XMax: p.xMax, Panels: []chart.Panel{p.thr},
			Table: columns(p.table, "Ok answers a second in each window", 0, 1, 2),
			Desc:  fmt.Sprintf("%d windows. %s%s The table under the chart has every number.", len(a.Rows), p.knee, p.ceil)},
		{ID: "latency", Title: "Latency percentiles against the offered rate", XTitle: x, XMax: p.xMax, Panels: []chart.Panel{p.lat},
			Table: columns(p.table, "Latency percentiles of the ok answers in each window", 0, 1, 3, 4, 5, 6),
			Desc:  fmt.Sprintf("p50, p95 and p99 of the ok answers in each of %d windows. %s The table under the chart has every number.", len(a.Rows), p.knee)},
	}
}

// Chart is the same two panels side by side in one chart, with all their
// numbers in one table, as a page draws a run beside its rows; id
// prefixes the ids of its elements.
func Chart(a Analysis, id string) chart.Chart {
	p := plotsOf(a)
	return chart.Chart{ID: id, Title: "Throughput and latency against the offered rate", XTitle: "Offered load, requests a second", XMax: p.xMax,
		Panels: []chart.Panel{p.thr, p.lat}, Table: p.table,
		Desc: fmt.Sprintf("%d windows: ok answers a second, and the p50, p95 and p99 of the ok answers. %s%s The table under the chart has every number.", len(a.Rows), p.knee, p.ceil)}
}
