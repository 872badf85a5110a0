package evidence

import (
	"fmt"
	"strings"

	"capacitylab/model"
)

// checklist is the method's checklist for d as a finds it, in the
// method's order; each item's Detail says what was found or what is
// missing and how to get it.
func checklist(d Dataset, a Analysis) []CheckItem {
	return []CheckItem{
		checkOpenLoop(d, a),
		checkKnee(a),
		checkRecords(d, a),
		checkN(a),
		checkQueue(d, a),
		checkUtil(d, a),
		checkErrors(a),
		checkRecovery(a),
		checkLittle(d, a),
	}
}

func toolName(d Dataset) string {
	switch d.Format {
	case VegetaCSV:
		return "vegeta"
	case K6JSON, K6CSV:
		return "k6"
	}
	return "the generator"
}

func checkOpenLoop(d Dataset, a Analysis) CheckItem {
	c := CheckItem{ID: CheckOpenLoop, Title: "Open loop: arrivals on a schedule, latency timed from it"}
	var closed []int
	for i, r := range a.Rows {
		if r.Clients > 0 {
			closed = append(closed, i)
		}
	}
	switch {
	case len(closed) > 0:
		c.Detail = fmt.Sprintf("%s ran a closed loop (a fixed number of clients, each waiting for its answer before sending again): a slow service slows the clients, so the load falls as latency rises and the queue a real crowd would build never forms. Rerun open loop: cmd/load --rate.", upper(names(closed)))
	case d.Timing != FromIntended:
		c.Detail = fmt.Sprintf("The latencies run from when %s actually sent each request, not from when it was due: a generator that fell behind leaves out the time its requests waited to be sent (coordinated omission), so the tail past the knee looks better than callers saw it. Rerun with cmd/load, which times from the schedule (--rate), or check that the generator never fell behind.", toolName(d))
	case len(a.Rows) == 0:
		c.Detail = "The file has no windows."
	default:
		c.Met = true
		c.Detail = fmt.Sprintf("Every window offered arrivals on a schedule and timed each latency from when the request was due (%d windows).", len(a.Rows))
	}
	return c
}

func checkKnee(a Analysis) CheckItem {
	c := CheckItem{ID: CheckKnee, Title: "Through the knee: windows below it and at or past it"}
	var under []int
	for i := range a.Rows {
		if below(a, i) {
			under = append(under, i)
		}
	}
	switch {
	case a.Knee < 0:
		c.Detail = "No window saturated (" + a.KneeWhy + "), so the knee was not reached: add windows at higher rates until one answers fewer than " + pct(KeepUp) + " of its arrivals (cmd/load --knee FROM:TO steps up by itself and stops past the knee)."
	case len(under) == 0:
		c.Detail = "The first window already saturated (" + a.KneeWhy + "), so nothing shows the service keeping up: add windows at lower rates, starting well below the expected ceiling."
	default:
		c.Met = true
		c.Detail = fmt.Sprintf("%s kept up below the knee; the first saturated: %s.", upper(names(under)), a.KneeWhy)
	}
	return c
}

func checkRecords(d Dataset, a Analysis) CheckItem {
	c := CheckItem{ID: CheckRecords, Title: "Records kept: every arrival accounted for"}
	var empty, lost, unbalanced []int
	for i, r := range a.Rows {
		switch {
		case r.Arrivals == 0:
			empty = append(empty, i)
		case r.Lost != 0:
			lost = append(lost, i)
		case r.Arrivals != r.Sent+r.NotSent+r.ClientBusy:
			unbalanced = append(unbalanced, i)
		}
	}
	var miss []string
	if len(a.Rows) == 0 {
		miss = append(miss, "the file has no windows")
	}
	if len(empty) > 0 {
		miss = append(miss, upper(names(empty))+" "+has(empty)+" no records: keep every window's raw records (cmd/load --records FILE, or --report NAME)")
	}
	if len(lost) > 0 {
		miss = append(miss, upper(names(lost))+" "+has(lost)+" sent requests with no outcome (lost): the generator lost track of them, so the counts cannot be trusted")
	}
	if len(unbalanced) > 0 {
		miss = append(miss, upper(names(unbalanced))+" "+has(unbalanced)+" arrivals that are not sent + not_sent + client_busy")
	}
	if len(miss) > 0 {
		c.Detail = strings.Join(miss, "; ") + "."
		return c
	}
	c.Met = true
	c.Detail = fmt.Sprintf("%d records over %d windows, every arrival sent or counted as not sent, none lost.", len(d.Records), len(a.Rows))
	return c
}

func checkN(a Analysis) CheckItem {
	c := CheckItem{ID: CheckN, Title: fmt.Sprintf("Percentiles with n: at least %d ok answers a window", MinN)}
	var short []string
	for i, r := range a.Rows {
		if r.N < MinN {
			short = append(short, fmt.Sprintf("window %d has n = %d", i+1, r.N))
		}
	}
	if len(short) > 0 || len(a.Rows) == 0 {
		c.Detail = strings.Join(short, ", ") + fmt.Sprintf(": a p99 needs at least %d ok answers to be more than the slowest one or two. Lengthen those windows (--seconds) or, below the knee, raise their rate.", MinN)
		if len(a.Rows) == 0 {
			c.Detail = "The file has no windows."
		}
		return c
	}
	least := a.Rows[0].N
	for _, r := range a.Rows {
		least = min(least, r.N)
	}
	c.Met = true
	c.Detail = fmt.Sprintf("Every window's percentiles are over at least %d ok answers (n is in the rows).", least)
	return c
}

func checkQueue(d Dataset, a Analysis) CheckItem {
	c := CheckItem{ID: CheckQueue, Title: "Queue depth measured, not guessed"}
	var found []string
	for _, w := range a.Windows {
		if w.QueueMS >= 0 {
			h := "a queue-wait header"
			if d.Data != nil && d.Data.QueueHeader != "" {
				h = "the " + d.Data.QueueHeader + " header"
			}
			found = append(found, "the service's queue wait in "+h+" on the ok answers")
			break
		}
	}
	if g := gaugesOf(d, "queue"); len(g) > 0 {
		found = append(found, "its queue gauge "+strings.Join(g, ", "))
	}
	for _, r := range a.Rows {
		if r.Queued >= 0 {
			found = append(found, "the lab's queued column")
			break
		}
	}
	if len(found) == 0 {
		c.Detail = "Nothing in the file says how long requests queued inside the service or how many waited. Have the service report each request's queue wait in a response header and give load its name (--queue-header NAME), or expose a queue-depth gauge on its Prometheus /metrics for load to read beside each window (--metrics URL --gauge NAME)."
		return c
	}
	c.Met = true
	c.Detail = "Measured: " + strings.Join(found, "; ") + "."
	return c
}

func checkUtil(d Dataset, a Analysis) CheckItem {
	c := CheckItem{ID: CheckUtil, Title: "Utilisation measured: how busy the service's processors were"}
	var found []string
	if g := gaugesOf(d, "util"); len(g) > 0 {
		found = append(found, "the service's "+strings.Join(g, ", "))
	}
	for _, r := range a.Rows {
		if r.LabCPUMS >= 0 {
			found = append(found, "the lab's processor time (lab_cpu_ms)")
			break
		}
	}
	if len(found) == 0 {
		c.Detail = "Nothing in the file says how busy the service was, so the bottleneck at the knee cannot be named. Expose a processor counter such as process_cpu_seconds_total (or a busy-workers gauge) on the service's Prometheus /metrics and have load read it beside each window (--metrics URL --counter process_cpu_seconds_total)."
		return c
	}
	c.Met = true
	c.Detail = "Measured: " + strings.Join(found, "; ") + "."
	return c
}

func checkErrors(a Analysis) CheckItem {
	c := CheckItem{ID: CheckErrors, Title: "Errors counted: refused, gave up and failed, few below the knee"}
	var flagged []string
	total := 0
	for i, r := range a.Rows {
		bad := r.Refused + r.Gaveup + r.Error
		total += bad
		if below(a, i) && r.Sent > 0 && float64(bad) > MaxErrorShare*float64(r.Sent) {
			flagged = append(flagged, fmt.Sprintf("window %d: %d of %d (%d refused, %d gave up, %d failed)", i+1, bad, r.Sent,
				r.Refused, r.Gaveup, r.Error))
		}
	}
	if len(a.Rows) == 0 {
		c.Detail = "The file has no windows."
		return c
	}
	if len(flagged) > 0 {
		c.Detail = "Below the knee more than " + pct(MaxErrorShare) + " of the requests sent ended other than ok: " + strings.Join(flagged, "; ") +
			". A service that keeps up should answer them: find out why (the reasons are in the records) before quoting its ceiling."
		return c
	}
	c.Met = true
	c.Detail = fmt.Sprintf("Every window's refused, gave up and failed requests are counted (%d in all, in the rows); below the knee none passed %s of those sent.", total, pct(MaxErrorShare))
	return c
}

func checkRecovery(a Analysis) CheckItem {
	c := CheckItem{ID: CheckRecovery, Title: "Recovery after the load stops"}
	last := -1
	for i := range a.Rows {
		if sat, _ := Saturated(a.Rows, i); sat {
			last = i
		}
	}
	if last < 0 {
		c.Detail = "No window saturated, so nothing shows the service recovering from overload: after the saturated windows, run one more at a light rate."
		return c
	}
	base := -1
	for i := range a.Knee {
		if a.Rows[i].N > 0 && (base < 0 || a.Rows[i].Offered < a.Rows[base].Offered) {
			base = i
		}
	}
	if base < 0 {
		c.Detail = "No window before the knee answered ok, so there is no p99 at rest to recover to: start the sweep at a light rate."
		return c
	}
	bound := RecoveredP99 * a.Rows[base].P99MS
	var tried []string
	for i := last + 1; i < len(a.Rows); i++ {
		r := a.Rows[i]
		if !below(a, i) {
			continue
		}
		if r.N > 0 && r.P99MS <= bound {
			c.Met = true
			c.Detail = fmt.Sprintf("Window %d, after the last saturated one (window %d), kept up with p99 %s ms, within %s× the %s ms of window %d at rest.",
				i+1, last+1, model.Format(r.P99MS), model.Format(RecoveredP99), model.Format(a.Rows[base].P99MS), base+1)
			if r.Note != "" {
				c.Detail += " load's note: " + r.Note + "."
			}
			return c
		}
		tried = append(tried, fmt.Sprintf("window %d kept up but its p99 was %s ms", i+1, model.Format(r.P99MS)))
	}
	if len(tried) > 0 {
		c.Detail = fmt.Sprintf("After the last saturated window (%d), %s: more than %s× the %s ms at rest (window %d), so the service had not recovered. Run a longer light window after the load, or find what stays slow.",
			last+1, strings.Join(tried, "; "), model.Format(RecoveredP99), model.Format(a.Rows[base].P99MS), base+1)
		return c
	}
	c.Detail = fmt.Sprintf("No light window follows the last saturated one (window %d), so nothing shows the service recovering once the overload stopped: end the sweep with one window below the knee (cmd/load --knee ends with one at its first rate).", last+1)
	return c
}

func checkLittle(d Dataset, a Analysis) CheckItem {
	c := CheckItem{ID: CheckLittle, Title: "Reconciled with Little's law: in flight = rate × time in system"}
	var bad, good []string
	for i, w := range a.Windows {
		if !below(a, i) || a.Rows[i].N == 0 {
			continue
		}
		ok, why := LittleCheck(w)
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("window %d: %s", i+1, why))
		case strings.Contains(why, "taking out"):
			good = append(good, fmt.Sprintf("window %d: %s", i+1, why))
		default:
			good = append(good, fmt.Sprintf("window %d: %s and %s", i+1, model.Format(w.InFlight), model.Format(w.Little)))
		}
	}
	var gauge []string
	for _, name := range gaugesOf(d, "inflight") {
		for i, w := range a.Windows {
			if g, ok := w.Gauges[name]; ok && below(a, i) {
				gauge = append(gauge, fmt.Sprintf("window %d: the service's %s read %s on average against %s in flight from the records (the records also count the time on the network)",
					i+1, name, model.Format(g.Mean), model.Format(w.InFlight)))
			}
		}
	}
	for _, name := range gaugesOf(d, "queue") {
		for i, w := range a.Windows {
			if g, ok := w.Gauges[name]; ok && below(a, i) && w.QueueMS >= 0 {
				gauge = append(gauge, fmt.Sprintf("window %d: the service's %s read %s on average, Little's law on the queue says %s (ok/s × mean queue wait)",
					i+1, name, model.Format(g.Mean), model.Format(a.Rows[i].OKPerSec*w.QueueMS/1000)))
			}
		}
	}
	tail := ""
	if len(gauge) > 0 {
		tail = " Beside the service's own gauges: " + strings.Join(gauge, "; ") + "."
	}
	switch {
	case len(good)+len(bad) == 0:
		c.Detail = "No window below the knee answered ok, so there is nothing to reconcile: add light windows."
	case len(bad) > 0:
		c.Detail = "Not reconciled within " + pct(LittleTolerance) + " below the knee: " + strings.Join(bad, "; ") +
			". Check that the records are whole (times from one clock, no window cut short) before trusting the latencies." + tail
	default:
		c.Met = true
		c.Detail = "Below the knee, in flight from the records matches Little's product (ok/s × mean ok latency) within " + pct(LittleTolerance) + " in every window: " + strings.Join(good, "; ") + "." + tail
	}
	return c
}

// has is "has" or "have" for a list of windows.
func has(idx []int) string {
	if len(idx) == 1 {
		return "has"
	}
	return "have"
}

// upper capitalises a sentence's first letter.
func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
