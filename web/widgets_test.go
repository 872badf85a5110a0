package web

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"capacitylab/lessons"
	"capacitylab/model"
	"capacitylab/store"
)

const (
	littlesLesson = "/lessons/littles-law"
	littlesBlock  = "littles-model"
	littlesRecord = "/lessons/littles-law/model/littles-model"
)

// attrOf returns attribute key of the one element with data-testid testid.
func attrOf(t *testing.T, body, testid, key string) string {
	t.Helper()
	ns := find(parse(t, body), byTestID(testid))
	if len(ns) != 1 {
		t.Fatalf("want one element with data-testid=%q, found %d", testid, len(ns))
	}
	v, _ := attr(ns[0], key)
	return v
}

func hasAttr(t *testing.T, body, testid, key string) bool {
	t.Helper()
	ns := find(parse(t, body), byTestID(testid))
	if len(ns) != 1 {
		t.Fatalf("want one element with data-testid=%q, found %d", testid, len(ns))
	}
	_, ok := attr(ns[0], key)
	return ok
}

func closeTo(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) }

func TestWidgetPageRendersEachKind(t *testing.T) {
	s := newSite(t)
	tests := []struct {
		name  string
		query string
		check func(t *testing.T, body string)
	}{
		// Little's law from the issue: 48/s for 230 ms is 11.04 in flight,
		// the inputs show the query's values and in flight is the output.
		{"littles-law", "/widgets/littles-law?arrivals=48&latency_ms=230", func(t *testing.T, body string) {
			if got := attrOf(t, body, "num-arrivals", "value"); got != "48" {
				t.Errorf("arrivals input = %q, want 48", got)
			}
			if got := attrOf(t, body, "range-latency_ms", "value"); got != "230" {
				t.Errorf("latency range = %q, want 230", got)
			}
			if got := testIDText(t, body, "implied-inflight"); got != "11.04" {
				t.Errorf("implied in flight = %q, want 11.04 (48 × 0.23)", got)
			}
			if !hasAttr(t, body, "num-inflight", "disabled") {
				t.Error("the implied quantity's input is editable")
			}
			if !hasAttr(t, body, "solve-inflight", "checked") {
				t.Error("in flight is not the chosen implied quantity")
			}
		}},
		// Choosing arrivals as the implied one: 4 in flight at 21 ms
		// sustain about 190 a second (4000 ÷ 21 = 190.476…).
		{"littles-law solve arrivals", "/widgets/littles-law?inflight=4&latency_ms=21&solve=arrivals", func(t *testing.T, body string) {
			if got := testIDText(t, body, "implied-arrivals"); got != "190" {
				t.Errorf("implied arrivals = %q, want 190 (whole from 100 up)", got)
			}
			if got := testIDText(t, body, "widget-sentence"); !strings.Contains(got, "sustain about 190 requests a second") {
				t.Errorf("sentence = %q", got)
			}
		}},
		// Admission limit from the issue: 4 × (230 − 12) ÷ 12 = 72.67,
		// rounded down to 72, with its steps.
		{"admission-limit", "/widgets/admission-limit?workers=4&budget_ms=230&service_ms=12", func(t *testing.T, body string) {
			if got := testIDText(t, body, "q-rounded_limit"); got != "72" {
				t.Errorf("limit = %q, want 72", got)
			}
			if got := testIDText(t, body, "q-limit"); got != "72.67" {
				t.Errorf("exact = %q, want 72.67", got)
			}
			steps := find(parse(t, body), func(n nodeT) bool {
				return n.Data == "li" && n.Parent != nil && must(attr(n.Parent, "data-testid")) == "widget-steps"
			})
			if len(steps) < 3 {
				t.Errorf("%d steps shown, want the working", len(steps))
			}
		}},
		// Two ceilings: 1 worker, 2 ms spin + 18 ms wait: the worker ceiling
		// (50/s) binds below the processor's 500/s; the cap is 10 times.
		{"two-ceilings", "/widgets/two-ceilings?workers=1&cpus=1&spin_ms=2&wait_ms=18", func(t *testing.T, body string) {
			if c := attrOf(t, body, "ceiling-workers", "class"); !strings.Contains(c, "binds") {
				t.Errorf("worker ceiling class = %q, want binds", c)
			}
			if c := attrOf(t, body, "ceiling-processor", "class"); strings.Contains(c, "binds") {
				t.Errorf("processor ceiling class = %q, should not bind", c)
			}
			if got := testIDText(t, body, "q-speedup_cap"); got != "10" {
				t.Errorf("speedup cap = %q, want 10", got)
			}
			if !strings.Contains(body, "<svg") {
				t.Error("no plot")
			}
		}},
		// With 16 workers the processor ceiling (500/s) binds instead.
		{"two-ceilings processor binds", "/widgets/two-ceilings?workers=16&cpus=1&spin_ms=2&wait_ms=18", func(t *testing.T, body string) {
			if c := attrOf(t, body, "ceiling-processor", "class"); !strings.Contains(c, "binds") {
				t.Errorf("processor ceiling class = %q, want binds", c)
			}
		}},
		// Queue curve below capacity: M/M/1 at 25/s with 20 ms service is
		// 50% busy, steady, with a plot marking 0.7 and 0.9.
		{"queue-curve", "/widgets/queue-curve?servers=1&service_ms=20&arrivals=25", func(t *testing.T, body string) {
			if got := testIDText(t, body, "q-utilisation"); got != "50" {
				t.Errorf("utilisation = %q%%, want 50", got)
			}
			if !hasAttr(t, body, "widget-unstable", "hidden") {
				t.Error("a steady queue says it has no steady state")
			}
			plot := find(parse(t, body), func(n nodeT) bool { _, ok := attr(n, "data-chart"); return ok })
			if len(plot) != 1 || !strings.Contains(renderNode(plot[0]), "ρ = 0.7") || !strings.Contains(renderNode(plot[0]), "ρ = 0.9") {
				t.Error("no plot with the 0.7 and 0.9 marks")
			}
		}},
		// One server has nothing to split: the "a queue each" figures stay
		// hidden. Three servers of 20 ms at 90 a second (60% busy) show
		// them: a queue each waits with chance ρ = 60% and its p99 is
		// 20 × ln 100 ÷ 0.4 = 230 ms, against Erlang C's 35.47% for one
		// shared queue; the plot draws the split's p99 too.
		{"queue-curve one server has no split", "/widgets/queue-curve?servers=1&service_ms=20&arrivals=25", func(t *testing.T, body string) {
			if !hasAttr(t, body, "widget-separate", "hidden") {
				t.Error("one server shows figures for a queue each")
			}
		}},
		{"queue-curve three servers", "/widgets/queue-curve?servers=3&service_ms=20&arrivals=90", func(t *testing.T, body string) {
			if hasAttr(t, body, "widget-separate", "hidden") {
				t.Error("three servers hide the figures for a queue each")
			}
			if got := testIDText(t, body, "q-separate_prob_wait"); got != "60" {
				t.Errorf("a queue each: chance of waiting = %q%%, want 60", got)
			}
			if got := testIDText(t, body, "q-separate_p99_response_ms"); got != "230" {
				t.Errorf("a queue each: p99 = %q ms, want 230", got)
			}
			if got := testIDText(t, body, "q-prob_wait"); got != "35.47" {
				t.Errorf("one queue: chance of waiting = %q%%, want 35.47", got)
			}
			plot := find(parse(t, body), func(n nodeT) bool { _, ok := attr(n, "data-chart"); return ok })
			if len(plot) != 1 || !strings.Contains(renderNode(plot[0]), "p99, a queue each") {
				t.Error("no plot line for a queue each")
			}
		}},
		// At or above capacity (60/s against 50/s) there is no steady state,
		// and the page says so instead of drawing a point.
		{"queue-curve overloaded", "/widgets/queue-curve?servers=1&service_ms=20&arrivals=60", func(t *testing.T, body string) {
			if hasAttr(t, body, "widget-unstable", "hidden") {
				t.Error("the overloaded queue does not say it has no steady state")
			}
			if got := testIDText(t, body, "widget-unstable"); !strings.Contains(got, "No steady state") {
				t.Errorf("unstable note = %q", got)
			}
		}},
		// The quota through the demo release, a tenth of its time:
		// N = 50 × 0.1 = 5; 25 a second through the quota after the release
		// against 35 of capacity; without it the queue grows 15 a second and
		// callers are late from 0.117 s. The plot is against time, with the
		// release marked, both lines and the origin's queue.
		{"quota", "/widgets/quota?arrivals=50&latency_ms=100&release_ms=200&workers=7&timeout_ms=250", func(t *testing.T, body string) {
			for id, want := range map[string]string{"q-quota": "5", "q-capacity_after": "35", "q-with_quota_after": "25", "q-queue_growth": "15", "q-late_after_s": "0.117"} {
				if got := testIDText(t, body, id); got != want {
					t.Errorf("%s = %q, want %q", id, got, want)
				}
			}
			if got := testIDText(t, body, "widget-steps"); !strings.Contains(got, "min(50, 25, 35) = 25 a second") {
				t.Errorf("steps = %q", got)
			}
			if !hasTestID(t, body, "solve-quota") || !hasTestID(t, body, "solve-arrivals") {
				t.Error("no choice of the quantity N = X × R works out")
			}
			plot := find(parse(t, body), func(n nodeT) bool { _, ok := attr(n, "data-chart"); return ok })
			if len(plot) != 1 {
				t.Fatal("no plot")
			}
			h := renderNode(plot[0])
			for _, want := range []string{"release", "with the quota N = 5", "without a quota", "Waiting at the origin", "callers give up", "Answered within the 250 ms timeout"} {
				if !strings.Contains(h, want) {
					t.Errorf("plot does not say %q", want)
				}
			}
		}},
		// With no timeout nobody gives up: no late time, "never".
		{"quota no timeout", "/widgets/quota?arrivals=50&latency_ms=100&release_ms=200&workers=7&timeout_ms=0", func(t *testing.T, body string) {
			if got := testIDText(t, body, "q-late_after_s"); got != "never" {
				t.Errorf("late after = %q, want never", got)
			}
		}},
		// The AIMD limit's saw-tooth: the hand-worked case of model's tests.
		{"aimd", "/widgets/aimd?capacity_before=14&capacity_after=7&step_s=6&increase=1&backoff=0.75&interval_ms=1000&floor=1&duration_s=16", func(t *testing.T, body string) {
			for id, want := range map[string]string{"q-settle_s": "2", "q-mean_limit": "6.57", "q-delivered_pct": "91.85"} {
				if got := testIDText(t, body, id); got != want {
					t.Errorf("%s = %q, want %q", id, got, want)
				}
			}
			plot := find(parse(t, body), func(n nodeT) bool { _, ok := attr(n, "data-chart"); return ok })
			if len(plot) != 1 {
				t.Fatal("no plot")
			}
			h := renderNode(plot[0])
			for _, want := range []string{"capacity steps", "settled", "the limit L(t)", "capacity C(t)", "mean limit 6.57, 91.85% of the new capacity let in"} {
				if !strings.Contains(h, want) {
					t.Errorf("plot does not say %q", want)
				}
			}
		}},
		// Retries: p = 0.5, 3 retries at 80% of capacity is 1.875 attempts
		// and 150% of capacity, over it (the note shows); the plot draws
		// the attempts against p with the capacity at 1 ÷ 0.8 = 1.25.
		{"retry-amplification", "/widgets/retry-amplification?p=0.5&retries=3&budget=0&utilisation=0.8", func(t *testing.T, body string) {
			for id, want := range map[string]string{"q-attempts": "1.88", "q-attempts_no_budget": "1.88", "q-load_pct": "150"} {
				if got := testIDText(t, body, id); got != want {
					t.Errorf("%s = %q, want %q", id, got, want)
				}
			}
			if hasAttr(t, body, "widget-over", "hidden") {
				t.Error("150% of capacity does not say it is over capacity")
			}
			plot := find(parse(t, body), func(n nodeT) bool { _, ok := attr(n, "data-chart"); return ok })
			if len(plot) != 1 {
				t.Fatal("no plot")
			}
			h := renderNode(plot[0])
			for _, want := range []string{"no budget", "1 ÷ u = 1.25 attempts", "p = 0.5: 1.88 attempts a request", "load 150% of capacity: over it", "From p = 0.2"} {
				if !strings.Contains(h, want) {
					t.Errorf("plot does not say %q", want)
				}
			}
		}},
		// A budget of 0.1 holds it to 1.1 attempts, 88%: within capacity,
		// the note hidden, both lines drawn.
		{"retry-amplification budget", "/widgets/retry-amplification?p=0.5&retries=3&budget=0.1&utilisation=0.8", func(t *testing.T, body string) {
			for id, want := range map[string]string{"q-attempts": "1.1", "q-attempts_no_budget": "1.88", "q-load_pct": "88"} {
				if got := testIDText(t, body, id); got != want {
					t.Errorf("%s = %q, want %q", id, got, want)
				}
			}
			if !hasAttr(t, body, "widget-over", "hidden") {
				t.Error("88% of capacity says it is over capacity")
			}
			h := renderNode(find(parse(t, body), func(n nodeT) bool { _, ok := attr(n, "data-chart"); return ok })[0])
			for _, want := range []string{"without a budget", "with a budget of 0.1", "the budget of 0.1 keeps it within, at most 88%"} {
				if !strings.Contains(h, want) {
					t.Errorf("plot does not say %q", want)
				}
			}
		}},
		// Late capacity, worked by hand in model's tests: 1,200 waiting at
		// the landing, drained 40 s after it, the longest wait 10 s (at 50
		// s), 8 s at the landing, 90 s of arrivals past a 1 s timeout.
		{"late-scaling", "/widgets/late-scaling?demand=120&capacity_before=100&capacity_after=150&lag_s=60&timeout_ms=1000", func(t *testing.T, body string) {
			for id, want := range map[string]string{"q-backlog": "1200", "q-drain_s": "40", "q-worst_wait_ms": "10", "q-landing_wait_ms": "8", "q-late_s": "90"} {
				if got := testIDText(t, body, id); got != want {
					t.Errorf("%s = %q, want %q", id, got, want)
				}
			}
			h := renderNode(find(parse(t, body), func(n nodeT) bool { _, ok := attr(n, "data-chart"); return ok })[0])
			for _, want := range []string{"Backlog, requests", "lands", "drained", "the timeout, 1 s", "The longest wait: 10 s", "for the request arriving at 50 s",
				"From 5 s arrivals wait past the 1 s timeout", "until 95 s: 90 s of arrivals"} {
				if !strings.Contains(h, want) {
					t.Errorf("plot does not say %q", want)
				}
			}
		}},
		// μ2 ≤ λ: the backlog never drains and the waits have no end.
		{"late-scaling never drains", "/widgets/late-scaling?demand=120&capacity_before=100&capacity_after=110&lag_s=60", func(t *testing.T, body string) {
			for id, want := range map[string]string{"q-drain_s": "never", "q-worst_wait_ms": "without end", "q-late_s": "—"} {
				if got := testIDText(t, body, id); got != want {
					t.Errorf("%s = %q, want %q", id, got, want)
				}
			}
			if got := testIDText(t, body, "widget-sentence"); !strings.Contains(got, "never drains") {
				t.Errorf("sentence = %q", got)
			}
			h := renderNode(find(parse(t, body), func(n nodeT) bool { _, ok := attr(n, "data-chart"); return ok })[0])
			if !strings.Contains(h, "Never drains") || !strings.Contains(h, "growing by 10 a second") {
				t.Error("the plot does not say the backlog never drains")
			}
		}},
		// Pollaczek–Khinchine, exact: one server of 20 ms at 70% with
		// service times of cs² = 2 waits 70 ms, three times the 23.33 ms
		// of constant service; no approximation note; the plot draws cs²
		// = 0, 1 and 2 (yours) and marks the load.
		{"variability-wait", "/widgets/variability-wait?servers=1&service_ms=20&utilisation=0.7&arrival_scv=1&service_scv=2", func(t *testing.T, body string) {
			for id, want := range map[string]string{"q-mean_wait_ms": "70", "q-mean_response_ms": "90", "q-constant_wait_ms": "23.33", "q-wait_ratio": "3", "q-mmc_wait_ms": "46.67"} {
				if got := testIDText(t, body, id); got != want {
					t.Errorf("%s = %q, want %q", id, got, want)
				}
			}
			if !hasAttr(t, body, "widget-approximate", "hidden") {
				t.Error("Pollaczek–Khinchine is exact, but the page says it is an approximation")
			}
			h := renderNode(find(parse(t, body), func(n nodeT) bool { _, ok := attr(n, "data-chart"); return ok })[0])
			for _, want := range []string{"cs² = 0, constant", "cs² = 1, exponential", "cs² = 2 (yours)", "your load", "Your load, 70% busy: waits 70 ms (cs² = 2)"} {
				if !strings.Contains(h, want) {
					t.Errorf("plot does not say %q", want)
				}
			}
			if strings.Contains(h, "approximation") {
				t.Error("the plot of an exact result says approximation")
			}
		}},
		// Four servers and smoother arrivals: Kingman's approximation,
		// said on the page and on the plot; only the service varying: no
		// ratio to multiply.
		{"variability-wait approximate", "/widgets/variability-wait?servers=4&service_ms=20&utilisation=0.7&arrival_scv=0&service_scv=2", func(t *testing.T, body string) {
			if hasAttr(t, body, "widget-approximate", "hidden") {
				t.Error("Kingman's approximation is not said to be one")
			}
			if got := testIDText(t, body, "q-wait_ratio"); got != "— (no wait to multiply)" {
				t.Errorf("ratio = %q", got)
			}
			h := html.UnescapeString(renderNode(find(parse(t, body), func(n nodeT) bool { _, ok := attr(n, "data-chart"); return ok })[0]))
			if !strings.Contains(h, "(Kingman's approximation)") {
				t.Error("the plot does not say it is an approximation")
			}
		}},
		// Dean and Barroso's 63%: the percentiles as names, p99.31 and
		// p99.99 (never p100), half slow from 69.
		{"fanout-tail", "/widgets/fanout-tail?fanout=100&p=0.01&percentile=0.99", func(t *testing.T, body string) {
			for id, want := range map[string]string{"q-slow_share": "63.4", "q-median_backend_percentile": "p99.31", "q-backend_percentile": "p99.99", "q-half_slow_fanout": "69"} {
				if got := testIDText(t, body, id); got != want {
					t.Errorf("%s = %q, want %q", id, got, want)
				}
			}
			h := html.UnescapeString(renderNode(find(parse(t, body), func(n nodeT) bool { _, ok := attr(n, "data-chart"); return ok })[0]))
			for _, want := range []string{"k = 100: 63.4% of requests slow", "their median is about each backend's p99.31", "From k = 69 half the requests or more are slow", "half the requests"} {
				if !strings.Contains(h, want) {
					t.Errorf("plot does not say %q", want)
				}
			}
		}},
		{"fanout-tail p99.9 of 250", "/widgets/fanout-tail?fanout=250&p=0.002&percentile=0.999", func(t *testing.T, body string) {
			if got := testIDText(t, body, "q-backend_percentile"); got != "p99.9996" {
				t.Errorf("the backends' percentile for the p99.9 of 250 = %q, want p99.9996", got)
			}
		}},
		// The USL past its peak: N* = 30.82, 904 a second there, 782 at
		// 64 clients, and the page says it is past the peak.
		{"usl", "/widgets/usl?lambda=100&sigma=0.05&kappa=0.001&n_max=64", func(t *testing.T, body string) {
			for id, want := range map[string]string{"q-peak_n": "30.82", "q-peak_x": "904", "q-x_at_max": "782", "q-speedup_at_max": "7.82"} {
				if got := testIDText(t, body, id); got != want {
					t.Errorf("%s = %q, want %q", id, got, want)
				}
			}
			if hasAttr(t, body, "widget-retrograde", "hidden") {
				t.Error("64 clients, past the peak at 30.82, are not said to be past it")
			}
			h := renderNode(find(parse(t, body), func(n nodeT) bool { _, ok := attr(n, "data-chart"); return ok })[0])
			for _, want := range []string{"peak N* = 30.82", "The peak: 904 a second at N* = 30.82", "λN, neither contention nor coherency", "N = 64: 782 a second"} {
				if !strings.Contains(h, want) {
					t.Errorf("plot does not say %q", want)
				}
			}
		}},
		// κ = 0: no peak, said on the page and on the plot.
		{"usl no peak", "/widgets/usl?lambda=100&sigma=0.05&kappa=0&n_max=64", func(t *testing.T, body string) {
			if got := testIDText(t, body, "q-peak_n"); got != "none (κ = 0)" {
				t.Errorf("peak = %q", got)
			}
			if !hasAttr(t, body, "widget-retrograde", "hidden") {
				t.Error("no peak, yet the page says N max is past it")
			}
			h := renderNode(find(parse(t, body), func(n nodeT) bool { _, ok := attr(n, "data-chart"); return ok })[0])
			if !strings.Contains(h, "No peak: κ = 0") {
				t.Error("the plot does not say there is no peak")
			}
		}},
		// A step at the end: nothing after it, and the page says so.
		{"aimd no step", "/widgets/aimd?step_s=15&duration_s=15", func(t *testing.T, body string) {
			if got := testIDText(t, body, "q-settle_s"); got != "not in time" {
				t.Errorf("settle = %q, want not in time", got)
			}
			if got := testIDText(t, body, "widget-sentence"); !strings.Contains(got, "at or after the end") {
				t.Errorf("sentence = %q", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.get(nil, tt.query)
			if res.StatusCode != 200 {
				t.Fatalf("status %d: %.500s", res.StatusCode, res.body)
			}
			body := res.body
			// Every widget says it is a model, not a forecast, lists its
			// caveats, offers a preset link and a GET form.
			if got := testIDText(t, body, "widget-hypothetical"); !strings.Contains(got, "not a forecast") {
				t.Errorf("hypothetical note = %q", got)
			}
			if testIDText(t, body, "widget-assumes") == "" || testIDText(t, body, "widget-ignores") == "" {
				t.Error("no assumptions or omissions listed")
			}
			forms := find(parse(t, body), func(n nodeT) bool { return n.Data == "form" })
			if len(forms) != 1 || must(attr(forms[0], "method")) != "get" {
				t.Errorf("want one GET form, found %d", len(forms))
			}
			if strings.Contains(body, "site-header") {
				t.Error("the standalone page has the site chrome")
			}
			tt.check(t, body)
		})
	}
}

func TestWidgetPageGoalAndCaveatsFromQuery(t *testing.T) {
	s := newSite(t)
	q := url.Values{
		"arrivals": {"48"}, "latency_ms": {"230"},
		"goal":      {"arrivals:48:0.5,latency_ms:100:2"},
		"goal_text": {"Bring the time in system to 100 ms."},
		"found":     {"4.8 are inside."},
		"assumes":   {"A stable window."},
		"ignores":   {"Percentiles.", "Retries."},
	}
	body := s.get(nil, "/widgets/littles-law?"+q.Encode()).body
	// Not reached at 230 ms: the page says what is still off, by name.
	if got := testIDText(t, body, "widget-goal-state"); !strings.Contains(got, "Not there yet") {
		t.Errorf("goal state = %q", got)
	}
	if got := testIDText(t, body, "widget-goal-misses"); got != "Time in system: 230 ms; bring it down to 100 ms (within ±2)." {
		t.Errorf("misses = %q", got)
	}
	if got := testIDText(t, body, "widget-assumes"); got != "A stable window." {
		t.Errorf("assumes = %q", got)
	}
	items := find(parse(t, body), func(n nodeT) bool { return n.Data == "li" && must(attr(n.Parent, "data-testid")) == "widget-ignores" })
	if len(items) != 2 || text(items[0]) != "Percentiles." || text(items[1]) != "Retries." {
		t.Errorf("ignores = %d items", len(items))
	}
	// The share link carries the preset.
	share, _ := url.Parse(attrOf(t, body, "widget-share", "href"))
	if share.Path != "/widgets/littles-law" || share.Query().Get("goal") != "arrivals:48:0.5,latency_ms:100:2" || share.Query().Get("found") != "4.8 are inside." {
		t.Errorf("share link = %q", share)
	}
	// At 100 ms it is reached and shows what was found.
	q.Set("latency_ms", "100")
	body = s.get(nil, "/widgets/littles-law?"+q.Encode()).body
	if got := testIDText(t, body, "widget-goal-state"); got != "Goal reached." {
		t.Errorf("goal state = %q", got)
	}
	if hasAttr(t, body, "widget-goal-found", "hidden") || testIDText(t, body, "widget-goal-found") != "4.8 are inside." {
		t.Errorf("found = %q", testIDText(t, body, "widget-goal-found"))
	}
}

func TestWidgetPageBadParams(t *testing.T) {
	s := newSite(t)
	tests := []struct {
		name   string
		path   string
		status int
		names  []string // text the page must contain
		beside string   // the parameter whose field shows the error beside it ("" = the list above the fields)
	}{
		// A negative rate is out of range; the page names it and the range.
		{"out of range", "/widgets/littles-law?arrivals=-1", 400, []string{"arrivals", "want 0 to 5000"}, "arrivals"},
		// A word is not a number.
		{"not a number", "/widgets/littles-law?latency_ms=slow", 400, []string{"latency_ms", "is not a number"}, "latency_ms"},
		// Two bad parameters are both named.
		{"two bad", "/widgets/admission-limit?workers=1.5&service_ms=0", 400, []string{"workers", "whole number", "service_ms"}, "service_ms"},
		// An unknown parameter is named.
		{"unknown param", "/widgets/two-ceilings?threads=4", 400, []string{"threads", "not a parameter"}, ""},
		// solve must be a quantity the kind can imply.
		{"bad solve", "/widgets/littles-law?solve=workers", 400, []string{"solve", "inflight, arrivals, latency_ms"}, ""},
		// A goal on a quantity the kind does not have.
		{"bad goal", "/widgets/littles-law?goal=limit:3", 400, []string{"goal", "not a quantity"}, ""},
		// Infinity is not a value a control can take.
		{"infinite", "/widgets/queue-curve?arrivals=Inf", 400, []string{"arrivals", "not a number"}, "arrivals"},
		// An unknown widget is a 404 listing the kinds.
		{"unknown kind", "/widgets/erlang", 404, []string{"admission-limit, aimd, fanout-tail, late-scaling, littles-law, queue-curve, quota, retry-amplification, two-ceilings, usl, variability-wait"}, ""},
		// The quota's and the AIMD limit's bad values name the field and
		// what is allowed.
		{"quota no workers", "/widgets/quota?workers=0", 400, []string{"workers", "want 1 to 100000 workers"}, "workers"},
		{"quota bad solve", "/widgets/quota?solve=workers", 400, []string{"solve", "quota, arrivals, latency_ms"}, ""},
		{"aimd backoff above 1", "/widgets/aimd?backoff=1.5", 400, []string{"backoff", "want 0.5 to 0.99"}, "backoff"},
		{"aimd short interval", "/widgets/aimd?interval_ms=10", 400, []string{"interval_ms", "want 100 to 60000 ms"}, "interval_ms"},
		{"retry chance above 1", "/widgets/retry-amplification?p=1.5", 400, []string{"p", "want 0 to 1 of attempts"}, "p"},
		{"retry half a retry", "/widgets/retry-amplification?retries=2.5", 400, []string{"retries", "whole number"}, "retries"},
		{"late-scaling no capacity after", "/widgets/late-scaling?capacity_after=0", 400, []string{"capacity_after", "want 1 to 100000 per second"}, "capacity_after"},
		{"late-scaling goal on a made-up output", "/widgets/late-scaling?goal=drain:40:1", 400, []string{"goal", "not a quantity of late-scaling"}, ""},
		{"variability utilisation of 1", "/widgets/variability-wait?utilisation=1", 400, []string{"utilisation", "want 0 to 0.99 of capacity"}, "utilisation"},
		{"variability 65 servers", "/widgets/variability-wait?servers=65", 400, []string{"servers", "want 1 to 64 servers"}, "servers"},
		{"variability negative scv", "/widgets/variability-wait?service_scv=-1", 400, []string{"service_scv", "want 0 to 25 SCV"}, "service_scv"},
		{"fanout a percent for a share", "/widgets/fanout-tail?p=5", 400, []string{"p", "want 0 to 1 of sub-requests"}, "p"},
		{"fanout half a sub-request", "/widgets/fanout-tail?fanout=1.5", 400, []string{"fanout", "whole number"}, "fanout"},
		{"usl negative coherency", "/widgets/usl?kappa=-0.1", 400, []string{"kappa", "want 0 to 1 per pair of clients"}, "kappa"},
		{"usl 300 clients", "/widgets/usl?n_max=300", 400, []string{"n_max", "want 1 to 256 clients"}, "n_max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.get(nil, tt.path)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.status)
			}
			if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
				t.Errorf("content type %q, want an HTML page", res.Header.Get("Content-Type"))
			}
			for _, n := range tt.names {
				if !strings.Contains(res.body, n) {
					t.Errorf("page does not say %q:\n%.600s", n, res.body)
				}
			}
			if tt.status != 400 {
				return
			}
			// A bad value keeps the widget, with the error inside it (a
			// course page framing it shows a widget, not this site's error
			// page), beside the field it is about, and the results marked
			// as not for that value.
			if !strings.Contains(res.body, "data-widget-root") || strings.Contains(res.body, `class="site-header"`) || hasTestID(t, res.body, "error") {
				t.Errorf("a bad value gives a page that is not the widget:\n%.600s", res.body)
			}
			if tt.beside != "" {
				if got := testIDText(t, res.body, "error-"+tt.beside); got == "" {
					t.Errorf("no error beside the %s field", tt.beside)
				}
				if !hasTestID(t, res.body, "widget-stale") || strings.Contains(blockOf(t, res.body, "widget-stale"), "hidden") {
					t.Error("the results are not marked stale")
				}
			} else if !hasTestID(t, res.body, "widget-errors") {
				t.Error("the error is not listed above the fields")
			}
		})
	}
}

// apiResult is the part of GET /api/models/{kind} the tests read.
type apiResult struct {
	Kind       string             `json:"kind"`
	Solve      string             `json:"solve"`
	Sentence   string             `json:"sentence"`
	Quantities map[string]float64 `json:"quantities"`
	Admission  *struct {
		Exact   float64 `json:"exact"`
		Rounded float64 `json:"rounded"`
	} `json:"admission_limit"`
	Queue *struct {
		Stable bool `json:"stable"`
		At     struct {
			MeanInSystem *float64 `json:"mean_in_system"`
		} `json:"at"`
	} `json:"queue_curve"`
	Quota *struct {
		Steps []string `json:"steps"`
	} `json:"quota"`
	AIMD *struct {
		Limit    []float64 `json:"limit"`
		Capacity []float64 `json:"capacity"`
		SettleS  *float64  `json:"settle_s"`
	} `json:"aimd"`
	Retry *struct {
		CurveAttempts []float64 `json:"curve_attempts"`
		Over          bool      `json:"over"`
	} `json:"retry_amplification"`
	Scaling *struct {
		DrainS      *float64 `json:"drain_s"`
		WorstWaitMS *float64 `json:"worst_wait_ms"`
		Drains      bool     `json:"drains"`
	} `json:"late_scaling"`
	Variability *struct {
		WaitRatio *float64 `json:"wait_ratio"`
		Method    string   `json:"method"`
		Curves    []struct {
			ServiceSCV float64 `json:"service_scv"`
		} `json:"curves"`
	} `json:"variability_wait"`
	Fanout *struct {
		HalfSlowFanout *float64  `json:"half_slow_fanout"`
		CurveK         []float64 `json:"curve_k"`
	} `json:"fanout_tail"`
	USL *struct {
		PeakN   *float64 `json:"peak_n"`
		PeakX   *float64 `json:"peak_x"`
		HasPeak bool     `json:"has_peak"`
	} `json:"usl"`
	Goal *model.GoalStatus `json:"goal"`
}

func TestAPIModels(t *testing.T) {
	s := newSite(t)
	tests := []struct {
		name  string
		path  string
		check func(t *testing.T, r apiResult)
	}{
		// The example: 48/s × 0.230 s = 11.04 in flight.
		{"littles-law", "/api/models/littles-law?arrivals=48&latency_ms=230", func(t *testing.T, r apiResult) {
			if !closeTo(r.Quantities["inflight"], 48*0.230) || r.Solve != "inflight" {
				t.Errorf("inflight = %v (solve %q), want 11.04", r.Quantities["inflight"], r.Solve)
			}
		}},
		// 16 in flight at 21 ms sustain 16000 ÷ 21 ≈ 762 a second.
		{"littles-law arrivals", "/api/models/littles-law?inflight=16&latency_ms=21&solve=arrivals", func(t *testing.T, r apiResult) {
			if !closeTo(r.Quantities["arrivals"], 16000.0/21) {
				t.Errorf("arrivals = %v, want 761.9", r.Quantities["arrivals"])
			}
		}},
		// The example: 4 × (230 − 12) ÷ 12 = 72.67, rounded down to 72.
		{"admission-limit", "/api/models/admission-limit?workers=4&budget_ms=230&service_ms=12", func(t *testing.T, r apiResult) {
			if r.Admission == nil || !closeTo(r.Admission.Exact, 4*(230.0-12)/12) || r.Admission.Rounded != 72 {
				t.Errorf("admission = %+v, want exact 72.67 and 72", r.Admission)
			}
			if r.Quantities["rounded_limit"] != 72 {
				t.Errorf("rounded_limit = %v", r.Quantities["rounded_limit"])
			}
		}},
		// 1 worker, 230 ms, 21 ms: 209 ÷ 21 = 9.95, rounded down: limit 9.
		{"admission-limit one worker", "/api/models/admission-limit?workers=1&budget_ms=230&service_ms=21", func(t *testing.T, r apiResult) {
			if r.Admission == nil || !closeTo(r.Admission.Exact, 209.0/21) || r.Admission.Rounded != 9 {
				t.Errorf("admission = %+v, want 9.95 and 9", r.Admission)
			}
		}},
		// Overloaded M/M/1: no steady state, figures are null.
		{"queue-curve overloaded", "/api/models/queue-curve?servers=1&service_ms=20&arrivals=50", func(t *testing.T, r apiResult) {
			if r.Queue == nil || r.Queue.Stable || r.Queue.At.MeanInSystem != nil {
				t.Errorf("queue = %+v, want unstable with null figures", r.Queue)
			}
		}},
		// The demo in its own units: N = 5 × 1 s = 5, 2.5 a second
		// through the quota after the release, capacity 3.5, late from 7/6 s.
		{"quota demo", "/api/models/quota?arrivals=5&latency_ms=1000&release_ms=2000&workers=7&timeout_ms=2500", func(t *testing.T, r apiResult) {
			q := r.Quantities
			if r.Solve != "quota" || q["quota"] != 5 || q["with_quota_after"] != 2.5 || q["capacity_after"] != 3.5 || !closeTo(q["late_after_s"], 7.0/6) {
				t.Errorf("solve %q, quantities %v: want N 5, 2.5 after, capacity 3.5, late from 1.17 s", r.Solve, q)
			}
			if r.Quota == nil || len(r.Quota.Steps) != 5 {
				t.Errorf("quota = %+v, want 5 steps", r.Quota)
			}
		}},
		// solve=arrivals: a quota of 5 held 100 ms sustains 50 a second.
		{"quota solve arrivals", "/api/models/quota?quota=5&latency_ms=100&solve=arrivals", func(t *testing.T, r apiResult) {
			if r.Solve != "arrivals" || !closeTo(r.Quantities["arrivals"], 50) {
				t.Errorf("solve %q, arrivals %v: want 50", r.Solve, r.Quantities["arrivals"])
			}
		}},
		// The AIMD series, one entry an interval, and a goal on an output.
		{"aimd", "/api/models/aimd?capacity_before=14&capacity_after=7&step_s=6&interval_ms=1000&duration_s=16&goal=delivered_pct:95:5", func(t *testing.T, r apiResult) {
			if r.AIMD == nil || len(r.AIMD.Limit) != 16 || r.AIMD.Limit[6] != 10.6875 || r.AIMD.Capacity[6] != 7 || r.AIMD.SettleS == nil || *r.AIMD.SettleS != 2 {
				t.Errorf("aimd = %+v, want 16 intervals, 10.6875 against 7 at 6 s, settled in 2 s", r.AIMD)
			}
			if r.Goal == nil || !r.Goal.Reached {
				t.Errorf("goal = %+v: 91.85%% is within 95 ± 5", r.Goal)
			}
		}},
		// p = 1: every attempt fails, so 3 retries are 4 attempts; the
		// curve runs p from 0 to 1 in 101 points; the goal on load_pct
		// (80 to 100%) is not met at 200%.
		{"retry-amplification p = 1", "/api/models/retry-amplification?p=1&retries=3&utilisation=0.5&goal=load_pct:90:10", func(t *testing.T, r apiResult) {
			if r.Quantities["attempts"] != 4 || r.Quantities["load_pct"] != 200 || r.Retry == nil || !r.Retry.Over || len(r.Retry.CurveAttempts) != 101 {
				t.Errorf("quantities %v, retry %+v: want 4 attempts, 200%%, over, 101 points", r.Quantities, r.Retry)
			}
			if r.Goal == nil || r.Goal.Reached {
				t.Errorf("goal = %+v: 200%% is not within 90 ± 10", r.Goal)
			}
		}},
		// μ2 = λ: the backlog of 1,200 never drains (null), but the waits
		// stop at 1,200 ÷ 120 = 10 s.
		{"late-scaling μ2 = λ", "/api/models/late-scaling?demand=120&capacity_before=100&capacity_after=120&lag_s=60", func(t *testing.T, r apiResult) {
			if r.Scaling == nil || r.Scaling.Drains || r.Scaling.DrainS != nil || r.Scaling.WorstWaitMS == nil || *r.Scaling.WorstWaitMS != 10000 {
				t.Errorf("late_scaling %+v: want no drain and a longest wait of 10 s", r.Scaling)
			}
			if _, ok := r.Quantities["drain_s"]; ok || r.Quantities["backlog"] != 1200 {
				t.Errorf("quantities %v: want backlog 1200 and no drain_s", r.Quantities)
			}
		}},
		// Evenly spaced arrivals and a variable service: Kingman's
		// approximation, the ratio to constant service infinite (null),
		// the curves for cs² = 0, 1, 2 and the learner's 4.
		{"variability-wait only the service varies", "/api/models/variability-wait?servers=2&arrival_scv=0&service_scv=4", func(t *testing.T, r apiResult) {
			v := r.Variability
			if v == nil || v.WaitRatio != nil || v.Method != model.MethodAllenCunneen || len(v.Curves) != 4 || v.Curves[3].ServiceSCV != 4 {
				t.Errorf("variability_wait %+v: want Allen–Cunneen, no ratio, 4 curves ending at cs² = 4", v)
			}
			if _, ok := r.Quantities["wait_ratio"]; ok {
				t.Errorf("quantities %v: an infinite ratio is a quantity", r.Quantities)
			}
		}},
		// p = 0: nothing slow, so no fan-out makes half slow (null).
		{"fanout-tail never slow", "/api/models/fanout-tail?fanout=10&p=0", func(t *testing.T, r apiResult) {
			if r.Fanout == nil || r.Fanout.HalfSlowFanout != nil || len(r.Fanout.CurveK) != 100 || r.Quantities["slow_share"] != 0 {
				t.Errorf("fanout_tail %+v, quantities %v: want none slow, no half-slow fan-out, 100 points", r.Fanout, r.Quantities)
			}
		}},
		// κ = 0: no peak, null in JSON, and a goal on the peak not met.
		{"usl no peak", "/api/models/usl?kappa=0&goal=peak_n:31:1", func(t *testing.T, r apiResult) {
			if r.USL == nil || r.USL.HasPeak || r.USL.PeakN != nil || r.USL.PeakX != nil {
				t.Errorf("usl %+v: want no peak", r.USL)
			}
			if r.Goal == nil || r.Goal.Reached {
				t.Errorf("goal = %+v: a peak that is not there is not at 31", r.Goal)
			}
		}},
		// goal= adds the goal's status.
		{"goal", "/api/models/littles-law?arrivals=48&latency_ms=100&goal=arrivals:48:0.5,latency_ms:100:2,inflight:4.8:0.01", func(t *testing.T, r apiResult) {
			if r.Goal == nil || !r.Goal.Reached {
				t.Errorf("goal = %+v, want reached", r.Goal)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.get(nil, tt.path)
			if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("status %d, type %q: %s", res.StatusCode, res.Header.Get("Content-Type"), res.body)
			}
			var r apiResult
			if err := json.Unmarshal([]byte(res.body), &r); err != nil {
				t.Fatal(err)
			}
			if r.Sentence == "" {
				t.Error("no sentence")
			}
			tt.check(t, r)
		})
	}
	// GET /api/models lists every kind's spec.
	var specs struct {
		Models []model.Spec `json:"models"`
	}
	if err := json.Unmarshal([]byte(s.get(nil, "/api/models").body), &specs); err != nil || len(specs.Models) != len(model.Kinds()) {
		t.Errorf("specs: %v, %d kinds", err, len(specs.Models))
	}
}

func TestAPIModelsBadParams(t *testing.T) {
	s := newSite(t)
	tests := []struct {
		name   string
		path   string
		status int
		params []string // every parameter the error must list, in order
	}{
		// Each bad parameter gets its own message.
		{"two out of range", "/api/models/littles-law?arrivals=-5&latency_ms=20000", 400, []string{"arrivals", "latency_ms"}},
		// Not a number, and an unknown name.
		{"word and unknown", "/api/models/admission-limit?budget_ms=abc&queue=3", 400, []string{"budget_ms", "queue"}},
		// Go's other number spellings are not plain numbers: hex, digit
		// separators, infinity.
		{"hex, underscore and Inf", "/api/models/littles-law?arrivals=0x1p4&latency_ms=1_000&inflight=Inf", 400, []string{"arrivals", "inflight", "latency_ms"}},
		// A goal with no value.
		{"bad goal", "/api/models/littles-law?goal=arrivals", 400, []string{"goal"}},
		// A goal value spelt in hex.
		{"hex goal", "/api/models/littles-law?goal=arrivals:0x1p5", 400, []string{"goal"}},
		// Texts belong to the standalone page only.
		{"text on api", "/api/models/littles-law?goal_text=hi", 400, []string{"goal_text"}},
		// An unknown kind is 404 with no params.
		{"unknown kind", "/api/models/erlang-b", 404, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.get(nil, tt.path)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.status, res.body)
			}
			var body errorBody
			if err := json.Unmarshal([]byte(res.body), &body); err != nil || body.Error == nil {
				t.Fatalf("body %q: %v", res.body, err)
			}
			var got []string
			for _, p := range body.Error.Params {
				got = append(got, p.Param)
				if p.Message == "" {
					t.Errorf("%s has no message", p.Param)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.params, ",") {
				t.Errorf("params %v, want %v", got, tt.params)
			}
			for _, p := range tt.params {
				if !strings.Contains(body.Error.Message, p) {
					t.Errorf("message %q does not name %s", body.Error.Message, p)
				}
			}
		})
	}
}

func TestWidgetRangeOrNumberWins(t *testing.T) {
	tests := []struct {
		name string
		q    url.Values
		want float64
	}{
		// The range moved from where it was rendered: its value wins.
		{"range moved", url.Values{"arrivals": {"48", "60"}, "was": {"arrivals:48"}}, 60},
		// The number was typed and the range did not move: the number wins.
		{"number typed", url.Values{"arrivals": {"52.5", "48"}, "was": {"arrivals:48"}}, 52.5},
		// Only one value (a hand-written link): it is taken.
		{"one value", url.Values{"arrivals": {"30"}}, 30},
		// A value off the range's grid (48.5 with step 1): the page renders
		// the range at 49 and was=49, so an untouched range leaves 48.5.
		{"off grid", url.Values{"arrivals": {"48.5", "49"}, "was": {"arrivals:49"}}, 48.5},
		// Both the same: either.
		{"same", url.Values{"arrivals": {"48", "48"}, "was": {"arrivals:48"}}, 48},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wq, errs := parseWidgetQuery(model.KindLittlesLaw, tt.q, false)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if wq.Values["arrivals"] != tt.want {
				t.Errorf("arrivals = %v, want %v", wq.Values["arrivals"], tt.want)
			}
		})
	}
}

// exportGoals lists lesson/block of every goal in a progress export.
func exportGoals(t *testing.T, res response) []string {
	t.Helper()
	var e struct {
		Goals []struct {
			Lesson string             `json:"lesson"`
			Block  string             `json:"block"`
			Values map[string]float64 `json:"values"`
		} `json:"model_goals"`
	}
	if err := json.Unmarshal([]byte(res.body), &e); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range e.Goals {
		out = append(out, g.Lesson+"/"+g.Block)
	}
	return out
}

func TestLessonWidgetGoalWithoutJavaScript(t *testing.T) {
	s := newSite(t)
	c := s.readingOn("littles-law") // the widget is past the lesson's first Predict
	// The lesson renders the widget with its own values and goal, and a
	// GET form back to the lesson that names the block.
	page := s.get(c, littlesLesson).body
	if got := testIDText(t, page, "implied-inflight"); got != "11.04" {
		t.Errorf("starting in flight = %q, want 11.04", got)
	}
	if got := testIDText(t, page, "widget-goal-state"); !strings.Contains(got, "Not there yet") {
		t.Errorf("goal state = %q", got)
	}
	forms := find(parse(t, page), func(n nodeT) bool {
		return n.Data == "form" && must(attr(n, "action")) == littlesLesson+"#"+littlesBlock && must(attr(n, "method")) == "get"
	})
	if len(forms) != 1 {
		t.Fatalf("found %d widget forms to the lesson", len(forms))
	}
	// Values that do not reach the goal record nothing and set no cookie.
	res := s.get(c, littlesLesson+"?widget="+littlesBlock+"&arrivals=48&latency_ms=150")
	if got := testIDText(t, res.body, "widget-goal-state"); !strings.Contains(got, "Not there yet") {
		t.Errorf("at 150 ms: %q", got)
	}
	if got := attrOf(t, res.body, "num-latency_ms", "value"); got != "150" {
		t.Errorf("latency input shows %q, want the sent 150", got)
	}
	if len(res.Header.Values("Set-Cookie")) != 0 {
		t.Error("a goal not reached created a learner")
	}
	// A link from another site with reaching values does not record.
	res = s.do(c, "GET", littlesLesson+"?widget="+littlesBlock+"&arrivals=48&latency_ms=100", nil, map[string]string{"Sec-Fetch-Site": "cross-site"})
	if len(res.Header.Values("Set-Cookie")) != 0 {
		t.Error("a cross-site link recorded a goal")
	}
	// The form sent from the page with reaching values (the range moved
	// to 100) records the goal, and the page says so.
	res = s.get(c, littlesLesson+"?widget="+littlesBlock+"&was=arrivals:48,latency_ms:230&arrivals=48&arrivals=48&latency_ms=230&latency_ms=100&solve=inflight")
	if got := testIDText(t, res.body, "widget-goal-state"); got != "Goal reached." {
		t.Errorf("goal state = %q", got)
	}
	if got := testIDText(t, res.body, "implied-inflight"); got != "4.8" {
		t.Errorf("in flight = %q, want 4.8", got)
	}
	if got := testIDText(t, res.body, "widget-goal-recorded"); !strings.Contains(got, "In your progress") {
		t.Errorf("recorded note = %q", got)
	}
	if got := exportGoals(t, s.get(c, "/api/progress")); strings.Join(got, ",") != "littles-law/"+littlesBlock {
		t.Errorf("export goals = %v", got)
	}
	// After a reload without the form values the goal is still shown as
	// recorded, and the index counts it.
	if got := testIDText(t, s.get(c, littlesLesson).body, "widget-goal-recorded"); !strings.Contains(got, "In your progress") {
		t.Errorf("after reload: %q", got)
	}
	if got := attrOf(t, s.get(c, "/").body, "progress-littles-law", "data-done"); got == "0" || got == "" {
		t.Errorf("index counts %q done in littles-law", got)
	}
	// Bad values on the lesson page are shown beside the field, not
	// recorded, and the page still renders.
	res = s.get(c, littlesLesson+"?widget="+littlesBlock+"&arrivals=-3&latency_ms=100")
	if res.StatusCode != 200 || !strings.Contains(res.body, "-3 is out of range") {
		t.Errorf("bad value: status %d, message shown %v", res.StatusCode, strings.Contains(res.body, "-3 is out of range"))
	}
	if got := attrOf(t, res.body, "num-arrivals", "aria-invalid"); got != "true" {
		t.Errorf("aria-invalid = %q", got)
	}
	// A problem that belongs to no field (here solve) is listed above them.
	res = s.get(c, littlesLesson+"?widget="+littlesBlock+"&solve=workers")
	if got := testIDText(t, res.body, "widget-errors"); !strings.Contains(got, "solve:") {
		t.Errorf("widget errors = %q", got)
	}
}

func TestLessonWidgetGoalWithJSON(t *testing.T) {
	s := newSite(t)
	c := s.client()
	tests := []struct {
		name   string
		path   string
		form   url.Values
		status int
		saved  bool // whether the goal is in progress afterwards
	}{
		// Values short of the goal are refused with what is still off.
		{"not reached", littlesRecord, url.Values{"arrivals": {"48"}, "latency_ms": {"150"}}, 409, false},
		// A bad value is a 400 naming it.
		{"bad value", littlesRecord, url.Values{"arrivals": {"x"}, "latency_ms": {"100"}}, 400, false},
		// No such block.
		{"unknown block", "/lessons/littles-law/model/nope", url.Values{"arrivals": {"48"}}, 404, false},
		// The goal's values record it.
		{"reached", littlesRecord, url.Values{"arrivals": {"48"}, "latency_ms": {"100"}, "solve": {"inflight"}}, 200, true},
		// Sending it again keeps the first record and still answers 200.
		{"again", littlesRecord, url.Values{"arrivals": {"48.2"}, "latency_ms": {"99"}}, 200, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.postJSON(c, tt.path, tt.form)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.status, res.body)
			}
			if tt.status == 200 {
				var g goalResponse
				if err := json.Unmarshal([]byte(res.body), &g); err != nil || !g.Reached || g.Goal.Block != littlesBlock {
					t.Errorf("answer %s: %v", res.body, err)
				}
				if g.Goal.Values["latency_ms"] != 100 || !closeTo(g.Goal.Values["inflight"], 4.8) {
					t.Errorf("recorded values %v, want the first reaching ones (100 ms, 4.8 in flight)", g.Goal.Values)
				}
			}
			var saved []string
			if u, _ := url.Parse(s.srv.URL); len(c.Jar.Cookies(u)) > 0 {
				saved = exportGoals(t, s.get(c, "/api/progress"))
			}
			if (len(saved) == 1) != tt.saved {
				t.Errorf("saved goals %v, want saved=%v", saved, tt.saved)
			}
		})
	}
	// A form post (no JavaScript fetch) is redirected back to the block.
	res := s.post(s.client(), littlesRecord, url.Values{"arrivals": {"48"}, "latency_ms": {"100"}})
	if res.StatusCode != 303 || res.Header.Get("Location") != littlesLesson+"#"+littlesBlock {
		t.Errorf("form post: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
}

func TestWidgetPlotAndFraming(t *testing.T) {
	s := newSiteAt(t, t.TempDir()+"/p.db", func(d *Deps) { d.FrameAncestors = "'self' https://course.example.org" })
	// The plot endpoints draw the plot the page embeds: as its HTML (which
	// widgets.js swaps in), and as an SVG image of its own.
	res := s.get(nil, "/widgets/queue-curve/plot.svg?servers=2&service_ms=20&arrivals=70&id=abc")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(res.body, "<svg") || !strings.Contains(res.body, `id="abc-plot-title"`) {
		t.Errorf("plot.svg: %d %q %.200s", res.StatusCode, res.Header.Get("Content-Type"), res.body)
	}
	res = s.get(nil, "/widgets/queue-curve/plot?servers=2&service_ms=20&arrivals=70&id=abc")
	page := s.get(nil, "/widgets/queue-curve?servers=2&service_ms=20&arrivals=70")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || !strings.HasPrefix(res.body, `<figure class="chart" id="abc-plot"`) ||
		!strings.Contains(page.body, strings.ReplaceAll(res.body, "abc-plot", "w-queue-curve-plot")) {
		t.Errorf("plot: %d %q %.300s", res.StatusCode, res.Header.Get("Content-Type"), res.body)
	}
	// The quota's plot works out what solve says: R from N = 5 with no
	// arrivals has no value, and the plot says there is no quota.
	if res := s.get(nil, "/widgets/quota/plot?solve=latency_ms&arrivals=0&quota=5&latency_ms=100"); res.StatusCode != 200 || !strings.Contains(res.body, "No quota: N = X × R has no value here") {
		t.Errorf("quota plot with solve=latency_ms: %d %.300s", res.StatusCode, res.body)
	}
	// The quota, the AIMD limit, the retries, late capacity, variability,
	// fan-out and the USL have plots too.
	for _, kind := range []string{"quota", "aimd", "retry-amplification", "late-scaling", "variability-wait", "fanout-tail", "usl"} {
		// (the late-scaling chart's two panels are stacked: class "chart stacked")
		if res := s.get(nil, "/widgets/"+kind+"/plot?id=abc"); res.StatusCode != 200 || !strings.HasPrefix(res.body, `<figure class="chart`) || !strings.Contains(res.body[:80], `id="abc-plot"`) {
			t.Errorf("%s plot: %d %.200s", kind, res.StatusCode, res.body)
		}
	}
	// Little's law has no plot; a bad id is refused.
	if res := s.get(nil, "/widgets/littles-law/plot.svg"); res.StatusCode != 404 {
		t.Errorf("littles-law plot: %d", res.StatusCode)
	}
	if res := s.get(nil, "/widgets/two-ceilings/plot.svg?id=%22%3E"); res.StatusCode != 400 {
		t.Errorf("bad id: %d", res.StatusCode)
	}
	// The standalone widgets, which change nothing, may be framed by any
	// course page by default; the lessons only by the configured site.
	for _, path := range []string{"/widgets/littles-law", "/widgets/queue-curve/plot.svg"} {
		res = s.get(nil, path)
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors *;") {
			t.Errorf("%s: CSP = %q, want frame-ancestors *", path, csp)
		}
		if xfo := res.Header.Get("X-Frame-Options"); xfo != "" {
			t.Errorf("%s: X-Frame-Options %q would forbid the framing the CSP allows", path, xfo)
		}
	}
	res = s.get(nil, littlesLesson)
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'self' https://course.example.org;") {
		t.Errorf("lesson CSP = %q", csp)
	}
	// An operator may narrow the widgets' list too.
	narrow := newSiteAt(t, t.TempDir()+"/p.db", func(d *Deps) { d.WidgetFrameAncestors = "https://course.example.org" })
	if csp := narrow.get(nil, "/widgets/littles-law").Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors https://course.example.org;") {
		t.Errorf("narrowed widget CSP = %q", csp)
	}
}

func TestRangePos(t *testing.T) {
	tests := []struct {
		name string
		s    slider
		v    float64
		want float64
	}{
		// On the grid: unchanged.
		{"on grid", slider{Min: 0, Max: 100, Step: 1}, 48, 48},
		// Half way between steps goes up, as browsers do.
		{"half up", slider{Min: 0, Max: 100, Step: 1}, 48.5, 49},
		// A step of 0.1 from 0.1: 2 comes out as 2, not 2.0000000000000004.
		{"float noise", slider{Min: 0.1, Max: 50, Step: 0.1}, 2, 2},
		// Above the slider's top: pinned to the top.
		{"above top", slider{Min: 0, Max: 100, Step: 1}, 150, 100},
		// Below a goal's window: pinned to its bottom.
		{"below window", slider{Min: 20, Max: 70, Step: 0.2}, 1, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rangePos(tt.s, tt.v); got != tt.want {
				t.Errorf("rangePos = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestWidgetTextVectors holds sliderFor and missText to the cases
// static/js/widgettext.js is tested against (node --test static/js/).
func TestWidgetTextVectors(t *testing.T) {
	b, err := os.ReadFile("testdata/widget-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Slider []struct {
			Why   string `json:"why"`
			Param struct {
				Min     float64 `json:"min"`
				Max     float64 `json:"max"`
				Step    float64 `json:"step"`
				Default float64 `json:"default"`
			} `json:"param"`
			Value  float64       `json:"value"`
			Target *model.Target `json:"target"`
			Want   slider        `json:"want"`
		} `json:"slider"`
		Misses []struct {
			Why    string                   `json:"why"`
			Labels map[string]quantityLabel `json:"labels"`
			Miss   model.Miss               `json:"miss"`
			Want   string                   `json:"want"`
		} `json:"misses"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Slider) == 0 || len(v.Misses) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range v.Slider {
		p := model.Param{Min: c.Param.Min, Max: c.Param.Max, Step: c.Param.Step, Default: c.Param.Default}
		if got := sliderFor(p, c.Value, c.Target); got != c.Want {
			t.Errorf("sliderFor (%s) = %+v, want %+v", c.Why, got, c.Want)
		}
	}
	for _, c := range v.Misses {
		if got := missText(c.Labels, c.Miss); got != c.Want {
			t.Errorf("missText (%s) =\n %q, want\n %q", c.Why, got, c.Want)
		}
	}
}

// Every model block of the course can reach its goal by its slider: for
// each target on a parameter the learner moves, the goal is inside the
// slider's range, a point of the slider's grid (min + k × step) is within
// the tolerance, one pixel of the narrowest slider (sliderPixels) moves
// less than the tolerance window, and the − and + buttons, which move one
// step, can land on it too. The slider is laid out exactly as the page
// does (buildWidget, withGoal), from the block's own starting values.
func TestCourseGoalsReachableBySlider(t *testing.T) {
	c := loadCourse(t)
	n := 0
	for _, l := range c.Lessons {
		for _, b := range l.Blocks() {
			m, ok := b.(*lessons.Model)
			if !ok {
				continue
			}
			v, err := lessonWidgetView(context.Background(), l, m, store.LessonState{})
			if err != nil {
				t.Fatal(err)
			}
			for _, tg := range m.Goal.Want {
				var in *widgetInput
				for i := range v.Inputs {
					if v.Inputs[i].P.Name == tg.Param {
						in = &v.Inputs[i]
					}
				}
				if in == nil || in.Implied {
					continue // a target on the implied quantity: reached through the others
				}
				n++
				sl := in.Slider
				what := fmt.Sprintf("%s %s: %s goal %g ± %g, slider %g to %g by %g", l.File, m.ID, tg.Param, tg.Value, tg.Tol, sl.Min, sl.Max, sl.Step)
				if tg.Value < sl.Min || tg.Value > sl.Max {
					t.Errorf("%s: the goal is outside the slider", what)
				}
				near := rangePos(sl, tg.Value)
				if math.Abs(near-tg.Value) > tg.Tol+1e-9 {
					t.Errorf("%s: the nearest slider position is %g, outside the tolerance", what, near)
				}
				if perPixel := (sl.Max - sl.Min) / sliderPixels; perPixel > 2*tg.Tol+1e-9 {
					t.Errorf("%s: one pixel moves %g, more than the goal's window of %g", what, perPixel, 2*tg.Tol)
				}
				// From the starting value, the − and + buttons (one step
				// each, from the value as it is) come within the tolerance.
				x := in.Value
				for range 100000 {
					if math.Abs(x-tg.Value) <= tg.Tol+1e-9 {
						break
					}
					dir := 1.0
					if x > tg.Value {
						dir = -1
					}
					x = round12(x + dir*sl.Step)
				}
				if math.Abs(x-tg.Value) > tg.Tol+1e-9 {
					t.Errorf("%s: the nudge buttons from %g step past the goal (reach %g)", what, in.Value, x)
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("checked only %d targets; the course has more", n)
	}
}

// BenchmarkWidgetPage renders each standalone widget page through the
// whole handler: parse and validate the query, compute, draw the plot,
// render templ.
func BenchmarkWidgetPage(b *testing.B) {
	h, _, _ := benchSite(b)
	for _, path := range []string{
		"/widgets/littles-law?arrivals=48&latency_ms=230",
		"/widgets/admission-limit?workers=4&budget_ms=230&service_ms=12",
		"/widgets/two-ceilings?workers=16&cpus=1&spin_ms=2&wait_ms=18",
		"/widgets/queue-curve?servers=4&service_ms=20&arrivals=150",
	} {
		u, _ := url.Parse(path)
		b.Run(strings.TrimPrefix(u.Path, "/widgets/"), func(b *testing.B) {
			req := httptest.NewRequest("GET", path, nil)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}

// BenchmarkAPIModel is GET /api/models/{kind} for Little's law and the
// queue curve, the cheapest and the dearest model.
func BenchmarkAPIModel(b *testing.B) {
	h, _, _ := benchSite(b)
	for _, path := range []string{
		"/api/models/littles-law?arrivals=48&latency_ms=230",
		"/api/models/queue-curve?servers=4&service_ms=20&arrivals=150",
	} {
		u, _ := url.Parse(path)
		b.Run(strings.TrimPrefix(u.Path, "/api/models/"), func(b *testing.B) {
			req := httptest.NewRequest("GET", path, nil)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}

// Without JavaScript, − and + submit the widget's form with
// nudge=param:- or param:+: the server moves that value one slider step
// (the goal's step on a lesson page, where a goal is on it), within range.
func TestWidgetNudgeWithoutScript(t *testing.T) {
	s := newSite(t)
	valueOf := func(body, param string) string {
		ns := find(parse(t, body), byTestID("num-"+param))
		if len(ns) != 1 {
			t.Fatalf("no num-%s", param)
		}
		return must(attr(ns[0], "value"))
	}
	tests := []struct {
		name, path, param, want string
	}{
		// Lesson 1's time in system has a goal of 100 ± 2: its step is 2.
		{"goal step down", littlesLesson + "?widget=littles-model&arrivals=48&latency_ms=230&nudge=latency_ms:-", "latency_ms", "228"},
		// Arrivals has a goal of 48 ± 0.5: the parameter's own step, 1.
		{"goal step up", littlesLesson + "?widget=littles-model&arrivals=48&latency_ms=230&nudge=arrivals:%2B", "arrivals", "49"},
		// No goal on the standalone page: the parameter's step.
		{"standalone", "/widgets/littles-law?arrivals=10&latency_ms=100&nudge=latency_ms:%2B", "latency_ms", "101"},
		// Never past the parameter's range.
		{"at the bottom", "/widgets/littles-law?arrivals=0&latency_ms=100&nudge=arrivals:-", "arrivals", "0"},
	}
	reader := s.readingOn("littles-law") // the lesson's widget is past its first Predict
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.get(reader, tt.path)
			if res.StatusCode != 200 {
				t.Fatalf("status %d", res.StatusCode)
			}
			if got := valueOf(res.body, tt.param); got != tt.want {
				t.Errorf("%s = %s, want %s", tt.param, got, tt.want)
			}
		})
	}
	if res := s.get(nil, "/widgets/littles-law?nudge=latency_ms:sideways"); res.StatusCode != 400 || !strings.Contains(res.body, "want param:- or param:+") {
		t.Errorf("bad nudge: %d", res.StatusCode)
	}
}

// cap-inside's quota widget asks the learner to find the slowest release
// a quota of 5 survives: its hint says the release is not found yet, not
// that it is 250 ms nor which way to move (the other targets, which the
// goal's text states, still say theirs); its slider is not laid out
// around 250; reaching it still reaches the goal; and the share link
// keeps the target one to find.
func TestFindGoalHint(t *testing.T) {
	s := newSite(t)
	const lesson = "/lessons/cap-inside?widget=cap-quota-model"
	reader := s.readingOn("cap-inside") // the widget is past the lesson's Predicts' gates
	block := blockOf(t, s.get(reader, lesson).body, "model-cap-quota-model")
	misses := testIDText(t, block, "widget-goal-misses")
	if misses != "Response time after the release: 200 ms is not yet the one the goal asks you to find." {
		t.Errorf("misses = %q", misses)
	}
	for _, leak := range []string{"250", "bring it up", "bring it down"} {
		if strings.Contains(misses, leak) {
			t.Errorf("the hint %q gives away the value to find (%q)", misses, leak)
		}
	}
	for _, n := range find(parse(t, block), func(n nodeT) bool { return n.Data == "input" && must(attr(n, "type")) == "range" }) {
		if name, _ := attr(n, "name"); name == "release_ms" {
			if _, ok := attr(n, "data-goal"); ok {
				t.Error("the release's slider carries the value to find")
			}
		}
	}
	// Another target of the same goal is stated in its text, and its hint
	// says where to go.
	block = blockOf(t, s.get(reader, lesson+"&arrivals=40").body, "model-cap-quota-model")
	if got := testIDText(t, block, "widget-goal-misses"); !strings.Contains(got, "bring it up to 50 per second") {
		t.Errorf("the arrivals' hint = %q", got)
	}
	block = blockOf(t, s.get(reader, lesson+"&arrivals=50&latency_ms=100&release_ms=250&workers=7&timeout_ms=250").body, "model-cap-quota-model")
	if got := testIDText(t, block, "widget-goal-state"); got != "Goal reached." {
		t.Errorf("at 250 ms the goal state = %q", got)
	}
	share, _ := url.Parse(attrOf(t, block, "widget-share", "href"))
	if g := share.Query().Get("goal"); !strings.Contains(g, "release_ms:250:2:find") {
		t.Errorf("share link's goal = %q, want the release marked to find", g)
	}
	targets, err := parseGoal("quota", share.Query().Get("goal"))
	if err != nil || !slices.ContainsFunc(targets, func(t model.Target) bool { return t.Param == "release_ms" && t.Find }) {
		t.Errorf("the share link's goal reads back as %+v (%v)", targets, err)
	}
}
