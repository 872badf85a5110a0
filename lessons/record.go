package lessons

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"capacitylab/affinity"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/sim"
)

// RecordColumns returns the columns `server lessons record` writes for a
// lab with cfg, in order: the lessons' columns of loadrun's Row (see its
// package doc); then mean_ms, which Little's law needs; p95_ms and n, the
// other percentile and how many answers the percentiles are over; late
// and send_lag_p99_ms, which show whether the generator kept its
// schedule; and lab_service_ms and lab_cpu_ms, the lab's own view of the
// window (its mean service time, and the processor time its process
// used). With ACCEPT=workers, whose waiting callers sit in the kernel's
// accept queue, backlogged follows queued.
func RecordColumns(cfg labsvc.Config) []string {
	cols := []string{"offered", "sent", "ok", "refused", "gaveup", "error", "ok_per_sec",
		"p50_ms", "p99_ms", "done", "lost", "queued", "mean_ms",
		"p95_ms", "n", "late", "send_lag_p99_ms", "lab_service_ms", "lab_cpu_ms"}
	if cfg.Accept == labsvc.AcceptWorkers {
		cols = slices.Insert(cols, slices.Index(cols, "queued")+1, "backlogged")
	}
	return cols
}

// AllColumns returns every column a recorded table may have: those of a lab
// whose workers accept, backlogged included.
func AllColumns() []string { return RecordColumns(labsvc.Config{Accept: labsvc.AcceptWorkers}) }

// QuietLoadAverage is the highest one-minute load average at which a
// recorded table counts as recorded on a quiet machine (the simulator's
// fidelity test holds only those to its p50 tolerance). Record itself
// refuses a busier machine by MaxLoad, per core.
const QuietLoadAverage = 0.5

// loadAverageMark begins the load average in a recorded table's source.
const loadAverageMark = "load average at start "

// LoadAverageAtStart returns the one-minute load average a recorded table's
// source gives for the start of its recording, and whether it gives one.
func (t *Table) LoadAverageAtStart() (float64, bool) {
	_, rest, ok := strings.Cut(t.Source, loadAverageMark)
	if !ok {
		return 0, false
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}

// DefaultMaxLoad is the most load, per core, under which Record records:
// the 1-minute load average when it starts, and the processor time other
// programs take while a preset runs.
const DefaultMaxLoad = 0.3

// RecordConfig says what Record records and how.
type RecordConfig struct {
	Dir    string // content directory, read and rewritten in place
	Lesson string // only this lesson (slug); "" = every lesson
	Lab    string // only this lab preset (id); "" = every preset

	// SecondsScale multiplies every window's length, for quick trials:
	// 0 or 1 records the presets as written. A scaled table says so in its
	// source, and its fingerprint covers the scaled length, so the loader
	// rejects it until it is recorded again at full length.
	SecondsScale float64

	Child labsvc.ChildCommand // how to start a lab child (the server: its own binary with "lab-child")
	Log   io.Writer           // progress and warnings; nil = discarded

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
	// Others says how many cores programs other than this one and the lab
	// child (pid) used since the last call with the same pid, or false
	// when it cannot be known; nil = read /proc (Linux).
	Others func(pid int) (float64, bool)
}

// Recorded is one table Record wrote.
type Recorded struct {
	File    string        // lesson file, relative to the content directory
	Lab     string        // preset id
	Table   string        // table id
	Line    int           // fence line of the table as written
	Rows    []loadrun.Row // the measured rows
	Elapsed time.Duration // how long the preset took, drains included
}

// Record runs lab presets against real lab children with the load runner
// and writes each preset's result as a table block into its lesson file:
// the table with preset=ID (recorded or pending) is replaced where it
// stands, or a new one with id ID-result is inserted after the lab block.
// Nothing else in the file changes, byte for byte. Each table's source
// names the command, seed, machine, build, the session (every table
// written by one call shares it), date, the load average at the start and
// what other programs used while it ran, and its fingerprint covers the
// preset and rows (see Fingerprint).
//
// Record refuses to start on a busy machine (see MaxLoad), and refuses,
// without writing that table, when other programs took more than MaxLoad
// while it ran, when a window lost a request (lost ≠ 0, a generator bug),
// when the lab had not drained before a window, or when the preset changed
// on disk while it ran. Tables already written stay written. The content
// must validate apart from table fingerprints and pending tables (stale
// and pending tables are what Record is for).
func Record(ctx context.Context, cfg RecordConfig) ([]Recorded, error) {
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
	jobs, err := planRecording(cfg.Dir, cfg.Lesson, cfg.Lab)
	if err != nil {
		return nil, err
	}
	windows, secs, drain := 0, 0.0, 0.0
	for _, j := range jobs {
		windows += max(len(j.lab.Rates), 1)
		secs += float64(max(len(j.lab.Rates), 1)) * j.lab.Seconds * scale
		drain += drainEstimate(j.lab, scale)
	}
	fmt.Fprintf(logw, "record: %d preset(s), %d window(s): %s s of windows, plus about %s s for overloaded labs to drain (from each preset's ceiling)\n",
		len(jobs), windows, fmtSecs(secs), fmtSecs(drain))
	cores := runtime.NumCPU()
	busy := ""
	// A simulation does not depend on how busy the machine is.
	allSimulated := !slices.ContainsFunc(jobs, func(j recordJob) bool { return !j.lab.Simulated })
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
		fmt.Fprintf(logw, "[%d/%d] %s %s: %s\n", i+1, len(jobs), j.file, j.lab.ID, presetSummary(j.lab, scale))
		rec, err := recordOne(ctx, cfg, j, scale, now, loadAvg, sess, logw)
		if err != nil {
			return out, fmt.Errorf("%s: preset %s: %w", j.file, j.lab.ID, err)
		}
		fmt.Fprintf(logw, "  wrote table %s at %s:%d (%s)\n", rec.Table, rec.File, rec.Line, rec.Elapsed.Round(100*time.Millisecond))
		out = append(out, rec)
	}
	// What was written must now load, fingerprints included (a scaled
	// trial is the one expected failure). Problems in files not recorded
	// this time (stale tables of other presets) are only reported.
	if scale == 1 {
		if c, err := LoadWith(os.DirFS(cfg.Dir), LoadOptions{Pending: true}); err == nil {
			stale := 0
			for _, r := range c.CheckMarks() {
				if r.Status == MarkStale || r.Status == MarkBroken {
					stale++
				}
			}
			if stale > 0 {
				fmt.Fprintf(logw, "record: %d mark(s) in the text no longer match the tables: list them with `server lessons marks`, and fix the numbers with --fix\n", stale)
			}
		} else {
			var mine, others Errors
			var all Errors
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
func cmpErr(es Errors, err error) error {
	if len(es) > 0 {
		return es
	}
	return err
}

// drainEstimate is about how long, in seconds, a preset's overloaded
// windows leave the lab serving its backlog after the window: the backlog
// (offered − ceiling) × seconds, capped by the admission limit, over the
// ceiling min(workers ÷ (spin + wait), cpus ÷ spin). Closed loops build no
// backlog.
func drainEstimate(l *Lab, scale float64) float64 {
	ceiling := float64(l.Workers) * 1000 / float64(max(l.SpinMS+l.WaitMS, 1))
	if l.SpinMS > 0 {
		ceiling = min(ceiling, float64(l.CPUs)*1000/float64(l.SpinMS))
	}
	total := 0.0
	for _, r := range l.Rates {
		backlog := max(0, (r-ceiling)*l.Seconds*scale)
		if l.Limit > 0 {
			backlog = min(backlog, float64(l.Limit))
		}
		total += backlog / ceiling
	}
	return total
}

// recordJob is one preset to record.
type recordJob struct {
	file string // relative to the content directory
	lab  *Lab
}

// planRecording loads the content (table fingerprints not checked) and
// lists the presets to record, in reading order. Lessons in the fixtures
// part are skipped unless slug or labID names them.
func planRecording(dir, slug, labID string) ([]recordJob, error) {
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return nil, fmt.Errorf("content directory %q is not a directory: want the directory holding the lesson *.md files", dir)
	}
	c, err := LoadWith(os.DirFS(dir), LoadOptions{Pending: true, noPrints: true})
	if err != nil {
		return nil, fmt.Errorf("%s does not validate, so its presets cannot be trusted; fix these first:\n%w", dir, err)
	}
	var jobs []recordJob
	foundLesson := slug == ""
	for _, l := range c.Lessons {
		if (slug != "" && l.Slug != slug) || (slug == "" && labID == "" && l.Part == FixturePart) {
			continue
		}
		foundLesson = true
		for _, b := range l.Blocks() {
			if lab, ok := b.(*Lab); ok && (labID == "" || lab.ID == labID) {
				jobs = append(jobs, recordJob{file: l.File, lab: lab})
			}
		}
	}
	switch {
	case !foundLesson:
		return nil, fmt.Errorf("no lesson with slug %q in %s: want one of %s", slug, dir, strings.Join(slugs(c), ", "))
	case len(jobs) == 0 && labID != "":
		where := "the course"
		if slug != "" {
			where = "lesson " + slug
		}
		return nil, fmt.Errorf("no lab preset %q in %s: want the id of a ```lab block", labID, where)
	case len(jobs) == 0 && slug != "":
		return nil, fmt.Errorf("lesson %s has no lab presets to record", slug)
	case len(jobs) == 0:
		return nil, fmt.Errorf("%s has no lab presets to record (lessons in part %q are recorded only when named with --lesson or --lab)", dir, FixturePart)
	}
	return jobs, nil
}

func slugs(c *Course) []string {
	s := make([]string, len(c.Lessons))
	for i, l := range c.Lessons {
		s[i] = l.Slug
	}
	return s
}

// timeoutOf is the caller timeout a preset runs with.
func timeoutOf(l *Lab) time.Duration {
	if l.TimeoutMS > 0 {
		return time.Duration(l.TimeoutMS) * time.Millisecond
	}
	return loadrun.DefaultTimeout
}

// session is what every table of one Record call shares in its source.
type session struct {
	id   string // when the call started, UTC, e.g. 20261130T114200Z
	busy string // why the machine was busy at the start, when recording anyway
}

// presetRun is what running one preset measured besides its rows.
type presetRun struct {
	rows   []loadrun.Row
	shared bool    // the generator ran on the lab's processors
	others float64 // cores other programs used while it ran
	known  bool    // others could be measured
}

// recordOne runs one preset and writes its table.
func recordOne(ctx context.Context, cfg RecordConfig, j recordJob, scale float64, now func() time.Time, loadAvg func() string, sess session, logw io.Writer) (Recorded, error) {
	start := time.Now()
	la := loadAvg()
	when := now().UTC()
	ran := *j.lab
	ran.Seconds = j.lab.Seconds * scale

	if j.lab.Simulated {
		return recordSimulated(ctx, cfg, j, &ran, scale, when, sess, start)
	}
	pr, err := runPreset(ctx, cfg.Child, &ran, cfg.Others, logw)
	if err != nil {
		return Recorded{}, err
	}
	if err := checkRows(pr.rows, logw); err != nil {
		return Recorded{}, err
	}
	busy := sess.busy
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

	cells := make([][]string, len(pr.rows))
	for i, r := range pr.rows {
		cells[i] = RowCells(r, ran.Config())
	}
	source := recordSource(j.lab, scale, when, la, cfg.Build, sess.id, pr, busy)
	rec, err := writeTable(cfg.Dir, j.file, j.lab, &ran, cells, source)
	if err != nil {
		return Recorded{}, err
	}
	rec.Rows, rec.Elapsed = pr.rows, time.Since(start)
	return rec, nil
}

// recordSimulated writes the table of a simulated preset: package sim's
// rows for the preset as run (ran: seconds scaled), under a source that
// names the simulator instead of a machine and its load.
func recordSimulated(ctx context.Context, cfg RecordConfig, j recordJob, ran *Lab, scale float64, when time.Time, sess session, start time.Time) (Recorded, error) {
	rows, err := SimulatePreset(ctx, ran)
	if err != nil {
		return Recorded{}, err
	}
	if err := checkRows(rows, io.Discard); err != nil {
		return Recorded{}, err
	}
	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = RowCells(r, ran.Config())
	}
	// A closed loop draws nothing at random: its source names no rng or seed.
	draws := fmt.Sprintf("; rng %s; seed %d", cmpOr(ran.RNG, string(loadrun.PCG)), j.lab.Seed)
	if ran.Closed > 0 {
		draws = "; closed loop, no random draws"
	}
	build := ""
	if cfg.Build != "" {
		build = "; build " + cfg.Build
	}
	source := fmt.Sprintf("server lessons record --lab %s; simulated by package sim, no lab or generator ran%s%s; session %s; %s",
		j.lab.ID, draws, build, sess.id, when.Format("2006-01-02 15:04 MST"))
	if scale != 1 {
		source += fmt.Sprintf("; TRIAL: windows scaled by %g (%g s instead of %g s), not the preset as written", scale, ran.Seconds, j.lab.Seconds)
	}
	rec, err := writeTable(cfg.Dir, j.file, j.lab, ran, cells, source)
	if err != nil {
		return Recorded{}, err
	}
	rec.Rows, rec.Elapsed = rows, time.Since(start)
	return rec, nil
}

// SimulatePreset simulates a preset with package sim, as the recorder does
// for a simulated preset: its knobs, its caller timeout, its arrivals from
// its seed and rng (or its clients), and no processor time beyond SPIN_MS.
func SimulatePreset(ctx context.Context, l *Lab) ([]loadrun.Row, error) {
	sw := loadrun.Sweep{Seconds: l.Seconds, Seed: uint64(l.Seed), RNG: loadrun.Source(l.RNG)}
	if l.Closed > 0 {
		sw.Clients = []int{l.Closed}
	} else {
		sw.Rates = l.Rates
	}
	rep, err := sim.Run(ctx, sim.Model{Lab: l.Config(), Timeout: timeoutOf(l)}, sw, nil)
	if err != nil {
		return nil, err
	}
	return rep.Rows(), nil
}

// checkRows refuses rows that must not become a table: a window that lost
// a request (lost ≠ 0, a load generator bug) or started before the lab had
// drained the previous one. Arrivals the generator could not send are a
// warning on logw: the row still counts them in not_sent.
func checkRows(rows []loadrun.Row, logw io.Writer) error {
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

// runPreset starts a lab child with the preset's knobs, runs its sweep and
// stops the child.
func runPreset(ctx context.Context, cc labsvc.ChildCommand, l *Lab, others func(int) (float64, bool), logw io.Writer) (presetRun, error) {
	var pr presetRun
	child, err := labsvc.StartChild(ctx, cc, l.Config())
	if err != nil {
		return pr, fmt.Errorf("starting the lab: %w", err)
	}
	defer child.Stop()
	others(child.Pid()) // start counting what other programs use
	// Keep this process (the generator) off the lab's processors while it
	// runs; Restore (deferred after Stop, so it runs first) puts it back
	// before the next preset's child starts.
	cpus, err := affinity.ProcessCPUs(child.Pid())
	var pin *affinity.Pinning
	if err == nil {
		pin, err = affinity.PinAwayFrom(cpus)
	}
	if err != nil {
		fmt.Fprintf(logw, "  warning: the generator shares the lab's processors: %v\n", err)
		pr.shared = true
	} else {
		fmt.Fprintf(logw, "  %s\n", pin)
		pr.shared = !pin.Pinned()
		defer pin.Restore()
	}
	target, err := loadrun.NewTarget(child.Target(), timeoutOf(l))
	if err != nil {
		return pr, err
	}
	control, err := loadrun.NewControl(child.Control(), nil)
	if err != nil {
		return pr, err
	}
	sw := loadrun.Sweep{Target: target, Control: &control, Seconds: l.Seconds, Seed: uint64(l.Seed), RNG: loadrun.Source(l.RNG)}
	if l.Closed > 0 {
		sw.Clients = []int{l.Closed}
	} else {
		sw.Rates = l.Rates
	}
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-child.Done():
			cancel(fmt.Errorf("the lab child exited during the sweep: %v", child.Err()))
		case <-sctx.Done():
		}
	}()
	events := make(chan loadrun.Event, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range events {
			if e.Kind == loadrun.EventRow && e.Row != nil {
				r := e.Row
				fmt.Fprintf(logw, "  window %d/%d offered %s: ok %d refused %d gaveup %d error %d lost %d, ok/s %.1f, p50 %.1f ms, p99 %.1f ms, done %d, queued %d\n",
					e.Window+1, e.Windows, fmtNum(r.Offered), r.OK, r.Refused, r.Gaveup, r.Error, r.Lost, r.OKPerSec, r.P50MS, r.P99MS, r.Done, r.Queued)
				if r.Note != "" {
					fmt.Fprintf(logw, "    note: %s\n", r.Note)
				}
			}
		}
	}()
	rep, err := sw.Run(sctx, events)
	<-done
	pr.others, pr.known = others(child.Pid())
	if err != nil {
		if cause := context.Cause(sctx); cause != nil && ctx.Err() == nil {
			return pr, cause
		}
		return pr, err
	}
	pr.rows = rep.Rows()
	return pr, nil
}

// RowCells formats one row of a lab with cfg as a recorded table holds it,
// in RecordColumns(cfg) order (pages use it for a run of a preset too):
// counts as whole numbers, rates and milliseconds to one decimal
// (send_lag_p99_ms to two, as it is often under 0.1 ms), and "-" for a lab
// counter that could not be read.
func RowCells(r loadrun.Row, cfg labsvc.Config) []string {
	opt := func(v int) string {
		if v < 0 {
			return "-"
		}
		return strconv.Itoa(v)
	}
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	optf := func(v float64) string {
		if v < 0 {
			return "-"
		}
		return f(v, 1)
	}
	cells := []string{
		fmtNum(r.Offered), strconv.Itoa(r.Sent), strconv.Itoa(r.OK), strconv.Itoa(r.Refused), strconv.Itoa(r.Gaveup), strconv.Itoa(r.Error),
		f(r.OKPerSec, 1), f(r.P50MS, 1), f(r.P99MS, 1), opt(r.Done), strconv.Itoa(r.Lost), opt(r.Queued), f(r.MeanMS, 1),
		f(r.P95MS, 1), strconv.Itoa(r.N), strconv.Itoa(r.Late), f(r.SendLagP99MS, 2), optf(r.LabServiceMS), optf(r.LabCPUMS),
	}
	if cfg.Accept == labsvc.AcceptWorkers {
		cells = slices.Insert(cells, 12, opt(r.Backlogged)) // after queued
	}
	return cells
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func fmtSecs(s float64) string { return strconv.FormatFloat(s, 'f', 0, 64) }

// recordSource is the source line of a recorded table, e.g.
//
//	server lessons record --lab littles-sweep; seed 1; linux/amd64, 2 cores, go1.26.0; build 085f71a2c3d4; session 20261130T114000Z; 2026-11-30 11:42 UTC; load average at start 0.12 0.30 0.41; other programs used 0.02 cores
//
// without "build ..." when build is "", with "the generator shared the
// lab's processors" when it could not be kept off them, and with what
// made a recording BUSY.
func recordSource(l *Lab, scale float64, when time.Time, loadAvg, build, sess string, pr presetRun, busy string) string {
	if build != "" {
		build = "; build " + build
	}
	s := fmt.Sprintf("server lessons record --lab %s; seed %d; %s/%s, %d cores, %s%s; session %s; %s; "+loadAverageMark+"%s",
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
func presetSummary(l *Lab, scale float64) string {
	knobs := fmt.Sprintf("workers %d, spin %d ms, wait %d ms, limit %d, cpus %d", l.Workers, l.SpinMS, l.WaitMS, l.Limit, l.CPUs)
	if l.StallEvery > 0 {
		knobs += fmt.Sprintf(", a %d ms stall every %d requests", l.StallMS, l.StallEvery)
	}
	if l.RNG != "" {
		knobs += ", arrivals from " + l.RNG
	}
	secs := fmtNum(l.Seconds * scale)
	if l.Closed > 0 {
		return fmt.Sprintf("%s; closed loop, %s, one %s s window", knobs, clients(l.Closed), secs)
	}
	return fmt.Sprintf("%s; open loop at %s a second, %d × %s s, seed %d", knobs, rateList(l.Rates), len(l.Rates), secs, l.Seed)
}

func rateList(rates []float64) string {
	s := make([]string, len(rates))
	for i, r := range rates {
		s[i] = fmtNum(r)
	}
	return strings.Join(s, ", ")
}

// clients is n clients in words: "1 client", "10 clients".
func clients(n int) string {
	if n == 1 {
		return "1 client"
	}
	return fmt.Sprintf("%d clients", n)
}

// recordCaption is the caption of a newly recorded table.
func recordCaption(l *Lab) string {
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
	if l.Accept == labsvc.AcceptWorkers {
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
	if l.Closed > 0 {
		s += fmt.Sprintf("closed loop, %s, one %s s window", clients(l.Closed), fmtNum(l.Seconds))
	} else {
		s += fmt.Sprintf("open loop at %s a second, %s s windows", rateList(l.Rates), fmtNum(l.Seconds))
	}
	return s + ", caller timeout " + fmtNum(timeoutOf(l).Seconds()) + " s."
}

// writeTable re-reads the lesson file, checks the preset is still the one
// that ran, and writes the table in place of the preset's old table or
// after its lab block. ran is the preset as run (seconds scaled); the
// fingerprint is over it.
func writeTable(dir, file string, preset, ran *Lab, cells [][]string, source string) (Recorded, error) {
	path := filepath.Join(dir, file)
	src, err := os.ReadFile(path)
	if err != nil {
		return Recorded{}, err
	}
	pf, errs := parseFileWith(newMarkdown(), file, src, LoadOptions{Pending: true, noPrints: true})
	if len(errs) > 0 {
		return Recorded{}, fmt.Errorf("the file changed while recording and no longer validates; the table was not written:\n%w", errs)
	}
	b, ok := pf.lesson.Block(preset.ID)
	now, isLab := b.(*Lab)
	if !ok || !isLab || canonicalPreset(now) != canonicalPreset(preset) {
		return Recorded{}, fmt.Errorf("the preset changed in %s while it was being recorded; the table was not written: record it again", file)
	}
	var old []*Table
	for _, blk := range pf.lesson.Blocks() {
		if t, ok := blk.(*Table); ok && t.Preset == preset.ID {
			old = append(old, t)
		}
	}
	if len(old) > 1 {
		return Recorded{}, fmt.Errorf("tables %q (line %d) and %q (line %d) both name preset %s: keep one, then record again", old[0].ID, old[0].Line, old[1].ID, old[1].Line, preset.ID)
	}
	id, caption := preset.ID+"-result", recordCaption(ran)
	if len(old) == 1 {
		id = old[0].ID
		// Keep an author's caption while it still describes the preset: the
		// old table was recorded from the preset as it is now.
		if old[0].Caption != "" && old[0].Fingerprint == Fingerprint(now, old[0].Columns, old[0].Rows, old[0].Source) && ran.Seconds == preset.Seconds {
			caption = old[0].Caption
		}
	} else if _, clash := pf.lesson.Block(id); clash {
		return Recorded{}, fmt.Errorf("a block with id %q already exists in %s: rename it so the recorded table can take that id", id, file)
	}

	lines := splitLines(src)
	eol := "\n"
	if len(lines) > 0 && bytes.HasSuffix(lines[0], []byte("\r\n")) {
		eol = "\r\n"
	}
	cols := RecordColumns(ran.Config())
	block := tableBlock(id, preset.ID, caption, cols, cells, source, Fingerprint(ran, cols, cells, source), eol)
	var out bytes.Buffer
	var line int
	if len(old) == 1 {
		first := old[0].Line
		last, err := fenceEnd(lines, first)
		if err != nil {
			return Recorded{}, err
		}
		writeLines(&out, lines[:first-1])
		out.WriteString(block)
		writeLines(&out, lines[last:])
		line = first
	} else {
		last, err := fenceEnd(lines, now.Line)
		if err != nil {
			return Recorded{}, err
		}
		writeLines(&out, lines[:last])
		if last == len(lines) && !bytes.HasSuffix(lines[last-1], []byte("\n")) {
			out.WriteString(eol) // the lab's closing fence ended the file without a line end
		}
		out.WriteString(eol)
		out.WriteString(block)
		writeLines(&out, lines[last:])
		line = last + 2
	}
	if err := writeFileAtomic(path, out.Bytes()); err != nil {
		return Recorded{}, err
	}
	return Recorded{File: file, Lab: preset.ID, Table: id, Line: line}, nil
}

// tableBlock formats a table block, ending with its closing fence and eol.
func tableBlock(id, preset, caption string, cols []string, cells [][]string, source, fingerprint, eol string) string {
	var b strings.Builder
	b.WriteString("```table id=" + id + " preset=" + preset + eol)
	b.WriteString("caption: " + yamlQuote(caption) + eol)
	b.WriteString("columns: [" + strings.Join(cols, ", ") + "]" + eol)
	b.WriteString("rows:" + eol)
	for _, r := range cells {
		q := make([]string, len(r))
		for i, c := range r {
			q[i] = yamlQuote(c)
		}
		b.WriteString("  - [" + strings.Join(q, ", ") + "]" + eol)
	}
	b.WriteString("source: " + yamlQuote(source) + eol)
	b.WriteString("fingerprint: " + fingerprint + eol)
	b.WriteString("```" + eol)
	return b.String()
}

// yamlQuote writes s as a YAML double-quoted scalar on one line.
func yamlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// splitLines splits src into lines, each keeping its line end.
func splitLines(src []byte) [][]byte {
	var lines [][]byte
	for len(src) > 0 {
		i := bytes.IndexByte(src, '\n')
		if i < 0 {
			lines = append(lines, src)
			break
		}
		lines = append(lines, src[:i+1])
		src = src[i+1:]
	}
	return lines
}

func writeLines(w *bytes.Buffer, lines [][]byte) {
	for _, l := range lines {
		w.Write(l)
	}
}

// fenceEnd returns the 1-based line of the fence that closes the block
// opened on line open.
func fenceEnd(lines [][]byte, open int) (int, error) {
	if open < 1 || open > len(lines) {
		return 0, fmt.Errorf("line %d is outside the file", open)
	}
	opening := strings.TrimLeft(strings.TrimRight(string(lines[open-1]), "\r\n"), " ")
	if opening == "" || (opening[0] != '`' && opening[0] != '~') {
		return 0, fmt.Errorf("line %d does not open a fenced block", open)
	}
	ch := string(opening[0])
	n := len(opening) - len(strings.TrimLeft(opening, ch))
	for i := open; i < len(lines); i++ {
		l := strings.TrimRight(string(lines[i]), "\r\n")
		t := strings.TrimLeft(l, " ")
		if len(l)-len(t) > 3 {
			continue // indented four or more: content, not a fence
		}
		fence := strings.TrimLeft(t, ch)
		if len(t)-len(fence) >= n && strings.TrimRight(fence, " \t") == "" {
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("the block opened on line %d is never closed", open)
}

// writeFileAtomic replaces path with data through a temporary file in the
// same directory, keeping path's permissions.
func writeFileAtomic(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if info, err := os.Stat(path); err == nil {
		mode = info.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".record-*.md")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// newOthersMeter returns a meter of the processor time that programs
// other than this process and a lab child take, from /proc (Linux): the
// busy time of every processor (/proc/stat) less this process's and the
// child's (/proc/PID/stat), as a share of all processor time since the
// previous call with the same pid, times the processors. Elsewhere it says
// it cannot know.
func newOthersMeter() func(pid int) (float64, bool) {
	type sample struct {
		pid                      int
		busy, total, self, child int64
		cpus                     int
		ok                       bool
	}
	var last sample
	return func(pid int) (float64, bool) {
		busy, total, cpus, ok1 := procStat()
		self, ok2 := procTicks("/proc/self/stat")
		child, ok3 := procTicks("/proc/" + strconv.Itoa(pid) + "/stat")
		s := sample{pid, busy, total, self, child, cpus, ok1 && ok2 && ok3}
		prev := last
		last = s
		if !s.ok || !prev.ok || prev.pid != pid || s.total <= prev.total {
			return 0, false
		}
		others := (s.busy - prev.busy) - (s.self - prev.self) - (s.child - prev.child)
		return float64(max(others, 0)) / float64(s.total-prev.total) * float64(s.cpus), true
	}
}

// procStat reads the busy and total clock ticks of all processors from
// /proc/stat, and how many processors it lists.
func procStat() (busy, total int64, cpus int, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 8 && f[0] == "cpu":
			// user nice system idle iowait irq softirq steal ...
			var v [8]int64
			for i := range v {
				v[i], err = strconv.ParseInt(f[i+1], 10, 64)
				if err != nil {
					return 0, 0, 0, false
				}
			}
			busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
			total = busy + v[3] + v[4]
			ok = true
		case len(f) > 0 && strings.HasPrefix(f[0], "cpu") && f[0] != "cpu":
			cpus++
		}
	}
	return busy, total, cpus, ok && cpus > 0
}

// procTicks reads the user and system clock ticks of a process (all its
// threads) from its /proc/PID/stat.
func procTicks(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	// After the command: state ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime stime (fields 3 to 15 of the line).
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	return u + st, err1 == nil && err2 == nil
}
