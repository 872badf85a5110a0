//go:build browser

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowserLessonFlow walks a learner through the Little's law lesson in
// chromium with JavaScript on: open the index, open the lesson, lock a
// prediction, open the recorded results, reveal it, answer a check,
// reload, and find the progress kept on the lesson page and on the index.
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
		// Reveal waits for a measurement: open the recorded results.
		chromedp.WaitVisible(chromedp.CSS(predict + ` [data-testid="predict-reveal-later"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="table-littles-sweep-result"] [data-testid="table-open"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="table-littles-sweep-result"] [data-testid="reading"]`)),
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

// TestBrowserLearnerWalk walks a learner through lesson 1 as the lesson
// means it, with a real short run: before predicting, the measurement is
// folded (no Run, no numbers, saying why); lock the prediction; Run (two
// windows of 1 s at 20 and 40 a second, the rows the Predict reads); watch
// it queue, run with Cancel offered and Run off, and finish; find the
// prediction beside what was measured, with the next step; reveal (allowed
// now); answer a check; then reach the model's goal by the slider, moved
// by the keyboard and by dragging, finished with the − button.
func TestBrowserLearnerWalk(t *testing.T) {
	lab := buildLabBinary(t)
	srv := start(t, nil, "--data", t.TempDir(), "--lab-command", lab)
	ctx := newBrowser(t)
	const (
		predict = `[data-testid="predict-littles-double"]`
		block   = `[data-testid="lab-littles-sweep"]`
		table   = `[data-testid="table-littles-sweep-result"]`
		check   = `[data-testid="check-littles-size"]`
		model   = `[data-testid="model-littles-model"]`
	)
	count := func(sel string) int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+sel+`').length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	doSteps(t, ctx, "open the lesson", chromedp.Navigate(srv.url+"/lessons/littles-law"), chromedp.WaitVisible(chromedp.CSS(predict)))
	// Folded: the lab says why and links to the Predict; nothing measured shows.
	if got := textOf(t, ctx, block+` [data-testid="lab-folded"]`); !strings.Contains(got, "Lock in or skip your prediction above") {
		t.Errorf("folded lab says %q", got)
	}
	if n := count(block + ` [data-testid="lab-run"], ` + block + ` [data-run-panel], ` + table + ` td, [data-testid="lab-replay"]`); n != 0 {
		t.Errorf("before predicting, %d measured things or Run show", n)
	}
	// The table and the rest of the lesson after the lab are not on the
	// page yet: a note stands for them.
	if n := count(table); n != 0 {
		t.Errorf("before predicting, the recorded table is on the page")
	}
	if got := textOf(t, ctx, `[data-testid="lesson-gate"]`); !strings.Contains(got, "Lock it in or skip it to read on") || !strings.Contains(got, "Reading it backwards") {
		t.Errorf("the gate's note says %q, want how to read on and the sections to come", got)
	}
	screenshot(t, ctx, "walk-1-before-predicting")

	doSteps(t, ctx, "lock the prediction",
		chromedp.Click(chromedp.CSS(predict+` [data-testid="option-b"]`)),
		chromedp.Click(chromedp.CSS(predict+` [data-testid="predict-lock"]`)),
		chromedp.WaitVisible(chromedp.CSS(predict+` [data-testid="predict-locked"]`)),
		// The lab and the table unfold in place, without a reload.
		chromedp.WaitVisible(chromedp.CSS(block+` [data-testid="lab-run"]`)),
		chromedp.WaitVisible(chromedp.CSS(table+` [data-testid="table-open"]`)),
	)
	if count(predict+` [data-testid="predict-reveal"]`) != 0 {
		t.Error("Reveal is offered before any measurement was seen")
	}
	screenshot(t, ctx, "walk-2-locked")

	// A real run, short: two 1 s windows at the two rates the Predict reads.
	doSteps(t, ctx, "run",
		chromedp.Click(chromedp.CSS(block+` [data-testid="lab-settings"] summary`)),
		chromedp.WaitVisible(chromedp.CSS(block+` [data-testid="run-field-rates"]`)),
		chromedp.SetValue(chromedp.CSS(block+` [data-testid="run-field-rates"]`), "20, 40"),
		chromedp.SetValue(chromedp.CSS(block+` [data-testid="run-field-seconds"]`), "1"),
		chromedp.Focus(chromedp.CSS(block+` [data-testid="lab-run"]`)),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(block+` [data-testid="run-status"]`)),
		chromedp.WaitVisible(chromedp.CSS(block+` [data-testid="lab-cancel"]`)),
	)
	// While it goes: Run is off, Cancel on, one status line, no leftover
	// "Queued as" message.
	going, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('`+block+` [data-testid="lab-run"]').disabled &&
		!document.querySelector('`+block+` [data-testid="lab-cancel"]').hidden`))
	if err != nil || !going {
		t.Errorf("while the run goes, Run is not off or Cancel not offered (%v)", err)
	}
	screenshot(t, ctx, "walk-3-running")
	wctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	err = chromedp.Do(wctx, chromedp.Poll[chromedp.Void](`(() => { const s = document.querySelector('`+block+` [data-testid="run-status"]');
		return s && s.dataset.status === "done" && document.querySelector('`+block+` [data-testid="reading"]') !== null; })()`,
		chromedp.WithPollingTimeout(40*time.Second)))
	cancel()
	if err != nil {
		screenshot(t, ctx, "walk-run-failed")
		t.Fatalf("the run did not finish with the prediction beside it: %v", err)
	}
	screenshot(t, ctx, "walk-4-done")
	status := textOf(t, ctx, block+` [data-testid="run-status"]`)
	if status != "Done: all 2 windows measured." {
		t.Errorf("status line %q", status)
	}
	if msg := textOf(t, ctx, block+` [data-testid="lab-run-message"]`); msg != "" {
		t.Errorf("the message line still says %q after the run", msg)
	}
	// Done shows once (the screen reader's announcer says it too, unseen).
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const c = document.querySelector('`+block+`').cloneNode(true);
		c.querySelectorAll('.visually-hidden').forEach(e => e.remove()); return c.textContent; })()`))
	if n := strings.Count(shown, "Done"); err != nil || n != 1 {
		t.Errorf("the lab block shows Done %d times (%v)", n, err)
	}
	// The prediction beside the measurement, with the rows and columns the
	// Predict names, a link back, and the next step.
	reading := textOf(t, ctx, block+` [data-testid="reading"]`)
	for _, want := range []string{"You predicted It more than doubles", "Measured in your run", "at 20 a second", "at 40 a second", "ok_per_sec", "mean_ms", "Back to your prediction"} {
		if !strings.Contains(reading, want) {
			t.Errorf("reading %q lacks %q", reading, want)
		}
	}
	// The next step is the text that reads the rows (after the recorded
	// results), not the next section, which would skip it.
	if got := textOf(t, ctx, block+` [data-testid="lab-next"]`); got != "Next: read what the rows show, below the recorded results" {
		t.Errorf("next step %q", got)
	}
	if href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+block+` [data-testid="lab-next"] a').getAttribute("href")`)); err != nil || href != "#littles-sweep-result" {
		t.Errorf("next step links to %q (%v), want the recorded results the reading text follows", href, err)
	}
	// The run's table counts windows from 1 and shows the lesson's columns
	// (mean_ms among them) without scrolling sideways.
	fit, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => {
		const w = document.querySelector('`+block+` [data-testid="run-rows"]').closest('.table-wrap');
		const heads = [...w.querySelectorAll('thead th')].filter(th => th.offsetParent !== null).map(th => th.dataset.col);
		const first = w.querySelector('tbody tr td').textContent.trim();
		return {fits: w.scrollWidth <= w.clientWidth + 1, heads: heads.join(","), first};
	})()`))
	if err != nil || fit["fits"] != true || fit["first"] != "1" || !strings.Contains(fit["heads"].(string), "mean_ms") {
		t.Errorf("run table: %v (%v), want it to fit, count from 1 and show mean_ms", fit, err)
	}

	doSteps(t, ctx, "reveal and check",
		chromedp.Click(chromedp.CSS(block+` [data-testid="reading-back"]`)),
		chromedp.WaitVisible(chromedp.CSS(predict+` [data-testid="predict-reveal"]`)),
		chromedp.Click(chromedp.CSS(predict+` [data-testid="predict-reveal"]`)),
		chromedp.WaitVisible(chromedp.CSS(predict+` [data-testid="predict-answer"]`)),
		// Option c ("45") is right.
		chromedp.Click(chromedp.CSS(check+` [data-testid="option-c"]`)),
		chromedp.Click(chromedp.CSS(check+` [data-testid="check-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(check+` [data-testid="check-result"]`)),
	)
	if got := textOf(t, ctx, check+` [data-testid="check-result"]`); !strings.Contains(got, "Right.") {
		t.Errorf("check result %q", got)
	}

	// The model's goal: time in system from 230 to 100 ms (± 2). The
	// keyboard moves the slider (and the number follows), a drag takes it
	// near, and − finishes it.
	rng := model + ` [data-testid="range-latency_ms"]`
	num := model + ` [data-testid="num-latency_ms"]`
	valueOf := func() float64 {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`+document.querySelector('`+num+`').value`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	keys := []chromedp.Action[chromedp.Void]{chromedp.Focus(chromedp.CSS(rng))}
	for range 10 {
		keys = append(keys, chromedp.KeyEvent(kb.ArrowLeft))
	}
	doSteps(t, ctx, "slider by keyboard", keys...)
	if v := valueOf(); v != 210 {
		t.Errorf("ten presses of the left arrow from 230 (step 2) give %v, want 210", v)
	}
	// Drag: press on the slider's track at the place of about 120 ms.
	box, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](`(() => { const r = document.querySelector('`+rng+`');
		r.scrollIntoView({block: "center"}); const b = r.getBoundingClientRect();
		return {x: b.left, y: b.top + b.height / 2, w: b.width, min: +r.min, max: +r.max}; })()`))
	if err != nil {
		t.Fatal(err)
	}
	at := func(v float64) float64 { return box["x"] + (v-box["min"])/(box["max"]-box["min"])*box["w"] }
	doSteps(t, ctx, "slider by drag",
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, at(210), box["y"], chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at(165), box["y"], chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at(120), box["y"], chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, at(120), box["y"], chromedp.ButtonLeft),
	)
	dragged := valueOf()
	if dragged < 105 || dragged > 135 {
		t.Errorf("dragging to the place of 120 gives %v", dragged)
	}
	var nudges []chromedp.Action[chromedp.Void]
	for v := dragged; v > 101; v -= 2 {
		nudges = append(nudges, chromedp.Click(chromedp.CSS(model+` [data-testid="nudge-down-latency_ms"]`)))
	}
	nudges = append(nudges, chromedp.WaitVisible(chromedp.CSS(model+` [data-testid="widget-goal-found"]`)),
		chromedp.WaitVisible(chromedp.CSS(model+` [data-testid="widget-goal-recorded"]`)))
	doSteps(t, ctx, "finish with the nudge", nudges...)
	if v := valueOf(); v < 98 || v > 102 {
		t.Errorf("after the nudges the value is %v, want 100 ± 2", v)
	}
	if got := textOf(t, ctx, model+` [data-testid="widget-goal-state"]`); got != "Goal reached." {
		t.Errorf("goal state %q", got)
	}
	screenshot(t, ctx, "walk-5-goal")
}
