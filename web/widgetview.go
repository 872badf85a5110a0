package web

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/url"
	"strings"

	"github.com/a-h/templ"

	"capacitylab/input"
	"capacitylab/lessons"
	"capacitylab/model"
	"capacitylab/store"
)

// defaultCaveats are the generic assumptions and omissions of each kind
// (the package doc of model states them); a lesson block lists its own.
func defaultCaveats(kind string) (assumes, ignores []string) {
	switch kind {
	case model.KindLittlesLaw:
		return []string{"A long-run average over a stable system: what arrives also leaves."},
			[]string{"How the times are spread out: the law says nothing about percentiles.", "What happens inside: waiting and being served are one number."}
	case model.KindAdmissionLimit:
		return []string{"Every service takes exactly the mean time.", "Workers take the queue in order."},
			[]string{"Variation in service time: real p99s are longer.", "Time spent before the queue.", "Retries."}
	case model.KindTwoCeilings:
		return []string{"Each request spins on a processor, then waits, as the lab's requests do.", "Processors are shared perfectly."},
			[]string{"Scheduling and context-switch overhead.", "The load generator's own use of the machine.", "Queueing delay below the ceiling."}
	case model.KindQueueCurve:
		return []string{"Poisson arrivals and exponential service times.", "Identical servers taking one queue, first come first served.", "Nobody gives up."},
			[]string{"Timeouts and retries.", "Admission limits.", "Service times that vary less: the lab's spin is fixed, so the lab queues less than this predicts."}
	case model.KindQuota:
		return []string{"Steady rates: every request takes exactly R before the release and R' after it.", "The origin keeps up before the release, and works every request it queued, even for callers who have gone.", "Callers give up at the timeout and do not retry."},
			[]string{"Random arrivals: with them a full quota turns away more, and the client gets a little under N ÷ R'.", "The client's own workers, which cap what it can send.", "A limit on the origin's queue."}
	case model.KindAIMD:
		return []string{"The capacity is a number of requests in flight, known exactly, and overload shows in the same interval the limit passes it.", "Requests up to the capacity are in time; the rest are late."},
			[]string{"Noise and delay in the overload signals: real limits overshoot further.", "A limit nobody uses (a real one grows only while it is used).", "Signals from requests let in before the last cut."}
	case model.KindRetry:
		return []string{"Each attempt fails independently, with the same chance p.", "A retry is as much work for the service as a first attempt.", "A budget spread evenly: at most b retries for each first attempt."},
			[]string{"That an overloaded service fails more attempts: here p is given, not caused by the load, so the feedback that turns a blip into an outage is left out.", "Backoff, and when the retries are sent.", "A circuit breaker, and the budget's burst of tokens."}
	case model.KindLateScaling:
		return []string{"Steady rates: the demand and each capacity are constant, and the capacity steps up when it lands.", "One queue, first come first served, without a limit.", "The service works every request it queued, even for callers who have gone."},
			[]string{"Randomness: a real queue waits some even below its capacity.", "Callers who give up or retry: their requests stay in the backlog.", "The service time itself, and capacity that ramps up as it lands."}
	case model.KindVariability:
		return []string{"A steady state: the load stays the same long enough for the queue to settle.", "Identical servers taking one queue, first come first served.", "Gaps between arrivals and service times each drawn independently of the others."},
			[]string{"That Kingman's formula is an approximation: exact only for one server with Poisson arrivals (Pollaczek–Khinchine) and for Poisson arrivals with exponential service (M/M/c); elsewhere it can be off by several per cent either way.", "Bursts of arrivals that last longer than a gap.", "The tail: this is the mean wait, and a variable service time stretches the p99 far more than the mean.", "Timeouts, retries and a limit on the queue."}
	case model.KindFanout:
		return []string{"The sub-requests are sent at once and the request needs every answer.", "Each sub-request is slow with the same chance, independently of the others."},
			[]string{"Slowness with a common cause (a busy host, a pause for garbage collection, a hot key) that makes sub-requests slow together.", "Hedged or tied requests, which send a second copy of a slow sub-request.", "Answers that can do without the slowest sub-requests."}
	case model.KindUSL:
		return []string{"Identical clients in a closed loop, each alone doing λ a second.", "Contention σ and coherency κ that stay the same as clients are added."},
			[]string{"What the costs are made of: the law fits a curve to them, it does not explain them.", "Other ceilings (the processors, the network, the load generator) that may bind first.", "Queueing at low load: each client waits for its answer before sending the next."}
	}
	return nil, nil
}

// quantityLabel is how a widget names one of its quantities to a learner.
type quantityLabel struct {
	Label string `json:"label"`
	Unit  string `json:"unit"`
}

// quantityLabels names every quantity a kind reports (model.QuantityNames):
// its parameters from the spec, its outputs from the table below.
func quantityLabels(spec model.Spec) map[string]quantityLabel {
	out := map[string]quantityLabel{
		"limit":                     {"Admission limit (exact)", "requests"},
		"rounded_limit":             {"Admission limit", "requests"},
		"worst_ms":                  {"Time in system of the last one admitted", "ms"},
		"worker_ceiling":            {"Worker ceiling", "per second"},
		"processor_ceiling":         {"Processor ceiling", "per second"},
		"ceiling":                   {"Ceiling", "per second"},
		"speedup_cap":               {"Speedup cap", "times one worker"},
		"capacity":                  {"Capacity", "per second"},
		"utilisation":               {"Utilisation", ""},
		"prob_wait":                 {"Chance of waiting", ""},
		"mean_in_system":            {"Mean requests in system", "requests"},
		"mean_queue":                {"Mean requests waiting", "requests"},
		"mean_wait_ms":              {"Mean wait", "ms"},
		"mean_response_ms":          {"Mean response time", "ms"},
		"p50_response_ms":           {"Median response time", "ms"},
		"p99_response_ms":           {"p99 response time", "ms"},
		"knee_arrivals":             {"Knee", "per second"},
		"capacity_before":           {"Capacity before", "per second"},
		"capacity_after":            {"Capacity after", "per second"},
		"quota_rate":                {"What the quota lets through after", "per second"},
		"with_quota_before":         {"With the quota, before", "per second"},
		"with_quota_after":          {"With the quota, after", "per second"},
		"refused_after":             {"Refused by the quota, after", "per second"},
		"quota_latency_ms":          {"Response time with the quota, after", "ms"},
		"without_quota_after":       {"Served without a quota, after", "per second"},
		"queue_growth":              {"Queue growth without a quota", "per second"},
		"late_after_s":              {"Callers late from", "s after the release"},
		"mean_limit":                {"Mean limit, last half", "requests"},
		"delivered_pct":             {"Share of the new capacity let in", "%"},
		"min_after":                 {"Least limit after the step", "requests"},
		"max_after":                 {"Most limit after the step", "requests"},
		"settle_s":                  {"Time to settle", "s after the step"},
		"attempts":                  {"Attempts a request", "attempts"},
		"attempts_no_budget":        {"Attempts a request without a budget", "attempts"},
		"load_pct":                  {"Load on the service", "% of capacity"},
		"backlog":                   {"Backlog at the landing", "requests"},
		"drain_s":                   {"Time to drain", "s after the landing"},
		"landing_wait_ms":           {"Wait of a request arriving at the landing", "ms"},
		"worst_wait_ms":             {"Longest wait", "ms"},
		"late_s":                    {"Arrivals that wait past the timeout", "s"},
		"arrivals":                  {"Arrival rate", "per second"},
		"mmc_wait_ms":               {"Mean wait of the M/M/c queue", "ms"},
		"constant_wait_ms":          {"Mean wait with constant service times", "ms"},
		"wait_ratio":                {"Wait against constant service", "times"},
		"slow_share":                {"Share of requests slow", "of requests"},
		"median_backend_percentile": {"Backends' percentile of the requests' median", "share"},
		"backend_percentile":        {"Backends' percentile the requests' percentile needs", "share"},
		"half_slow_fanout":          {"Fan-out that makes half the requests slow", "sub-requests"},
		"peak_n":                    {"Peak, N*", "clients"},
		"peak_x":                    {"Throughput at the peak", "per second"},
		"x_at_max":                  {"Throughput at N max", "per second"},
		"speedup_at_max":            {"Speedup at N max", "times one client"},
	}
	for _, p := range spec.Params {
		out[p.Name] = quantityLabel{p.Label, p.Unit}
	}
	mine := map[string]quantityLabel{}
	for _, n := range model.QuantityNames(spec.Kind) {
		mine[n] = out[n]
	}
	return mine
}

// withUnit writes a number and its unit, the unit of a count in the
// singular for exactly one ("1 worker", "2 workers").
func withUnit(v float64, unit string) string {
	if unit == "" {
		return model.Format(v)
	}
	if v == 1 {
		switch unit {
		case "workers", "requests", "cores", "servers", "callers", "attempts", "clients", "sub-requests":
			unit = strings.TrimSuffix(unit, "s")
		case "retries":
			unit = "retry"
		}
	}
	return model.Format(v) + " " + unit
}

// missText says, encouragingly, what one unmet target still needs:
// "Workers: 1 worker; bring it up to 10 workers (within ±0.5).", or of a
// target the learner is to find (Find) only that it is not found yet.
// static/js/widgettext.js writes the same sentence.
func missText(labels map[string]quantityLabel, m model.Miss) string {
	q, ok := labels[m.Param]
	if !ok {
		q = quantityLabel{Label: m.Param}
	}
	if m.Find {
		// A value the learner is to find: neither it nor the way to it.
		if !m.Got.Finite() {
			return q.Label + ": no value at these settings; keep looking for the one the goal describes."
		}
		return q.Label + ": " + withUnit(float64(m.Got), q.Unit) + " is not yet the one the goal asks you to find."
	}
	want := withUnit(float64(m.Want), q.Unit)
	if float64(m.Tol) > 0 {
		want += " (within ±" + model.Format(float64(m.Tol)) + ")"
	}
	if !m.Got.Finite() {
		return q.Label + ": no value at these settings; the goal wants " + want + "."
	}
	dir := "up"
	if float64(m.Got) > float64(m.Want) {
		dir = "down"
	}
	return q.Label + ": " + withUnit(float64(m.Got), q.Unit) + "; bring it " + dir + " to " + want + "."
}

// widgetInput is one parameter's controls as rendered.
type widgetInput struct {
	P      model.Param
	Value  float64 // what the controls show; for the implied one, its computed value (NaN if undefined)
	Slider slider
	Target *model.Target // the goal's target on this parameter, if any
	// RangePos is where the range input sits: Value snapped to the
	// range's step grid and limits, as a browser would snap it, so that
	// "was" holds exactly what an untouched range sends back.
	RangePos float64
	Implied  bool
	Error    string // the problem with the value the learner sent, if any
}

// widgetView is everything one widget renders, on a lesson page or alone.
type widgetView struct {
	ID         string // element id prefix: the block id, or "w-" + kind
	Title      string // the standalone page's heading
	Spec       model.Spec
	Solve      string
	Inputs     []widgetInput
	Result     model.Result
	Labels     map[string]quantityLabel
	Errors     input.FieldErrors
	GoalText   string
	Found      string
	Targets    []model.Target
	Status     model.GoalStatus
	Recorded   *store.Goal // the learner's recorded goal, on a lesson page
	Assumes    []string
	Ignores    []string
	Action     string      // where the GET form goes
	Hidden     [][2]string // extra hidden fields of the form
	ShareURL   string      // the standalone preset of the current values
	RecordURL  string      // where widgets.js POSTs a reached goal ("" = nowhere)
	PlotHTML   string      // the plot (chart.Figure), for the kinds that have one
	PlotURL    string      // where widgets.js fetches a fresh plot
	Standalone bool
	Assets     widgetAssetURLs
}

// buildWidget computes a widget and lays out its controls. values are
// merged over the kind's defaults by model.Compute; bad ones have already
// been removed and are listed in errs. The result and plot come from mc
// when it has them (nil: computed every time).
func buildWidget(mc *modelCache, id string, spec model.Spec, values map[string]float64, solve string, errs input.FieldErrors) (widgetView, error) {
	e, err := mc.entry(spec.Kind, values, solve)
	if err != nil {
		return widgetView{}, err
	}
	res := e.res
	v := widgetView{ID: id, Spec: spec, Solve: res.Solve, Result: res, Labels: quantityLabels(spec), Errors: errs}
	for _, p := range spec.Params {
		in := widgetInput{P: p, Value: res.Values[p.Name], Implied: p.Name == res.Solve && res.Solve != ""}
		if in.Implied {
			in.Value = math.NaN()
			if q, ok := res.Quantities[p.Name]; ok {
				in.Value = q
			}
		}
		in.Error = errs[p.Name]
		v.Inputs = append(v.Inputs, in)
	}
	if _, ok := widgetPlotChart(res, id); ok {
		v.PlotHTML = mc.plotHTML(e, id)
		v.PlotURL = "/widgets/" + spec.Kind + "/plot"
	}
	v.layoutSliders()
	return v, nil
}

// withGoal sets the goal and checks it against the current result; the
// sliders take the goal into account.
func (v *widgetView) withGoal(text, found string, targets []model.Target) {
	v.GoalText, v.Found, v.Targets = text, found, targets
	v.Status = model.GoalReached(v.Result.Quantities, targets)
	v.layoutSliders()
}

// HasGoal reports whether the widget shows a goal.
func (v widgetView) HasGoal() bool { return v.GoalText != "" || len(v.Targets) > 0 }

// Was is the "was" field: the range positions as rendered.
func (v widgetView) Was() string {
	var parts []string
	for _, in := range v.Inputs {
		if !in.Implied {
			parts = append(parts, in.P.Name+":"+fmtNum(in.RangePos))
		}
	}
	return strings.Join(parts, ",")
}

// OtherErrors are the problems with what the form sent that belong to no
// input (solve, goal, an unknown name), shown above the controls.
func (v widgetView) OtherErrors() []string {
	inputs := map[string]bool{}
	for _, in := range v.Inputs {
		inputs[in.P.Name] = true
	}
	var out []string
	for _, name := range v.Errors.Names() {
		if !inputs[name] {
			out = append(out, name+": "+v.Errors[name])
		}
	}
	return out
}

// MissTexts are the encouraging lines for each unmet target.
func (v widgetView) MissTexts() []string {
	out := make([]string, len(v.Status.Misses))
	for i, m := range v.Status.Misses {
		out[i] = missText(v.Labels, m)
	}
	return out
}

// TargetsJSON and LabelsJSON feed widgets.js.
func (v widgetView) TargetsJSON() string { return mustJSON(v.Targets) }

// LabelsJSON is the labels of the quantities the goal names, as JSON:
// what widgets.js needs to say what a target still misses (a parameter's
// unit for its input errors it reads beside the input).
func (v widgetView) LabelsJSON() string {
	out := map[string]quantityLabel{}
	for _, t := range v.Targets {
		out[t.Param] = v.Labels[t.Param]
	}
	return mustJSON(out)
}

func mustJSON(x any) string {
	b, err := json.Marshal(x)
	if err != nil {
		return "null"
	}
	return string(b)
}

// Quantity writes a result quantity for the page, multiplied by scale, or
// none when the result has no finite value for it. static/js/widgets.js
// writes the same text into each <output data-q=NAME data-scale data-none>.
func (v widgetView) Quantity(name string, scale float64, none string) string {
	q, ok := v.Result.Quantities[name]
	if !ok {
		return none
	}
	return model.Format(q * scale)
}

// Binds reports whether the two-ceilings ceiling named which binds.
func (v widgetView) Binds(which string) bool {
	if v.Result.Ceilings == nil {
		return false
	}
	b := v.Result.Ceilings.Binds
	return b == which || b == model.BindsBoth
}

// Stable reports whether a queue-curve widget has a steady state.
func (v widgetView) Stable() bool { return v.Result.Queue == nil || v.Result.Queue.Stable }

// Over reports whether a retry widget's load passes the service's capacity.
func (v widgetView) Over() bool { return v.Result.Retry != nil && v.Result.Retry.Over }

// Pooled reports whether a queue curve has more than one server, so the
// same servers with a queue each differ from the shared queue.
func (v widgetView) Pooled() bool { return v.Result.Queue != nil && v.Result.Queue.Servers > 1 }

// Approximate reports whether a variability-wait widget's wait is
// Kingman's approximation rather than an exact result.
func (v widgetView) Approximate() bool {
	return v.Result.Variability != nil && !v.Result.Variability.Exact
}

// Retrograde reports whether a usl widget's N max is past the peak.
func (v widgetView) Retrograde() bool { return v.Result.USL != nil && v.Result.USL.Retrograde }

// PercentileQuantity writes a quantity that is a share as a percentile's
// name (model.PercentileName: 0.99309 is "p99.31", never "p100" below
// 1), or none when the result has no finite value for it. widgets.js
// writes the same into each <output data-q=NAME data-format="percentile">.
func (v widgetView) PercentileQuantity(name, none string) string {
	q, ok := v.Result.Quantities[name]
	if !ok {
		return none
	}
	_, n := model.PercentileName(q)
	return n
}

// Steps is the working of the admission limit or the quota.
func (v widgetView) Steps() []string {
	switch {
	case v.Result.Admission != nil:
		return v.Result.Admission.Steps
	case v.Result.Quota != nil:
		return v.Result.Quota.Steps
	}
	return nil
}

// presetURL is the standalone page showing this widget with the given
// values, solve choice, goal and caveats: what "share this preset" links.
func presetURL(kind string, values map[string]float64, solve string, goalText, found string, targets []model.Target, assumes, ignores []string) string {
	q := url.Values{}
	for _, p := range model.Specs()[kind].Params {
		if x, ok := values[p.Name]; ok && p.Name != solve {
			q.Set(p.Name, fmtNum(x))
		}
	}
	if solve != "" {
		q.Set("solve", solve)
	}
	if len(targets) > 0 {
		q.Set("goal", goalParam(targets))
	}
	if goalText != "" {
		q.Set("goal_text", goalText)
	}
	if found != "" {
		q.Set("found", found)
	}
	for _, a := range assumes {
		q.Add("assumes", a)
	}
	for _, a := range ignores {
		q.Add("ignores", a)
	}
	return "/widgets/" + kind + "?" + q.Encode()
}

// paramValues are the widget's parameters as computed (the implied one
// included), which is what a recorded goal keeps.
func paramValues(v widgetView) map[string]float64 {
	out := map[string]float64{}
	for _, p := range v.Spec.Params {
		if x, ok := v.Result.Quantities[p.Name]; ok {
			out[p.Name] = x
		}
	}
	return out
}

func lessonTargets(ts []lessons.Target) []model.Target {
	out := make([]model.Target, len(ts))
	for i, t := range ts {
		out[i] = model.Target{Param: t.Param, Value: t.Value, Tol: t.Tol, Find: t.Find}
	}
	return out
}

// lessonWidgetView builds a lesson's model block as a widget: the block's
// values, or those the page's widget form sent for it, its goal and
// caveats, and the learner's recorded goal.
func lessonWidgetView(ctx context.Context, l *lessons.Lesson, m *lessons.Model, st store.LessonState) (widgetView, error) {
	spec := specOf(m)
	values := map[string]float64{}
	for k, x := range m.Values {
		values[k] = x
	}
	solve := m.Solve
	var errs input.FieldErrors
	wc, _ := ctx.Value(widgetCtxKey{}).(*widgetCtx)
	if wc != nil && wc.Block == m.ID {
		for k, x := range wc.Query.Values {
			values[k] = x
		}
		if wc.Query.Solve != "" {
			solve = wc.Query.Solve
		}
		errs = wc.Errors
		if wc.Query.Nudge.Dir != 0 && len(errs) == 0 {
			nudged(spec, values, wc.Query.Nudge, lessonTargets(m.Goal.Want))
		}
	}
	var mc *modelCache
	if wc != nil {
		mc = wc.Models
	}
	v, err := buildWidget(mc, m.ID, spec, values, solve, errs)
	if err != nil {
		return widgetView{}, err
	}
	targets := lessonTargets(m.Goal.Want)
	v.withGoal(m.Goal.Text, m.Goal.Found, targets)
	if g, ok := st.Goals[m.ID]; ok {
		v.Recorded = &g
	}
	v.Assumes, v.Ignores = m.Assumes, m.Ignores
	if len(v.Assumes) == 0 && len(v.Ignores) == 0 {
		v.Assumes, v.Ignores = defaultCaveats(m.Widget)
	}
	v.Action = lessonURL(l.Slug) + "#" + m.ID
	v.Hidden = [][2]string{{"widget", m.ID}}
	v.RecordURL = actionURL(l.Slug, "model", m.ID)
	v.ShareURL = presetURL(m.Widget, paramValues(v), v.Solve, m.Goal.Text, m.Goal.Found, targets, v.Assumes, v.Ignores)
	return v, nil
}

// widgetAssetURLs are the stylesheets and script a widget page loads.
type widgetAssetURLs struct {
	AppCSS, WidgetCSS, WidgetJS string
}

// lessonWidget renders a lesson's model block as its widget, reading the
// page's widget form values from the request context (lessonWidgets).
func lessonWidget(l *lessons.Lesson, m *lessons.Model, st store.LessonState) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		v, err := lessonWidgetView(ctx, l, m, st)
		if err != nil {
			return err
		}
		return widget(v).Render(ctx, w)
	})
}

// numberStep is a number input's step: 1 for whole parameters, "any"
// otherwise, so a value off the range input's grid can still be sent.
func numberStep(p model.Param) string {
	if p.Whole {
		return "1"
	}
	return "any"
}

// inputValue is an input's value attribute ("" for an undefined value).
func inputValue(in widgetInput) string {
	if math.IsNaN(in.Value) || math.IsInf(in.Value, 0) {
		return ""
	}
	return fmtNum(in.Value)
}

// impliedValue is the hidden field that carries the implied quantity's
// computed value, so that choosing another quantity to work out without
// JavaScript starts from it.
func impliedValue(in widgetInput) string {
	if !in.Implied {
		return ""
	}
	return inputValue(in)
}
