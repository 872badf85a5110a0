package recorder

import (
	"capacitylab/admit"
	"capacitylab/result"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"capacitylab/lessons"
	"capacitylab/loadrun"
	"capacitylab/measure"
	"capacitylab/sim"
)

// DefaultMaxLoad is the most load, per core, under which Record records:
// the 1-minute load average when it starts, and the processor time other
// programs take while a preset runs.
const DefaultMaxLoad = 0.3

// Config says what Record records and how.
type Config struct {
	Dir    string // content directory, read and rewritten in place
	Lesson string // only this lesson (slug); "" = every lesson
	Lab    string // only this lab preset (id); "" = every preset

	// SecondsScale multiplies every window's length, for quick trials:
	// 0 or 1 records the presets as written. A scaled table says so in its
	// source, and its fingerprint covers the scaled length, so the loader
	// rejects it until it is recorded again at full length.
	SecondsScale float64

	// Children starts each preset's lab and load children (the server:
	// its own binary with "lab-child" and "load-child"), as a learner's
	// run does; DrainWait is left at measure's default.
	Children measure.Config
	Log      io.Writer // progress and warnings; nil = discarded

	// Build names the code that recorded (its version control revision,
	// such as "085f71a2c3d4" or "085f71a2c3d4+dirty"), so a reader can tell
	// which lab and generator measured a table; "" leaves it out.
	Build string

	// MaxLoad is how busy the machine may be, per core, for a recording:
	// Record refuses to start when the 1-minute load average is above
	// MaxLoad × cores, and refuses a table when other programs used more
	// than that many cores while its preset ran (0 = DefaultMaxLoad).
	// Busy records anyway and says so in every table's source.
	MaxLoad float64
	Busy    bool

	Now     func() time.Time // nil = time.Now
	LoadAvg func() string    // the load average line for the source; nil = read /proc/loadavg
	// Others says how many cores programs other than this one and its
	// children pids (a preset's lab and load children) used since the
	// first call with the same pids, or false when it cannot be known (or
	// on that first call); nil = read /proc (Linux).
	Others func(pids []int) (float64, bool)
}

// Recorded is one table Record wrote.
type Recorded struct {
	lessons.Written
	Rows    []result.Row  // the measured rows
	Elapsed time.Duration // how long the preset took, drains included
	// Time is the time table written beside it for a preset with
	// over_time (its Table is "" otherwise), and Samples what it holds.
	Time    lessons.Written
	Samples []result.Sample
}

// Record runs lab presets, each through measure.Measure (a lab child and a
// load child of its own, exactly as a learner's run), and writes each
// preset's result as a table block into its lesson file
// (lessons.WriteTable): the table with preset=ID (recorded or pending) is
// replaced where it stands, or a new one with id ID-result is inserted
// after the lab block. Each table's source names the command, seed,
// machine, build, the session (every table written by one call shares
// it), date, the load average at the start and what other programs used
// while it ran, and its fingerprint covers the preset and rows (see
// lessons.Fingerprint). A simulated preset is simulated with package sim
// instead (see SimulatePreset): no lab or generator runs, and the busy
// checks do not apply to it.
//
// Record refuses to start on a busy machine (see MaxLoad), and refuses,
// without writing that table, when other programs took more than MaxLoad
// while it ran, when a window sent more than MaxLateShare of its requests
// late in each of LateAttempts measurements (it measures the preset again
// before giving up), when a window lost a request (lost ≠ 0, a generator bug),
// when the lab had not drained before a window, or when the preset changed
// on disk while it ran. Tables already written stay written. The content
// must validate apart from table fingerprints and pending tables (stale
// and pending tables are what Record is for).
func Record(ctx context.Context, cfg Config) ([]Recorded, error) {
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	loadAvg := cfg.LoadAvg
	if loadAvg == nil {
		loadAvg = readLoadAvg
	}
	if cfg.Others == nil {
		cfg.Others = newOthersMeter()
	}
	maxLoad := cfg.MaxLoad
	if maxLoad == 0 {
		maxLoad = DefaultMaxLoad
	}
	if !(maxLoad > 0) {
		return nil, fmt.Errorf("max load %g is not allowed: want more than 0 (the 1-minute load average per core)", cfg.MaxLoad)
	}
	cfg.MaxLoad = maxLoad
	scale := cfg.SecondsScale
	if scale == 0 {
		scale = 1
	}
	if !(scale > 0 && scale <= 1) {
		return nil, fmt.Errorf("seconds scale %g is not allowed: want more than 0 and at most 1 (1 records the presets as written)", cfg.SecondsScale)
	}
	jobs, err := lessons.PlanRecording(cfg.Dir, cfg.Lesson, cfg.Lab, LoadOptions())
	if err != nil {
		return nil, err
	}
	windows, secs, drain := 0, 0.0, 0.0
	for _, j := range jobs {
		windows += max(len(j.Lab.Rates), 1)
		secs += float64(max(len(j.Lab.Rates), 1)) * j.Lab.Seconds * scale
		drain += j.Lab.DrainSeconds(scale)
	}
	fmt.Fprintf(logw, "record: %d preset(s), %d window(s): %s s of windows, plus about %s s for overloaded labs to drain (from each preset's ceiling)\n",
		len(jobs), windows, fmtSecs(secs), fmtSecs(drain))
	cores := runtime.NumCPU()
	busy := ""
	// A simulation does not depend on how busy the machine is.
	allSimulated := !slices.ContainsFunc(jobs, func(j lessons.RecordJob) bool { return !j.Lab.Simulated })
	if la := loadAvg(); la != "" && !allSimulated {
		if one, err := strconv.ParseFloat(strings.Fields(la)[0], 64); err == nil && one > maxLoad*float64(cores) {
			if !cfg.Busy {
				return nil, fmt.Errorf("the machine is busy: load average %s on %d cores, above %g a core (%g): the tables would measure the other work as much as the lab; wait until `uptime` shows a quiet machine, or record anyway with --busy, and the tables will say so",
					la, cores, maxLoad, maxLoad*float64(cores))
			}
			busy = fmt.Sprintf("BUSY: recorded with the 1-minute load average %s above %g a core", strings.Fields(la)[0], maxLoad)
			fmt.Fprintf(logw, "record: warning: load average %s on %d cores: recording anyway (--busy); every table's source says so\n", la, cores)
		}
	}
	sess := session{id: now().UTC().Format("20060102T150405Z"), busy: busy}
	var out []Recorded
	for i, j := range jobs {
		fmt.Fprintf(logw, "[%d/%d] %s %s: %s\n", i+1, len(jobs), j.File, j.Lab.ID, presetSummary(j.Lab, scale))
		rec, err := recordOne(ctx, cfg, j, scale, now, loadAvg, sess, logw)
		if err != nil {
			return out, fmt.Errorf("%s: preset %s: %w", j.File, j.Lab.ID, err)
		}
		fmt.Fprintf(logw, "  wrote table %s at %s:%d (%s)\n", rec.Table, rec.File, rec.Line, rec.Elapsed.Round(100*time.Millisecond))
		if rec.Time.Table != "" {
			fmt.Fprintf(logw, "  wrote time table %s at %s:%d (%d samples)\n", rec.Time.Table, rec.Time.File, rec.Time.Line, len(rec.Samples))
		}
		out = append(out, rec)
	}
	// What was written must now load, fingerprints included (a scaled
	// trial is the one expected failure). Problems in files not recorded
	// this time (stale tables of other presets) are only reported.
	if scale == 1 {
		opts := LoadOptions()
		opts.Pending = true
		if c, err := lessons.LoadWith(os.DirFS(cfg.Dir), opts); err == nil {
			stale := 0
			for _, r := range c.CheckMarks() {
				if r.Status == lessons.MarkStale || r.Status == lessons.MarkBroken {
					stale++
				}
			}
			if stale > 0 {
				fmt.Fprintf(logw, "record: %d mark(s) in the text no longer match the tables: list them with `server lessons marks`, and fix the numbers with --fix\n", stale)
			}
		} else {
			var mine, others lessons.Errors
			var all lessons.Errors
			errors.As(err, &all)
			for _, e := range all {
				if slices.ContainsFunc(out, func(r Recorded) bool { return r.File == e.File }) {
					mine = append(mine, e)
				} else {
					others = append(others, e)
				}
			}
			if len(others) > 0 {
				fmt.Fprintf(logw, "record: note: files not recorded this time do not validate yet:\n%v\n", others)
			}
			if len(mine) > 0 || len(all) == 0 {
				return out, fmt.Errorf("the recorded files do not validate:\n%w", cmpErr(mine, err))
			}
		}
	}
	return out, nil
}

// cmpErr returns es as an error, or err when es is empty.
func cmpErr(es lessons.Errors, err error) error {
	if len(es) > 0 {
		return es
	}
	return err
}

// session is what every table of one Record call shares in its source.
type session struct {
	id   string // when the call started, UTC, e.g. 20261130T114200Z
	busy string // why the machine was busy at the start, when recording anyway
}

// presetRun is what running one preset measured besides its rows.
type presetRun struct {
	rows    []result.Row
	samples []result.Sample // a run over time's, every window's in order
	shared  bool            // the generator ran on the lab's processors
	others  float64         // cores other programs used while it ran
	known   bool            // others could be measured
}

// recordOne runs one preset and writes its table.
func recordOne(ctx context.Context, cfg Config, j lessons.RecordJob, scale float64, now func() time.Time, loadAvg func() string, sess session, logw io.Writer) (Recorded, error) {
	start := time.Now()
	la := loadAvg()
	when := now().UTC()
	ran := *j.Lab
	ran.Seconds = j.Lab.Seconds * scale

	if j.Lab.Simulated {
		return recordSimulated(ctx, cfg, j, &ran, scale, when, sess, start)
	}
	var pr presetRun
	late := ""
	for attempt := 1; ; attempt++ {
		var err error
		if pr, err = runPreset(ctx, cfg.Children, &ran, cfg.Others, logw); err != nil {
			return Recorded{}, err
		}
		if err := checkRows(pr.rows, logw); err != nil {
			return Recorded{}, err
		}
		if late = lateWindow(pr.rows); late == "" {
			break
		}
		if attempt == LateAttempts {
			if !cfg.Busy {
				return Recorded{}, lateError(fmt.Sprintf("%s in each of %d attempts: the table would measure the generator as much as the lab; it was not written: record it again when the machine is quiet, or with --busy", late, LateAttempts))
			}
			break
		}
		fmt.Fprintf(logw, "  %s: measuring it again (attempt %d of %d)\n", late, attempt+1, LateAttempts)
	}
	busy := sess.busy
	if late != "" {
		busy = cmpOr(busy, "BUSY: "+late)
	}
	limit := cfg.MaxLoad * float64(runtime.NumCPU())
	if pr.known {
		fmt.Fprintf(logw, "  other programs used %.2f cores while it ran (at most %g allowed)\n", pr.others, limit)
	}
	if pr.known && pr.others > limit {
		if !cfg.Busy {
			return Recorded{}, fmt.Errorf("other programs used %.2f cores while it ran, more than %g a core (%g): the table would measure them as much as the lab; it was not written: record it again when the machine is quiet, or with --busy",
				pr.others, cfg.MaxLoad, limit)
		}
		busy = cmpOr(busy, fmt.Sprintf("BUSY: other programs used more than %g a core while it ran", cfg.MaxLoad))
	}

	source := recordSource(j.Lab, scale, when, la, cfg.Build, sess.id, pr, busy)
	return writeTables(cfg.Dir, j, &ran, pr.rows, pr.samples, source, start)
}

// MaxLateShare is the most of a window's sends that may leave more than
// a millisecond late (the row's late ÷ sent) for its table to be written:
// a window with more measured the generator as much as the lab (the
// measure lesson's rule). LateAttempts is how many times Record measures
// a preset before it refuses it for that.
const (
	MaxLateShare = 0.05
	LateAttempts = 3
)

// lateWindow names the first window whose share of late sends is over
// MaxLateShare, or returns "" when there is none.
func lateWindow(rows []result.Row) string {
	for i, r := range rows {
		if r.Sent > 0 && float64(r.Late) > MaxLateShare*float64(r.Sent) {
			return fmt.Sprintf("window %d sent %d of %d more than 1 ms late, over one in %.0f", i+1, r.Late, r.Sent, 1/MaxLateShare)
		}
	}
	return ""
}

// writeTables writes a preset's window table and, for a run over time,
// its time table, both under source.
func writeTables(dir string, j lessons.RecordJob, ran *lessons.Lab, rows []result.Row, samples []result.Sample, source string, start time.Time) (Recorded, error) {
	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = RowCells(r, ran.Columns())
	}
	w, err := lessons.WriteTable(dir, j.File, j.Lab, ran, cells, recordCaption(ran), source)
	if err != nil {
		return Recorded{}, err
	}
	rec := Recorded{Written: w, Rows: rows}
	if ran.OverTime {
		if err := checkSamples(rows, samples); err != nil {
			return rec, err
		}
		cells := make([][]string, len(samples))
		for i, s := range samples {
			cells[i] = SampleCells(s, ran.TimeColumns())
		}
		if rec.Time, err = lessons.WriteTimeTable(dir, j.File, j.Lab, ran, cells, timeCaption(ran), source); err != nil {
			return rec, err
		}
		rec.Samples = samples
	}
	rec.Elapsed = time.Since(start)
	return rec, nil
}

// checkSamples refuses a time table whose samples do not account for
// every arrival of their window's row once.
func checkSamples(rows []result.Row, samples []result.Sample) error {
	for _, r := range rows {
		var n int
		for _, s := range samples {
			if s.Window == r.Window {
				n += s.OK + s.Refused + s.GaveUp + s.Errors + s.ClientBusy + s.NotSent + s.BreakerOpen
			}
		}
		if n != r.Arrivals {
			return fmt.Errorf("window %d: its samples count %d arrivals, its row %d; the time table was not written", r.Window+1, n, r.Arrivals)
		}
	}
	return nil
}

// SampleCells formats one sample of a run over time as a time table holds
// it, a cell for each of cols (a lab's lessons.Lab.TimeColumns): window
// from 0, at_s in seconds, counts as whole numbers, milliseconds to one
// decimal, and "—" for what was not there to read (the lab that second,
// percentiles of a second without an ok answer).
func SampleCells(s result.Sample, cols []string) []string {
	plain := sampleCells(s)
	out := make([]string, len(cols))
	for i, c := range cols {
		if k := slices.Index(lessons.TimeColumns(), c); k >= 0 {
			out[i] = plain[k]
			continue
		}
		switch c {
		case "attempts":
			out[i] = strconv.Itoa(s.Attempts)
		case "breaker_open":
			out[i] = strconv.Itoa(s.BreakerOpen)
		case "critical_ok", "default_ok", "sheddable_ok":
			out[i] = "0"
			for _, cs := range s.ByClass {
				if cs.Class.String()+"_ok" == c {
					out[i] = strconv.Itoa(cs.OK)
				}
			}
		default:
			out[i] = "—"
		}
	}
	return out
}

// sampleCells is a sample's cells in lessons.TimeColumns order.
func sampleCells(s result.Sample) []string {
	const none = "—"
	ms := func(v float64) string {
		if s.OK == 0 {
			return none
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	queued, inService, limit, dropped := none, none, none, none
	if s.Lab {
		queued, inService, limit, dropped = strconv.Itoa(s.Queued), strconv.Itoa(s.InService), strconv.Itoa(s.Limit), strconv.FormatInt(s.Dropped, 10)
	}
	return []string{strconv.Itoa(s.Window), fmtNum(math.Round(s.AtS*1000) / 1000), fmtNum(math.Round(s.Seconds*1000) / 1000), strconv.Itoa(s.OK), strconv.Itoa(s.Refused), strconv.Itoa(s.GaveUp),
		strconv.Itoa(s.ClientBusy), strconv.Itoa(s.InFlight), queued, inService, limit, ms(s.P50MS), ms(s.P99MS), dropped}
}

// recordSimulated writes the table of a simulated preset: package sim's
// rows for the preset as run (ran: seconds scaled), under a source that
// names the simulator instead of a machine and its load.
func recordSimulated(ctx context.Context, cfg Config, j lessons.RecordJob, ran *lessons.Lab, scale float64, when time.Time, sess session, start time.Time) (Recorded, error) {
	rep, err := simulate(ctx, ran)
	if err != nil {
		return Recorded{}, err
	}
	rows := rep.Rows()
	if err := checkRows(rows, io.Discard); err != nil {
		return Recorded{}, err
	}
	// A closed loop draws nothing at random: its source names no rng or seed.
	draws := fmt.Sprintf("; rng %s; seed %d", cmpOr(ran.RNG, string(loadrun.PCG)), j.Lab.Seed)
	if ran.Closed > 0 {
		draws = "; closed loop, no random draws"
	}
	build := ""
	if cfg.Build != "" {
		build = "; build " + cfg.Build
	}
	source := fmt.Sprintf("server lessons record --lab %s; simulated by package sim, no lab or generator ran%s%s; session %s; %s",
		j.Lab.ID, draws, build, sess.id, when.Format("2006-01-02 15:04 MST"))
	if scale != 1 {
		source += fmt.Sprintf("; TRIAL: windows scaled by %g (%g s instead of %g s), not the preset as written", scale, ran.Seconds, j.Lab.Seconds)
	}
	return writeTables(cfg.Dir, j, ran, rows, samplesOf(rep), source, start)
}

// samplesOf returns every window's samples of a report, in order.
func samplesOf(rep result.Report) []result.Sample {
	var out []result.Sample
	for _, w := range rep.Windows {
		out = append(out, w.Samples...)
	}
	return out
}

// ErrLate is what Record's error matches (errors.Is) when a preset's sends
// stayed late in every attempt: the machine was too busy to measure on, so
// nothing about the lab follows from it.
var ErrLate = errors.New("recorder: the generator's sends stayed late")

// lateError is Record's refusal of a preset whose sends stayed late; it
// matches ErrLate.
type lateError string

func (e lateError) Error() string        { return string(e) }
func (e lateError) Is(target error) bool { return target == ErrLate }

// SimulatePreset simulates a lab block's preset with package sim, as the
// recorder does for a simulated preset: its knobs (Preset's mapping), its
// caller timeout, its arrivals from its seed and rng (or its clients), and
// no processor time beyond SPIN_MS.
func SimulatePreset(ctx context.Context, l *lessons.Lab) ([]result.Row, error) {
	rep, err := simulate(ctx, l)
	if err != nil {
		return nil, err
	}
	return rep.Rows(), nil
}

// simulate simulates a lab block's preset (see SimulatePreset) and returns
// the whole report: rows, records and, for a run over time, samples.
func simulate(ctx context.Context, l *lessons.Lab) (result.Report, error) {
	p := Preset(l)
	sw := p.Sweep()
	sw.Driver = sim.Model{Lab: p.Config, Timeout: p.Timeout()}
	return sw.Run(ctx, nil)
}

// checkRows refuses rows that must not become a table: a window that lost
// a request (lost ≠ 0, a load generator bug) or started before the lab had
// drained the previous one. Arrivals the generator could not send are a
// warning on logw: the row still counts them in not_sent.
func checkRows(rows []result.Row, logw io.Writer) error {
	if len(rows) == 0 {
		return fmt.Errorf("the sweep produced no rows; the table was not written")
	}
	for _, r := range rows {
		if r.Lost != 0 {
			return fmt.Errorf("window %d lost %d request(s) (sent %d, but ok %d + refused %d + gaveup %d + error %d account for fewer): a load generator bug; the table was not written",
				r.Window+1, r.Lost, r.Sent, r.OK, r.Refused, r.Gaveup, r.Error)
		}
		if strings.Contains(r.Note, "had not drained") {
			return fmt.Errorf("window %d: %s, so it started with old requests in the lab; the table was not written", r.Window+1, r.Note)
		}
		if r.NotSent > 0 {
			fmt.Fprintf(logw, "  warning: window %d: %d arrival(s) not sent (the generator hit its in-flight cap)\n", r.Window+1, r.NotSent)
		}
	}
	return nil
}

// runPreset measures one preset (measure.Measure) and returns its rows,
// saying on logw where the generator ran and each row as it comes, and
// what other programs used from the children's start to the last window's
// end (others, sampled while both children live).
func runPreset(ctx context.Context, children measure.Config, l *lessons.Lab, others func([]int) (float64, bool), logw io.Writer) (presetRun, error) {
	var pr presetRun
	var pids []int
	_, err := measure.Measure(ctx, children, Preset(l), func(e measure.Event) error {
		switch e.Kind {
		case measure.EventStarted:
			pids = []int{e.Lab.Pid, e.Load.Pid}
			others(pids) // start counting what other programs use
			// The load child keeps off the lab's processors, or says why not.
			pr.shared = e.Load.CPUs == nil
			fmt.Fprintf(logw, "  lab on processor(s) %v; %s\n", e.Lab.CPUs, e.Load.Note)
			if pr.shared {
				fmt.Fprintf(logw, "  warning: the generator shares the lab's processors\n")
			}
		case measure.EventWindow:
			pr.others, pr.known = others(pids)
			r := e.Row
			pr.rows = append(pr.rows, *r)
			pr.samples = append(pr.samples, e.Samples...)
			fmt.Fprintf(logw, "  window %d/%d offered %s: ok %d refused %d gaveup %d error %d lost %d, ok/s %.1f, p50 %.1f ms, p99 %.1f ms, done %d, queued %d\n",
				e.Window+1, e.Windows, fmtNum(r.Offered), r.OK, r.Refused, r.Gaveup, r.Error, r.Lost, r.OKPerSec, r.P50MS, r.P99MS, r.Done, r.Queued)
			if r.Note != "" {
				fmt.Fprintf(logw, "    note: %s\n", r.Note)
			}
		}
		return nil
	})
	if err != nil {
		return pr, err
	}
	return pr, nil
}

func fmtSecs(s float64) string { return strconv.FormatFloat(s, 'f', 0, 64) }

// recordSource is the source line of a recorded table, e.g.
//
//	server lessons record --lab littles-sweep; seed 1; linux/amd64, 2 cores, go1.26.0; build 085f71a2c3d4; session 20261130T114000Z; 2026-11-30 11:42 UTC; load average at start 0.12 0.30 0.41; other programs used 0.02 cores
//
// without "build ..." when build is "", with "the generator shared the
// lab's processors" when it could not be kept off them, and with what
// made a recording BUSY.
func recordSource(l *lessons.Lab, scale float64, when time.Time, loadAvg, build, sess string, pr presetRun, busy string) string {
	if build != "" {
		build = "; build " + build
	}
	s := fmt.Sprintf("server lessons record --lab %s; seed %d; %s/%s, %d cores, %s%s; session %s; %s; "+lessons.LoadAverageMark+"%s",
		l.ID, l.Seed, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), build, sess, when.Format("2006-01-02 15:04 MST"), cmpOr(loadAvg, "unknown"))
	if pr.known {
		s += fmt.Sprintf("; other programs used %.2f cores", pr.others)
	}
	if pr.shared {
		s += "; the generator shared the lab's processors"
	}
	if busy != "" {
		s += "; " + busy
	}
	if scale != 1 {
		s += fmt.Sprintf("; TRIAL: windows scaled by %g (%g s instead of %g s), not the preset as written", scale, l.Seconds*scale, l.Seconds)
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// readLoadAvg returns the 1, 5 and 15 minute load averages from
// /proc/loadavg, or "" where there is no such file.
func readLoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// presetSummary says in words what a preset runs.
func presetSummary(l *lessons.Lab, scale float64) string {
	knobs := fmt.Sprintf("workers %d, spin %d ms, wait %d ms, limit %d, cpus %d", l.Workers, l.SpinMS, l.WaitMS, l.Limit, l.CPUs)
	if l.StallEvery > 0 {
		knobs += fmt.Sprintf(", a %d ms stall every %d requests", l.StallMS, l.StallEvery)
	}
	knobs += labWords(l)
	if l.RNG != "" {
		knobs += ", arrivals from " + l.RNG
	}
	secs := fmtNum(l.Seconds * scale)
	if l.Closed > 0 {
		return knobs + "; " + closedWords(l, l.Seconds*scale)
	}
	return fmt.Sprintf("%s; open loop at %s a second, %d × %s s, seed %d", knobs, lessons.RateList(l.Rates), len(l.Rates), secs, l.Seed)
}

// labWords says in words the knobs of l that shape its service beyond
// workers, spin and wait: its DIST when not constant, and LOCK_MS and
// COHERENCY_US when set, each after a comma ("" for none).
func labWords(l *lessons.Lab) string {
	var s string
	if p, ok := l.Dist.Params(); ok && l.Varied() {
		s += ", service time " + p.Words()
		if p.Seed != 1 {
			s += fmt.Sprintf(" drawn from seed %d", p.Seed)
		}
	}
	if l.LockMS > 0 {
		s += fmt.Sprintf(", a lock held %d ms by each request in turn", l.LockMS)
	}
	if l.CoherencyUS > 0 {
		s += fmt.Sprintf(", %d µs more processor per other request in service", l.CoherencyUS)
	}
	return s
}

// closedWords says a closed loop's windows: "closed loop, 8 clients, one
// 5 s window", or "closed loop at 1, 2, 4 clients, 5 s windows".
func closedWords(l *lessons.Lab, secs float64) string {
	if len(l.Clients) > 1 {
		return fmt.Sprintf("closed loop at %s clients, %s s windows", lessons.ClientList(l.Clients), fmtNum(secs))
	}
	return fmt.Sprintf("closed loop, %s, one %s s window", clients(l.Closed), fmtNum(secs))
}

// clients is n clients in words: "1 client", "10 clients".
func clients(n int) string {
	if n == 1 {
		return "1 client"
	}
	return fmt.Sprintf("%d clients", n)
}

// timeCaption is the caption of a newly recorded time table: the window
// table's, said of each second.
func timeCaption(l *lessons.Lab) string {
	_, rest, _ := strings.Cut(recordCaption(l), ": ")
	verb := "Recorded over time"
	if l.Simulated {
		verb = "Simulated over time, not measured"
	}
	return verb + ", a row a second of each window: " + rest
}

// recordCaption is the caption of a newly recorded table.
func recordCaption(l *lessons.Lab) string {
	worker := "workers"
	if l.Workers == 1 {
		worker = "worker"
	}
	cpu := "CPUs"
	if l.CPUs == 1 {
		cpu = "CPU"
	}
	limit := "no admission limit"
	if l.Limit > 0 {
		limit = fmt.Sprintf("admission limit %d", l.Limit)
	}
	if l.Policy.Kind() != admit.Queue {
		limit = "admission policy " + l.Policy.String()
	} else if p := l.Policy.String(); p != "" && p != admit.Queue {
		limit += ", admission policy " + p // queue with parameters, such as classes=on
	}
	if l.Accept == lessons.AcceptWorkers {
		// Two presets that differ only in who accepts must not share a
		// caption: pages name each table by it.
		backlog := "the system's maximum"
		if l.Backlog > 0 {
			backlog = strconv.Itoa(l.Backlog)
		}
		limit += ", workers accepting from the kernel's queue (backlog " + backlog + ")"
	} else if l.Backlog > 0 {
		limit += fmt.Sprintf(", listen backlog %d", l.Backlog)
	}
	verb := "Recorded"
	if l.Simulated {
		verb = "Simulated, not measured"
	}
	s := fmt.Sprintf("%s: %d %s, %d ms spin + %d ms wait, %s, %d %s; ", verb, l.Workers, worker, l.SpinMS, l.WaitMS, limit, l.CPUs, cpu)
	if l.StallEvery > 0 {
		s = strings.TrimSuffix(s, "; ") + fmt.Sprintf(", a %d ms stall every %d requests; ", l.StallMS, l.StallEvery)
	}
	if w := labWords(l); w != "" {
		s = strings.TrimSuffix(s, "; ") + w + "; "
	}
	if l.Closed > 0 {
		s += closedWords(l, l.Seconds)
	} else {
		s += fmt.Sprintf("open loop at %s a second, %s s windows", lessons.RateList(l.Rates), fmtNum(l.Seconds))
	}
	s += ", caller timeout " + fmtNum(Preset(l).Timeout().Seconds()) + " s"
	if l.MaxInFlight > 0 {
		s += fmt.Sprintf(", a client of %d workers", l.MaxInFlight)
	}
	if l.Retry != "" {
		s += ", client retry " + l.Retry
	}
	if l.Classed() {
		s += fmt.Sprintf(", %s%% critical and %s%% sheddable", fmtNum(l.Critical*100), fmtNum(l.Sheddable*100))
	}
	if l.Fanout > 1 {
		s += fmt.Sprintf(", fan-out %d", l.Fanout)
	}
	if l.Hedge != "" {
		s += ", client hedge " + l.Hedge
	}
	for i, at := range l.At {
		// "10s:WAIT_MS=200" reads "WAIT_MS=200 at 10 s".
		sep := ", "
		if i == 0 {
			sep = "; "
		}
		when, change, _ := strings.Cut(at, ":")
		if d, err := time.ParseDuration(when); err == nil {
			when = fmtNum(d.Seconds()) + " s"
		}
		s += sep + change + " at " + when
	}
	return s + "."
}
