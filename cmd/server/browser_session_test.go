//go:build browser

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserClassSession runs a class with two browsers (separate
// profiles, so separate cookies): the instructor starts a session with the
// lesson page's "Teach this lesson" button (the sample fixture is not
// listed on /teach), a learner joins with the code, the instructor opens a predict
// question, the learner votes and reloads (the vote stays), the
// instructor closes and reveals (the learner sees the distribution), then
// runs the lesson's lab for the class and the learner watches the rows
// arrive.
func TestBrowserClassSession(t *testing.T) {
	lab := buildLabBinary(t)
	srv := start(t, nil, "--data", t.TempDir(), "--lab-command", lab)
	host := newBrowser(t)
	learner := newBrowser(t)
	const q = `[data-testid="class-q-sample-predict"]`
	poll := func(js string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout))
	}
	connected := poll(`document.querySelector('[data-testid="class-status"]').textContent.startsWith("Connected")`)

	doSteps(t, host, "host starts a session",
		chromedp.Navigate(srv.url+"/lessons/sample"), // the lesson page's own "Teach this lesson" button
		clickToPage(`[data-testid="teach-sample"] [data-testid="teach-start"]`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="class-code"]`)),
		connected,
	)
	code := textOf(t, host, `[data-testid="class-code"]`)
	if len(code) != 6 {
		t.Fatalf("join code %q", code)
	}

	doSteps(t, learner, "learner joins",
		chromedp.Navigate(srv.url+"/join"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="join-code"]`), strings.ToLower(code)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="join-name"]`), "Ada"),
		clickToPage(`[data-testid="join-submit"]`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="class-you"]`)),
		connected,
	)
	doSteps(t, host, "host sees the learner and opens the question",
		poll(`document.querySelector('[data-testid="participants"]').textContent.includes("Ada")`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="open-sample-predict"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="open-sample-predict"]`)),
	)
	doSteps(t, learner, "learner votes",
		chromedp.WaitEnabled(chromedp.CSS(q+` [data-testid="vote-sample-predict-a"]`)),
		chromedp.Click(chromedp.CSS(q+` [data-testid="vote-sample-predict-a"]`)),
		poll(`document.querySelector('[data-testid="vote-sample-predict-a"]').getAttribute("aria-pressed") === "true"`),
	)
	doSteps(t, host, "host sees the vote in the tally",
		poll(`document.querySelector('[data-testid="q-status-sample-predict"]').textContent.includes("1 vote so far")`),
	)
	screenshot(t, host, "class-host-voting")

	// The projector (a tab of the host's browser) shows only the open
	// question, with the count of votes but not their spread.
	projector := newTab(t, host)
	// Open the tab now, on its own context: a tab first used under a step's
	// timeout would close when that step ends.
	if err := chromedp.Do(projector); err != nil {
		t.Fatal(err)
	}
	projURL, err := chromedp.Run(host, chromedp.Evaluate[string](`document.querySelector('[data-testid="projector-link"]').href`))
	if err != nil {
		t.Fatal(err)
	}
	doSteps(t, projector, "projector shows the open question",
		chromedp.Navigate(projURL),
		connected,
		poll(`!document.querySelector('[data-testid="class-q-sample-predict"]').hidden &&
			document.querySelector('[data-testid="class-q-sample-check"]').hidden &&
			document.querySelector('[data-testid="q-status-sample-predict"]').textContent.includes("1 vote so far") &&
			document.querySelectorAll('[data-testid="q-results-sample-predict"] figure').length === 0`),
	)
	screenshot(t, projector, "class-projector-voting")

	doSteps(t, learner, "learner reloads mid-round and keeps the vote",
		chromedp.Reload(),
		connected,
		poll(`document.querySelector('[data-testid="vote-sample-predict-a"]').getAttribute("aria-pressed") === "true" &&
			!document.querySelector('[data-testid="vote-sample-predict-a"]').disabled`),
	)
	// Nothing of the distribution shows before the reveal.
	if n, err := chromedp.Run(learner, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="q-results-sample-predict"] figure').length`)); err != nil || n != 0 {
		t.Fatalf("learner sees %d charts before the reveal (%v)", n, err)
	}

	doSteps(t, host, "host closes and reveals",
		chromedp.Click(chromedp.CSS(`[data-testid="close-sample-predict"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="reveal-sample-predict"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="reveal-sample-predict"]`)),
	)
	doSteps(t, learner, "learner sees the distribution",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chart-sample-predict-1"]`)),
		poll(`document.querySelector('[data-testid="chart-sample-predict-1"] rect[data-option="a"]').dataset.count === "1"`),
	)
	if s := textOf(t, learner, `[data-testid="q-status-sample-predict"]`); !strings.Contains(s, "revealed") {
		t.Errorf("learner's question status %q, want it revealed", s)
	}
	screenshot(t, learner, "class-learner-revealed")
	doSteps(t, projector, "projector shows the distribution once revealed",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chart-sample-predict-1"]`)),
	)
	screenshot(t, projector, "class-projector-revealed")

	doSteps(t, host, "host runs the lab for the class",
		chromedp.Click(chromedp.CSS(`[data-testid="run-sample-lab"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="class-run"]`)),
	)
	doSteps(t, learner, "learner watches the run",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="class-run"]`)),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('[data-testid="class-run-table"] tbody tr').length === 2 &&
			document.querySelector('[data-testid="class-run"]').dataset.kind === "done"`,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(45*time.Second)),
	)
	screenshot(t, learner, "class-learner-run")
	screenshot(t, host, "class-host-run")
}
