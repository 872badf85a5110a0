//go:build browser

package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// buildLabBinary builds cmd/lab, whose hidden "lab-child" mode the server
// runs for each sweep (run in a test cannot re-execute itself: its binary
// is the test binary).
func buildLabBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lab")
	if out, err := exec.Command("go", "build", "-o", bin, "capacitylab/cmd/lab").CombinedOutput(); err != nil {
		t.Fatalf("building cmd/lab: %v\n%s", err, out)
	}
	return bin
}

// A learner skips the saturation lesson's prediction and presses Run on a
// small preset (two rates, two seconds): the progress bar moves, both rows
// appear and are announced, the chart draws their points, and the saved
// run opens on its own page with its records downloadable. Back on the
// lesson, the block shows that run again. Another learner, once past the
// prediction, is offered it as a recorded run and watches it replayed at
// its real pace.
func TestBrowserRunSweep(t *testing.T) {
	lab := buildLabBinary(t)
	srv := start(t, nil, "--data", t.TempDir(), "--lab-command", lab)
	ctx := newBrowser(t)
	slot := `[data-testid="lab-run-slot"]`
	doSteps(t, ctx, "run a sweep",
		chromedp.Navigate(srv.url+"/lessons/saturation"),
		chromedp.Click(chromedp.CSS(`[data-testid="predict-sat-predict"] [data-testid="predict-skip"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="lab-run"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="lab-sat-sweep"] [data-testid="lab-settings"] summary`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid="run-field-rates"]`), "20, 40"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="run-field-seconds"]`), "2"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="run-field-timeout_ms"]`), "0"),
		chromedp.Click(chromedp.CSS(`[data-testid="lab-run"]`)),
		// The window's progress bar moves while the first window runs.
		chromedp.Poll[chromedp.Void](`(() => { const p = document.querySelector('`+slot+` [data-testid="window-progress"]');
			return p && p.value > 0 && p.value < 1; })()`, chromedp.WithPollingInterval(20*time.Millisecond)),
	)
	screenshot(t, ctx, "run-in-progress")
	doSteps(t, ctx, "rows arrive",
		// Both rows, the chart's two measured points, and the status done.
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('`+slot+` [data-testid="run-rows"] tbody tr').length === 2 &&
			document.querySelectorAll('`+slot+` .chart-plot .pt.q-ok').length === 2 &&
			document.querySelector('`+slot+` [data-testid="run-status"]')?.dataset.status === "done"`,
			chromedp.WithPollingTimeout(stepTimeout)),
	)
	// The announcer is for screen readers only (the status line shows
	// the same words): read its text, not what is painted.
	announced, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+slot+` [data-testid="run-announce"]').textContent`))
	status := textOf(t, ctx, slot+` [data-testid="run-status"]`)
	if status != "Done: all 2 windows measured." {
		t.Errorf("status %q", status)
	}
	if !strings.HasPrefix(announced, "Done: all 2 windows") {
		t.Errorf("live region says %q", announced)
	}
	screenshot(t, ctx, "run-done")

	// The saved run, on its own page.
	runID, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+slot+` [data-run-panel]').dataset.runId`))
	if err != nil || runID == "" {
		t.Fatalf("no run id in the panel (%v)", err)
	}
	doSteps(t, ctx, "open the saved run",
		chromedp.Navigate(srv.url+"/runs/"+runID),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-page"]`)),
	)
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="run-rows"] tbody tr').length`))
	if err != nil || rows != 2 {
		t.Errorf("saved run page shows %d rows (%v), want 2", rows, err)
	}
	// Download its records as the link does, and count them.
	lines, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`fetch(document.querySelector('[data-testid="run-records"]').href)
		.then(r => r.text()).then(t => t.trim().split("\n").slice(0, 2))`, chromedp.EvalAwaitPromise))
	if err != nil || len(lines) != 2 || !strings.HasPrefix(lines[0], "window,seq,intended_ms") || !strings.HasPrefix(lines[1], "0,0,") {
		t.Errorf("records download starts %q (%v), want the header and window 0's first record", lines, err)
	}
	screenshot(t, ctx, "run-saved")

	// Back on the lesson, the block shows the learner's run again, drawn
	// by the server.
	doSteps(t, ctx, "the run kept in the block",
		chromedp.Navigate(srv.url+"/lessons/saturation"),
		chromedp.WaitVisible(chromedp.CSS(slot+` [data-run-panel]`)),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('`+slot+` [data-testid="run-rows"] tbody tr').length === 2`),
	)

	// Another learner, past the prediction, replays it at its real pace.
	other := newBrowser(t)
	replay := `[data-testid="lab-replay-slot"]`
	doSteps(t, other, "replay the recorded run",
		chromedp.Navigate(srv.url+"/lessons/saturation"),
		chromedp.Click(chromedp.CSS(`[data-testid="predict-sat-predict"] [data-testid="predict-skip"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="lab-replay"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="lab-replay"]`)),
		chromedp.Poll[chromedp.Void](`(() => { const s = document.querySelector('`+replay+` [data-testid="run-status"]');
			return s !== null && s.dataset.status === "replaying" && document.querySelectorAll('`+replay+` [data-testid="run-rows"] tbody tr').length < 2; })()`),
		chromedp.Poll[chromedp.Void](`(() => { const s = document.querySelector('`+replay+` [data-testid="run-status"]');
			return s !== null && s.dataset.status === "done" && document.querySelectorAll('`+replay+` [data-testid="run-rows"] tbody tr').length === 2; })()`, chromedp.WithPollingTimeout(stepTimeout)),
	)
	screenshot(t, other, "run-replayed")
}
