package web

import (
	"cmp"
	"errors"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"capacitylab/chart"
	"capacitylab/lessons"
	"capacitylab/result"
	"capacitylab/runner"
)

// compareRun is one run of a comparison: its letter, the colour and the
// marker its series are drawn with, the run, its title in words, and
// where it can be opened.
type compareRun struct {
	Letter   string // "A", "B" or "C"
	Quantity string // the colour: "a", "b" or "c"
	Marker   chart.Marker
	ID       string // as the comparison's query names it
	View     runView
	Title    string
	URL      string // the run's page, or the lesson's recorded table
	Recorded bool   // the lesson's recorded run rather than a saved one
}

// compareLetters are the runs a comparison can hold, in order; the first
// two are required.
var compareLetters = []struct {
	letter, key, quantity string
	marker                chart.Marker
}{{"A", "a", "a", chart.Circle}, {"B", "b", "b", chart.Square}, {"C", "c", "c", chart.Diamond}}

// recordedPrefix names a lesson's recorded run of a preset in a
// comparison: b=recorded:moves-aimd.
const recordedPrefix = "recorded:"

// recordedID is the comparison id of a preset's recorded run.
func recordedID(preset string) string { return recordedPrefix + preset }

// compareURL is the comparison of runs a and b (ids as compareRuns reads
// them).
func compareURL(a, b string) string {
	return "/runs/compare?" + url.Values{"a": {a}, "b": {b}}.Encode()
}

// hasRecorded reports whether lesson l has a recorded window table of lab
// b, for a comparison with it.
func hasRecorded(l *lessons.Lesson, b *lessons.Lab) bool {
	for _, blk := range l.Blocks() {
		if t, ok := blk.(*lessons.Table); ok && t.Preset == b.ID && !t.Pending && !t.TimeTable() && len(t.Rows) > 0 {
			return true
		}
	}
	return false
}

// compareRow is one line of the comparison table: each run's window at
// the same offered rate (nil where a run has none).
type compareRow struct {
	Offered float64
	Runs    []*result.Row
}

// compareRows pairs the rows of the runs by offered rate, in rate order.
func compareRows(runs ...[]result.Row) []compareRow {
	var out []compareRow
	find := func(rate float64) int {
		for i := range out {
			if math.Abs(out[i].Offered-rate) < 1e-9 {
				return i
			}
		}
		out = append(out, compareRow{Offered: rate, Runs: make([]*result.Row, len(runs))})
		return len(out) - 1
	}
	for k, rows := range runs {
		for i := range rows {
			j := find(rows[i].Offered)
			if out[j].Runs[k] == nil {
				out[j].Runs[k] = &rows[i]
			}
		}
	}
	slices.SortStableFunc(out, func(x, y compareRow) int { return cmp.Compare(x.Offered, y.Offered) })
	return out
}

// compareRuns is GET /runs/compare?a=ID&b=ID[&c=ID]: two or three runs
// side by side, on one chart and in one table paired by offered rate.
// An id may name a lesson's recorded run of a preset (recorded:PRESET).
// When any of them ran over time, their seconds are overlaid on one time
// axis too, and a stretch of one window (window=N&from=S&to=S, seconds
// from its start; the whole first window by default) is summarised for
// each.
func (s *server) compareRuns(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	aID, bID := q.Get("a"), q.Get("b")
	if aID == "" || bID == "" {
		return s.pickTwoRuns(r, aID, bID)
	}
	var runs []compareRun
	for _, l := range compareLetters {
		id := q.Get(l.key)
		if id == "" || l.key == "c" && (id == aID || id == bID) {
			continue // no third run, or the same run again
		}
		cr, err := s.compareRunOf(r, id)
		if err != nil {
			return compareMissing(err, l.letter, id)
		}
		cr.Letter, cr.Quantity, cr.Marker, cr.ID = l.letter, l.quantity, l.marker, id
		runs = append(runs, cr)
	}
	rowSets := make([][]result.Row, len(runs))
	for i, cr := range runs {
		rowSets[i] = cr.View.Rows
	}
	rows := compareRows(rowSets...)
	html, err := renderString(r.Context(), chart.Figure(compareChart(runs, rows, "compare")))
	if err != nil {
		return err
	}
	var over *compareOver
	if slices.ContainsFunc(runs, func(cr compareRun) bool { return cr.View.overTime() }) {
		rng, err := compareRangeOf(q, runs)
		if err != nil {
			return err
		}
		c := compareTimeChart(runs, rng, "compare-time")
		th, err := renderString(r.Context(), chart.Figure(c))
		if err != nil {
			return err
		}
		over = &compareOver{Range: rng, ChartHTML: th, Summary: compareSummaries(runs, rng)}
	}
	p := s.page(r, "Compare runs")
	p.Wide = true
	reqs := make([]runner.Request, len(runs))
	for i, cr := range runs {
		reqs[i] = cr.View.Request
	}
	s.render(w, r, http.StatusOK, comparePage(p, runs, compareSettings(reqs...), rows, html, over))
	return nil
}

// compareRunOf loads one run of a comparison: a saved run, or a lesson's
// recorded run of a preset.
func (s *server) compareRunOf(r *http.Request, id string) (compareRun, error) {
	if preset, ok := strings.CutPrefix(id, recordedPrefix); ok {
		return s.recordedRun(preset)
	}
	v, err := s.loadRun(r, id, false)
	if err != nil {
		return compareRun{}, err
	}
	return compareRun{View: v, Title: runTitle(s.lessonTitleOf(v.Lesson), v.Request), URL: runURL(v.ID)}, nil
}

// recordedRun is a lesson's recorded run of a preset as a run to compare:
// its window table's rows and its time table's seconds.
func (s *server) recordedRun(preset string) (compareRun, error) {
	missing := &Error{Code: CodeNotFound, Title: "No recorded run", Message: "No lesson has a recorded run of the preset " + preset + ".",
		Links: []errorLink{{"All runs", "/runs"}}}
	c, err := s.course()
	if err != nil {
		return compareRun{}, err
	}
	lab, l, ok := c.Lab(preset)
	if !ok {
		return compareRun{}, missing
	}
	v := runView{Status: "done", Request: labPreset(lab), Lesson: l.Slug, Block: lab.ID, Rows: []result.Row{}}
	anchor := ""
	for _, b := range l.Blocks() {
		t, ok := b.(*lessons.Table)
		if !ok || t.Preset != lab.ID || t.Pending || len(t.Rows) == 0 {
			continue
		}
		if t.TimeTable() {
			if v.Samples, err = result.ParseSamples(t.Columns, t.Rows); err != nil {
				return compareRun{}, err
			}
			continue
		}
		anchor = t.ID
		for i, cells := range t.Rows {
			row := rowOfCells(t.Columns, cells)
			row.Window, row.Seconds = i, lab.Seconds
			v.Rows = append(v.Rows, row)
		}
	}
	if anchor == "" {
		return compareRun{}, missing
	}
	return compareRun{View: v, Title: "Recorded in the lesson: " + runTitle(l.Title, v.Request), URL: lessonURL(l.Slug) + "#" + anchor, Recorded: true}, nil
}

// rowOfCells reads a recorded window table's row (columns as
// lessons.RecordColumns names them) into a result.Row; a cell that is not
// a number ("-", a lab counter not read) is -1 for the lab's counters and
// 0 otherwise.
func rowOfCells(cols, cells []string) result.Row {
	var row result.Row
	for i, c := range cols {
		if i >= len(cells) {
			break
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(cells[i]), 64)
		if err != nil {
			v = 0
			if c == "done" || c == "queued" || c == "backlogged" || strings.HasPrefix(c, "lab_") {
				v = -1
			}
		}
		n := int(v)
		switch c {
		case "clients":
			row.Clients = n
		case "offered":
			row.Offered = v
		case "sent":
			row.Sent = n
		case "ok":
			row.OK = n
		case "refused":
			row.Refused = n
		case "gaveup":
			row.Gaveup = n
		case "error":
			row.Error = n
		case "ok_per_sec":
			row.OKPerSec = v
		case "p50_ms":
			row.P50MS = v
		case "p99_ms":
			row.P99MS = v
		case "done":
			row.Done = n
		case "lost":
			row.Lost = n
		case "queued":
			row.Queued = n
		case "backlogged":
			row.Backlogged = n
		case "mean_ms":
			row.MeanMS = v
		case "p95_ms":
			row.P95MS = v
		case "n":
			row.N = n
		case "late":
			row.Late = n
		case "send_lag_p99_ms":
			row.SendLagP99MS = v
		case "lab_service_ms":
			row.LabServiceMS = v
		case "lab_cpu_ms":
			row.LabCPUMS = v
		case "lab_wait_ms":
			row.LabWaitMS = v
		case "lab_service_scv":
			row.LabServiceSCV = v
		}
	}
	return row
}

// compareOver is the over-time part of a comparison: the stretch
// summarised, the runs' seconds on one time axis, and each run's summary.
type compareOver struct {
	Range     compareRange
	ChartHTML string
	Summary   []compareSummary
}

// compareRange is the stretch of seconds a comparison summarises: one
// window (from 0) and [From, To) seconds from its start.
type compareRange struct {
	Window   int
	Windows  int     // the most windows any run over time has
	Seconds  float64 // the longest window of the runs over time
	From, To float64
}

// compareRangeOf reads the stretch from the query: window=N (from 1),
// from and to in seconds; by default the whole first window.
func compareRangeOf(q url.Values, runs []compareRun) (compareRange, error) {
	rng := compareRange{}
	for _, cr := range runs {
		if !cr.View.overTime() {
			continue
		}
		rng.Seconds = math.Max(rng.Seconds, cr.View.Request.Seconds)
		for _, smp := range cr.View.Samples {
			rng.Windows = max(rng.Windows, smp.Window+1)
		}
	}
	rng.To = rng.Seconds
	bad := func(msg string) error {
		back := url.Values{}
		for _, cr := range runs {
			back.Set(strings.ToLower(cr.Letter), cr.ID)
		}
		return &Error{Code: CodeInvalid, Title: "No such stretch of seconds", Message: msg,
			Links: []errorLink{{"Compare the whole window", "/runs/compare?" + back.Encode()}}}
	}
	if w := q.Get("window"); w != "" {
		n, err := strconv.Atoi(w)
		if err != nil || n < 1 || n > rng.Windows {
			return rng, bad("window=" + w + " is not allowed: want a window of the runs over time, 1 to " + itoa(rng.Windows) + ".")
		}
		rng.Window = n - 1
	}
	num := func(key string, into *float64) error {
		v := strings.TrimSpace(q.Get(key))
		if v == "" {
			return nil
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return bad(key + "=" + v + " is not allowed: want seconds from the window's start, 0 or more.")
		}
		*into = f
		return nil
	}
	if err := num("from", &rng.From); err != nil {
		return rng, err
	}
	if err := num("to", &rng.To); err != nil {
		return rng, err
	}
	if rng.From >= rng.To {
		return rng, bad("from " + fmtNum(rng.From) + " s to " + fmtNum(rng.To) + " s is no stretch at all: want from before to, both within the window's " + fmtNum(rng.Seconds) + " s.")
	}
	return rng, nil
}

// whole reports whether the stretch is the whole window.
func (rng compareRange) whole() bool { return rng.From == 0 && rng.To >= rng.Seconds }

// text is the stretch in words: "window 1, 12 s to 30 s".
func (rng compareRange) text() string {
	s := "from " + fmtNum(rng.From) + " s to " + fmtNum(rng.To) + " s"
	if rng.Windows > 1 {
		s = "window " + itoa(rng.Window+1) + ", " + s
	}
	return s
}

// compareSummary is one run's summary of the stretch: its cells in
// compareSummaryHead's order, or a note saying why it has none.
type compareSummary struct {
	Run   compareRun
	Cells []string
	Note  string
}

// compareSummaryHead heads the summary table's columns after the run.
func compareSummaryHead() []string {
	return []string{"seconds read", "ok /s", "refused /s", "gave up /s", "client busy /s", "in flight (mean)", "p99 ms (each second's)"}
}

// compareSummaries reads the stretch of each run over time
// (result.ReadStretch), the stretch ending at the run's own window's end
// when it is shorter.
func compareSummaries(runs []compareRun, rng compareRange) []compareSummary {
	out := make([]compareSummary, 0, len(runs))
	for _, cr := range runs {
		sum := compareSummary{Run: cr}
		if !cr.View.overTime() {
			sum.Note = "Not run over time: it has no seconds to summarise."
			out = append(out, sum)
			continue
		}
		st := result.ReadStretch(cr.View.Samples, rng.Window, rng.From, math.Min(rng.To, cr.View.Request.Seconds))
		if st.Samples == 0 {
			sum.Note = "No seconds of this run lie in the stretch."
			out = append(out, sum)
			continue
		}
		cell := func(col string) string { return stretchCell(st, col).Value }
		sum.Cells = []string{fmtNum(math.Round(st.Seconds*1000) / 1000), cell("ok"), cell("refused"), cell("gaveup"), cell("client_busy"), cell("in_flight"), cell("p99_ms")}
		out = append(out, sum)
	}
	return out
}

// compareTimeChart overlays the seconds of one window of each run over
// time on one time axis: ok, gave up and refused a second, and the p99
// of each second's ok answers, a line a run in its colour. The stretch
// summarised is shaded when it is not the whole window; the knob changes
// are marked (once when the runs share them, else with each run's
// letter). A stop every fifth second has every run's numbers; the table
// has every second.
func compareTimeChart(runs []compareRun, rng compareRange, id string) chart.Chart {
	type quantity struct{ title, col, head string }
	qs := []quantity{
		{"ok answers a second", "ok", "ok /s"},
		{"Gave up a second", "gaveup", "gave up /s"},
		{"Refused a second", "refused", "refused /s"},
		{"p99 of each second's ok answers, ms", "p99_ms", "p99 ms"},
	}
	panels := make([]chart.Panel, len(qs))
	for i, qy := range qs {
		panels[i].Title = qy.title
	}
	// values[k][run] is run's value in each second of the window, by the
	// second's end.
	type point struct{ end, v float64 }
	values := make([][][]point, len(qs))
	for k := range values {
		values[k] = make([][]point, len(runs))
	}
	xMax := rng.Seconds
	var ends []float64
	for j, cr := range runs {
		for _, smp := range cr.View.Samples {
			if smp.Window != rng.Window {
				continue
			}
			end := smp.AtS + smp.Seconds
			xMax = math.Max(xMax, end)
			if !slices.Contains(ends, end) {
				ends = append(ends, end)
			}
			one := result.ReadStretch([]result.Sample{smp}, smp.Window, smp.AtS, end)
			for k, qy := range qs {
				v, _, _ := one.Column(qy.col)
				values[k][j] = append(values[k][j], point{end, v})
			}
		}
	}
	slices.Sort(ends)
	for k := range qs {
		for j, cr := range runs {
			if len(values[k][j]) == 0 {
				continue
			}
			var xs, ys []float64
			for _, p := range values[k][j] {
				xs, ys = append(xs, p.end), append(ys, p.v)
			}
			panels[k].Series = append(panels[k].Series, chart.Series{Name: "run " + cr.Letter, Quantity: cr.Quantity, Style: chart.Trace, X: xs, Y: ys})
		}
	}
	valueAt := func(k, j int, end float64) string {
		for _, p := range values[k][j] {
			if math.Abs(p.end-end) < 1e-6 {
				return numText(p.v)
			}
		}
		return "—"
	}
	head := []string{"from s", "to s"}
	for _, qy := range qs {
		for _, cr := range runs {
			head = append(head, cr.Letter+" "+qy.head)
		}
	}
	table := chart.Table{Caption: "Each second of " + lowerFirst(windowName(rng.Window)) + " of the runs: how requests ended a second, and the p99 of the ok answers", Head: head}
	prev := 0.0
	for _, end := range ends {
		row := []string{fmtNum(math.Round(prev*1000) / 1000), fmtNum(math.Round(end*1000) / 1000)}
		for k := range qs {
			for j := range runs {
				row = append(row, valueAt(k, j, end))
			}
		}
		table.Rows = append(table.Rows, row)
		if isWhole(end/5) || end == ends[len(ends)-1] {
			for k, qy := range qs {
				var parts []string
				for j, cr := range runs {
					parts = append(parts, cr.Letter+" "+valueAt(k, j, end))
				}
				panels[k].Stops = append(panels[k].Stops, chart.Stop{X: end, Focus: true,
					Lines: []string{fmtNum(math.Round(prev*1000)/1000) + "–" + fmtNum(math.Round(end*1000)/1000) + " s, " + qy.head, strings.Join(parts, " · ")}})
			}
		}
		prev = end
	}
	// Knob changes: once when every run over time makes the same ones.
	var shared []result.KnobChange
	same := true
	first := true
	for _, cr := range runs {
		if !cr.View.overTime() {
			continue
		}
		if first {
			shared, first = cr.View.Request.At, false
		} else if joinChanges(cr.View.Request.At) != joinChanges(shared) {
			same = false
		}
	}
	for _, cr := range runs {
		if !cr.View.overTime() {
			continue
		}
		for _, c := range cr.View.Request.At {
			label := changeWords(c)
			if !same {
				label = cr.Letter + ": " + label
			}
			for k := range panels {
				m := chart.Mark{X: c.At.Seconds(), Quantity: "accent"}
				if k == 0 {
					m.Label = label
				}
				panels[k].Marks = append(panels[k].Marks, m)
			}
		}
		if same {
			break
		}
	}
	if !rng.whole() {
		for k := range panels {
			rg := chart.Region{X0: rng.From, X1: math.Min(rng.To, xMax), Y0: 0, Y1: math.Inf(1)}
			if k == 0 {
				rg.Label = "summarised"
			}
			panels[k].Regions = append(panels[k].Regions, rg)
		}
	}
	var names []string
	for _, cr := range runs {
		if cr.View.overTime() {
			names = append(names, "run "+cr.Letter)
		}
	}
	desc := "The seconds of " + lowerFirst(windowName(rng.Window)) + " of " + joinAnd(names) + " on one time axis: ok, gave up and refused a second, and each second's p99."
	if !rng.whole() {
		desc += " The stretch summarised below the chart, " + rng.text() + ", is shaded."
	}
	return chart.Chart{ID: id, Title: "The runs over time, a second at a time", Desc: desc + " The table under the chart has every second.",
		XTitle: "Seconds of " + lowerFirst(windowName(rng.Window)), XMax: xMax, XSteps: 8, Panels: panels, Table: table, Stacked: true}
}

// lowerLetter is a run's letter as the query names it: "a" for A.
func lowerLetter(l string) string { return strings.ToLower(l) }

// joinAnd joins words as a sentence lists them: "A", "A and B", "A, B and C".
func joinAnd(ws []string) string {
	switch len(ws) {
	case 0:
		return ""
	case 1:
		return ws[0]
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " and " + ws[len(ws)-1]
}

// pickTwoRuns is the answer to a comparison without its two runs: what to
// do, with the runs list and, when the learner has two runs, a link that
// compares their latest two.
func (s *server) pickTwoRuns(r *http.Request, aID, bID string) error {
	e := &Error{Code: CodeInvalid, Title: "Pick two runs to compare",
		Message: "Comparing needs two runs, A and B (and, if you like, a third, C). In the list of runs, choose one run as A and another as B, then press Compare.",
		Links:   []errorLink{{"Choose two runs", "/runs"}}}
	if aID != "" || bID != "" {
		e.Message = "Only one run was chosen. " + e.Message
	}
	if learner := learnerID(r); learner != "" {
		if mine, err := s.store.LearnerRuns(r.Context(), learner, 2); err == nil && len(mine) == 2 {
			e.Links = append(e.Links, errorLink{"Compare your two latest runs", "/runs/compare?a=" + mine[1].ID + "&b=" + mine[0].ID})
		}
	}
	return e
}

// compareMissing turns a run that could not be loaded for a comparison
// into an answer that says which of them it was.
func compareMissing(err error, which, id string) error {
	var e *Error
	if errors.As(err, &e) && e.Code == CodeNotFound {
		return &Error{Code: CodeNotFound, Title: "Run " + which + " was not found",
			Message: "There is no run " + id + " to compare as " + which + ": it may have been mistyped. Choose the runs from the list.",
			Links:   []errorLink{{"Choose two runs", "/runs"}}}
	}
	return err
}

// cellOf formats one field of a possibly missing row, to one decimal as
// the run's own table does.
func cellOf(row *result.Row, field string) string {
	if row == nil {
		return "—"
	}
	var v float64
	switch field {
	case "ok_per_sec":
		v = row.OKPerSec
	case "p50_ms":
		v = row.P50MS
	case "p99_ms":
		v = row.P99MS
	case "refused":
		v = float64(row.Refused)
	case "gaveup":
		v = float64(row.Gaveup)
	}
	return fmtNum(math.Round(v*10) / 10)
}

// compareColumns are the comparison table's quantities, each with a
// column a run.
var compareColumns = []struct{ field, head string }{
	{"ok_per_sec", "ok /s"}, {"p50_ms", "p50 ms"}, {"p99_ms", "p99 ms"}, {"refused", "refused"}, {"gaveup", "gave up"},
}
