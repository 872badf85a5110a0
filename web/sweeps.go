package web

import (
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"capacitylab/chart"
	"capacitylab/labsvc"
	"capacitylab/lessons"
	"capacitylab/loadrun"
	"capacitylab/measure"
	"capacitylab/recorder"
	"capacitylab/runner"
	"capacitylab/store"
)

// runsListLimit caps how many runs /runs lists.
const runsListLimit = 200

// sweepAccepted is the 202 answer to POST /api/sweeps.
type sweepAccepted struct {
	ID             string    `json:"id"`
	Position       int       `json:"position"`
	EstimatedStart time.Time `json:"estimated_start"`
	URL            string    `json:"url"`    // the run's page
	Stream         string    `json:"stream"` // its websocket
}

// sweepFields are the form and JSON field names of a sweep request, in the
// order the form shows them.
var sweepFields = []string{"workers", "spin_ms", "wait_ms", "limit", "cpus", "stall_every", "stall_ms", "accept", "backlog", "mode", "rates", "clients", "seconds", "seed", "rng", "timeout_ms", "block"}

// isForm reports whether the request body is a form rather than JSON.
func isForm(r *http.Request) bool {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return ct == "application/x-www-form-urlencoded" || ct == "multipart/form-data"
}

// prefersHTML reports whether the client is a plain browser form (no
// script): it posted a form and did not ask for JSON first.
func prefersHTML(r *http.Request) bool {
	if !isForm(r) {
		return false
	}
	accept := r.Header.Get("Accept")
	j := strings.Index(accept, "application/json")
	return j < 0 || (strings.Contains(accept, "text/html") && strings.Index(accept, "text/html") < j)
}

// parseSweep reads a sweep request from a JSON body or a form. Fields left
// out take the lab's defaults (labsvc.DefaultConfig) and open mode. A field
// that cannot be read at all is reported like any other bad field.
func parseSweep(r *http.Request) (runner.Request, runner.FieldErrors, error) {
	q := runner.Request{Preset: measure.Preset{Config: labsvc.DefaultConfig(), Mode: runner.ModeOpen}}
	fe := runner.FieldErrors{}
	if !isForm(r) {
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&q); err != nil {
			var tooBig *http.MaxBytesError
			var typeErr *json.UnmarshalTypeError
			switch {
			case errors.As(err, &tooBig):
				return q, nil, err
			case errors.As(err, &typeErr) && typeErr.Field != "":
				// Field is the path through embedded structs
				// (Config.workers); the API's name is its last part.
				name := typeErr.Field[strings.LastIndexByte(typeErr.Field, '.')+1:]
				fe[name] = fmt.Sprintf("%s is not allowed here: want %s", typeErr.Value, jsonKindOf(name))
			case strings.HasPrefix(err.Error(), "json: unknown field "):
				name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
				fe[name] = "is not a field of a sweep: want " + strings.Join(sweepFields, ", ")
			default:
				fe["body"] = "the body is not a JSON sweep request: send an object such as {\"rates\": [40, 80], \"seconds\": 2}"
			}
			return q, fe, nil
		}
		if dec.More() {
			fe["body"] = "the body has more than one JSON value: send one object"
		}
		return q, fe, nil
	}
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return q, nil, err
		}
		fe["body"] = "the form could not be read: " + err.Error()
		return q, fe, nil
	}
	f := r.PostForm
	intField := func(name string, dst *int) {
		v := strings.TrimSpace(f.Get(name))
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			fe[name] = fmt.Sprintf("%q is not a whole number", v)
			return
		}
		*dst = n
	}
	intField("workers", &q.Workers)
	intField("spin_ms", &q.SpinMS)
	intField("wait_ms", &q.WaitMS)
	intField("limit", &q.Limit)
	intField("cpus", &q.CPUs)
	intField("stall_every", &q.StallEvery)
	intField("stall_ms", &q.StallMS)
	intField("backlog", &q.Backlog)
	if v := f.Get("accept"); v != "" {
		_ = q.Accept.UnmarshalText([]byte(v)) // kept as given; Validate names a bad one
	}
	intField("timeout_ms", &q.TimeoutMS)
	if v := strings.TrimSpace(f.Get("rng")); v != "" {
		q.RNG = v
	}
	if v := strings.TrimSpace(f.Get("seconds")); v != "" {
		sec, err := plainNumber(v)
		if err != nil {
			fe["seconds"] = fmt.Sprintf("%q is not a number of seconds", v)
		} else {
			q.Seconds = sec
		}
	}
	if v := strings.TrimSpace(f.Get("seed")); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			fe["seed"] = fmt.Sprintf("%q is not allowed: want a whole number from 0 to %d", v, uint64(math.MaxUint64))
		} else {
			q.Seed = seed
		}
	}
	if v := strings.TrimSpace(f.Get("mode")); v != "" {
		q.Mode = v
	}
	for _, part := range splitList(f.Get("rates")) {
		rate, err := plainNumber(part)
		if err != nil {
			fe["rates"] = fmt.Sprintf("%q is not a number: want rates a second separated by commas, e.g. 40, 80, 120", part)
			break
		}
		q.Rates = append(q.Rates, rate)
	}
	for _, part := range splitList(f.Get("clients")) {
		c, err := strconv.Atoi(part)
		if err != nil {
			fe["clients"] = fmt.Sprintf("%q is not a whole number: want client counts separated by commas, e.g. 1, 4, 16", part)
			break
		}
		q.Clients = append(q.Clients, c)
	}
	// A form carries both lists; the one its mode does not use is ignored.
	if q.Mode == runner.ModeClosed {
		q.Rates = nil
		delete(fe, "rates")
	} else if q.Mode == runner.ModeOpen {
		q.Clients = nil
		delete(fe, "clients")
	}
	q.Block = strings.TrimSpace(f.Get("block"))
	return q, fe, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func jsonKindOf(field string) string {
	switch field {
	case "rates":
		return "a list of numbers, e.g. [40, 80]"
	case "clients":
		return "a list of whole numbers, e.g. [1, 4]"
	case "mode", "block", "lesson":
		return "a string"
	case "seconds":
		return "a number"
	case "seed":
		return "a whole number of 0 or more"
	}
	return "a whole number"
}

// submitSweep is POST /api/sweeps: validate, queue, and answer 202 with the
// run's id and place (or 303 to the run's page for a plain form).
func (s *server) submitSweep(w http.ResponseWriter, r *http.Request) error {
	q, fe, err := parseSweep(r)
	if err != nil {
		return err
	}
	if s.runner == nil {
		return errorf(CodeUnavailable, "This server does not run live sweeps. Run the lab on your own machine with the commands shown.")
	}
	q.Lesson = "" // derived from the block, never taken from the request
	if q.Block != "" {
		c, err := s.loadCourse()
		if err != nil {
			return err
		}
		if _, l, ok := c.Lab(q.Block); ok {
			q.Lesson = l.Slug
		} else {
			fe["block"] = fmt.Sprintf("%q is not a lab block of this course: leave it empty or name a lab block", q.Block)
		}
	}
	if len(fe) == 0 {
		if verr := s.runner.Validate(q); verr != nil {
			errors.As(verr, &fe)
		}
	}
	if len(fe) > 0 {
		return s.refuseSweep(w, r, fe)
	}
	learner := ensureLearner(w, r)
	tk, err := s.runner.SubmitFrom(r.Context(), learner, clientAddr(r), q)
	var full *runner.QueueFullError
	var mine *runner.AlreadyQueuedError
	var share *runner.ShareError
	switch {
	case errors.As(err, &fe):
		return s.refuseSweep(w, r, fe)
	case errors.As(err, &share):
		msg := fmt.Sprintf("There are already %d runs waiting or running from your address (everyone behind one address, such as a school's, shares it), "+
			"so the queue stays fair to others. Try again in %s, or watch one of those runs on the runs page.", share.Share, retryText(share.RetryAfter))
		return &Error{Code: CodeBusy, Message: msg, Title: "Your address has its share of runs", RetryAfter: share.RetryAfter}
	case errors.As(err, &full):
		secs := retrySeconds(full.RetryAfter)
		msg := fmt.Sprintf("The queue is full (%d runs queued or running). Try again in about %d s, or look at the runs others have recorded.", s.runner.Capacity(), secs)
		return &Error{Code: CodeBusy, Message: msg, Title: "The queue is full", RetryAfter: full.RetryAfter}
	case errors.As(err, &mine):
		msg := "You already have a run waiting or running. Watch it, or cancel it before starting another."
		return &Error{Code: CodeConflict, Message: msg, Title: "You already have a run", Run: mine.ID}
	case errors.Is(err, runner.ErrClosed):
		return &Error{Code: CodeUnavailable, Message: "The server is restarting. Try again in a minute.", RetryAfter: time.Minute}
	case err != nil:
		return err
	}
	if prefersHTML(r) {
		http.Redirect(w, r, runURL(tk.ID), http.StatusSeeOther)
		return nil
	}
	writeJSON(w, http.StatusAccepted, sweepAccepted{ID: tk.ID, Position: tk.Position, EstimatedStart: tk.EstimatedStart.UTC(),
		URL: runURL(tk.ID), Stream: "/ws/runs/" + tk.ID})
	return nil
}

// refuseSweep is the 400 for bad fields: one message per field, rendered
// by the error path as "errors" in JSON or a list on the page.
func (s *server) refuseSweep(w http.ResponseWriter, r *http.Request, fe runner.FieldErrors) error {
	n := len(fe)
	msg := "The run was not queued: 1 field needs fixing."
	if n != 1 {
		msg = fmt.Sprintf("The run was not queued: %d fields need fixing.", n)
	}
	return &Error{Code: CodeInvalid, Message: msg, Title: "The run was not queued", Fields: fe}
}

// fieldMessage is one bad field, for pages.
type fieldMessage struct{ Field, Message string }

// fieldList orders bad fields as the Run form shows them, then any others
// by name.
func fieldList(fe map[string]string) []fieldMessage {
	var out []fieldMessage
	known := map[string]bool{"body": true}
	for _, name := range append(append([]string(nil), sweepFields...), "body") {
		known[name] = true
		if m, ok := fe[name]; ok {
			out = append(out, fieldMessage{name, m})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fe)) {
		if !known[name] {
			out = append(out, fieldMessage{name, fe[name]})
		}
	}
	return out
}

func runURL(id string) string { return "/runs/" + id }

// cancelRun is POST /api/runs/{id}/cancel (JSON) and POST
// /runs/{id}/cancel (a form: 303 back to the run's page).
func (s *server) cancelRun(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if s.runner == nil {
		return errorf(CodeNotFound, "There is no live run "+id+" to cancel.")
	}
	err := s.runner.Cancel(id, learnerID(r))
	switch {
	case errors.Is(err, runner.ErrNoRun):
		return errorf(CodeNotFound, "There is no live run "+id+": it may have finished long ago.")
	case errors.Is(err, runner.ErrNotYours):
		return errorf(CodeForbidden, "Only the learner who started a run can cancel it.")
	case errors.Is(err, runner.ErrFinished):
		return errorf(CodeConflict, "The run has already finished; there is nothing to cancel.")
	case err != nil:
		return err
	}
	if !strings.HasPrefix(r.URL.Path, "/api/") && !wantsJSON(r) {
		// The lab block's Cancel sends its form's block: back to it.
		to := runURL(id)
		if block := r.PostFormValue("block"); block != "" {
			if c, err := s.course(); err == nil {
				if _, l, ok := c.Lab(block); ok {
					to = lessonURL(l.Slug) + "#" + block
				}
			}
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": id, "status": "cancelling"})
	return nil
}

// runView is one run as the pages and GET /api/runs/{id} show it: the
// stored run, overlaid with the runner's live state when it holds the run.
type runView struct {
	ID             string          `json:"id"`
	Status         store.RunStatus `json:"status"`
	Reason         string          `json:"reason,omitempty"`
	Request        runner.Request  `json:"request"`
	Lesson         string          `json:"lesson,omitempty"`
	Block          string          `json:"block,omitempty"`
	Mine           bool            `json:"mine"`
	Position       int             `json:"position,omitempty"`
	EstimatedStart time.Time       `json:"estimated_start,omitzero"`
	CreatedAt      time.Time       `json:"created_at"`
	StartedAt      time.Time       `json:"started_at,omitzero"`
	EndedAt        time.Time       `json:"ended_at,omitzero"`
	Rows           []loadrun.Row   `json:"rows"`
	Records        int             `json:"records"`
	LastSeq        int             `json:"last_seq"`
	Prediction     []prediction    `json:"prediction"`
	chart          chartEntry      // the chart of Rows with Prediction
	show           []string        // the columns its lab block shows first (lessons.Lab.Show)
}

// Live reports whether the run is still queued or running.
func (v runView) Live() bool { return v.Status == store.RunQueued || v.Status == store.RunRunning }

// loadRun builds a run's view, or a not_found error. A run the runner
// holds (queued, running or recently finished) is read from memory, so
// the many watchers of a class refreshing after each row cost no database
// reads; others come from the store. withRecords also counts the stored
// records (a database read) for finished runs.
func (s *server) loadRun(r *http.Request, id string, withRecords bool) (runView, error) {
	return s.runView(r.Context(), id, learnerID(r), withRecords)
}

// runView is loadRun for a learner ("" for nobody's view, as the run
// panel is).
func (s *server) runView(ctx context.Context, id, learner string, withRecords bool) (runView, error) {
	var v runView
	var snap runner.Snapshot
	live := false
	if s.runner != nil {
		snap, live = s.runner.Get(id)
	}
	if live {
		v = runView{ID: id, Status: snap.Status, Reason: snap.Reason, Request: snap.Request, Lesson: snap.Request.Lesson, Block: snap.Request.Block,
			Mine: learner != "" && snap.Learner == learner, Position: snap.Position, EstimatedStart: snap.EstimatedStart,
			CreatedAt: snap.CreatedAt, StartedAt: snap.StartedAt, EndedAt: snap.EndedAt, Rows: snap.Rows, LastSeq: snap.LastSeq}
	} else {
		stored, err := s.store.Run(ctx, id)
		if errors.Is(err, store.ErrNoRun) {
			return v, &Error{Code: CodeNotFound, Title: "No such run", Message: "There is no run " + id + ": the link may be mistyped.",
				Links: []errorLink{{"All runs", "/runs"}}}
		} else if err != nil {
			return v, err
		}
		stored = settled(stored)
		v = runView{ID: id, Status: stored.Status, Reason: stored.Reason, Lesson: stored.Lesson, Block: stored.Block,
			Mine: learner != "" && stored.Learner == learner, CreatedAt: stored.CreatedAt, StartedAt: stored.StartedAt, EndedAt: stored.EndedAt, Rows: stored.Rows}
		if err := json.Unmarshal(stored.Request, &v.Request); err != nil {
			return v, fmt.Errorf("run %s: stored request: %w", id, err)
		}
	}
	if v.Rows == nil {
		v.Rows = []loadrun.Row{}
	}
	if withRecords && !v.Live() {
		var err error
		if v.Records, err = s.store.CountRecords(ctx, id); err != nil {
			return v, err
		}
	}
	v.chart = s.charts.get(v)
	v.Prediction = v.chart.preds
	if v.Block != "" {
		if course, err := s.course(); err == nil {
			if lab, _, ok := course.Lab(v.Block); ok {
				v.show = lab.Show
			}
		}
	}
	return v, nil
}

// settled is a stored run the runner does not hold as it stands: one
// stored queued or running is over (the runner holds every live run), and
// is shown interrupted, as the server marks it at start when it can.
func settled(r store.Run) store.Run {
	if r.Status == store.RunQueued || r.Status == store.RunRunning {
		r.Status, r.Reason = store.RunInterrupted, runner.UnsavedEndReason
	}
	return r
}

// chartCache keeps the model's prediction and the chart of recent runs,
// keyed by run and number of rows, so they are computed once per row
// rather than once per watcher (model.QueueCurve takes a millisecond or
// two). Make it with newChartCache; the zero value keeps nothing.
type chartCache struct {
	b *bounded[chartEntry]
}

// chartCacheSize bounds the cache.
const chartCacheSize = 256

func newChartCache() chartCache {
	return chartCache{b: &bounded[chartEntry]{max: chartCacheSize}}
}

// chartEntry is a run's prediction and chart, and the chart rendered for
// a page.
type chartEntry struct {
	preds []prediction
	chart chart.Chart
	html  string
}

func (c *chartCache) get(v runView) chartEntry {
	key := v.ID + "/" + strconv.Itoa(len(v.Rows))
	if v.ID == "" {
		key = "preset/" + v.Request.Block
	}
	if e, ok := c.b.get(key); ok {
		return e
	}
	var e chartEntry
	e.preds = predict(v.Request, v.Rows)
	e.chart = runChart(v.Request, v.Rows, e.preds, "chart-"+panelID(v))
	html, err := renderString(context.Background(), chart.Figure(e.chart))
	if err != nil {
		// templ writes into memory here: only a bug gets this far.
		html = "<p>The chart could not be drawn.</p>"
	}
	e.html = html
	c.b.put(key, e)
	return e
}

// apiRun is GET /api/runs/{id}.
func (s *server) apiRun(w http.ResponseWriter, r *http.Request) error {
	v, err := s.loadRun(r, chi.URLParam(r, "id"), true)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// runPage is GET /runs/{id} and, for ids ending in .csv, the rows as CSV.
func (s *server) runPage(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if base, ok := strings.CutSuffix(id, ".csv"); ok {
		return s.rowsCSV(w, r, base)
	}
	v, err := s.loadRun(r, id, true)
	if err != nil {
		return err
	}
	dist, hasDist, err := s.runDistribution(r.Context(), v, r.URL.Query().Get("window"))
	if err != nil {
		return err
	}
	lessonTitle := s.lessonTitleOf(v.Lesson)
	p := s.page(r, runTitle(lessonTitle, v.Request))
	p.Wide = true
	s.render(w, r, http.StatusOK, runPageView(p, v, s.assets.URL("js/runs.js"), lessonTitle, dist, hasDist))
	return nil
}

// runChartSVG is GET /runs/{id}/chart.svg: the chart of the rows so far
// as an SVG image of its own (a download; pages show the same chart as
// HTML in the run's panel).
func (s *server) runChartSVG(w http.ResponseWriter, r *http.Request) error {
	v, err := s.loadRun(r, chi.URLParam(r, "id"), false)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-store")
	return chart.SVG(v.chart.chart).Render(r.Context(), w)
}

// rowColumns are the columns of a run's table: JSON names of loadrun.Row,
// which are also the names the lessons' recorded tables and cmd/load use,
// so a learner reads the same heading in their run as in the lesson.
var rowColumns = []string{"window", "offered", "sent", "ok", "refused", "gaveup", "error", "ok_per_sec", "p50_ms", "p99_ms",
	"mean_ms", "done", "lost", "queued", "backlogged", "not_sent", "late", "send_lag_p99_ms", "note"}

// defaultRunShow are the columns a run's table shows first when its lab
// block names none (show:); a run whose workers accept for themselves
// (ACCEPT=workers) shows backlogged after queued too.
var defaultRunShow = []string{"offered", "ok_per_sec", "p50_ms", "p99_ms", "queued", "refused", "gaveup"}

// rowCells formats a row's cells in rowColumns order: the recorded
// tables' columns exactly as recorder.RowCells writes them (so a run and a
// recorded table, and the reading line beside them, show the same
// figures), the rest to one decimal. Windows are counted from 1, as
// people count them (the row's JSON counts from 0).
func rowCells(row loadrun.Row) []string {
	m := map[string]any{}
	b, _ := json.Marshal(row)
	json.Unmarshal(b, &m)
	recorded := map[string]string{}
	// Every column a recorded table may have (backlogged too, which only
	// a lab whose workers accept records), formatted as recorded.
	cells := recorder.RowCells(row, lessons.AcceptWorkers)
	for i, c := range lessons.AllColumns() {
		recorded[c] = cells[i]
	}
	out := make([]string, len(rowColumns))
	for i, c := range rowColumns {
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
	cols = append(cols, tableCol{Key: "model_ok_per_sec", Heading: "model ok_per_sec"}, tableCol{Key: "model_p99_ms", Heading: "model p99_ms"})
	order = append(order, -1, -2)
	for _, k := range rowColumns {
		add(k, true)
	}
	t := dataTable{ID: "rows-" + panelID(v), Label: "Rows of the run, one per window",
		Caption: "One row per window. Times in ms from the intended send; the model columns are what the model predicts.",
		Cols:    cols, TestID: "run-rows"}
	for i, row := range v.Rows {
		cells := rowCells(row)
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

// rowsCSV is GET /runs/{id}.csv: every column of every row.
func (s *server) rowsCSV(w http.ResponseWriter, r *http.Request, id string) error {
	v, err := s.loadRun(r, id, false)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="run-`+id+`.csv"`)
	cw := csv.NewWriter(w)
	head := []string{"offered", "sent", "ok", "refused", "gaveup", "error", "ok_per_sec", "p50_ms", "p99_ms", "done", "lost", "queued", "backlogged",
		"not_sent", "late", "send_lag_p99_ms", "mean_ms", "p95_ms", "max_ms", "n", "window", "arrivals", "seconds", "send_lag_max_ms", "clients", "note"}
	cw.Write(head)
	for _, row := range v.Rows {
		f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
		i := strconv.Itoa
		// done, queued and backlogged are -1 when the lab's counters were not read:
		// unknown, so the cell is left empty.
		opt := func(n int) string {
			if n < 0 {
				return ""
			}
			return strconv.Itoa(n)
		}
		cw.Write([]string{f(row.Offered), i(row.Sent), i(row.OK), i(row.Refused), i(row.Gaveup), i(row.Error), f(row.OKPerSec), f(row.P50MS), f(row.P99MS),
			opt(row.Done), i(row.Lost), opt(row.Queued), opt(row.Backlogged), i(row.NotSent), i(row.Late), f(row.SendLagP99MS), f(row.MeanMS), f(row.P95MS), f(row.MaxMS), i(row.N),
			i(row.Window), i(row.Arrivals), f(row.Seconds), f(row.SendLagMaxMS), i(row.Clients), row.Note})
	}
	cw.Flush()
	return cw.Error()
}

// recordsCSV is GET /runs/{id}/records.csv: every raw request record, in
// loadrun's CSV format, streamed from the store.
func (s *server) recordsCSV(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if _, err := s.store.Run(r.Context(), id); errors.Is(err, store.ErrNoRun) {
		return errorf(CodeNotFound, "There is no run "+id+".")
	} else if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="run-`+id+`-records.csv"`)
	cw := csv.NewWriter(w)
	if err := cw.Write(loadrun.CSVHeader()); err != nil {
		return nil
	}
	batch := make([]loadrun.Record, 0, 1024)
	err := s.store.EachRecord(r.Context(), id, func(rec loadrun.Record) error {
		batch = append(batch, rec)
		if len(batch) == cap(batch) {
			err := loadrun.AppendCSV(cw, batch)
			batch = batch[:0]
			return err
		}
		return nil
	})
	if err == nil {
		err = loadrun.AppendCSV(cw, batch)
	}
	cw.Flush()
	if err != nil {
		// The header is out: all we can do is log and cut the download short.
		s.log.ErrorContext(r.Context(), "records download failed", "run", id, "err", err)
	}
	return nil
}

// runListItem is one line of /runs.
type runListItem struct {
	ID       string
	Title    string // runTitle: the lesson and the preset in words
	Windows  string // "4 windows of 2 s"
	Status   store.RunStatus
	Reason   string
	Lesson   string
	Created  time.Time
	Position int
}

// runsPage is GET /runs: the learner's own runs first, then everyone's.
func (s *server) runsPage(w http.ResponseWriter, r *http.Request) error {
	learner := learnerID(r)
	runs, err := s.store.Runs(r.Context(), learner, runsListLimit)
	if err != nil {
		return err
	}
	var mine, others []runListItem
	for _, sr := range runs {
		var q runner.Request
		json.Unmarshal(sr.Request, &q)
		it := runListItem{ID: sr.ID, Title: runTitle(s.lessonTitleOf(sr.Lesson), q), Windows: counted(q.Windows(), "window", "windows") + " of " + fmtNum(q.Seconds) + " s",
			Status: sr.Status, Reason: sr.Reason, Lesson: sr.Lesson, Created: sr.CreatedAt}
		if s.runner != nil {
			if snap, ok := s.runner.Get(sr.ID); ok {
				it.Status, it.Position = snap.Status, snap.Position
			}
		}
		if learner != "" && sr.Learner == learner {
			mine = append(mine, it)
		} else {
			others = append(others, it)
		}
	}
	p := s.page(r, "Runs")
	p.Wide = true
	s.render(w, r, http.StatusOK, runsListPage(p, mine, others))
	return nil
}

// requestSummary says in words what a run measures.
func requestSummary(q runner.Request) string {
	knobs := q.Config.String()
	if q.Mode == runner.ModeClosed {
		return fmt.Sprintf("%s · closed loop, %s clients · %s s a window", knobs, joinInts(q.Clients), fmtNum(q.Seconds))
	}
	seed := fmt.Sprintf("seed %d", q.Seed)
	if q.RNG != "" && q.RNG != string(loadrun.PCG) {
		seed += " (" + q.RNG + ")"
	}
	return fmt.Sprintf("%s · %s a second · %s s a window · %s", knobs, joinFloats(q.Rates), fmtNum(q.Seconds), seed)
}

func joinFloats(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmtNum(v)
	}
	return strings.Join(s, ", ")
}

func joinInts(vs []int) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}

// labPreset turns a lesson's lab block into the form's starting values:
// the preset it runs (recorder.Preset, as its recorded table was measured).
func labPreset(l *lessons.Lab) runner.Request {
	return runner.Request{Preset: recorder.Preset(l), Block: l.ID}
}

func boolText(b bool) string { return strconv.FormatBool(b) }

func u64(v uint64) string { return strconv.FormatUint(v, 10) }

// panelID is the prefix of element ids inside a run's panel.
func panelID(v runView) string {
	if v.ID == "" {
		return "preview-" + v.Request.Block
	}
	return v.ID
}

// statusReplaying is the status a panel shows while a recorded run is
// replayed (never stored).
const statusReplaying = "replaying"

// statusLine says where a run stands, in words: queued with its place and
// wait, running with its window (counted from 1), done, failed or
// cancelled with the reason. static/js/runs.js writes the same sentences
// as events arrive.
func statusLine(v runView) string {
	n := v.Request.Windows()
	switch v.Status {
	case "":
		return "Not run yet. The dashed lines are what the model predicts for these knobs."
	case store.RunQueued:
		return fmt.Sprintf("Queued: number %d in line, starting %s.", v.Position, startsIn(time.Until(v.EstimatedStart)))
	case store.RunRunning:
		return fmt.Sprintf("Running: window %d of %d.", min(len(v.Rows)+1, n), n)
	case store.RunDone:
		return fmt.Sprintf("Done: all %d %s measured.", len(v.Rows), plural(len(v.Rows), "window", "windows"))
	case store.RunFailed:
		return "Failed: " + reasonText(v.Reason)
	case store.RunCancelled:
		return "Cancelled: " + reasonText(v.Reason)
	case store.RunInterrupted:
		return "Interrupted: " + reasonText(v.Reason)
	case statusReplaying:
		return fmt.Sprintf("Replaying a recorded run at its real pace: %d of %d windows so far.", len(v.Rows), n)
	}
	return string(v.Status)
}

// startsIn says when a queued run is expected to start.
func startsIn(d time.Duration) string {
	secs := int(math.Ceil(d.Seconds()))
	switch {
	case secs <= 1:
		return "in a moment"
	case secs < 90:
		return fmt.Sprintf("in about %d s", secs)
	}
	return fmt.Sprintf("in about %d min", int(math.Round(d.Minutes())))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// reasonText is a run's end reason as a sentence.
func reasonText(reason string) string {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return "no reason was given."
	}
	if !strings.HasSuffix(reason, ".") {
		reason += "."
	}
	return reason
}

func windowFraction(v runView) string {
	if v.Status == store.RunRunning {
		return "0"
	}
	if len(v.Rows) > 0 {
		return "1"
	}
	return "0"
}

func runFraction(v runView) string {
	n := v.Request.Windows()
	if n == 0 {
		return "0"
	}
	return strconv.FormatFloat(float64(len(v.Rows))/float64(n), 'f', 3, 64)
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

// runPanelFragment is GET /runs/{id}/panel: the run's panel alone, which
// runs.js puts into a lesson's lab block after pressing Run.
//
// With ?rows=N (a replay) it shows the finished run as it stood after N
// windows: the first N rows, their chart, and a replaying status.
func (s *server) runPanelFragment(w http.ResponseWriter, r *http.Request) error {
	id, rowsQ := chi.URLParam(r, "id"), r.URL.Query().Get("rows")
	// A class's pages fetch a run's panel at once (when its run starts):
	// the rendering is kept per run state, so they cost one render, not
	// one each. The panel is the same for every learner. A live run's state
	// is its last event; a finished one's is final.
	key := id + "/stored/" + rowsQ
	if s.runner != nil {
		if snap, live := s.runner.Get(id); live {
			key = id + "/" + strconv.Itoa(snap.LastSeq) + "/" + string(snap.Status) + "/" + rowsQ
		}
	}
	out, err := s.keptPanel(key, func() ([]byte, bool, error) {
		v, err := s.loadRun(r, id, false)
		if err != nil {
			return nil, false, err
		}
		if q := r.URL.Query().Get("rows"); q != "" {
			n, err := strconv.Atoi(q)
			if err != nil || n < 0 {
				return nil, false, errorf(CodeInvalid, "rows="+q+" is not allowed: want how many windows of the replay to show, 0 or more.")
			}
			if v.Live() {
				return nil, false, errorf(CodeConflict, "The run is still live: watch it live rather than replayed.")
			}
			if n < len(v.Rows) {
				v.Rows = v.Rows[:n]
				v.Status, v.Reason = statusReplaying, ""
				v.chart = s.charts.get(v)
				v.Prediction = v.chart.preds
			}
		}
		html, err := renderString(r.Context(), runPanel(v))
		if err != nil {
			return nil, false, err
		}
		// Kept only when rendered from the state the key names: the
		// runner's run may have moved on between the key and loadRun.
		keep := key == id+"/stored/"+rowsQ || key == id+"/"+strconv.Itoa(v.LastSeq)+"/"+string(v.Status)+"/"+rowsQ
		return []byte(html), keep, nil
	})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(out)
	return nil
}

// keptPanel returns the panel kept under key, or renders it and keeps it
// when render says to. Renders happen one at a time, so the
// watchers that all ask for the same new panel at once wait for one
// render and share it instead of each rendering it.
func (s *server) keptPanel(key string, render func() (b []byte, keep bool, err error)) ([]byte, error) {
	if b, ok := s.panels.get(key); ok {
		return b, nil
	}
	s.panelMu.Lock()
	defer s.panelMu.Unlock()
	if b, ok := s.panels.get(key); ok {
		return b, nil
	}
	b, keep, err := render()
	if err == nil && keep {
		s.panels.put(key, b)
	}
	return b, err
}

// panelCacheSize bounds the rendered run panels kept: a few states of the
// runs being watched now.
const panelCacheSize = 64

// compareRow is one line of the comparison table: the windows of runs A
// and B at the same offered rate (either may be missing).
type compareRow struct {
	Offered float64
	A, B    *loadrun.Row
}

// compareRows pairs the rows of two runs by offered rate, in rate order.
func compareRows(a, b []loadrun.Row) []compareRow {
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
func cellOf(row *loadrun.Row, field string) string {
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

// labReference is the answer of GET /api/labs/{block}/reference.
type labReference struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	Summary   string    `json:"summary"`
	URL       string    `json:"url"`
	Replay    string    `json:"replay"`  // websocket URL that replays it at its real pace
	Seconds   float64   `json:"seconds"` // how long the replay takes
}

// labReferenceRun is GET /api/labs/{block}/reference: the latest run of a
// lesson's lab block that measured every window, for the block to show at
// once (and to replay when the queue is long), or 404.
func (s *server) labReferenceRun(w http.ResponseWriter, r *http.Request) error {
	block := chi.URLParam(r, "block")
	ref, err := s.store.LatestRun(r.Context(), block)
	if errors.Is(err, store.ErrNoRun) {
		return errorf(CodeNotFound, "No run of the lab block "+block+" has been recorded yet.")
	}
	if err != nil {
		return err
	}
	var q runner.Request
	json.Unmarshal(ref.Request, &q)
	secs := 0.0
	for _, row := range ref.Rows {
		secs += row.Seconds
	}
	writeJSON(w, http.StatusOK, labReference{ID: ref.ID, CreatedAt: ref.CreatedAt, Summary: requestSummary(q), URL: runURL(ref.ID),
		Replay: "/ws/runs/" + ref.ID + "?pace=real", Seconds: secs})
	return nil
}
