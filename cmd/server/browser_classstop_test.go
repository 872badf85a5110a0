//go:build browser

package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestBrowserClassRunStop stops a class run from the presenter view and
// from the host view. The host runs the fixture's lab for the class with
// 20-second windows (long enough to stop); while it runs, the presenter
// view the host page opened and the host view show Stop beside the run,
// and the participant's phone has none. Stop on the presenter cancels the
// run through the host page: the presenter and the phone tell the room it
// was cancelled, the host's panel says cancelled, and Stop goes away. A
// second run is stopped with the host view's own Stop; for that run the
// host's first request for the run's panel fails (as a busy server's
// refusal would), and the host view still shows Stop at once and shows
// the panel when it asks again. The views with Stop showing pass the
// accessibility audit.
func TestBrowserClassRunStop(t *testing.T) {
	lab := buildLabBinary(t)
	src := axeSource(t)
	srv := start(t, nil, "--data", t.TempDir(), "--lab-command", lab)
	host, learner, pres := classOnSample(t, srv.url)
	const (
		stop      = `[data-testid="class-run-cancel"]`
		stopShown = `(e => !!e && !e.disabled && e.getClientRects().length > 0)(document.querySelector('` + stop + `'))`
		stopGone  = `(e => !e || e.getClientRects().length === 0)(document.querySelector('` + stop + `'))`
		knobs     = `[data-testid="knobs-sample-lab"]`
		status    = `document.querySelector('[data-testid="class-run"] [data-testid="run-status"]')?.dataset.status`
		roomNote  = `(n => !n.hidden && n.textContent.startsWith("The live run was cancelled"))(document.querySelector('[data-testid="class-run-note"]'))`
	)
	runLong := func(what string) {
		t.Helper()
		doSteps(t, host, what,
			openDetails(knobs),
			chromedp.SetValue(chromedp.CSS(knobs+` [data-testid="run-field-seconds"]`), "20"),
			chromedp.Click(chromedp.CSS(`[data-testid="run-sample-lab"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="class-run"]`)),
		)
	}

	runLong("host runs the lab for the class with 20-second windows")
	doStepsWithin(t, pres, "the presenter shows the run with Stop", runStepTimeout,
		classPoll(`document.querySelector('main').dataset.screen === "run" && `+stopShown))
	doSteps(t, host, "the host view shows Stop", classPoll(stopShown))
	doSteps(t, learner, "the phone shows the run without Stop",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="class-run"]`)),
		classPoll(`document.querySelector('`+stop+`') === null`))
	shotView(t, pres, "class-presenter-run-stop-1920-light", a11yView{"projector", "light", 1920, 1080}, "")
	shotView(t, pres, "class-presenter-run-stop-1920-dark", a11yView{"projector", "dark", 1920, 1080}, "")
	shotView(t, host, "class-host-run-stop-1280-light", a11yView{"host", "light", 1280, 900}, `[data-testid="class-run"]`)
	shotView(t, host, "class-host-run-stop-1280-dark", a11yView{"host", "dark", 1280, 900}, `[data-testid="class-run"]`)
	shotView(t, host, "class-host-run-stop-375-light", a11yView{"host", "light", 375, 800}, `[data-testid="class-run"]`)
	shotView(t, host, "class-host-run-stop-375-dark", a11yView{"host", "dark", 375, 800}, `[data-testid="class-run"]`)
	for _, v := range []a11yView{{"light, 1920 x 1080", "light", 1920, 1080}, {"dark, 1920 x 1080", "dark", 1920, 1080}} {
		setView(t, pres, v)
		auditPage(t, pres, src, "presenter view, a class run with Stop", v.name)
	}
	for _, v := range a11yViews() {
		setView(t, host, v)
		auditPage(t, host, src, "host view, a class run with Stop", v.name)
	}
	setView(t, host, a11yView{"host", "light", 1024, 900})
	setView(t, pres, a11yView{"projector", "light", 1920, 1080})

	start := time.Now()
	doSteps(t, pres, "Stop on the presenter cancels the run", chromedp.Click(chromedp.CSS(stop)))
	doStepsWithin(t, pres, "the presenter tells the room, and Stop goes away", runStepTimeout, classPoll(roomNote+` && `+stopGone))
	doSteps(t, learner, "the phone tells the room too", classPoll(roomNote))
	doSteps(t, host, "the host's panel says cancelled, and Stop goes away", classPoll(status+` === "cancelled" && `+stopGone))
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the run took %v to end after Stop, want a few seconds at most (its windows are 20 s)", d)
	}
	shotView(t, pres, "class-presenter-run-stopped-1920-light", a11yView{"projector", "light", 1920, 1080}, "")

	failed := failFirstPanel(t, host)
	runLong("host runs the lab again")
	doStepsWithin(t, host, "Stop shows again on the host view", runStepTimeout, classPoll(status+` !== "cancelled" && `+stopShown))
	if n := failed.Load(); n != 1 {
		t.Fatalf("the host's first request for the second run's panel was to fail; %d failed", n)
	}
	doSteps(t, host, "the host view's Stop cancels the run",
		chromedp.Click(chromedp.CSS(stop)),
		classPoll(status+` === "cancelled" && `+stopGone),
		classPoll(`document.querySelector('[data-testid="class-run-error"]').textContent === ""`))
	doSteps(t, pres, "the presenter hears of it", classPoll(roomNote+` && `+stopGone))
}

// failFirstPanel makes the first request ctx's page sends for a run's
// panel (GET /runs/{id}/panel) fail as a refused connection, and lets
// every later one through. It returns how many it failed.
func failFirstPanel(t *testing.T, ctx context.Context) *atomic.Int32 {
	t.Helper()
	var failed atomic.Int32
	paused := make(chan fetch.RequestID, 16)
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- e.RequestID
		}
	}); err != nil {
		t.Fatalf("listening to the host's requests: %v", err)
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case id := <-paused:
				if failed.CompareAndSwap(0, 1) {
					_, _ = chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: id, ErrorReason: network.ErrorReasonConnectionRefused})
					continue
				}
				_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
			}
		}
	}()
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/runs/*/panel"}}}); err != nil {
		t.Fatalf("intercepting the host's requests for a run's panel: %v", err)
	}
	return &failed
}
