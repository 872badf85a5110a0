package web

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"sort"
	"strings"

	"capacitylab/input"
	"capacitylab/model"
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
func parseWidgetQuery(kind string, q url.Values, preset bool) (widgetQuery, input.FieldErrors) {
	wq := widgetQuery{Values: map[string]float64{}}
	errs := input.FieldErrors{}
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
			errs[k] = fmt.Sprintf("%q is not a number: %s", raw, allowedText(kind, k))
			continue
		}
		wq.Values[k] = v
	}
	if err := model.Validate(kind, wq.Values); err != nil {
		var pe input.FieldErrors
		if errors.As(err, &pe) {
			maps.Copy(errs, pe)
		}
		for name := range pe {
			delete(wq.Values, name)
		}
	}
	if s := q.Get("solve"); s != "" {
		if _, err := model.ResolveSolve(kind, s); err != nil {
			var pe input.FieldErrors
			errors.As(err, &pe)
			maps.Copy(errs, pe)
		} else {
			wq.Solve = s
		}
	}
	if n := q.Get("nudge"); n != "" {
		name, dir, _ := strings.Cut(n, ":")
		switch {
		case allowedText(kind, name) == "not a parameter of "+kind:
			errs["nudge"] = fmt.Sprintf("%q is not a parameter of %s", name, kind)
		case dir == "+":
			wq.Nudge = nudge{name, 1}
		case dir == "-":
			wq.Nudge = nudge{name, -1}
		default:
			errs["nudge"] = fmt.Sprintf("%q is not allowed: want param:- or param:+", n)
		}
	}
	if g := q.Get("goal"); g != "" {
		t, err := parseGoal(kind, g)
		if err != nil {
			errs["goal"] = err.Error()
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
				errs[f.key] = fmt.Sprintf("is %d characters long: want at most %d", len([]rune(v)), maxWidgetText)
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
				errs[f.key] = fmt.Sprintf("has %d items: want at most %d", len(items), maxCaveats)
			case longest(items) > maxWidgetText:
				errs[f.key] = fmt.Sprintf("has an item %d characters long: want at most %d", longest(items), maxWidgetText)
			default:
				*f.dst = items
			}
		}
	} else {
		for _, k := range []string{"goal_text", "found", "title", "assumes", "ignores"} {
			if q.Has(k) {
				errs[k] = "is only read by the standalone page /widgets/" + kind + ": leave it out here"
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
// may be left out and is then 0), e.g. "arrivals:48:0.5,latency_ms:100:2";
// ":find" after the tolerance marks a value the learner is to find
// (model.Target.Find), e.g. "release_ms:250:2:find". A param is any
// quantity the kind reports (model.QuantityNames).
func parseGoal(kind, s string) ([]model.Target, error) {
	names := model.QuantityNames(kind)
	parts := strings.Split(s, ",")
	if len(parts) > maxGoalTargets {
		return nil, fmt.Errorf("has %d targets: want at most %d", len(parts), maxGoalTargets)
	}
	var out []model.Target
	for _, part := range parts {
		f := strings.Split(strings.TrimSpace(part), ":")
		find := len(f) == 4 && f[3] == "find"
		if find {
			f = f[:3]
		}
		if len(f) < 2 || len(f) > 3 {
			return nil, fmt.Errorf("%q is not a target: want param:value or param:value:tol, e.g. arrivals:48:0.5 (param:value:tol:find for a value the learner is to find)", part)
		}
		known := false
		for _, n := range names {
			known = known || n == f[0]
		}
		if !known {
			return nil, fmt.Errorf("%q is not a quantity of %s: want one of %s", f[0], kind, strings.Join(names, ", "))
		}
		t := model.Target{Param: f[0], Find: find}
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
		if t.Tol != 0 || t.Find {
			parts[i] += ":" + fmtNum(t.Tol)
		}
		if t.Find {
			parts[i] += ":find"
		}
	}
	return strings.Join(parts, ",")
}

// nudge is a − or + button of the widget's GET form: nudge=param:- or
// nudge=param:+.
type nudge struct {
	Param string
	Dir   int // −1 or +1; 0 = none
}
