//go:build browser

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"capacitylab/result"
	"capacitylab/store"
)

// axeDefaultPath is where .ci/run installs axe-core with npm (outside the
// repository); $AXE_JS overrides it.
const axeDefaultPath = "/opt/capacitylab-axe/node_modules/axe-core/axe.min.js"

// axeTags are the rule sets the audit runs: WCAG 2.0, 2.1 and 2.2 at
// levels A and AA, and axe's best practices.
var axeTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"}

// axeSource reads axe.min.js from $AXE_JS or axeDefaultPath. A missing file
// fails the test: an audit that did not run must not look like a pass.
func axeSource(t *testing.T) string {
	t.Helper()
	path := os.Getenv("AXE_JS")
	if path == "" {
		path = axeDefaultPath
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("axe-core not found at %s (%v): install it with `npm install --prefix /opt/capacitylab-axe axe-core@4.14.1` as .ci/run does, or set AXE_JS to an axe.min.js", path, err)
	}
	if !strings.Contains(string(b[:min(len(b), 400)]), "axe") {
		t.Fatalf("%s does not look like axe-core's axe.min.js", path)
	}
	return string(b)
}

// axeResult is the part of axe.run's answer the audit reports.
type axeResult struct {
	Violations []struct {
		ID     string `json:"id"`
		Impact string `json:"impact"`
		Help   string `json:"help"`
		Nodes  []struct {
			Target  []any  `json:"target"`
			HTML    string `json:"html"`
			Summary string `json:"failureSummary"`
		} `json:"nodes"`
	} `json:"violations"`
	Passes     []string `json:"passes"`     // rule ids that passed
	Incomplete []string `json:"incomplete"` // rule ids axe could not decide (needs a person)
	// Why, for each node axe could not decide: rule, target and axe's reason.
	Undecided []string `json:"undecided"`
}

// axeAudit injects axe into the page ctx shows (unless it is there
// already), runs it and returns one line per violation and node.
func axeAudit(t *testing.T, ctx context.Context, src string) (problems []string, res axeResult) {
	t.Helper()
	tags, _ := json.Marshal(axeTags)
	script := `(async () => {
		if (!window.axe) { ` + src + `
		}
		const r = await axe.run(document, {runOnly: {type: "tag", values: ` + string(tags) + `}, resultTypes: ["violations", "incomplete"]});
		return {violations: r.violations, passes: r.passes.map(p => p.id), incomplete: r.incomplete.map(p => p.id),
			undecided: r.incomplete.flatMap(p => p.nodes.map(n => p.id + " " + JSON.stringify(n.target) + ": " + ((n.any[0] || {}).message || "")))};
	})()`
	res, err := chromedp.Run(ctx, chromedp.Evaluate[axeResult](script, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("running axe: %v", err)
	}
	for _, v := range res.Violations {
		for _, n := range v.Nodes {
			target, _ := json.Marshal(n.Target)
			problems = append(problems, fmt.Sprintf("%s (%s): %s\n\tat %s: %.200s\n\t%s", v.ID, v.Impact, v.Help, target, n.HTML,
				strings.ReplaceAll(n.Summary, "\n", "\n\t")))
		}
	}
	return problems, res
}

// a11yView is one way of looking at the site: a colour scheme and a width.
type a11yView struct {
	name   string // what the view is
	scheme string // prefers-color-scheme
	width  int64  // viewport width in CSS pixels
	height int64  // viewport height; 0: 800
}

// seedRun saves a finished run with one row per rate (each window seconds
// long) in the server's database before it starts, so an audit can open a
// saved run's page without running a sweep.
func seedRun(t *testing.T, dataDir, id string, rates []float64, seconds float64) {
	t.Helper()
	st, err := store.Open(filepath.Join(dataDir, dbFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	now := time.Now().UTC().Add(-time.Minute)
	rj, _ := json.Marshal(rates)
	req := fmt.Sprintf(`{"workers":1,"spin_ms":2,"wait_ms":18,"limit":0,"cpus":1,"rates":%s,"seconds":%g,"seed":2,"mode":"open","timeout_ms":0,"lesson":"saturation","block":"sat-sweep"}`, rj, seconds)
	if err := st.SaveRun(ctx, store.Run{ID: id, Learner: "a11ya11ya11ya11ya11ya11ya11ya11y", Lesson: "saturation", Block: "sat-sweep",
		Request: json.RawMessage(req), Status: store.RunDone, CreatedAt: now, StartedAt: now, EndedAt: now.Add(time.Duration(float64(len(rates))*seconds+1) * time.Second)}); err != nil {
		t.Fatal(err)
	}
	for i, rate := range rates {
		n := int(seconds * rate)
		row := result.Row{Offered: rate, Sent: n, OK: n, OKPerSec: rate, P50MS: 20.4 + float64(i), P99MS: 24.9 + 3*float64(i),
			Done: n, N: n, MeanMS: 21 + float64(i), P95MS: 23 + float64(i), MaxMS: 30 + float64(i), Window: i, Arrivals: n, Seconds: seconds,
			LabServiceMS: 20.1, LabCPUMS: 2.1}
		if err := st.AddRow(ctx, id, row); err != nil {
			t.Fatal(err)
		}
		// The window's raw records, for the run page's latency
		// distribution: ok answers spread from 15 to 44 ms.
		recs := make([]result.Record, n)
		for k := range recs {
			at := time.Duration(k) * time.Second / time.Duration(rate)
			recs[k] = result.Record{Window: i, Seq: k, Intended: at, Sent: at, End: at + time.Duration(15+k%30)*time.Millisecond,
				Outcome: result.OK, Status: 200, QueueWaitMS: -1, ServiceMS: -1}
		}
		if err := st.AddRecords(ctx, id, recs); err != nil {
			t.Fatal(err)
		}
	}
}

// a11yViews are the views every audited page is checked in: light and
// dark, 1024 and 320 pixels wide.
func a11yViews() []a11yView {
	return []a11yView{
		{"light, 1024 px", "light", 1024, 0},
		{"dark, 1024 px", "dark", 1024, 0},
		{"light, 320 px", "light", 320, 0},
		{"dark, 320 px", "dark", 320, 0},
	}
}

// setView puts the tab ctx in view v, its colour scheme and its width,
// and checks the page sees them. It takes effect on the page shown,
// without a reload.
func setView(t *testing.T, ctx context.Context, v a11yView) {
	t.Helper()
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v.scheme}},
	}); err != nil {
		t.Fatal(err)
	}
	h := v.height
	if h == 0 {
		h = 800
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(v.width, h)); err != nil {
		t.Fatal(err)
	}
	inForce, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`matchMedia("(prefers-color-scheme: dark)").matches === %v && innerWidth === %d`, v.scheme == "dark", v.width)))
	if err != nil || !inForce {
		t.Fatalf("view %s is not in force (%v)", v.name, err)
	}
}

// auditPage runs axe on the page ctx shows (named page, seen in view) and
// fails the test with every violation, saving a screenshot of it under
// screenshots/a11y-VIEW-PAGE.png; it logs what axe could not decide, and
// fails if axe passed nothing (an audit that did not really run).
func auditPage(t *testing.T, ctx context.Context, src, page, view string) axeResult {
	t.Helper()
	problems, res := axeAudit(t, ctx, src)
	if len(res.Passes) == 0 {
		t.Errorf("%s, %s: axe ran no passing check: the audit did not really run", page, view)
	}
	if len(res.Incomplete) > 0 {
		t.Logf("%s, %s: axe could not decide %v on %d nodes (a person should look), for example:\n\t%s",
			page, view, res.Incomplete, len(res.Undecided), strings.Join(res.Undecided[:min(3, len(res.Undecided))], "\n\t"))
	}
	if len(problems) > 0 {
		shot := "a11y-" + strings.NewReplacer(" ", "-", ",", "", "(", "", ")", "", "/", "-").Replace(view+"-"+page)
		if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil { // 100: PNG (less is JPEG)
			os.MkdirAll(filepath.Join("..", "..", "screenshots"), 0o755)
			os.WriteFile(filepath.Join("..", "..", "screenshots", shot+".png"), png, 0o644)
		}
		t.Errorf("%s, %s: %d accessibility violations:\n%s", page, view, len(problems), strings.Join(problems, "\n"))
	}
	return res
}

// TestBrowserAccessibility audits the site's pages with axe-core in
// chromium, in light and dark colour schemes and at 1024 and 320 pixels
// wide, and fails with every violation's rule, impact and nodes. The
// pages: the index, the fixture lesson with every block kind (before and
// after answering), real lessons with their contents, a lab's settings
// page, a widget page,
// progress, the runs list, a saved run with a window's latency
// distribution, a comparison missing a run, the class join page and the
// 404 page.
func TestBrowserAccessibility(t *testing.T) {
	src := axeSource(t)
	dataDir := t.TempDir()
	runID := "a11yrun0001"
	seedRun(t, dataDir, runID, []float64{20, 40}, 2)
	srv := start(t, nil, "--data", dataDir)
	pages := []struct {
		name string // what the page is
		path string
		skip string // a lesson whose Predicts to skip first, so its page shows all of it
	}{
		{"index", "/", ""},
		{"lesson with every block kind, to its Predict's gate", "/lessons/sample", ""},
		{"lesson littles-law", "/lessons/littles-law", "littles-law"},
		{"lesson admission-limit", "/lessons/admission-limit", "admission-limit"},
		{"lesson bottleneck-moves", "/lessons/bottleneck-moves", "bottleneck-moves"},
		{"lesson shared-queue (a queue curve with a split)", "/lessons/shared-queue", "shared-queue"},
		{"lesson capstone (a judge block)", "/lessons/capstone", "capstone"},
		{"a lab's settings page", "/lessons/bottleneck-moves/lab/moves-w1/settings", ""},
		{"widget page", "/widgets/queue-curve", ""},
		{"quota widget page", "/widgets/quota", ""},
		{"aimd widget page", "/widgets/aimd", ""},
		{"runs", "/runs", ""},
		{"saved run, with the distribution of its last window", "/runs/" + runID, ""},
		{"saved run, window 1's distribution", "/runs/" + runID + "?window=1", ""},
		{"compare with one run missing", "/runs/compare?a=" + runID, ""},
		{"compare over time: two recorded runs and a run not over time, a stretch summarised", "/runs/compare?a=recorded:cap-release-queue&b=recorded:cap-release-quota&c=" + runID + "&from=12", ""},
		{"join a class", "/join", ""},
		{"404", "/no-such-page", ""},
		{"answered lesson", "/lessons/sample", ""}, // after answer() below
		{"a stretch's reading, the option's band on its chart", "/lessons/capacity-moves", ""}, // after answer() below
		{"progress", "/progress", ""},
	}
	// answer locks and reveals the fixture's prediction and answers its
	// check wrongly, through the same forms a learner posts.
	answer := chromedp.Evaluate[chromedp.Void](`(async () => {
		const post = (path, body) => fetch(path, {method: "POST", body: new URLSearchParams(body), credentials: "same-origin"});
		await post("/lessons/sample/predict/sample-predict", {action: "lock", option: "b"});
		await post("/lessons/sample/predict/sample-predict", {action: "open"});
		await post("/lessons/sample/predict/sample-predict", {action: "reveal"});
		await post("/lessons/sample/check/sample-check", {option: "a"});
		await post("/lessons/capacity-moves/predict/moves-predict-aimd", {action: "lock", option: "b"});
		await post("/lessons/capacity-moves/predict/moves-predict-aimd", {action: "open"});
	})()`, chromedp.EvalAwaitPromise)
	views := a11yViews()
	total := 0
	for _, v := range views {
		t.Run(strings.NewReplacer(", ", "-", " ", "").Replace(v.name), func(t *testing.T) {
			ctx := newBrowser(t)
			setView(t, ctx, v)
			for _, p := range pages {
				if p.name == "answered lesson" {
					if err := chromedp.Do(ctx, answer); err != nil {
						t.Fatalf("answering the fixture: %v", err)
					}
				}
				if p.skip != "" {
					if err := chromedp.Do(ctx, skipPredicts(srv.url, p.skip)); err != nil {
						t.Fatalf("%s: skipping its Predicts: %v", p.name, err)
					}
				}
				if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+p.path)); err != nil {
					t.Fatalf("%s: %v", p.name, err)
				}
				if strings.HasPrefix(p.name, "a stretch's reading") {
					if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="table-moves-aimd-time"] [data-testid="reading-chart"] rect.region').length`)); err != nil || n != 1 {
						t.Fatalf("capacity-moves does not show the reading's chart with the option's band (%d, %v)", n, err)
					}
				}
				if p.name == "answered lesson" {
					if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="predict-answer"], [data-testid="check-result"]').length`)); err != nil || n != 2 {
						t.Fatalf("the fixture does not show the revealed prediction and the check result (%d, %v)", n, err)
					}
					// Audit what is folded away too: the lab's knobs and
					// terminal commands, and every column of the table.
					if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
						document.querySelectorAll('details').forEach(d => d.open = true);
						document.querySelectorAll('.cols-toggle').forEach(c => c.checked = true);
						return true; })()`)); err != nil {
						t.Fatal(err)
					}
					// Opening the settings brings the knobs in (runs.js).
					doSteps(t, ctx, "the lab's knobs come into the block", chromedp.Poll[chromedp.Void](
						`document.querySelector('[data-testid="lab-sample-lab"] [data-testid="lab-knobs"]') !== null`,
						chromedp.WithPollingTimeout(stepTimeout)))
				}
				if p.name == "index" { // the emulation is in force
					dark, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`matchMedia("(prefers-color-scheme: dark)").matches`))
					if err != nil || dark != (v.scheme == "dark") {
						t.Fatalf("prefers-color-scheme emulation not in force: dark=%v, %v", dark, err)
					}
				}
				res := auditPage(t, ctx, src, p.name+" ("+p.path+")", v.name)
				if p.name == "answered lesson" && !slices.Contains(res.Passes, "color-contrast") {
					t.Errorf("%s, %s: axe's color-contrast rule did not pass anything (incomplete: %v)", p.name, v.name, res.Incomplete)
				}
				total += len(res.Passes)
			}
		})
	}
	t.Logf("axe-core: %d passing checks over %d pages in %d views", total, len(pages), len(views))
}
