//go:build browser

package main

import (
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

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
