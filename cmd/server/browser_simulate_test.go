//go:build browser

package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"capacitylab/lessons"
	"capacitylab/loadrun"
	"capacitylab/recorder"
	"capacitylab/sim"
)

// A learner on the saturation lesson finds no Simulate while the lab is
// folded behind its prediction. Past it, they run a small sweep (20 and 40
// a second, 2 s) and then press Simulate with the same settings: the
// block shows a panel labelled as a simulation, whose table holds the
// simulator's rows for those settings (read cell by cell against package
// sim), and whose chart draws the simulation beside the model and beside
// their measured run. The learner's run stays in the block, untouched.
func TestBrowserSimulate(t *testing.T) {
	lab := buildLabBinary(t)
	srv := start(t, nil, "--data", t.TempDir(), "--lab-command", lab)
	ctx := newBrowser(t)
	block := `[data-testid="lab-sat-sweep"]`
	doSteps(t, ctx, "the folded lab",
		chromedp.Navigate(srv.url+"/lessons/saturation"),
		chromedp.WaitVisible(chromedp.CSS(block+` [data-testid="lab-folded"]`)),
	)
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="lab-simulate"]').length`)); n != 0 {
		t.Errorf("%d Simulate buttons while the lab is folded, want none", n)
	}
	doSteps(t, ctx, "a run, then Simulate",
		chromedp.Click(chromedp.CSS(`[data-testid="predict-sat-predict"] [data-testid="predict-skip"]`)),
		chromedp.WaitVisible(chromedp.CSS(block+` [data-testid="lab-simulate"]`)),
		chromedp.Click(chromedp.CSS(block+` [data-testid="lab-settings"] summary`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid="run-field-rates"]`), "20, 40"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="run-field-seconds"]`), "2"),
		chromedp.Click(chromedp.CSS(block+` [data-testid="lab-run"]`)),
		chromedp.Poll[chromedp.Void](`(() => { const s = document.querySelector('`+block+` [data-testid="run-status"]');
			return s !== null && s.dataset.status === "done"; })()`, chromedp.WithPollingTimeout(stepTimeout)),
		chromedp.Click(chromedp.CSS(block+` [data-testid="lab-simulate"]`)),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('`+block+` [data-testid="sim-rows"] tbody tr').length === 2`),
	)
	label := textOf(t, ctx, block+` [data-testid="sim-label"]`)
	if !strings.HasPrefix(label, "Simulation") || !strings.Contains(label, "not a run") {
		t.Errorf("the panel's label says %q, want it to say it is a simulation and not a run", label)
	}
	if got := textOf(t, ctx, block+` [data-testid="sim-beside-run"]`); !strings.Contains(got, "your run of this lab") {
		t.Errorf("the panel says %q, want it to name the learner's run drawn beside it", got)
	}
	// The table, read as the learner sees it, against package sim run on
	// the same settings.
	cols, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('`+block+` [data-testid="sim-rows"] thead th')].map(th => th.dataset.col)`))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll('`+block+` [data-testid="sim-rows"] tbody tr')].map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent.trim()))`))
	if err != nil {
		t.Fatal(err)
	}
	preset := presetOf(t, "sat-sweep")
	p := recorder.Preset(preset)
	rep, err := loadrun.Sweep{Rates: []float64{20, 40}, Seconds: 2, Seed: p.Seed, Driver: sim.Model{Lab: p.Config, Timeout: p.Timeout()}}.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := lessons.RecordColumns(preset.Accept)
	for i, r := range rep.Rows() {
		want := recorder.RowCells(r, preset.Columns())
		for _, col := range []string{"offered", "sent", "ok_per_sec", "p50_ms", "p99_ms"} {
			j := slices.Index(cols, col)
			if j < 0 {
				t.Fatalf("the simulation's table has no %s column (columns %v)", col, cols)
			}
			if got := cells[i][j]; got != want[slices.Index(rec, col)] {
				t.Errorf("row %d %s: the page shows %q, package sim gives %q", i+1, col, got, want[slices.Index(rec, col)])
			}
		}
	}
	legend, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+block+` [data-testid="sim-chart"]').textContent`))
	for _, want := range []string{"ok/s, simulated", "ok/s, your run", "model"} {
		if !strings.Contains(legend, want) {
			t.Errorf("the simulation's chart has no %q", want)
		}
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+block+` [data-testid="lab-run-slot"] [data-testid="run-rows"] tbody tr').length`)); n != 2 {
		t.Errorf("the learner's run shows %d rows after Simulate, want its 2", n)
	}
	screenshot(t, ctx, "lab-simulated")
}

// presetOf is a lab preset of the embedded course.
func presetOf(t *testing.T, id string) *lessons.Lab {
	c, err := lessons.Load(lessons.Content())
	if err != nil {
		t.Fatal(err)
	}
	lab, _, ok := c.Lab(id)
	if !ok {
		t.Fatalf("no preset %s", id)
	}
	return lab
}
