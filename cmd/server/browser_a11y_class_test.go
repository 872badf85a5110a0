//go:build browser

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// classAuditTimeout bounds each browser of TestBrowserAccessibilityClass,
// which audits two dozen pages and states (most of them of one class
// session) in four views each.
const classAuditTimeout = 3 * time.Minute

// TestBrowserAccessibilityClass audits, with axe-core in light and dark
// at 1024 and 320 pixels wide (as TestBrowserAccessibility does), the
// pages instructors and learners use live: /teach (also with the
// instructor key's one field, and with a wrong key's message beside it),
// the comparison of two saved runs, and a class on the fixture lesson
// driven through the pages' own buttons by two browsers. The class
// states: the join link's page (/join/{code}?key=); then the participant,
// host and projector views before the first question (and the host's
// list of keys open); while a question's voting is open with a vote in;
// once round 1's spread shows (the bar chart); once round 2's spread
// shows with one answer moved (each round's chart and the movement); once
// the answer shows with its explanation; once the lesson's lab has run
// for the class (the host with the knobs open, also with a refused
// rate); and once the session has ended. The projector's presenter view
// is also audited at 1920 x 1080, light and dark, in every state.
func TestBrowserAccessibilityClass(t *testing.T) {
	src := axeSource(t)
	dataDir := t.TempDir()
	seedRun(t, dataDir, "a11ycmpA001", []float64{20, 40}, 2)
	seedRun(t, dataDir, "a11ycmpB001", []float64{40, 80}, 1) // the second run: two rates, one second each
	lab := buildLabBinary(t)
	srv := start(t, nil, "--data", dataDir, "--lab-command", lab)
	views := a11yViews()
	audits, presenterAudits := 0, 0
	// audit checks what the tab ctx shows in every view, then puts it
	// back in the first view for the steps that follow.
	audit := func(ctx context.Context, page string) {
		t.Helper()
		for _, v := range views {
			setView(t, ctx, v)
			auditPage(t, ctx, src, page, v.name)
			audits++
		}
		setView(t, ctx, views[0])
	}
	host := newBrowserFor(t, classAuditTimeout)
	learner := newBrowserFor(t, classAuditTimeout)
	const (
		q      = `[data-testid="class-q-sample-predict"]`
		status = `document.querySelector('[data-testid="q-status-sample-predict"]').textContent`
		moved  = `Array.from(document.querySelectorAll('[data-testid="q-results-sample-predict"] [data-testid="movement"]')).map(e => e.textContent).join(" | ")`
	)
	connected := classPoll(`document.querySelector('[data-testid="class-status"]').textContent.startsWith("Connected")`)
	pressed := func(opt string) string {
		return `(document.querySelector('[data-testid="vote-sample-predict-` + opt + `"]').getAttribute("aria-pressed") === "true")`
	}

	doSteps(t, host, "open /teach", chromedp.Navigate(srv.url+"/teach"),
		classPoll(`document.querySelectorAll('[data-testid^="teach-"] [data-testid="teach-start"]').length > 1`))
	audit(host, "teach (/teach)")
	// A server that asks for an instructor key shows one key field for
	// every lesson's Teach button; a wrong key comes back beside it.
	keyed := start(t, nil, "--data", t.TempDir(), "--instructor-key", "a11y-instructor-key")
	doSteps(t, host, "open /teach with an instructor key", chromedp.Navigate(keyed.url+"/teach"),
		classPoll(`document.querySelectorAll('[data-testid="teach-key"]').length === 1 && document.querySelectorAll('[data-testid="teach-start"]').length > 1`))
	audit(host, "teach with the instructor key field (/teach)")
	doSteps(t, host, "type a wrong key",
		chromedp.SendKeys(chromedp.CSS(`[data-testid="teach-key"]`), "not the key"),
		clickToPage(`[data-testid="teach-littles-law"] [data-testid="teach-start"]`),
		classPoll(`document.querySelector('[data-testid="teach-error"]').textContent.includes("not this server's")`))
	audit(host, "teach with a wrong key's message (/teach)")
	doSteps(t, host, "open the comparison", chromedp.Navigate(srv.url+"/runs/compare?a=a11ycmpA001&b=a11ycmpB001"),
		// Rates 20, 40 against 40, 80: three rows, two with a missing side.
		classPoll(`document.querySelectorAll('[data-testid="compare-rows"] tbody tr').length === 3`))
	audit(host, "compare two runs (/runs/compare)")

	doSteps(t, host, "host starts a session", startClass(srv.url, "sample"), connected)
	joinURL, err := chromedp.Run(host, chromedp.Evaluate[string](`document.querySelector('[data-testid="join-link"]').href`))
	if err != nil || !strings.Contains(joinURL, "/join/") || !strings.Contains(joinURL, "key=") {
		t.Fatalf("join link %q (%v), want /join/{code}?key=...", joinURL, err)
	}
	doSteps(t, learner, "learner opens the join link", chromedp.Navigate(joinURL),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="join-code-shown"]`)))
	audit(learner, "join link (/join/{code}?key=)")
	doSteps(t, learner, "learner joins by the link",
		chromedp.SendKeys(chromedp.CSS(`[data-testid="join-name"]`), "Ada"),
		clickToPage(`[data-testid="join-submit"]`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="class-you"]`)),
		connected,
	)

	projector := newTab(t, host)
	if err := chromedp.Do(projector); err != nil { // open the tab on its own context, not under a step's timeout
		t.Fatal(err)
	}
	projURL, err := chromedp.Run(host, chromedp.Evaluate[string](`document.querySelector('[data-testid="projector-link"]').href`))
	if err != nil {
		t.Fatal(err)
	}
	doSteps(t, projector, "projector connects", chromedp.Navigate(projURL), connected)
	// auditPresenter audits the projector's presenter view as a projector
	// shows it, 1920 x 1080, light and dark.
	auditPresenter := func(state string) {
		t.Helper()
		for _, v := range []a11yView{{"light, 1920 x 1080", "light", 1920, 1080}, {"dark, 1920 x 1080", "dark", 1920, 1080}} {
			setView(t, projector, v)
			auditPage(t, projector, src, "presenter view, "+state, v.name)
			presenterAudits++
		}
		setView(t, projector, views[0])
	}
	// auditViews audits the host, participant and projector views in one
	// state of the class.
	auditViews := func(state string) {
		t.Helper()
		audit(host, "host view, "+state)
		audit(learner, "participant view, "+state)
		audit(projector, "projector view, "+state)
		auditPresenter(state)
	}

	// Before the first question: the learner waits with the options
	// shown but not yet votable.
	doSteps(t, host, "host sees the learner",
		classPoll(`document.querySelector('[data-testid="participants"]').textContent.includes("Ada")`))
	audit(host, "host view, waiting to open a question (/sessions/{code}/host)")
	audit(learner, "participant view, waiting (/sessions/{code})")
	audit(projector, "projector view, waiting (/sessions/{code}/projector)")
	auditPresenter("waiting for the class (/sessions/{code}/projector)")
	doSteps(t, host, "host opens the list of keys", chromedp.Click(chromedp.CSS(`[data-testid="keys-open"]`)),
		classPoll(`document.querySelector('[data-testid="keys-dialog"]').open`))
	audit(host, "host view, the list of keys open")
	doSteps(t, host, "host closes the list of keys", chromedp.Click(chromedp.CSS(`[data-testid="keys-close"]`)),
		classPoll(`!document.querySelector('[data-testid="keys-dialog"]').open`))

	// Round 1, voting open, one vote in.
	doSteps(t, host, "host opens round 1",
		clickStable(`[data-testid="open-sample-predict"]`),
	)
	doSteps(t, learner, "learner votes About 50",
		chromedp.WaitEnabled(chromedp.CSS(q+` [data-testid="vote-sample-predict-a"]`)),
		chromedp.Click(chromedp.CSS(q+` [data-testid="vote-sample-predict-a"]`)),
		classPoll(pressed("a")+` && `+status+`.startsWith("Round 1 is open. Your vote: About 50.")`),
	)
	doSteps(t, host, "host sees the vote",
		classPoll(status+`.includes("Round 1: voting is open, 1 vote so far")`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chart-sample-predict-1"]`)),
	)
	doSteps(t, projector, "projector shows the open question",
		classPoll(`!document.querySelector('[data-testid="class-q-sample-predict"]').hidden && `+status+`.includes("1 vote so far")`))
	auditViews("voting open")

	// Round 1 revealed: everyone sees the bar chart.
	doSteps(t, host, "host reveals round 1",
		clickStable(`[data-testid="reveal-sample-predict"]`),
		classPoll(status+`.includes("Round 1: revealed, 1 vote")`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="next-sample-predict"]`)),
	)
	for _, tab := range []context.Context{learner, projector} {
		doSteps(t, tab, "the class sees the distribution",
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="chart-sample-predict-1"]`)),
			classPoll(`document.querySelector('[data-testid="chart-sample-predict-1"] rect[data-option="a"]').dataset.count === "1"`))
	}
	auditViews("round 1 revealed")

	// Round 2: the learner moves to About 500; once revealed, everyone
	// sees both charts and the movement.
	doSteps(t, host, "host starts round 2",
		clickStable(`[data-testid="next-sample-predict"]`),
		classPoll(status+`.includes("Round 2: voting is open, 0 votes so far")`),
	)
	doSteps(t, learner, "learner changes to About 500",
		classPoll(status+`.startsWith("Round 2 is open: choose your answer")`),
		chromedp.WaitEnabled(chromedp.CSS(q+` [data-testid="vote-sample-predict-b"]`)),
		chromedp.Click(chromedp.CSS(q+` [data-testid="vote-sample-predict-b"]`)),
		classPoll(pressed("b")+` && `+status+`.includes("Your vote: About 500.")`),
	)
	const want = "1 moved from About 50 to About 500"
	doSteps(t, host, "host reveals round 2",
		classPoll(status+`.includes("Round 2: voting is open, 1 vote so far")`),
		clickStable(`[data-testid="reveal-sample-predict"]`),
		classPoll(status+`.includes("Round 2: revealed, 1 vote")`),
		classPoll(moved+`.includes("`+want+`")`),
	)
	for _, tab := range []context.Context{learner, projector} {
		doSteps(t, tab, "the class sees round 2 and the movement",
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="chart-sample-predict-2"]`)),
			classPoll(moved+`.includes("`+want+`")`))
	}
	auditViews("round 2 revealed with movement")

	// The answer: everyone sees the right option and its explanation,
	// the learner their vote's verdict.
	doSteps(t, host, "host shows the answer",
		clickStable(`[data-testid="answer-sample-predict"]`),
		classPoll(status+`.includes("The answer is About 50")`))
	for _, tab := range []context.Context{learner, projector} {
		doSteps(t, tab, "the class sees the answer",
			classPoll(`!document.querySelector('[data-testid="answer-box-sample-predict"]').hidden &&
				document.querySelector('[data-testid="answer-explain-sample-predict"]').textContent.includes("1000 / 20")`))
	}
	doSteps(t, learner, "the learner sees their verdict", classPoll(`document.querySelector('[data-testid="your-verdict-sample-predict"]') !== null`))
	auditViews("the answer showing")

	// The class run: the host opens the knobs and runs the lesson's preset
	// (two rates, one second each); everyone watches the rows arrive.
	runDone := chromedp.Poll[chromedp.Void](`document.querySelectorAll('[data-testid="class-run"] [data-testid="run-rows"] tbody tr').length === 2 &&
		document.querySelector('[data-testid="class-run"] [data-testid="run-status"]')?.dataset.status === "done"`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(45*time.Second))
	// First a rate that is not a number: the host's status says so.
	const rates = `[data-testid="knobs-sample-lab"] [data-testid="run-field-rates"]`
	doSteps(t, host, "host opens the knobs and mistypes a rate",
		openDetails(`[data-testid="knobs-sample-lab"]`),
		chromedp.WaitVisible(chromedp.CSS(rates)),
		chromedp.SetValue(chromedp.CSS(rates), "10, twenty"),
		chromedp.Click(chromedp.CSS(`[data-testid="run-sample-lab"]`)),
		// The message is beside the Run button that caused it.
		classPoll(`document.querySelector('[data-testid="error-sample-lab"]').textContent.includes("Rates must be numbers")`),
	)
	audit(host, "host view, knobs open, a rate refused")
	doSteps(t, host, "host corrects the rates and runs the lab",
		chromedp.SetValue(chromedp.CSS(rates), "10, 20"),
		chromedp.Click(chromedp.CSS(`[data-testid="run-sample-lab"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="class-run"]`)),
	)
	for _, tab := range []context.Context{learner, projector, host} {
		doStepsWithin(t, tab, "the class run ends", runStepTimeout, chromedp.WaitVisible(chromedp.CSS(`[data-testid="class-run"]`)), runDone)
	}
	audit(host, "host view, knobs open and the class run done")
	audit(learner, "participant view, the class run done")
	audit(projector, "projector view, the class run done")
	doSteps(t, projector, "the presenter shows the run", classPoll(`document.querySelector('main').dataset.screen === "run"`))
	auditPresenter("the class run done")

	// The host ends the session (accepting the page's own confirm
	// dialog); every view says so.
	doSteps(t, host, "host ends the session",
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Click(chromedp.CSS(`[data-testid="class-end"]`)),
	)
	for _, tab := range []context.Context{host, learner, projector} {
		doSteps(t, tab, "the session ends", classPoll(`document.querySelector('[data-testid="class-status"]').textContent.startsWith("This session has ended")`))
	}
	auditViews("session ended")
	t.Logf("axe-core: %d audits (%d pages and states in %d views), and %d of the presenter view at 1920 x 1080 (%d states, light and dark)",
		audits, audits/len(views), len(views), presenterAudits, presenterAudits/2)
}
