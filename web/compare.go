package web

import (
	"cmp"
	"errors"
	"math"
	"net/http"
	"slices"

	"capacitylab/chart"
	"capacitylab/result"
)

// compareRow is one line of the comparison table: the windows of runs A
// and B at the same offered rate (either may be missing).
type compareRow struct {
	Offered float64
	A, B    *result.Row
}

// compareRows pairs the rows of two runs by offered rate, in rate order.
func compareRows(a, b []result.Row) []compareRow {
	var out []compareRow
	find := func(rate float64) int {
		for i := range out {
			if math.Abs(out[i].Offered-rate) < 1e-9 {
				return i
			}
		}
		out = append(out, compareRow{Offered: rate})
		return len(out) - 1
	}
	for i := range a {
		j := find(a[i].Offered)
		if out[j].A == nil {
			out[j].A = &a[i]
		}
	}
	for i := range b {
		j := find(b[i].Offered)
		if out[j].B == nil {
			out[j].B = &b[i]
		}
	}
	slices.SortStableFunc(out, func(x, y compareRow) int { return cmp.Compare(x.Offered, y.Offered) })
	return out
}

// compareRuns is GET /runs/compare?a=ID&b=ID: two runs side by side, on
// one chart and in one table paired by offered rate.
func (s *server) compareRuns(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	aID, bID := q.Get("a"), q.Get("b")
	if aID == "" || bID == "" {
		return s.pickTwoRuns(r, aID, bID)
	}
	a, err := s.loadRun(r, aID, false)
	if err != nil {
		return compareMissing(err, "A", aID)
	}
	b, err := s.loadRun(r, bID, false)
	if err != nil {
		return compareMissing(err, "B", bID)
	}
	rows := compareRows(a.Rows, b.Rows)
	html, err := renderString(r.Context(), chart.Figure(compareChart(a, b, rows, "compare")))
	if err != nil {
		return err
	}
	p := s.page(r, "Compare two runs")
	p.Wide = true
	s.render(w, r, http.StatusOK, comparePage(p, a, b, runTitle(s.lessonTitleOf(a.Lesson), a.Request), runTitle(s.lessonTitleOf(b.Lesson), b.Request),
		compareSettings(a.Request, b.Request), rows, html))
	return nil
}

// pickTwoRuns is the answer to a comparison without its two runs: what to
// do, with the runs list and, when the learner has two runs, a link that
// compares their latest two.
func (s *server) pickTwoRuns(r *http.Request, aID, bID string) error {
	e := &Error{Code: CodeInvalid, Title: "Pick two runs to compare",
		Message: "Comparing needs two runs, A and B. In the list of runs, choose one run as A and another as B, then press Compare A with B.",
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
// into an answer that says which of the two it was.
func compareMissing(err error, which, id string) error {
	var e *Error
	if errors.As(err, &e) && e.Code == CodeNotFound {
		return &Error{Code: CodeNotFound, Title: "Run " + which + " was not found",
			Message: "There is no run " + id + " to compare as " + which + ": it may have been mistyped. Choose two runs from the list.",
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
