package chart

import (
	"math"
	"strconv"
	"strings"

	"capacitylab/result"
)

// TimeRun is a run over time as TimeChart draws it: its samples (a second
// each, result.Sample) in the order they were taken, and what it knows
// of the run before they arrive.
type TimeRun struct {
	ID      string          // the chart's element id prefix
	Samples []result.Sample // in order: window by window, at_s rising
	// Changes are the knob changes made at their times into every window
	// (measure.Preset.At).
	Changes []result.KnobChange
	// Windows and Seconds are the run's windows and their length: the x
	// axis spans them from the start, so a live chart grows into it
	// rather than rescaling each second. 0: from the samples.
	Windows int
	Seconds float64
	// TimeoutMS is the caller's timeout, drawn dashed across the latency
	// panel, and the time the x axis leaves after each window for its
	// last requests; 0: not drawn.
	TimeoutMS float64 // QueuedOnly says the lab's requests in service are not known (a
	// recorded table without in_service): the lab's line is its queue.
	QueuedOnly bool
	// Retrying says the run's client retries (retry.Spec): the first
	// plot also draws the attempts sent a second, dashed, and the
	// requests its breaker stopped, and the table has their columns.
	Retrying bool
}

// TimeChart draws a run over time: x is seconds of the run (its windows one
// after another, each boundary a solid line), and three plots share it:
// how requests ended, a second (ok, refused, gave up, and client busy or
// errors when there were any); what was inside at each second's end (the
// generator's requests in flight, the lab's queued plus in service, the
// admission policy's limit as a step line when it has one); and the p50
// and p99 of the ok answers, with the caller's timeout dashed. Each knob
// change is a dashed line across all three, its change written once, on
// the first plot. A point stands at the end of the second it describes.
// Every fifth second of a window and each window's last (every second of
// a run of at most ten) is a stop a pointer and a keyboard reach; the
// table has every number.
func TimeChart(r TimeRun) Chart {
	windows := windowSpans(r.Samples, r.Seconds)
	total := 0.0
	if n := len(windows); n > 0 {
		total = windows[n-1].start + windows[n-1].length
	}
	// Windows still to come are as long as the run says.
	for w := len(windows); w < r.Windows; w++ {
		total += r.Seconds
	}
	if total == 0 {
		total = r.Seconds
	}
	// The axis is fixed from the run's first second: every window its
	// length and then the caller's timeout (a window's last requests end
	// up to a timeout after it, and its last sample with them), so a live
	// chart fills the axis rather than rescaling as seconds arrive; only
	// samples past that (a request later than its timeout) widen it.
	planned := float64(r.Windows) * (r.Seconds + r.TimeoutMS/1000)
	xMax, _ := Axis(math.Max(total, planned), timeXSteps)

	var ends, ok, refused, gaveup, busy, errs, inflight, inside, limit, p50, p99, attempts, breaker []float64
	var limitX, limitY []float64
	anyBusy, anyErr, anyLab, anyLimit, anyBreaker := false, false, false, false, false
	yRate, yInside, yLat := 0.0, 0.0, r.TimeoutMS
	rate := func(n int, s result.Sample) float64 {
		if s.Seconds <= 0 {
			return math.NaN()
		}
		return float64(n) / s.Seconds
	}
	latency := func(v float64, s result.Sample) float64 {
		if s.OK == 0 {
			return math.NaN()
		}
		return v
	}
	table := Table{Caption: "Each second of the run: requests a second by how they ended, what was inside at its end, and the ok answers' latency",
		Head: []string{"window", "from s", "to s", "ok /s", "refused /s", "gave up /s", "client busy /s", "errors /s",
			"in flight", "lab queued", "lab in service", "limit", "p50 ms", "p99 ms"}}
	if r.Retrying {
		table.Head = append(table.Head, "attempts /s", "stopped by the breaker /s")
	}
	var rateStops, insideStops, latStops []Stop
	for wi, w := range windows {
		if wi > 0 {
			// Lines do not join across a window's boundary.
			for _, ys := range []*[]float64{&ok, &refused, &gaveup, &busy, &errs, &inflight, &inside, &limit, &p50, &p99, &attempts, &breaker} {
				*ys = append(*ys, math.NaN())
			}
			ends = append(ends, w.start)
			limitX, limitY = append(limitX, w.start), append(limitY, math.NaN())
		}
		for k, s := range w.samples {
			x := w.start + s.AtS + s.Seconds
			ends = append(ends, x)
			ok = append(ok, rate(s.OK, s))
			refused = append(refused, rate(s.Refused, s))
			gaveup = append(gaveup, rate(s.GaveUp, s))
			busy = append(busy, rate(s.ClientBusy, s))
			errs = append(errs, rate(s.Errors, s))
			attempts = append(attempts, rate(s.Attempts, s))
			breaker = append(breaker, rate(s.BreakerOpen, s))
			anyBreaker = anyBreaker || s.BreakerOpen > 0
			if r.Retrying && !math.IsNaN(attempts[len(attempts)-1]) {
				yRate = math.Max(yRate, attempts[len(attempts)-1])
			}
			inflight = append(inflight, float64(s.InFlight))
			p50 = append(p50, latency(s.P50MS, s))
			p99 = append(p99, latency(s.P99MS, s))
			anyBusy = anyBusy || s.ClientBusy > 0
			anyErr = anyErr || s.Errors > 0
			for _, v := range []float64{ok[len(ok)-1], refused[len(refused)-1], gaveup[len(gaveup)-1], busy[len(busy)-1], errs[len(errs)-1]} {
				if !math.IsNaN(v) {
					yRate = math.Max(yRate, v)
				}
			}
			yInside = math.Max(yInside, float64(s.InFlight))
			if !math.IsNaN(p99[len(p99)-1]) {
				yLat = math.Max(yLat, p99[len(p99)-1])
			}
			in, lim := math.NaN(), math.NaN()
			if s.Lab {
				anyLab = true
				in = float64(s.Queued + s.InService)
				yInside = math.Max(yInside, in)
				if s.Limit > 0 {
					anyLimit = true
					lim = float64(s.Limit)
					yInside = math.Max(yInside, lim)
				}
			}
			inside = append(inside, in)
			limit = append(limit, lim)
			// The limit read at a second's end holds until the next read.
			if k > 0 {
				limitX, limitY = append(limitX, x), append(limitY, limitY[len(limitY)-1])
			}
			limitX, limitY = append(limitX, x), append(limitY, lim)

			from, to := w.start+s.AtS, x
			head := secondsText(from) + "–" + secondsText(to) + " s"
			if len(windows) > 1 {
				head = "Window " + strconv.Itoa(w.window+1) + ", " + head
			}
			stop := len(r.Samples) <= everySecond || k == len(w.samples)-1 || isMultiple(s.AtS+s.Seconds, stopEvery)
			rl := []string{head, "ok " + rateText(ok[len(ok)-1]) + "/s, refused " + rateText(refused[len(refused)-1]) + "/s",
				"gave up " + rateText(gaveup[len(gaveup)-1]) + "/s"}
			if s.ClientBusy > 0 {
				rl[2] += ", client busy " + rateText(busy[len(busy)-1]) + "/s"
			}
			if s.Errors > 0 {
				rl[2] += ", errors " + rateText(errs[len(errs)-1]) + "/s"
			}
			if r.Retrying {
				rl = append(rl, "attempts "+rateText(attempts[len(attempts)-1])+"/s")
				if s.BreakerOpen > 0 {
					rl[len(rl)-1] += ", stopped by the breaker " + rateText(breaker[len(breaker)-1]) + "/s"
				}
			}
			il := []string{head, "in flight " + strconv.Itoa(s.InFlight)}
			labCells := []string{"—", "—", "—"}
			if s.Lab {
				il = append(il, "lab: "+strconv.Itoa(s.Queued)+" queued, "+strconv.Itoa(s.InService)+" in service")
				labCells = []string{strconv.Itoa(s.Queued), strconv.Itoa(s.InService), "none"}
				if s.Limit > 0 {
					il[len(il)-1] += ", limit " + strconv.Itoa(s.Limit)
					labCells[2] = strconv.Itoa(s.Limit)
				}
			}
			ll := []string{head, "p50 " + msText(p50[len(p50)-1]) + ", p99 " + msText(p99[len(p99)-1])}
			if s.OK == 0 {
				ll[1] = "no ok answers"
			}
			if stop {
				rateStops = append(rateStops, Stop{X: x, Lines: rl, Focus: true})
				insideStops = append(insideStops, Stop{X: x, Lines: il, Focus: true})
				latStops = append(latStops, Stop{X: x, Lines: ll, Focus: true})
			}
			row := append(append([]string{strconv.Itoa(w.window + 1), secondsText(s.AtS), secondsText(s.AtS + s.Seconds),
				rateText(ok[len(ok)-1]), rateText(refused[len(refused)-1]), rateText(gaveup[len(gaveup)-1]), rateText(busy[len(busy)-1]),
				rateText(errs[len(errs)-1]), strconv.Itoa(s.InFlight)}, labCells...), rateText(p50[len(p50)-1]), rateText(p99[len(p99)-1]))
			if r.Retrying {
				row = append(row, rateText(attempts[len(attempts)-1]), rateText(breaker[len(breaker)-1]))
			}
			table.Rows = append(table.Rows, row)
		}
	}

	rates := Panel{Title: "Requests a second, by how they ended", YMax: yRate * 1.1, Stops: rateStops, Series: []Series{
		{Name: "ok", Quantity: "ok", Style: Trace, X: ends, Y: ok},
		{Name: "refused", Quantity: "refused", Style: Trace, X: ends, Y: refused},
		{Name: "gave up", Quantity: "gaveup", Style: Trace, X: ends, Y: gaveup},
	}}
	if anyBusy {
		rates.Series = append(rates.Series, Series{Name: "client busy", Quantity: "busy", Style: Trace, X: ends, Y: busy})
	}
	if anyErr {
		rates.Series = append(rates.Series, Series{Name: "errors", Quantity: "muted", Style: Trace, X: ends, Y: errs})
	}
	if r.Retrying {
		rates.Series = append(rates.Series, Series{Name: "attempts sent", Quantity: "count", Style: Model, X: ends, Y: attempts})
		if anyBreaker {
			rates.Series = append(rates.Series, Series{Name: "stopped by the breaker", Quantity: "c", Style: Trace, X: ends, Y: breaker})
		}
	}
	insidePanel := Panel{Title: "Requests inside, at each second's end", YMax: yInside * 1.1, Stops: insideStops, Series: []Series{
		{Name: "in flight (the generator's)", Quantity: "inflight", Style: Trace, X: ends, Y: inflight},
	}}
	if anyLab {
		name := "lab: queued + in service"
		if r.QueuedOnly {
			name = "lab: queued"
		}
		insidePanel.Series = append(insidePanel.Series, Series{Name: name, Quantity: "lab", Style: Trace, X: ends, Y: inside})
	}
	if anyLimit {
		insidePanel.Series = append(insidePanel.Series, Series{Name: "policy's limit", Quantity: "limit", Style: Trace, X: limitX, Y: limitY})
	}
	lat := Panel{Title: "Latency of the ok answers, ms", YMax: yLat * 1.1, Stops: latStops, Series: []Series{
		{Name: "p50", Quantity: "p50", Style: Trace, X: ends, Y: p50},
		{Name: "p99", Quantity: "p99", Style: Trace, X: ends, Y: p99},
	}}
	if r.TimeoutMS > 0 {
		lat.Series = append(lat.Series, Series{Name: "caller's timeout, " + secondsText(r.TimeoutMS) + " ms", Quantity: "muted", Style: Model,
			X: []float64{0, xMax}, Y: []float64{r.TimeoutMS, r.TimeoutMS}})
	}

	// Window boundaries, labelled on the middle plot; knob changes on all
	// three, their change written on the first.
	nWindows := max(len(windows), r.Windows)
	for w := 1; w < nWindows; w++ {
		x := windowStart(windows, w, r.Seconds)
		for i, p := range []*Panel{&rates, &insidePanel, &lat} {
			m := Mark{X: x, Solid: true}
			if i == 1 {
				m.Label = "window " + strconv.Itoa(w+1)
			}
			p.Marks = append(p.Marks, m)
		}
	}
	var changeText []string
	for w := 0; w < max(nWindows, 1); w++ {
		start := windowStart(windows, w, r.Seconds)
		for _, c := range r.Changes {
			x := start + c.At.Seconds()
			for i, p := range []*Panel{&rates, &insidePanel, &lat} {
				m := Mark{X: x, Quantity: "accent"}
				if i == 0 && w == 0 {
					m.Label = c.Knob + "=" + c.Value + " at " + secondsText(c.At.Seconds()) + " s"
				}
				p.Marks = append(p.Marks, m)
			}
			if w == 0 {
				changeText = append(changeText, c.Knob+" becomes "+c.Value+" at "+secondsText(c.At.Seconds())+" s")
			}
		}
	}

	desc := timeDesc(r, windows, ok, p99, changeText)
	if len(r.Samples) == 0 {
		rates.Note = "No seconds measured yet"
	}
	xTitle := "Seconds of the run"
	if nWindows > 1 {
		xTitle += ", its windows one after another"
	}
	return Chart{ID: r.ID, Title: "The run over time, a second at a time", Desc: desc, XTitle: xTitle, XMax: xMax,
		Panels: []Panel{rates, insidePanel, lat}, Table: table, PanelLegends: true, Stacked: true, XSteps: timeXSteps}
}

// timeXSteps cuts a time chart's x axis finer than other charts' (5 s
// steps for a 30 s window, whose last requests end a little after 30 s:
// the axis ends at 35 s, not 40).
const timeXSteps = 8

// A time chart's stops: every stopEvery seconds of a window, or every
// second of a run of at most everySecond seconds. A stop costs about 1.8
// KB of the page in its three plots, and a live run's panel is sent to
// every watcher as it grows: 30 s of stops every second made a 70 KB
// panel, every fifth second 30 KB (both with the table of every second).
const (
	stopEvery   = 5
	everySecond = 10
)

// windowSpan is one window's samples and where it sits on the run's x axis.
type windowSpan struct {
	window        int
	start, length float64
	samples       []result.Sample
}

// windowSpans groups samples by window, in the order the windows come,
// each window starting where the one before ended: the end of its last
// sample (a window's samples run to the end of its last request), or its
// length, seconds, when that is later (a window still being measured).
func windowSpans(samples []result.Sample, seconds float64) []windowSpan {
	var out []windowSpan
	for _, s := range samples {
		if n := len(out); n == 0 || out[n-1].window != s.Window {
			start := 0.0
			if n > 0 {
				start = out[n-1].start + out[n-1].length
			}
			out = append(out, windowSpan{window: s.Window, start: start})
		}
		w := &out[len(out)-1]
		w.samples = append(w.samples, s)
		// A window is at least as long as the run says, the one still
		// being measured included.
		w.length = math.Max(w.length, math.Max(s.AtS+s.Seconds, seconds))
	}
	return out
}

// windowStart is where window w starts on the x axis: measured for the
// windows with samples, and a window's length after the last of them.
func windowStart(ws []windowSpan, w int, seconds float64) float64 {
	if w < len(ws) {
		return ws[w].start
	}
	if len(ws) == 0 {
		return float64(w) * seconds
	}
	last := ws[len(ws)-1]
	end := last.start + math.Max(last.length, seconds)
	return end + float64(w-len(ws))*seconds
}

// timeDesc is the chart in sentences for screen readers.
func timeDesc(r TimeRun, ws []windowSpan, ok, p99 []float64, changes []string) string {
	if len(r.Samples) == 0 {
		s := "No seconds of the run are measured yet."
		if len(changes) > 0 {
			s += " Knob changes in every window: " + strings.Join(changes, "; ") + "."
		}
		return s
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range ok {
		if !math.IsNaN(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	worst := 0.0
	for _, v := range p99 {
		if !math.IsNaN(v) {
			worst = math.Max(worst, v)
		}
	}
	s := strconv.Itoa(len(r.Samples)) + " " + plural(len(r.Samples), "second", "seconds") + " measured over " + strconv.Itoa(len(ws)) + " " +
		plural(len(ws), "window", "windows") + ": ok answers from " + rateText(lo) + " to " + rateText(hi) + " a second; the worst second's p99 " +
		msText(worst) + "."
	if len(changes) > 0 {
		s += " Knob changes in every window: " + strings.Join(changes, "; ") + "."
	}
	return s + " The table under the chart has every second."
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// isMultiple reports whether v is a whole multiple of step (to a
// millisecond).
func isMultiple(v, step float64) bool {
	q := v / step
	return math.Abs(q-math.Round(q)) < 0.001/step
}

// secondsText writes seconds to a millisecond at most, no trailing zeros.
func secondsText(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// rateText writes a rate with one decimal at most; "—" for NaN.
func rateText(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// msText writes a latency with one decimal at most and its unit; "—" for
// NaN.
func msText(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return rateText(v) + " ms"
}
