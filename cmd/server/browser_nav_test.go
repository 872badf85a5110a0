//go:build browser

package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// A lesson's contents: beside the text on a wide screen, the section being
// read marked as the learner scrolls, the lessons before and after always
// in the nav; on a phone a bar that stays at the top with a Contents
// button and the two lessons; without script a plain list.
func TestBrowserLessonNav(t *testing.T) {
	srv := start(t, nil, "--data", t.TempDir())
	ctx := newBrowser(t)
	const nav = `document.querySelector('[data-testid="lesson-nav"]')`
	doSteps(t, ctx, "open a lesson at 1280",
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(srv.url+"/lessons/saturation"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="lesson-nav"]`)),
	)
	// Before the Predict is answered, the sections past its gate are
	// listed in the gate's note under their ids: every link lands.
	landed, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const links = [...document.querySelectorAll('[data-testid="lesson-nav"] .toc a')].map(a => a.getAttribute("href"));
		const gated = document.querySelectorAll('[data-testid="lesson-gate"] li[id]').length;
		return [links.every(h => !!document.querySelector(h)), gated > 0].join(" ");
	})()`))
	if err != nil || landed != "true true" {
		t.Fatalf("every contents link lands, some in the gate's note = %q (%v)", landed, err)
	}
	doSteps(t, ctx, "read the whole lesson", skipPredicts(srv.url, "saturation"))
	// The contents list every section, and sit left of the article.
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const n = `+nav+`, art = document.querySelector("article.lesson");
		const secs = [...art.querySelectorAll(":scope > h2[id]")].map(h => "#" + h.id);
		const links = [...n.querySelectorAll(".toc a")].map(a => a.getAttribute("href"));
		return [n.getBoundingClientRect().right <= art.getBoundingClientRect().left, links.length === secs.length + 1,
			secs.every(s => links.includes(s)), !!n.querySelector('[data-testid="nav-prev-lesson"]'), !!n.querySelector('[data-testid="nav-next-lesson"]')].join(" ");
	})()`))
	if err != nil || got != "true true true true true" {
		t.Fatalf("contents beside the lesson, every section, prev and next = %q (%v)", got, err)
	}
	// Scroll to the third section: its link is the current one, and the
	// contents (sticky) are still in view with the next lesson.
	doSteps(t, ctx, "scroll to a section",
		chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("article.lesson > h2[id]")[2].scrollIntoView()`),
		chromedp.Poll[chromedp.Void](`(() => { const a = `+nav+`.querySelector('.toc a[aria-current="location"]');
			return a && a.getAttribute("href") === "#" + document.querySelectorAll("article.lesson > h2[id]")[2].id; })()`),
	)
	inView, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const r = document.querySelector('[data-testid="nav-next-lesson"]').getBoundingClientRect();
		return r.top >= 0 && r.bottom <= innerHeight; })()`))
	if err != nil || !inView {
		t.Errorf("the next lesson is not in view after scrolling (%v)", err)
	}
	screenshot(t, ctx, "lesson-nav-1280")

	// A phone: a bar at the top, still there far down the page, with the
	// lessons before and after; Contents opens the list.
	doSteps(t, ctx, "the phone's bar",
		chromedp.EmulateViewport(375, 740),
		chromedp.Navigate(srv.url+"/lessons/saturation"),
		chromedp.WaitVisible(chromedp.CSS(`.lesson-nav-toggle button`)),
		chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 4000)`),
		chromedp.Poll[chromedp.Void](`Math.abs(`+nav+`.getBoundingClientRect().top) < 2`),
	)
	got, err = chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const b = document.querySelector(".lesson-nav-toggle button"), n = `+nav+`;
		const visible = (sel) => { const r = n.querySelector(sel).getBoundingClientRect(); return r.width > 0 && r.top >= 0 && r.bottom <= innerHeight; };
		return [b.getAttribute("aria-expanded"), getComputedStyle(n.querySelector(".toc")).display, visible('[data-testid="nav-prev-lesson"]'), visible('[data-testid="nav-next-lesson"]')].join(" ");
	})()`))
	if err != nil || got != "false none true true" {
		t.Errorf("folded bar: expanded, list display, prev and next in view = %q (%v), want \"false none true true\"", got, err)
	}
	doSteps(t, ctx, "open the contents", chromedp.Click(chromedp.CSS(`.lesson-nav-toggle button`)),
		chromedp.Poll[chromedp.Void](`document.querySelector(".lesson-nav-toggle button")?.getAttribute("aria-expanded") === "true" &&
			getComputedStyle(`+nav+`.querySelector(".toc")).display !== "none"`))
	screenshot(t, ctx, "lesson-nav-375-open")

	// Without script: a plain list at the top of the lesson.
	noJS := newTab(t, ctx)
	if _, err := chromedp.Call(noJS, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	doSteps(t, noJS, "the lesson without script", chromedp.EmulateViewport(375, 740), chromedp.Navigate(srv.url+"/lessons/saturation"))
	got, err = chromedp.Run(noJS, chromedp.Evaluate[string](`[getComputedStyle(document.querySelector('[data-testid="lesson-toc"]')).display,
		document.querySelectorAll('.lesson-nav-toggle').length, document.querySelector('[data-testid="nav-next-lesson"]').offsetParent !== null].join(" ")`))
	if err != nil || got != "block 0 true" {
		t.Errorf("without script: list display, toggles, next lesson shown = %q (%v)", got, err)
	}
}

// TestBrowserLessonsFitPhones checks that no lesson scrolls sideways at
// 320 and 375 px, at its top and scrolled through its sections, where the
// folded contents bar names the section being read (a long name is cut, it
// once widened the page by 29 px) and the two-ceilings chart labels its
// bars (its formulas once ran 30 px past the screen). Wide tables scroll
// inside their own regions and do not count.
func TestBrowserLessonsFitPhones(t *testing.T) {
	srv := start(t, nil, "--data", t.TempDir())
	ctx := newBrowser(t)
	slugs := []string{"littles-law", "saturation", "overload", "open-closed", "pause-both-loops", "bottleneck-moves", "hidden-queue", "criterion", "admission-limit", "limit-edges", "service-time-moves", "shared-queue"}
	// Skipping every Predict shows each lesson whole, past its gates.
	for _, slug := range slugs {
		doSteps(t, ctx, "skip the Predicts of "+slug, skipPredicts(srv.url, slug))
	}
	for _, w := range []int64{320, 375} {
		for _, slug := range slugs {
			doSteps(t, ctx, fmt.Sprintf("open %s at %d px", slug, w), chromedp.EmulateViewport(w, 740), chromedp.Navigate(srv.url+"/lessons/"+slug))
			got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
				const worst = [];
				const h = document.documentElement.scrollHeight;
				for (const f of [0, 0.2, 0.4, 0.6, 0.8]) {
					window.scrollTo(0, f * h);
					await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
					worst.push(document.documentElement.scrollWidth - innerWidth);
				}
				return worst.join(",");
			})()`, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatal(err)
			}
			for _, over := range strings.Split(got, ",") {
				if over != "0" {
					t.Errorf("%s at %d px scrolls sideways (px past the screen at 0, 20, 40, 60, 80%% down: %s)", slug, w, got)
					break
				}
			}
		}
	}
}

// A run page's chart text is the body's size at a phone's width and a
// desktop's (the SVG is not scaled down): measured as chromium renders an
// axis label, a legend entry and a distribution's tick. A chart stop shows
// its values on keyboard focus.
func TestBrowserChartTextSize(t *testing.T) {
	dataDir := t.TempDir()
	seedRun(t, dataDir, "chartsize001", []float64{20, 40, 60}, 2)
	srv := start(t, nil, "--data", dataDir)
	ctx := newBrowser(t)
	for _, width := range []int64{375, 1280} {
		doSteps(t, ctx, fmt.Sprintf("open the run at %d", width),
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(srv.url+"/runs/chartsize001"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-distribution"] svg.chart-plot`)),
		)
		// For each label: its computed font size against the body's, and
		// its rendered height against its font size (a scaled-down SVG
		// keeps the computed size but renders smaller).
		m, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => {
			const body = parseFloat(getComputedStyle(document.body).fontSize);
			const tick = document.querySelector('[data-testid="run-chart"] svg.chart-plot .tick');
			const dist = document.querySelector('[data-testid="run-distribution"] svg.chart-plot .tick');
			const legend = document.querySelector('[data-testid="run-chart"] .chart-legend li');
			const plot = document.querySelector('[data-testid="run-chart"] svg.chart-plot');
			const fs = (el) => parseFloat(getComputedStyle(el).fontSize);
			return [body, fs(tick), tick.getBoundingClientRect().height, fs(dist), dist.getBoundingClientRect().height, fs(legend),
				plot.getBoundingClientRect().width, document.documentElement.scrollWidth, innerWidth];
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		body, tick, tickH, dist, distH, legend, plotW, scrollW, innerW := m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8]
		t.Logf("%d px: body %.1f px; axis label %.1f px (rendered %.1f px high); distribution tick %.1f px (%.1f high); legend %.1f px; plot %.0f px wide",
			width, body, tick, tickH, dist, distH, legend, plotW)
		for _, c := range []struct {
			what   string
			size   float64
			height float64
		}{{"axis label", tick, tickH}, {"distribution tick", dist, distH}, {"legend", legend, -1}} {
			if c.size != body {
				t.Errorf("%d px: %s is %.1f px, the body %.1f px", width, c.what, c.size, body)
			}
			// A line of text renders about 1.1 to 1.4 times its size high.
			if c.height >= 0 && (c.height < 1.0*body || c.height > 1.6*body) {
				t.Errorf("%d px: %s renders %.1f px high for %.1f px text: scaled", width, c.what, c.height, body)
			}
		}
		if scrollW > innerW {
			t.Errorf("%d px: the page scrolls sideways (%v > %v)", width, scrollW, innerW)
		}
		screenshot(t, ctx, fmt.Sprintf("run-chart-%d", width))
	}
	// Keyboard: the first stop takes focus and shows its values. (A
	// headless tab is not focused, so :focus would never match without
	// focus emulation.)
	if _, err := chromedp.Call(ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const stop = document.querySelector('[data-testid="run-chart"] .stop[tabindex="0"]');
		stop.focus();
		const tip = stop.querySelector(".tip");
		return [document.activeElement === stop, getComputedStyle(tip).visibility, stop.getAttribute("aria-label")].join(" | ");
	})()`))
	if err != nil || !strings.HasPrefix(got, "true | visible | Window 1: offered 20 a second; ok 20/s (model 20)") {
		t.Errorf("focused stop: %q (%v)", got, err)
	}
	screenshot(t, ctx, "run-chart-focus")
}
