package recorder

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"capacitylab/affinity"
	"capacitylab/labsvc"
	"capacitylab/lessons"
	"capacitylab/loadrun"
	"capacitylab/measure"
	"capacitylab/result"
)

// The recorder's children are this test binary re-executed: a lab child
// with labEnv=1 (labsvc.ChildMain), a load child with loadEnv=1
// (measure.ChildMain).
const (
	labEnv  = "RECORDER_TEST_LAB_CHILD"
	loadEnv = "RECORDER_TEST_LOAD_CHILD"
)

func TestMain(m *testing.M) {
	labsvc.ChildMain(labEnv)
	measure.ChildMain(loadEnv)
	goleak.VerifyTestMain(m)
}

// testChildren starts this test binary as a preset's lab and load children.
func testChildren(t testing.TB) measure.Config {
	t.Helper()
	lab, err := labsvc.SelfCommand(labEnv)
	if err != nil {
		t.Fatal(err)
	}
	load, err := labsvc.SelfCommand(loadEnv)
	if err != nil {
		t.Fatal(err)
	}
	return measure.Config{Lab: lab, Load: load}
}

// lessonHead is a lesson's front matter; the body starts on line 10.
func lessonHead(slug string, number int) string {
	return "---\nslug: " + slug + "\npart: P\nchapter: C\nnumber: " + strconv.Itoa(number) +
		"\ntitle: T\nminutes: 5\nas_of: 2026-11-30\n---\n"
}

// labBody is a predict settled by an open-loop lab preset (fences on lines
// 10 and 20; the lab's workers on 21): one worker, 10 a second for 1 s.
func labBody(slug string) string {
	return strings.ReplaceAll("```predict id=%s-p\nprompt: Q?\noptions:\n  - text: A\n    correct: true\n    explain: Yes.\n"+
		"  - text: B\n    explain: No.\nsettled_by: %s-lab\n```\n"+
		"```lab id=%s-lab\nworkers: 1\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [10]\nseconds: 1\n```\n", "%s", slug)
}

// writeDir writes files into a fresh directory and returns it.
func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		writeFile(t, dir, name, body)
	}
	return dir
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testConfig records into dir with real children (this binary), a fixed
// clock, a fixed load average and other programs said to use 0.01 cores
// (so tests on a shared machine do not refuse for its neighbours;
// TestRecordRefusesBusyMachine and TestOthersMeter cover the real checks).
func testConfig(t *testing.T, dir string, log *bytes.Buffer) Config {
	t.Helper()
	return Config{
		Dir:      dir,
		Children: testChildren(t),
		Log:      log,
		Now:      func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) },
		LoadAvg:  func() string { return "0.10 0.20 0.30" },
		Others:   func([]int) (float64, bool) { return 0.01, true },
		Build:    "0123456789ab+dirty",
	}
}

// tinyLesson is a lesson with an open-loop preset (one worker, one rate of
// 10 a second, 1 s) and a closed-loop preset (2 clients, 1 s, the worker
// accepting for itself from a backlog of 16), with prose after each.
func tinyLesson() string {
	return lessonHead("a", 1) + labBody("a") + "\nProse after the open lab.\n\n" +
		"```lab id=a-closed\nworkers: 1\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nseconds: 1\nclosed: 2\nbacklog: 16\naccept: workers\n```\n\nProse after the closed lab.\n"
}

// tableBlocks returns the table fences in src.
func tableBlocks(src string) []string {
	return regexp.MustCompile("(?m)^```table .*$").FindAllString(src, -1)
}

// TestRecordEndToEnd records a tiny lesson against real children, then
// checks that the tables validate, that nothing else changed, that
// recording again replaces instead of duplicating (keeping an author's
// caption), and that a number edited by hand is caught with file and line.
// The recorder's own process is never pinned: the load child keeps off the
// lab's processors, and says so in the log.
func TestRecordEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real lab and load children for about 5 s")
	}
	orig := tinyLesson()
	dir := writeDir(t, map[string]string{"a.md": orig})
	var log bytes.Buffer
	cfg := testConfig(t, dir, &log)
	threadsBefore, err := affinity.ThreadCPUs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	cpusBefore := threadsBefore[os.Getpid()]
	recs, err := recordOrSkip(t, cfg)
	if err != nil {
		t.Fatalf("Record: %v\nlog:\n%s", err, log.String())
	}
	lg := log.String()
	// Once per measurement: each preset, and each window measured again
	// because its sends were late (a busy machine).
	again := strings.Count(lg, "measuring it again")
	if n := strings.Count(lg, "generator pinned") + strings.Count(lg, "generator not pinned"); n != 2+again {
		t.Errorf("the log says where the generator ran %d times, want once per preset (2) and per window measured again (%d):\n%s", n, again, lg)
	}
	threads, err := affinity.ThreadCPUs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for tid, cpus := range threads {
		if !slices.Equal(cpus, cpusBefore) {
			t.Errorf("after Record thread %d of this process may use %v, want %v: the recorder's process is never pinned", tid, cpus, cpusBefore)
		}
	}
	if len(recs) != 2 || recs[0].Table != "a-lab-result" || recs[1].Table != "a-closed-result" {
		t.Fatalf("recorded %+v, want tables a-lab-result and a-closed-result", recs)
	}
	for _, r := range recs {
		if len(r.Rows) != 1 || r.Rows[0].Sent == 0 || r.Rows[0].Lost != 0 || r.Rows[0].OK+r.Rows[0].Refused+r.Rows[0].Gaveup+r.Rows[0].Error != r.Rows[0].Sent {
			t.Errorf("%s: rows %+v: want one window that sent requests and accounted for each", r.Lab, r.Rows)
		}
	}
	if !strings.Contains(lg, "[2/2] a.md a-closed") || !strings.Contains(lg, "wrote table a-closed-result") {
		t.Errorf("progress log lacks the preset lines:\n%s", lg)
	}
	c, err := lessons.LoadWith(os.DirFS(dir), LoadOptions())
	if err != nil {
		t.Fatalf("recorded content does not validate: %v", err)
	}
	b, _, _ := c.Block("a-lab-result")
	tb := b.(*lessons.Table)
	if tb.Preset != "a-lab" || len(tb.Rows) != 1 || strings.Join(tb.Columns, " ") != strings.Join(lessons.RecordColumns(""), " ") {
		t.Errorf("table = %+v", tb)
	}
	// A lab whose worker accepts for itself has the kernel's queue beside
	// its own: backlogged, after queued. One caller waits there while the
	// other is served, two when the one served reconnects before the
	// worker, still closing its connection, is back at accept.
	b, _, _ = c.Block("a-closed-result")
	if tb := b.(*lessons.Table); strings.Join(tb.Columns, " ") != "offered sent ok refused gaveup error ok_per_sec p50_ms p99_ms done lost queued backlogged mean_ms p95_ms n late send_lag_p99_ms lab_service_ms lab_cpu_ms" ||
		len(tb.Rows) != 1 || tb.Rows[0][11] != "0" || (tb.Rows[0][12] != "1" && tb.Rows[0][12] != "2") {
		t.Errorf("closed-loop table with ACCEPT=workers = %+v, want backlogged after queued, queued 0 and backlogged 1 or 2", tb)
	}
	for _, want := range []string{"server lessons record --lab a-lab", "seed 0", "cores", "; build 0123456789ab+dirty; session 20261130T120000Z; 2026-11-30 12:00 UTC",
		"load average at start 0.10 0.20 0.30; other programs used 0.01 cores"} {
		if !strings.Contains(tb.Source, want) {
			t.Errorf("source %q lacks %q", tb.Source, want)
		}
	}
	if strings.Contains(tb.Source, "BUSY") {
		t.Errorf("source %q says BUSY on a quiet machine", tb.Source)
	}
	// Both tables of the one call name the same session.
	cb0, _, _ := c.Block("a-closed-result")
	if s := cb0.(*lessons.Table).Source; !strings.Contains(s, "session 20261130T120000Z") {
		t.Errorf("closed table source %q lacks the call's session", s)
	}
	// Every column the recorder writes has a cell, and the new ones hold
	// numbers: n is the count of ok answers, late a count.
	row := tb.Rows[0]
	col := func(name string) string { return row[slices.Index(tb.Columns, name)] }
	if col("n") != col("ok") {
		t.Errorf("n = %s, ok = %s: n counts the ok answers the percentiles are over", col("n"), col("ok"))
	}
	for _, name := range []string{"p95_ms", "late", "send_lag_p99_ms", "lab_service_ms", "lab_cpu_ms"} {
		if _, err := strconv.ParseFloat(col(name), 64); err != nil {
			t.Errorf("%s = %q, want a number", name, col(name))
		}
	}
	if got := tb.Rows[0][0]; got != "10" {
		t.Errorf("offered cell = %q, want the preset's rate 10", got)
	}
	cb, _, _ := c.Block("a-closed-result")
	if ct := cb.(*lessons.Table); !strings.Contains(ct.Caption, "closed loop, 2 clients") {
		t.Errorf("closed caption = %q", ct.Caption)
	}

	// Nothing but the two inserted blocks (each with its blank line) changed.
	src := readFile(t, dir, "a.md")
	stripped := regexp.MustCompile("(?s)\n```table [^\n]*\n.*?\n```\n").ReplaceAllString(src, "")
	if stripped != orig {
		t.Errorf("outside the tables the file changed:\n got: %q\nwant: %q", stripped, orig)
	}
	if n := len(tableBlocks(src)); n != 2 {
		t.Fatalf("%d table blocks after the first recording, want 2", n)
	}

	// An author rewords a caption; recording the open preset again replaces
	// its table in place and keeps the caption.
	src = strings.Replace(src, "caption: \"Recorded: 1 worker", "caption: \"An author's caption: 1 worker", 1)
	writeFile(t, dir, "a.md", src)
	log.Reset()
	cfg.Lab = "a-lab"
	if _, err := recordOrSkip(t, cfg); err != nil {
		t.Fatalf("second Record: %v\nlog:\n%s", err, log.String())
	}
	src2 := readFile(t, dir, "a.md")
	if got := tableBlocks(src2); len(got) != 2 || got[0] != "```table id=a-lab-result preset=a-lab" {
		t.Errorf("table fences after recording again = %q, want the same two", got)
	}
	if !strings.Contains(src2, "caption: \"An author's caption: 1 worker") {
		t.Error("recording again lost the author's caption")
	}
	if _, err := lessons.Load(os.DirFS(dir)); err != nil {
		t.Fatalf("content recorded twice does not validate: %v", err)
	}

	// A hand-edited number: the loader names the file and the table's line.
	line := 0
	for i, l := range strings.Split(src2, "\n") {
		if strings.HasPrefix(l, "```table id=a-lab-result") {
			line = i + 1
		}
	}
	edited := regexp.MustCompile(`(?m)^(  - \["10", ")(\d+)`).ReplaceAllString(src2, "${1}99999")
	if edited == src2 {
		t.Fatal("test could not find the row to edit")
	}
	writeFile(t, dir, "a.md", edited)
	_, err = lessons.Load(os.DirFS(dir))
	want := "a.md:" + strconv.Itoa(line) + `: table "a-lab-result": fingerprint does not match`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Load after a hand edit = %v, want an error containing %q", err, want)
	}
}

// TestRecordTrialIsMarked records with a shortened window: the table says
// TRIAL and does not validate until recorded at full length.
func TestRecordTrialIsMarked(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real lab and load children")
	}
	dir := writeDir(t, map[string]string{"a.md": lessonHead("a", 1) + labBody("a")})
	var log bytes.Buffer
	cfg := testConfig(t, dir, &log)
	cfg.SecondsScale = 0.5
	if _, err := recordOrSkip(t, cfg); err != nil {
		t.Fatalf("Record: %v\nlog:\n%s", err, log.String())
	}
	src := readFile(t, dir, "a.md")
	if !strings.Contains(src, "TRIAL: windows scaled by 0.5 (0.5 s instead of 1 s)") {
		t.Errorf("trial table does not say so:\n%s", src)
	}
	if _, err := lessons.Load(os.DirFS(dir)); err == nil || !strings.Contains(err.Error(), "--seconds-scale trial") {
		t.Errorf("Load of a trial table = %v, want a fingerprint mismatch naming trials", err)
	}
}

// TestRecordOneOfMany records one preset (--lab) in a course where another
// lesson's table is stale: the recording succeeds, the other file is left
// alone, and the log says it still does not validate.
func TestRecordOneOfMany(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real lab and load children")
	}
	stale := lessonHead("b", 2) + labBody("b") + "```table id=b-t preset=b-lab\ncaption: c\ncolumns: [x]\nrows: [[\"1\"]]\nsource: typed\n```\n"
	dir := writeDir(t, map[string]string{"a.md": lessonHead("a", 1) + labBody("a"), "b.md": stale})
	var log bytes.Buffer
	cfg := testConfig(t, dir, &log)
	cfg.Lab = "a-lab"
	recs, err := recordOrSkip(t, cfg)
	if err != nil || len(recs) != 1 || recs[0].File != "a.md" {
		t.Fatalf("Record = %+v, %v; want one table in a.md\nlog:\n%s", recs, err, log.String())
	}
	if got := readFile(t, dir, "b.md"); got != stale {
		t.Error("b.md changed although only a-lab was recorded")
	}
	if !strings.Contains(log.String(), "files not recorded this time do not validate yet") || !strings.Contains(log.String(), `b.md:29: table "b-t": fingerprint is missing`) {
		t.Errorf("log does not report the stale table in b.md:\n%s", log.String())
	}
}

func TestRecordRefusesBadRequests(t *testing.T) {
	good := lessonHead("a", 1) + labBody("a")
	tests := []struct {
		name  string
		files map[string]string
		cfg   func(*Config)
		want  string
	}{
		// An unknown lesson lists the slugs there are.
		{"unknown lesson", map[string]string{"a.md": good}, func(c *Config) { c.Lesson = "nope" }, `no lesson with slug "nope"`},
		// An unknown preset is named.
		{"unknown lab", map[string]string{"a.md": good}, func(c *Config) { c.Lab = "nope" }, `no lab preset "nope" in the course`},
		// A scale above 1 would record longer windows than the preset says.
		{"scale above 1", map[string]string{"a.md": good}, func(c *Config) { c.SecondsScale = 2 }, "seconds scale 2 is not allowed"},
		// A busy machine: refused before anything runs, saying how busy.
		{"busy machine", map[string]string{"a.md": good}, func(c *Config) { c.LoadAvg = func() string { return "5.00 4.00 3.00" } },
			"the machine is busy: load average 5.00 4.00 3.00 on "},
		// A threshold that cannot be met is a mistake.
		{"negative max load", map[string]string{"a.md": good}, func(c *Config) { c.MaxLoad = -1 }, "max load -1 is not allowed"},
		// Content that does not validate (other than fingerprints) is not
		// run; a knob the lab refuses is such a problem (CheckLab).
		{"broken content", map[string]string{"a.md": strings.Replace(good, "workers: 1", "workers: 0", 1)}, func(*Config) {},
			`does not validate, so its presets cannot be trusted; fix these first:` + "\n" + `a.md:21: lab "a-lab": workers 0 is not allowed`},
		// Two tables for one preset: the recorder will not guess which to keep.
		{"two tables for a preset", map[string]string{"a.md": good +
			"```table id=t1 preset=a-lab\ncaption: c\ncolumns: [x]\nrows: [[\"1\"]]\nsource: s\n```\n" +
			"```table id=t2 preset=a-lab\ncaption: c\ncolumns: [x]\nrows: [[\"1\"]]\nsource: s\n```\n"},
			func(*Config) {}, `tables "t1" (line 29) and "t2" (line 35) both name preset a-lab: keep one`},
		// A fixtures-only directory has nothing to record by default.
		{"fixtures only", map[string]string{"a.md": strings.Replace(good, "part: P", "part: "+lessons.FixturePart, 1)}, func(*Config) {}, `has no lab presets to record (lessons in part "Fixtures"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeDir(t, tt.files)
			var log bytes.Buffer
			cfg := testConfig(t, dir, &log)
			tt.cfg(&cfg)
			recs, err := Record(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Record = %v, want an error containing %q", err, tt.want)
			}
			if len(recs) != 0 {
				t.Errorf("recorded %d tables despite the error", len(recs))
			}
			// Two tables for a preset are refused before the plan is
			// made, not after the preset has been measured.
			if strings.Contains(tt.want, "both name preset") && strings.Contains(log.String(), "window(s)") {
				t.Errorf("the preset was planned for measuring before the refusal:\n%s", log.String())
			}
			for name, body := range tt.files {
				if got := readFile(t, dir, name); got != body {
					t.Errorf("%s changed although nothing was recorded", name)
				}
			}
		})
	}
}

// CheckLab reports each knob the lab refuses, and a random source the
// generator does not know, at the setting's line, with the course's own
// problems, when the course is loaded as the server loads it.
func TestCheckLab(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		// Lab knobs use labsvc's caps; rates and seconds the course's.
		{"lab out of range", "```lab id=l\nworkers: 0\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 99\nrates: [10, 2500]\nseconds: 45\n```\n", []string{
			`a.md:11: lab "l": workers 0 is not allowed: want 1 to 1024`,
			`a.md:15: lab "l": cpus 99 is not allowed: want 1 to 64`,
			`a.md:16: lab "l": rates[1] 2500 is not allowed: want above 0 and at most 2000 requests a second`,
			`a.md:17: lab "l": seconds 45 is not allowed: want above 0 and at most 30`,
		}},
		// The stall knobs use labsvc's caps too; rng names a known source.
		{"lab bad stall and rng", "```lab id=l\nworkers: 1\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\n" +
			"rates: [10]\nseconds: 1\nstall_every: -1\nstall_ms: 20000\nrng: mt\n```\n", []string{
			`a.md:18: lab "l": stall_every -1 is not allowed: want 0 to 1000000`,
			`a.md:19: lab "l": stall_ms 20000 is not allowed: want 0 to 10000`,
			`a.md:20: lab "l": rng: random source "mt" is not known: want pcg or python (pcg is the default; python draws CPython's random.seed and expovariate arrivals)`,
		}},
		// Only two doors exist; a backlog has the kernel's bound; workers
		// that accept for themselves keep no queue for LIMIT to bound.
		{"lab accept and backlog", "```lab id=l\nworkers: 64\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\n" +
			"rates: [10]\nseconds: 1\nbacklog: 70000\naccept: kernel\n```\n" +
			"```lab id=m\nworkers: 64\nspin_ms: 2\nwait_ms: 18\nlimit: 10\ncpus: 1\nrates: [10]\nseconds: 1\naccept: workers\n```\n", []string{
			`a.md:18: lab "l": backlog 70000 is not allowed: want 0 to 65535`,
			`a.md:19: lab "l": accept kernel is not allowed: want door or workers`,
			`a.md:25: lab "m": limit 10 is not allowed: want 0 with ACCEPT=workers (the workers take callers straight from the kernel's accept queue; BACKLOG bounds that)`,
		}},
		// The door's policy is one the lab knows, with its parameters in
		// range, and LIMIT bounds only the queue policy.
		{"policy unknown", "```lab id=l\nworkers: 4\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [10]\nseconds: 1\npolicy: fifo\n```\n", []string{
			`a.md:18: lab "l": policy fifo is not allowed: want queue, inflight, aimd, gradient or sojourn, then the policy's parameters as name=value, separated by commas (inflight,quota=5)`,
		}},
		{"policy out of range", "```lab id=l\nworkers: 4\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [10]\nseconds: 1\npolicy: inflight,quota=0\n```\n", []string{
			`a.md:18: lab "l": policy inflight,quota=0 is not allowed: want quota a whole number from 1 to 100000: requests allowed inside at once, waiting or in service`,
		}},
		{"limit beside a policy", "```lab id=l\nworkers: 4\nspin_ms: 2\nwait_ms: 18\nlimit: 5\ncpus: 1\nrates: [10]\nseconds: 1\npolicy: sojourn\n```\n", []string{
			`a.md:14: lab "l": limit 5 is not allowed: want 0 with POLICY=sojourn (LIMIT bounds the queue policy's waiting callers; sojourn's own parameters are in POLICY)`,
		}},
		// A run over time samples each second: its windows last one.
		{"over time, short windows", "```lab id=l\nworkers: 4\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [10]\nseconds: 0.5\nover_time: true\n```\n", []string{
			`a.md:18: lab "l": over_time: a run over time takes a sample every 1s: want seconds of at least 1, or leave over_time out`,
		}},
		// Knob changes fall inside the window, name a knob the lab can
		// change and give a value it allows.
		{"knob change past the window", "```lab id=l\nworkers: 4\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [10]\nseconds: 1\nat: [1s:WAIT_MS=40]\n```\n", []string{
			`a.md:18: lab "l": at: knob change 1s:WAIT_MS=40 is past the end of the window: want a time from 0 to less than the window's 1s`,
		}},
		{"knob change unknown knob", "```lab id=l\nworkers: 4\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [10]\nseconds: 1\nat: [500ms:SPEED=2]\n```\n", []string{
			`a.md:18: lab "l": at: knob change 500ms:SPEED=2: unknown knob "SPEED": want one of WORKERS, SPIN_MS, WAIT_MS, LIMIT, STALL_EVERY, STALL_MS, BACKLOG, POLICY, DIST, LOCK_MS, COHERENCY_US`,
		}},
		{"knob change bad value", "```lab id=l\nworkers: 4\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [10]\nseconds: 1\nat: [500ms:WAIT_MS=20000]\n```\n", []string{
			`a.md:18: lab "l": at: knob change 500ms:WAIT_MS=20000: 20000 is not allowed: want 0 to 10000`,
		}},
		{"knob change form", "```lab id=l\nworkers: 4\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [10]\nseconds: 1\nat: [WAIT_MS=20]\n```\n", []string{
			`a.md:18: lab "l": at: knob change "WAIT_MS=20" is not allowed: want TIME:KNOB=VALUE, e.g. 30s:WAIT_MS=2000 (TIME from the window's start, such as 30s or 1.5s)`,
		}},
		// A simulated preset's changes are the simulator's to make: it does
		// not model BACKLOG.
		{"simulated backlog change", "```lab id=l\nworkers: 4\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [10]\nseconds: 1\nat: [500ms:BACKLOG=16]\nsimulated: true\n```\n", []string{
			`a.md:18: lab "l": at: knob change 500ms:BACKLOG=16 is not simulated: BACKLOG is the kernel's accept queue, and the simulator models the lab's door only; run the lab to change it`,
		}},
		// A preset missing a knob is reported missing, not also out of range.
		{"missing knob", "```lab id=l\nworkers: 1\nspin_ms: 2\nwait_ms: 18\ncpus: 1\nrates: [10]\nseconds: 1\n```\n", []string{
			`a.md:10: lab "l": limit is missing: a lab preset gives workers, spin_ms, wait_ms, limit, cpus, seconds, and rates (open loop) or closed (closed loop)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeDir(t, map[string]string{"a.md": lessonHead("a", 1) + tt.body})
			_, err := lessons.LoadWith(os.DirFS(dir), LoadOptions())
			if err == nil || err.Error() != strings.Join(tt.want, "\n") {
				t.Errorf("errors:\n got: %v\nwant: %s", err, strings.Join(tt.want, "\n"))
			}
		})
	}
	// The embedded course passes.
	if _, err := lessons.LoadWith(lessons.Content(), LoadOptions()); err != nil {
		t.Errorf("the embedded course does not load with CheckLab: %v", err)
	}
}

// Every preset of the course is measured within the drain wait every
// measurement uses: the backlog each window but the last leaves (estimated
// from the lab's ceiling) drains before the next window is due, so the
// recorder and a learner's run both measure the preset whole.
func TestCoursePresetsDrain(t *testing.T) {
	c, err := lessons.LoadWith(lessons.Content(), LoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range c.Lessons {
		for _, b := range l.Blocks() {
			lab, ok := b.(*lessons.Lab)
			if !ok {
				continue
			}
			for i, r := range lab.Rates[:max(len(lab.Rates)-1, 0)] {
				one := *lab
				one.Rates = []float64{r}
				if d := time.Duration(one.DrainSeconds(1) * float64(time.Second)); d >= loadrun.DefaultDrainWait {
					t.Errorf("%s: preset %s: window %d (%g a second) leaves about %v to drain, no less than the drain wait (%v)", l.File, lab.ID, i+1, r, d, loadrun.DefaultDrainWait)
				}
			}
		}
	}
}

func TestCheckRows(t *testing.T) {
	ok := result.Row{Window: 0, Offered: 10, Sent: 10, OK: 10}
	tests := []struct {
		name string
		rows []result.Row
		want string // "" = accepted
		warn string // expected on the log
	}{
		// Every request accounted for: accepted.
		{"balanced", []result.Row{ok}, "", ""},
		// A lost request is a generator bug: refused, naming the window.
		{"lost", []result.Row{ok, {Window: 1, Sent: 10, OK: 8, Gaveup: 1, Lost: 1}},
			"window 2 lost 1 request(s) (sent 10, but ok 8 + refused 0 + gaveup 1 + error 0 account for fewer): a load generator bug; the table was not written", ""},
		// A window that began on a lab still busy with the last one is not clean.
		{"not drained", []result.Row{{Window: 0, Sent: 5, OK: 5, Note: "lab had not drained after 10s (queued 3, in service 1)"}},
			"window 1: lab had not drained after 10s (queued 3, in service 1), so it started with old requests in the lab", ""},
		// Arrivals the generator could not send are counted and warned about.
		{"not sent", []result.Row{{Window: 0, Sent: 9, OK: 9, NotSent: 1}}, "", "window 1: 1 arrival(s) not sent"},
		// No rows at all is not a table.
		{"no rows", nil, "the sweep produced no rows", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			err := checkRows(tt.rows, &log)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("checkRows = %v, want accepted", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("checkRows = %v, want an error containing %q", err, tt.want)
			}
			if !strings.Contains(log.String(), tt.warn) {
				t.Errorf("log %q lacks %q", log.String(), tt.warn)
			}
		})
	}
}

// The one mapping from a lab block: its knobs, and one window per rate or
// one window of its closed-loop clients.
func TestPreset(t *testing.T) {
	open := lessons.Lab{Workers: 4, SpinMS: 2, WaitMS: 18, Limit: 9, CPUs: 1, Rates: []float64{40, 80}, Seconds: 5, Seed: 3, RNG: "python",
		TimeoutMS: 500, StallEvery: 10, StallMS: 50, Backlog: 16}
	p := Preset(&open)
	want := measure.Preset{Config: labsvc.Config{Workers: 4, SpinMS: 2, WaitMS: 18, Limit: 9, CPUs: 1, StallEvery: 10, StallMS: 50, Backlog: 16},
		Rates: []float64{40, 80}, Seconds: 5, Seed: 3, RNG: "python", Mode: measure.ModeOpen, TimeoutMS: 500}
	if p.Config != want.Config || !slices.Equal(p.Rates, want.Rates) || p.Clients != nil || p.Seconds != 5 || p.Seed != 3 || p.RNG != "python" || p.Mode != measure.ModeOpen || p.TimeoutMS != 500 {
		t.Errorf("Preset(open) = %+v, want %+v", p, want)
	}
	if sw := p.Sweep(); !slices.Equal(sw.Rates, []float64{40, 80}) || sw.Clients != nil || sw.Seed != 3 || sw.RNG != loadrun.Python {
		t.Errorf("its sweep = %+v", sw)
	}
	// The door's policy reaches the lab's knobs.
	withPolicy := open
	withPolicy.Limit, withPolicy.Policy = 0, "aimd,backoff=0.5"
	if p := Preset(&withPolicy); p.Policy != "aimd,backoff=0.5" || p.Validate() != nil {
		t.Errorf("Preset(with a policy) = %+v (%v), want POLICY=aimd,backoff=0.5", p.Config, p.Validate())
	}
	// A bad release and a client of 10 workers reach the preset and its
	// sweep.
	release := open
	release.Limit, release.MaxInFlight, release.At = 0, 10, []string{"2s:WAIT_MS=100", "4s:POLICY=aimd"}
	if p := Preset(&release); p.MaxInFlight != 10 || len(p.At) != 2 || p.At[0].String() != "2s:WAIT_MS=100" || p.At[1].Value != "aimd" ||
		p.Sweep().ClientWorkers != 10 || len(p.Sweep().Changes) != 2 || p.Validate() != nil {
		t.Errorf("Preset(with at and max_inflight) = max_inflight %d, at %v (%v)", p.MaxInFlight, p.At, p.Validate())
	}
	// A retrying client and the classes reach the preset and its sweep.
	retrying := open
	retrying.Retry, retrying.Critical, retrying.Sheddable = "retries=3,backoff=jitter", 0.2, 0.3
	if p := Preset(&retrying); p.Retry != "retries=3,backoff=jitter" || p.Sweep().Retry.Retries != 3 || p.Sweep().Critical != 0.2 || p.Sweep().Sheddable != 0.3 || p.Validate() != nil {
		t.Errorf("Preset(with retry and classes) = retry %q, critical %g, sheddable %g (%v)", p.Retry, p.Critical, p.Sheddable, p.Validate())
	}
	closed := lessons.Lab{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1, Seconds: 1, Closed: 2, Accept: lessons.AcceptWorkers}
	p = Preset(&closed)
	if p.Mode != measure.ModeClosed || !slices.Equal(p.Clients, []int{2}) || p.Rates != nil || p.Accept != labsvc.AcceptWorkers || p.Windows() != 1 {
		t.Errorf("Preset(closed) = %+v, want one window of 2 clients, the workers accepting", p)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("Preset(closed) does not validate: %v", err)
	}
	// A preset without a timeout has the generator's, as the lessons say
	// (their marks read it).
	if got, want := Preset(&lessons.Lab{}).Timeout(), time.Duration(lessons.DefaultTimeoutMS)*time.Millisecond; got != want || got != result.DefaultTimeout {
		t.Errorf("the default timeout is %v; lessons say %v, loadrun %v", got, want, result.DefaultTimeout)
	}
}

// TestRecordRefusesBusyMachine: a preset during which other programs
// took more than the threshold is not written, unless the recording is
// told to go on anyway (--busy), and then its source says BUSY; a busy
// start with --busy says so too.
func TestRecordRefusesBusyMachine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real lab and load children")
	}
	orig := lessonHead("a", 1) + labBody("a")
	dir := writeDir(t, map[string]string{"a.md": orig})
	var log bytes.Buffer
	cfg := testConfig(t, dir, &log)
	cfg.Others = func([]int) (float64, bool) { return 1.5, true }
	if _, err := recordOrSkip(t, cfg); err == nil || !strings.Contains(err.Error(), "other programs used 1.50 cores while it ran, more than 0.3 a core") {
		t.Fatalf("Record with busy neighbours = %v, want the table refused", err)
	}
	if readFile(t, dir, "a.md") != orig {
		t.Fatal("a refused table was written")
	}
	cfg.Busy = true
	cfg.LoadAvg = func() string { return "9.00 9.00 9.00" }
	if _, err := recordOrSkip(t, cfg); err != nil {
		t.Fatalf("Record --busy: %v\nlog:\n%s", err, log.String())
	}
	src := readFile(t, dir, "a.md")
	// Each on its own: on one processor the source also says, between
	// them, that the generator shared the lab's.
	if !strings.Contains(src, "other programs used 1.50 cores; ") || !strings.Contains(src, "; BUSY: recorded with the 1-minute load average 9.00 above 0.3 a core") {
		t.Errorf("a busy recording does not say so:\n%s", src)
	}
}

// TestOthersMeter reads the real /proc: over a stretch in which this
// process spins one core, the meter must not count that spin as others'.
func TestOthersMeter(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("SKIPPED LOUDLY: no /proc/stat here, so the recorder cannot measure other programs and says so")
	}
	m := newOthersMeter()
	pids := []int{os.Getpid()} // stands in for the children
	if _, ok := m(pids); ok {
		t.Error("the first call has nothing to compare with, yet says it knows")
	}
	busyUntil := time.Now().Add(300 * time.Millisecond)
	x := 0
	for time.Now().Before(busyUntil) {
		x++
	}
	others, ok := m(pids)
	if !ok || others < 0 {
		t.Fatalf("meter = %v, %v after spinning (%d)", others, ok, x)
	}
	// This process spun a whole core; what is left is other programs
	// (they may be busy on a shared machine, but cannot exceed the cores).
	if max := float64(runtime.NumCPU()); others > max {
		t.Errorf("others = %.2f cores, more than the machine has (%g)", others, max)
	}
	// Other pids start counting again.
	if _, ok := m([]int{os.Getpid(), os.Getppid()}); ok {
		t.Error("a call with new pids has nothing to compare with, yet says it knows")
	}
	t.Logf("other programs used %.2f cores while this one spun (load: %s)", others, readLoadAvg())
}

// TestRecordCaption checks the caption a recording writes says what sets
// one preset apart from its neighbours: one client in the singular, and
// who accepts, with the backlog.
func TestRecordCaption(t *testing.T) {
	base := lessons.Lab{Workers: 1, SpinMS: 2, WaitMS: 19, CPUs: 1, Seconds: 8, Rates: []float64{40, 60}}
	closed := base
	closed.Rates, closed.Closed = nil, 1
	accept := base
	accept.Accept, accept.Backlog = lessons.AcceptWorkers, 8
	backlog := base
	backlog.Backlog = 16
	retrying := base
	retrying.Retry, retrying.Critical, retrying.Sheddable = "retries=3,budget=0.1", 0.2, 0.3
	_ = retrying.Policy.UnmarshalText([]byte("queue,classes=on"))
	for _, c := range []struct {
		lab  lessons.Lab
		want string
	}{
		{base, "Recorded: 1 worker, 2 ms spin + 19 ms wait, no admission limit, 1 CPU; open loop at 40, 60 a second, 8 s windows, caller timeout 2 s."},
		{closed, "Recorded: 1 worker, 2 ms spin + 19 ms wait, no admission limit, 1 CPU; closed loop, 1 client, one 8 s window, caller timeout 2 s."},
		{accept, "Recorded: 1 worker, 2 ms spin + 19 ms wait, no admission limit, workers accepting from the kernel's queue (backlog 8), 1 CPU; open loop at 40, 60 a second, 8 s windows, caller timeout 2 s."},
		{backlog, "Recorded: 1 worker, 2 ms spin + 19 ms wait, no admission limit, listen backlog 16, 1 CPU; open loop at 40, 60 a second, 8 s windows, caller timeout 2 s."},
		{retrying, "Recorded: 1 worker, 2 ms spin + 19 ms wait, no admission limit, admission policy queue,classes=on, 1 CPU; open loop at 40, 60 a second, 8 s windows, caller timeout 2 s, client retry retries=3,budget=0.1, 20% critical and 30% sheddable."},
	} {
		if got := recordCaption(&c.lab); got != c.want {
			t.Errorf("caption\n got %q\nwant %q", got, c.want)
		}
	}
}

// TestRecordSimulatedPreset records a simulated preset (one FIFO server
// with 10 ms of service and a 500 ms stall on every 200th request, CPython's
// arrivals from seed 21) on a machine said to be busy: no lab or load child
// starts, the table is the simulator's rows exactly, its source says it was
// simulated (rng, seed, build, session) and names no machine or load, and
// it loads.
func TestRecordSimulatedPreset(t *testing.T) {
	body := "```lab id=s\nworkers: 1\nspin_ms: 0\nwait_ms: 10\nlimit: 0\ncpus: 1\nstall_every: 200\nstall_ms: 500\nrates: [60, 80]\nseconds: 30\nseed: 21\nrng: python\ntimeout_ms: 60000\nsimulated: true\n```\n\nProse.\n"
	dir := writeDir(t, map[string]string{"s.md": lessonHead("s", 1) + body})
	var log bytes.Buffer
	cfg := testConfig(t, dir, &log)
	cfg.Children = measure.Config{} // no child may start
	cfg.LoadAvg = func() string { return "9.00 9.00 9.00" }
	cfg.Others = func([]int) (float64, bool) { t.Error("a simulated preset measured other programs"); return 0, false }
	recs, err := recordOrSkip(t, cfg)
	if err != nil {
		t.Fatalf("Record: %v\nlog:\n%s", err, log.String())
	}
	c, err := lessons.LoadWith(os.DirFS(dir), LoadOptions())
	if err != nil {
		t.Fatalf("the recorded file does not load: %v", err)
	}
	b, _, _ := c.Block("s-result")
	tb, _ := b.(*lessons.Table)
	if tb == nil || len(recs) != 1 {
		t.Fatalf("no table recorded for s (%d recorded)", len(recs))
	}
	want := "server lessons record --lab s; simulated by package sim, no lab or generator ran; rng python; seed 21; build 0123456789ab+dirty; session 20261130T120000Z; 2026-11-30 12:00 UTC"
	if tb.Source != want {
		t.Errorf("source = %q, want %q", tb.Source, want)
	}
	if !strings.HasPrefix(tb.Caption, "Simulated, not measured: 1 worker") {
		t.Errorf("caption = %q, want it to say the table is simulated", tb.Caption)
	}
	lab, _ := c.Lessons[0].Block("s")
	rows, err := SimulatePreset(context.Background(), lab.(*lessons.Lab))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if got, want := tb.Rows[i], RowCells(r, lab.(*lessons.Lab).Columns()); !slices.Equal(got, want) {
			t.Errorf("row %d = %v, the simulator's %v", i+1, got, want)
		}
	}
	// The published experiment's 60 a second window (CPython agrees,
	// package sim's TestPublishedExperimentAgainstPython): every arrival
	// served, none given up.
	if tb.Rows[0][1] != "1774" || tb.Rows[0][2] != "1774" || tb.Rows[0][4] != "0" {
		t.Errorf("60 a second: sent %s, ok %s, gaveup %s; want 1774 sent, all ok", tb.Rows[0][1], tb.Rows[0][2], tb.Rows[0][4])
	}
}

// TestContentSimulatedTablesReproduce: a simulated preset's recorded table
// is what the simulator gives for it now, cell for cell, so a change to the
// simulator that moves a published number shows here (such tables are the
// same on any machine, and stand apart from the one-session rule).
func TestContentSimulatedTablesReproduce(t *testing.T) {
	opts := LoadOptions()
	opts.Pending = true
	c, err := lessons.LoadWith(lessons.Content(), opts)
	if err != nil {
		t.Fatalf("embedded content does not load: %v", err)
	}
	n := 0
	for _, l := range c.Lessons {
		for _, b := range l.Blocks() {
			lab, ok := b.(*lessons.Lab)
			if !ok || !lab.Simulated {
				continue
			}
			var tb *lessons.Table
			for _, o := range l.Blocks() {
				if t, ok := o.(*lessons.Table); ok && t.Preset == lab.ID && !t.TimeTable() {
					tb = t
				}
			}
			if tb == nil || tb.Pending {
				continue // lessons' TestContentPresetsAreRecordedTogether reports it
			}
			n++
			rows, err := SimulatePreset(context.Background(), lab)
			if err != nil {
				t.Fatalf("%s: preset %s: %v", l.File, lab.ID, err)
			}
			if len(rows) != len(tb.Rows) {
				t.Errorf("%s: table %s has %d rows, the simulator %d", l.File, tb.ID, len(tb.Rows), len(rows))
				continue
			}
			for i, r := range rows {
				if got, want := tb.Rows[i], RowCells(r, lab.Columns()); !slices.Equal(got, want) {
					t.Errorf("%s: table %s row %d = %v, the simulator now gives %v: record it again (server lessons record --lab %s)", l.File, tb.ID, i+1, got, want, lab.ID)
				}
			}
		}
	}
	if n == 0 {
		t.Error("no simulated table in the course: the published experiment's tables are simulated")
	}
	t.Logf("%d simulated tables reproduced", n)
}

// A window with more than one send in twenty late is named; one at the
// share or under it is not.
func TestLateWindow(t *testing.T) {
	ok := result.Row{Sent: 100, Late: 5}
	if got := lateWindow([]result.Row{ok, ok}); got != "" {
		t.Errorf("5 of 100 late: %q, want none named", got)
	}
	got := lateWindow([]result.Row{ok, {Sent: 100, Late: 6}})
	if !strings.Contains(got, "window 2 sent 6 of 100") {
		t.Errorf("6 of 100 late in window 2: %q, want it named", got)
	}
}
