package recorder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"capacitylab/lessons"
	"capacitylab/loadrun"
	"capacitylab/measure"
	"capacitylab/model"
)

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

	Now     func() time.Time // nil = time.Now
	LoadAvg func() string    // the load average line for the source; nil = read /proc/loadavg
}

// Recorded is one table Record wrote.
type Recorded struct {
	lessons.Written
	Rows    []loadrun.Row // the measured rows
	Elapsed time.Duration // how long the preset took, drains included
}

// Record runs lab presets, each through measure.Measure (a lab child and a
// load child of its own, exactly as a learner's run), and writes each
// preset's result as a table block into its lesson file
// (lessons.WriteTable): the table with preset=ID is replaced where it
// stands, or a new one with id ID-result is inserted after the lab block.
// Each table's source names the command, seed, machine, date and the load
// average at the start, and its fingerprint covers the preset and rows
// (see lessons.Fingerprint).
//
// Record refuses, without writing that table, when a window lost a request
// (lost ≠ 0, a generator bug), when the lab had not drained before a
// window, or when the preset changed on disk while it ran. Tables already
// written stay written. The content must validate apart from table
// fingerprints (stale tables are what Record is for).
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
		drain += drainEstimate(j.Lab, scale)
	}
	fmt.Fprintf(logw, "record: %d preset(s), %d window(s): %s s of windows, plus about %s s for overloaded labs to drain (from each preset's ceiling)\n",
		len(jobs), windows, fmtSecs(secs), fmtSecs(drain))
	if la := loadAvg(); la != "" {
		if one, err := strconv.ParseFloat(strings.Fields(la)[0], 64); err == nil && one > lessons.QuietLoadAverage {
			fmt.Fprintf(logw, "record: warning: load average %s on %d cores: other work is running, so the numbers may be worse than on a quiet machine\n", la, runtime.NumCPU())
		}
	}
	var out []Recorded
	for i, j := range jobs {
		fmt.Fprintf(logw, "[%d/%d] %s %s: %s\n", i+1, len(jobs), j.File, j.Lab.ID, presetSummary(j.Lab, scale))
		rec, err := recordOne(ctx, cfg, j, scale, now, loadAvg, logw)
		if err != nil {
			return out, fmt.Errorf("%s: preset %s: %w", j.File, j.Lab.ID, err)
		}
		fmt.Fprintf(logw, "  wrote table %s at %s:%d (%s)\n", rec.Table, rec.File, rec.Line, rec.Elapsed.Round(100*time.Millisecond))
		out = append(out, rec)
	}
	// What was written must now load, fingerprints included (a scaled
	// trial is the one expected failure). Problems in files not recorded
	// this time (stale tables of other presets) are only reported.
	if scale == 1 {
		if _, err := lessons.LoadWith(os.DirFS(cfg.Dir), LoadOptions()); err != nil {
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

// drainEstimate is about how long, in seconds, a preset's overloaded
// windows leave the lab serving its backlog after the window: the backlog
// (offered − ceiling) × seconds, capped by the admission limit, over the
// lab's ceiling (model.TwoCeilings). Closed loops build no backlog.
func drainEstimate(l *lessons.Lab, scale float64) float64 {
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

// recordOne runs one preset and writes its table.
func recordOne(ctx context.Context, cfg Config, j lessons.RecordJob, scale float64, now func() time.Time, loadAvg func() string, logw io.Writer) (Recorded, error) {
	start := time.Now()
	la := loadAvg()
	when := now().UTC()
	ran := *j.Lab
	ran.Seconds = j.Lab.Seconds * scale

	rows, err := runPreset(ctx, cfg.Children, &ran, logw)
	if err != nil {
		return Recorded{}, err
	}
	if err := checkRows(rows, logw); err != nil {
		return Recorded{}, err
	}

	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = RowCells(r, ran.Accept)
	}
	source := recordSource(j.Lab, scale, when, la, cfg.Build)
	w, err := lessons.WriteTable(cfg.Dir, j.File, j.Lab, &ran, cells, recordCaption(&ran), source)
	if err != nil {
		return Recorded{}, err
	}
	return Recorded{Written: w, Rows: rows, Elapsed: time.Since(start)}, nil
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

// runPreset measures one preset (measure.Measure) and returns its rows,
// saying on logw where the generator ran and each row as it comes.
func runPreset(ctx context.Context, children measure.Config, l *lessons.Lab, logw io.Writer) ([]loadrun.Row, error) {
	var rows []loadrun.Row
	_, err := measure.Measure(ctx, children, Preset(l), func(e measure.Event) error {
		switch e.Kind {
		case measure.EventStarted:
			fmt.Fprintf(logw, "  lab on processor(s) %v; %s\n", e.Lab.CPUs, e.Load.Note)
		case measure.EventWindow:
			r := e.Row
			rows = append(rows, *r)
			fmt.Fprintf(logw, "  window %d/%d offered %s: ok %d refused %d gaveup %d error %d lost %d, ok/s %.1f, p50 %.1f ms, p99 %.1f ms, done %d, queued %d\n",
				e.Window+1, e.Windows, fmtNum(r.Offered), r.OK, r.Refused, r.Gaveup, r.Error, r.Lost, r.OKPerSec, r.P50MS, r.P99MS, r.Done, r.Queued)
			if r.Note != "" {
				fmt.Fprintf(logw, "    note: %s\n", r.Note)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func fmtSecs(s float64) string { return strconv.FormatFloat(s, 'f', 0, 64) }

// recordSource is the source line of a recorded table, e.g.
//
//	server lessons record --lab littles-sweep; seed 1; linux/amd64, 2 cores, go1.26.0; build 085f71a2c3d4; 2026-11-30 11:42 UTC; load average at start 0.12 0.30 0.41
//
// (without "build ..." when build is "").
func recordSource(l *lessons.Lab, scale float64, when time.Time, loadAvg, build string) string {
	if build != "" {
		build = "; build " + build
	}
	s := fmt.Sprintf("server lessons record --lab %s; seed %d; %s/%s, %d cores, %s%s; %s; "+lessons.LoadAverageMark+"%s",
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
func presetSummary(l *lessons.Lab, scale float64) string {
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
	return fmt.Sprintf("%s; open loop at %s a second, %d × %s s, seed %d", knobs, lessons.RateList(l.Rates), len(l.Rates), secs, l.Seed)
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
	s := fmt.Sprintf("Recorded: %d %s, %d ms spin + %d ms wait, %s, %d %s; ", l.Workers, worker, l.SpinMS, l.WaitMS, limit, l.CPUs, cpu)
	if l.StallEvery > 0 {
		s = strings.TrimSuffix(s, "; ") + fmt.Sprintf(", a %d ms stall every %d requests; ", l.StallMS, l.StallEvery)
	}
	if l.Closed > 0 {
		s += fmt.Sprintf("closed loop, %d clients, one %s s window", l.Closed, fmtNum(l.Seconds))
	} else {
		s += fmt.Sprintf("open loop at %s a second, %s s windows", lessons.RateList(l.Rates), fmtNum(l.Seconds))
	}
	return s + ", caller timeout " + fmtNum(Preset(l).Timeout().Seconds()) + " s."
}
