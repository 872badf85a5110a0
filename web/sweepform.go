package web

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"capacitylab/input"
	"capacitylab/labsvc"
	"capacitylab/lessons"
	"capacitylab/measure"
	"capacitylab/recorder"
	"capacitylab/result"
	"capacitylab/runner"
)

// sweepFields are the form and JSON field names of a sweep request, in the
// order the form shows them.
var sweepFields = []string{"workers", "spin_ms", "wait_ms", "limit", "policy", "cpus", "stall_every", "stall_ms", "accept", "backlog", "dist", "lock_ms", "coherency_us", "fanout", "hedge", "mode", "rates", "clients", "seconds", "seed", "rng", "timeout_ms", "max_inflight", "retry", "critical", "sheddable", "at", "over_time", "block"}

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
func parseSweep(r *http.Request) (runner.Request, input.FieldErrors, error) {
	q := runner.Request{Preset: measure.Preset{Config: labsvc.DefaultConfig(), Mode: runner.ModeOpen}}
	fe := input.FieldErrors{}
	if !isForm(r) {
		err := input.DecodeJSON(r.Body, &q)
		var je *input.JSONError
		switch {
		case err == nil:
		case !errors.As(err, &je):
			return q, nil, err // the body could not be read: over its limit
		case je.Problem == input.WrongType:
			fe[je.Field] = fmt.Sprintf("%s is not allowed here: want %s", je.Got, jsonKindOf(je.Field))
		case je.Problem == input.UnknownField && je.Want != "":
			fe[je.Field] = fmt.Sprintf("is not a field of a sweep: field names are exact, so write %q; the fields are %s", je.Want, strings.Join(sweepFields, ", "))
		case je.Problem == input.UnknownField:
			fe[je.Field] = "is not a field of a sweep: want " + strings.Join(sweepFields, ", ")
		case je.Problem == input.DuplicateField:
			fe[je.Field] = "is given twice: give each field once"
		case je.Problem == input.BadText && je.Field != "":
			fe[je.Field] = "holds " + je.Got + ": text may not hold control characters other than tab and line breaks"
		case je.Problem == input.BadText:
			fe["body"] = je.Error()
		case je.Problem == input.Trailing:
			fe["body"] = "the body has more than one JSON value: send one object"
		default:
			fe["body"] = "the body is not a JSON sweep request: send an object such as {\"rates\": [40, 80], \"seconds\": 2}"
		}
		return q, fe, nil
	}
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return q, nil, err
		}
		fe["body"] = "the form could not be read: send it URL-encoded, as a browser's form does (rates=40,80&seconds=2)"
		return q, fe, nil
	}
	if fe := input.FormErrors(r.PostForm); len(fe) > 0 {
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
	intField("lock_ms", &q.LockMS)
	intField("coherency_us", &q.CoherencyUS)
	if v := f.Get("dist"); v != "" {
		_ = q.Dist.UnmarshalText([]byte(v)) // canonical, or kept as given for Validate to name
	}
	if v := f.Get("accept"); v != "" {
		_ = q.Accept.UnmarshalText([]byte(v)) // kept as given; Validate names a bad one
	}
	if v := f.Get("policy"); v != "" {
		_ = q.Policy.UnmarshalText([]byte(v)) // canonical, or kept as given for Validate to name
	}
	intField("timeout_ms", &q.TimeoutMS)
	intField("max_inflight", &q.MaxInFlight)
	q.Retry = strings.TrimSpace(f.Get("retry")) // Validate names a bad spec
	q.Hedge = strings.TrimSpace(f.Get("hedge")) // likewise
	intField("fanout", &q.Fanout)
	for _, c := range []struct {
		name string
		dst  *float64
	}{{"critical", &q.Critical}, {"sheddable", &q.Sheddable}} {
		if v := strings.TrimSpace(f.Get(c.name)); v != "" {
			share, err := plainNumber(v)
			if err != nil {
				fe[c.name] = fmt.Sprintf("%q is not a number: want a share of the arrivals from 0 to 1, e.g. 0.2", v)
				continue
			}
			*c.dst = share
		}
	}
	// Knob changes, one a line or separated by semicolons (a policy's
	// value has commas): 30s:WAIT_MS=2000; 45s:POLICY=aimd,backoff=0.5
	for part := range strings.FieldsFuncSeq(f.Get("at"), func(r rune) bool { return r == ';' || r == '\n' || r == '\r' }) {
		if part = strings.TrimSpace(part); part != "" {
			var c result.KnobChange
			_ = c.UnmarshalText([]byte(part)) // kept with why when it is not a change, for Validate to name
			q.At = append(q.At, c)
		}
	}
	// A checkbox sends true when checked and nothing when not; the
	// preset's hidden fields send true or false.
	switch v := strings.TrimSpace(f.Get("over_time")); v {
	case "", "false":
	case "true", "on":
		q.OverTime = true
	default:
		fe["over_time"] = fmt.Sprintf("%q is not allowed: want true (a sample every second) or false", v)
	}
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
	case "mode", "block", "lesson", "accept":
		return "a string"
	case "policy":
		return "a string such as \"inflight,quota=5\""
	case "dist":
		return "a string such as \"bimodal,p=0.1,x=10\""
	case "seconds":
		return "a number"
	case "seed":
		return "a whole number of 0 or more"
	case "at":
		return "a list of knob changes such as [\"30s:WAIT_MS=2000\"]"
	case "over_time":
		return "true or false"
	}
	return "a whole number"
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

// labPreset turns a lesson's lab block into the form's starting values:
// the preset it runs (recorder.Preset, as its recorded table was measured
// or simulated).
func labPreset(l *lessons.Lab) runner.Request {
	return runner.Request{Preset: recorder.Preset(l), Block: l.ID}
}
