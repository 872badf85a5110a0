//go:build browser

package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A run over time watched live on its page: its sample events (one a
// second) reach runs.js, which keeps the run running until its last event
// says done; before, a kind it did not know ended the watch as if the run
// had finished.
func TestBrowserRunOverTime(t *testing.T) {
	lab := buildLabBinary(t)
	srv := start(t, nil, "--data", t.TempDir(), "--lab-command", lab)
	ctx := newBrowser(t)
	doSteps(t, ctx, "open a lesson", chromedp.Navigate(srv.url+"/lessons/saturation"))
	id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch("/api/sweeps", {method: "POST",
		headers: {"Content-Type": "application/json", "Accept": "application/json"},
		body: JSON.stringify({workers: 4, spin_ms: 0, wait_ms: 10, limit: 0, cpus: 1, rates: [20], seconds: 4, over_time: true})})
		.then(r => r.json()).then(m => m.id || JSON.stringify(m))`, chromedp.EvalAwaitPromise))
	if err != nil || len(id) > 40 {
		t.Fatalf("POST /api/sweeps over_time: %q (%v)", id, err)
	}
	status := `document.querySelector('[data-testid="run-status"]')?.dataset.status`
	doSteps(t, ctx, "watch it live",
		chromedp.Navigate(srv.url+"/runs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-page"]`)),
		chromedp.Poll[chromedp.Void](status+` === "running"`, chromedp.WithPollingTimeout(stepTimeout)),
	)
	// Every status the page shows from now on, and whether it still
	// takes the stream (data-live), in order.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		window.seen = [];
		const el = document.querySelector('[data-testid="run-status"]');
		const panel = el.closest("[data-run-panel]");
		const note = () => window.seen.push(el.dataset.status + (panel.dataset.live === "false" ? " (not live)" : ""));
		new MutationObserver(note).observe(el, {attributes: true, childList: true, characterData: true, subtree: true});
		new MutationObserver(note).observe(panel, {attributes: true, attributeFilter: ["data-live"]});
		return true; })()`)); err != nil {
		t.Fatal(err)
	}
	doSteps(t, ctx, "it ends done",
		chromedp.Poll[chromedp.Void](status+` === "done"`, chromedp.WithPollingTimeout(stepTimeout)),
	)
	// The samples came (one a second, the first at 1 s; package runner's
	// TestOverTimeRun shows them in the log) and never ended the watch:
	// every status before done was running, and live.
	seen, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.seen`))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range seen {
		if s != "running" && !(i >= len(seen)-2 && strings.HasPrefix(s, "done")) {
			t.Errorf("the page's status went %q: want running until done (all: %q)", s, seen)
			break
		}
	}
	text := textOf(t, ctx, `[data-testid="run-status"]`)
	if text != "Done: all 1 window measured." {
		t.Errorf("status %q", text)
	}
}

// A learner ticks "Over time (a sample every second)" in a lab block's
// settings and presses Run on a 14 s window: while the window is
// measured, the block's panel shows the time chart, and it grows (more
// seconds drawn: it is redrawn every five to six seconds) before the row
// arrives; when the run is done, the chart has a second for each
// second of the window and its page links the samples' CSV.
func TestBrowserRunOverTimeChartGrows(t *testing.T) {
	lab := buildLabBinary(t)
	srv := start(t, nil, "--data", t.TempDir(), "--lab-command", lab)
	ctx := newBrowser(t)
	slot := `[data-testid="lab-run-slot"]`
	chartSel := slot + ` [data-testid="run-time-chart"]`
	// drawn is how many seconds the block's time chart draws (0: none yet),
	// while no row has arrived.
	drawn := `(() => { const c = document.querySelector('` + chartSel + `');
		const rows = document.querySelectorAll('` + slot + ` [data-testid="run-rows"] tbody tr').length;
		return c && rows === 0 ? Number(c.dataset.samples) : 0; })()`
	doSteps(t, ctx, "run a sweep over time",
		chromedp.Navigate(srv.url+"/lessons/saturation"),
		chromedp.Click(chromedp.CSS(`[data-testid="predict-sat-predict"] [data-testid="predict-skip"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="lab-run"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="lab-sat-sweep"] [data-testid="lab-settings"] summary`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid="run-field-rates"]`), "20"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="run-field-seconds"]`), "14"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="run-field-timeout_ms"]`), "0"),
		chromedp.Click(chromedp.CSS(`[data-testid="run-field-over_time"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="lab-run"]`)),
		chromedp.Poll[chromedp.Void](drawn+` > 0`, chromedp.WithPollingTimeout(stepTimeout)),
	)
	first, err := chromedp.Run(ctx, chromedp.Evaluate[int](drawn))
	if err != nil || first <= 0 || first >= 14 {
		t.Fatalf("the first time chart drew %d seconds (%v): want some of the window's 14 while it runs", first, err)
	}
	screenshot(t, ctx, "run-over-time-live")
	doSteps(t, ctx, "the chart grows before the row",
		chromedp.Poll[chromedp.Void](drawn+` > `+strconv.Itoa(first), chromedp.WithPollingTimeout(stepTimeout)),
	)
	doSteps(t, ctx, "the run ends",
		chromedp.Poll[chromedp.Void](`document.querySelector('`+slot+` [data-testid="run-status"]')?.dataset.status === "done" &&
			Number(document.querySelector('`+chartSel+`')?.dataset.samples) >= 14`, chromedp.WithPollingTimeout(stepTimeout)),
	)
	runID, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+slot+` [data-run-panel]').dataset.runId`))
	if err != nil || runID == "" {
		t.Fatalf("no run id in the panel (%v)", err)
	}
	doSteps(t, ctx, "the run's page",
		chromedp.Navigate(srv.url+"/runs/"+runID),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-time-chart"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-samples-csv"]`)),
	)
}
