package web

import (
	"capacitylab/evidence"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"capacitylab/labsvc"
	"capacitylab/lessons"
	"capacitylab/recorder"
	"capacitylab/result"
	"capacitylab/runner"
)

// runColumns are the columns of a run's table: JSON names of result.Row,
// the window first, then those a recorded table of the same settings has
// (lessons.Columns: a retrying client's, classes', a varied service's,
// fan-out's and hedging's columns when the run has them), then the
// generator's own counts and the note.
func runColumns(q runner.Request) []string {
	cols := append([]string{"window"}, lessons.Columns(tableOf(q))...)
	cols = slices.DeleteFunc(cols, func(c string) bool { return c == "n" || c == "lab_cpu_ms" || c == "lab_service_ms" })
	return append(cols, "not_sent", "client_busy", "note")
}

// tableOf says what a run of q has, for lessons.Columns.
func tableOf(q runner.Request) lessons.TableOf {
	return lessons.TableOf{Accept: string(q.Accept), Clients: q.Mode == runner.ModeClosed && len(q.Clients) > 1, Retrying: q.Retry != "",
		Classed: q.Critical > 0 || q.Sheddable > 0, Varied: q.Dist != "", Fanned: q.Fanout > 1, Hedged: q.Hedge != ""}
}

// defaultRunShow are the columns a run's table shows first when its lab
// block names none (show:); a run whose workers accept for themselves
// (ACCEPT=workers) shows backlogged after queued too.
var defaultRunShow = []string{"offered", "ok_per_sec", "p50_ms", "p99_ms", "queued", "refused", "gaveup"}

// rowCells formats a row's cells in the order of cols (runColumns): the recorded
// tables' columns exactly as recorder.RowCells writes them (so a run and a
// recorded table, and the reading line beside them, show the same
// figures), the rest to one decimal. Windows are counted from 1, as
// people count them (the row's JSON counts from 0).
func rowCells(row result.Row, cols []string) []string {
	m := map[string]any{}
	b, _ := json.Marshal(row)
	json.Unmarshal(b, &m)
	recorded := map[string]string{}
	// Every column a recorded table may have (backlogged too, which only
	// a lab whose workers accept records), formatted as recorded.
	cells := recorder.RowCells(row, lessons.AllColumns())
	for i, c := range lessons.AllColumns() {
		recorded[c] = cells[i]
	}
	out := make([]string, len(cols))
	for i, c := range cols {
		if c == "window" {
			out[i] = strconv.Itoa(row.Window + 1)
			continue
		}
		if v, ok := recorded[c]; ok {
			out[i] = v
			continue
		}
		switch v := m[c].(type) {
		case float64:
			if v < 0 {
				out[i] = "" // unknown (no lab control API): left empty, never -1
			} else {
				out[i] = fmtNum(math.Round(v*10) / 10)
			}
		case string:
			out[i] = v
		}
	}
	return out
}

// runTable is a run's rows as a table: the window, the columns its lab
// block names (or defaultRunShow), the model's two columns, then the rest
// one click away.
func runTable(v runView) dataTable {
	show := v.show
	if len(show) == 0 {
		show = defaultRunShow
		if v.Request.Accept == labsvc.AcceptWorkers {
			show = slices.Insert(slices.Clone(show), slices.Index(show, "queued")+1, "backlogged")
		}
	}
	rowColumns := runColumns(v.Request)
	var cols []tableCol
	var order []int
	add := func(key string, extra bool) {
		if i := slices.Index(rowColumns, key); i >= 0 && !slices.ContainsFunc(cols, func(c tableCol) bool { return c.Key == key }) {
			cols = append(cols, tableCol{Key: key, Heading: key, Extra: extra})
			order = append(order, i)
		}
	}
	add("window", false)
	for _, k := range show {
		add(k, false)
	}
	caption := "One row per window. Times in ms from the intended send; the model columns are what the model predicts."
	if v.Request.Upload == nil {
		cols = append(cols, tableCol{Key: "model_ok_per_sec", Heading: "model ok_per_sec"}, tableCol{Key: "model_p99_ms", Heading: "model p99_ms"})
		order = append(order, -1, -2)
	} else {
		// No model of a learner's own service.
		caption = "One row per window, computed from the uploaded records as load computes its own. Times in ms from the intended send."
		if v.Request.Upload.Dataset.Timing == evidence.FromSent {
			caption = "One row per window, computed from the uploaded records as load computes its own. Times in ms from the actual send, as the tool timed them."
		}
	}
	for _, k := range rowColumns {
		add(k, true)
	}
	t := dataTable{ID: "rows-" + panelID(v), Label: "Rows of the run, one per window",
		Caption: caption, Cols: cols, TestID: "run-rows"}
	for i, row := range v.Rows {
		cells := rowCells(row, rowColumns)
		out := make([]string, len(order))
		for j, k := range order {
			switch k {
			case -1:
				out[j] = modelCell(v, i, false)
			case -2:
				out[j] = modelCell(v, i, true)
			default:
				out[j] = cells[k]
			}
		}
		t.Rows = append(t.Rows, tableRow{Window: itoa(row.Window), Cells: out})
	}
	return t
}

// modelCell is the model's ok/s (or p99 when p99 is set) for row i.
func modelCell(v runView, i int, p99 bool) string {
	if i >= len(v.Prediction) {
		return ""
	}
	p := v.Prediction[i]
	if !p99 {
		return fmtNum(math.Round(p.OKPerSec*10) / 10)
	}
	if p.P99MS == nil {
		return "unbounded" // no steady state: the model's queue grows without end
	}
	return fmtNum(math.Round(*p.P99MS*10) / 10)
}
