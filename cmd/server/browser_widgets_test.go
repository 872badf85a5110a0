//go:build browser

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The Little's law widget on the littles-law lesson: its goal is 48
// arrivals a second (±0.5) with 100 ms in the system (±2); it starts at
// 48/s and 230 ms.
const (
	widgetLesson = "/lessons/littles-law"
	widgetSel    = "#littles-model"
)

// pollTrue waits until the JavaScript expression is true.
func pollTrue(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// widgetShot saves a PNG of the widget alone under screenshots/NAME.png.
func widgetShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(widgetSel)))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join("..", "..", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// keys presses each key in turn on the focused element.
func keys(t *testing.T, ctx context.Context, ks ...string) {
	t.Helper()
	for _, k := range ks {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(k)); err != nil {
			t.Fatalf("key %q: %v", k, err)
		}
	}
}

// TestBrowserWidgetKeyboardGoal: a learner reaches the goal of the Little's
// law widget with the keyboard alone, sees it reached and recorded, and
// after a reload finds it in the lesson and in the course index.
func TestBrowserWidgetKeyboardGoal(t *testing.T) {
	srv := start(t, nil, "--data", t.TempDir())
	ctx := newBrowser(t)
	// The widget is past the lesson's first Predict: skip it first.
	if err := chromedp.Do(ctx, skipPredicts(srv.url, "littles-law")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+widgetLesson)); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "widgets.js to take over", `document.querySelector("`+widgetSel+`").dataset.live === "true"`)
	if got := textOf(t, ctx, widgetSel+` [data-goal-state]`); !strings.Contains(got, "Not there yet") {
		t.Fatalf("goal state at the start = %q", got)
	}

	// The time-in-system slider, moved with the arrow keys, carries the
	// number input and the implied value with it.
	rangeSel := widgetSel + "-latency_ms-r"
	numSel := widgetSel + "-latency_ms-n"
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(rangeSel))); err != nil {
		t.Fatal(err)
	}
	// The goal (100 ± 2 ms) sets the slider's step: 2 ms a press.
	keys(t, ctx, kb.ArrowLeft, kb.ArrowLeft, kb.ArrowLeft, kb.ArrowLeft, kb.ArrowLeft)
	if v, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(numSel))); err != nil || v != "220" {
		t.Errorf("number input after five left arrows = %q (%v), want 220", v, err)
	}
	if got := textOf(t, ctx, widgetSel+"-inflight-o"); got != "10.56" {
		t.Errorf("in flight at 48/s and 220 ms = %q, want 10.56", got)
	}

	// Shift+Tab goes back past + and − to the number input, which selects
	// its text; typing 100 replaces it.
	for range 3 {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift))); err != nil {
			t.Fatal(err)
		}
	}
	pollTrue(t, ctx, "focus on the number input", `document.activeElement && document.activeElement.id === "`+strings.TrimPrefix(numSel, "#")+`"`)
	if err := chromedp.Do(ctx, chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)), chromedp.KeyEvent("100")); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "the goal to be reached", `document.querySelector("`+widgetSel+` [data-goal-state]").textContent.trim() === "Goal reached."`)
	pollTrue(t, ctx, "the goal to be saved", `!document.querySelector("`+widgetSel+` [data-goal-recorded]").hidden`)
	if got := textOf(t, ctx, widgetSel+" [data-sentence]"); !strings.Contains(got, "4.8 requests are inside") {
		t.Errorf("sentence = %q, want 4.8 inside", got)
	}
	if got := textOf(t, ctx, widgetSel+" [data-goal-found]"); !strings.Contains(got, "4.8 requests are inside") {
		t.Errorf("found = %q", got)
	}
	if v, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(rangeSel))); err != nil || v != "100" {
		t.Errorf("slider after typing = %q (%v), want 100", v, err)
	}
	screenshot(t, ctx, "widget-keyboard-goal")
	widgetShot(t, ctx, "widget-keyboard-goal-widget")

	// After a reload the lesson shows the goal as in the learner's progress.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+widgetLesson)); err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, ctx, widgetSel+" [data-goal-recorded]"); !strings.Contains(got, "In your progress") {
		t.Errorf("after reload the goal is not shown as recorded: %q", got)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/")); err != nil {
		t.Fatal(err)
	}
	done, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`[data-testid="progress-littles-law"]`), "data-done"))
	if err != nil || !done.Exists || done.Value == "0" {
		t.Errorf("index progress for littles-law: done=%+v (%v), want at least 1", done, err)
	}
	screenshot(t, ctx, "widget-keyboard-goal-index")
	// The progress page counts it among the learner's goals.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/progress")); err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, ctx, "main"); !strings.Contains(got, "1 goal,") {
		t.Errorf("progress page does not count the goal:\n%.600s", got)
	}
}

// TestBrowserWidgetWithoutJavaScript: with scripts off, the same widget
// is a GET form; typing the goal's values and pressing Enter reloads the
// lesson with the server's answer, and the goal is recorded.
func TestBrowserWidgetWithoutJavaScript(t *testing.T) {
	srv := start(t, nil, "--data", t.TempDir())
	ctx := newBrowser(t)
	// The widget is past the lesson's first Predict: skip it first.
	if err := chromedp.Do(ctx, skipPredicts(srv.url, "littles-law")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+widgetLesson)); err != nil {
		t.Fatal(err)
	}
	// No script ran: the Recompute button is still there.
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(widgetSel+` [data-recompute]`))); err != nil {
		t.Fatal(err)
	}
	live, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(widgetSel), "data-live"))
	if err != nil || live.Exists {
		t.Fatalf("widgets.js ran with scripts disabled (data-live %+v, %v)", live, err)
	}
	numSel := widgetSel + "-latency_ms-n"
	if err := chromedp.Do(ctx,
		chromedp.Focus(chromedp.CSS(numSel)),
		chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.KeyEvent("100"),
	); err != nil {
		t.Fatal(err)
	}
	// Typing changes nothing until the form is sent.
	if got := textOf(t, ctx, widgetSel+"-inflight-o"); got != "11.04" {
		t.Errorf("in flight before sending = %q, want the server's 11.04", got)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(widgetSel+` .w-goal.reached`))); err != nil {
		t.Fatalf("the reloaded page does not show the goal reached: %v", err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.Contains(loc, "widget=littles-model") || !strings.Contains(loc, "latency_ms=100") {
		t.Errorf("location %q (%v): want the GET form's query", loc, err)
	}
	if got := textOf(t, ctx, widgetSel+"-inflight-o"); got != "4.8" {
		t.Errorf("in flight after sending = %q, want 4.8", got)
	}
	if got := textOf(t, ctx, widgetSel+" [data-goal-recorded]"); !strings.Contains(got, "In your progress") {
		t.Errorf("recorded = %q", got)
	}
	screenshot(t, ctx, "widget-no-javascript")
	widgetShot(t, ctx, "widget-no-javascript-widget")
}

// typeInto selects the number input's text and types v over it.
func typeInto(t *testing.T, ctx context.Context, sel, v string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Focus(chromedp.CSS(sel)),
		chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.KeyEvent(v),
	); err != nil {
		t.Fatalf("typing %q into %s: %v", v, sel, err)
	}
}

// TestBrowserWidgetStandalone drives the standalone pages' scripts: the
// queue curve says "no steady state" past capacity and its plot is fetched
// again; the binding ceiling moves when workers are added; Little's law
// can imply another quantity.
func TestBrowserWidgetStandalone(t *testing.T) {
	srv := start(t, nil, "--data", t.TempDir())
	ctx := newBrowser(t)

	// Queue curve: M/M/1 of 20 ms (capacity 50/s) at 40/s, then 60/s.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/widgets/queue-curve?servers=1&service_ms=20&arrivals=40")); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "widgets.js", `document.querySelector("[data-widget-root]").dataset.live === "true"`)
	if got := textOf(t, ctx, `[data-testid="q-utilisation"]`); got != "80" {
		t.Errorf("utilisation at 40/s = %q%%, want 80", got)
	}
	typeInto(t, ctx, "#w-queue-curve-arrivals-n", "60")
	pollTrue(t, ctx, "the no-steady-state note", `!document.querySelector('[data-testid="widget-unstable"]').hidden`)
	if got := textOf(t, ctx, "[data-sentence]"); !strings.Contains(got, "no steady state") {
		t.Errorf("sentence at 60/s = %q", got)
	}
	pollTrue(t, ctx, "the plot to be redrawn for 60/s", `document.querySelector("[data-plot] svg.chart-plot").textContent.includes("60/s is beyond capacity")`)
	screenshot(t, ctx, "widget-queue-curve-overloaded")

	// Two ceilings: 1 worker of 2 + 18 ms binds at 50/s; 16 workers make
	// the processor (500/s) bind instead.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/widgets/two-ceilings?workers=1&cpus=1&spin_ms=2&wait_ms=18")); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "widgets.js", `document.querySelector("[data-widget-root]").dataset.live === "true"`)
	typeInto(t, ctx, "#w-two-ceilings-workers-n", "16")
	pollTrue(t, ctx, "the processor ceiling to bind", `document.querySelector('[data-testid="ceiling-processor"]').classList.contains("binds") && !document.querySelector('[data-testid="ceiling-workers"]').classList.contains("binds")`)
	pollTrue(t, ctx, "the plot to be redrawn", `document.querySelector("[data-plot] svg.chart-plot .tc-processor").classList.contains("binds")`)
	screenshot(t, ctx, "widget-two-ceilings")

	// Little's law: choose "Arrival rate" as the implied quantity by
	// keyboard (arrow keys move between radios), then 4 in flight at 21 ms
	// sustain about 190 a second.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/widgets/littles-law?arrivals=48&latency_ms=21")); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "widgets.js", `document.querySelector("[data-widget-root]").dataset.live === "true"`)
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(`[data-testid="solve-inflight"]`))); err != nil {
		t.Fatal(err)
	}
	keys(t, ctx, kb.ArrowRight)
	pollTrue(t, ctx, "arrivals to be implied", `document.querySelector('[data-testid="solve-arrivals"]').checked && document.querySelector("#w-littles-law-arrivals-n").disabled && !document.querySelector("#w-littles-law-inflight-n").disabled`)
	typeInto(t, ctx, "#w-littles-law-inflight-n", "4")
	pollTrue(t, ctx, "about 190 a second", `document.querySelector("[data-sentence]").textContent.includes("sustain about 190 requests a second")`)
	share, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("[data-share]"), "href"))
	if err != nil || !strings.Contains(share.Value, "solve=arrivals") || !strings.Contains(share.Value, "inflight=4") {
		t.Errorf("share link %q (%v) does not follow the controls", share.Value, err)
	}
	screenshot(t, ctx, "widget-littles-law-standalone")
}

// TestBrowserWidgetQuotaAndAIMD drives the two widgets whose formulas are
// in modellimits.js, which widgets.js imports only on a page with one:
// the quota's figures and steps follow a later release, and the AIMD
// limit's share of the new capacity, its plot and its goal follow a
// gentler cut.
func TestBrowserWidgetQuotaAndAIMD(t *testing.T) {
	srv := start(t, nil, "--data", t.TempDir())
	ctx := newBrowser(t)

	// Quota: 50 a second at 100 ms is N = 5; a release to 250 ms holds the
	// client to 5 ÷ 0.25 s = 20 a second.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/widgets/quota?arrivals=50&latency_ms=100&release_ms=200&workers=7&timeout_ms=250")); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "widgets.js", `document.querySelector("[data-widget-root]").dataset.live === "true"`)
	typeInto(t, ctx, "#w-quota-release_ms-n", "250")
	pollTrue(t, ctx, "20 a second with the quota", `document.querySelector('[data-testid="q-with_quota_after"]').textContent === "20"`)
	if got := textOf(t, ctx, `[data-testid="widget-steps"]`); !strings.Contains(got, "min(50, 20, 28) = 20 a second") {
		t.Errorf("steps after the release to 250 ms = %q", got)
	}
	if got := textOf(t, ctx, `[data-testid="q-late_after_s"]`); got != "0" {
		t.Errorf("late after = %q, want 0 (250 ms of work meets the 250 ms timeout)", got)
	}
	pollTrue(t, ctx, "the plot to be redrawn", `document.querySelector("[data-plot] figure").textContent.includes("none in time")`)
	screenshot(t, ctx, "widget-quota")

	// AIMD: the goal wants 90 to 100% of the new capacity; b = 0.5 lets in
	// 79.19%, b = 0.9 98.21%.
	goal := "&goal=delivered_pct:95:5"
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/widgets/aimd?backoff=0.5"+goal)); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "widgets.js", `document.querySelector("[data-widget-root]").dataset.live === "true"`)
	if got := textOf(t, ctx, `[data-testid="q-delivered_pct"]`); got != "79.19" {
		t.Errorf("share at b = 0.5 = %q%%, want 79.19", got)
	}
	typeInto(t, ctx, "#w-aimd-backoff-n", "0.9")
	pollTrue(t, ctx, "98.21% at b = 0.9", `document.querySelector('[data-testid="q-delivered_pct"]').textContent === "98.21"`)
	pollTrue(t, ctx, "the goal reached", `document.querySelector('[data-testid="widget-goal-state"]').textContent.includes("Goal reached")`)
	pollTrue(t, ctx, "the plot to be redrawn", `document.querySelector("[data-plot] figure").textContent.includes("98.21% of the new capacity let in")`)
	screenshot(t, ctx, "widget-aimd")
}

// TestBrowserWidgetRetryAndLateScaling drives the retry and late-scaling
// widgets on the fixture lesson (their formulas are in modellimits.js,
// which widgets.js imports only on a page with one): a retry budget of 0.1
// brings the load from 150% of capacity to 88% and the over-capacity note
// goes; a lag of 6 s instead of 60 brings the longest wait to the 1 s
// timeout, so nobody waits past it. Each reaches its block's goal, which
// is saved, and each plot is drawn again.
func TestBrowserWidgetRetryAndLateScaling(t *testing.T) {
	srv := start(t, nil, "--data", t.TempDir())
	ctx := newBrowser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/lessons/sample")); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "widgets.js", `document.querySelector("#sample-retry").dataset.live === "true" && document.querySelector("#sample-late").dataset.live === "true"`)
	out := func(block, name string) string { return textOf(t, ctx, "#"+block+` [data-testid="q-`+name+`"]`) }
	goal := func(block string) string {
		return `document.querySelector('#` + block + ` [data-testid="widget-goal-state"]').textContent.includes("Goal reached") && ` +
			`!document.querySelector('#` + block + ` [data-testid="widget-goal-recorded"]').hidden`
	}

	// Retries: half the attempts failing, 3 retries, 80% of capacity in
	// first attempts: 1.875 attempts, 150%.
	if got, load := out("sample-retry", "attempts"), out("sample-retry", "load_pct"); got != "1.88" || load != "150" {
		t.Errorf("attempts %q, load %q%%: want 1.88 and 150", got, load)
	}
	pollTrue(t, ctx, "the over-capacity note", `!document.querySelector('#sample-retry [data-testid="widget-over"]').hidden`)
	typeInto(t, ctx, "#sample-retry-budget-n", "0.1")
	pollTrue(t, ctx, "1.1 attempts, 88% of capacity", `document.querySelector('#sample-retry [data-testid="q-attempts"]').textContent === "1.1" && `+
		`document.querySelector('#sample-retry [data-testid="q-load_pct"]').textContent === "88"`)
	pollTrue(t, ctx, "the note gone", `document.querySelector('#sample-retry [data-testid="widget-over"]').hidden`)
	if got := textOf(t, ctx, `#sample-retry [data-sentence]`); !strings.Contains(got, "the retry budget of 0.1 holds it to 1.1") || !strings.Contains(got, "within its capacity") {
		t.Errorf("sentence with the budget = %q", got)
	}
	pollTrue(t, ctx, "the retry goal reached and saved", goal("sample-retry"))
	pollTrue(t, ctx, "the retry plot redrawn", `document.querySelector("#sample-retry [data-plot] figure").textContent.includes("with a budget of 0.1")`)

	// Late capacity: 120 a second against 100, 150 after 60 s: the
	// longest wait is 10 s; after 6 s it is 20 × 6 ÷ 120 = 1 s, no longer
	// than the timeout.
	if got, late := out("sample-late", "worst_wait_ms"), out("sample-late", "late_s"); got != "10" || late != "90" {
		t.Errorf("longest wait %q s, late for %q s: want 10 and 90", got, late)
	}
	typeInto(t, ctx, "#sample-late-lag_s-n", "6")
	pollTrue(t, ctx, "a 1 s longest wait, nobody late", `document.querySelector('#sample-late [data-testid="q-worst_wait_ms"]').textContent === "1" && `+
		`document.querySelector('#sample-late [data-testid="q-late_s"]').textContent === "0"`)
	if got := textOf(t, ctx, `#sample-late [data-sentence]`); !strings.Contains(got, "a backlog of 120 requests") || !strings.Contains(got, "No wait passes the 1 s timeout") {
		t.Errorf("sentence after a lag of 6 s = %q", got)
	}
	pollTrue(t, ctx, "the late-scaling goal reached and saved", goal("sample-late"))
	pollTrue(t, ctx, "the late-scaling plot redrawn", `document.querySelector("#sample-late [data-plot] figure").textContent.includes("lands at 6 s")`)
	for _, w := range []struct{ sel, name string }{{"#sample-retry", "widget-retry-amplification"}, {"#sample-late", "widget-late-scaling"}} {
		png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(w.sel)))
		if err != nil {
			t.Fatalf("screenshot %s: %v", w.name, err)
		}
		keepShot(t, w.name, png)
	}
}
