package model

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"capacitylab/input"
)

func TestFormat(t *testing.T) {
	cases := []struct {
		why  string
		v    float64
		want string
	}{
		{"float noise is hidden", 11.040000000000001, "11.04"},
		{"from 100 up, whole numbers", 190.47619, "190"},
		{"rounds to nearest", 761.9047, "762"},
		{"two decimals between 1 and 100", 9.952380952, "9.95"},
		{"three significant digits below 1", 0.047619, "0.0476"},
		{"zero", 0, "0"},
		{"negative keeps its sign", -11, "-11"},
		{"tiny keeps its digits", 1e-6, "0.000001"},
		{"below 12 decimals shows 0", 1e-20, "0"},
		{"infinity", math.Inf(1), "∞"},
		{"not a number", math.NaN(), "undefined"},
		{"trailing zero dropped", 2.5, "2.5"},
		{"rounding may reach the next band", 99.999, "100"},
		{"a half rounds up, not to even", 0.125, "0.125"},
		{"a half at two decimals rounds up", 1.125, "1.13"},
	}
	for _, c := range cases {
		if got := Format(c.v); got != c.want {
			t.Errorf("%s: Format(%v) = %q, want %q", c.why, c.v, got, c.want)
		}
	}
}

func TestRoundLimit(t *testing.T) {
	cases := []struct {
		why         string
		exact, want float64
	}{
		{"the lesson's 9.952 goes down to 9: 10 would admit a request that finishes at 231 ms", 9.952, 9},
		{"72.67 goes down to 72", 72.67, 72},
		{"a half goes down", 2.5, 2},
		{"a whole number stays", 4, 4},
		{"a whole number computed a hair under stays", 2.9999999999999996, 3},
		{"never below 1: LIMIT=0 would mean no limit", 0.04, 1},
	}
	for _, c := range cases {
		if got := RoundLimit(c.exact); got != c.want {
			t.Errorf("%s: RoundLimit(%v) = %v, want %v", c.why, c.exact, got, c.want)
		}
	}
}

func TestNumJSON(t *testing.T) {
	b, err := json.Marshal(struct {
		A, B, C Num
	}{1.5, Num(math.Inf(1)), Num(math.NaN())})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"A":1.5,"B":null,"C":null}` {
		t.Errorf("got %s: finite numbers stay numbers, the rest become null", b)
	}
	var back struct{ A, B Num }
	if err := json.Unmarshal([]byte(`{"A":2,"B":null}`), &back); err != nil {
		t.Fatal(err)
	}
	if back.A != 2 || !math.IsNaN(float64(back.B)) {
		t.Errorf("got %+v: want 2 and NaN", back)
	}
}

func TestComputeRejectsBadInput(t *testing.T) {
	cases := []struct {
		why, kind, solve string
		values           map[string]float64
		param, says      string
	}{
		{"an unknown kind", "little", "", nil, "kind", "want one of admission-limit"},
		{"a parameter of another widget", KindLittlesLaw, "", map[string]float64{"workers": 1}, "workers", "not a parameter of littles-law"},
		{"a negative rate", KindLittlesLaw, "", map[string]float64{"arrivals": -1}, "arrivals", "out of range: want 0 to 5000 per second"},
		{"NaN", KindQueueCurve, "", map[string]float64{"arrivals": math.NaN()}, "arrivals", "out of range"},
		{"half a worker", KindAdmissionLimit, "", map[string]float64{"workers": 1.5}, "workers", "not a whole number"},
		{"a fractional server count", KindQueueCurve, "", map[string]float64{"servers": 2.5}, "servers", "not a whole number"},
		{"zero service time", KindQueueCurve, "", map[string]float64{"service_ms": 0}, "service_ms", "out of range: want 0.1 to 10000 ms"},
		{"an unknown solve", KindLittlesLaw, "rate", nil, "solve", "want one of inflight, arrivals, latency_ms"},
		{"a solve for a kind without one", KindTwoCeilings, "inflight", nil, "solve", "leave solve out"},
		// The quota's and the AIMD limit's parameters.
		{"no workers", KindQuota, "", map[string]float64{"workers": 0}, "workers", "out of range: want 1 to 100000 workers"},
		{"half a worker", KindQuota, "", map[string]float64{"workers": 6.5}, "workers", "not a whole number"},
		{"a release of 0 ms", KindQuota, "", map[string]float64{"release_ms": 0}, "release_ms", "want 1 to 600000 ms"},
		{"a negative timeout", KindQuota, "", map[string]float64{"timeout_ms": -1}, "timeout_ms", "want 0 to 600000 ms"},
		{"a solve quota cannot imply", KindQuota, "workers", nil, "solve", "want one of quota, arrivals, latency_ms"},
		{"a backoff that grows", KindAIMD, "", map[string]float64{"backoff": 1.2}, "backoff", "want 0.5 to 0.99"},
		{"intervals too short", KindAIMD, "", map[string]float64{"interval_ms": 10}, "interval_ms", "want 100 to 60000 ms"},
		{"too long", KindAIMD, "", map[string]float64{"duration_s": 601}, "duration_s", "want 1 to 600 s"},
		{"a floor of 0", KindAIMD, "", map[string]float64{"floor": 0}, "floor", "want 1 to 100000 requests"},
		{"a solve for aimd", KindAIMD, "floor", nil, "solve", "leave solve out"},
		// The retry and late-scaling widgets' parameters.
		{"a chance above 1", KindRetry, "", map[string]float64{"p": 1.01}, "p", "out of range: want 0 to 1 of attempts"},
		{"half a retry", KindRetry, "", map[string]float64{"retries": 2.5}, "retries", "not a whole number"},
		{"eleven retries", KindRetry, "", map[string]float64{"retries": 11}, "retries", "want 0 to 10 retries"},
		{"a budget above 1", KindRetry, "", map[string]float64{"budget": 2}, "budget", "want 0 to 1 of first attempts"},
		{"a load past twice capacity", KindRetry, "", map[string]float64{"utilisation": 2.5}, "utilisation", "want 0 to 2 of capacity"},
		{"a solve for retries", KindRetry, "attempts", nil, "solve", "leave solve out"},
		{"no capacity after the landing", KindLateScaling, "", map[string]float64{"capacity_after": 0}, "capacity_after", "want 1 to 100000 per second"},
		{"a negative lag", KindLateScaling, "", map[string]float64{"lag_s": -1}, "lag_s", "want 0 to 3600 s"},
		{"a negative demand", KindLateScaling, "", map[string]float64{"demand": -5}, "demand", "want 0 to 100000 per second"},
		// The variability, fan-out and USL widgets' parameters.
		{"65 servers", KindVariability, "", map[string]float64{"servers": 65}, "servers", "out of range: want 1 to 64 servers"},
		{"a utilisation of 1", KindVariability, "", map[string]float64{"utilisation": 1}, "utilisation", "want 0 to 0.99 of capacity"},
		{"a negative variability", KindVariability, "", map[string]float64{"arrival_scv": -0.5}, "arrival_scv", "want 0 to 25 SCV"},
		{"service variability past 25", KindVariability, "", map[string]float64{"service_scv": 30}, "service_scv", "want 0 to 25 SCV"},
		{"no fan-out", KindFanout, "", map[string]float64{"fanout": 0}, "fanout", "want 1 to 1000 sub-requests"},
		{"half a sub-request", KindFanout, "", map[string]float64{"fanout": 2.5}, "fanout", "not a whole number"},
		{"a percent where a share goes", KindFanout, "", map[string]float64{"p": 5}, "p", "want 0 to 1 of sub-requests"},
		{"the 100th percentile", KindFanout, "", map[string]float64{"percentile": 1}, "percentile", "want 0.01 to 0.9999 of requests"},
		{"no throughput", KindUSL, "", map[string]float64{"lambda": 0}, "lambda", "want 0.1 to 100000 per second"},
		{"contention past 1", KindUSL, "", map[string]float64{"sigma": 1.5}, "sigma", "want 0 to 1 of the work"},
		{"negative coherency", KindUSL, "", map[string]float64{"kappa": -0.001}, "kappa", "want 0 to 1 per pair of clients"},
		{"257 clients", KindUSL, "", map[string]float64{"n_max": 257}, "n_max", "want 1 to 256 clients"},
	}
	for _, c := range cases {
		_, err := Compute(c.kind, c.values, c.solve)
		var pes input.FieldErrors
		if !errors.As(err, &pes) || len(pes) != 1 {
			t.Errorf("%s: got %v, want one field error", c.why, err)
			continue
		}
		if msg, ok := pes[c.param]; !ok || !strings.Contains(msg, c.says) {
			t.Errorf("%s: got %v, want %q saying %q", c.why, pes, c.param, c.says)
		}
	}
}

func TestComputeDefaults(t *testing.T) {
	// Missing values take the spec's defaults; the littles-law default
	// solve is inflight, and its default values are the lesson's 48 and 230.
	for _, kind := range Kinds() {
		res, err := Compute(kind, nil, "")
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		for _, p := range Specs()[kind].Params {
			if res.Values[p.Name] != p.Default {
				t.Errorf("%s: %s = %v, want default %v", kind, p.Name, res.Values[p.Name], p.Default)
			}
		}
		if res.Sentence == "" {
			t.Errorf("%s: no sentence", kind)
		}
	}
	res, _ := Compute(KindLittlesLaw, nil, "")
	if res.Solve != QInflight || math.Abs(res.Quantities[QInflight]-11.04) > 1e-9 {
		t.Errorf("got solve %q, inflight %v: want inflight 11.04", res.Solve, res.Quantities[QInflight])
	}
}

func TestComputeJSONHasNoNaN(t *testing.T) {
	// Every edge case that makes a quantity infinite or undefined must still
	// marshal: encoding/json fails on a bare NaN or Inf.
	cases := []struct {
		kind, solve string
		values      map[string]float64
	}{
		{KindLittlesLaw, QArrivals, map[string]float64{"latency_ms": 0}},
		{KindLittlesLaw, QLatencyMS, map[string]float64{"arrivals": 0}},
		{KindAdmissionLimit, "", map[string]float64{"budget_ms": 5, "service_ms": 21}},
		{KindTwoCeilings, "", map[string]float64{"spin_ms": 0, "wait_ms": 0}},
		{KindQueueCurve, "", map[string]float64{"arrivals": 100000}},
		// Capacity after below the demand: no drain time, no worst wait.
		{KindLateScaling, "", map[string]float64{"capacity_after": 110}},
		// Only the service times vary: an infinite ratio to the
		// constant-service wait; nothing varies: none.
		{KindVariability, "", map[string]float64{"arrival_scv": 0}},
		{KindVariability, "", map[string]float64{"arrival_scv": 0, "service_scv": 0}},
		// No sub-request is slow: no fan-out makes half the requests slow.
		{KindFanout, "", map[string]float64{"p": 0}},
		// No coherency cost: no peak.
		{KindUSL, "", map[string]float64{"kappa": 0}},
	}
	for _, c := range cases {
		res, err := Compute(c.kind, c.values, c.solve)
		if err != nil {
			t.Fatalf("%s %v: %v", c.kind, c.values, err)
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Errorf("%s %v: %v", c.kind, c.values, err)
		}
		if !strings.Contains(string(b), "null") {
			t.Errorf("%s %v: expected a null for the missing quantity in %s", c.kind, c.values, b)
		}
	}
}

func TestQueueCurveShape(t *testing.T) {
	// Properties that hold for every M/M/c: on the curve, response and p99
	// rise with load, p99 ≥ p50, Little's law L = λ·W holds, and the
	// marked points are where they say they are.
	for _, c := range []struct{ servers, serviceMS float64 }{{1, 20}, {2, 10}, {8, 20}, {64, 5}, {256, 1000}} {
		q := QueueCurve(c.servers, c.serviceMS, 0)
		if len(q.Curve) != CurveLast+1 {
			t.Fatalf("c=%v: %d points", c.servers, len(q.Curve))
		}
		for i, p := range q.Curve {
			if !p.MeanResponseMS.Finite() || !p.P99ResponseMS.Finite() {
				t.Fatalf("c=%v point %d not finite: %+v", c.servers, i, p)
			}
			lw := float64(p.Arrivals) / 1000 * float64(p.MeanResponseMS)
			if math.Abs(lw-float64(p.MeanInSystem)) > 1e-9*math.Max(1, lw) {
				t.Errorf("c=%v point %d: L = %v but λW = %v", c.servers, i, p.MeanInSystem, lw)
			}
			if p.P99ResponseMS < p.P50ResponseMS || p.MeanResponseMS < Num(c.serviceMS) {
				t.Errorf("c=%v point %d: p50 %v p99 %v mean %v", c.servers, i, p.P50ResponseMS, p.P99ResponseMS, p.MeanResponseMS)
			}
			if i > 0 && (p.MeanResponseMS < q.Curve[i-1].MeanResponseMS || p.P99ResponseMS < q.Curve[i-1].P99ResponseMS) {
				t.Errorf("c=%v point %d: response fell with more load", c.servers, i)
			}
		}
		if q.At70.Utilisation != 0.7 || q.At90.Utilisation != 0.9 || !(q.Knee.Utilisation > 0 && q.Knee.Utilisation < 1) {
			t.Errorf("c=%v: marks at %v, %v, knee %v", c.servers, q.At70.Utilisation, q.At90.Utilisation, q.Knee.Utilisation)
		}
	}
}

func TestGoalReachedNeverNilMisses(t *testing.T) {
	// An empty goal is reached, and misses marshal as [] not null, as in JS.
	b, _ := json.Marshal(GoalReached(nil, nil))
	if string(b) != `{"reached":true,"misses":[]}` {
		t.Errorf("got %s", b)
	}
}

func TestQuantityNamesMatchCompute(t *testing.T) {
	// At the defaults every quantity is finite, so Compute's Quantities must
	// hold exactly the names QuantityNames lists.
	for _, kind := range Kinds() {
		res, err := Compute(kind, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		names := QuantityNames(kind)
		if len(names) != len(res.Quantities) {
			t.Errorf("%s: QuantityNames %v but Quantities %v", kind, names, res.Quantities)
		}
		for _, nm := range names {
			if _, ok := res.Quantities[nm]; !ok {
				t.Errorf("%s: %s listed but not computed", kind, nm)
			}
		}
	}
	if QuantityNames("nope") != nil {
		t.Error("unknown kind should give nil")
	}
}
