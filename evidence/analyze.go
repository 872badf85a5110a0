package evidence

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"capacitylab/model"
	"capacitylab/result"
)

// The checklist's items (CheckItem.ID), in the method's order.
const (
	CheckOpenLoop = "open-loop"     // open loop, latency timed from the schedule
	CheckKnee     = "through-knee"  // windows below the knee and at or past it
	CheckRecords  = "records-kept"  // every window's records, every arrival accounted for
	CheckN        = "percentiles-n" // enough ok answers in every window for a p99
	CheckQueue    = "queue-depth"   // the service's queue measured
	CheckUtil     = "utilisation"   // the service's processor use measured
	CheckErrors   = "errors"        // refusals, timeouts and errors counted, few below the knee
	CheckRecovery = "recovery"      // a light window after the saturated ones, back to normal
	CheckLittle   = "littles-law"   // in flight from the records reconciled with rate × latency
)

// The checklist's thresholds.
const (
	// MinN is the ok answers a window needs for a p99 worth quoting: with
	// 100, the p99 is the slowest but one.
	MinN = 100
	// MaxErrorShare is the share of a window's sent requests that may end
	// other than ok below the knee before the checklist flags it.
	MaxErrorShare = 0.01
	// RecoveredP99 is how many times the lightest window's p99 a recovery
	// window's p99 may be and still count as recovered.
	RecoveredP99 = 2.0
	// LittleTolerance is how far apart, as a share of the larger, in
	// flight from the records and Little's product may be below the knee.
	LittleTolerance = 0.10
)

// window accumulates what one pass over a window's records gives beyond
// its row (result.Metrics).
type window struct {
	m        result.Metrics
	records  int
	busy     time.Duration // Σ time outstanding (End − Sent) of sent requests
	busyNot  time.Duration // the same over those not answered ok
	lastEnd  time.Duration
	okLag    time.Duration // Σ Sent − Intended over ok answers
	queued   int           // ok answers carrying a queue wait
	queueSum float64       // Σ their queue wait, ms
	latSum   time.Duration // Σ their latency
}

// Analyze applies the course's method to d: each window's row folded from
// its records by result.Metrics as load folds its own (with load's lab
// columns and notes from d.Data when it came with the records), the first
// saturated window (Saturated) and the ceiling, in flight from the
// records beside Little's product, the queue and service split, the
// admission limit for o.BudgetMS, and the checklist. It never fails: what
// the data cannot show is said in the checklist and the warnings.
func Analyze(d Dataset, o Options) Analysis {
	a := Analysis{Knee: -1, CeilingWindow: -1, Warnings: append([]string(nil), d.Warnings...)}
	n := len(d.Windows)
	acc := make([]window, n)
	outside := 0
	for i := range d.Records {
		if w := d.Records[i].Window; w >= 0 && w < n {
			acc[w].records++
		}
	}
	for i := range acc {
		acc[i].m.Grow(acc[i].records)
	}
	// A retrying client's rows count logical requests (result.Logical);
	// the time outstanding below counts every attempt, as the service
	// held them.
	logical := result.Logical(d.Records)
	retried := len(logical) != len(d.Records)
	if retried {
		for _, r := range logical {
			if r.Window >= 0 && r.Window < n {
				acc[r.Window].m.Add(r)
			}
		}
	}
	for i := range d.Records {
		r := &d.Records[i]
		if r.Window < 0 || r.Window >= n {
			outside++
			continue
		}
		w := &acc[r.Window]
		if !retried {
			w.m.Add(*r)
		}
		if r.Outcome == result.NotSent {
			continue
		}
		out := max(r.End-max(r.Sent, 0), 0)
		w.busy += out
		w.lastEnd = max(w.lastEnd, r.End)
		if r.Outcome != result.OK {
			w.busyNot += out
			continue
		}
		w.okLag += r.Sent - r.Intended
		if r.QueueWaitMS >= 0 {
			w.queued++
			w.queueSum += r.QueueWaitMS
			w.latSum += r.Latency()
		}
	}
	if outside > 0 {
		a.Warnings = append(a.Warnings, fmt.Sprintf("%d records name a window the file does not have; they are left out", outside))
	}

	var loadRows []result.Row
	if d.Data != nil && len(d.Data.Rows) > 0 {
		if len(d.Data.Rows) == n {
			loadRows = d.Data.Rows
		} else {
			a.Warnings = append(a.Warnings, fmt.Sprintf("the report data has %d rows for %d windows of records: its lab columns and notes are left out", len(d.Data.Rows), n))
		}
	}
	a.Rows = make([]result.Row, n)
	for i, w := range d.Windows {
		row := acc[i].m.Row(w.Offered, time.Duration(math.Round(w.Seconds*float64(time.Second))))
		row.Window = i
		if w.Clients > 0 {
			row.Clients = w.Clients
			if w.Seconds > 0 {
				row.Offered = result.Round(float64(row.Sent)/w.Seconds, 100)
			}
		}
		if loadRows != nil {
			l := loadRows[i]
			row.Done, row.Queued, row.Backlogged = l.Done, l.Queued, l.Backlogged
			row.LabServiceMS, row.LabCPUMS, row.Note = l.LabServiceMS, l.LabCPUMS, l.Note
			row.LabWaitMS, row.LabServiceSCV = l.LabWaitMS, l.LabServiceSCV
		}
		a.Rows[i] = row
	}

	for i := range a.Rows {
		if sat, why := Saturated(a.Rows, i); sat {
			a.Knee, a.KneeWhy = i, windowName(a.Rows, i)+" "+why
			break
		}
	}
	if a.Knee < 0 {
		a.KneeWhy = "no window saturated: each answered ok at least " + pct(KeepUp) + " of its arrivals a second (with more clients, more answers)"
	}
	for i, r := range a.Rows {
		if r.OKPerSec > a.Ceiling {
			a.Ceiling, a.CeilingWindow = r.OKPerSec, i
		}
	}

	gauges := map[int]map[string]GaugeReading{}
	if d.Data != nil {
		for _, g := range d.Data.Gauges {
			gauges[g.Window] = g.Readings
		}
	}
	a.Windows = make([]WindowAnalysis, n)
	for i, r := range a.Rows {
		w := &acc[i]
		wa := WindowAnalysis{Window: i, QueueMS: -1, ServiceMS: -1, Gauges: gauges[i]}
		if span := max(r.Seconds, w.lastEnd.Seconds()); span > 0 {
			wa.InFlight = result.Round(w.busy.Seconds()/span, 1000)
			wa.InFlightOther = result.Round(w.busyNot.Seconds()/span, 1000)
		}
		wa.Little = result.Round(r.OKPerSec*r.MeanMS/1000, 1000)
		if r.OK > 0 {
			wa.LittleLag = result.Round(r.OKPerSec*w.okLag.Seconds()/float64(r.OK), 1000)
		}
		if w.queued > 0 {
			q := w.queueSum / float64(w.queued)
			wa.QueueMS = result.Round(q, 1000)
			wa.ServiceMS = result.Round(result.MS(w.latSum)/float64(w.queued)-q, 1000)
		}
		a.Windows[i] = wa
	}

	a.Checklist = checklist(d, a)
	// Read may have said so already, in its own words for the tool.
	if d.Timing == FromSent && !slices.ContainsFunc(d.Warnings, func(w string) bool { return strings.Contains(w, "coordinated omission") }) {
		a.Warnings = append(a.Warnings, "latencies run from when each request was actually sent, not from when it was due: a generator that fell behind hides the queueing it met (coordinated omission), so these percentiles may be too low past the knee")
	}
	// The limit and its warnings come last: WithBudget replaces them.
	a.BudgetMS = o.BudgetMS
	a.Limit, a.Warnings = limitFor(a, o, a.Warnings)
	return a
}

// WithBudget is a analysed for another latency budget. Only the
// admission limit and its warnings depend on the budget, and they follow
// from the rows and the ceiling alone, so it needs no records: a page
// asked for another budget re-derives the limit from a stored analysis
// instead of reading a million records back. It equals Analyze of the
// same dataset with that budget.
func (a Analysis) WithBudget(budgetMS float64) Analysis {
	_, old := limitFor(a, Options{BudgetMS: a.BudgetMS}, nil)
	a.Warnings = append([]string(nil), a.Warnings[:len(a.Warnings)-len(old)]...)
	a.BudgetMS = budgetMS
	a.Limit, a.Warnings = limitFor(a, Options{BudgetMS: budgetMS}, a.Warnings)
	return a
}

// lightest is the window with the lowest offered rate that answered ok,
// the earliest of equals; -1 when none answered.
func lightest(rows []result.Row) int {
	l := -1
	for i, r := range rows {
		if r.OK > 0 && (l < 0 || r.Offered < rows[l].Offered) {
			l = i
		}
	}
	return l
}

// limitFor is the admission limit for o.BudgetMS from the measured
// ceiling and the lightest window's p50, by the course's formula
// (model.AdmissionLimit), and any warning it gives.
func limitFor(a Analysis, o Options, warnings []string) (*LimitAdvice, []string) {
	if o.BudgetMS == 0 {
		return nil, warnings
	}
	if !(o.BudgetMS > 0) || math.IsInf(o.BudgetMS, 0) {
		return nil, append(warnings, fmt.Sprintf("a latency budget of %v ms cannot be met: want a positive number of milliseconds; no admission limit is derived", o.BudgetMS))
	}
	l := lightest(a.Rows)
	if a.Ceiling <= 0 || l < 0 {
		return nil, append(warnings, "no window answered ok, so there is no ceiling or service time to derive an admission limit from")
	}
	s := a.Rows[l].P50MS
	if s <= 0 {
		return nil, append(warnings, fmt.Sprintf("the p50 of %s is 0 ms, so it gives no service time to derive an admission limit from", windowName(a.Rows, l)))
	}
	workers := a.Ceiling * s / 1000
	adm := model.AdmissionLimit(workers, o.BudgetMS, s)
	la := &LimitAdvice{BudgetMS: o.BudgetMS, ServiceMS: s, Window: l, Ceiling: a.Ceiling, Workers: result.Round(workers, 1000),
		Feasible: adm.Feasible, Steps: adm.Steps, Sentence: adm.Sentence}
	if !adm.Feasible {
		return la, append(warnings, fmt.Sprintf("the %s ms budget cannot be met even at rest: the lightest window's p50 is already %s ms (%s); no queue fits, so no admission limit is derived",
			model.Format(o.BudgetMS), model.Format(s), windowName(a.Rows, l)))
	}
	la.Limit = int(adm.Rounded)
	la.InFlight = int(math.Floor(a.Ceiling*o.BudgetMS/1000 + 1e-9))
	if workers < 1 {
		warnings = append(warnings, fmt.Sprintf("the ceiling × service time is %s of a worker: a service that saturated would keep at least one busy, so the ceiling was probably not the service's (is the generator the limit?)", model.Format(workers)))
	}
	return la, warnings
}

// windowName names window i for a reader: "window 3 (120/s)", or with
// clients "window 3 (16 clients)".
func windowName(rows []result.Row, i int) string {
	r := rows[i]
	if r.Clients > 0 {
		return fmt.Sprintf("window %d (%d clients)", i+1, r.Clients)
	}
	return fmt.Sprintf("window %d (%s/s)", i+1, model.Format(r.Offered))
}

// names lists windows by number for a sentence: "window 3", "windows
// 1, 2 and 4".
func names(idx []int) string {
	s := make([]string, len(idx))
	for k, i := range idx {
		s[k] = strconv.Itoa(i + 1)
	}
	if len(s) == 1 {
		return "window " + s[0]
	}
	return "windows " + strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func pct(f float64) string { return model.Format(f*100) + "%" }

// below reports whether window i is below the knee: it kept up, and it
// offered less than the first saturated window did (a light window after
// the knee, as a recovery window is, counts).
func below(a Analysis, i int) bool {
	if sat, _ := Saturated(a.Rows, i); sat {
		return false
	}
	if a.Knee < 0 {
		return true
	}
	k := a.Rows[a.Knee]
	if k.Clients > 0 || a.Rows[i].Clients > 0 {
		return a.Rows[i].Clients < k.Clients
	}
	return a.Rows[i].Offered < k.Offered
}

// gaugeKind says what a metric's name suggests it measures: "inflight",
// "queue", "util" or "".
func gaugeKind(name string) string {
	n := strings.ToLower(name)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(n, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("queue", "pending", "waiting", "backlog"):
		return "queue"
	case has("inflight", "in_flight", "in-flight", "concurren", "outstanding", "active"):
		return "inflight"
	case has("cpu", "util", "busy"):
		return "util"
	}
	return ""
}

// gaugesOf lists the metric names of kind kind read in any window, sorted
// by first appearance.
func gaugesOf(d Dataset, kind string) []string {
	if d.Data == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, g := range d.Data.Gauges {
		for _, name := range sortedKeys(g.Readings) {
			if !seen[name] && gaugeKind(name) == kind {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	return out
}

func sortedKeys(m map[string]GaugeReading) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// LittleCheck says how window w's in flight and Little's product
// compare, and a sentence that says so. They are reconciled when within
// LittleTolerance as they stand, or once the requests not answered ok
// (in flight, but not in a product of ok answers) are taken out and the
// ok answers' send lag (in their latency, but spent in the generator,
// not in flight) is taken from the product. A send lag of more than
// LittleTolerance of the product is not an explanation below the knee
// but a finding: the generator, not the service, fell behind.
func LittleCheck(w WindowAnalysis) (ok bool, why string) {
	near := func(x, y float64) bool {
		m := max(math.Abs(x), math.Abs(y))
		return m == 0 || math.Abs(x-y) <= LittleTolerance*m
	}
	f := model.Format
	if near(w.InFlight, w.Little) {
		return true, fmt.Sprintf("%s in flight from the records, %s by Little's product (ok/s × mean ok latency)", f(w.InFlight), f(w.Little))
	}
	okIn, okLittle := w.InFlight-w.InFlightOther, w.Little-w.LittleLag
	if w.LittleLag > LittleTolerance*w.Little {
		return false, fmt.Sprintf("%s in flight against %s by Little's product, of which %s is send lag: the requests waited in the generator before they were sent, so the generator fell behind its schedule and the service was not offered the load the row says",
			f(w.InFlight), f(w.Little), f(w.LittleLag))
	}
	if near(okIn, okLittle) {
		return true, fmt.Sprintf("%s in flight against %s by Little's product; taking out the %s in flight that were not answered ok and the %s of send lag in the ok latencies leaves %s and %s",
			f(w.InFlight), f(w.Little), f(w.InFlightOther), f(w.LittleLag), f(okIn), f(okLittle))
	}
	return false, fmt.Sprintf("%s in flight against %s by Little's product, %s and %s without the requests not answered ok and the send lag: more apart than %s",
		f(w.InFlight), f(w.Little), f(okIn), f(okLittle), pct(LittleTolerance))
}
