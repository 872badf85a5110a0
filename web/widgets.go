package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"capacitylab/chart"
	"capacitylab/lessons"
	"capacitylab/model"
	"capacitylab/store"
)

// Limits on what a widget query may carry, so a preset link stays a link.
const (
	maxGoalTargets = 8   // targets in one goal= parameter
	maxCaveats     = 8   // assumes= or ignores= items
	maxWidgetText  = 400 // characters in goal_text, found, title or one caveat
)

// widgetReserved reports whether a query key is one a widget reads besides
// its parameters (see the package doc).
func widgetReserved(k string) bool {
	switch k {
	case "solve", "goal", "goal_text", "found", "title", "assumes", "ignores", "was", "widget", "id", "nudge":
		return true
	}
	return false
}

// widgetQuery is a widget's state as a query string or form carries it.
type widgetQuery struct {
	Values   map[string]float64 // only the parameters present
	Solve    string             // as given ("" = the block's or the kind's default)
	Goal     []model.Target
	GoalText string
	Found    string
	Title    string
	Assumes  []string
	Ignores  []string
	Nudge    nudge // a − or + button pressed without JavaScript
}

// parseWidgetQuery reads a widget's values from q. Every parameter value
// must be a finite number within its range (model.Validate); solve must be
// one the kind can imply. With preset set, the goal and the texts of a
// standalone preset (goal, goal_text, found, title, assumes, ignores) are
// read too; otherwise only goal is. Keys that are neither parameters nor
// reserved are errors naming the key. It returns every problem, one per
// parameter.
//
// A control appears twice in a widget's GET form, as a number input and
// then a range input with the same name, and the hidden field "was" holds
// the range positions the page was rendered with ("arrivals:48,latency_ms:230").
// When a name has two values, the range's wins if it moved from "was";
// otherwise the number input's does.
func parseWidgetQuery(kind string, q url.Values, preset bool) (widgetQuery, model.ParamErrors) {
	wq := widgetQuery{Values: map[string]float64{}}
	var errs model.ParamErrors
	was := parseWas(q.Get("was"))
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if widgetReserved(k) {
			continue
		}
		vals := q[k]
		raw := strings.TrimSpace(vals[0])
		if len(vals) >= 2 {
			if r := strings.TrimSpace(vals[1]); r != "" {
				if rv, err := plainNumber(r); err == nil {
					if w, ok := was[k]; !ok || math.Abs(rv-w) > 1e-9*math.Max(1, math.Abs(w)) {
						raw = r
					}
				}
			}
		}
		if raw == "" {
			continue // an empty field (an undefined implied value) means "not given"
		}
		v, err := plainNumber(raw)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			errs = append(errs, model.ParamError{Param: k, Message: fmt.Sprintf("%q is not a number: %s", raw, allowedText(kind, k))})
			continue
		}
		wq.Values[k] = v
	}
	if err := model.Validate(kind, wq.Values); err != nil {
		var pe model.ParamErrors
		if errors.As(err, &pe) {
			errs = append(errs, pe...)
		}
		for _, e := range pe {
			delete(wq.Values, e.Param)
		}
	}
	if s := q.Get("solve"); s != "" {
		if _, err := model.ResolveSolve(kind, s); err != nil {
			var pe model.ParamErrors
			errors.As(err, &pe)
			errs = append(errs, pe...)
		} else {
			wq.Solve = s
		}
	}
	if n := q.Get("nudge"); n != "" {
		name, dir, _ := strings.Cut(n, ":")
		switch {
		case allowedText(kind, name) == "not a parameter of "+kind:
			errs = append(errs, model.ParamError{Param: "nudge", Message: fmt.Sprintf("%q is not a parameter of %s", name, kind)})
		case dir == "+":
			wq.Nudge = nudge{name, 1}
		case dir == "-":
			wq.Nudge = nudge{name, -1}
		default:
			errs = append(errs, model.ParamError{Param: "nudge", Message: fmt.Sprintf("%q is not allowed: want param:- or param:+", n)})
		}
	}
	if g := q.Get("goal"); g != "" {
		t, err := parseGoal(kind, g)
		if err != nil {
			errs = append(errs, model.ParamError{Param: "goal", Message: err.Error()})
		}
		wq.Goal = t
	}
	if preset {
		for _, f := range []struct {
			key string
			dst *string
		}{{"goal_text", &wq.GoalText}, {"found", &wq.Found}, {"title", &wq.Title}} {
			v := strings.TrimSpace(q.Get(f.key))
			if len([]rune(v)) > maxWidgetText {
				errs = append(errs, model.ParamError{Param: f.key, Message: fmt.Sprintf("is %d characters long: want at most %d", len([]rune(v)), maxWidgetText)})
				continue
			}
			*f.dst = v
		}
		for _, f := range []struct {
			key string
			dst *[]string
		}{{"assumes", &wq.Assumes}, {"ignores", &wq.Ignores}} {
			var items []string
			for _, v := range q[f.key] {
				if v = strings.TrimSpace(v); v != "" {
					items = append(items, v)
				}
			}
			switch {
			case len(items) > maxCaveats:
				errs = append(errs, model.ParamError{Param: f.key, Message: fmt.Sprintf("has %d items: want at most %d", len(items), maxCaveats)})
			case longest(items) > maxWidgetText:
				errs = append(errs, model.ParamError{Param: f.key, Message: fmt.Sprintf("has an item %d characters long: want at most %d", longest(items), maxWidgetText)})
			default:
				*f.dst = items
			}
		}
	} else {
		for _, k := range []string{"goal_text", "found", "title", "assumes", "ignores"} {
			if q.Has(k) {
				errs = append(errs, model.ParamError{Param: k, Message: "is only read by the standalone page /widgets/" + kind + ": leave it out here"})
			}
		}
	}
	return wq, errs
}

func longest(items []string) int {
	n := 0
	for _, s := range items {
		n = max(n, len([]rune(s)))
	}
	return n
}

// allowedText says what a parameter allows, for error messages.
func allowedText(kind, name string) string {
	for _, p := range model.Specs()[kind].Params {
		if p.Name == name {
			return fmt.Sprintf("want a number from %g to %g %s", p.Min, p.Max, p.Unit)
		}
	}
	return "not a parameter of " + kind
}

// parseWas reads the "was" field: name:value pairs joined by commas.
func parseWas(s string) map[string]float64 {
	out := map[string]float64{}
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(part, ":")
		if !ok {
			continue
		}
		if v, err := plainNumber(val); err == nil {
			out[name] = v
		}
	}
	return out
}

// parseGoal reads a goal: targets "param:value:tol" joined by commas (tol
// may be left out and is then 0), e.g. "arrivals:48:0.5,latency_ms:100:2".
// A param is any quantity the kind reports (model.QuantityNames).
func parseGoal(kind, s string) ([]model.Target, error) {
	names := model.QuantityNames(kind)
	parts := strings.Split(s, ",")
	if len(parts) > maxGoalTargets {
		return nil, fmt.Errorf("has %d targets: want at most %d", len(parts), maxGoalTargets)
	}
	var out []model.Target
	for _, part := range parts {
		f := strings.Split(strings.TrimSpace(part), ":")
		if len(f) < 2 || len(f) > 3 {
			return nil, fmt.Errorf("%q is not a target: want param:value or param:value:tol, e.g. arrivals:48:0.5", part)
		}
		known := false
		for _, n := range names {
			known = known || n == f[0]
		}
		if !known {
			return nil, fmt.Errorf("%q is not a quantity of %s: want one of %s", f[0], kind, strings.Join(names, ", "))
		}
		t := model.Target{Param: f[0]}
		v, err := plainNumber(f[1])
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("the value %q of %s is not a number", f[1], f[0])
		}
		t.Value = v
		if len(f) == 3 {
			tol, err := plainNumber(f[2])
			if err != nil || !(tol >= 0) || math.IsInf(tol, 0) {
				return nil, fmt.Errorf("the tolerance %q of %s is not a number of 0 or more", f[2], f[0])
			}
			t.Tol = tol
		}
		out = append(out, t)
	}
	return out, nil
}

// goalParam writes targets in the goal= encoding parseGoal reads.
func goalParam(ts []model.Target) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.Param + ":" + fmtNum(t.Value)
		if t.Tol != 0 {
			parts[i] += ":" + fmtNum(t.Tol)
		}
	}
	return strings.Join(parts, ",")
}

// paramErrorsError turns parameter problems into the one error type, with
// every problem in Params and in the message.
func paramErrorsError(errs model.ParamErrors) *Error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Param + ": " + e.Message
	}
	return &Error{Code: CodeInvalid, Message: "Some values are not allowed. " + strings.Join(msgs, ". ") + ".", Params: errs}
}

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
		"limit":             {"Admission limit (exact)", "requests"},
		"rounded_limit":     {"Admission limit", "requests"},
		"worst_ms":          {"Time in system of the last one admitted", "ms"},
		"worker_ceiling":    {"Worker ceiling", "per second"},
		"processor_ceiling": {"Processor ceiling", "per second"},
		"ceiling":           {"Ceiling", "per second"},
		"speedup_cap":       {"Speedup cap", "times one worker"},
		"capacity":          {"Capacity", "per second"},
		"utilisation":       {"Utilisation", ""},
		"prob_wait":         {"Chance of waiting", ""},
		"mean_in_system":    {"Mean requests in system", "requests"},
		"mean_queue":        {"Mean requests waiting", "requests"},
		"mean_wait_ms":      {"Mean wait", "ms"},
		"mean_response_ms":  {"Mean response time", "ms"},
		"p50_response_ms":   {"Median response time", "ms"},
		"p99_response_ms":   {"p99 response time", "ms"},
		"knee_arrivals":     {"Knee", "per second"},
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
		case "workers", "requests", "cores", "servers", "callers":
			unit = strings.TrimSuffix(unit, "s")
		}
	}
	return model.Format(v) + " " + unit
}

// missText says, encouragingly, what one unmet target still needs:
// "Workers: 1 worker; bring it up to 10 workers (within ±0.5)."
// static/js/widgettext.js writes the same sentence.
func missText(labels map[string]quantityLabel, m model.Miss) string {
	q, ok := labels[m.Param]
	if !ok {
		q = quantityLabel{Label: m.Param}
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
	Errors     model.ParamErrors
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

// sliderPixels is the narrowest a widget's range input is laid out, in
// CSS pixels (a row of its own at 320 px). A goal's slider spans at most
// 2 × tol × sliderPixels, so no pixel steps over the goal's window.
const sliderPixels = 250

// slider is a range input's limits and step.
type slider struct {
	Min, Max, Step float64
}

// sliderMax is the top of a parameter's range input with no goal: a
// round number at least twice the larger of its value and its default
// (and at least ten steps), capped at the parameter's maximum. The number
// input beside it takes the parameter's whole range.
func sliderMax(p model.Param, v float64) float64 {
	base := math.Max(math.Max(v, p.Default), p.Step*10)
	return math.Min(p.Max, math.Max(p.Min+p.Step, chart.NiceCeil(2*base)))
}

// sliderFor lays out a parameter's range input for value v and the goal's
// target on it (nil: none). Without a target it is min to sliderMax by the
// parameter's step. With one, the step is goalStep; the top covers the
// goal too; and when that range is wider than 2 × tol × sliderPixels it
// narrows to a window of that width around the goal, so a drag can land
// in the goal's tolerance (the number input still takes any value).
// static/js/widgettext.js has the same rule (web/testdata/widget-vectors.json).
func sliderFor(p model.Param, v float64, t *model.Target) slider {
	if t == nil {
		return slider{Min: p.Min, Max: sliderMax(p, v), Step: p.Step}
	}
	step := goalStep(p, *t)
	base := math.Max(math.Max(v, p.Default), math.Max(step*10, t.Value+t.Tol))
	s := slider{Min: p.Min, Max: math.Min(p.Max, math.Max(p.Min+step, chart.NiceCeil(2*base))), Step: step}
	span := math.Floor(2*t.Tol*sliderPixels/step) * step
	if s.Max-s.Min > span {
		lo := math.Max(p.Min, p.Min+math.Floor((t.Value-span/2-p.Min)/step)*step)
		hi := math.Min(p.Max, lo+span)
		if hi-lo < span {
			lo = math.Max(p.Min, p.Min+math.Ceil((hi-span-p.Min)/step)*step)
		}
		s.Min, s.Max = lo, hi
	}
	s.Min, s.Max, s.Step = round12(s.Min), round12(s.Max), round12(s.Step)
	return s
}

// goalStep is the step of a slider with a goal on it, as coarse as the
// tolerance allows, so the arrow keys and − and + get there in few
// presses: the largest 1, 2 or 5 × 10^k at or below tol when it is no
// finer than the parameter's own step and its grid (min + k × step) has
// the goal on it; else the parameter's step when its grid comes within
// tol of the goal; else that 1, 2 or 5 × 10^k, whose grid always comes
// within half a step.
func goalStep(p model.Param, t model.Target) float64 {
	on := func(step, within float64) bool {
		near := p.Min + math.Round((t.Value-p.Min)/step)*step
		return math.Abs(near-t.Value) <= within+1e-9*math.Max(1, math.Abs(t.Value))
	}
	nice := niceFloor(t.Tol)
	switch {
	case nice >= p.Step && on(nice, 0):
		return nice
	case on(p.Step, t.Tol):
		return p.Step
	}
	return nice
}

// niceFloor returns the largest 1, 2 or 5 × 10^k at or below v (v > 0).
func niceFloor(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{5, 2, 1} {
		if m*p <= v*(1+1e-12) {
			return m * p
		}
	}
	return p
}

// round12 rounds to 12 significant digits, dropping floating-point noise
// (0.1 + 19 × 0.1).
func round12(x float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 12, 64), 64)
	if err != nil {
		return x
	}
	return r
}

// rangePos snaps v to a range input's grid min + k × step (the nearer
// step, a half going up) within [min, max], rounded to 12 significant
// digits, as a browser snaps it.
func rangePos(s slider, v float64) float64 {
	x := s.Min + math.Floor((v-s.Min)/s.Step+0.5)*s.Step
	return round12(math.Min(s.Max, math.Max(s.Min, x)))
}

// targetOn returns the target on parameter name, or nil.
func targetOn(ts []model.Target, name string) *model.Target {
	for i := range ts {
		if ts[i].Param == name {
			return &ts[i]
		}
	}
	return nil
}

// buildWidget computes a widget and lays out its controls. values are
// merged over the kind's defaults by model.Compute; bad ones have already
// been removed and are listed in errs. The result and plot come from mc
// when it has them (nil: computed every time).
func buildWidget(mc *modelCache, id string, spec model.Spec, values map[string]float64, solve string, errs model.ParamErrors) (widgetView, error) {
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
		for _, e := range errs {
			if e.Param == p.Name {
				in.Error = e.Message
			}
		}
		v.Inputs = append(v.Inputs, in)
	}
	if _, ok := widgetPlotChart(res, id); ok {
		v.PlotHTML = mc.plotHTML(e, id)
		v.PlotURL = "/widgets/" + spec.Kind + "/plot"
	}
	v.layoutSliders()
	return v, nil
}

// layoutSliders sets each input's range (sliderFor, with the goal's
// target on it) and where its thumb sits.
func (v *widgetView) layoutSliders() {
	for i := range v.Inputs {
		in := &v.Inputs[i]
		x := in.Value
		if math.IsNaN(x) {
			x = in.P.Default
		}
		in.Target = targetOn(v.Targets, in.P.Name)
		in.Slider = sliderFor(in.P, x, in.Target)
		in.RangePos = rangePos(in.Slider, x)
	}
}

// withGoal sets the goal and checks it against the current result; the
// sliders take the goal into account.
func (v *widgetView) withGoal(text, found string, targets []model.Target) {
	v.GoalText, v.Found, v.Targets = text, found, targets
	v.Status = model.GoalReached(v.Result.Quantities, targets)
	v.layoutSliders()
}

// nudged applies a nudge (a − or + button: one slider step down or up) to
// values, within the parameter's range.
func nudged(spec model.Spec, values map[string]float64, n nudge, targets []model.Target) {
	for _, p := range spec.Params {
		if p.Name != n.Param {
			continue
		}
		x, ok := values[p.Name]
		if !ok {
			x = p.Default
		}
		step := sliderFor(p, x, targetOn(targets, p.Name)).Step
		values[p.Name] = round12(math.Min(p.Max, math.Max(p.Min, x+float64(n.Dir)*step)))
	}
}

// nudge is a − or + button of the widget's GET form: nudge=param:- or
// nudge=param:+.
type nudge struct {
	Param string
	Dir   int // −1 or +1; 0 = none
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
	for _, e := range v.Errors {
		if !inputs[e.Param] {
			out = append(out, e.Param+": "+e.Message)
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

// Steps is the admission limit's working.
func (v widgetView) Steps() []string {
	if v.Result.Admission == nil {
		return nil
	}
	return v.Result.Admission.Steps
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

// widgetCtxKey keys the widget state of a lesson page request.
type widgetCtxKey struct{}

// widgetCtx is what a lesson page's model blocks need from the request:
// the values the no-JavaScript form sent for one block, if any.
type widgetCtx struct {
	Models *modelCache // the server's memo of widget results
	Block  string      // "" when the form sent nothing
	Query  widgetQuery
	Errors model.ParamErrors
}

// lessonWidgets reads a lesson page's widget form (GET ?widget=ID&…, see
// the package doc) into the request context for the model blocks to
// render. When the values reach the block's goal and the request comes
// from this site's own page (Sec-Fetch-Site same-origin, or absent in
// clients that do not send it), the goal is recorded in the learner's
// progress, as the JavaScript path does with POST; a new learner gets a
// cookie, and the returned request carries it so the page shows it.
func (s *server) lessonWidgets(w http.ResponseWriter, r *http.Request, l *lessons.Lesson) (*http.Request, error) {
	wc := &widgetCtx{Models: &s.models}
	r = r.WithContext(context.WithValue(r.Context(), widgetCtxKey{}, wc))
	q := r.URL.Query()
	id := q.Get("widget")
	if id == "" {
		return r, nil
	}
	b, ok := l.Block(id)
	m, isModel := b.(*lessons.Model)
	if !ok || !isModel {
		return r, nil // a stale link to a block that is gone: show the lesson as it is
	}
	wq, errs := parseWidgetQuery(m.Widget, q, false)
	wc.Block, wc.Query, wc.Errors = id, wq, errs
	if len(errs) > 0 || len(m.Goal.Want) == 0 {
		return r, nil
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return r, nil
	}
	v, err := lessonWidgetView(r.Context(), l, m, store.LessonState{})
	if err != nil {
		return nil, err
	}
	if !v.Status.Reached {
		return r, nil
	}
	fresh := learnerID(r) == ""
	learner := ensureLearner(w, r)
	if _, err := s.store.RecordGoal(r.Context(), learner, l.Slug, m.ID, paramValues(v)); err != nil {
		return nil, err
	}
	s.progressChanged(r, learner, l.Slug)
	if fresh {
		r = r.Clone(r.Context())
		r.AddCookie(&http.Cookie{Name: LearnerCookie, Value: learner})
	}
	return r, nil
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
		out[i] = model.Target{Param: t.Param, Value: t.Value, Tol: t.Tol}
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
	var errs model.ParamErrors
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

// widgetKind returns the spec of the URL's {kind} or a not-found error.
func widgetKind(r *http.Request) (model.Spec, error) {
	kind := chi.URLParam(r, "kind")
	spec, ok := model.Specs()[kind]
	if !ok {
		return model.Spec{}, errorf(CodeNotFound, fmt.Sprintf("There is no widget called %q: want one of %s.", kind, strings.Join(model.Kinds(), ", ")))
	}
	return spec, nil
}

// widgetPage serves GET /widgets/{kind}: one widget on a page of its own,
// with no site chrome, for an iframe or a shared preset link.
func (s *server) widgetPage(w http.ResponseWriter, r *http.Request) error {
	spec, err := widgetKind(r)
	if err != nil {
		return err
	}
	// A bad value is shown inside the widget, beside its field, with the
	// rest computed from what was good: a page that frames the widget
	// keeps a widget, not an error page of this site.
	wq, errs := parseWidgetQuery(spec.Kind, r.URL.Query(), true)
	values := wq.Values
	if wq.Nudge.Dir != 0 && len(errs) == 0 {
		nudged(spec, values, wq.Nudge, wq.Goal)
	}
	v, err := buildWidget(&s.models, "w-"+spec.Kind, spec, values, wq.Solve, errs)
	if err != nil {
		return err
	}
	v.withGoal(wq.GoalText, wq.Found, wq.Goal)
	v.Assumes, v.Ignores = wq.Assumes, wq.Ignores
	if len(v.Assumes) == 0 && len(v.Ignores) == 0 {
		v.Assumes, v.Ignores = defaultCaveats(spec.Kind)
	}
	v.Standalone = true
	v.Assets = s.widgetAssets()
	v.Action = "/widgets/" + spec.Kind
	for _, kv := range [][2]string{{"goal_text", wq.GoalText}, {"found", wq.Found}, {"title", wq.Title}} {
		if kv[1] != "" {
			v.Hidden = append(v.Hidden, kv)
		}
	}
	if len(wq.Goal) > 0 {
		v.Hidden = append(v.Hidden, [2]string{"goal", goalParam(wq.Goal)})
	}
	for _, a := range wq.Assumes {
		v.Hidden = append(v.Hidden, [2]string{"assumes", a})
	}
	for _, a := range wq.Ignores {
		v.Hidden = append(v.Hidden, [2]string{"ignores", a})
	}
	v.ShareURL = presetURL(spec.Kind, paramValues(v), v.Solve, wq.GoalText, wq.Found, wq.Goal, wq.Assumes, wq.Ignores)
	title := wq.Title
	if title == "" {
		title = spec.Title
	}
	v.Title = title
	status := http.StatusOK
	if len(errs) > 0 {
		status = http.StatusBadRequest
	}
	s.render(w, r, status, widgetStandalone(s.widgetAssets(), title, v))
	return nil
}

// widgetAssetURLs are the stylesheets and script a widget page loads.
type widgetAssetURLs struct {
	AppCSS, WidgetCSS, WidgetJS string
}

func (s *server) widgetAssets() widgetAssetURLs {
	return widgetAssetURLs{AppCSS: s.assets.URL("css/app.css"), WidgetCSS: s.assets.URL("css/widgets.css"), WidgetJS: s.assets.URL("js/widgets.js")}
}

// widgetPlot serves GET /widgets/{kind}/plot, the kind's plot for the
// query's values as the HTML the widget shows (widgets.js swaps it in as
// the controls move), and GET /widgets/{kind}/plot.svg, the same plot as
// an SVG image of its own. id= is the widget's element id, which prefixes
// the plot's own ids (letters, digits and hyphens).
func (s *server) widgetPlot(w http.ResponseWriter, r *http.Request) error {
	spec, err := widgetKind(r)
	if err != nil {
		return err
	}
	if spec.Kind != model.KindQueueCurve && spec.Kind != model.KindTwoCeilings {
		return errorf(CodeNotFound, spec.Title+" has no plot: plots are drawn for "+model.KindQueueCurve+" and "+model.KindTwoCeilings+".")
	}
	q := r.URL.Query()
	wq, errs := parseWidgetQuery(spec.Kind, q, false)
	id := q.Get("id")
	if id == "" {
		id = "w-" + spec.Kind
	}
	if !validElementID(id) {
		errs = append(errs, model.ParamError{Param: "id", Message: "want 1 to 64 letters, digits and hyphens"})
	}
	if len(errs) > 0 {
		return paramErrorsError(errs)
	}
	v, err := buildWidget(&s.models, id, spec, wq.Values, "", nil)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	if strings.HasSuffix(r.URL.Path, ".svg") {
		c, _ := widgetPlotChart(v.Result, id)
		w.Header().Set("Content-Type", "image/svg+xml")
		return chart.SVG(c).Render(r.Context(), w)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, err = w.Write([]byte(v.PlotHTML))
	return err
}

func validElementID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// apiModelResponse is GET /api/models/{kind}: Compute's Result, and the
// goal's status when the query has goal=.
type apiModelResponse struct {
	model.Result
	Goal *model.GoalStatus `json:"goal,omitempty"`
}

// apiModel serves GET /api/models/{kind}?param=value&…[&solve=][&goal=].
func (s *server) apiModel(w http.ResponseWriter, r *http.Request) error {
	spec, err := widgetKind(r)
	if err != nil {
		return err
	}
	wq, errs := parseWidgetQuery(spec.Kind, r.URL.Query(), false)
	if len(errs) > 0 {
		return paramErrorsError(errs)
	}
	res, err := s.models.compute(spec.Kind, wq.Values, wq.Solve)
	if err != nil {
		return err
	}
	out := apiModelResponse{Result: res}
	if len(wq.Goal) > 0 {
		st := model.GoalReached(res.Quantities, wq.Goal)
		out.Goal = &st
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// apiModels serves GET /api/models: every widget kind's spec.
func (s *server) apiModels(w http.ResponseWriter, r *http.Request) error {
	specs := model.Specs()
	out := struct {
		Models []model.Spec `json:"models"`
	}{}
	for _, k := range model.Kinds() {
		out.Models = append(out.Models, specs[k])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// goalResponse is the JSON answer to POST /lessons/{slug}/model/{id}.
type goalResponse struct {
	Block   string     `json:"block"`
	Reached bool       `json:"reached"`
	Goal    store.Goal `json:"goal"`
}

// modelGoal handles POST /lessons/{slug}/model/{id}: widgets.js sends the
// widget's values (and solve) when they reach the block's goal. The server
// computes the model again and records the goal only if it holds; a form
// post is redirected back to the block.
func (s *server) modelGoal(w http.ResponseWriter, r *http.Request) error {
	c, err := s.loadCourse()
	if err != nil {
		return err
	}
	slug, id := chi.URLParam(r, "slug"), chi.URLParam(r, "id")
	i := findLesson(c, slug)
	if i < 0 {
		return errorf(CodeNotFound, fmt.Sprintf("There is no lesson called %q.", slug))
	}
	l := c.Lessons[i]
	b, _ := l.Block(id)
	m, ok := b.(*lessons.Model)
	if !ok {
		return errorf(CodeNotFound, fmt.Sprintf("Lesson %q has no model block called %q.", slug, id))
	}
	if len(m.Goal.Want) == 0 {
		return errorf(CodeConflict, fmt.Sprintf("Model block %q has no goal to reach.", id))
	}
	if err := parseForm(r); err != nil {
		return err
	}
	wq, errs := parseWidgetQuery(m.Widget, r.PostForm, false)
	if len(errs) > 0 {
		return paramErrorsError(errs)
	}
	solve := m.Solve
	if wq.Solve != "" {
		solve = wq.Solve
	}
	values := map[string]float64{}
	for k, x := range m.Values {
		values[k] = x
	}
	for k, x := range wq.Values {
		values[k] = x
	}
	v, err := buildWidget(&s.models, m.ID, specOf(m), values, solve, nil)
	if err != nil {
		return err
	}
	v.withGoal(m.Goal.Text, m.Goal.Found, lessonTargets(m.Goal.Want))
	if !v.Status.Reached {
		return errorf(CodeConflict, "The goal is not reached at these values yet. "+strings.Join(v.MissTexts(), " "))
	}
	learner := ensureLearner(w, r)
	g, err := s.store.RecordGoal(r.Context(), learner, l.Slug, m.ID, paramValues(v))
	if err != nil {
		return err
	}
	s.progressChanged(r, learner, l.Slug)
	if !wantsJSON(r) {
		http.Redirect(w, r, lessonURL(l.Slug)+"#"+m.ID, http.StatusSeeOther)
		return nil
	}
	writeJSON(w, http.StatusOK, goalResponse{Block: m.ID, Reached: true, Goal: g})
	return nil
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
