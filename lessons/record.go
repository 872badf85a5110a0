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
)

// RecordColumns returns the columns `server lessons record` writes for a
// lab with cfg, in order: the lessons' columns of loadrun's Row (see its
// package doc), then mean_ms, which Little's law needs. With ACCEPT=workers,
// whose waiting callers sit in the kernel's accept queue, backlogged follows
// queued.
func RecordColumns(cfg labsvc.Config) []string {
	cols := []string{"offered", "sent", "ok", "refused", "gaveup", "error", "ok_per_sec",
		"p50_ms", "p99_ms", "done", "lost", "queued", "mean_ms"}
	if cfg.Accept == labsvc.AcceptWorkers {
		cols = slices.Insert(cols, slices.Index(cols, "queued")+1, "backlogged")
	}
	return cols
}

// AllColumns returns every column a recorded table may have: those of a lab
// whose workers accept, backlogged included.
func AllColumns() []string { return RecordColumns(labsvc.Config{Accept: labsvc.AcceptWorkers}) }

// QuietLoadAverage is the highest one-minute load average at which a
// machine counts as quiet enough to record on: above it Record warns that
// other work may have made the numbers worse.
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

	Now     func() time.Time // nil = time.Now
	LoadAvg func() string    // the load average line for the source; nil = read /proc/loadavg
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
// the table with preset=ID is replaced where it stands, or a new one with
// id ID-result is inserted after the lab block. Nothing else in the file
// changes, byte for byte. Each table's source names the command, seed,
// machine, date and the load average at the start, and its fingerprint
// covers the preset and rows (see Fingerprint).
//
// Record refuses, without writing that table, when a window lost a request
// (lost ≠ 0, a generator bug), when the lab had not drained before a
// window, or when the preset changed on disk while it ran. Tables already
// written stay written. The content must validate apart from table
// fingerprints (stale tables are what Record is for).
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
	if la := loadAvg(); la != "" {
		if one, err := strconv.ParseFloat(strings.Fields(la)[0], 64); err == nil && one > QuietLoadAverage {
			fmt.Fprintf(logw, "record: warning: load average %s on %d cores: other work is running, so the numbers may be worse than on a quiet machine\n", la, runtime.NumCPU())
		}
	}
	var out []Recorded
	for i, j := range jobs {
		fmt.Fprintf(logw, "[%d/%d] %s %s: %s\n", i+1, len(jobs), j.file, j.lab.ID, presetSummary(j.lab, scale))
		rec, err := recordOne(ctx, cfg, j, scale, now, loadAvg, logw)
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
		if _, err := Load(os.DirFS(cfg.Dir)); err != nil {
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
	c, err := load(os.DirFS(dir), true)
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

// recordOne runs one preset and writes its table.
func recordOne(ctx context.Context, cfg RecordConfig, j recordJob, scale float64, now func() time.Time, loadAvg func() string, logw io.Writer) (Recorded, error) {
	start := time.Now()
	la := loadAvg()
	when := now().UTC()
	ran := *j.lab
	ran.Seconds = j.lab.Seconds * scale

	rows, err := runPreset(ctx, cfg.Child, &ran, logw)
	if err != nil {
		return Recorded{}, err
	}
	if err := checkRows(rows, logw); err != nil {
		return Recorded{}, err
	}

	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = RowCells(r, ran.Config())
	}
	source := recordSource(j.lab, scale, when, la, cfg.Build)
	rec, err := writeTable(cfg.Dir, j.file, j.lab, &ran, cells, source)
	if err != nil {
		return Recorded{}, err
	}
	rec.Rows, rec.Elapsed = rows, time.Since(start)
	return rec, nil
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
func runPreset(ctx context.Context, cc labsvc.ChildCommand, l *Lab, logw io.Writer) ([]loadrun.Row, error) {
	child, err := labsvc.StartChild(ctx, cc, l.Config())
	if err != nil {
		return nil, fmt.Errorf("starting the lab: %w", err)
	}
	defer child.Stop()
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
	} else {
		fmt.Fprintf(logw, "  %s\n", pin)
		defer pin.Restore()
	}
	target, err := loadrun.NewTarget(child.Target(), timeoutOf(l))
	if err != nil {
		return nil, err
	}
	control, err := loadrun.NewControl(child.Control(), nil)
	if err != nil {
		return nil, err
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
	if err != nil {
		if cause := context.Cause(sctx); cause != nil && ctx.Err() == nil {
			return nil, cause
		}
		return nil, err
	}
	return rep.Rows(), nil
}

// RowCells formats one row of a lab with cfg as a recorded table holds it,
// in RecordColumns order (pages use it for a run of a preset too): counts
// as whole numbers, rates and milliseconds to one decimal, and "-" for a lab
// counter that could not be read.
func RowCells(r loadrun.Row, cfg labsvc.Config) []string {
	opt := func(v int) string {
		if v < 0 {
			return "-"
		}
		return strconv.Itoa(v)
	}
	f1 := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	cells := []string{
		fmtNum(r.Offered), strconv.Itoa(r.Sent), strconv.Itoa(r.OK), strconv.Itoa(r.Refused), strconv.Itoa(r.Gaveup), strconv.Itoa(r.Error),
		f1(r.OKPerSec), f1(r.P50MS), f1(r.P99MS), opt(r.Done), strconv.Itoa(r.Lost), opt(r.Queued), f1(r.MeanMS),
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
//	server lessons record --lab littles-sweep; seed 1; linux/amd64, 2 cores, go1.26.0; build 085f71a2c3d4; 2026-11-30 11:42 UTC; load average at start 0.12 0.30 0.41
//
// (without "build ..." when build is "").
func recordSource(l *Lab, scale float64, when time.Time, loadAvg, build string) string {
	if build != "" {
		build = "; build " + build
	}
	s := fmt.Sprintf("server lessons record --lab %s; seed %d; %s/%s, %d cores, %s%s; %s; "+loadAverageMark+"%s",
		l.ID, l.Seed, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), build, when.Format("2006-01-02 15:04 MST"), cmpOr(loadAvg, "unknown"))
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
		return fmt.Sprintf("%s; closed loop, %d clients, one %s s window", knobs, l.Closed, secs)
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
	s := fmt.Sprintf("Recorded: %d %s, %d ms spin + %d ms wait, %s, %d %s; ", l.Workers, worker, l.SpinMS, l.WaitMS, limit, l.CPUs, cpu)
	if l.StallEvery > 0 {
		s = strings.TrimSuffix(s, "; ") + fmt.Sprintf(", a %d ms stall every %d requests; ", l.StallMS, l.StallEvery)
	}
	if l.Closed > 0 {
		s += fmt.Sprintf("closed loop, %d clients, one %s s window", l.Closed, fmtNum(l.Seconds))
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
	pf, errs := parseFileWith(newMarkdown(), file, src, true)
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
