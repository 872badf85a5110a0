//go:build browser

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserLesson7 walks lesson 7 (admission-limit) from its Predict to
// its Check with JavaScript on: lock the prediction, run the limit-on
// preset with short windows (two rates, 1 s each), reveal, write the
// record with that run attached (first leaving the number empty, to see the
// message in place with nothing lost), save it, reload and find it kept,
// download it as Markdown, and answer the check.
func TestBrowserLesson7(t *testing.T) {
	lab := buildLabBinary(t)
	srv := start(t, nil, "--data", t.TempDir(), "--lab-command", lab)
	ctx := newBrowser(t)
	const (
		predict = `[data-testid="predict-limit-predict"]`
		labOn   = `[data-testid="lab-limit-on"]`
		slot    = labOn + ` [data-testid="lab-run-slot"]`
		record  = `[data-testid="record-limit-record"]`
		check   = `[data-testid="check-limit-check-formula"]`
	)

	doSteps(t, ctx, "lesson 7 predict",
		chromedp.Navigate(srv.url+"/lessons/admission-limit"),
		chromedp.WaitVisible(chromedp.CSS(predict)),
		// Lock in option c: delivered answers near the ceiling, half refused.
		chromedp.Click(chromedp.CSS(predict+` [data-testid="option-c"]`)),
		chromedp.Click(chromedp.CSS(predict+` [data-testid="predict-lock"]`)),
		chromedp.WaitVisible(chromedp.CSS(predict+` [data-testid="predict-locked"]`)),
		chromedp.WaitVisible(chromedp.CSS(labOn+` [data-testid="lab-run"]`)),
	)

	// The limit-on preset with short windows: 60 and 100 a second, 1 s each.
	doSteps(t, ctx, "lesson 7 run limit-on",
		chromedp.Click(chromedp.CSS(labOn+` [data-testid="lab-settings"] summary`)),
		chromedp.SetValue(chromedp.CSS(labOn+` [data-testid="run-field-rates"]`), "60, 100"),
		chromedp.SetValue(chromedp.CSS(labOn+` [data-testid="run-field-seconds"]`), "1"),
		// Press Run from the keyboard: a mouse click at the button's
		// coordinates can miss while the page above it is still settling.
		chromedp.Focus(chromedp.CSS(labOn+` [data-testid="lab-run"]`)),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(slot+` [data-testid="run-status"]`)),
	)
	// Waiting for the run may take longer than one step on a busy machine.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := chromedp.Do(wctx, chromedp.Poll[chromedp.Void](`(() => { const s = document.querySelector('`+slot+` [data-testid="run-status"]');
		return s && s.dataset.status === "done" && document.querySelectorAll('`+slot+` [data-testid="run-rows"] tbody tr').length === 2; })()`,
		chromedp.WithPollingTimeout(30*time.Second)))
	cancel()
	if err != nil {
		screenshot(t, ctx, "lesson7-run-failed")
		t.Fatalf("limit-on run did not finish: %v", err)
	}
	screenshot(t, ctx, "lesson7-run-done")

	// The run was a measurement: the answer can be revealed now.
	doSteps(t, ctx, "lesson 7 reveal",
		chromedp.WaitVisible(chromedp.CSS(labOn+` [data-testid="reading"]`)),
		chromedp.WaitVisible(chromedp.CSS(predict+` [data-testid="predict-reveal"]`)),
		chromedp.Click(chromedp.CSS(predict+` [data-testid="predict-reveal"]`)),
		chromedp.WaitVisible(chromedp.CSS(predict+` [data-testid="predict-answer"]`)),
	)
	if got := textOf(t, ctx, predict+` [data-testid="predict-answer"]`); !strings.Contains(got, "Your prediction was right") {
		t.Errorf("revealed answer reads %q", got)
	}

	// The record's list of saved runs refreshes when the run's status
	// changes, without a reload: the new run appears and can be picked.
	doSteps(t, ctx, "lesson 7 run offered in the record",
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('`+record+` [data-testid="record-run"] option:not([value=""])').length === 1`),
	)
	runID, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const o = document.querySelector('`+record+` [data-testid="record-run"] option:not([value=""])'); return o ? o.value : ""; })()`))
	if err != nil || runID == "" {
		t.Fatalf("the record offers no saved run to attach (%v)", err)
	}
	// An option's innerText is empty while the list is closed: read textContent.
	label, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+record+` [data-testid="record-run"] option[value="`+runID+`"]').textContent`))
	if !strings.Contains(label, "60, 100 a second") || !strings.Contains(label, "LIMIT=10") {
		t.Errorf("run choice reads %q, want its config and rates", label)
	}

	fields := map[string]string{
		"setting":     "LIMIT=10 on WORKERS=1, SPIN_MS=2, WAIT_MS=18, CPUS=1",
		"criterion":   "p99 of delivered answers within 230 ms; no caller gives up",
		"measurement": "limit-on, seed 7, two 1 s windows at 60 and 100 a second, in the browser test",
		"number":      "1 × (230 − 21) ÷ 21 = 9.95, rounded to 10",
		"reverse":     "service time at rest moving by more than a millisecond",
	}
	// First without the number: the message shows in place and the other
	// fields keep what was typed.
	var fill []chromedp.Action[chromedp.Void]
	for _, name := range []string{"setting", "criterion", "measurement", "reverse"} {
		fill = append(fill, chromedp.SendKeys(chromedp.CSS(record+` [data-testid="record-`+name+`"]`), fields[name]))
	}
	fill = append(fill,
		chromedp.SetValue(chromedp.CSS(record+` [data-testid="record-run"]`), runID),
		chromedp.Click(chromedp.CSS(record+` [data-testid="record-save"]`)),
		chromedp.WaitVisible(chromedp.CSS(record+` [data-testid="record-error-number"]`)),
	)
	doSteps(t, ctx, "lesson 7 record refused", fill...)
	if got, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(record+` [data-testid="record-measurement"]`))); got != fields["measurement"] {
		t.Errorf("after the refusal, measurement holds %q, want what was typed", got)
	}
	screenshot(t, ctx, "lesson7-record-refused")

	doSteps(t, ctx, "lesson 7 record saved",
		chromedp.SendKeys(chromedp.CSS(record+` [data-testid="record-number"]`), fields["number"]),
		chromedp.Click(chromedp.CSS(record+` [data-testid="record-save"]`)),
		chromedp.WaitVisible(chromedp.CSS(record+` [data-testid="record-saved"]`)),
	)
	screenshot(t, ctx, "lesson7-record-saved")

	// Reload: the record and the attached run come back from SQLite.
	doSteps(t, ctx, "lesson 7 record kept",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(record+` [data-testid="record-saved"]`)),
	)
	// The block alone, for people to look at (not compared).
	if png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(record))); err == nil {
		os.WriteFile(filepath.Join("..", "..", "screenshots", "lesson7-record-block.png"), png, 0o644)
	}
	for name, want := range fields {
		got, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(record+` [data-testid="record-`+name+`"]`)))
		if err != nil || got != want {
			t.Errorf("after reload %s = %q (%v), want %q", name, got, err, want)
		}
	}
	if got, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(record+` [data-testid="record-run"]`))); got != runID {
		t.Errorf("after reload the attached run is %q, want %q", got, runID)
	}

	// Download the Markdown the way the link does.
	md, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(document.querySelector('`+record+` [data-testid="record-download"]').href)
		.then(r => r.text())`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("markdown download: %v", err)
	}
	for _, want := range []string{
		"## Setting\n\n" + fields["setting"],
		"## Criterion\n\n" + fields["criterion"],
		"## Measurement\n\n" + fields["measurement"],
		"## Number\n\n" + fields["number"],
		"## What would reverse it\n\n" + fields["reverse"],
		"/runs/" + runID + ")",
		"| offered | sent | ok | refused |",
		"\n| 60 | ",
		"\n| 100 | ",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}

	// The check at the end: option b ("20") is right.
	doSteps(t, ctx, "lesson 7 check",
		chromedp.Click(chromedp.CSS(check+` [data-testid="option-b"]`)),
		chromedp.Click(chromedp.CSS(check+` [data-testid="check-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(check+` [data-testid="check-result"]`)),
	)
	attrs, err := chromedp.Run(ctx, chromedp.Attributes(chromedp.CSS(check+` [data-testid="check-result"]`)))
	if err != nil || attrs["data-correct"] != "true" {
		t.Errorf("check result data-correct = %q (%v), want true", attrs["data-correct"], err)
	}
	screenshot(t, ctx, "lesson7-checked")
}
