//go:build browser

package main

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// coursePage is a course site on its own origin (another port of
// 127.0.0.1): GET /?src=URL answers a page that frames URL, and marks the
// iframe data-loaded when its load event fires (which it does whether the
// framed page was shown or refused).
func coursePage(t *testing.T) *httptest.Server {
	t.Helper()
	course := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html><html lang="en"><head><title>A course page</title></head><body>
<h1>Week 3: Little's law</h1>
<iframe id="w" title="Little's law model" width="900" height="900" src="%s" onload="this.dataset.loaded = '1'"></iframe>
</body></html>`, html.EscapeString(r.URL.Query().Get("src")))
	}))
	t.Cleanup(course.Close)
	return course
}

// childFrame returns the one frame inside the page.
func childFrame(t *testing.T, ctx context.Context) *cdp.Frame {
	t.Helper()
	tree, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		t.Fatalf("frame tree: %v", err)
	}
	if len(tree.FrameTree.ChildFrames) != 1 {
		t.Fatalf("the course page has %d frames, want 1", len(tree.FrameTree.ChildFrames))
	}
	return tree.FrameTree.ChildFrames[0].Frame
}

// openCourse loads the course page framing widget and waits for the
// iframe's load event.
func openCourse(t *testing.T, ctx context.Context, course *httptest.Server, widget string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(course.URL+"/?src="+url.QueryEscape(widget))); err != nil {
		t.Fatal(err)
	}
	pollTrue(t, ctx, "the iframe's load event", `document.getElementById("w").dataset.loaded === "1"`)
}

// TestBrowserWidgetEmbedded: a course page on another origin frames the
// standalone Little's law widget with a preset in its query. With the
// server's defaults (--widget-frame-ancestors *) the widget shows in the
// frame with the preset's values and its script recomputes as a learner
// types. The same course page framing a lesson is refused (the lessons'
// --frame-ancestors stays 'self'), and so is the widget of a server whose
// --widget-frame-ancestors is 'self': which is what makes the first half
// mean something.
func TestBrowserWidgetEmbedded(t *testing.T) {
	course := coursePage(t)
	preset := "/widgets/littles-law?arrivals=48&latency_ms=230&goal=arrivals:48:0.5,latency_ms:100:2&goal_text=" +
		url.QueryEscape("Bring the time in system to 100 ms.")

	// Allowed: the widgets' default lets any course page frame them.
	srv := start(t, nil, "--data", t.TempDir())
	ctx := newBrowser(t)
	openCourse(t, ctx, course, srv.url+preset)
	if f := childFrame(t, ctx); f.UnreachableURL != "" || !strings.HasPrefix(f.URL, srv.url+"/widgets/littles-law") {
		t.Fatalf("allowed frame: url %q, unreachable %q: want the widget", f.URL, f.UnreachableURL)
	}
	iframes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS("#w")))
	if err != nil || len(iframes) != 1 {
		t.Fatalf("iframe node: %v (%d)", err, len(iframes))
	}
	in := chromedp.FromNode(iframes[0])
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`[data-widget-root][data-live="true"]`), in)); err != nil {
		t.Fatalf("widgets.js did not take over inside the frame: %v", err)
	}
	if got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid="implied-inflight"]`), in)); err != nil || strings.TrimSpace(got) != "11.04" {
		t.Errorf("in flight inside the frame = %q (%v), want the preset's 11.04", got, err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Focus(chromedp.CSS("#w-littles-law-latency_ms-n"), in),
		chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.KeyEvent("100"),
	); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="widget-goal"].reached`), in)); err != nil {
		t.Fatalf("the framed widget did not reach its goal at 100 ms: %v", err)
	}
	if got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("[data-sentence]"), in)); err != nil || !strings.Contains(got, "4.8 requests are inside") {
		t.Errorf("sentence inside the frame = %q (%v)", got, err)
	}
	screenshot(t, ctx, "widget-embedded")

	// Refused: a lesson page of the same server (frame-ancestors 'self').
	openCourse(t, ctx, course, srv.url+"/lessons/littles-law")
	if f := childFrame(t, ctx); f.UnreachableURL == "" && strings.HasPrefix(f.URL, srv.url) {
		t.Errorf("a lesson page was framed by %s: frame url %q", course.URL, f.URL)
	}
	// Refused: a server whose widgets may be framed by itself only.
	closed := start(t, nil, "--data", t.TempDir(), "--widget-frame-ancestors", "'self'")
	openCourse(t, ctx, course, closed.url+preset)
	if f := childFrame(t, ctx); f.UnreachableURL == "" && strings.HasPrefix(f.URL, closed.url) {
		t.Errorf("a server with widget frame-ancestors 'self' was framed by %s: frame url %q", course.URL, f.URL)
	}
}

// TestBrowserWidgetKindsAccessible audits every standalone widget with
// axe-core (the rules of TestBrowserAccessibility), after widgets.js has
// taken over, in the states a learner meets: Little's law with its goal
// reached, the admission limit with no queue that fits, the two ceilings
// with the processor binding, the queue curve past capacity, retries over
// capacity, late capacity that never drains, the variability's wait as
// Kingman's approximation (four curves), a fan-out past 100 and the USL
// past its peak. The site audit covers a
// few widget pages; this covers each kind and state, in light and dark.
func TestBrowserWidgetKindsAccessible(t *testing.T) {
	src := axeSource(t)
	srv := start(t, nil, "--data", t.TempDir())
	pages := []struct {
		name string // the kind and the state it is in
		path string
	}{
		{"littles-law, goal reached", "/widgets/littles-law?arrivals=48&latency_ms=100&goal=latency_ms:100:2&goal_text=Bring+it+to+100+ms"},
		{"littles-law, arrivals implied, undefined", "/widgets/littles-law?solve=arrivals&inflight=4&latency_ms=0"},
		{"admission-limit, no queue fits", "/widgets/admission-limit?workers=1&budget_ms=20&service_ms=21"},
		{"two-ceilings, processor binds", "/widgets/two-ceilings?workers=16&cpus=1&spin_ms=2&wait_ms=18"},
		{"queue-curve, past capacity", "/widgets/queue-curve?servers=4&service_ms=20&arrivals=250"},
		{"retry-amplification, over capacity", "/widgets/retry-amplification?p=0.5&retries=3&utilisation=0.8&goal=load_pct:90:10"},
		{"late-scaling, never drains", "/widgets/late-scaling?demand=120&capacity_before=100&capacity_after=110&lag_s=60"},
		{"variability-wait, an approximation", "/widgets/variability-wait?servers=4&arrival_scv=0.5&service_scv=9"},
		{"fanout-tail, past 100", "/widgets/fanout-tail?fanout=250&p=0.002&percentile=0.999"},
		{"usl, past the peak", "/widgets/usl?lambda=100&sigma=0.05&kappa=0.001&n_max=64"},
	}
	for _, scheme := range []string{"light", "dark"} {
		t.Run(scheme, func(t *testing.T) {
			ctx := newBrowser(t)
			if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
			}); err != nil {
				t.Fatal(err)
			}
			for _, p := range pages {
				if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+p.path)); err != nil {
					t.Fatalf("%s: %v", p.name, err)
				}
				pollTrue(t, ctx, p.name+": widgets.js", `document.querySelector("[data-widget-root]").dataset.live === "true"`)
				problems, res := axeAudit(t, ctx, src)
				if len(res.Passes) == 0 {
					t.Errorf("%s: axe ran no passing check: the audit did not really run", p.name)
				}
				if len(problems) > 0 {
					screenshot(t, ctx, "a11y-widget-"+scheme+"-"+strings.NewReplacer(" ", "-", ",", "").Replace(p.name))
					t.Errorf("%s (%s), %s: %d accessibility violations:\n%s", p.name, p.path, scheme, len(problems), strings.Join(problems, "\n"))
				}
			}
		})
	}
}
