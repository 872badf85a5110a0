//go:build browser

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// capacity-moves asks how many ok answers a second AIMD delivers from
// 12 s on, of a run over time. A learner locks "About 30" and opens the
// recorded results: the reading under the time table is ok a second from
// 12 s to the window's end (30.5), not the whole window's ok_per_sec,
// with the option's 27 to 33 a second beside it and drawn as a band on the
// reading's chart. Then the learner runs the preset with 14 s windows: the
// reading after their run is the same quantity over the seconds their
// run has, 12 s to 14 s.
func TestBrowserStretchReading(t *testing.T) {
	lab := buildLabBinary(t)
	srv := start(t, nil, "--data", t.TempDir(), "--lab-command", lab)
	// Two steps and a run of a 14 s window on a lab child: longer than one
	// browser test's usual minute on a busy machine.
	ctx := newBrowserFor(t, 3*time.Minute)
	const predict = `[data-testid="predict-moves-predict-aimd"]`
	const timeTable = `[data-testid="table-moves-aimd-time"]`
	doSteps(t, ctx, "lock and open the recorded results",
		chromedp.Navigate(srv.url+"/lessons/capacity-moves"),
		chromedp.Click(chromedp.CSS(predict+` [data-testid="option-b"]`)),
		chromedp.Click(chromedp.CSS(predict+` [data-testid="predict-lock"]`)),
		chromedp.WaitVisible(chromedp.CSS(predict+` [data-testid="predict-locked"]`)),
		clickStable(timeTable+` [data-testid="table-open"]`),
		chromedp.WaitVisible(chromedp.CSS(timeTable+` [data-testid="reading"]`)),
	)
	if prompt := textOf(t, ctx, predict+` .prompt`); !strings.Contains(prompt, "from 12 s on") {
		t.Errorf("the prompt %q does not ask about 12 s on", prompt)
	}
	reading := textOf(t, ctx, timeTable+` [data-testid="reading"]`)
	for _, want := range []string{"You predicted About 30, most but not all of them (27 to 33 a second)", "from 12 s to 30 s", "ok 30.5 a second"} {
		if !strings.Contains(reading, want) {
			t.Errorf("the recorded reading %q lacks %q", reading, want)
		}
	}
	if strings.Contains(reading, "ok_per_sec") {
		t.Errorf("the recorded reading %q shows the whole window's ok_per_sec", reading)
	}
	// The band is drawn over 12 s to 30 s: from 12/35 of the plot's width
	// (the axis runs to 35 s) for 18/35 of it.
	box, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => {
		const plot = document.querySelector('`+timeTable+` [data-testid="reading-chart"] svg.chart-plot');
		const band = plot.querySelector('rect.region').getBoundingClientRect(), p = plot.getBoundingClientRect();
		return [(band.left - p.left) / p.width, band.width / p.width, band.height]; })()`))
	if err != nil || len(box) != 3 || abs(box[0]-12.0/35) > 0.01 || abs(box[1]-18.0/35) > 0.01 || box[2] <= 0 {
		t.Errorf("the band is drawn at %v (%v): want from 12/35 of the plot, 18/35 wide, with a height", box, err)
	}
	screenshot(t, ctx, "reading-stretch-recorded")

	// The learner's own run, 14 s windows: the same quantity over 12 s to 14 s.
	const block = `[data-testid="lab-moves-aimd"]`
	doStepsWithin(t, ctx, "run it with 14 s windows", runStepTimeout,
		chromedp.Click(chromedp.CSS(block+` [data-testid="lab-settings"] summary`)),
		chromedp.WaitVisible(chromedp.CSS(block+` [data-testid="run-field-seconds"]`)),
		chromedp.SetValue(chromedp.CSS(block+` [data-testid="run-field-seconds"]`), "14"),
		clickStable(block+` [data-testid="lab-run"]`),
		chromedp.WaitVisible(chromedp.CSS(block+` [data-lab-after] [data-testid="reading"]`)),
	)
	reading = textOf(t, ctx, block+` [data-lab-after] [data-testid="reading"]`)
	for _, want := range []string{"(27 to 33 a second)", "Measured in your run", "from 12 s to 14 s", " a second"} {
		if !strings.Contains(reading, want) {
			t.Errorf("the reading of the learner's run %q lacks %q", reading, want)
		}
	}
	if !strings.Contains(reading, "ok ") || strings.Contains(reading, "ok_per_sec") {
		t.Errorf("the reading of the learner's run %q does not read ok a second", reading)
	}
	screenshot(t, ctx, "reading-stretch-own-run")
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
