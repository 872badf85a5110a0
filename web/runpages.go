package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"capacitylab/admit"
	"capacitylab/chart"
	"capacitylab/hedge"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/model"
	"capacitylab/result"
	"capacitylab/retry"
	"capacitylab/runner"
	"capacitylab/store"
)

// presetWords says in a few words what a run measures, for titles and
// lists: the workers (and CPUs and the admission limit or policy when
// they are not the lab's plain ones), the rates or clients, the client's
// workers and the knob changes, e.g. "1 worker, 10–40/s" or "7 workers,
// quota 5, 50/s, a client of 10 workers, WAIT_MS=200 at 10 s": two runs
// of one lesson that differ in any of them are told apart.
func presetWords(q runner.Request) string {
	if q.Upload != nil {
		return uploadPresetWords(q)
	}
	parts := []string{counted(q.Workers, "worker", "workers")}
	if q.CPUs > 1 {
		parts = append(parts, counted(q.CPUs, "CPU", "CPUs"))
	}
	if p := policyWords(q); p != "" {
		parts = append(parts, p)
	}
	if q.Mode == runner.ModeClosed {
		unit := " clients"
		if len(q.Clients) == 1 && q.Clients[0] == 1 {
			unit = " client"
		}
		parts = append(parts, spanText(intsAsFloats(q.Clients), unit))
	} else {
		parts = append(parts, spanText(q.Rates, "/s"))
	}
	if q.MaxInFlight > 0 {
		parts = append(parts, "a client of "+counted(q.MaxInFlight, "worker", "workers"))
	}
	for _, c := range q.At {
		parts = append(parts, changeWords(c))
	}
	return strings.Join(parts, ", ")
}

// policyWords names a run's admission in a few words: "limit 10" for the
// queue's bound, "quota 5" for an in-flight quota, "policy aimd" for the
// adaptive ones; "" for a queue without a limit.
func policyWords(q runner.Request) string {
	switch k := q.Policy.Kind(); k {
	case admit.Queue:
		if q.Limit > 0 {
			return "limit " + itoa(q.Limit)
		}
		return ""
	case admit.InFlight:
		if n, ok := q.Policy.Param("quota"); ok {
			return "quota " + fmtNum(n)
		}
		return "policy " + q.Policy.String()
	default:
		return "policy " + k
	}
}

// changeWords is a knob change as a title says it: "WAIT_MS=200 at 10 s".
func changeWords(c result.KnobChange) string {
	if c.Err() != nil {
		return c.String()
	}
	return c.Knob + "=" + c.Value + " at " + fmtNum(c.At.Seconds()) + " s"
}

// policyGloss says what an admission policy does, in a clause.
func policyGloss(p admit.Spec) string {
	switch p.Kind() {
	case admit.InFlight:
		n, _ := p.Param("quota")
		return "a quota: at most " + fmtNum(n) + " requests inside at once, waiting or in service; the rest are refused at once"
	case admit.AIMD:
		return "AIMD: a limit on requests inside that grows while answers come back in time and is cut on a slow one"
	case admit.Gradient:
		return "a gradient limit: it follows the latency against its own long average"
	case admit.Sojourn:
		return "a bound on each request's time in the queue"
	}
	return "queue (the admission limit bounds the callers waiting)"
}

func intsAsFloats(vs []int) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = float64(v)
	}
	return out
}

// spanText is the lowest and highest of vs as a range ("10–40/s"), or the
// one value.
func spanText(vs []float64, unit string) string {
	if len(vs) == 0 {
		return "no windows"
	}
	lo, hi := slices.Min(vs), slices.Max(vs)
	if lo == hi {
		return fmtNum(lo) + unit
	}
	return fmtNum(lo) + "–" + fmtNum(hi) + unit
}

// runTitle names a run in words: the lesson it came from and its preset.
func runTitle(lessonTitle string, q runner.Request) string {
	if q.Upload != nil {
		return "Your service: " + q.Upload.Dataset.Name + " — " + presetWords(q)
	}
	if lessonTitle == "" {
		lessonTitle = "A sweep"
	}
	return lessonTitle + " — " + presetWords(q)
}

// lessonTitleOf is the title of the lesson with slug, or "" when the
// course has none (an old run of a lesson since renamed).
func (s *server) lessonTitleOf(slug string) string {
	if slug == "" {
		return ""
	}
	c, err := s.course()
	if err != nil {
		return ""
	}
	if i := findLesson(c, slug); i >= 0 {
		return c.Lessons[i].Title
	}
	return ""
}

// setting is one knob of a run as a person reads it: its label, its
// value in words, and the environment name the terminal lab uses.
type setting struct {
	Key, Label, Value, Env string
}

// settingList lists a run's settings in words, the lab's knobs first.
func settingList(q runner.Request) []setting {
	if q.Upload != nil {
		return uploadSettings(q)
	}
	ms := func(v int) string { return itoa(v) + " ms" }
	limit := "none (callers wait as long as it takes)"
	if q.Limit > 0 {
		limit = counted(q.Limit, "caller", "callers") + " may wait; more are refused"
	}
	policy := policyGloss(q.Policy)
	if q.Policy.Kind() != admit.Queue {
		// LIMIT bounds the queue policy only: the policy decides instead.
		limit = "not used: the admission policy decides who is let in"
		policy += " (" + q.Policy.Describe() + ")"
	}
	load := "open loop: " + joinFloats(q.Rates) + " requests a second, one window each"
	if q.Mode == runner.ModeClosed {
		load = "closed loop: " + joinInts(q.Clients) + " clients, one window each"
	}
	seed := u64(q.Seed)
	if q.Mode == runner.ModeClosed {
		seed = "not used (a closed loop has no schedule)"
	}
	timeout := fmtNum(q.Timeout().Seconds()) + " s"
	if q.TimeoutMS <= 0 {
		timeout += " (the default)"
	}
	stall := "none"
	if q.StallEvery > 0 {
		stall = "1 request in " + itoa(q.StallEvery) + " takes " + ms(q.StallMS) + " instead of its work"
	}
	accept := "the lab's door, into a queue it counts (queued)"
	if q.Accept == labsvc.AcceptWorkers {
		accept = "each free worker; the rest wait in the kernel's queue (backlogged)"
	}
	backlog := "the system's maximum"
	if q.Backlog > 0 {
		backlog = counted(q.Backlog, "caller", "callers")
	}
	workers := "no fixed pool"
	if q.MaxInFlight > 0 {
		workers = counted(q.MaxInFlight, "worker", "workers") + "; an arrival that finds every one busy is not sent (client busy)"
	}
	changes := "none"
	if len(q.At) > 0 {
		words := make([]string, len(q.At))
		for i, c := range q.At {
			words[i] = changeWords(c)
		}
		changes = strings.Join(words, "; ") + ", in every window"
	}
	if q.RNG == string(loadrun.Python) && q.Mode != runner.ModeClosed {
		seed += " (CPython's random module)"
	}
	service := "constant: every request its processor time plus its waiting"
	if p, ok := q.Dist.Params(); ok && !q.Dist.Constant() {
		service = p.Words() + ", about the same mean"
	} else if !ok {
		service = q.Dist.String()
	}
	lock := "none"
	if q.LockMS > 0 {
		lock = "held " + ms(q.LockMS) + " by each request, one at a time"
	}
	coherency := "none"
	if q.CoherencyUS > 0 {
		coherency = itoa(q.CoherencyUS) + " µs more processor time per other request in service"
	}
	retrying := "none"
	if sp, err := retry.Parse(q.Retry); err == nil && !sp.IsZero() {
		retrying = sp.Words()
	} else if err != nil {
		retrying = q.Retry
	}
	classes := "none: every request default"
	if q.Critical > 0 || q.Sheddable > 0 {
		classes = fmtNum(q.Critical*100) + "% critical, " + fmtNum(q.Sheddable*100) + "% sheddable, the rest default"
	}
	fanout := "none: each arrival one request"
	if q.Fanout > 1 {
		fanout = itoa(q.Fanout) + " sub-requests an arrival, sent at once, done when the last is answered"
	}
	hedging := "none"
	if sp, err := hedge.Parse(q.Hedge); err == nil && !sp.IsZero() {
		hedging = sp.Words()
	} else if err != nil {
		hedging = q.Hedge
	}
	overTime := "no: one row a window"
	if q.OverTime {
		overTime = "yes: a sample every second of each window, and a row a window"
	}
	return []setting{
		{"workers", "Workers", itoa(q.Workers), "WORKERS"},
		{"spin_ms", "Processor time a request", ms(q.SpinMS), "SPIN_MS"},
		{"wait_ms", "Waiting a request", ms(q.WaitMS), "WAIT_MS"},
		{"limit", "Admission limit", limit, "LIMIT"},
		{"policy", "Admission policy", policy, "POLICY"},
		{"cpus", "Processors", itoa(q.CPUs), "CPUS"},
		{"stall", "Periodic stall", stall, "STALL_EVERY"},
		{"dist", "Service time", service, "DIST"},
		{"lock", "Lab-wide lock", lock, "LOCK_MS"},
		{"coherency", "Coherency cost", coherency, "COHERENCY_US"},
		{"accept", "Who accepts callers", accept, "ACCEPT"},
		{"backlog", "Listen backlog", backlog, "BACKLOG"},
		{"load", "Load", load, ""},
		{"seconds", "Window length", fmtNum(q.Seconds) + " s", ""},
		{"seed", "Seed of the arrivals", seed, ""},
		{"timeout", "Caller's timeout", timeout, ""},
		{"max_inflight", "Client workers", workers, "--max-inflight"},
		{"retry", "Retries", retrying, "--retry"},
		{"classes", "Classes", classes, "--critical"},
		{"fanout", "Fan-out", fanout, "--fanout"},
		{"hedge", "Hedging", hedging, "--hedge"},
		{"at", "Knob changes", changes, "--at"},
		{"over_time", "Over time", overTime, "--over-time"},
	}
}

// settingPair is one setting of the compared runs: its value in each.
type settingPair struct {
	Label, Env string
	Values     []string
	Differs    bool
}

// compareSettings pairs the runs' settings by key, in the order they
// first come, and marks those that differ (in words, so a seed that a
// closed loop does not use never differs). A setting one run has and
// another has not (an upload's file beside a lab run) is "—" there.
func compareSettings(reqs ...runner.Request) []settingPair {
	var out []settingPair
	at := map[string]int{}
	for i, q := range reqs {
		for _, st := range settingList(q) {
			j, ok := at[st.Key]
			if !ok {
				j = len(out)
				at[st.Key] = j
				out = append(out, settingPair{Label: st.Label, Env: st.Env, Values: slices.Repeat([]string{"—"}, len(reqs))})
			}
			out[j].Values[i] = st.Value
		}
	}
	for i := range out {
		out[i].Differs = slices.ContainsFunc(out[i].Values, func(v string) bool { return v != out[i].Values[0] })
	}
	return out
}

// differingLabels names the settings that differ, for a sentence.
func differingLabels(ps []settingPair) string {
	var names []string
	for _, p := range ps {
		if p.Differs {
			names = append(names, strings.ToLower(p.Label))
		}
	}
	runs := "two"
	if len(ps) > 0 && len(ps[0].Values) == 3 {
		runs = "three"
	}
	switch len(names) {
	case 0:
		return "The " + runs + " runs have the same settings: any difference is the machine's noise."
	case 1:
		return "The runs differ in one setting: " + names[0] + "."
	}
	return fmt.Sprintf("The runs differ in %d settings: %s and %s.", len(names), strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
}

// statusText is a run's status in words, for lists and headings.
func statusText(status store.RunStatus, position int) string {
	switch status {
	case store.RunQueued:
		if position > 0 {
			return fmt.Sprintf("Waiting (number %d in the queue)", position)
		}
		return "Waiting"
	case store.RunRunning:
		return "Running"
	case store.RunDone:
		return "Done"
	case store.RunFailed:
		return "Failed"
	case store.RunCancelled:
		return "Cancelled"
	case store.RunInterrupted:
		return "Interrupted"
	}
	return string(status)
}

// distView is the latency distribution section of a run page: the
// windows to choose from and the chosen one's chart.
type distView struct {
	Windows []distChoice
	Chosen  int // loadrun's window index
	Chart   chart.Chart
	Words   string
}

// distChoice is a window link of the distribution section.
type distChoice struct {
	Window int // loadrun's window index
	Label  string
	URL    string
}

// runDistribution reads the raw records of one measured window of v (the
// query's window=N, counted from 1; the last measured window without it)
// and draws their latency distribution. ok is false when no window has
// been measured yet.
func (s *server) runDistribution(ctx context.Context, v runView, windowQ string) (d distView, ok bool, err error) {
	if len(v.Rows) == 0 {
		if windowQ != "" {
			return d, false, &Error{Code: CodeInvalid, Title: "No window to show yet",
				Message: "This run has not measured a window yet, so there is no latency distribution to show. Its first window will appear here when it ends."}
		}
		return d, false, nil
	}
	chosen := len(v.Rows) - 1
	if windowQ != "" {
		n, convErr := strconv.Atoi(windowQ)
		if convErr != nil || n < 1 || n > len(v.Rows) {
			return d, false, &Error{Code: CodeInvalid, Title: "No such window",
				Message: fmt.Sprintf("window=%s is not a measured window of this run: pick one of windows 1 to %d from the run's page.", windowQ, len(v.Rows)),
				Links:   []errorLink{{"Back to the run", runURL(v.ID) + "#distribution"}}}
		}
		chosen = n - 1
	}
	for i, r := range v.Rows {
		d.Windows = append(d.Windows, distChoice{Window: r.Window, Label: windowName(r.Window) + " (" + fmtNum(r.Offered) + "/s)",
			URL: runURL(v.ID) + "?window=" + itoa(i+1) + "#distribution"})
	}
	win := v.Rows[chosen].Window
	dist := distribution{Window: win}
	// A retrying, fanning-out or hedging client's records are its
	// attempts, sub-requests and copies: its window is counted by logical
	// request, as its row is (result.Logical), so its records are
	// gathered first; any other window's are counted as they are read.
	var attempts []result.Record
	logical := v.Request.Retry != "" || v.Request.Fanout > 1 || v.Request.Hedge != ""
	if err := s.store.EachWindowRecord(ctx, v.ID, win, func(r result.Record) error {
		if logical {
			attempts = append(attempts, r)
		} else {
			dist.add(r)
		}
		return nil
	}); err != nil {
		return d, false, err
	}
	for _, r := range result.Logical(attempts) {
		dist.add(r)
	}
	slices.Sort(dist.LatMS)
	d.Chosen, d.Chart, d.Words = win, distributionChart(dist, "dist-"+v.ID), outcomesText(dist)
	if dist.OK+dist.Refused+dist.Gaveup+dist.Error+dist.NotSent == 0 {
		d.Words = "No raw records of this window are stored (runs saved before records were kept have none)."
	}
	return d, true, nil
}

// modelNote says how the model beside a run is drawn.
func modelNote(q runner.Request) string {
	lab := labOf(q)
	c := lab.Ceilings()
	if q.MaxInFlight > 0 {
		return "The dashed lines are the model: the lab as an M/M/c queue with the same servers and service time, behind a client of " +
			counted(q.MaxInFlight, "worker", "workers") + " that sends an arrival only when one is free (M/M/c/K), for throughput, client busy and latency; " +
			"the two ceilings still cap it at " + model.Format(float64(c.Ceiling)) + " a second, and the client's workers at " + model.Format(lab.ClientCeiling()) +
			" a second if nothing waited. Where a solid line leaves its dashed one, the model stops describing this lab."
	}
	return "The dashed lines are the model: throughput from the two ceilings (the lower is " + model.Format(float64(c.Ceiling)) +
		" a second here), latency from an M/M/c queue with the same servers and service time. Where a solid line leaves its dashed one, the model stops describing this lab."
}

// changesCaveat says, under the chart of a run whose windows change knobs
// mid-way (in its panel, on the run's page and in a lesson's lab block
// alike), what the model's dashed lines are for: the knobs each window
// starts with, named, and not the lab after the changes; "" for a run
// without changes.
func changesCaveat(q runner.Request) string {
	if len(q.At) == 0 {
		return ""
	}
	var before, changes []string
	for _, c := range q.At {
		changes = append(changes, changeWords(c))
		if v, ok := knobBefore(q, c.Knob); ok && !slices.Contains(before, c.Knob+"="+v) {
			before = append(before, c.Knob+"="+v)
		}
	}
	s := "The dashed lines are the model for the knobs each window starts with"
	if len(before) > 0 {
		s += " (" + strings.Join(before, ", ") + ")"
	}
	return s + ". This run changes " + joinAnd(changes) + ", which the model does not see: after the change its lines describe the lab the run started with, " +
		"not the one it measured, so they are no prediction for a window that changes. The run over time shows what the change did."
}

// knobBefore is the value a changeable knob (labsvc.ChangeableKnobs) has
// at the start of each window of q, as its environment variable holds it.
func knobBefore(q runner.Request, knob string) (string, bool) {
	switch knob {
	case "WORKERS":
		return itoa(q.Workers), true
	case "SPIN_MS":
		return itoa(q.SpinMS), true
	case "WAIT_MS":
		return itoa(q.WaitMS), true
	case "LIMIT":
		return itoa(q.Limit), true
	case "STALL_EVERY":
		return itoa(q.StallEvery), true
	case "STALL_MS":
		return itoa(q.StallMS), true
	case "POLICY":
		return q.Policy.String(), true
	case "DIST":
		return q.Dist.String(), true
	case "LOCK_MS":
		return itoa(q.LockMS), true
	case "COHERENCY_US":
		return itoa(q.CoherencyUS), true
	case "BACKLOG":
		return itoa(q.Backlog), true
	}
	return "", false
}

// changesNote says, for a run or simulation whose windows change knobs
// mid-way, that the model's lines are for the knobs each window starts
// with ("" when there are no changes): the models see one lab, and such a
// window is two labs one after the other.
func changesNote(q runner.Request) string {
	if len(q.At) == 0 {
		return ""
	}
	return " The model is for the knobs each window starts with: the knob changes (" + joinChanges(q.At) + ") are not in its lines."
}

// orText is s, or alt when s is empty.
func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// runsListLimit caps how many runs /runs lists.
const runsListLimit = 200

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
	var uv *uploadView
	if v.Request.Upload != nil {
		uv = uploadViewOf(v, r.URL.Query().Get("budget_ms"))
	}
	lessonTitle := s.lessonTitleOf(v.Lesson)
	p := s.page(r, runTitle(lessonTitle, v.Request))
	p.Wide = true
	status := http.StatusOK
	if uv != nil && uv.BudgetErr != "" {
		status = http.StatusBadRequest
	}
	s.render(w, r, status, runPageView(p, v, s.assets.URL("js/runs.js"), lessonTitle, dist, hasDist, uv))
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
