//go:build browser

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"capacitylab/evidence"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/sim"
)

// TestBrowserReport opens load's HTML report (evidence.WriteReport) of a
// simulated sweep through the knee of 4 workers of 20 ms from a file, in
// a chromium that is offline and blocks every http(s) and websocket
// request, and checks that the page asked for nothing but itself, that
// both charts drew, and that axe finds no violation light or dark, 1280
// and 375 pixels wide; it keeps a full-page screenshot of each view in
// docs/screenshots/load-report-WIDTH-SCHEME.png.
func TestBrowserReport(t *testing.T) {
	src := axeSource(t)
	rep, err := loadrun.Sweep{Rates: []float64{40, 80, 120, 160, 190, 240, 320, 40}, Seconds: 6, Seed: 7,
		Driver: sim.Model{Lab: labsvc.Config{Workers: 4, SpinMS: 0, WaitMS: 20, CPUs: 1}}}.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := evidence.Dataset{Name: "records.csv", Format: evidence.LoadCSV, Timing: evidence.FromIntended, Records: rep.Records(),
		Data: &evidence.ReportData{Tool: "capacitylab load", Version: 1, Target: "http://127.0.0.1:8000", Loop: "open", Schedule: "poisson",
			TimeoutMS: 2000, QueueHeader: "X-Queue-Wait-Ms", Rows: rep.Rows()}}
	for _, r := range rep.Rows() {
		d.Windows = append(d.Windows, evidence.Window{Offered: r.Offered, Seconds: r.Seconds})
	}
	a := evidence.Analyze(d, evidence.Options{BudgetMS: 250})
	path := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := evidence.WriteReport(f, d, a); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	url := "file://" + path

	ctx := newBrowser(t)
	var mu sync.Mutex
	var asked []string
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			asked = append(asked, e.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	// Offline, and every http(s) and websocket URL blocked besides.
	var block []*network.BlockPattern
	for _, scheme := range []string{"http", "https", "ws", "wss"} {
		block = append(block, &network.BlockPattern{URLPattern: scheme + "://*:*/*", Block: true})
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: block}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady("#checklist")); err != nil {
		t.Fatal(err)
	}
	// The blocked patterns hold (Chromium 148 refuses the offline emulation
	// by rule, so the block is the whole of it): a fetch of this machine fails.
	blocked, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch("http://127.0.0.1:9/").then(() => "fetched", e => "failed: " + e.message)`, chromedp.EvalAwaitPromise))
	if err != nil || !strings.HasPrefix(blocked, "failed") {
		t.Fatalf("a fetch from the report's page: %q (%v), want it to fail offline", blocked, err)
	}
	mu.Lock()
	for _, u := range asked {
		if u != url && u != "http://127.0.0.1:9/" {
			t.Errorf("the report asked for %s: it must need nothing but itself", u)
		}
	}
	if len(asked) == 0 {
		t.Error("no request seen, not even the file's own: the listener did not work")
	}
	mu.Unlock()

	// Both charts drew: each plot has a box and a line through points.
	drawn, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[...document.querySelectorAll("figure.chart")].map(f => {
		const plot = f.querySelector("svg.chart-plot"), box = plot && plot.getBoundingClientRect();
		return box && box.width > 200 && box.height > 100 ? f.querySelectorAll("path.ln").length * 100 + f.querySelectorAll(".pt").length : -1;
	})`))
	if err != nil {
		t.Fatal(err)
	}
	if len(drawn) != 2 || drawn[0] < 100+8 || drawn[1] < 300+3*7 {
		t.Errorf("charts drawn %v: want two, ok/s with its line and 8 points, latency with three lines and their points", drawn)
	}
	if text := textOf(t, ctx, "#checklist"); text != "The method's checklist: 9 of 9 met" {
		t.Errorf("checklist heading %q", text)
	}

	for _, v := range []a11yView{
		{"light, 1280 px", "light", 1280, 900},
		{"dark, 1280 px", "dark", 1280, 900},
		{"light, 375 px", "light", 375, 800},
		{"dark, 375 px", "dark", 375, 800},
	} {
		setView(t, ctx, v)
		// Nothing is wider than the screen but the tables, which scroll
		// in their own regions.
		wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > innerWidth`))
		if err != nil {
			t.Fatal(err)
		}
		if wide {
			t.Errorf("%s: the page scrolls sideways", v.name)
		}
		auditPage(t, ctx, src, "load report", v.name)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		name := "load-report-" + strings.Fields(v.name)[1] + "-" + v.scheme + ".png"
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "screenshots", name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
