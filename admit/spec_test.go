package admit_test

import (
	"errors"
	"strings"
	"testing"

	"capacitylab/admit"
)

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		// The zero value and the word both mean the queue policy.
		{"", ""},
		{"queue", ""},
		{"  queue ", ""},
		// Parameters come out in the documented order, numbers in their
		// shortest form, spaces gone.
		{"inflight,quota=5", "inflight,quota=5"},
		{"aimd", "aimd"},
		{"aimd, interval_ms = 200 ,backoff=0.50", "aimd,backoff=0.5,interval_ms=200"},
		{"gradient,long=100,tolerance=2", "gradient,tolerance=2,long=100"},
		{"sojourn,target_ms=10,interval_ms=200", "sojourn,target_ms=10,interval_ms=200"},
		// Defaults may be given; they are kept, as given.
		{"aimd,start=10", "aimd,start=10"},
		{"aimd,min=5,start=5,max=5", "aimd,start=5,min=5,max=5"},
		// classes, which every policy takes, last; off is kept as given.
		{"queue,classes=on", "queue,classes=on"},
		{"queue, classes = off", "queue,classes=off"},
		{"aimd,classes=on,backoff=0.5", "aimd,backoff=0.5,classes=on"},
		{"inflight,classes=on,quota=5", "inflight,quota=5,classes=on"},
	} {
		got, err := admit.ParseSpec(tc.in)
		if err != nil || string(got) != tc.want {
			t.Errorf("ParseSpec(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestParseSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		in, allowed string
	}{
		// An unknown name lists the policies.
		{"fifo", "queue, inflight, aimd, gradient or sojourn"},
		{"AIMD", "queue, inflight, aimd, gradient or sojourn"},
		{",quota=5", "a policy's name first"},
		// The queue policy's parameter is the LIMIT knob.
		{"queue,limit=5", "queue alone, or queue,classes=on: the queue policy's bound on callers waiting for a worker is the LIMIT knob"},
		// classes is on or off, nothing else.
		{"queue,classes=1", "classes on or off: on: the queue is served critical first"},
		{"aimd,classes=yes", "classes on or off"},
		{"queue,classes=ON", "classes on or off"},
		{"queue,classes=on,classes=off", "classes once"},
		// A required parameter, named with its range.
		{"inflight", "inflight,quota=N with N a whole number from 1 to 100000"},
		// An unknown parameter lists the policy's own.
		{"aimd,quota=5", "aimd's parameters only: start, min, max, increase, backoff, interval_ms, latency_ms, classes"},
		{"sojourn,target=5", "sojourn's parameters only: target_ms, interval_ms, timeout_ms"},
		// Out of range, not a number, not whole.
		{"aimd,backoff=1", "backoff from 0.5 to 0.99"},
		{"aimd,backoff=NaN", "backoff from 0.5 to 0.99"},
		{"inflight,quota=0", "quota a whole number from 1 to 100000"},
		{"inflight,quota=2.5", "quota a whole number from 1 to 100000"},
		{"inflight,quota=five", "quota a whole number from 1 to 100000"},
		{"gradient,smoothing=0", "smoothing from 0.01 to 1"},
		{"sojourn,target_ms=0", "target_ms a whole number from 1 to 600000"},
		// Malformed, twice, and inconsistent.
		{"aimd,backoff", "each of aimd's parameters as name=value"},
		{"aimd,backoff=", "each of aimd's parameters as name=value"},
		{"aimd,,backoff=0.5", "each of aimd's parameters as name=value"},
		{"aimd,backoff=0.5,backoff=0.6", "backoff once"},
		{"aimd,start=5,min=10", "min ≤ start ≤ max (min=10 start=5 max=1000)"},
		{"gradient,max=10", "min ≤ start ≤ max (min=1 start=20 max=10)"},
	} {
		got, err := admit.ParseSpec(tc.in)
		var se *admit.SpecError
		if !errors.As(err, &se) {
			t.Errorf("ParseSpec(%q) = %q, %v; want a *SpecError", tc.in, got, err)
			continue
		}
		if !strings.Contains(se.Allowed, tc.allowed) || se.Value != strings.TrimSpace(tc.in) {
			t.Errorf("ParseSpec(%q): value %q, allowed %q; want the value as given and allowed containing %q", tc.in, se.Value, se.Allowed, tc.allowed)
		}
		if string(got) != strings.TrimSpace(tc.in) {
			t.Errorf("ParseSpec(%q) returned %q: a bad spec is kept as given", tc.in, got)
		}
	}
}

// The policy once called codel is sojourn now: the old name, as a run
// saved with it or a user typing it gives it, is refused with a message
// naming the new one, with the same parameters when they parse, and the
// policies allowed.
func TestParseSpecOldCodel(t *testing.T) {
	for _, tc := range []struct {
		in, use string
	}{
		{"codel,target_ms=24,timeout_ms=245", "want sojourn,target_ms=24,timeout_ms=245 ("},
		{"codel", "want sojourn ("},
		{" CoDel, interval_ms = 50 ", "want sojourn,interval_ms=50 ("},
		// Parameters that do not parse under sojourn either: the form only.
		{"codel,target_ms=0", "want sojourn,target_ms=.. ("},
	} {
		got, err := admit.ParseSpec(tc.in)
		var se *admit.SpecError
		if !errors.As(err, &se) || string(got) != strings.TrimSpace(tc.in) {
			t.Errorf("ParseSpec(%q) = %q, %v; want a *SpecError and the value kept as given", tc.in, got, err)
			continue
		}
		msg := err.Error()
		for _, want := range []string{tc.use, `"codel" is now called sojourn: it drops each request that waited past a bound`, "the policies are " + admit.Allowed} {
			if !strings.Contains(msg, want) {
				t.Errorf("ParseSpec(%q): %q does not say %q", tc.in, msg, want)
			}
		}
	}
	if got := admit.Spec("codel,target_ms=24").Describe(); got != "codel,target_ms=24" {
		t.Errorf("Describe of an old spec = %q, want it as saved", got)
	}
}

// A Spec is text in JSON and YAML: canonical when it parses, kept as given
// (for Validate to name) when it does not; the zero value reads "queue".
func TestSpecText(t *testing.T) {
	var s admit.Spec
	if err := s.UnmarshalText([]byte("aimd, backoff=0.5")); err != nil || s != "aimd,backoff=0.5" || s.Kind() != admit.AIMD {
		t.Errorf("UnmarshalText: %q (%s), %v", s, s.Kind(), err)
	}
	if err := s.UnmarshalText([]byte("fifo,x=1")); err != nil || s != "fifo,x=1" || s.Validate() == nil || s.Kind() != "fifo" {
		t.Errorf("UnmarshalText of a bad spec: %q, %v, Validate %v", s, err, s.Validate())
	}
	var zero admit.Spec
	if b, _ := zero.MarshalText(); string(b) != "queue" || zero.Kind() != admit.Queue || zero.Validate() != nil {
		t.Errorf("the zero Spec marshals %q, kind %q", b, zero.Kind())
	}
	if got := admit.Spec("aimd,backoff=0.5").Describe(); got != "aimd,start=10,min=1,max=1000,increase=1,backoff=0.5,interval_ms=100,latency_ms=2000" {
		t.Errorf("Describe = %q", got)
	}
	if got := admit.Spec("inflight,quota=3").Describe(); got != "inflight,quota=3" {
		t.Errorf("Describe = %q", got)
	}
	help := admit.Help()
	for _, k := range admit.Kinds() {
		if !strings.Contains(help, k) {
			t.Errorf("Help does not name %s:\n%s", k, help)
		}
	}
	if !strings.Contains(help, "inflight,quota=N\n") || !strings.Contains(help, "sojourn,target_ms=5,interval_ms=100,timeout_ms=0\n") {
		t.Errorf("Help does not list the parameters with their defaults:\n%s", help)
	}
}

// Param reads a parameter in force: given, or its default; a name the
// policy does not have, or a Spec that does not parse, has none.
func TestSpecParam(t *testing.T) {
	for _, c := range []struct {
		spec admit.Spec
		name string
		v    float64
		ok   bool
	}{
		{"inflight,quota=5", "quota", 5, true},
		{"aimd,backoff=0.9", "backoff", 0.9, true},
		{"aimd,backoff=0.9", "increase", 1, true}, // the default
		{"inflight,quota=5", "backoff", 0, false},
		{"", "quota", 0, false},
		{"", "classes", 0, true},
		{"sojourn,classes=on", "classes", 1, true},
		{"fifo,x=1", "x", 0, false},
	} {
		if v, ok := c.spec.Param(c.name); v != c.v || ok != c.ok {
			t.Errorf("%q.Param(%q) = %g, %v; want %g, %v", c.spec, c.name, v, ok, c.v, c.ok)
		}
	}
}
