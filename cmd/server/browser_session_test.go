//go:build browser

package main

import (
	"context"
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
	// Only the round's state is announced, not each vote: the count sits
	// outside the live region.
	if got, err := chromedp.Run(host, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('[data-testid="q-status-sample-predict"] [aria-live]')).map(e => e.textContent).join(" | ")`)); err != nil || got != "Round 1: voting is open," {
		t.Errorf("host's announced question status = %q (%v), want only the round's state", got, err)
	}
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
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('[data-testid="class-run"] [data-testid="run-rows"] tbody tr').length === 2 &&
			document.querySelector('[data-testid="class-run"] [data-testid="run-status"]').dataset.status === "done"`,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(45*time.Second)),
	)
	// The class run is the same run panel a lesson shows: the chart with
	// the model beside the measurement, and the rows and the end announced
	// to screen readers (progress is shown, not announced).
	got, err := chromedp.Run(learner, chromedp.Evaluate[string](`[
		document.querySelectorAll('[data-testid="class-run"] [data-testid="run-chart"] svg.chart-plot').length,
		document.querySelector('[data-testid="class-run"] [data-testid="run-announce"]').textContent.startsWith("Done:"),
		document.querySelector('[data-testid="class-run"] [data-testid="run-status"]').getAttribute("role")].join(" ")`))
	if err != nil || got != "2 true " {
		t.Errorf("learner's class run: chart plots, announced done, status role = %q (%v), want \"2 true \" (throughput and latency)", got, err)
	}
	screenshot(t, learner, "class-learner-run")
	screenshot(t, host, "class-host-run")
}

// classPoll waits, within one step, until the JavaScript expression js is
// true on the page.
func classPoll(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout))
}

// TestBrowserClassSecondRoundAndKnobs runs the second half of Peer
// Instruction and an edited run with two browsers: the learner answers
// "About 50" in round 1, the instructor reveals and starts a second round,
// the learner changes to "About 500"; once round 2 is revealed, the host
// and the learner (also after a reload) see that one answer moved from
// About 50 to About 500, and the learner saw no movement before the
// reveal. Then the instructor changes the lab preset's rates from 10, 20
// to 15, 30 and runs it: the learner's rows are offered at 15 and 30 a
// second.
func TestBrowserClassSecondRoundAndKnobs(t *testing.T) {
	lab := buildLabBinary(t)
	srv := start(t, nil, "--data", t.TempDir(), "--lab-command", lab)
	host := newBrowser(t)
	learner := newBrowser(t)
	const (
		q      = `[data-testid="class-q-sample-predict"]`
		status = `document.querySelector('[data-testid="q-status-sample-predict"]').textContent`
		moved  = `Array.from(document.querySelectorAll('[data-testid="q-results-sample-predict"] [data-testid="movement"]')).map(e => e.textContent).join(" | ")`
	)
	pressed := func(opt string) string {
		return `(document.querySelector('[data-testid="vote-sample-predict-` + opt + `"]').getAttribute("aria-pressed") === "true")`
	}
	connected := classPoll(`document.querySelector('[data-testid="class-status"]').textContent.startsWith("Connected")`)

	doSteps(t, host, "host starts a session",
		chromedp.Navigate(srv.url+"/lessons/sample"),
		clickToPage(`[data-testid="teach-sample"] [data-testid="teach-start"]`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="class-code"]`)),
		connected,
	)
	code := textOf(t, host, `[data-testid="class-code"]`)
	doSteps(t, learner, "learner joins",
		chromedp.Navigate(srv.url+"/join"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="join-code"]`), code),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="join-name"]`), "Grace"),
		clickToPage(`[data-testid="join-submit"]`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="class-you"]`)),
		connected,
	)

	// Round 1: About 50 (option a), revealed.
	doSteps(t, host, "host opens round 1",
		classPoll(`document.querySelector('[data-testid="participants"]').textContent.includes("Grace")`),
		chromedp.Click(chromedp.CSS(`[data-testid="open-sample-predict"]`)),
	)
	doSteps(t, learner, "learner votes About 50 in round 1",
		chromedp.WaitEnabled(chromedp.CSS(q+` [data-testid="vote-sample-predict-a"]`)),
		chromedp.Click(chromedp.CSS(q+` [data-testid="vote-sample-predict-a"]`)),
		classPoll(pressed("a")),
	)
	doSteps(t, host, "host reveals round 1 and starts round 2",
		classPoll(status+`.includes("Round 1: voting is open, 1 vote so far")`),
		chromedp.Click(chromedp.CSS(`[data-testid="reveal-sample-predict"]`)),
		classPoll(status+`.includes("Round 1: revealed, 1 vote")`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="next-sample-predict"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="next-sample-predict"]`)),
		classPoll(status+`.includes("Round 2: voting is open, 0 votes so far")`),
	)

	// Round 2: the learner starts with no vote and changes to About 500.
	doSteps(t, learner, "learner changes to About 500 in round 2",
		classPoll(status+`.startsWith("Round 2 is open: choose your answer") && !`+pressed("a")+` && !`+pressed("b")),
		chromedp.WaitEnabled(chromedp.CSS(q+` [data-testid="vote-sample-predict-b"]`)),
		chromedp.Click(chromedp.CSS(q+` [data-testid="vote-sample-predict-b"]`)),
		classPoll(pressed("b")+` && !`+pressed("a")+` && `+status+`.includes("Your vote: About 500.")`),
	)
	const want = "1 moved from About 50 to About 500"
	// The host sees the answer move live, before any reveal (as a reload
	// of the host page shows it).
	doSteps(t, host, "host sees the vote move, then closes round 2",
		classPoll(status+`.includes("Round 2: voting is open, 1 vote so far")`),
		classPoll(moved+`.includes("`+want+`")`),
		chromedp.Click(chromedp.CSS(`[data-testid="close-sample-predict"]`)),
		classPoll(status+`.includes("Round 2: voting closed with 1 vote")`),
	)
	// Before the reveal the learner sees round 1's chart and nothing of
	// round 2: no chart, no movement.
	doSteps(t, learner, "learner waits for the reveal",
		classPoll(status+`.startsWith("Round 2 is closed. Your vote: About 500.")`),
	)
	if got, err := chromedp.Run(learner, chromedp.Evaluate[string](`[document.querySelectorAll('[data-testid="chart-sample-predict-1"]').length,
		document.querySelectorAll('[data-testid="chart-sample-predict-2"]').length, `+moved+`].join(" / ")`)); err != nil || got != "1 / 0 / " {
		t.Fatalf("before round 2's reveal the learner sees charts of round 1 / round 2 / movement = %q (%v), want 1 / 0 / nothing", got, err)
	}

	doSteps(t, host, "host reveals round 2 and sees the movement",
		chromedp.Click(chromedp.CSS(`[data-testid="reveal-sample-predict"]`)),
		classPoll(moved+`.includes("How answers moved from round 1 to round 2:")`),
		classPoll(moved+`.includes("`+want+`")`),
	)
	screenshot(t, host, "class-host-movement")
	for _, when := range []string{"live", "after a reload"} {
		if when != "live" {
			doSteps(t, learner, "learner reloads", chromedp.Reload(), connected)
		}
		doSteps(t, learner, "learner sees round 2 and the movement "+when,
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="chart-sample-predict-2"]`)),
			classPoll(`document.querySelector('[data-testid="chart-sample-predict-2"] rect[data-option="b"]').dataset.count === "1" &&
				document.querySelector('[data-testid="chart-sample-predict-2"] rect[data-option="a"]').dataset.count === "0" &&
				document.querySelector('[data-testid="chart-sample-predict-1"] rect[data-option="a"]').dataset.count === "1"`),
			classPoll(moved+`.includes("`+want+`")`),
			classPoll(status+`.startsWith("Round 2 revealed. Your vote: About 500.")`),
		)
	}
	if got, err := chromedp.Run(learner, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid="q-results-sample-predict"] [data-testid="movement"] li')).map(li => li.textContent)`)); err != nil || len(got) != 1 || got[0] != want {
		t.Errorf("learner's movement lines %q (%v), want exactly one: %s", got, err, want)
	}
	screenshot(t, learner, "class-learner-movement")

	// The host changes the preset's rates (10, 20 a second) to 15, 30 and
	// runs it; the learner watches rows offered at the edited rates.
	doSteps(t, host, "host edits the rates and runs",
		chromedp.Click(chromedp.CSS(`[data-testid="knobs-sample-lab"] summary`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="knobs-sample-lab"] [data-testid="knob-rates"]`)),
		classPoll(`document.querySelector('[data-testid="knobs-sample-lab"] [data-testid="knob-rates"]').value.replace(/\s/g, "") === "10,20"`),
		chromedp.SetValue(chromedp.CSS(`[data-testid="knobs-sample-lab"] [data-testid="knob-rates"]`), "15, 30"),
		chromedp.Click(chromedp.CSS(`[data-testid="run-sample-lab"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="class-run"]`)),
	)
	rowsDone := chromedp.Poll[chromedp.Void](`document.querySelectorAll('[data-testid="class-run"] [data-testid="run-rows"] tbody tr').length === 2 &&
		document.querySelector('[data-testid="class-run"] [data-testid="run-status"]').dataset.status === "done"`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(45*time.Second))
	offered := `Array.from(document.querySelectorAll('[data-testid="class-run"] [data-testid="run-rows"] tbody tr')).map(tr => tr.cells[1].textContent).join(",")`
	doSteps(t, learner, "learner watches the edited run", chromedp.WaitVisible(chromedp.CSS(`[data-testid="class-run"]`)), rowsDone)
	for _, b := range []struct {
		who string
		ctx context.Context
	}{{"learner", learner}, {"host", host}} {
		if b.who == "host" {
			doSteps(t, host, "host sees the run end", rowsDone)
		}
		if got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](offered)); err != nil || got != "15,30" {
			t.Errorf("%s's class run rows are offered at %q (%v), want 15,30: the host's edited rates", b.who, got, err)
		}
	}
	screenshot(t, learner, "class-learner-edited-run")
}
