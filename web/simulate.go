package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"capacitylab/chart"
	"capacitylab/lessons"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/sim"
	"capacitylab/store"
)

// simView is one simulation of a sweep request, as the Simulate button
// shows it: the simulator's rows (package sim), the chart of them beside
// the model's curve and the learner's finished run of the same lab block
// when there is one, and the rows as a table. Nothing of it is stored: a
// simulation is never the learner's run.
type simView struct {
	Request  runner.Request `json:"request"`
	Rows     []result.Row   `json:"rows"`
	Model    []prediction   `json:"prediction"`
	Requests int            `json:"requests"` // arrivals simulated, all windows
	TookMS   float64        `json:"took_ms"`  // how long the simulation took on the server
	// Simulated is always true, so a client reading the JSON cannot take
	// the rows for a measurement.
	Simulated bool `json:"simulated"`

	mine  *runView // the learner's finished run of the block, drawn beside
	chart chart.Chart
	table dataTable
}

// simulateSweep is POST /api/simulate: the request of POST /api/sweeps
// (same fields, same validation and messages), simulated in process by
// package sim instead of queued for the lab. It answers with the
// simulation's panel (an HTML fragment, for runs.js) with ?panel=1, a page
// for a plain form, and JSON otherwise. A request naming a lab block that
// a Predict settles is refused until the learner has locked in or skipped
// that prediction, as the block's Run and results are: a simulation would
// answer it as well as a run.
func (s *server) simulateSweep(w http.ResponseWriter, r *http.Request) error {
	q, fe, err := parseSweep(r)
	if err != nil {
		return err
	}
	q.Lesson = "" // derived from the block, never taken from the request
	var lab *lessons.Lab
	var les *lessons.Lesson
	if q.Block != "" {
		c, err := s.loadCourse()
		if err != nil {
			return err
		}
		if b, l, ok := c.Lab(q.Block); ok {
			lab, les, q.Lesson = b, l, l.Slug
		} else {
			fe["block"] = fmt.Sprintf("%q is not a lab block of this course: leave it empty or name a lab block", q.Block)
		}
	}
	if len(fe) == 0 {
		if verr := s.simLimits().Validate(q); verr != nil {
			errors.As(verr, &fe)
		}
	}
	m := sim.Model{Lab: q.Config, Timeout: q.Timeout()}
	if len(fe) == 0 && len(q.At) > 0 {
		// The runner has checked the changes as the lab would; what is
		// left is the one the simulator does not model (BACKLOG).
		if err := m.CheckChanges(q.At); err != nil {
			fe["at"] = err.Error()
		}
	}
	if len(fe) > 0 {
		return refuseSimulation(fe)
	}
	v := simView{Request: q, Simulated: true}
	if les != nil {
		st, err := s.state(r, les.Slug)
		if err != nil {
			return err
		}
		if gate, isFolded := folded(les, lab.ID, st); isFolded {
			return &Error{Code: CodeConflict, Title: "Predict first",
				Message: "Lock in or skip the prediction this sweep settles first: a simulation of it would answer the question as well as a run.",
				Links:   []errorLink{{"The prediction", lessonURL(les.Slug) + "#" + gate.ID}}}
		}
		if learner := learnerID(r); learner != "" {
			lc, err := s.lessonCtx(r.Context(), learner, les)
			if err != nil {
				return err
			}
			if own, ok := lc.Runs[lab.ID]; ok && own.Status == store.RunDone {
				v.mine = &own
			}
		}
	}
	var show []string
	if lab != nil {
		show = lab.Show
	}
	if err := simulate(r.Context(), &v, show); err != nil {
		return err
	}
	switch {
	case r.URL.Query().Get("panel") != "":
		html, err := renderString(r.Context(), simPanel(v))
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, html)
	case prefersHTML(r):
		p := s.page(r, "A simulation of a sweep")
		p.Wide = true
		title := ""
		if les != nil {
			title = les.Title
		}
		s.render(w, r, http.StatusOK, simPage(p, v, title))
	default:
		writeJSON(w, http.StatusOK, v)
	}
	return nil
}

// simulate runs v.Request through the simulator and fills in v's rows,
// model, chart and table (its columns show first: the lab block's Show).
func simulate(ctx context.Context, v *simView, show []string) error {
	q := v.Request
	start := time.Now()
	sw := q.Sweep()
	sw.Driver = sim.Model{Lab: q.Config, Timeout: q.Timeout()}
	rep, err := sw.Run(ctx, nil)
	v.TookMS = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		// What the simulator refuses after the runner's validation (a
		// lab whose workers accept, a closed loop that does no work) is
		// the request's to fix; its messages say what is allowed.
		return errorf(CodeInvalid, "This sweep cannot be simulated: "+err.Error())
	}
	v.Rows = rep.Rows()
	for _, w := range rep.Windows {
		v.Requests += w.Row.Arrivals
	}
	v.Model = predict(q, v.Rows)
	v.chart = simChart(q, v.Rows, v.Model, v.mine)
	v.table = simTable(q, v.Rows, v.Model, show)
	return nil
}

// refuseSimulation is the 400 for bad fields, as refuseSweep's for a run:
// one message per field, in JSON as "errors" or as a list on the page.
func refuseSimulation(fe runner.FieldErrors) error {
	msg := "Nothing was simulated: 1 field needs fixing."
	if len(fe) != 1 {
		msg = fmt.Sprintf("Nothing was simulated: %d fields need fixing.", len(fe))
	}
	return &Error{Code: CodeInvalid, Message: msg, Title: "Nothing was simulated", Fields: fe}
}

// simLimits are the limits a simulated sweep is held to: the runner's,
// so a simulation asks nothing a real run could not; a server without a
// runner uses the defaults for this machine.
func (s *server) simLimits() interface{ Validate(runner.Request) error } {
	if s.runner != nil {
		return s.runner
	}
	return runner.DefaultLimits(runtime.NumCPU())
}

// simChart is runChart for a simulation: the simulated figures in the
// measured series' colours, drawn as simulations (chart.Simulated: dotted,
// lighter, through hollow squares) with "simulated" in their legend names,
// the model's curves as for a run, and the learner's finished run of the
// block (solid through round points, "your run") beside them when there
// is one.
func simChart(q runner.Request, rows []result.Row, preds []prediction, mine *runView) chart.Chart {
	c := runChart(q, rows, preds, "sim-chart-"+cmpOr(q.Block, "request"))
	xOf := func(r result.Row) float64 { return r.Offered }
	title, table := "Simulated against the model", "Each simulated window beside the model's prediction"
	fitText := ""
	if scalable(q, rows) {
		c, fitText = scalabilityChart(q, rows, "sim-chart-"+cmpOr(q.Block, "request"))
		xOf = func(r result.Row) float64 { return float64(r.Clients) }
		title, table = "Simulated throughput against clients, with the Universal Scalability Law", "Each simulated window's throughput beside the fit's, and its latency"
	}
	c.Title = title
	for pi := range c.Panels {
		for si := range c.Panels[pi].Series {
			sr := &c.Panels[pi].Series[si]
			if sr.Style == chart.Measured {
				sr.Name = strings.Replace(sr.Name, "measured", "simulated", 1)
				sr.Style = chart.Simulated
			}
		}
	}
	desc := strconv.Itoa(len(rows)) + " simulated windows (computed, not measured)"
	if mine != nil && len(mine.Rows) > 0 && len(c.Panels) == 2 {
		var x, ok, p50, p99 []float64
		yLat := 0.0
		for _, r := range mine.Rows {
			x, ok, p50, p99 = append(x, xOf(r)), append(ok, r.OKPerSec), append(p50, r.P50MS), append(p99, r.P99MS)
			yLat = math.Max(yLat, r.P99MS)
		}
		c.Panels[0].Series = append(c.Panels[0].Series, chart.Series{Name: "ok/s, your run", Quantity: "ok", Style: chart.Measured, X: x, Y: ok})
		c.Panels[1].Series = append(c.Panels[1].Series,
			chart.Series{Name: "p50, your run", Quantity: "p50", Style: chart.Measured, X: x, Y: p50},
			chart.Series{Name: "p99, your run", Quantity: "p99", Style: chart.Measured, X: x, Y: p99})
		c.Panels[1].YMax = math.Max(c.Panels[1].YMax, yLat*1.1)
		desc += ", drawn dotted through hollow squares beside your run of this lab (solid through round points, " + strconv.Itoa(len(mine.Rows)) + " measured windows)"
	}
	if fitText != "" {
		desc += ". " + strings.TrimSuffix(fitText, ".")
	}
	c.Desc = desc + ". The numbers are in the table under the chart."
	c.Table.Caption = table
	return c
}

// simTable is the simulation's rows as a table, in the columns of a run of
// the block (show first, then the model's two, the rest one click away).
func simTable(q runner.Request, rows []result.Row, preds []prediction, show []string) dataTable {
	t := runTable(runView{Request: q, Rows: rows, Prediction: preds, show: show})
	t.ID = "sim-rows-" + cmpOr(q.Block, "request")
	t.Label = "Rows of the simulation, one per window"
	// The block and the settings in the caption also tell two simulations
	// on one page apart (each table's region is named by its caption).
	of := ""
	if q.Block != "" {
		of = " for the lab block " + q.Block
	}
	t.Caption = "Simulated, not measured" + of + ": one row per window, computed by the simulator from these settings: " + requestSummary(q) +
		". Times in ms from the intended send; the model columns are what the model predicts."
	t.TestID = "sim-rows"
	return t
}

// simSummary says in words what was simulated and how long it took.
func simSummary(v simView) string {
	return fmt.Sprintf("Computed by the simulator from these settings in %s ms: %s simulated requests, none sent to a lab. "+
		"It is not a run: nothing is saved, and the live lab's own overheads and a busy machine's delays are left out.",
		strconv.FormatFloat(v.TookMS, 'f', 1, 64), fmtNum(float64(v.Requests)))
}

// cmpOr returns a, or b when a is "".
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
