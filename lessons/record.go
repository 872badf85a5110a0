package lessons

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"capacitylab/model"
)

// Recording a lesson's tables is package recorder's: it measures each
// preset and writes the rows here, through PlanRecording and WriteTable.
// This file is the content's side of it: which columns a table has, which
// presets there are to record, and how a table is written into its file.

// RecordColumns returns the columns `server lessons record` writes for a
// lab whose ACCEPT is accept ("" for the door, or "workers"), in order: the
// lessons' columns of a window's row (package loadrun's Row, whose package
// doc defines each); then mean_ms, which Little's law needs; p95_ms and n,
// the other percentile and how many answers the percentiles are over; late
// and send_lag_p99_ms, which show whether the generator kept its schedule;
// and lab_service_ms and lab_cpu_ms, the lab's own view of the window (its
// mean service time, and the processor time its process used). With
// ACCEPT=workers, whose waiting callers sit in the kernel's accept queue,
// backlogged follows queued. Package recorder writes each row's cells in
// this order (recorder.RowCells).
func RecordColumns(accept string) []string {
	cols := []string{"offered", "sent", "ok", "refused", "gaveup", "error", "ok_per_sec",
		"p50_ms", "p99_ms", "done", "lost", "queued", "mean_ms",
		"p95_ms", "n", "late", "send_lag_p99_ms", "lab_service_ms", "lab_cpu_ms"}
	if accept == AcceptWorkers {
		cols = slices.Insert(cols, slices.Index(cols, "queued")+1, "backlogged")
	}
	return cols
}

// TimeColumns returns the columns of a time table, which `server lessons
// record` writes beside the window table of a preset with over_time: true:
// one row a sample of a run over time (result.Sample, a second of a
// window), window (from 0) and at_s (the second's start, from the
// window's start) first, then the requests that ended in it (ok,
// refused, gaveup), the arrivals the client's workers could not take
// (client_busy), the generator's requests in flight at its end, the lab's
// queue and its policy's limit read then, p50 and p99 of its ok answers,
// and how many the lab's policy dropped from its queue since the window
// began. A table whose columns begin window, at_s is a time table
// (Table.TimeTable).
func TimeColumns() []string {
	return []string{"window", "at_s", "seconds", "ok", "refused", "gaveup", "client_busy", "in_flight", "queued", "in_service", "limit", "p50_ms", "p99_ms", "dropped"}
}

// RetryColumns are the window-table columns a lab block with a retrying
// client (retry:) has after RecordColumns': the attempts sent, attempts a
// second, amplification (attempts ÷ sent) and the arrivals its breaker
// stopped (result.Row). ClassColumns are those of a block whose arrivals
// carry classes (critical:, sheddable:): the critical arrivals and the
// share of each class answered ok (result.ClassRow).
func RetryColumns() []string {
	return []string{"attempts", "attempts_per_sec", "amplification", "breaker_open"}
}

// ClassColumns: see RetryColumns.
func ClassColumns() []string {
	return []string{"critical_arrivals", "critical_ok_share", "default_ok_share", "sheddable_ok_share"}
}

// TimeRetryColumns and TimeClassColumns are what those blocks add to a
// time table: a second's attempts and arrivals stopped by the breaker;
// its ok answers of each class.
func TimeRetryColumns() []string { return []string{"attempts", "breaker_open"} }

// TimeClassColumns: see TimeRetryColumns.
func TimeClassColumns() []string { return []string{"critical_ok", "default_ok", "sheddable_ok"} }

// Columns returns a window table's columns for a lab of accept, with a
// retrying client or not, whose arrivals carry classes or not.
func Columns(t TableOf) []string {
	cols := RecordColumns(t.Accept)
	if t.Clients {
		cols = append([]string{"clients"}, cols...)
	}
	if t.Retrying {
		cols = append(cols, RetryColumns()...)
	}
	if t.Classed {
		cols = append(cols, ClassColumns()...)
	}
	if t.Varied {
		cols = append(cols, VariedColumns()...)
	}
	if t.Fanned {
		cols = append(cols, FanoutColumns()...)
	}
	if t.Hedged {
		cols = append(cols, HedgeColumns()...)
	}
	return cols
}

// TableOf says what a window table's run had, for Columns: the lab's
// ACCEPT ("" for the door, or "workers"); Clients, a closed loop of more
// than one window (clients: [1, 2, 4]), whose rows a lesson names by
// their client counts as an open loop's by their offered rates (the
// table begins with clients); a retrying client; classes; a lab block
// that gives dist; fan-out; hedging.
type TableOf struct {
	Accept                                             string
	Clients, Retrying, Classed, Varied, Fanned, Hedged bool
}

// FanoutColumns are the window-table columns of a fanned-out block
// (fanout: k > 1) after the others: its sub-requests sent, their p50 and
// p99, and the share of requests slower than the sub-requests' p99
// (result.Row). HedgeColumns are a hedging block's: every attempt sent,
// copies included, attempts ÷ sub-requests, and the copies sent.
func FanoutColumns() []string {
	return []string{"sub_requests", "sub_p50_ms", "sub_p99_ms", "over_sub_p99"}
}

// HedgeColumns: see FanoutColumns.
func HedgeColumns() []string { return []string{"attempts", "amplification", "hedges"} }

// VariedColumns are the window-table columns a lab block whose service
// time varies (dist: anything but constant) has after the others: the
// lab's mean wait in its queue and its service time's squared coefficient
// of variation, what the Pollaczek–Khinchine formula takes (result.Row).
func VariedColumns() []string { return []string{"lab_wait_ms", "lab_service_scv"} }

// Columns are l's window table's columns (the package func Columns).
func (l *Lab) Columns() []string {
	return Columns(TableOf{Accept: l.Accept, Clients: len(l.Clients) > 1, Retrying: l.Retry != "", Classed: l.Classed(), Varied: l.Varied(),
		Fanned: l.Fanout > 1, Hedged: l.Hedge != ""})
}

// ClientCounts are l's closed-loop client counts, one window each (nil
// for an open loop): Clients, or [Closed] for a Lab built without them.
func (l *Lab) ClientCounts() []int {
	if len(l.Clients) == 0 && l.Closed > 0 {
		return []int{l.Closed}
	}
	return l.Clients
}

// Varied says whether l's block gives the lab's dist (constant too: a
// lesson that sets a constant lab beside a varied one reads the same
// columns of both).
func (l *Lab) Varied() bool { return l.Gives("dist") }

// Classed says whether l's arrivals carry classes.
func (l *Lab) Classed() bool { return l.Critical > 0 || l.Sheddable > 0 }

// TimeColumns are l's time table's columns: TimeColumns(), then those a
// retrying client and classes add.
func (l *Lab) TimeColumns() []string {
	cols := TimeColumns()
	if l.Retry != "" {
		cols = append(cols, TimeRetryColumns()...)
	}
	if l.Classed() {
		cols = append(cols, TimeClassColumns()...)
	}
	return cols
}

// AcceptWorkers is a lab block's accept: workers (labsvc.AcceptWorkers).
const AcceptWorkers = "workers"

// AllColumns returns every column a recorded table may have: those of a lab
// whose workers accept, backlogged included.
func AllColumns() []string {
	cols := Columns(TableOf{Accept: AcceptWorkers, Clients: true, Retrying: true, Classed: true, Varied: true, Fanned: true})
	return append(cols, "hedges") // HedgeColumns' others are RetryColumns' too
}

// DefaultTimeoutMS is the caller's timeout of a preset whose timeout_ms
// is 0: the load generator's default (result.DefaultTimeout, which
// package recorder's tests hold it to).
const DefaultTimeoutMS = 2000

// timeoutOf is the caller's timeout a preset runs with.
func timeoutOf(l *Lab) time.Duration {
	if l.TimeoutMS > 0 {
		return time.Duration(l.TimeoutMS) * time.Millisecond
	}
	return DefaultTimeoutMS * time.Millisecond
}

// DrainSeconds is about how long, in seconds, the preset's overloaded
// windows, each scale × its seconds long, leave the lab serving its
// backlog after the window: the backlog (offered − ceiling) × seconds,
// capped by the admission limit, over the lab's ceiling (model.Lab's two
// ceilings). Closed loops build no backlog. The recorder estimates a
// recording's length with it, and Reading a lesson's.
func (l *Lab) DrainSeconds(scale float64) float64 {
	ceiling := float64(model.Lab{Workers: float64(l.Workers), CPUs: float64(l.CPUs), SpinMS: float64(l.SpinMS), WaitMS: float64(l.WaitMS)}.Ceilings().Ceiling)
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

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// ClientList writes client counts as a lesson does: "1, 2, 4".
func ClientList(clients []int) string {
	s := make([]string, len(clients))
	for i, c := range clients {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ", ")
}

// RateList writes offered rates as the lessons write them: "10, 20, 40".
func RateList(rates []float64) string {
	s := make([]string, len(rates))
	for i, r := range rates {
		s[i] = strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strings.Join(s, ", ")
}

// QuietLoadAverage is the highest one-minute load average at which a
// recorded table counts as recorded on a quiet machine (the simulator's
// fidelity test holds only those to its p50 tolerance). The recorder
// itself refuses a busier machine by its MaxLoad, per core.
const QuietLoadAverage = 0.5

// LoadAverageMark begins the load average in a recorded table's source
// ("...; load average at start 0.12 0.30 0.41"), which LoadAverageAtStart
// reads.
const LoadAverageMark = "load average at start "

// LoadAverageAtStart returns the one-minute load average a recorded table's
// source gives for the start of its recording, and whether it gives one.
func (t *Table) LoadAverageAtStart() (float64, bool) {
	_, rest, ok := strings.Cut(t.Source, LoadAverageMark)
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

// RecordJob is one preset to record.
type RecordJob struct {
	File string // the lesson file, relative to the content directory
	Lab  *Lab
}

// PlanRecording loads the content in dir with opts (pending tables
// accepted and table fingerprints not checked: stale and pending tables
// are what recording is for) and lists the presets to record, in reading
// order: every preset of lesson slug ("" for every lesson), or only preset
// labID. Lessons in the fixtures part are skipped unless slug or labID
// names them.
func PlanRecording(dir, slug, labID string, opts LoadOptions) ([]RecordJob, error) {
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return nil, fmt.Errorf("content directory %q is not a directory: want the directory holding the lesson *.md files", dir)
	}
	opts.Pending, opts.noPrints = true, true
	c, err := LoadWith(os.DirFS(dir), opts)
	if err != nil {
		return nil, fmt.Errorf("%s does not validate, so its presets cannot be trusted; fix these first:\n%w", dir, err)
	}
	var jobs []RecordJob
	foundLesson := slug == ""
	for _, l := range c.Lessons {
		if (slug != "" && l.Slug != slug) || (slug == "" && labID == "" && l.Part == FixturePart) {
			continue
		}
		foundLesson = true
		for _, b := range l.Blocks() {
			lab, ok := b.(*Lab)
			if !ok || (labID != "" && lab.ID != labID) {
				continue
			}
			if j := judgeOf(l, lab.ID); j != nil {
				// A design task's preset has no table: the learners' runs
				// of it are what its judge block judges.
				if labID != "" {
					return nil, fmt.Errorf("lab preset %q is judged by %q and has no table to record: its measurements are the learners' own runs", labID, j.ID)
				}
				continue
			}
			// A preset with two tables of one kind is refused now, not
			// after it has been measured: WriteTable would not guess
			// which to replace.
			for _, timeTable := range []bool{false, true} {
				var tables []*Table
				for _, blk := range l.Blocks() {
					if t, ok := blk.(*Table); ok && t.Preset == lab.ID && t.TimeTable() == timeTable {
						tables = append(tables, t)
					}
				}
				if len(tables) > 1 {
					kind := ""
					if timeTable {
						kind = "time "
					}
					return nil, fmt.Errorf("%s: %w", l.File, twoTables(kind, tables, lab.ID))
				}
			}
			jobs = append(jobs, RecordJob{File: l.File, Lab: lab})
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

// twoTables is the error of a preset that two tables of one kind (its
// window tables, or its time tables: kind "time ") name.
func twoTables(kind string, tables []*Table, preset string) error {
	return fmt.Errorf("%stables %q (line %d) and %q (line %d) both name preset %s: keep one, then record again", kind, tables[0].ID, tables[0].Line, tables[1].ID, tables[1].Line, preset)
}

func slugs(c *Course) []string {
	s := make([]string, len(c.Lessons))
	for i, l := range c.Lessons {
		s[i] = l.Slug
	}
	return s
}

// Written is where WriteTable wrote a table.
type Written struct {
	File  string // lesson file, relative to the content directory
	Lab   string // preset id
	Table string // table id
	Line  int    // fence line of the table as written
}

// WriteTable re-reads the lesson file, checks the preset is still the one
// that ran, and writes a table of cells (in RecordColumns order) with
// source in place of the preset's old table (recorded or pending) or, with
// id PRESET-result, after its lab block. Nothing else in the file changes, byte for byte.
// ran is the preset as run (seconds scaled); the fingerprint is over it.
// caption is the new table's; an author's caption of the old table is kept
// while it still describes the preset (the old table was recorded from the
// preset as it is, at full length).
func WriteTable(dir, file string, preset, ran *Lab, cells [][]string, caption, source string) (Written, error) {
	return writeTable(dir, file, preset, ran, ran.Columns(), cells, caption, source)
}

// WriteTimeTable is WriteTable for a preset's time table (cells in
// TimeColumns order, one row a sample): it replaces the preset's time
// table where it stands or, with id PRESET-time, goes after the preset's
// window table (after the lab block when there is none). A preset has at
// most one table of each kind.
func WriteTimeTable(dir, file string, preset, ran *Lab, cells [][]string, caption, source string) (Written, error) {
	return writeTable(dir, file, preset, ran, ran.TimeColumns(), cells, caption, source)
}

// writeTable writes a table of columns cols: a time table (TimeColumns)
// or a window table.
func writeTable(dir, file string, preset, ran *Lab, cols []string, cells [][]string, caption, source string) (Written, error) {
	timeTable := isTimeTable(cols)
	path := filepath.Join(dir, file)
	src, err := os.ReadFile(path)
	if err != nil {
		return Written{}, err
	}
	pf, errs := parseFileWith(newMarkdown(), file, src, LoadOptions{Pending: true, noPrints: true})
	if len(errs) > 0 {
		return Written{}, fmt.Errorf("the file changed while recording and no longer validates; the table was not written:\n%w", errs)
	}
	b, ok := pf.lesson.Block(preset.ID)
	now, isLab := b.(*Lab)
	if !ok || !isLab || canonicalPreset(now) != canonicalPreset(preset) {
		return Written{}, fmt.Errorf("the preset changed in %s while it was being recorded; the table was not written: record it again", file)
	}
	var old []*Table
	var windows *Table // the preset's window table, which a new time table follows
	for _, blk := range pf.lesson.Blocks() {
		t, ok := blk.(*Table)
		switch {
		case !ok || t.Preset != preset.ID:
		case t.TimeTable() == timeTable:
			old = append(old, t)
		case windows == nil:
			windows = t
		}
	}
	kind := ""
	if timeTable {
		kind = "time "
	}
	if len(old) > 1 {
		return Written{}, twoTables(kind, old, preset.ID)
	}
	id := preset.ID + "-result"
	if timeTable {
		id = preset.ID + "-time"
	}
	if len(old) == 1 {
		id = old[0].ID
		// Keep an author's caption while it still describes the preset: the
		// old table was recorded from the preset as it is now.
		if old[0].Caption != "" && old[0].Fingerprint == Fingerprint(now, old[0].Columns, old[0].Rows, old[0].Source) && ran.Seconds == preset.Seconds {
			caption = old[0].Caption
		}
	} else if _, clash := pf.lesson.Block(id); clash {
		return Written{}, fmt.Errorf("a block with id %q already exists in %s: rename it so the recorded table can take that id", id, file)
	}

	lines := splitLines(src)
	eol := "\n"
	if len(lines) > 0 && bytes.HasSuffix(lines[0], []byte("\r\n")) {
		eol = "\r\n"
	}
	block := tableBlock(id, preset.ID, caption, cols, cells, source, Fingerprint(ran, cols, cells, source), eol)
	var out bytes.Buffer
	var line int
	if len(old) == 1 {
		first := old[0].Line
		last, err := fenceEnd(lines, first)
		if err != nil {
			return Written{}, err
		}
		writeLines(&out, lines[:first-1])
		out.WriteString(block)
		writeLines(&out, lines[last:])
		line = first
	} else {
		after := now.Line // a new table goes after the lab block,
		if timeTable && windows != nil {
			after = windows.Line // a new time table after the window table
		}
		last, err := fenceEnd(lines, after)
		if err != nil {
			return Written{}, err
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
		return Written{}, err
	}
	return Written{File: file, Lab: preset.ID, Table: id, Line: line}, nil
}

// isTimeTable reports whether columns are a time table's: they begin
// window, at_s.
func isTimeTable(cols []string) bool {
	return len(cols) >= 2 && cols[0] == "window" && cols[1] == "at_s"
}

// TimeTable reports whether the table is a time table: one row a sample
// of a run over time, its columns beginning window, at_s (TimeColumns).
func (t *Table) TimeTable() bool { return isTimeTable(t.Columns) }

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

// judgeOf returns the judge block of l that judges the lab preset id, or nil.
func judgeOf(l *Lesson, id string) *Judge {
	for _, b := range l.Blocks() {
		if j, ok := b.(*Judge); ok && j.Lab == id {
			return j
		}
	}
	return nil
}
