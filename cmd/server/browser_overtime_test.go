//go:build browser

package main

import (
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
