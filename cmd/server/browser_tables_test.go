//go:build browser

package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"capacitylab/labsvc"
	"capacitylab/loadrun"
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
    const cells = w.querySelectorAll('thead th');
    const last = cells[cells.length - 1];
    const lr = last ? last.getBoundingClientRect() : r;
    const out = {label: w.getAttribute('aria-label') || '', role: w.getAttribute('role') || '', tabIndex: w.tabIndex,
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
	req, _ := json.Marshal(runner.Request{Config: labsvc.Config{Workers: 4, SpinMS: 2, WaitMS: 18, Limit: 0, CPUs: 1}, Rates: []float64{100, 200, 400, 800}, Seconds: 10})
	ctx := t.Context()
	if err := st.SaveRun(ctx, store.Run{ID: "widetable", Learner: "someone", Request: req, Status: "done", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for i, rate := range []float64{100, 200, 400, 800} {
		row := loadrun.Row{Window: i, Offered: rate, Sent: int(rate * 10), OK: int(rate * 9), Refused: 12345, Gaveup: 2345, Error: 1,
			OKPerSec: rate * 0.9, P50MS: 1234.567, P99MS: 98765.4321, MeanMS: 2345.6, P95MS: 34567.8, MaxMS: 123456.7, N: int(rate * 10)}
		if err := st.AddRow(ctx, "widetable", row); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	srv := start(t, nil, "--data", data)
	browser := newBrowser(t)
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
