//go:build browser

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The browser tests drive Debian's chromium through chromedp against a real
// server started by run on 127.0.0.1:0. They are behind the "browser" build
// tag; .ci/run installs chromium, runs them and fails if they were skipped.
// Screenshots go to ../../screenshots (git ignores that folder).

// browserTimeout bounds one whole browser test.
const browserTimeout = 60 * time.Second

// chromiumPath finds the browser: $CHROMIUM, else chromium on PATH.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (apt-get install -y chromium); .ci/run fails on this skip")
	return ""
}

// newBrowser starts a headless chromium with a fresh profile and returns a
// context for one tab. Extra options (for example disabling JavaScript) are
// applied per tab by the caller. Closing happens at cleanup.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	return newBrowserFor(t, browserTimeout)
}

// newBrowserFor is newBrowser bounded by d instead of browserTimeout, for
// a test that keeps one browser through many steps (a class session
// audited in every view), with extra command-line options.
func newBrowserFor(t *testing.T, d time.Duration, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Smooth scrolling (app.css, for people who have not asked for
		// reduced motion) moves an element while chromedp computes where to
		// click it, and the click lands beside it; a real user who prefers
		// reduced motion gets instant scrolls, and so do the tests.
		chromedp.Flag("force-prefers-reduced-motion", true),
		chromedp.WindowSize(1024, 900),
	)
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	ctx, cancelTimeout := context.WithTimeout(ctx, d)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// newTab opens another tab in the same browser (same cookies).
func newTab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	return ctx
}

// screenshot saves a full-page PNG under screenshots/NAME.png at the
// repository root, for people to look at; it is not compared.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	keepShot(t, name, png)
}

// keepShot writes png as screenshots/NAME.png at the repository root.
func keepShot(t *testing.T, name string, png []byte) {
	t.Helper()
	dir := filepath.Join("..", "..", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// textOf returns the trimmed visible text of the first node matching sel.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	// A fragment the page replaces between finding the node and reading
	// it leaves chromium a node id it has discarded: find it again (a run's
	// end re-renders its slot just after its status reads done).
	var err error
	for range 5 {
		var s string
		if s, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel))); err == nil {
			return strings.TrimSpace(s)
		}
		if !strings.Contains(err.Error(), "No node with given id") && !strings.Contains(err.Error(), "Could not find node with given id") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("text of %s: %v", sel, err)
	return ""
}

// clickToPage clicks what sel finds (a link or a submit button that leaves
// the page) and waits for the next page's load event. Without the wait, a
// query that follows can find a node of the page still loading, whose id
// chromium then discards ("Could not find node with given id").
func clickToPage(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel)))(ctx, t)
		return chromedp.Void{}, err
	}
}

// clickStable clicks what sel finds once it is visible and has stopped
// moving: the same box in two readings 50 ms apart. chromedp reads where
// the element is and then sends the mouse there; a page that is still
// laying itself out (a status line that re-wraps above a button as a
// message arrives) moves the button in between and the click lands beside
// it. A person would not click a button while it moves; the browser tests
// wait as they would.
func clickStable(sel string) chromedp.Action[chromedp.Void] {
	box := `(() => { const e = document.querySelector(` + "`" + sel + "`" + `);
		if (!e || e.hidden || !e.offsetParent) { window.__clickBox = ""; return false; }
		const r = e.getBoundingClientRect(), k = [r.x, r.y, r.width, r.height].join(",");
		const same = window.__clickBox === k; window.__clickBox = k; return same; })()`
	wait := chromedp.Poll[chromedp.Void](box, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout))
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := wait(ctx, t); err != nil {
			return chromedp.Void{}, err
		}
		return chromedp.Click(chromedp.CSS(sel))(ctx, t)
	}
}

// stepTimeout bounds one browser step, so a failing step leaves time to
// take a screenshot of what the page showed.
const stepTimeout = 10 * time.Second

// runStepTimeout bounds a step that waits for a live run to end: the
// lab child's start and its windows, which take several times longer on
// a loaded machine (the polls in those steps give the run 45 s).
const runStepTimeout = 50 * time.Second

// doSteps runs steps one at a time; on the first failure it saves a
// screenshot named after what and fails the test naming the step.
func doSteps(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	doStepsWithin(t, ctx, what, stepTimeout, steps...)
}

// doStepsWithin is doSteps with each step bounded by d instead of
// stepTimeout (runStepTimeout for a step that waits for a run to end).
func doStepsWithin(t *testing.T, ctx context.Context, what string, d time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	for i, step := range steps {
		sctx, cancel := context.WithTimeout(ctx, d)
		err := chromedp.Do(sctx, step)
		cancel()
		if err != nil {
			if msgs, derr := chromedp.Run(ctx, chromedp.Evaluate[string](`[location.pathname].concat(Array.from(document.querySelectorAll('[data-testid$="message"], [data-error], .form-error, [data-testid="class-run-note"]:not([hidden])')).map(e => e.textContent.trim()).filter(Boolean)).join(" | ")`)); derr == nil && msgs != "" {
				t.Logf("page and its messages: %s", msgs)
			}
			screenshot(t, ctx, strings.ReplaceAll(what, " ", "-")+"-failed")
			t.Fatalf("%s, step %d: %v", what, i, err)
		}
	}
}

// skipPredicts skips, as the browser's learner, every Predict of lesson
// slug, one gate at a time (each skip opens the page past that Predict's
// gate, where the next one shows), so the lesson's page shows all of it.
// It ends on the lesson's page.
func skipPredicts(base, slug string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		for range 20 {
			if _, err := chromedp.Navigate(base+"/lessons/"+slug)(ctx, t); err != nil {
				return chromedp.Void{}, err
			}
			left, err := chromedp.Evaluate[int](`(async () => {
				const form = document.querySelector('[data-testid="predict-skip"]')?.form;
				if (!form) return 0;
				const res = await fetch(form.getAttribute("action"), {method: "POST", body: new URLSearchParams({action: "skip"}), headers: {Accept: "application/json"}, credentials: "same-origin"});
				if (!res.ok) throw new Error("skip: " + res.status);
				return 1;
			})()`, chromedp.EvalAwaitPromise)(ctx, t)
			if err != nil {
				return chromedp.Void{}, err
			}
			if left == 0 {
				return chromedp.Void{}, nil
			}
		}
		return chromedp.Void{}, fmt.Errorf("%s: a Predict to skip is still on the page after 20 skips", slug)
	}
}
