//go:build browser

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Retries turn a blip into an outage asks how many ok answers a second
// callers who retry get after the release is rolled back. A learner locks
// "Close to none" and opens the recorded results: the reading under the
// time table is ok a second from 12 s to 30 s, 0, beside the option's 0
// to 25; the time chart draws the attempts the callers sent. Then the
// learner runs the preset with 14 s windows against a real lab: the
// reading after their run is the same quantity over 12 s to 14 s, and
// their run's chart draws its attempts too.
func TestBrowserRetryStorm(t *testing.T) {
	lab := buildLabBinary(t)
	srv := start(t, nil, "--data", t.TempDir(), "--lab-command", lab)
	ctx := newBrowserFor(t, 3*time.Minute)
	const predict = `[data-testid="predict-storm-predict"]`
	const timeTable = `[data-testid="table-storm-retries-time"]`
	doSteps(t, ctx, "lock and open the recorded results",
		chromedp.Navigate(srv.url+"/lessons/retry-storm"),
		chromedp.Click(chromedp.CSS(predict+` [data-testid="option-c"]`)),
		chromedp.Click(chromedp.CSS(predict+` [data-testid="predict-lock"]`)),
		chromedp.WaitVisible(chromedp.CSS(predict+` [data-testid="predict-locked"]`)),
		clickStable(timeTable+` [data-testid="table-open"]`),
		chromedp.WaitVisible(chromedp.CSS(timeTable+` [data-testid="reading"]`)),
	)
	reading := textOf(t, ctx, timeTable+` [data-testid="reading"]`)
	for _, want := range []string{"You predicted Close to none, for as long as the run lasts (0 to 25 a second)", "from 12 s to 30 s", "ok 0 a second"} {
		if !strings.Contains(reading, want) {
			t.Errorf("the recorded reading %q lacks %q", reading, want)
		}
	}
	if legend := textOf(t, ctx, timeTable); !strings.Contains(legend, "attempts sent") {
		t.Errorf("the recorded run's time chart does not draw the attempts sent")
	}
	screenshot(t, ctx, "retry-storm-recorded")

	const block = `[data-testid="lab-storm-retries"]`
	doStepsWithin(t, ctx, "run it with 14 s windows", runStepTimeout,
		chromedp.Click(chromedp.CSS(block+` [data-testid="lab-settings"] summary`)),
		chromedp.WaitVisible(chromedp.CSS(block+` [data-testid="run-field-seconds"]`)),
		chromedp.SetValue(chromedp.CSS(block+` [data-testid="run-field-seconds"]`), "14"),
		clickStable(block+` [data-testid="lab-run"]`),
		chromedp.WaitVisible(chromedp.CSS(block+` [data-lab-after] [data-testid="reading"]`)),
	)
	reading = textOf(t, ctx, block+` [data-lab-after] [data-testid="reading"]`)
	for _, want := range []string{"(0 to 25 a second)", "Measured in your run", "from 12 s to 14 s"} {
		if !strings.Contains(reading, want) {
			t.Errorf("the reading of the learner's run %q lacks %q", reading, want)
		}
	}
	if panel := textOf(t, ctx, block); !strings.Contains(panel, "attempts sent") {
		t.Errorf("the learner's run's time chart does not draw the attempts sent")
	}
	screenshot(t, ctx, "retry-storm-own-run")
}
