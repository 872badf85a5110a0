//go:build browser

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The chapter Variability and the tail, as a learner goes through it.
//
// Same mean, different wait: the learner locks "About three times as
// long" and opens the recorded results; the reading is the bimodal lab's
// lab_wait_ms at 65 a second, 28.3 ms.
//
// The slowest of many: the learner locks "About 145 ms" and opens the
// recorded fan-out of 50; the reading is its p50; then runs that preset
// for 3 s against a real lab, and the reading of their run is the same
// column ("Measured in your run"), and their run's table has the
// sub-requests' columns.
//
// When more workers make it slower: the learner locks "Far fewer" and
// opens the recorded coherency sweep; the reading names the row by its
// client count ("with 64 clients"), and the recorded table is drawn
// against its clients with the USL fit. Then the learner runs the preset
// against a real lab with four client counts of 1 s each, and their run
// is drawn the same way; the page with its charts passes the
// accessibility audit.
func TestBrowserVariabilityChapter(t *testing.T) {
	lab := buildLabBinary(t)
	src := axeSource(t)
	srv := start(t, nil, "--data", t.TempDir(), "--lab-command", lab)
	ctx := newBrowserFor(t, 4*time.Minute)
	lockAndOpen := func(slug, predictID, option, table string) string {
		t.Helper()
		predict := `[data-testid="predict-` + predictID + `"]`
		tb := `[data-testid="table-` + table + `"]`
		doSteps(t, ctx, slug+": lock and open the recorded results",
			chromedp.Navigate(srv.url+"/lessons/"+slug),
			chromedp.Click(chromedp.CSS(predict+` [data-testid="option-`+option+`"]`)),
			chromedp.Click(chromedp.CSS(predict+` [data-testid="predict-lock"]`)),
			chromedp.WaitVisible(chromedp.CSS(predict+` [data-testid="predict-locked"]`)),
			clickStable(tb+` [data-testid="table-open"]`),
			chromedp.WaitVisible(chromedp.CSS(tb+` [data-testid="reading"]`)),
		)
		return textOf(t, ctx, tb+` [data-testid="reading"]`)
	}
	contains := func(what, got string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(got, w) {
				t.Errorf("%s %q lacks %q", what, got, w)
			}
		}
	}

	reading := lockAndOpen("same-mean", "same-predict", "c", "same-bimodal-result")
	contains("same-mean's reading", reading, "You predicted About three times as long, near 28 ms", "at 65 a second", "lab_wait_ms", "28.3")

	reading = lockAndOpen("slowest-of-many", "tail-predict", "c", "tail-fan50-result")
	contains("slowest-of-many's reading", reading, "You predicted About 145 ms, a slow sub-request's time", "at 10 a second", "p50_ms")
	const fan = `[data-testid="lab-tail-fan50"]`
	doStepsWithin(t, ctx, "run the fan-out of 50 for 3 s", runStepTimeout,
		chromedp.Click(chromedp.CSS(fan+` [data-testid="lab-settings"] summary`)),
		chromedp.WaitVisible(chromedp.CSS(fan+` [data-testid="run-field-seconds"]`)),
		chromedp.SetValue(chromedp.CSS(fan+` [data-testid="run-field-seconds"]`), "3"),
		clickStable(fan+` [data-testid="lab-run"]`),
		chromedp.WaitVisible(chromedp.CSS(fan+` [data-lab-after] [data-testid="reading"]`)),
	)
	contains("the reading of the learner's fan-out run", textOf(t, ctx, fan+` [data-lab-after] [data-testid="reading"]`), "Measured in your run", "p50_ms")
	contains("the learner's fan-out run", textOf(t, ctx, fan), "sub_requests", "sub_p99_ms")
	screenshot(t, ctx, "slowest-of-many-own-run")

	reading = lockAndOpen("more-workers-slower", "usl-predict", "c", "usl-coherency-result")
	contains("more-workers-slower's reading", reading, "You predicted Far fewer, about a quarter of that", "with 64 clients", "ok_per_sec")
	const tb = `[data-testid="table-usl-coherency-result"]`
	contains("the recorded sweep's chart", textOf(t, ctx, tb+` [data-testid="table-scale-chart"]`), "USL fit", "Clients (closed loop)")
	const usl = `[data-testid="lab-usl-coherency"]`
	doStepsWithin(t, ctx, "run the coherency sweep with 1, 4, 16 and 64 clients of 1 s", runStepTimeout,
		chromedp.Click(chromedp.CSS(usl+` [data-testid="lab-settings"] summary`)),
		chromedp.WaitVisible(chromedp.CSS(usl+` [data-testid="run-field-seconds"]`)),
		chromedp.SetValue(chromedp.CSS(usl+` [data-testid="run-field-clients"]`), "1, 4, 16, 64"),
		chromedp.SetValue(chromedp.CSS(usl+` [data-testid="run-field-seconds"]`), "1"),
		clickStable(usl+` [data-testid="lab-run"]`),
		chromedp.WaitVisible(chromedp.CSS(usl+` [data-lab-after] [data-testid="reading"]`)),
	)
	contains("the reading of the learner's sweep", textOf(t, ctx, usl+` [data-lab-after] [data-testid="reading"]`), "Measured in your run", "with 64 clients")
	contains("the learner's sweep's chart", textOf(t, ctx, usl+` [data-testid="run-chart"]`), "USL fit", "Clients (closed loop)")
	screenshot(t, ctx, "more-workers-slower-own-run")
	for _, v := range []a11yView{{"light, 1280 px", "light", 1280, 900}, {"dark, 375 px", "dark", 375, 800}} {
		setView(t, ctx, v)
		auditPage(t, ctx, src, "more-workers-slower with a recorded and a learner's sweep", v.name)
	}
}
