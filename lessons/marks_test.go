package lessons

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// markLab is a two-rate preset; markTable is its table, fingerprinted as
// the recorder would write it (fence on line 21 after head).
const markLab = "```lab id=m-lab\nworkers: 4\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [40, 60]\nseconds: 5\n```\n" // lines 10-19

var markLabParsed = Lab{Workers: 4, SpinMS: 2, WaitMS: 18, CPUs: 1, Rates: []float64{40, 60}, Seconds: 5}

func markTable() string {
	cols := []string{"offered", "ok", "ok_per_sec", "mean_ms", "p99_ms", "queued"}
	rows := [][]string{{"40", "200", "40.2", "23.8", "49.1", "2"}, {"60", "290", "47.1", "905.0", "1937.5", "-"}}
	fpr := Fingerprint(&markLabParsed, cols, rows, "recorded in a test")
	var b strings.Builder
	b.WriteString("```table id=m-table preset=m-lab\ncaption: c\ncolumns: [" + strings.Join(cols, ", ") + "]\nrows:\n")
	for _, r := range rows {
		b.WriteString("  - [\"" + strings.Join(r, "\", \"") + "\"]\n")
	}
	b.WriteString("source: recorded in a test\nfingerprint: " + fpr + "\n```\n")
	return b.String()
}

func loadMarks(t *testing.T, body string, opts LoadOptions) (*Course, error) {
	t.Helper()
	fsys := fstest.MapFS{"a.md": {Data: []byte(head("a", 1) + body)}}
	return LoadWith(fsys, opts)
}

// TestMarks checks that marks are replaced by their text (in prose and in
// a question's YAML, not in code), and that CheckMarks recomputes each one
// by its rule.
func TestMarks(t *testing.T) {
	body := markLab + "\n" + markTable() + "\n" + // lab on lines 10-18, table on 20-28
		"It delivered [47.1]{= m-table[60].ok_per_sec} a second; `[1]{= m-lab[60].ok}` stays code.\n" + // 30
		"In flight: [1.0]{= m-table[40].(ok_per_sec * mean_ms / 1000)}, and [0.96]{= m-lab[40].(ok_per_sec * mean_ms / 1000)}.\n" + // 31
		"A limit of [9]{= m-lab.workers * (230 − 23.8) ÷ 23.8 / 4; floor} or [10]{= (230 - 21) / 21; ceil}.\n" + // 32
		"About [190]{= m-lab.workers / 0.021; ±2%}, over [1,000]{= sum(m-table[*].ok) + 510} answered.\n" + // 33
		"The tail [stayed inside the budget]{? max(m-table[*].p99_ms) <= 230 and m-lab.cpus = 1}.\n" + // 34
		"It was [48.0]{= m-table[60].ok_per_sec} (stale) and [2]{= m-table[60].queued} (not measured).\n" + // 35
		"Both rows: [490]{= sum(m-table[#1-#2].ok)}, one: [200]{= sum(m-table[#1-#1].ok)}.\n" + // 36
		"```check id=m-check\nprompt: Which is right, [200]{= m-table[40].ok}?\noptions:\n  - {text: \"[47]{= m-table[#2].ok_per_sec} a second\", correct: true, explain: Yes.}\n  - {text: Fifty, explain: No.}\n```\n" // 37-42
	c, err := loadMarks(t, body, LoadOptions{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	l, _ := c.Lesson("a")
	var prose strings.Builder
	for _, p := range l.Body {
		prose.WriteString(string(p.HTML))
	}
	for _, want := range []string{"It delivered 47.1 a second; <code>[1]{= m-lab[60].ok}</code> stays code.", "A limit of 9 or 10.", "The tail stayed inside the budget."} {
		if !strings.Contains(prose.String(), want) {
			t.Errorf("prose lacks %q:\n%s", want, prose.String())
		}
	}
	q, _, _ := c.Question("m-check")
	if !strings.Contains(string(q.Prompt), "Which is right, 200?") || q.Options[0].Text != "47 a second" {
		t.Errorf("question = %q, %q: want the marks replaced by their numbers", q.Prompt, q.Options[0].Text)
	}
	type res struct {
		line   int
		text   string
		status string
		want   string
	}
	var got []res
	for _, r := range c.CheckMarks() {
		got = append(got, res{r.Line, r.Text, r.Status, r.Want})
	}
	want := []res{
		{30, "47.1", MarkOK, ""},
		{31, "1.0", MarkOK, ""},                         // 40.2 × 0.0238 = 0.957, to one decimal
		{31, "0.96", MarkOK, ""},                        // the same through the preset's name, to two
		{32, "9", MarkStale, "8"},                       // 4 × (230 − 23.8) ÷ 23.8 ÷ 4 = 8.66, rounded down
		{32, "10", MarkOK, ""},                          // 9.95 rounded up
		{33, "190", MarkOK, ""},                         // 190.5, within 2%
		{33, "1,000", MarkOK, ""},                       // 200 + 290 + 510
		{34, "stayed inside the budget", MarkStale, ""}, // a p99 of 1937.5 is not ≤ 230
		{35, "48.0", MarkStale, "47.1"},
		{35, "2", MarkBroken, ""},
		{36, "490", MarkOK, ""}, // positions #1 to #2: 200 + 290
		{36, "200", MarkOK, ""},
		{38, "200", MarkOK, ""},
		{40, "47", MarkOK, ""},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("CheckMarks:\n got %v\nwant %v", got, want)
	}
	for _, r := range c.CheckMarks() {
		if r.Line == 35 && r.Status == MarkBroken && !strings.Contains(r.Err, `queued is "-", not a number`) {
			t.Errorf("broken mark says %q, want the cell that is not a number", r.Err)
		}
	}
	// Check reports every mark that does not hold, with file and line.
	err = Check(fstest.MapFS{"a.md": {Data: []byte(head("a", 1) + body)}}, LoadOptions{})
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 4 {
		t.Fatalf("Check = %v, want 4 problems (lines 32, 34, 35, 35)", err)
	}
	for i, line := range []int{32, 34, 35, 35} {
		if errs[i].File != "a.md" || errs[i].Line != line || !strings.HasPrefix(errs[i].Msg, "mark [") {
			t.Errorf("problem %d = %v, want a.md:%d: mark ...", i, errs[i], line)
		}
	}
	if !strings.Contains(errs[2].Msg, "STALE: the tables give 47.1000; write 47.1") {
		t.Errorf("stale mark message = %q", errs[2].Msg)
	}
}

// TestMarkRounding is the rule a mark's number is held to, case by case.
func TestMarkRounding(t *testing.T) {
	tests := []struct {
		text, rule string
		v          float64
		ok         bool
		want       string
	}{
		{"47", "", 46.9, true, "47"},                 // rounds to the written whole number
		{"47", "", 46.4, false, "46"},                // does not
		{"21.0", "", 21.03, true, "21.0"},            // one decimal written, one decimal compared
		{"10", "", 9.95, true, "10"},                 // a half rounds away from zero
		{"0.3", "", 0.25, true, "0.3"},               // a half written in binary still rounds up
		{"9", "floor", 9.95, true, "9"},              // round down
		{"10", "floor", 9.95, false, "9"},            // not down
		{"4", "ceil", 3.01, true, "4"},               // round up
		{"190", "±2%", 186.5, true, "187"},           // within 2% of the computed value
		{"190", "±2%", 180, false, "180"},            // not within 2%
		{"50", "±0.5", 50.4, true, "50"},             // within an absolute tolerance
		{"1,004", "", 1004.2, true, "1,004"},         // commas kept
		{"12,345.6", "", 12345.64, true, "12,345.6"}, // commas and decimals
	}
	for _, tt := range tests {
		m, msg := parseMark(tt.text, '=', "1"+map[bool]string{true: "; " + tt.rule, false: ""}[tt.rule != ""])
		if msg != "" {
			t.Fatalf("%s %s: %s", tt.text, tt.rule, msg)
		}
		ok, want := m.agrees(tt.v)
		if ok != tt.ok || want != tt.want {
			t.Errorf("[%s]{= %g; %s}: agrees = %v, %q; want %v, %q", tt.text, tt.v, tt.rule, ok, want, tt.ok, tt.want)
		}
	}
}

// TestMarkErrors: a mark that cannot be read, or names what does not
// exist, is a load error at its line.
func TestMarkErrors(t *testing.T) {
	tests := []struct {
		name, mark, want string
	}{
		{"words in a number mark", "[about 47]{= m-table[60].ok}", `the text "about 47" is not a number`},
		{"unknown rule", "[47]{= m-table[60].ok; nearest}", `rule "nearest" is not allowed`},
		{"empty", "[47]{= }", "the expression is empty"},
		{"bad token", "[47]{= m-table[60].ok $ 2}", `unexpected "$"`},
		{"unknown name", "[47]{= m-tabel[60].ok}", `no table or lab preset "m-tabel" in the course`},
		{"unknown row", "[47]{= m-table[50].ok}", "no row offered 50: want one of 40, 60, #N for the N-th row, or *"},
		{"row out of range", "[47]{= m-table[#3].ok}", "there is no row #3: want #1 to #2"},
		{"range out of range", "[47]{= sum(m-table[#1-#3].ok)}", "there is no row #3: want #1 to #2"},
		{"range backwards", "[47]{= sum(m-table[#2-#1].ok)}", "want a range of positions, first to last, as in [#11-#30]"},
		{"range to a rate", "[47]{= sum(m-table[#1-60].ok)}", "want a range of positions, first to last"},
		{"unknown column", "[47]{= m-table[60].okk}", `table m-table has no column "okk"`},
		{"unknown setting", "[47]{= m-lab.worker}", `"worker" is not a setting of a preset`},
		{"hyphen without spaces", "[47]{= m-table[60].(ok-refused)}", `table m-table has no column "ok-refused"`},
		{"bare name", "[47]{= ok}", `"ok" is not a reference`},
		{"claim as number", "[47]{= m-table[60].ok > 3}", "the expression is a claim"},
		{"number as claim", "[it held]{? m-table[60].ok}", "the expression is a number, not a claim"},
		{"several rows", "[47]{= m-table[*].ok}", "names several rows: use min, max, sum or mean"},
		{"not a block of tables", "[47]{= m-check[60].ok}", `"m-check" is a check block`},
		{"unknown function", "[47]{= median(m-table[*].ok)}", `unknown function "median"`},
	}
	check := "```check id=m-check\nprompt: Q\noptions:\n  - {text: A, correct: true, explain: Yes.}\n  - {text: B, explain: No.}\n```\n"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := markLab + "\n" + markTable() + "\n" + check + "\nIt did " + tt.mark + ".\n"
			_, err := loadMarks(t, body, LoadOptions{})
			line := strings.Count(head("a", 1)+markLab+"\n"+markTable()+"\n"+check+"\n", "\n") + 1
			if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("a.md:%d: mark ", line)) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant a.md:%d: mark ... %s", err, line, tt.want)
			}
		})
	}
}

// TestMarksOnPendingTables: a mark may read a table still to be recorded;
// its rows and columns are checked against the preset and the recorder's
// columns, and CheckMarks says it is pending, naming the command.
func TestMarksOnPendingTables(t *testing.T) {
	body := markLab + "\n```table id=m-table preset=m-lab\npending: true\n```\n\n" +
		"It did [47.1]{= m-lab[60].ok_per_sec}.\n" // line 24
	if _, err := loadMarks(t, body, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "a.md:21: table \"m-table\": is still to be recorded (pending: true): record it with `server lessons record --lab m-lab`") {
		t.Fatalf("Load of a pending table: err = %v, want it refused at its line, naming the command", err)
	}
	c, err := loadMarks(t, body, LoadOptions{Pending: true})
	if err != nil {
		t.Fatalf("LoadWith(Pending): %v", err)
	}
	rs := c.CheckMarks()
	if len(rs) != 1 || rs[0].Status != MarkPending || !slices.Equal(rs[0].Pending, []string{"m-lab"}) ||
		!strings.HasSuffix(rs[0].String(), "pending: not recorded yet (server lessons record --lab m-lab)") {
		t.Errorf("CheckMarks = %+v", rs)
	}
	for _, bad := range []struct{ mark, want string }{
		{"[47]{= m-lab[50].ok}", "no row offered 50: want one of 40, 60"},
		{"[47]{= m-lab[60].okk}", `no column "okk": want one of offered,`},
	} {
		body := markLab + "\n```table id=m-table preset=m-lab\npending: true\n```\n\nIt did " + bad.mark + ".\n"
		if _, err := loadMarks(t, body, LoadOptions{Pending: true}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s on a pending table: err = %v, want %q", bad.mark, err, bad.want)
		}
	}
	// A pending table holds nothing measured.
	body = markLab + "\n```table id=m-table preset=m-lab\npending: true\nrows:\n  - [\"1\"]\n```\n"
	if _, err := loadMarks(t, body, LoadOptions{Pending: true}); err == nil || !strings.Contains(err.Error(), "a pending table has no rows") {
		t.Errorf("pending table with rows: err = %v", err)
	}
}

// TestCourseMarks recomputes every marked number and claim of the
// embedded course from its tables. A failure names the file and line of
// the mark and what the tables now give; `server lessons marks` lists
// them all (and --fix rewrites stale numbers).
func TestCourseMarks(t *testing.T) {
	c, err := LoadWith(Content(), LoadOptions{Pending: true})
	if err != nil {
		t.Fatalf("embedded content does not load even with pending tables: %v", err)
	}
	n := 0
	for _, r := range c.CheckMarks() {
		n++
		if r.Status != MarkOK {
			t.Error(r.String())
		}
	}
	if n == 0 {
		t.Error("the course has no marks: every number taken from a table is marked")
	}
}

// reProseNumber is a number as prose writes one: decimals, or a whole
// number of three or more digits (with or without comma thousands).
// reVersionBefore matches text that ends where a release number follows.
var reVersionBefore = regexp.MustCompile(`(?:Go|Python|CPython|go) $`)

var reProseNumber = regexp.MustCompile(`(?:^|[^\w.,#-])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d{3,})(?:[^\w]|$)`)

// TestCourseNumbersAreMarked looks for a number in a lesson's text (outside
// marks, code, and lab and table blocks) that equals a cell of one of the
// lesson's tables, other than the offered rates: such a number was read
// from the table and must be marked so it is checked when the table is
// recorded again. A number the lesson gives rather than measures (a
// setting of one of its presets, such as a 500 ms timeout, or a parameter
// of one of its models, such as a 230 ms budget) is not a reading, even
// when a count in some table happens to equal it.
func TestCourseNumbersAreMarked(t *testing.T) {
	c, err := LoadWith(Content(), LoadOptions{Pending: true})
	if err != nil {
		t.Fatalf("embedded content does not load: %v", err)
	}
	for _, l := range c.Lessons {
		if l.Part == FixturePart {
			continue
		}
		cells := map[string]string{}
		for _, b := range l.Blocks() {
			if tb, ok := b.(*Table); ok {
				for _, r := range tb.Rows {
					for i, cell := range r {
						if i > 0 && (strings.Contains(cell, ".") || len(cell) >= 3) {
							cells[cell] = tb.ID
						}
					}
				}
			}
		}
		for _, g := range givens(l) {
			delete(cells, g)
		}
		src, err := readContent(l.File)
		if err != nil {
			t.Fatal(err)
		}
		fence, skip := "", false
		for i, line := range strings.Split(src, "\n") {
			if fence != "" {
				if closesFence(line, fence) {
					fence = ""
					continue
				}
				if skip {
					continue
				}
			} else if marker, info, ok := opensFence(line); ok {
				fence = marker
				skip = !isInteractive(info) || firstWord(info) == "lab" || firstWord(info) == "table"
				continue
			}
			var plain strings.Builder
			for _, seg := range codeSpans(reMark.ReplaceAllString(line, "")) {
				if !seg.code {
					plain.WriteString(seg.text + " ")
				}
			}
			text := plain.String()
			for _, m := range reProseNumber.FindAllStringSubmatchIndex(text, -1) {
				found := text[m[2]:m[3]]
				if reVersionBefore.MatchString(text[:m[2]]) {
					continue // a release such as Go 1.25 or Python 3.14, not a measurement
				}
				num := strings.ReplaceAll(found, ",", "")
				if tb, ok := cells[num]; ok {
					t.Errorf("%s:%d: %s looks read from table %s: mark it, e.g. [%s]{= %s[ROW].COLUMN}", l.File, i+1, found, tb, found, tb)
				}
			}
		}
	}
}

// givens are the numbers a lesson sets rather than measures, as prose
// writes them: its presets' knobs and its models' starting values and
// goals.
func givens(l *Lesson) []string {
	var out []string
	add := func(v float64) { out = append(out, strconv.FormatFloat(v, 'f', -1, 64)) }
	for _, b := range l.Blocks() {
		switch b := b.(type) {
		case *Lab:
			for _, v := range []int{b.Workers, b.SpinMS, b.WaitMS, b.Limit, b.CPUs, b.Closed, b.TimeoutMS, b.StallEvery, b.StallMS, b.Backlog} {
				add(float64(v))
			}
			add(b.Seconds)
			add(float64(b.Seed))
			for _, r := range b.Rates {
				add(r) // the offered rates, which the doc above exempts
			}
			for _, c := range b.At {
				_, val, _ := strings.Cut(c, "=")
				if v, err := strconv.ParseFloat(val, 64); err == nil {
					add(v) // a knob change's value: a setting, such as WAIT_MS=79
				}
			}
		case *Model:
			for _, v := range b.Values {
				add(v)
			}
			for _, w := range b.Goal.Want {
				add(w.Value)
			}
		}
	}
	return out
}

func readContent(name string) (string, error) {
	b, err := fs.ReadFile(Content(), name)
	return string(b), err
}

// TestMarkOnColumnNotRecordedYet: a table recorded before the recorder
// wrote a column (here n) loads with a mark on that column, and the mark is
// pending until the table is recorded again.
func TestMarkOnColumnNotRecordedYet(t *testing.T) {
	body := markLab + "\n" + markTable() + "\nIt kept [200]{= m-table[40].n} answers.\n"
	c, err := loadMarks(t, body, LoadOptions{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	rs := c.CheckMarks()
	if len(rs) != 1 || rs[0].Status != MarkPending || !slices.Equal(rs[0].Pending, []string{"m-lab"}) {
		t.Errorf("CheckMarks = %+v, want one pending mark naming m-lab", rs)
	}
}
