//go:build browser

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// classFlowTimeout bounds each browser of the class flow tests: a whole
// lesson walked step by step, with a class run.
const classFlowTimeout = 3 * time.Minute

// The host page's answer to every step so far was no refusal: no error
// beside a block's buttons and none on the Next bar.
const noRefusal = `![...document.querySelectorAll('[data-block-error]')].some((e) => e.textContent.trim() !== "") &&
	!document.querySelector('[data-testid="next-message"]').classList.contains("form-error")`

// openPresenter opens the presenter view from the host page's button, as
// an instructor does (a window of its own, whose keys the host page
// takes), sized as a 1920 x 1080 projector, and waits until it takes the
// host's keys.
func openPresenter(t *testing.T, host context.Context) context.Context {
	t.Helper()
	opened := chromedp.WaitNewTarget(host, func(i *target.Info) bool { return strings.Contains(i.URL, "/projector") })
	doSteps(t, host, "host opens the presenter view", chromedp.Click(chromedp.CSS(`[data-testid="projector-link"]`)))
	var id target.ID
	select {
	case id = <-opened:
	case <-time.After(stepTimeout):
		t.Fatal("the presenter window did not open")
	}
	pres, cancel := chromedp.NewContext(host, chromedp.WithTargetID(id))
	t.Cleanup(cancel)
	if err := chromedp.Do(pres); err != nil {
		t.Fatal(err)
	}
	doSteps(t, pres, "the presenter takes the host's keys",
		chromedp.EmulateViewport(1920, 1080),
		classPoll(`document.querySelector('[data-testid="class-status"]').textContent.startsWith("Connected") && document.querySelector('main').dataset.control === "host"`))
	return pres
}

// classOnSample starts a class on the fixture lesson at base: the host's
// browser, a learner's (Ada, who joins on a phone's width) and the
// presenter window the host page opens.
func classOnSample(t *testing.T, base string) (host, learner, pres context.Context) {
	t.Helper()
	const connected = `document.querySelector('[data-testid="class-status"]').textContent.startsWith("Connected")`
	host = newBrowserFor(t, classFlowTimeout)
	learner = newBrowserFor(t, classFlowTimeout)
	doSteps(t, host, "host starts a session", startClass(base, "sample"), classPoll(connected))
	code := textOf(t, host, `[data-testid="class-code"]`)
	doSteps(t, learner, "Ada joins",
		chromedp.EmulateViewport(375, 800),
		chromedp.Navigate(base+"/join/"+code),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="join-name"]`), "Ada"),
		clickToPage(`[data-testid="join-submit"]`),
		classPoll(connected),
	)
	return host, learner, openPresenter(t, host)
}

// shotView saves what the tab shows in view v, scrolled to sel (the
// top), under screenshots/NAME.png, as screenshot does: a window's worth,
// as a person sees it.
func shotView(t *testing.T, ctx context.Context, name string, v a11yView, sel string) {
	t.Helper()
	setView(t, ctx, v)
	if sel != "" {
		doSteps(t, ctx, "scroll to "+sel, chromedp.Evaluate[chromedp.Void](`(e => e && window.scrollTo({top: e.getBoundingClientRect().top + scrollY - 10, behavior: "instant"}))(document.querySelector('`+sel+`'))`))
	}
	time.Sleep(300 * time.Millisecond) // the fit of the presenter's text, a frame or two
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	keepShot(t, name, png)
}

// TestBrowserClassWalkWithSpace walks the fixture lesson's class with
// Space alone, pressed on the presenter view (a window the host page
// opened, as on a projector): the Predict's voting opens, closes, its
// spread shows, the lab that settles it runs for the class (the room
// watches it to its end), its answer shows; then the Check's voting,
// spread and answer. No step meets a refusal, the Next button always
// names the step Space takes, and once every answer shows Space says so
// on the presenter rather than nothing. Then ← shows the class run and
// the Predict again, B blanks the presenter and brings it back (the host
// page says it is blank meanwhile), and the list of keys names R, B and
// Back. The participant's phone letters the options (A, B, … as on the
// presenter and the host page) and its vote buttons have one width.
func TestBrowserClassWalkWithSpace(t *testing.T) {
	srv := start(t, nil, "--data", t.TempDir(), "--lab-command", buildLabBinary(t))
	host, learner, pres := classOnSample(t, srv.url)

	const (
		pq   = `document.querySelector('[data-testid="class-q-sample-predict"]')`
		cq   = `document.querySelector('[data-testid="class-q-sample-check"]')`
		next = `document.querySelector('[data-testid="next-step"]').textContent`
	)
	// space presses Space on the presenter, after the host page's Next
	// names step, and waits until the presenter shows want.
	space := func(what, step, want string) {
		t.Helper()
		doSteps(t, host, what+": the Next button names it", classPoll(next+`.startsWith("Next: `+step+`")`))
		doSteps(t, pres, what, chromedp.KeyEvent(" "), classPoll(want))
		doSteps(t, host, what+": no refusal", classPoll(noRefusal))
	}
	vote := func(q, option string) {
		t.Helper()
		sel := `[data-testid="vote-` + q + `-` + option + `"]`
		doSteps(t, learner, "Ada votes "+option+" on "+q,
			chromedp.WaitEnabled(chromedp.CSS(sel)),
			chromedp.Click(chromedp.CSS(sel)),
			classPoll(`document.querySelector('`+sel+`').getAttribute("aria-pressed") === "true"`))
	}

	space("Space opens the Predict", "Open voting on ‘With one worker", pq+`.dataset.state === "open" && !`+pq+`.hidden`)
	// Every screen letters the options in the one order the class sees,
	// and a phone's vote buttons are all one width.
	letters := `[...document.querySelectorAll('[data-testid="class-q-sample-predict"] .options [data-option]')].map((li) => li.dataset.letter + "=" + li.dataset.option + ":" + li.querySelector(".option-letter").textContent).join(" ")`
	var onPhone, onPresenter, onHost string
	for _, c := range []struct {
		ctx context.Context
		out *string
	}{{learner, &onPhone}, {pres, &onPresenter}, {host, &onHost}} {
		s, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](letters))
		if err != nil {
			t.Fatal(err)
		}
		*c.out = s
	}
	if onPhone != onPresenter || onPhone != onHost || !strings.HasPrefix(onPhone, "A=") || !strings.Contains(onPhone, " B=") || !strings.Contains(onPhone, " C=") {
		t.Errorf("letters: phone %q, presenter %q, host %q; want A, B, C the same on every screen", onPhone, onPresenter, onHost)
	}
	widths, err := chromedp.Run(learner, chromedp.Evaluate[[]int](`[...document.querySelectorAll('[data-testid="class-q-sample-predict"] [data-vote]')].map((b) => Math.round(b.getBoundingClientRect().width))`))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range widths {
		if w != widths[0] || w < 300 {
			t.Errorf("the phone's vote buttons are %v px wide at 375 px, want one width across the column", widths)
			break
		}
	}
	vote("sample-predict", "a")
	shotView(t, learner, "class-participant-voting-375-light", a11yView{"phone", "light", 375, 800}, `[data-testid="class-q-sample-predict"]`)
	shotView(t, learner, "class-participant-voting-375-dark", a11yView{"phone", "dark", 375, 800}, `[data-testid="class-q-sample-predict"]`)
	setView(t, learner, a11yView{"phone", "light", 375, 800})
	shotView(t, pres, "class-presenter-voting-1920-light", a11yView{"projector", "light", 1920, 1080}, "")

	space("Space closes its voting", "Close voting on ‘With one worker", pq+`.dataset.state === "closed"`)
	space("Space shows the spread", "Show the spread of the votes on ‘With one worker",
		pq+`.dataset.state === "revealed" && document.querySelector('[data-testid="chart-sample-predict-1"] .option-letter') !== null`)
	shotView(t, pres, "class-presenter-spread-1920-light", a11yView{"projector", "light", 1920, 1080}, "")
	shotView(t, pres, "class-presenter-spread-1920-dark", a11yView{"projector", "dark", 1920, 1080}, "")
	setView(t, pres, a11yView{"projector", "light", 1920, 1080})
	shotView(t, host, "class-host-next-run-1280-light", a11yView{"host", "light", 1280, 900}, `[data-testid="class-q-sample-predict"]`)
	shotView(t, host, "class-host-next-run-1280-dark", a11yView{"host", "dark", 1280, 900}, `[data-testid="class-q-sample-predict"]`)
	setView(t, host, a11yView{"host", "light", 1024, 900})

	space("Space runs the lab that settles the Predict", "Run the lab that settles ‘With one worker",
		`document.querySelector('main').dataset.screen === "run" && !document.querySelector('[data-testid="class-run"]').hidden`)
	doStepsWithin(t, pres, "the room watches the class run to its end", runStepTimeout,
		chromedp.Poll[chromedp.Void](`document.querySelector('[data-testid="class-run"] [data-testid="run-status"]')?.dataset.status === "done"`,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(45*time.Second)))
	space("Space shows the answer", "Show the answer to ‘With one worker",
		pq+`.dataset.state === "answered" && document.querySelector('main').dataset.screen === "question" && !document.querySelector('[data-testid="answer-box-sample-predict"]').hidden &&
		document.querySelector('[data-testid="answer-option-sample-predict"] .option-letter').textContent !== ""`)
	shotView(t, pres, "class-presenter-answer-1920-dark", a11yView{"projector", "dark", 1920, 1080}, "")
	setView(t, pres, a11yView{"projector", "light", 1920, 1080})
	doSteps(t, learner, "the phone shows the answer", classPoll(`document.querySelector('[data-testid="your-verdict-sample-predict"]') !== null`))
	shotView(t, learner, "class-participant-answer-375-light", a11yView{"phone", "light", 375, 800}, `[data-testid="class-q-sample-predict"]`)
	shotView(t, learner, "class-participant-answer-375-dark", a11yView{"phone", "dark", 375, 800}, `[data-testid="class-q-sample-predict"]`)
	setView(t, learner, a11yView{"phone", "light", 375, 800})

	space("Space opens the Check", "Open voting on ‘Which quantity", cq+`.dataset.state === "open" && !`+cq+`.hidden && `+pq+`.hidden`)
	vote("sample-check", "a")
	space("Space closes the Check's voting", "Close voting on ‘Which quantity", cq+`.dataset.state === "closed"`)
	space("Space shows the Check's spread", "Show the spread of the votes on ‘Which quantity", cq+`.dataset.state === "revealed"`)
	// A Check is settled by no lab: its answer comes next.
	space("Space shows the Check's answer", "Show the answer to ‘Which quantity", cq+`.dataset.state === "answered"`)

	// Nothing is left: Space says so where the host is looking.
	const notice = `document.querySelector('[data-testid="presenter-notice"]')`
	doSteps(t, pres, "Space with every answer shown says so",
		chromedp.KeyEvent(" "),
		classPoll(`!`+notice+`.hidden && `+notice+`.textContent.startsWith("Every question of the lesson is done") && !`+notice+`.classList.contains("form-error")`))
	doSteps(t, host, "and the host page too, with no refusal",
		classPoll(`document.querySelector('[data-testid="next-message"]').textContent.startsWith("Every question of the lesson is done")`), classPoll(noRefusal))

	// Back: the class run, then the Predict, each as the room saw it.
	doSteps(t, pres, "← shows the class run again", chromedp.KeyEvent(kb.ArrowLeft),
		classPoll(`document.querySelector('main').dataset.screen === "run" && document.querySelector('[data-testid="class-run"] [data-testid="run-status"]').dataset.status === "done"`))
	doSteps(t, pres, "Page Up shows the Predict again, its answer still showing", chromedp.KeyEvent(kb.PageUp),
		classPoll(`document.querySelector('main').dataset.screen === "question" && !`+pq+`.hidden && `+pq+`.dataset.state === "answered"`))
	doSteps(t, host, "Back met no refusal", classPoll(noRefusal))

	// B blanks the presenter, and the host page says so until B again.
	doSteps(t, pres, "B blanks the presenter", chromedp.KeyEvent("b"),
		classPoll(`!document.querySelector('[data-testid="presenter-blank"]').hidden && getComputedStyle(document.querySelector('[data-testid="presenter-blank"]')).backgroundColor === "rgb(0, 0, 0)"`))
	doSteps(t, host, "the host page says the presenter is blank", classPoll(`!document.querySelector('[data-testid="next-blank"]').hidden`))
	doSteps(t, pres, "B shows it again", chromedp.KeyEvent("b"), classPoll(`document.querySelector('[data-testid="presenter-blank"]').hidden`))
	doSteps(t, host, "the host page says so", classPoll(`document.querySelector('[data-testid="next-blank"]').hidden`))

	doSteps(t, pres, "? lists Back, R and B among the keys", chromedp.KeyEvent("?"),
		classPoll(`document.querySelector('[data-testid="keys-dialog"]').open && ["Page Up", "R", "B"].every((k) => [...document.querySelectorAll('[data-testid="keys-dialog"] kbd')].some((e) => e.textContent === k))`),
		chromedp.KeyEvent(kb.Escape), classPoll(`!document.querySelector('[data-testid="keys-dialog"]').open`))
}

// TestBrowserClassRunFails runs a class whose lab does not start (the lab
// command sleeps 3 s and exits, as a lab on a busy machine that never
// comes up): while it starts the presenter says the lab is starting, not
// "Running: window 1 of N"; when it fails, the presenter and the
// participant's phone tell the room in words for a room, with the
// lesson's recorded run of the preset under it at once, and never the
// learner's "If your knobs ask for a lot of memory…"; the host still sees
// that reason. Next then shows the answer, without a refusal. The failed
// run's views pass axe, light and dark.
func TestBrowserClassRunFails(t *testing.T) {
	failing := filepath.Join(t.TempDir(), "lab-that-fails")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\nsleep 3\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := axeSource(t)
	srv := start(t, nil, "--data", t.TempDir(), "--lab-command", failing)
	host, learner, pres := classOnSample(t, srv.url)

	for _, want := range []string{"open", "closed", "revealed"} {
		doSteps(t, pres, "Space: the Predict "+want, chromedp.KeyEvent(" "),
			classPoll(`document.querySelector('[data-testid="class-q-sample-predict"]').dataset.state === "`+want+`"`))
	}
	doSteps(t, pres, "Space runs the lab for the class; it is starting",
		chromedp.KeyEvent(" "),
		classPoll(`document.querySelector('main').dataset.screen === "run" &&
			document.querySelector('[data-testid="class-run"] [data-testid="run-status"]')?.textContent.startsWith("Starting the lab")`))
	shotView(t, pres, "class-presenter-starting-1920-light", a11yView{"projector", "light", 1920, 1080}, "")
	setView(t, pres, a11yView{"projector", "light", 1920, 1080})

	const room = `document.querySelector('[data-testid="class-run-note"]')`
	const told = `!` + room + `.hidden && ` + room + `.textContent.startsWith("The live run could not start this time. Below is the run recorded for this lesson with the same settings instead.") &&
		document.querySelector('[data-testid="class-fallback"] [data-testid="table-recorded-sample-table"]') !== null &&
		getComputedStyle(document.querySelector('[data-testid="class-fallback"]')).display !== "none"`
	const noLearnerWords = `!document.body.innerText.includes("If your knobs")`
	doStepsWithin(t, pres, "the presenter tells the room, with the recorded run", runStepTimeout,
		chromedp.Poll[chromedp.Void](told+` && `+noLearnerWords, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second)))
	doSteps(t, learner, "the phone tells the room too", chromedp.WaitVisible(chromedp.CSS(`[data-testid="class-run"]`)), classPoll(told+` && `+noLearnerWords))
	doSteps(t, host, "the host sees the room's words and the run's own reason",
		classPoll(told+` && document.querySelector('[data-testid="class-run"] [data-testid="run-status"]').textContent.includes("The lab service did not start")`))
	shotView(t, pres, "class-presenter-run-failed-1920-light", a11yView{"projector", "light", 1920, 1080}, "")
	shotView(t, pres, "class-presenter-run-failed-1920-dark", a11yView{"projector", "dark", 1920, 1080}, "")
	shotView(t, learner, "class-participant-run-failed-375-light", a11yView{"phone", "light", 375, 800}, `[data-testid="class-run"]`)
	shotView(t, learner, "class-participant-run-failed-375-dark", a11yView{"phone", "dark", 375, 800}, `[data-testid="class-run"]`)
	shotView(t, host, "class-host-run-failed-1280-light", a11yView{"host", "light", 1280, 900}, `[data-testid="class-run"]`)
	shotView(t, host, "class-host-run-failed-1280-dark", a11yView{"host", "dark", 1280, 900}, `[data-testid="class-run"]`)

	for _, v := range a11yViews() {
		setView(t, learner, v)
		auditPage(t, learner, src, "participant view, a class run that failed", v.name)
		setView(t, host, v)
		auditPage(t, host, src, "host view, a class run that failed", v.name)
	}
	for _, v := range []a11yView{{"light, 1920 x 1080", "light", 1920, 1080}, {"dark, 1920 x 1080", "dark", 1920, 1080}} {
		setView(t, pres, v)
		auditPage(t, pres, src, "presenter view, a class run that failed", v.name)
	}
	setView(t, host, a11yView{"host", "light", 1024, 900})
	setView(t, pres, a11yView{"projector", "light", 1920, 1080})

	// Next goes on to the answer: no refusal, nothing to wait for.
	doSteps(t, host, "the Next button names the answer", classPoll(`document.querySelector('[data-testid="next-step"]').textContent.startsWith("Next: Show the answer")`))
	doSteps(t, pres, "Space shows the answer", chromedp.KeyEvent(" "),
		classPoll(`document.querySelector('[data-testid="class-q-sample-predict"]').dataset.state === "answered" && document.querySelector('main').dataset.screen === "question"`))
	doSteps(t, host, "no refusal", classPoll(noRefusal))
	// R runs it again on request: the server takes it (and it fails again).
	doSteps(t, pres, "R runs the lab again", chromedp.KeyEvent("r"), classPoll(`document.querySelector('main').dataset.screen === "run"`))
	doSteps(t, host, "R met no refusal", classPoll(noRefusal))
}
