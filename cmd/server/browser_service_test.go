//go:build browser

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"capacitylab/evidence"
	"capacitylab/result"
)

// A learner opens Your service from the site's header, uploads load's
// records of a sweep through a service's knee with a budget, and lands on
// the upload's run page, which shows the knee the analysis finds, the
// limit for the budget and the checklist item by item; the upload is
// listed on Your service. A file with a bad line is refused naming it,
// the form kept. Both pages pass axe, light at 1024 and dark at 320 px.
func TestBrowserServiceUpload(t *testing.T) {
	// A service of 150 answers a second at most, 4 ms each when it keeps
	// up, swept at 50 to 400 a second for 2 s a window: past its ceiling
	// requests wait behind each other, and those that would end a second
	// after the window give up.
	var recs []result.Record
	for w, rate := range []float64{50, 100, 200, 400} {
		gap := time.Duration(float64(time.Second) / rate)
		free := time.Duration(0)
		for i := range int(rate * 2) {
			at := time.Duration(i) * gap
			end := max(at, free) + time.Second/150
			r := result.Record{Window: w, Seq: i, Intended: at, Sent: at, End: end, Outcome: result.OK, Status: 200, QueueWaitMS: -1, ServiceMS: -1}
			if end > 3*time.Second {
				r.End, r.Outcome, r.Status, r.Reason = at+time.Second, result.Gaveup, 0, result.ReasonReadTimeout
			} else {
				free = end
			}
			recs = append(recs, r)
		}
	}
	var csv bytes.Buffer
	if err := result.WriteCSV(&csv, recs); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "myservice.csv")
	if err := os.WriteFile(file, csv.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := evidence.Read("myservice.csv", bytes.NewReader(csv.Bytes()), evidence.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	want := evidence.Analyze(d, evidence.Options{BudgetMS: 100})
	if want.Knee < 0 || want.Limit == nil {
		t.Fatalf("the sweep has no knee or limit: %+v", want)
	}

	srv := start(t, nil, "--data", t.TempDir())
	ctx := newBrowser(t)
	doSteps(t, ctx, "upload a result",
		chromedp.Navigate(srv.url+"/"),
		clickToPage(`header a[href="/service"]`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="service-page"]`)),
		chromedp.SetUploadFiles(chromedp.CSS(`[data-testid="service-results"]`), []string{file}),
		chromedp.SetValue(chromedp.CSS(`[data-testid="service-budget"]`), "100"),
		clickToPage(`[data-testid="service-upload"]`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="upload-analysis"]`)),
	)
	if title := textOf(t, ctx, `[data-testid="run-title"]`); !strings.Contains(title, "myservice.csv") {
		t.Errorf("title %q", title)
	}
	knee := textOf(t, ctx, `[data-testid="upload-knee"]`)
	if !strings.Contains(strings.ToLower(knee), "window "+strconv.Itoa(want.Knee+1)+" ") {
		t.Errorf("knee %q, want window %d", knee, want.Knee+1)
	}
	if got := textOf(t, ctx, `[data-testid="upload-limit"]`); !strings.Contains(got, "admit "+strconv.Itoa(want.Limit.Limit)+" waiting") {
		t.Errorf("limit %q, want %d waiting", got, want.Limit.Limit)
	}
	items, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="upload-checklist"] li')].map(li => li.dataset.check + "=" + li.dataset.met)`))
	if err != nil || len(items) != len(want.Checklist) {
		t.Fatalf("checklist %v (%v), want %d items", items, err, len(want.Checklist))
	}
	for i, c := range want.Checklist {
		if items[i] != c.ID+"="+map[bool]string{true: "true", false: "false"}[c.Met] {
			t.Errorf("checklist item %d: %s, want %s met=%v", i, items[i], c.ID, c.Met)
		}
	}
	screenshot(t, ctx, "service-upload")
	src := axeSource(t)
	views := []a11yView{{name: "light-1024", scheme: "light", width: 1024}, {name: "dark-320", scheme: "dark", width: 320}}
	for _, v := range views {
		setView(t, ctx, v)
		auditPage(t, ctx, src, "service-upload-run", v.name)
	}
	setView(t, ctx, a11yView{name: "light-1280", scheme: "light", width: 1280})
	doSteps(t, ctx, "listed on Your service",
		clickToPage(`[data-testid="run-service"]`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="service-uploads"]`)),
	)
	if got := textOf(t, ctx, `[data-testid="service-uploads"]`); !strings.Contains(got, "myservice.csv") {
		t.Errorf("uploads listed %q", got)
	}

	// A file with a bad line: refused on the page, naming the line, with
	// the form and the budget kept; the page passes axe with the error.
	bad := filepath.Join(t.TempDir(), "bad.csv")
	lines := strings.SplitAfter(csv.String(), "\n")
	lines[2] = "0,1,soon,1,2,1,ok,200,,-1,-1\n"
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	doSteps(t, ctx, "upload a bad file",
		chromedp.SetUploadFiles(chromedp.CSS(`[data-testid="service-results"]`), []string{bad}),
		chromedp.SetValue(chromedp.CSS(`[data-testid="service-budget"]`), "250"),
		clickToPage(`[data-testid="service-upload"]`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="service-error"]`)),
	)
	if msg := textOf(t, ctx, `[data-testid="service-error"]`); !strings.Contains(msg, "line 3") || !strings.Contains(msg, "bad.csv") {
		t.Errorf("error %q does not name bad.csv's line 3", msg)
	}
	if v, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="service-budget"]').value`)); v != "250" {
		t.Errorf("budget kept as %q", v)
	}
	for _, v := range views {
		setView(t, ctx, v)
		auditPage(t, ctx, src, "service-refused", v.name)
	}
}
