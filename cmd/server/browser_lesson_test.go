//go:build browser

package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserLessonFlow walks a learner through the Little's law lesson in
// chromium with JavaScript on: open the index, open the lesson, lock a
// prediction, reveal it, answer a check, reload, and find the progress kept
// on the lesson page and on the index.
func TestBrowserLessonFlow(t *testing.T) {
	srv := start(t, nil, "--data", t.TempDir())
	ctx := newBrowser(t)
	const predict = `[data-testid="predict-littles-double"]`
	const check = `[data-testid="check-littles-size"]`

	steps := []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(srv.url + "/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="lesson-littles-law"] a`)),
		clickToPage(`[data-testid="lesson-littles-law"] a`),
		chromedp.WaitVisible(chromedp.CSS(predict)),
		// Lock in the second option ("It more than doubles").
		chromedp.Click(chromedp.CSS(predict + ` [data-testid="option-b"]`)),
		chromedp.Click(chromedp.CSS(predict + ` [data-testid="predict-lock"]`)),
		chromedp.WaitVisible(chromedp.CSS(predict + ` [data-testid="predict-locked"]`)),
		chromedp.WaitVisible(chromedp.CSS(predict + ` [data-testid="predict-settled"]`)),
		chromedp.Click(chromedp.CSS(predict + ` [data-testid="predict-reveal"]`)),
		chromedp.WaitVisible(chromedp.CSS(predict + ` [data-testid="predict-answer"]`)),
		// Answer the check wrongly first ("2"), which is what counts.
		chromedp.Click(chromedp.CSS(check + ` [data-testid="option-b"]`)),
		chromedp.Click(chromedp.CSS(check + ` [data-testid="check-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(check + ` [data-testid="check-result"]`)),
	}
	doSteps(t, ctx, "lesson flow", steps...)
	if got := textOf(t, ctx, predict+` [data-testid="predict-locked"]`); !strings.Contains(got, "It more than doubles") {
		t.Errorf("locked prediction reads %q, want the chosen option", got)
	}
	if got := textOf(t, ctx, predict+` [data-testid="predict-answer"]`); !strings.Contains(got, "Your prediction was right") {
		t.Errorf("revealed answer reads %q, want it to say the prediction was right", got)
	}
	attrs, err := chromedp.Run(ctx, chromedp.Attributes(chromedp.CSS(check+` [data-testid="check-result"]`)))
	if err != nil {
		t.Fatal(err)
	}
	if attrs["data-correct"] != "false" {
		t.Errorf("check result data-correct = %q after a wrong answer, want false", attrs["data-correct"])
	}
	screenshot(t, ctx, "lesson-answered")

	// Reload: the lock, the reveal and the check result come back from SQLite.
	if err := chromedp.Do(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(predict+` [data-testid="predict-answer"]`)),
		chromedp.WaitVisible(chromedp.CSS(check+` [data-testid="check-result"]`)),
	); err != nil {
		t.Fatalf("after reload: %v", err)
	}
	// The lock cannot be changed: no option inputs are left in the predict block.
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="predict-littles-double"] input[type=radio]').length`))
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("after locking, the predict block still offers %d options", n)
	}

	// The index shows progress on the lesson.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="progress-littles-law"]`)),
	); err != nil {
		t.Fatalf("index progress: %v", err)
	}
	attrs, err = chromedp.Run(ctx, chromedp.Attributes(chromedp.CSS(`[data-testid="progress-littles-law"]`)))
	if err != nil {
		t.Fatal(err)
	}
	if attrs["data-done"] == "" || attrs["data-done"] == "0" {
		t.Errorf("index progress for littles-law: done=%q total=%q, want at least one block done", attrs["data-done"], attrs["data-total"])
	}
	screenshot(t, ctx, "index-progress")
}
