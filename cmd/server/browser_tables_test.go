//go:build browser

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"capacitylab/labsvc"
	"capacitylab/lessons"
	"capacitylab/measure"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
)

// tableFit is what the page reports about its wide tables.
type tableFit struct {
	PageOverflow bool       `json:"pageOverflow"` // the page itself scrolls sideways
	Wraps        []wrapInfo `json:"wraps"`
}

type wrapInfo struct {
	Label     string  `json:"label"`
	Role      string  `json:"role"`
	TabIndex  int     `json:"tabIndex"`
	Right     float64 `json:"right"`     // the region's right edge
	Width     float64 `json:"width"`     // the viewport's width
	Scrolls   bool    `json:"scrolls"`   // the region scrolls sideways
	LastSeen  bool    `json:"lastSeen"`  // scrolled to the end, the last column is inside the region
	TableWide float64 `json:"tableWide"` // the table's own width
}

const measureTables = `(() => {
  const wraps = [...document.querySelectorAll('.table-wrap')].filter(w => w.offsetParent !== null).map(w => {
    const r = w.getBoundingClientRect();
    w.scrollLeft = w.scrollWidth;
    const cells = [...w.querySelectorAll('thead th')].filter(th => th.offsetParent !== null);
    const last = cells[cells.length - 1];
    const lr = last ? last.getBoundingClientRect() : r;
    const named = w.getAttribute('aria-labelledby');
    const label = w.getAttribute('aria-label') || (named && document.getElementById(named) ? document.getElementById(named).textContent.trim() : '');
    const out = {label, role: w.getAttribute('role') || '', tabIndex: w.tabIndex,
      right: r.right, width: document.documentElement.clientWidth, scrolls: w.scrollWidth > w.clientWidth + 1,
      lastSeen: lr.right <= r.right + 1 && lr.left >= r.left - 1, tableWide: w.querySelector('table').getBoundingClientRect().width};
    w.scrollLeft = 0;
    return out;
  });
  return {pageOverflow: document.documentElement.scrollWidth > document.documentElement.clientWidth + 1, wraps};
})()`

// TestBrowserWideTablesScroll opens a saved run's page and a lesson with a
// recorded table at 1024, 768 and 320 px: the page never scrolls sideways,
// each wide table sits in a labelled, focusable region that does, and the
// last column (p99, the model's p99) can be scrolled into view.
func TestBrowserWideTablesScroll(t *testing.T) {
	data := t.TempDir()
	st, err := store.Open(filepath.Join(data, dbFile))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 4, SpinMS: 2, WaitMS: 18, Limit: 0, CPUs: 1}, Rates: []float64{100, 200, 400, 800}, Seconds: 10}})
	ctx := t.Context()
	if err := st.SaveRun(ctx, store.Run{ID: "widetable", Learner: "someone", Request: req, Status: "done", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for i, rate := range []float64{100, 200, 400, 800} {
		row := result.Row{Window: i, Offered: rate, Sent: int(rate * 10), OK: int(rate * 9), Refused: 12345, Gaveup: 2345, Error: 1,
			OKPerSec: rate * 0.9, P50MS: 1234.567, P99MS: 98765.4321, MeanMS: 2345.6, P95MS: 34567.8, MaxMS: 123456.7, N: int(rate * 10)}
		if err := st.AddRow(ctx, "widetable", row); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	srv := start(t, nil, "--data", data)
	browser := newBrowser(t)
	// Past the saturation lesson's prediction, with its recorded results
	// open: its table shows.
	doSteps(t, browser, "open the saturation table", chromedp.Navigate(srv.url+"/lessons/saturation"), chromedp.Evaluate[chromedp.Void](`(async () => {
		const post = (body) => fetch("/lessons/saturation/predict/sat-predict", {method: "POST", body: new URLSearchParams(body), credentials: "same-origin"});
		await post({action: "skip"});
		await post({action: "open"});
	})()`, chromedp.EvalAwaitPromise))
	for _, width := range []int64{1024, 768, 320} {
		for _, page := range []string{"/runs/widetable", "/lessons/saturation"} {
			name := fmt.Sprintf("%s at %d px", page, width)
			tab := browser
			doSteps(t, tab, name, chromedp.Navigate(srv.url+page), chromedp.EmulateViewport(width, 800), chromedp.WaitReady(`body`))
			fit, err := chromedp.Run(tab, chromedp.Evaluate[tableFit](measureTables))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if fit.PageOverflow {
				t.Errorf("%s: the page scrolls sideways", name)
			}
			if len(fit.Wraps) == 0 {
				t.Errorf("%s: no table regions", name)
			}
			for _, w := range fit.Wraps {
				if w.Role != "region" || w.TabIndex != 0 || w.Label == "" {
					t.Errorf("%s: table region %+v is not a labelled, focusable region", name, w)
				}
				if w.Right > float64(w.Width)+1 {
					t.Errorf("%s: table region %q ends at %.0f px, past the %.0f px viewport", name, w.Label, w.Right, w.Width)
				}
				if !w.LastSeen {
					t.Errorf("%s: the last column of %q cannot be scrolled into view", name, w.Label)
				}
			}
			shot := fmt.Sprintf("tables-%s-%d", filepath.Base(page), width)
			screenshot(t, tab, shot)
			t.Logf("%s: %+v", name, fit)
		}
	}
}

// At 1280 px, every course lesson's recorded tables show the columns their
// lesson talks about (the preset's show:) without scrolling sideways, with
// their caption outside the scrolling region, and the others one click
// away: ticking "Show all columns" shows every column. The learner has
// answered every Predict and opened every table.
func TestBrowserLessonTablesFit(t *testing.T) {
	srv := start(t, nil, "--data", t.TempDir())
	ctx := newBrowser(t)
	course, err := lessonsOf(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	for _, slug := range course {
		doSteps(t, ctx, slug, chromedp.EmulateViewport(1280, 900), skipPredicts(srv.url, slug),
			chromedp.Evaluate[chromedp.Void](`(async () => {
				for (const s of document.querySelectorAll('[data-block="predict"]')) {
					const post = (body) => fetch("/lessons/`+slug+`/predict/" + s.id, {method: "POST", body: new URLSearchParams(body), credentials: "same-origin"});
					await post({action: "skip"});
					await post({action: "open"});
				}
			})()`, chromedp.EvalAwaitPromise),
			chromedp.Reload())
		res, err := chromedp.Run(ctx, chromedp.Evaluate[[]map[string]any](`[...document.querySelectorAll('[data-block="table"]')].map(f => {
			// The recorded table's own region: a time table's block has its
			// chart's numbers above it, in a region of their own.
			const w = [...f.querySelectorAll('.table-wrap')].pop();
			if (!w) return {id: f.id, missing: true};
			const shown = [...w.querySelectorAll('thead th')].filter(th => th.offsetParent !== null).length;
			const fits = w.scrollWidth <= w.clientWidth + 1;
			const captionOutside = !!f.querySelector('.table-caption') && !w.contains(f.querySelector('.table-caption'));
			const toggle = f.querySelector('.cols-toggle');
			let all = shown;
			if (toggle) { toggle.click(); all = [...w.querySelectorAll('thead th')].filter(th => th.offsetParent !== null).length; toggle.click(); }
			return {id: f.id, shown, all, total: w.querySelectorAll('thead th').length, fits, captionOutside};
		})`))
		if err != nil {
			t.Fatal(err)
		}
		if len(res) == 0 && hasTable(t, slug) {
			t.Errorf("%s: no tables", slug)
		}
		for _, tb := range res {
			if tb["missing"] == true {
				t.Errorf("%s: table %v is still folded after answering and opening", slug, tb["id"])
				continue
			}
			if tb["fits"] != true || tb["captionOutside"] != true || tb["all"] != tb["total"] {
				t.Errorf("%s: table %v: %v; want the shown columns to fit at 1280 px, the caption outside the scroll and every column one click away", slug, tb["id"], tb)
			}
		}
	}
	// Lesson 1's table shows mean_ms, which its text asks the learner to
	// multiply, without a click.
	doSteps(t, ctx, "littles-law", chromedp.Navigate(srv.url+"/lessons/littles-law"))
	visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const th = document.querySelector('#littles-sweep-result th[data-col="mean_ms"]');
		const w = th.closest('.table-wrap'); const a = th.getBoundingClientRect(), b = w.getBoundingClientRect();
		return th.offsetParent !== null && a.right <= b.right + 1; })()`))
	if err != nil || !visible {
		t.Errorf("lesson 1's mean_ms is not in view at 1280 px (%v)", err)
	}
}

// lessonsOf lists the course's lesson slugs from /api/lessons.
func lessonsOf(base string) ([]string, error) {
	res, err := http.Get(base + "/api/lessons")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var body struct {
		Lessons []struct {
			Slug string `json:"slug"`
		} `json:"lessons"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		return nil, err
	}
	var out []string
	for _, l := range body.Lessons {
		out = append(out, l.Slug)
	}
	return out, nil
}

// hasTable reports whether the embedded course's lesson slug has a
// recorded table (the capstone, a design task, has none: the learner's
// runs are its measurements).
func hasTable(t *testing.T, slug string) bool {
	t.Helper()
	c, err := lessons.Load(lessons.Content())
	if err != nil {
		t.Fatal(err)
	}
	l, ok := c.Lesson(slug)
	if !ok {
		t.Fatalf("no lesson %q in the embedded course", slug)
	}
	for _, b := range l.Blocks() {
		if _, ok := b.(*lessons.Table); ok {
			return true
		}
	}
	return false
}
