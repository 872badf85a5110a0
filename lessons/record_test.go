package lessons

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

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

// TestWriteTablePlacement checks where WriteTable puts a table, with rows
// given (no lab is run): after the lab block, in place of an old table
// wherever it stands, and with the file's own line ends.
func TestWriteTablePlacement(t *testing.T) {
	lab := goodLab
	lab.ID = "a-lab"
	// A row in RecordColumns order, as recorder.RowCells writes it.
	cells := [][]string{{"10", "10", "10", "0", "0", "0", "10.0", "20.1", "21.0", "10", "0", "1", "20.2", "20.9", "10", "0", "0.05", "20.1", "25.0"}}
	if len(cells[0]) != len(RecordColumns(lab.Accept)) {
		t.Fatalf("the test's row has %d cells, a table %d columns", len(cells[0]), len(RecordColumns(lab.Accept)))
	}
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
			rec, err := WriteTable(dir, "a.md", &lab, &lab, cells, "A caption.", "src line")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("WriteTable = %v, want an error containing %q", err, tt.wantErr)
				}
				if readFile(t, dir, "a.md") != tt.src {
					t.Error("the file changed although WriteTable failed")
				}
				return
			}
			if err != nil {
				t.Fatalf("WriteTable: %v", err)
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
		{"accept", func(l *Lab) { l.Accept = AcceptWorkers }, cols, rows, "s"},
		// Each setting of the sweep.
		{"rates", func(l *Lab) { l.Rates = []float64{10.5} }, cols, rows, "s"},
		{"seconds", func(l *Lab) { l.Seconds = 2 }, cols, rows, "s"},
		{"seed", func(l *Lab) { l.Seed = 1 }, cols, rows, "s"},
		{"closed", func(l *Lab) { l.Closed = 1 }, cols, rows, "s"},
		{"timeout", func(l *Lab) { l.TimeoutMS = 500 }, cols, rows, "s"},
		{"stall every", func(l *Lab) { l.StallEvery = 200 }, cols, rows, "s"},
		{"stall ms", func(l *Lab) { l.StallMS = 500 }, cols, rows, "s"},
		{"rng", func(l *Lab) { l.RNG = "python" }, cols, rows, "s"},
		{"over time", func(l *Lab) { l.OverTime = true }, cols, rows, "s"},
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
	if c := canonicalPreset(&base); strings.Contains(c, "stall") || strings.Contains(c, "rng") || strings.Contains(c, "over_time") {
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

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
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
