//go:build browser

package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"capacitylab/lessons"
	"capacitylab/recorder"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
)

// The capstone judges a learner's saved runs in the browser: four workers
// fail the latency half at seed 1 and are not yet run at seeds 2 and 3;
// six workers pass at all three, and then the page names the simulator's
// cheapest passing choice, five workers. The runs are saved in the store
// under a learner id the browser then presents as its cookie, so the test
// needs no 90 s of sweeps.
func TestBrowserCapstoneJudge(t *testing.T) {
	const me = "0123456789abcdef0123456789abcdef"
	data := t.TempDir()
	st, err := store.Open(filepath.Join(data, dbFile))
	if err != nil {
		t.Fatal(err)
	}
	c, err := lessons.Load(lessons.Content())
	if err != nil {
		t.Fatal(err)
	}
	l, _ := c.Lesson("capstone")
	b, _ := l.Block("capstone-service")
	lab := b.(*lessons.Lab)
	ctx := t.Context()
	save := func(id string, workers int, seed uint64, sent, ok int, p99 float64) {
		q := runner.Request{Preset: recorder.Preset(lab), Lesson: "capstone", Block: lab.ID}
		q.Workers, q.Seed = workers, seed
		req, _ := json.Marshal(q)
		at := time.Now()
		if err := st.SaveRun(ctx, store.Run{ID: id, Learner: me, Lesson: "capstone", Block: lab.ID, Request: req, Status: store.RunDone, CreatedAt: at, StartedAt: at, EndedAt: at}); err != nil {
			t.Fatal(err)
		}
		if err := st.AddRow(ctx, id, result.Row{Window: 0, Offered: 100, Sent: sent, OK: ok, P99MS: p99, N: ok, Seconds: 30}); err != nil {
			t.Fatal(err)
		}
	}
	save("four1", 4, 1, 3000, 3000, 1684)
	for i, p99 := range []float64{81, 95, 90} {
		save("six"+string(rune('1'+i)), 6, uint64(i+1), 3000, 3000, p99)
	}
	st.Close()

	srv := start(t, nil, "--data", data)
	browser := newBrowser(t)
	doSteps(t, browser, "open the capstone as the learner with the saved runs",
		chromedp.Navigate(srv.url+"/"),
		chromedp.Evaluate[chromedp.Void](`document.cookie = "cl_learner=`+me+`; Path=/"`),
		skipPredicts(srv.url, "capstone"), // the judge is past the Predict's gate
		chromedp.Navigate(srv.url+"/lessons/capstone#capstone-judge"))
	verdicts, err := chromedp.Run(browser, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid="judged-verdict"]')).map(e => e.textContent.replace(/\s+/g, " ").trim())`))
	if err != nil {
		t.Fatal(err)
	}
	cheapest, err := chromedp.Run(browser, chromedp.Evaluate[string](`(document.querySelector('[data-testid="judge-cheapest"]') || {textContent: ""}).textContent.replace(/\s+/g, " ").trim()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(verdicts) != 2 {
		t.Fatalf("verdicts %q: want two choices judged", verdicts)
	}
	// Newest first: the six-worker choice was saved last.
	if want := "Passed. Passes at every seed: at least 100% answered (99% wanted) and a p99 of at most 95 ms (budget 230 ms)."; verdicts[0] != want {
		t.Errorf("six workers: %q, want %q", verdicts[0], want)
	}
	if want := "Fails: at seed 1, p99 1684 ms, 1454 ms over the 230 ms budget. Not yet run at seeds 2 and 3."; verdicts[1] != want {
		t.Errorf("four workers: %q, want %q", verdicts[1], want)
	}
	if want := "The cheapest choice that passes in the simulator has 5 workers (WORKERS=5, LIMIT=33); your cheapest passing choice has 6."; len(cheapest) < len(want) || cheapest[:len(want)] != want {
		t.Errorf("cheapest: %q, want it to start %q", cheapest, want)
	}
}
