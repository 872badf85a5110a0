//go:build browser

package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"capacitylab/lti"
	"capacitylab/lti/ltitest"
)

// headerLinks reads the site header's links in a page.
const headerLinks = `[...document.querySelectorAll('header .site-links a')].map(a => a.textContent.trim())`

// TestBrowserLTIFrameMenu launches a learner into a lesson inside the
// simulated platform's course page, as TestBrowserLTILaunchInIframe does:
// in the frame the header links the lessons, the runs and their progress,
// and neither Teach nor Join, on the lesson and on the pages its links
// lead to; the same lesson opened by the window itself (the partitioned
// session cookie does not reach it there) links all five. It saves the
// framed lesson in the platform's page at 1280 px, and the frame's page
// at a phone's 375 px, light and dark.
func TestBrowserLTIFrameMenu(t *testing.T) {
	sim, srv := simAndServer(t)
	tool := strings.Replace(srv.url, "127.0.0.1", "localhost", 1)
	sim.ToolLaunch = tool + "/lti/launch"
	// A launch, four pages in the frame, four screenshots and the lesson
	// outside: more than browserTimeout on a busy machine.
	ctx := newBrowserFor(t, 3*time.Minute)
	course := sim.CourseURL(tool+"/lti/login", ltitest.Launch{User: "stu-menu", Name: "Ada", Target: tool + "/lessons/littles-law"})
	if err := chromedp.Do(ctx, chromedp.Navigate(course)); err != nil {
		t.Fatal(err)
	}
	in := frameTarget(t, ctx, tool+"/lessons/littles-law", "lti-frame-menu")
	framed := []string{"Lessons", "Runs", "Your service", "Your progress"}
	for _, page := range []string{"/lessons/littles-law", "/progress", "/runs", "/"} {
		if page != "/lessons/littles-law" {
			doSteps(t, in, "open "+page+" in the frame", chromedp.Navigate(tool+page), chromedp.WaitVisible(chromedp.CSS(`header .site-links`)))
		}
		got, err := chromedp.Run(in, chromedp.Evaluate[[]string](headerLinks))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, framed) {
			t.Errorf("in the platform's frame, %s links %q, want %q", page, got, framed)
		}
	}
	doSteps(t, in, "back to the lesson", chromedp.Navigate(tool+"/lessons/littles-law"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="predict-littles-double"]`)))
	for _, v := range []a11yView{{"1280-light", "light", 1280, 900}, {"1280-dark", "dark", 1280, 900}} {
		setView(t, ctx, v)
		screenshot(t, ctx, "lti-frame-menu-"+v.name)
	}
	// The launch's session cookie, partitioned to the platform's page.
	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{tool + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	var session *network.Cookie
	for _, c := range cookies.Cookies {
		if c.Name == lti.SessionCookie {
			session = c
		}
	}
	if session == nil {
		t.Fatal("no session cookie after the launch")
	}

	// Outside the platform (the window itself opens the lesson: the
	// session cookie, partitioned to the platform's page, does not come),
	// the header links everything.
	doSteps(t, ctx, "the lesson outside the platform", chromedp.Navigate(tool+"/lessons/littles-law"), chromedp.WaitVisible(chromedp.CSS(`header .site-links`)))
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](headerLinks))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Lessons", "Runs", "Your service", "Teach", "Join", "Your progress"}; !slices.Equal(got, want) {
		t.Errorf("outside the platform the lesson links %q, want %q", got, want)
	}
	// A phone shows the platform's frame across its whole width: the
	// frame's page at 375 px is the lesson with the launch's session, here
	// given to the window itself.
	yes := true
	if _, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: session.Name, Value: session.Value, URL: tool + "/",
		Secure: &yes, HTTPOnly: &yes, SameSite: network.CookieSameSiteNone}); err != nil {
		t.Fatal(err)
	}
	doSteps(t, ctx, "the lesson with the launch's session", chromedp.Navigate(tool+"/lessons/littles-law"), chromedp.WaitVisible(chromedp.CSS(`header .site-links`)))
	for _, v := range []a11yView{{"375-light", "light", 375, 900}, {"375-dark", "dark", 375, 900}} {
		setView(t, ctx, v)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](headerLinks))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, framed) {
			t.Errorf("with the launch's session at %s, the lesson links %q, want %q", v.name, got, framed)
		}
		screenshotView(t, ctx, "lti-frame-menu-"+v.name)
	}
}

// screenshotView is screenshot of what the viewport shows, not the whole
// page: the part of a long page a view is about.
func screenshotView(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join("..", "..", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// focusRing reads the outline of the element that has keyboard focus and
// the page's error colour, both as computed.
const focusRing = `(() => {
  const el = document.activeElement;
  const cs = getComputedStyle(el);
  const probe = document.createElement('span');
  probe.style.color = 'var(--bad)';
  document.body.append(probe);
  const bad = getComputedStyle(probe).color;
  probe.remove();
  return {tag: el.tagName, style: cs.outlineStyle, width: parseFloat(cs.outlineWidth), colour: cs.outlineColor, bad};
})()`

type ringInfo struct {
	Tag    string  `json:"tag"`
	Style  string  `json:"style"`
	Width  float64 `json:"width"`
	Colour string  `json:"colour"`
	Bad    string  `json:"bad"`
}

// hue is the hue in degrees of a computed "rgb(r, g, b)" colour, and its
// saturation (0 to 1).
func hue(t *testing.T, rgb string) (h, sat float64) {
	t.Helper()
	var r, g, b float64
	if _, err := fmt.Sscanf(rgb, "rgb(%g, %g, %g)", &r, &g, &b); err != nil {
		t.Fatalf("colour %q: %v", rgb, err)
	}
	r, g, b = r/255, g/255, b/255
	hi, lo := math.Max(r, math.Max(g, b)), math.Min(r, math.Min(g, b))
	if hi == lo {
		return 0, 0
	}
	switch hi {
	case r:
		h = math.Mod((g-b)/(hi-lo), 6)
	case g:
		h = (b-r)/(hi-lo) + 2
	default:
		h = (r-g)/(hi-lo) + 4
	}
	h = math.Mod(h*60+360, 360)
	return h, (hi - lo) / (1 - math.Abs(hi+lo-1))
}

// TestBrowserFocusRingIsNotErrorRed tabs to the first controls of a
// lesson, light and dark: each shows a solid ring at least 2 px wide that
// is neither the page's error colour nor any red; so does an option of
// its Predict. It saves the lesson with the option focused at 1280 and
// 375 px, light and dark.
func TestBrowserFocusRingIsNotErrorRed(t *testing.T) {
	srv := start(t, nil, "--data", t.TempDir())
	ctx := newBrowser(t)
	for _, v := range []a11yView{{"1280-light", "light", 1280, 900}, {"1280-dark", "dark", 1280, 900}, {"375-light", "light", 375, 900}, {"375-dark", "dark", 375, 900}} {
		doSteps(t, ctx, "open lesson 1", chromedp.Navigate(srv.url+"/lessons/littles-law"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="predict-littles-double"]`)))
		setView(t, ctx, v)
		// The skip link, then the header's links, by keyboard.
		for i := range 3 {
			doSteps(t, ctx, "tab", chromedp.KeyEvent("\t"))
			ring, err := chromedp.Run(ctx, chromedp.Evaluate[ringInfo](focusRing))
			if err != nil {
				t.Fatal(err)
			}
			if ring.Style != "solid" || ring.Width < 2 {
				t.Errorf("%s, stop %d (%s): focus ring %s %.1f px", v.name, i, ring.Tag, ring.Style, ring.Width)
			}
			h, sat := hue(t, ring.Colour)
			if ring.Colour == ring.Bad || sat > 0.2 && (h < 25 || h > 330) {
				t.Errorf("%s, stop %d (%s): focus ring %s (hue %.0f) is red; the error colour is %s", v.name, i, ring.Tag, ring.Colour, h, ring.Bad)
			}
		}
		doSteps(t, ctx, "focus an option", chromedp.Focus(chromedp.CSS(`[data-testid="predict-littles-double"] input[type=radio]`)),
			chromedp.Evaluate[chromedp.Void](`document.activeElement.scrollIntoView({block: "center"})`))
		ring, err := chromedp.Run(ctx, chromedp.Evaluate[ringInfo](focusRing))
		if err != nil {
			t.Fatal(err)
		}
		if h, sat := hue(t, ring.Colour); ring.Colour == ring.Bad || sat > 0.2 && (h < 25 || h > 330) {
			t.Errorf("%s: a focused option's ring is %s", v.name, ring.Colour)
		}
		screenshotView(t, ctx, "focus-ring-"+v.name)
	}
}

// midWordBreaks lists the visible table headers whose text wraps inside a
// word: a line that starts right after a letter or digit of the same word
// (a header may wrap at a space, after an underscore, a hyphen, a dash or
// a slash, and between its elements).
const midWordBreaks = `(() => {
  for (const t of document.querySelectorAll('.cols-toggle')) if (!t.checked) t.click();
  for (const d of document.querySelectorAll('details')) d.open = true;
  const out = [];
  for (const th of document.querySelectorAll('th')) {
    if (!th.offsetParent) continue;
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    let prev = null, n;
    while ((n = walker.nextNode())) {
      let prevChar = ' ';
      for (let i = 0; i < n.length; i++) {
        const ch = n.data[i];
        const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
        const rect = r.getClientRects()[0];
        if (!rect || ch.trim() === '') { prevChar = ch; continue; }
        if (prev && rect.top > prev.top + prev.height / 2 && !/[\s_\-–\/]/.test(prevChar)) {
          out.push(th.textContent.trim() + ': breaks between "' + prevChar + '" and "' + ch + '"');
        }
        prev = rect; prevChar = ch;
      }
    }
  }
  return out;
})()`

// TestBrowserHeadersBreakBetweenWords opens every course lesson with its
// tables unfolded and every column shown, and a saved run's page with
// wide numbers, at 375 and 1280 px: no column heading wraps inside a word
// (send_lag_p99_ms may wrap after an underscore).
func TestBrowserHeadersBreakBetweenWords(t *testing.T) {
	data := t.TempDir()
	seedRun(t, data, "headers", []float64{20, 40, 48, 60, 80}, 5)
	srv := start(t, nil, "--data", data)
	// Two views of twenty pages: more than browserTimeout on a busy machine.
	ctx := newBrowserFor(t, 5*time.Minute)
	slugs, err := lessonsOf(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	var pages []string
	for _, slug := range slugs {
		doSteps(t, ctx, "answer "+slug, chromedp.Navigate(srv.url+"/lessons/"+slug), chromedp.Evaluate[chromedp.Void](`(async () => {
			for (const s of document.querySelectorAll('[data-block="predict"]')) {
				const post = (body) => fetch("/lessons/`+slug+`/predict/" + s.id, {method: "POST", body: new URLSearchParams(body), credentials: "same-origin"});
				await post({action: "skip"});
				await post({action: "open"});
			}
		})()`, chromedp.EvalAwaitPromise))
		pages = append(pages, "/lessons/"+slug)
	}
	pages = append(pages, "/runs/headers", "/runs", "/progress")
	checked := 0
	for _, width := range []int64{375, 1280} {
		for _, page := range pages {
			doSteps(t, ctx, fmt.Sprintf("%s at %d px", page, width), chromedp.EmulateViewport(width, 900), chromedp.Navigate(srv.url+page), chromedp.WaitReady(`body`))
			bad, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](midWordBreaks))
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range bad {
				t.Errorf("%s at %d px: %s", page, width, b)
			}
			n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll('th')].filter(th => th.offsetParent).length`))
			if err != nil {
				t.Fatal(err)
			}
			checked += n
		}
	}
	if checked == 0 {
		t.Fatal("no table headers were checked")
	}
	t.Logf("%d headers checked", checked)
}

// TestBrowserLTIPickerInWords opens the deep linking picker as an
// instructor launched from the platform: lesson 1's parts are named in
// words ("Predict: " and its prompt, "The lab: 1 worker, 10–40/s", "The
// widget: Little's law"), no label anywhere holds a block's id, and the
// page does not scroll sideways at 375 px (a lab's policy is long). It
// saves the picker's first lesson at 1280 and 375 px, light and dark.
func TestBrowserLTIPickerInWords(t *testing.T) {
	sim, srv := simAndServer(t)
	ctx := newBrowserFor(t, 3*time.Minute)
	doSteps(t, ctx, "deep linking launch", chromedp.Navigate(sim.LoginURL(srv.url+"/lti/login", ltitest.Launch{User: "teach-words", Name: "Grace Hopper",
		DeepLink: true, Multiple: true, Roles: []string{ltitest.RoleInstructor}, Target: srv.url + "/lti/launch"})),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="lti-picker"]`)))
	labels, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll('input[name=item]')].map(i => [i.value, i.closest('label').querySelector('strong').textContent.trim()]))`))
	if err != nil {
		t.Fatal(err)
	}
	for value, want := range map[string]string{
		"lab:littles-law:littles-sweep":   "The lab: 1 worker, 10–40/s",
		"model:littles-law:littles-model": "The widget: Little's law",
	} {
		if labels[value] != want {
			t.Errorf("%s reads %q, want %q", value, labels[value], want)
		}
	}
	if got := labels["predict:littles-law:littles-double"]; !strings.HasPrefix(got, "Predict: The sweep runs at 20") {
		t.Errorf("lesson 1's Predict reads %q", got)
	}
	for value, label := range labels {
		if id := value[strings.LastIndex(value, ":")+1:]; strings.Contains(value, ":") && strings.Count(value, ":") == 2 && strings.Contains(label, id) {
			t.Errorf("%s is named %q, with its id", value, label)
		}
	}
	for _, v := range []a11yView{{"1280-light", "light", 1280, 900}, {"1280-dark", "dark", 1280, 900}, {"375-light", "light", 375, 900}, {"375-dark", "dark", 375, 900}} {
		setView(t, ctx, v)
		sideways, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > document.documentElement.clientWidth + 1`))
		if err != nil {
			t.Fatal(err)
		}
		if sideways {
			t.Errorf("%s: the picker scrolls sideways", v.name)
		}
		doSteps(t, ctx, "show lesson 1", chromedp.Evaluate[chromedp.Void](`document.querySelector('.pick-lesson').scrollIntoView({block: "start"})`))
		screenshotView(t, ctx, "lti-picker-words-"+v.name)
	}
}

// xTicks reads the x axis's labels of the first plot of the time chart
// in sel.
func xTicks(sel string) string {
	return `(() => { const c = document.querySelector('` + sel + `'); if (!c) return "";
		const ticks = [...c.querySelectorAll('.chart-panel')][0].querySelectorAll('text.tick[text-anchor]');
		return [...ticks].map(t => t.textContent).join(" "); })()`
}

// TestBrowserRunOverTimeAxisFixed runs an 8 s window over time from a
// lab block: the time chart's x axis, when its first seconds are drawn,
// is already the one it has when the run is done, so the chart fills in
// rather than rescaling as seconds arrive.
func TestBrowserRunOverTimeAxisFixed(t *testing.T) {
	lab := buildLabBinary(t)
	srv := start(t, nil, "--data", t.TempDir(), "--lab-command", lab)
	ctx := newBrowserFor(t, 2*time.Minute)
	slot := `[data-testid="lab-run-slot"]`
	chartSel := slot + ` [data-testid="run-time-chart"]`
	doSteps(t, ctx, "run 8 s over time",
		chromedp.Navigate(srv.url+"/lessons/saturation"),
		chromedp.Click(chromedp.CSS(`[data-testid="predict-sat-predict"] [data-testid="predict-skip"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="lab-run"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="lab-sat-sweep"] [data-testid="lab-settings"] summary`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid="run-field-rates"]`), "20"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="run-field-seconds"]`), "8"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="run-field-timeout_ms"]`), "500"),
		chromedp.Click(chromedp.CSS(`[data-testid="run-field-over_time"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="lab-run"]`)),
		chromedp.Poll[chromedp.Void](`(() => { const c = document.querySelector('`+chartSel+`'); return c && Number(c.dataset.samples) > 0 && Number(c.dataset.samples) < 8; })()`,
			chromedp.WithPollingTimeout(stepTimeout)),
	)
	early, err := chromedp.Run(ctx, chromedp.Evaluate[string](xTicks(chartSel)))
	if err != nil || early == "" {
		t.Fatalf("no x axis while the run is measured (%v)", err)
	}
	doSteps(t, ctx, "the run ends",
		chromedp.Poll[chromedp.Void](`document.querySelector('`+slot+` [data-testid="run-status"]')?.dataset.status === "done" &&
			Number(document.querySelector('`+chartSel+`')?.dataset.samples) >= 8`, chromedp.WithPollingTimeout(stepTimeout)),
	)
	done, err := chromedp.Run(ctx, chromedp.Evaluate[string](xTicks(chartSel)))
	if err != nil {
		t.Fatal(err)
	}
	if early != done {
		t.Errorf("the x axis read %q while the run was measured and %q when it was done", early, done)
	}
	if !strings.HasSuffix(done, " 10") {
		t.Errorf("the x axis of an 8 s window with a 0.5 s timeout reads %q, want it to end at 10 s", done)
	}
}
