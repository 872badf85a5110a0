package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"capacitylab/evidence"
	"capacitylab/loadrun"
	"capacitylab/measure"
	"capacitylab/result"
)

// Knee search defaults and bounds.
const (
	defaultStep      = 1.25
	maxStep          = 4
	defaultMaxErrors = 0.01
	defaultBudget    = 10 * time.Minute
	maxBudget        = 24 * time.Hour
)

// kneePlan is a knee search (--knee FROM:TO and its flags).
type kneePlan struct {
	from, to  float64
	step      float64
	maxP99    time.Duration // 0: no bound
	maxErrors float64       // the share of sent requests not ok past which it stops
	budget    time.Duration
	recovery  bool // one window at FROM after the search stops
}

// kneeFlags are the flags that only a knee search takes.
var kneeFlags = []string{"step", "max-p99", "max-errors", "budget", "recovery"}

// parseKnee reads --knee and its flags; f has been parsed. seconds and
// timeout are the windows' length and the callers' patience, which the
// budget must have room for.
func parseKnee(f *flag.FlagSet, set func(string) bool, seconds float64, timeout time.Duration) (*kneePlan, error) {
	get := func(name string) any { return f.Lookup(name).Value.(flag.Getter).Get() }
	spec := f.Lookup("knee").Value.String()
	if spec == "" {
		for _, name := range kneeFlags {
			if set(name) {
				return nil, usagef("--%s is for a knee search: add --knee FROM:TO", name)
			}
		}
		return nil, nil
	}
	for _, name := range []string{"rate", "closed", "arrivals"} {
		if set(name) {
			return nil, usagef("--knee and --%s exclude each other: a knee search chooses its own rates, from FROM to TO", name)
		}
	}
	p := &kneePlan{
		step:      get("step").(float64),
		maxP99:    get("max-p99").(time.Duration),
		maxErrors: get("max-errors").(float64),
		budget:    get("budget").(time.Duration),
		recovery:  get("recovery").(bool),
	}
	fromS, toS, ok := strings.Cut(spec, ":")
	from, err1 := strconv.ParseFloat(strings.TrimSpace(fromS), 64)
	to, err2 := strconv.ParseFloat(strings.TrimSpace(toS), 64)
	if !ok || err1 != nil || err2 != nil || math.IsNaN(from) || math.IsNaN(to) || math.IsInf(from, 0) || math.IsInf(to, 0) {
		return nil, usagef("--knee %q is not FROM:TO: want the first and the highest rate a second, e.g. --knee 40:400", spec)
	}
	if from <= 0 || to > result.MaxRate || from >= to {
		return nil, usagef("--knee %q is not allowed: want 0 < FROM < TO ≤ %d a second, e.g. --knee 40:400", spec, result.MaxRate)
	}
	p.from, p.to = from, to
	if math.IsNaN(p.step) || p.step <= 1 || p.step > maxStep {
		return nil, usagef("--step %v is not allowed: want a factor more than 1 and at most %d (each window's rate is the last one's times it)", p.step, maxStep)
	}
	if p.maxP99 < 0 || p.maxP99 > result.MaxTimeout {
		return nil, usagef("--max-p99 %v is not allowed: want 0 (no bound) or more, at most %v", p.maxP99, result.MaxTimeout)
	}
	if math.IsNaN(p.maxErrors) || p.maxErrors <= 0 || p.maxErrors > 1 {
		return nil, usagef("--max-errors %v is not allowed: want a share of the requests sent more than 0 and at most 1 (e.g. 0.01 for 1%%)", p.maxErrors)
	}
	need := p.windowCost(seconds, timeout)
	if p.recovery {
		need *= 2
	}
	if p.budget > maxBudget || p.budget < need {
		what := "one window"
		if p.recovery {
			what = "one window and the recovery window"
		}
		return nil, usagef("--budget %v is not allowed: want room for at least %s (%v, each --seconds + --timeout + %v between windows), at most %v", p.budget, what, need, measure.WindowPause, maxBudget)
	}
	return p, nil
}

// windowCost is what the budget counts for a window: its length, the
// callers' patience (its last requests may take that long to end) and the
// pause after it.
func (p *kneePlan) windowCost(seconds float64, timeout time.Duration) time.Duration {
	return time.Duration(seconds*float64(time.Second)) + timeout + measure.WindowPause
}

// next is the search's rate after prev, its k-th (from 0): FROM × step^k,
// to two decimals, at least 0.01 above prev, and TO once that is reached.
func (p *kneePlan) next(prev float64, k int) float64 {
	return min(result.Round(max(p.from*math.Pow(p.step, float64(k)), prev+0.01), 100), p.to)
}

// maxShown bounds the count windows makes: the count is only shown
// (progress says "window 3/12"), and a search that long ends by its budget.
const maxShown = 100000

// windows is how many windows the search has at most, the recovery
// window included.
func (p *kneePlan) windows() int {
	n := 1
	for r := p.from; r < p.to && n < maxShown; n++ {
		r = p.next(r, n)
	}
	if p.recovery {
		n++
	}
	return n
}

// point is one window as the summary gives it.
type point struct {
	Window   int     `json:"window"` // as the rows number them, from 0
	Offered  float64 `json:"offered"`
	OKPerSec float64 `json:"ok_per_sec"`
	P50MS    float64 `json:"p50_ms"`
	P95MS    float64 `json:"p95_ms"`
	P99MS    float64 `json:"p99_ms"`
	N        int     `json:"n"`
}

func pointOf(r result.Row) *point {
	return &point{Window: r.Window, Offered: r.Offered, OKPerSec: r.OKPerSec, P50MS: r.P50MS, P95MS: r.P95MS, P99MS: r.P99MS, N: r.N}
}

// kneeSummary is what a knee search found, printed after its rows.
type kneeSummary struct {
	Windows int    `json:"windows"` // windows run, the recovery window included
	Stopped string `json:"stopped"` // why the search stopped
	// Knee is the first saturation point (evidence.Saturated), nil when
	// no window saturated; KneeWhy says what showed it; BeforeKnee is the
	// window before it.
	Knee       *point `json:"knee,omitempty"`
	KneeWhy    string `json:"knee_why,omitempty"`
	BeforeKnee *point `json:"before_knee,omitempty"`
	// Ceiling is the window of the search (not the recovery) with the
	// most ok answers a second.
	Ceiling *point `json:"ceiling,omitempty"`
	// The requests of every window, the recovery included.
	Sent       int     `json:"sent"`
	Refused    int     `json:"refused"`
	Gaveup     int     `json:"gaveup"`
	Error      int     `json:"error"`
	ErrorShare float64 `json:"error_share"` // (refused + gaveup + error) ÷ sent
	NotSent    int     `json:"not_sent"`
	ClientBusy int     `json:"client_busy"`
	Lost       int     `json:"lost"`
	// Recovery is the window at FROM after the search, nil when none ran;
	// Recovered says whether it kept up with its arrivals
	// (evidence.Saturated says not).
	Recovery  *point `json:"recovery,omitempty"`
	Recovered bool   `json:"recovered,omitempty"`
}

// search runs a knee search: one window at a time through measure.Generate,
// handed to out as a plain sweep's are, until a stop rule says to stop;
// then the recovery window. It returns the summary of what it measured,
// also when ctx was cancelled (Stopped says so) or a window failed (err).
func (p *kneePlan) search(ctx context.Context, base loadrun.Sweep, seconds float64, timeout time.Duration, out *output) (kneeSummary, error) {
	start := time.Now()
	cost := p.windowCost(seconds, timeout)
	reserve := time.Duration(0)
	if p.recovery {
		reserve = cost
	}
	out.total = p.windows()
	var sum kneeSummary
	var rows []result.Row // the search's windows, the recovery not among them
	kneeAt := -1
	// one runs a window at rate and returns its row, or false when it
	// was cut short (ctx cancelled) or failed.
	one := func(rate float64, note string) (result.Row, bool, error) {
		if out.windows > 0 && base.Driver == nil {
			// The pause a plain sweep makes between its windows (a
			// simulation makes none).
			t := time.NewTimer(measure.WindowPause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		if ctx.Err() != nil {
			return result.Row{}, false, nil
		}
		sw := base
		sw.Rates = []float64{rate}
		out.offset, out.note = out.windows, note
		n := len(out.rows)
		err := measure.Generate(ctx, sw, out.handle)
		if len(out.rows) == n {
			return result.Row{}, false, err
		}
		row := out.rows[len(out.rows)-1]
		if err != nil && ctx.Err() == nil {
			return row, false, err
		}
		return row, ctx.Err() == nil, nil
	}
	rate := p.from
	for k := 0; ; k++ {
		if k > 0 {
			rate = p.next(rate, k)
		}
		if k > 0 {
			if used := time.Since(start); used+cost+reserve > p.budget {
				sum.Stopped = fmt.Sprintf("the next window (%s/s) would not fit the budget: %v used of %v, a window counts %v", fmtOffered(rate), used.Round(time.Second), p.budget, cost)
				break
			}
		}
		row, ok, err := one(rate, "")
		if err != nil {
			sum.Stopped = "a window failed: " + err.Error()
			p.finish(&sum, out.rows, rows, kneeAt)
			return sum, err
		}
		if !ok && len(rows)+1 == len(out.rows) {
			sum.Stopped = fmt.Sprintf("interrupted in window %d (%s/s): its row and records are kept, the arrivals after the interrupt as not_sent", out.windows, fmtOffered(rate))
			p.finish(&sum, out.rows, rows, kneeAt)
			return sum, nil
		}
		if !ok {
			sum.Stopped = fmt.Sprintf("interrupted between windows, after window %d", out.windows)
			p.finish(&sum, out.rows, rows, kneeAt)
			return sum, nil
		}
		rows = append(rows, row)
		i := len(rows) - 1
		if kneeAt >= 0 {
			kr := rows[kneeAt]
			if row.OKPerSec < kr.OKPerSec*(2-evidence.KeepUp) {
				sum.Stopped = fmt.Sprintf("saturated at %s/s; one step higher, %s/s, confirmed it: %.1f ok/s against %.1f, under %g%% more", fmtOffered(kr.Offered), fmtOffered(rate), row.OKPerSec, kr.OKPerSec, 100*(1-evidence.KeepUp))
			} else {
				sum.Stopped = fmt.Sprintf("saturated at %s/s; one step higher, %s/s, did not confirm it: %.1f ok/s against %.1f, %.0f%% more (rerun with longer --seconds)", fmtOffered(kr.Offered), fmtOffered(rate), row.OKPerSec, kr.OKPerSec, 100*(row.OKPerSec/kr.OKPerSec-1))
			}
			break
		}
		sat, _ := evidence.Saturated(rows, i)
		if sat {
			kneeAt = i
		}
		notOK := row.Refused + row.Gaveup + row.Error
		if p.maxP99 > 0 && row.P99MS > result.MS(p.maxP99) {
			sum.Stopped = fmt.Sprintf("p99 %.1f ms at %s/s passed --max-p99 %v", row.P99MS, fmtOffered(rate), p.maxP99)
			break
		}
		if row.Sent > 0 && float64(notOK)/float64(row.Sent) > p.maxErrors {
			sum.Stopped = fmt.Sprintf("%d of %d requests sent at %s/s were not ok (%.1f%%), past --max-errors %g", notOK, row.Sent, fmtOffered(rate), 100*float64(notOK)/float64(row.Sent), p.maxErrors)
			break
		}
		if rate >= p.to {
			if sat {
				sum.Stopped = fmt.Sprintf("saturated at TO, %s/s: no higher rate to confirm it with", fmtOffered(p.to))
			} else {
				sum.Stopped = fmt.Sprintf("reached TO, %s/s, without saturating", fmtOffered(p.to))
			}
			break
		}
	}
	if p.recovery {
		note := fmt.Sprintf("recovery: %s/s again after the search stopped", fmtOffered(p.from))
		row, ok, err := one(p.from, note)
		switch {
		case err != nil:
			sum.Stopped += "; the recovery window failed: " + err.Error()
		case !ok && ctx.Err() != nil:
			sum.Stopped += "; interrupted in the recovery window"
		case ok:
			sum.Recovery = pointOf(row)
			sat, _ := evidence.Saturated([]result.Row{row}, 0)
			sum.Recovered = !sat
		}
		p.finish(&sum, out.rows, rows, kneeAt)
		return sum, err
	}
	p.finish(&sum, out.rows, rows, kneeAt)
	return sum, nil
}

// finish fills in the summary's points and totals: all are every row
// printed (the recovery and a cut window included), search the search's
// finished windows.
func (p *kneePlan) finish(sum *kneeSummary, all, search []result.Row, kneeAt int) {
	sum.Windows = len(all)
	if kneeAt >= 0 {
		sum.Knee = pointOf(search[kneeAt])
		_, sum.KneeWhy = evidence.Saturated(search, kneeAt)
		if kneeAt > 0 {
			sum.BeforeKnee = pointOf(search[kneeAt-1])
		}
	}
	best := -1
	for i, r := range search {
		if best < 0 || r.OKPerSec > search[best].OKPerSec {
			best = i
		}
	}
	if best >= 0 {
		sum.Ceiling = pointOf(search[best])
	}
	for _, r := range all {
		sum.Sent += r.Sent
		sum.Refused += r.Refused
		sum.Gaveup += r.Gaveup
		sum.Error += r.Error
		sum.NotSent += r.NotSent
		sum.ClientBusy += r.ClientBusy
		sum.Lost += r.Lost
	}
	if sum.Sent > 0 {
		sum.ErrorShare = result.Round(float64(sum.Refused+sum.Gaveup+sum.Error)/float64(sum.Sent), 10000)
	}
}

// print writes the summary after the rows: one JSON object
// {"summary": ...} with --json, else lines of words.
func (sum kneeSummary) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(struct {
			Summary kneeSummary `json:"summary"`
		}{sum})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nknee search: %d %s; stopped: %s\n", sum.Windows, plural(sum.Windows, "window", "windows"), sum.Stopped)
	if sum.Knee != nil {
		fmt.Fprintf(&b, "first saturation point: window %d at %s/s offered: %s\n", sum.Knee.Window+1, fmtOffered(sum.Knee.Offered), sum.KneeWhy)
	} else {
		b.WriteString("first saturation point: none: every window measured kept up with its arrivals\n")
	}
	if sum.Ceiling != nil {
		fmt.Fprintf(&b, "ceiling: %.2f ok/s at window %d (%s/s offered)\n", sum.Ceiling.OKPerSec, sum.Ceiling.Window+1, fmtOffered(sum.Ceiling.Offered))
	}
	lat := func(what string, p *point) {
		if p != nil {
			fmt.Fprintf(&b, "%s: window %d at %s/s: p50 %.1f ms, p95 %.1f ms, p99 %.1f ms (n %d ok answers)\n", what, p.Window+1, fmtOffered(p.Offered), p.P50MS, p.P95MS, p.P99MS, p.N)
		}
	}
	lat("before the knee", sum.BeforeKnee)
	lat("at the ceiling", sum.Ceiling)
	fmt.Fprintf(&b, "errors: %d refused, %d gave up, %d error of %d sent (%.2f%%); not sent %d, client busy %d, lost %d\n",
		sum.Refused, sum.Gaveup, sum.Error, sum.Sent, 100*sum.ErrorShare, sum.NotSent, sum.ClientBusy, sum.Lost)
	if r := sum.Recovery; r != nil {
		verdict := "recovered: it kept up with its arrivals"
		if !sum.Recovered {
			verdict = "NOT recovered: it did not keep up with its arrivals"
		}
		fmt.Fprintf(&b, "recovery: window %d at %s/s: %.2f ok/s, p99 %.1f ms (n %d); %s\n", r.Window+1, fmtOffered(r.Offered), r.OKPerSec, r.P99MS, r.N, verdict)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fmtOffered prints an offered rate as the rows do.
func fmtOffered(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }
