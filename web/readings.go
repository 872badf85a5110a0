package web

import (
	"math"
	"slices"

	"capacitylab/chart"
	"capacitylab/lessons"
	"capacitylab/recorder"
	"capacitylab/result"
	"capacitylab/store"
)

// A Predict names what settles it (lessons.Reading): cells of the window
// table, or a stretch of seconds of a run over time. The reading line
// beside the recorded table that holds them, and after the learner's own
// run, shows exactly that quantity in the Predict's units, the learner's
// option's value beside it, and, for a stretch, a chart of its first
// quantity second by second with the option's value drawn over the
// seconds it is about.

// readCell is one quantity of a measurement as the reading line shows it:
// its column, its value, and the words after the value ("a second").
type readCell struct {
	Column, Value, Unit string
}

// readRow is the cells of one window the reading names.
type readRow struct {
	Label string // "at 40 a second", "at 50 a second, from 12 s to 30 s", or ""
	Cells []readCell
	Gone  string // why the measurement has no such window or stretch ("" when it has)
}

// readingView is what a reading line shows: the measured rows, the
// learner's option's value in words, and the chart of a stretch.
type readingView struct {
	Rows  []readRow
	Value string // the learner's option's value in the Predict's units ("27 to 33 a second"); "" for none
	Chart *chart.Chart
}

// readsTable reports whether the reading line of q goes under recorded
// table t: the time table when q reads a stretch of seconds, the window
// table otherwise.
func readsTable(q *lessons.Question, t *lessons.Table) bool {
	return t.TimeTable() == (q.Read != nil && q.Read.Over)
}

// recordedReading is q's reading of its recorded table t (which
// readsTable).
func recordedReading(l *lessons.Lesson, q *lessons.Question, t *lessons.Table, opt *lessons.Option) readingView {
	lab := settlingLab(l, q)
	if q.Read == nil || lab == nil {
		return readingView{}
	}
	if !q.Read.Over {
		return readingView{Rows: windowCells(q, lab, t.Columns, t.Rows), Value: valueText(q, opt)}
	}
	samples, err := result.ParseSamples(t.Columns, t.Rows)
	if err != nil {
		// The lessons' check names the bad cell; the table still shows.
		return readingView{}
	}
	var changes []result.KnobChange
	for _, a := range lab.At {
		if c, err := result.ParseKnobChange(a); err == nil {
			changes = append(changes, c)
		}
	}
	return stretchReading(q, opt, samples, lab.Rates, lab.Closed > 0, lab.Seconds, changes, t.ID+"-reading")
}

// runReading is q's reading of the learner's run v of its settling preset.
func runReading(q *lessons.Question, lab *lessons.Lab, v runView, opt *lessons.Option) readingView {
	if q.Read == nil {
		return readingView{}
	}
	if q.Read.Over {
		return stretchReading(q, opt, v.Samples, v.Request.Rates, lab.Closed > 0 || len(v.Request.Clients) > 0, v.Request.Seconds, v.Request.At, "reading-"+panelID(v))
	}
	cols := lessons.AllColumns()
	cells := make([][]string, len(v.Rows))
	for i, r := range v.Rows {
		cells[i] = recorder.RowCells(r, lessons.AllColumns())
		if r.N == 0 {
			// No answer was timed: a latency of 0 would be a lie.
			for j, c := range cols {
				if c == "p50_ms" || c == "p99_ms" || c == "mean_ms" {
					cells[i][j] = "none (no answers)"
				}
			}
		}
	}
	return readingView{Rows: windowCells(q, lab, cols, cells), Value: valueText(q, opt)}
}

// windowCells is the cells q's read names, taken from a measurement
// given as column names and rows of cells (a recorded window table, or a
// run's rows formatted as the recorder writes them).
func windowCells(q *lessons.Question, lab *lessons.Lab, columns []string, rows [][]string) []readRow {
	col := func(name string) int { return slices.Index(columns, name) }
	offered := col("offered")
	cells := func(row []string) []readCell {
		var out []readCell
		for _, c := range q.Read.Columns {
			if num, den, share := lessons.ShareOf(c); share {
				out = append(out, shareCell(c, row, col(num), col(den)))
			} else if i := col(c); i >= 0 && i < len(row) {
				out = append(out, readCell{Column: c, Value: row[i]})
			}
		}
		return out
	}
	if len(q.Read.Rows) == 0 {
		var out []readRow
		for _, row := range rows {
			label := ""
			if lab == nil || lab.Closed == 0 || len(rows) > 1 {
				if offered >= 0 && offered < len(row) {
					label = "at " + row[offered] + " a second"
				}
			}
			out = append(out, readRow{Label: label, Cells: cells(row)})
		}
		return out
	}
	// A closed loop of several windows names its rows by their client
	// counts (its table begins with clients), an open loop by its rates.
	key, label := offered, func(v float64) string { return "at " + fmtNum(v) + " a second" }
	if lab != nil && len(lab.Clients) > 1 {
		key, label = col("clients"), func(v float64) string { return "with " + fmtNum(v) + " clients" }
	}
	var out []readRow
	for _, rate := range q.Read.Rows {
		rr := readRow{Label: label(rate), Gone: "no such window in this run."}
		for _, row := range rows {
			if key >= 0 && key < len(row) {
				if v, err := plainNumber(row[key]); err == nil && v == rate {
					rr.Cells, rr.Gone = cells(row), ""
					break
				}
			}
		}
		out = append(out, rr)
	}
	return out
}

// shareCell is a share of two cells of row (columns i over j) as a
// percentage, with the two counts after it: "21%" "(205 of 968)".
func shareCell(column string, row []string, i, j int) readCell {
	c := readCell{Column: column, Value: "none"}
	if i < 0 || j < 0 || i >= len(row) || j >= len(row) {
		return c
	}
	n, err1 := plainNumber(row[i])
	d, err2 := plainNumber(row[j])
	if err1 != nil || err2 != nil || d == 0 {
		c.Unit = "(" + row[i] + " of " + row[j] + ")"
		return c
	}
	c.Value, c.Unit = numText(100*n/d)+"%", "("+row[i]+" of "+row[j]+")"
	return c
}

// stretchReading reads q's stretch of seconds from samples of windows at
// the given offered rates (one window of a closed loop), seconds long,
// with the chart of its first quantity in the first window it reads.
func stretchReading(q *lessons.Question, opt *lessons.Option, samples []result.Sample, rates []float64, closed bool, seconds float64,
	changes []result.KnobChange, id string) readingView {
	from, to, empty := q.Read.Range(seconds)
	span := "from " + fmtNum(from) + " s to " + fmtNum(to) + " s"
	type window struct {
		index int
		label string
	}
	var windows []window
	label := func(rate float64) string {
		if closed || len(rates) <= 1 && len(q.Read.Rows) == 0 {
			return span
		}
		return "at " + fmtNum(rate) + " a second, " + span
	}
	switch {
	case len(q.Read.Rows) > 0:
		for _, r := range q.Read.Rows {
			windows = append(windows, window{slices.Index(rates, r), label(r)})
		}
	case closed || len(rates) == 0:
		windows = []window{{0, span}}
	default:
		for i, r := range rates {
			windows = append(windows, window{i, label(r)})
		}
	}
	v := readingView{Value: valueText(q, opt)}
	for _, w := range windows {
		rr := readRow{Label: w.label}
		st := result.ReadStretch(samples, w.index, from, to)
		switch {
		case w.index < 0:
			rr.Gone = "no such window in this run."
		case empty:
			rr.Label = ""
			if len(windows) > 1 && w.index < len(rates) {
				rr.Label = "at " + fmtNum(rates[w.index]) + " a second"
			}
			rr.Gone = "this run's windows are " + fmtNum(seconds) + " s long: nothing from " + fmtNum(from) + " s on."
		case st.Samples == 0:
			rr.Gone = "no seconds of this window were measured then."
		default:
			for _, c := range q.Read.Columns {
				rr.Cells = append(rr.Cells, stretchCell(st, c))
			}
			if v.Chart == nil {
				ch := readingChart(q, opt, samples, w.index, from, to, seconds, changes, id)
				v.Chart = &ch
			}
		}
		v.Rows = append(v.Rows, rr)
	}
	return v
}

// stretchCell is one column of a stretch in words: a count a second, a
// mean, or the lowest and highest second's percentile.
func stretchCell(st result.Stretch, col string) readCell {
	lo, hi, _ := st.Column(col)
	c := readCell{Column: col, Unit: stretchUnit(col)}
	switch {
	case math.IsNaN(lo) && slices.Contains(result.StretchSpans(), col):
		c.Value, c.Unit = "none", "(no ok answers)"
	case math.IsNaN(lo):
		c.Value, c.Unit = "none", "(the lab was not read)"
	case lo != hi:
		c.Value = numText(lo) + "–" + numText(hi)
	default:
		c.Value = numText(lo)
	}
	return c
}

// stretchUnit is the words after a stretch's value of col.
func stretchUnit(col string) string {
	switch {
	case slices.Contains(result.StretchCounts(), col):
		return "a second"
	case slices.Contains(result.StretchSpans(), col):
		return "ms, each second's"
	}
	return "on average"
}

// valueUnit is the unit of q's quantity (its first read column) as an
// option's value is written in it.
func valueUnit(q *lessons.Question) string {
	col := q.Read.Columns[0]
	if _, _, share := lessons.ShareOf(col); share {
		return "%"
	}
	switch {
	case q.Read.Over && slices.Contains(result.StretchCounts(), col), col == "ok_per_sec":
		return " a second"
	case len(col) > 3 && col[len(col)-3:] == "_ms":
		return " ms"
	}
	return ""
}

// valueText is the option's value of q's quantity in words, "" when it
// gives none.
func valueText(q *lessons.Question, opt *lessons.Option) string {
	if opt == nil || opt.Value == nil || q.Read == nil || len(q.Read.Columns) == 0 {
		return ""
	}
	b, unit := *opt.Value, valueUnit(q)
	if b.Lo == b.Hi {
		return fmtNum(b.Lo) + unit
	}
	if unit == "%" {
		return fmtNum(b.Lo) + "% to " + fmtNum(b.Hi) + "%"
	}
	return fmtNum(b.Lo) + " to " + fmtNum(b.Hi) + unit
}

// valueTail ends the sentence naming the learner's option: its value in
// brackets when it has one, then the full stop.
func valueTail(value string) string {
	if value == "" {
		return "."
	}
	return " (" + value + ")."
}

// unitTail is the words after a reading's value, with the space before
// them ("" for none).
func unitTail(unit string) string {
	if unit == "" {
		return ""
	}
	return " " + unit
}

// stretchTitle names what the reading chart of col shows, with its unit.
func stretchTitle(col string) string {
	switch col {
	case "ok":
		return "ok answers a second"
	case "refused":
		return "Refused a second"
	case "gaveup":
		return "Gave up a second"
	case "client_busy":
		return "Client busy a second"
	case "in_flight":
		return "In flight (the generator's), at each second's end"
	case "queued":
		return "Queued in the lab, at each second's end"
	case "in_service":
		return "In service in the lab, at each second's end"
	case "limit":
		return "The policy's limit, at each second's end"
	case "p50_ms":
		return "p50 of each second's ok answers, ms"
	}
	return "p99 of each second's ok answers, ms"
}

// stretchQuantity is the colour of col, as the run's time chart draws it.
func stretchQuantity(col string) string {
	switch col {
	case "ok", "refused", "gaveup", "limit", "p50", "p99":
		return col
	case "client_busy":
		return "busy"
	case "in_flight":
		return "inflight"
	case "queued", "in_service":
		return "lab"
	case "p50_ms":
		return "p50"
	}
	return "p99"
}

// readingChart draws q's first quantity in each second of one window, the
// stretch it reads marked and, for a rate or a mean, its value over the
// stretch as a dashed line; the learner's option's value is shaded (a
// band) or drawn (a line) over the same seconds, and the knob changes
// marked. A point stands at the end of the second it describes, as in the
// run's time chart.
func readingChart(q *lessons.Question, opt *lessons.Option, samples []result.Sample, window int, from, to, seconds float64,
	changes []result.KnobChange, id string) chart.Chart {
	col := q.Read.Columns[0]
	unit := stretchUnit(col)
	var xs, ys []float64
	var stops []chart.Stop
	table := chart.Table{Caption: "Each second of the window: " + stretchTitle(col), Head: []string{"from s", "to s", col}}
	xMax, yMax := seconds, 0.0
	for _, s := range samples {
		if s.Window != window {
			continue
		}
		v, _, _ := result.ReadStretch([]result.Sample{s}, window, s.AtS, s.AtS+s.Seconds).Column(col)
		end := s.AtS + s.Seconds
		xs, ys = append(xs, end), append(ys, v)
		xMax = math.Max(xMax, end)
		if !math.IsNaN(v) {
			yMax = math.Max(yMax, v)
		}
		span := fmtNum(math.Round(s.AtS*1000)/1000) + "–" + fmtNum(math.Round(end*1000)/1000) + " s"
		table.Rows = append(table.Rows, []string{fmtNum(math.Round(s.AtS*1000) / 1000), fmtNum(math.Round(end*1000) / 1000), numText(v)})
		if isWhole(end/5) || math.Abs(end-from) < 1e-6 || math.Abs(end-to) < 1e-6 {
			stops = append(stops, chart.Stop{X: end, Focus: true, Lines: []string{span, col + " " + numText(v) + " " + unit}})
		}
	}
	qty := stretchQuantity(col)
	panel := chart.Panel{Title: stretchTitle(col), Stops: stops, Series: []chart.Series{
		{Name: col + ", each second", Quantity: qty, Style: chart.Trace, X: xs, Y: ys},
	}}
	st := result.ReadStretch(samples, window, from, to)
	lo, hi, _ := st.Column(col)
	desc := stretchTitle(col) + ", in each second of the run. From " + fmtNum(from) + " s to " + fmtNum(to) + " s: " + stretchCell(st, col).Value + " " + unit + "."
	if !math.IsNaN(lo) && lo == hi {
		panel.Series = append(panel.Series, chart.Series{Name: "from " + fmtNum(from) + " s to " + fmtNum(to) + " s: " + numText(lo) + " " + unit,
			Quantity: qty, Style: chart.Model, X: []float64{from, to}, Y: []float64{lo, lo}})
	}
	if !math.IsNaN(hi) {
		yMax = math.Max(yMax, hi)
	}
	panel.Marks = append(panel.Marks, chart.Mark{X: from, Label: "from " + fmtNum(from) + " s"})
	if to < seconds {
		panel.Marks = append(panel.Marks, chart.Mark{X: to, Label: "to " + fmtNum(to) + " s"})
	}
	for _, c := range changes {
		panel.Marks = append(panel.Marks, chart.Mark{X: c.At.Seconds(), Quantity: "accent", Label: c.Knob + "=" + c.Value + " at " + fmtNum(c.At.Seconds()) + " s"})
	}
	if opt != nil && opt.Value != nil {
		b := *opt.Value
		panel.Regions = []chart.Region{{X0: from, X1: to, Y0: b.Lo, Y1: b.Hi, Label: "your prediction", Detail: ": " + valueText(q, opt)}}
		yMax = math.Max(yMax, b.Hi)
		desc += " Your prediction, " + opt.Text + ", is " + valueText(q, opt) + ", drawn over those seconds."
	}
	panel.YMax = yMax * 1.1
	return chart.Chart{ID: id, Title: "What the prediction reads, second by second", Desc: desc + " The table under the chart has every second.",
		XTitle: "Seconds of the window", XMax: xMax, XSteps: 8, Panels: []chart.Panel{panel}, Table: table}
}

// isWhole reports whether v is a whole number (to a millisecond's worth).
func isWhole(v float64) bool { return math.Abs(v-math.Round(v)) < 1e-6 }

// predictedOption is the option the learner locked in for q: nil when
// they have not answered, or skipped.
func predictedOption(q *lessons.Question, p *store.Prediction) *lessons.Option {
	if p == nil || p.Skipped || p.Option == "" {
		return nil
	}
	return findOption(q, p.Option)
}
