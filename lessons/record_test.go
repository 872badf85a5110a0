package lessons

import (
	"bytes"
	"capacitylab/affinity"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
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
)

// labChildEnv makes this test binary serve as its own lab child, so the
// recorder's tests start real lab processes without building a binary.
const labChildEnv = "LESSONS_TEST_LAB_CHILD"

func TestMain(m *testing.M) {
	labsvc.ChildMain(labChildEnv)
	os.Exit(m.Run())
}

// recordDir writes files into a fresh directory and returns it.
func recordDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// testRecordConfig records into dir with real lab children (this binary),
// a fixed clock, a fixed load average and other programs said to use 0.01
// cores (so tests on a shared machine do not refuse for its neighbours;
// TestRecordRefusesBusyMachine and TestOthersMeter cover the real checks).
func testRecordConfig(t *testing.T, dir string, log *bytes.Buffer) RecordConfig {
	t.Helper()
	cc, err := labsvc.SelfCommand(labChildEnv)
	if err != nil {
		t.Fatal(err)
	}
	return RecordConfig{
		Dir:     dir,
		Child:   cc,
		Log:     log,
		Now:     func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) },
		LoadAvg: func() string { return "0.10 0.20 0.30" },
		Others:  func(int) (float64, bool) { return 0.01, true },
		Build:   "0123456789ab+dirty",
	}
}

// tinyLesson is a lesson with an open-loop preset (one worker, one rate of
// 10 a second, 1 s) and a closed-loop preset (2 clients, 1 s, the worker
// accepting for itself from a backlog of 16), with prose after each.
func tinyLesson() string {
	return head("a", 1) + goodBody("a") + "\nProse after the open lab.\n\n" +
		"```lab id=a-closed\nworkers: 1\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nseconds: 1\nclosed: 2\nbacklog: 16\naccept: workers\n```\n\nProse after the closed lab.\n"
}

// tableBlocks returns the table fences in src.
func tableBlocks(src string) []string {
	return regexp.MustCompile("(?m)^```table .*$").FindAllString(src, -1)
}

// TestRecordEndToEnd records a tiny lesson against real lab children, then
// checks that the tables validate, that nothing else changed, that
// recording again replaces instead of duplicating (keeping an author's
// caption), and that a number edited by hand is caught with file and line.
func TestRecordEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real lab children for about 5 s")
	}
	orig := tinyLesson()
	dir := recordDir(t, map[string]string{"a.md": orig})
	var log bytes.Buffer
	cfg := testRecordConfig(t, dir, &log)
	cpusBefore, err := affinity.ProcessCPUs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	recs, err := Record(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Record: %v\nlog:\n%s", err, log.String())
	}
	// Each preset kept this process (the generator) off the lab's
	// processors, said so, and put the affinity back afterwards.
	lg := log.String()
	if n := strings.Count(lg, "  generator pinned") + strings.Count(lg, "  generator not pinned") + strings.Count(lg, "generator shares the lab's"); n != 2 {
		t.Errorf("the log says where the generator ran %d times, want once per preset (2):\n%s", n, log.String())
	}
	if now, err := affinity.ProcessCPUs(os.Getpid()); err != nil || !slices.Equal(now, cpusBefore) {
		t.Errorf("after Record this process may use %v (%v), want %v as before", now, err, cpusBefore)
	}
	if len(recs) != 2 || recs[0].Table != "a-lab-result" || recs[1].Table != "a-closed-result" {
		t.Fatalf("recorded %+v, want tables a-lab-result and a-closed-result", recs)
	}
	for _, r := range recs {
		if len(r.Rows) != 1 || r.Rows[0].Sent == 0 || r.Rows[0].Lost != 0 || r.Rows[0].OK+r.Rows[0].Refused+r.Rows[0].Gaveup+r.Rows[0].Error != r.Rows[0].Sent {
			t.Errorf("%s: rows %+v: want one window that sent requests and accounted for each", r.Lab, r.Rows)
		}
	}
	if !strings.Contains(log.String(), "[2/2] a.md a-closed") || !strings.Contains(log.String(), "wrote table a-closed-result") {
		t.Errorf("progress log lacks the preset lines:\n%s", log.String())
	}
	c, err := Load(os.DirFS(dir))
	if err != nil {
		t.Fatalf("recorded content does not validate: %v", err)
	}
	b, _, _ := c.Block("a-lab-result")
	tb := b.(*Table)
	if tb.Preset != "a-lab" || len(tb.Rows) != 1 || strings.Join(tb.Columns, " ") != strings.Join(RecordColumns(labsvc.Config{}), " ") {
		t.Errorf("table = %+v", tb)
	}
	// A lab whose worker accepts for itself has the kernel's queue beside
	// its own: backlogged, after queued. One caller waits there while the
	// other is served, two when the one served reconnects before the
	// worker, still closing its connection, is back at accept.
	b, _, _ = c.Block("a-closed-result")
	if tb := b.(*Table); strings.Join(tb.Columns, " ") != "offered sent ok refused gaveup error ok_per_sec p50_ms p99_ms done lost queued backlogged mean_ms p95_ms n late send_lag_p99_ms lab_service_ms lab_cpu_ms" ||
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
	if s := cb0.(*Table).Source; !strings.Contains(s, "session 20261130T120000Z") {
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
	if ct := cb.(*Table); !strings.Contains(ct.Caption, "closed loop, 2 clients") {
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
	if _, err := Record(context.Background(), cfg); err != nil {
		t.Fatalf("second Record: %v\nlog:\n%s", err, log.String())
	}
	src2 := readFile(t, dir, "a.md")
	if got := tableBlocks(src2); len(got) != 2 || got[0] != "```table id=a-lab-result preset=a-lab" {
		t.Errorf("table fences after recording again = %q, want the same two", got)
	}
	if !strings.Contains(src2, "caption: \"An author's caption: 1 worker") {
		t.Error("recording again lost the author's caption")
	}
	if _, err := Load(os.DirFS(dir)); err != nil {
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
	_, err = Load(os.DirFS(dir))
	want := "a.md:" + strconv.Itoa(line) + `: table "a-lab-result": fingerprint does not match`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Load after a hand edit = %v, want an error containing %q", err, want)
	}
}

// TestRecordTrialIsMarked records with a shortened window: the table says
// TRIAL and does not validate until recorded at full length.
func TestRecordTrialIsMarked(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real lab child")
	}
	dir := recordDir(t, map[string]string{"a.md": head("a", 1) + goodBody("a")})
	var log bytes.Buffer
	cfg := testRecordConfig(t, dir, &log)
	cfg.SecondsScale = 0.5
	if _, err := Record(context.Background(), cfg); err != nil {
		t.Fatalf("Record: %v\nlog:\n%s", err, log.String())
	}
	src := readFile(t, dir, "a.md")
	if !strings.Contains(src, "TRIAL: windows scaled by 0.5 (0.5 s instead of 1 s)") {
		t.Errorf("trial table does not say so:\n%s", src)
	}
	if _, err := Load(os.DirFS(dir)); err == nil || !strings.Contains(err.Error(), "--seconds-scale trial") {
		t.Errorf("Load of a trial table = %v, want a fingerprint mismatch naming trials", err)
	}
}

// TestRecordOneOfMany records one preset (--lab) in a course where another
// lesson's table is stale: the recording succeeds, the other file is left
// alone, and the log says it still does not validate.
func TestRecordOneOfMany(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real lab child")
	}
	stale := head("b", 2) + goodBody("b") + "```table id=b-t preset=b-lab\ncaption: c\ncolumns: [x]\nrows: [[\"1\"]]\nsource: typed\n```\n"
	dir := recordDir(t, map[string]string{"a.md": head("a", 1) + goodBody("a"), "b.md": stale})
	var log bytes.Buffer
	cfg := testRecordConfig(t, dir, &log)
	cfg.Lab = "a-lab"
	recs, err := Record(context.Background(), cfg)
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
	good := head("a", 1) + goodBody("a")
	tests := []struct {
		name  string
		files map[string]string
		cfg   func(*RecordConfig)
		want  string
	}{
		// An unknown lesson lists the slugs there are.
		{"unknown lesson", map[string]string{"a.md": good}, func(c *RecordConfig) { c.Lesson = "nope" }, `no lesson with slug "nope"`},
		// An unknown preset is named.
		{"unknown lab", map[string]string{"a.md": good}, func(c *RecordConfig) { c.Lab = "nope" }, `no lab preset "nope" in the course`},
		// A scale above 1 would record longer windows than the preset says.
		{"scale above 1", map[string]string{"a.md": good}, func(c *RecordConfig) { c.SecondsScale = 2 }, "seconds scale 2 is not allowed"},
		// A busy machine: refused before anything runs, saying how busy.
		{"busy machine", map[string]string{"a.md": good}, func(c *RecordConfig) { c.LoadAvg = func() string { return "5.00 4.00 3.00" } },
			"the machine is busy: load average 5.00 4.00 3.00 on "},
		// A threshold that cannot be met is a mistake.
		{"negative max load", map[string]string{"a.md": good}, func(c *RecordConfig) { c.MaxLoad = -1 }, "max load -1 is not allowed"},
		// Content that does not validate (other than fingerprints) is not run.
		{"broken content", map[string]string{"a.md": strings.Replace(good, "workers: 1", "workers: 0", 1)}, func(*RecordConfig) {},
			`does not validate, so its presets cannot be trusted; fix these first:` + "\n" + `a.md:21: lab "a-lab": workers 0 is not allowed`},
		// Two tables for one preset: the recorder will not guess which to keep.
		{"two tables for a preset", map[string]string{"a.md": good +
			"```table id=t1 preset=a-lab\ncaption: c\ncolumns: [x]\nrows: [[\"1\"]]\nsource: s\n```\n" +
			"```table id=t2 preset=a-lab\ncaption: c\ncolumns: [x]\nrows: [[\"1\"]]\nsource: s\n```\n"},
			func(*RecordConfig) {}, `tables "t1" (line 29) and "t2" (line 35) both name preset a-lab: keep one`},
		// A fixtures-only directory has nothing to record by default.
		{"fixtures only", map[string]string{"a.md": fixtureHead("a", 1) + goodBody("a")}, func(*RecordConfig) {}, `has no lab presets to record (lessons in part "Fixtures"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := recordDir(t, tt.files)
			var log bytes.Buffer
			cfg := testRecordConfig(t, dir, &log)
			tt.cfg(&cfg)
			recs, err := Record(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Record = %v, want an error containing %q", err, tt.want)
			}
			if len(recs) != 0 {
				t.Errorf("recorded %d tables despite the error", len(recs))
			}
			for name, body := range tt.files {
				if got := readFile(t, dir, name); got != body {
					t.Errorf("%s changed although nothing was recorded", name)
				}
			}
		})
	}
}

// TestRecordRefusesBusyMachine: a preset during which other programs
// took more than the threshold is not written, unless the recording is
// told to go on anyway (--busy), and then its source says BUSY; a busy
// start with --busy says so too.
func TestRecordRefusesBusyMachine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real lab children")
	}
	orig := head("a", 1) + goodBody("a")
	dir := recordDir(t, map[string]string{"a.md": orig})
	var log bytes.Buffer
	cfg := testRecordConfig(t, dir, &log)
	cfg.Others = func(int) (float64, bool) { return 1.5, true }
	if _, err := Record(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "other programs used 1.50 cores while it ran, more than 0.3 a core") {
		t.Fatalf("Record with busy neighbours = %v, want the table refused", err)
	}
	if readFile(t, dir, "a.md") != orig {
		t.Fatal("a refused table was written")
	}
	cfg.Busy = true
	cfg.LoadAvg = func() string { return "9.00 9.00 9.00" }
	if _, err := Record(context.Background(), cfg); err != nil {
		t.Fatalf("Record --busy: %v\nlog:\n%s", err, log.String())
	}
	src := readFile(t, dir, "a.md")
	if !strings.Contains(src, "other programs used 1.50 cores; BUSY: recorded with the 1-minute load average 9.00 above 0.3 a core") {
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
	pid := os.Getpid() // stands in for the lab child
	if _, ok := m(pid); ok {
		t.Error("the first call has nothing to compare with, yet says it knows")
	}
	busyUntil := time.Now().Add(300 * time.Millisecond)
	x := 0
	for time.Now().Before(busyUntil) {
		x++
	}
	others, ok := m(pid)
	if !ok || others < 0 {
		t.Fatalf("meter = %v, %v after spinning (%d)", others, ok, x)
	}
	// This process spun a whole core; what is left is other programs
	// (they may be busy on a shared machine, but cannot exceed the cores).
	if max := float64(runtime.NumCPU()); others > max {
		t.Errorf("others = %.2f cores, more than the machine has (%g)", others, max)
	}
	t.Logf("other programs used %.2f cores while this one spun (load: %s)", others, readLoadAvg())
}

// TestWriteTablePlacement checks where writeTable puts a table, with rows
// given (no lab is run): after the lab block, in place of an old table
// wherever it stands, and with the file's own line ends.
func TestWriteTablePlacement(t *testing.T) {
	lab := goodLab
	lab.ID = "a-lab"
	cells := [][]string{RowCells(loadrun.Row{Offered: 10, Sent: 10, OK: 10, OKPerSec: 10, P50MS: 20.1, P99MS: 21, Done: 10, Queued: 1, MeanMS: 20.2,
		P95MS: 20.9, N: 10, SendLagP99MS: 0.05, LabServiceMS: 20.05, LabCPUMS: 25}, lab.Config())}
	oldTable := "```table id=old preset=a-lab\ncaption: Old.\ncolumns: [x]\nrows: [[\"1\"]]\nsource: s\n```\n"
	tests := []struct {
		name    string
		src     string
		wantRe  string // the whole file after writing, as a regexp over the rewritten file
		wantID  string
		wantErr string
	}{
		// A pending table is replaced where it stands, keeping its id.
		{"replace pending", head("a", 1) + goodBody("a") + "\nMiddle.\n\n```table id=old preset=a-lab\npending: true\n```\n\nEnd.\n",
			"(?s)^" + regexp.QuoteMeta(head("a", 1)+goodBody("a")+"\nMiddle.\n\n") + "```table id=old preset=a-lab\ncaption: [^`]*\n```\n\nEnd.\n$", "old", ""},
		// No table yet: inserted after the lab block, with a blank line before it.
		{"insert after lab", head("a", 1) + goodBody("a") + "\nAfter.\n",
			"(?s)^" + regexp.QuoteMeta(head("a", 1)+goodBody("a")) + "\n```table id=a-lab-result preset=a-lab\n.*\n```\n\nAfter.\n$", "a-lab-result", ""},
		// The lab block ends the file without a line end.
		{"lab at end without newline", head("a", 1) + strings.TrimSuffix(goodBody("a"), "\n"),
			"(?s)^" + regexp.QuoteMeta(head("a", 1)+goodBody("a")) + "\n```table id=a-lab-result preset=a-lab\n.*\n```\n$", "a-lab-result", ""},
		// An old table further down is replaced where it stands, keeping its id.
		{"replace in place", head("a", 1) + goodBody("a") + "\nMiddle.\n\n" + oldTable + "\nEnd.\n",
			"(?s)^" + regexp.QuoteMeta(head("a", 1)+goodBody("a")+"\nMiddle.\n\n") + "```table id=old preset=a-lab\n[^`]*\n```\n\nEnd.\n$", "old", ""},
		// CRLF files get CRLF table lines.
		{"crlf", strings.ReplaceAll(head("a", 1)+goodBody("a"), "\n", "\r\n"),
			"(?s)^" + regexp.QuoteMeta(strings.ReplaceAll(head("a", 1)+goodBody("a"), "\n", "\r\n")) + "\r\n```table id=a-lab-result preset=a-lab\r\n(.*\r\n)+```\r\n$", "a-lab-result", ""},
		// The preset on disk differs from the one that ran: nothing is written.
		{"preset changed", head("a", 1) + strings.Replace(goodBody("a"), "seconds: 1", "seconds: 2", 1), "", "", "the preset changed"},
		// The id the new table would take is used by another block.
		{"id taken", head("a", 1) + goodBody("a") + "```check id=a-lab-result\nprompt: Q?\noptions:\n  - text: A\n    correct: true\n    explain: x\n  - text: B\n    explain: y\n```\n", "", "", `a block with id "a-lab-result" already exists`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := recordDir(t, map[string]string{"a.md": tt.src})
			rec, err := writeTable(dir, "a.md", &lab, &lab, cells, "src line")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("writeTable = %v, want an error containing %q", err, tt.wantErr)
				}
				if readFile(t, dir, "a.md") != tt.src {
					t.Error("the file changed although writeTable failed")
				}
				return
			}
			if err != nil {
				t.Fatalf("writeTable: %v", err)
			}
			got := readFile(t, dir, "a.md")
			if !regexp.MustCompile(tt.wantRe).MatchString(got) {
				t.Errorf("file after writing:\n%s\nwant it to match %s", got, tt.wantRe)
			}
			if rec.Table != tt.wantID {
				t.Errorf("table id = %q, want %q", rec.Table, tt.wantID)
			}
			if l := strings.Split(strings.ReplaceAll(got, "\r\n", "\n"), "\n")[rec.Line-1]; !strings.HasPrefix(l, "```table id="+tt.wantID) {
				t.Errorf("reported line %d holds %q, want the table fence", rec.Line, l)
			}
			if _, err := Load(os.DirFS(dir)); err != nil {
				t.Errorf("written file does not validate: %v", err)
			}
		})
	}
}

// TestContentTablesAreRecorded is the rule "no hand-typed numbers" over
// the embedded course: every table outside the fixtures names a lab preset
// of its own lesson and carries a fingerprint that matches that preset and
// its rows (Load checks the match; this test checks that nothing slipped
// through as a fixture).
func TestContentTablesAreRecorded(t *testing.T) {
	c, err := Load(Content())
	if err != nil {
		t.Fatalf("embedded content does not load: %v", err)
	}
	for _, l := range c.Lessons {
		for _, b := range l.Blocks() {
			tb, ok := b.(*Table)
			if !ok {
				continue
			}
			if l.Part == FixturePart {
				if !tb.Fixture {
					t.Errorf("%s:%d: fixture lesson table %s is not marked fixture: true", l.File, tb.Line, tb.ID)
				}
				continue
			}
			lab, ok := l.Block(tb.Preset)
			if _, isLab := lab.(*Lab); !ok || !isLab {
				t.Errorf("%s:%d: table %s names preset %q, which is not a lab block of %s", l.File, tb.Line, tb.ID, tb.Preset, l.Slug)
				continue
			}
			if tb.Fixture || Fingerprint(lab.(*Lab), tb.Columns, tb.Rows, tb.Source) != tb.Fingerprint {
				t.Errorf("%s:%d: table %s was not recorded from its preset: run server lessons record --lab %s", l.File, tb.Line, tb.ID, tb.Preset)
			}
		}
	}
}

// TestFingerprintCovers checks what the fingerprint depends on: each
// change of a preset setting, a column, a cell or the source changes it.
func TestFingerprintCovers(t *testing.T) {
	base := goodLab
	cols := []string{"offered", "ok"}
	rows := [][]string{{"10", "10"}}
	want := Fingerprint(&base, cols, rows, "s")
	if !validFingerprint(want) {
		t.Fatalf("fingerprint %q is not 64 hex digits", want)
	}
	tests := []struct {
		name string
		lab  func(*Lab)
		cols []string
		rows [][]string
		src  string
	}{
		// Each knob of the lab.
		{"workers", func(l *Lab) { l.Workers = 2 }, cols, rows, "s"},
		{"spin", func(l *Lab) { l.SpinMS = 3 }, cols, rows, "s"},
		{"wait", func(l *Lab) { l.WaitMS = 19 }, cols, rows, "s"},
		{"limit", func(l *Lab) { l.Limit = 5 }, cols, rows, "s"},
		{"cpus", func(l *Lab) { l.CPUs = 2 }, cols, rows, "s"},
		{"backlog", func(l *Lab) { l.Backlog = 128 }, cols, rows, "s"},
		{"accept", func(l *Lab) { l.Accept = labsvc.AcceptWorkers }, cols, rows, "s"},
		// Each setting of the sweep.
		{"rates", func(l *Lab) { l.Rates = []float64{10.5} }, cols, rows, "s"},
		{"seconds", func(l *Lab) { l.Seconds = 2 }, cols, rows, "s"},
		{"seed", func(l *Lab) { l.Seed = 1 }, cols, rows, "s"},
		{"closed", func(l *Lab) { l.Closed = 1 }, cols, rows, "s"},
		{"timeout", func(l *Lab) { l.TimeoutMS = 500 }, cols, rows, "s"},
		{"stall every", func(l *Lab) { l.StallEvery = 200 }, cols, rows, "s"},
		{"stall ms", func(l *Lab) { l.StallMS = 500 }, cols, rows, "s"},
		{"rng", func(l *Lab) { l.RNG = "python" }, cols, rows, "s"},
		// The table itself.
		{"column renamed", func(*Lab) {}, []string{"offered", "done"}, rows, "s"},
		{"cell edited", func(*Lab) {}, cols, [][]string{{"10", "11"}}, "s"},
		{"row added", func(*Lab) {}, cols, [][]string{{"10", "10"}, {"20", "20"}}, "s"},
		{"cells moved between rows", func(*Lab) {}, cols, [][]string{{"10"}, {"10"}}, "s"},
		{"source edited", func(*Lab) {}, cols, rows, "s2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := base
			l.Rates = append([]float64(nil), base.Rates...)
			tt.lab(&l)
			if got := Fingerprint(&l, tt.cols, tt.rows, tt.src); got == want {
				t.Errorf("fingerprint unchanged by %s", tt.name)
			}
		})
	}
	// A preset without a stall or an rng is written as before they existed,
	// so the tables recorded then keep their fingerprints.
	if c := canonicalPreset(&base); strings.Contains(c, "stall") || strings.Contains(c, "rng") {
		t.Errorf("canonical preset %q names settings the preset does not give", c)
	}
	// A preset that leaves backlog and accept at their defaults has the
	// form it had before they existed, so tables recorded then still match.
	if got, old := canonicalPreset(&base), "preset workers=1 spin_ms=2 wait_ms=18 limit=0 cpus=1 rates="; !strings.HasPrefix(got, old) || strings.Contains(got, "backlog") || strings.Contains(got, "accept") {
		t.Errorf("canonical form %q, want the old one (no backlog, no accept)", got)
	}
	// The id is not covered: renaming a preset does not change a measurement.
	renamed := base
	renamed.ID = "other"
	if Fingerprint(&renamed, cols, rows, "s") != want {
		t.Error("renaming the preset changed the fingerprint")
	}
}

func TestYAMLQuoteRoundTrips(t *testing.T) {
	for _, s := range []string{`plain`, `with "quotes" and \ backslash`, "tab\tand\nnewline", "ünïcode × 2", "ctrl\x01"} {
		var out struct {
			V string `yaml:"v"`
		}
		p := &problems{file: "x"}
		if _, ok := decodeYAML(p, 1, 1, "test", []byte("v: "+yamlQuote(s)+"\n"), &out); !ok || out.V != s {
			t.Errorf("yamlQuote(%q) read back as %q (problems %v)", s, out.V, p.errs)
		}
	}
}

func TestCheckRows(t *testing.T) {
	ok := loadrun.Row{Window: 0, Offered: 10, Sent: 10, OK: 10}
	tests := []struct {
		name string
		rows []loadrun.Row
		want string // "" = accepted
		warn string // expected on the log
	}{
		// Every request accounted for: accepted.
		{"balanced", []loadrun.Row{ok}, "", ""},
		// A lost request is a generator bug: refused, naming the window.
		{"lost", []loadrun.Row{ok, {Window: 1, Sent: 10, OK: 8, Gaveup: 1, Lost: 1}},
			"window 2 lost 1 request(s) (sent 10, but ok 8 + refused 0 + gaveup 1 + error 0 account for fewer): a load generator bug; the table was not written", ""},
		// A window that began on a lab still busy with the last one is not clean.
		{"not drained", []loadrun.Row{{Window: 0, Sent: 5, OK: 5, Note: "lab had not drained after 30s (queued 3, in service 1)"}},
			"window 1: lab had not drained after 30s (queued 3, in service 1), so it started with old requests in the lab", ""},
		// Arrivals the generator could not send are counted and warned about.
		{"not sent", []loadrun.Row{{Window: 0, Sent: 9, OK: 9, NotSent: 1}}, "", "window 1: 1 arrival(s) not sent"},
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

func TestLoadAverageAtStart(t *testing.T) {
	for _, c := range []struct {
		source string
		want   float64
		ok     bool
	}{
		// As Record writes it.
		{"server lessons record --lab x; seed 1; linux/amd64, 2 cores, go1.26.8; 2026-11-30 11:42 UTC; load average at start 0.12 0.30 0.41", 0.12, true},
		// Where the machine could not say.
		{"server lessons record --lab x; seed 1; load average at start unknown", 0, false},
		// A fixture's source says nothing of it.
		{"Typed by hand as a test fixture; no run produced it.", 0, false},
	} {
		got, ok := (&Table{Source: c.source}).LoadAverageAtStart()
		if got != c.want || ok != c.ok {
			t.Errorf("LoadAverageAtStart(%q) = %v, %v; want %v, %v", c.source, got, ok, c.want, c.ok)
		}
	}
}

// TestRecordCaption checks the caption a recording writes says what sets
// one preset apart from its neighbours: one client in the singular, and
// who accepts, with the backlog.
func TestRecordCaption(t *testing.T) {
	base := Lab{Workers: 1, SpinMS: 2, WaitMS: 19, CPUs: 1, Seconds: 8, Rates: []float64{40, 60}}
	closed := base
	closed.Rates, closed.Closed = nil, 1
	accept := base
	accept.Accept, accept.Backlog = labsvc.AcceptWorkers, 8
	backlog := base
	backlog.Backlog = 16
	for _, c := range []struct {
		lab  Lab
		want string
	}{
		{base, "Recorded: 1 worker, 2 ms spin + 19 ms wait, no admission limit, 1 CPU; open loop at 40, 60 a second, 8 s windows, caller timeout 2 s."},
		{closed, "Recorded: 1 worker, 2 ms spin + 19 ms wait, no admission limit, 1 CPU; closed loop, 1 client, one 8 s window, caller timeout 2 s."},
		{accept, "Recorded: 1 worker, 2 ms spin + 19 ms wait, no admission limit, workers accepting from the kernel's queue (backlog 8), 1 CPU; open loop at 40, 60 a second, 8 s windows, caller timeout 2 s."},
		{backlog, "Recorded: 1 worker, 2 ms spin + 19 ms wait, no admission limit, listen backlog 16, 1 CPU; open loop at 40, 60 a second, 8 s windows, caller timeout 2 s."},
	} {
		if got := recordCaption(&c.lab); got != c.want {
			t.Errorf("caption\n got %q\nwant %q", got, c.want)
		}
	}
}

// TestRecordSimulatedPreset records a simulated preset (one FIFO server
// with 10 ms of service and a 500 ms stall on every 200th request, CPython's
// arrivals from seed 21) on a machine said to be busy: no lab starts, the
// table is the simulator's rows exactly, its source says it was simulated
// (rng, seed, build, session) and names no machine or load, and it loads.
func TestRecordSimulatedPreset(t *testing.T) {
	body := "```lab id=s\nworkers: 1\nspin_ms: 0\nwait_ms: 10\nlimit: 0\ncpus: 1\nstall_every: 200\nstall_ms: 500\nrates: [60, 80]\nseconds: 30\nseed: 21\nrng: python\ntimeout_ms: 60000\nsimulated: true\n```\n\nProse.\n"
	dir := recordDir(t, map[string]string{"s.md": head("s", 1) + body})
	var log bytes.Buffer
	cfg := testRecordConfig(t, dir, &log)
	cfg.Child = labsvc.ChildCommand{} // no lab may start
	cfg.LoadAvg = func() string { return "9.00 9.00 9.00" }
	cfg.Others = func(int) (float64, bool) { t.Error("a simulated preset measured other programs"); return 0, false }
	recs, err := Record(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Record: %v\nlog:\n%s", err, log.String())
	}
	c, err := LoadWith(os.DirFS(dir), LoadOptions{})
	if err != nil {
		t.Fatalf("the recorded file does not load: %v", err)
	}
	tb := c.tableOf("s")
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
	rows, err := SimulatePreset(context.Background(), lab.(*Lab))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if got, want := tb.Rows[i], RowCells(r, lab.(*Lab).Config()); !slices.Equal(got, want) {
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
