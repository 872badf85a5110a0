package lessons

import (
	"errors"
	"html/template"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"capacitylab/model"
)

// loadOne loads a course made of the given files and fails the test on error.
func loadOne(t *testing.T, files map[string]string) *Course {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, body := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(body)}
	}
	c, err := Load(fsys)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func TestEmbeddedContentLoads(t *testing.T) {
	c, err := Load(Content())
	if err != nil {
		t.Fatalf("embedded content does not load:\n%v", err)
	}
	if err := Check(Content(), LoadOptions{}); err != nil {
		t.Fatalf("Check disagrees with Load: %v", err)
	}
	var slugs []string
	for _, l := range c.Lessons {
		slugs = append(slugs, l.Slug)
	}
	// The course in reading order (part "Capacity"), then the fixture in
	// part "Fixtures".
	want := []string{"littles-law", "saturation", "overload", "open-closed", "pause-both-loops", "measure", "bottleneck-moves",
		"threads-processors", "hidden-queue", "criterion", "admission-limit", "limit-edges", "service-time-moves", "cap-inside", "capacity-moves", "shared-queue", "capstone", "your-service", "retry-storm", "retry-cost", "shed-by-class", "late-scaling", "same-mean", "slowest-of-many", "more-workers-slower", "sample"}
	if !reflect.DeepEqual(slugs, want) {
		t.Errorf("lessons in order = %v, want %v", slugs, want)
	}
	// The fixture must exercise every block kind, or the web tests miss one.
	sample, ok := c.Lesson("sample")
	if !ok {
		t.Fatal("no sample lesson")
	}
	for kind, n := range sample.Counts() {
		if n == 0 {
			t.Errorf("sample lesson has no %s block", kind)
		}
	}
	// The first real lesson has the parts its issue asks for, and at most
	// one table, recorded from its one preset (Load checked the table's
	// fingerprint against that preset).
	ll, _ := c.Lesson("littles-law")
	counts := ll.Counts()
	if counts["predict"] < 1 || counts["check"] < 1 || counts["model"] != 1 || counts["lab"] != 1 || counts["table"] > 1 {
		t.Errorf("littles-law counts = %v", counts)
	}
	types := map[string]bool{}
	for _, b := range ll.Blocks() {
		if co, ok := b.(*Callout); ok {
			types[co.Type] = true
		}
	}
	for _, k := range []string{CalloutRemember, CalloutLimits, CalloutAsOf} {
		if !types[k] {
			t.Errorf("littles-law has no %s callout", k)
		}
	}
	m, _, ok := c.Model("littles-model")
	if !ok {
		t.Fatal("no littles-model")
	}
	if m.Widget != model.KindLittlesLaw || m.Solve != "inflight" {
		t.Errorf("littles-model = %s solving %s", m.Widget, m.Solve)
	}
	lab, _, ok := c.Lab("littles-sweep")
	if !ok {
		t.Fatal("no littles-sweep")
	}
	if lab.Workers != 1 || lab.SpinMS != 2 || lab.WaitMS != 18 || lab.Limit != 0 || lab.CPUs != 1 || lab.Accept != "" {
		t.Errorf("littles-sweep knobs = %+v, want 1 worker, spin 2 ms, wait 18 ms, no limit, 1 CPU, the door", lab)
	}
}

func TestParsePredict(t *testing.T) {
	c := loadOne(t, map[string]string{"a.md": head("a", 1) + goodBody("a")})
	q, l, ok := c.Question("a-p")
	if !ok || l.Slug != "a" {
		t.Fatalf("Question(a-p) = %v, %v, %v", q, l, ok)
	}
	if q.Kind() != "predict" || q.Line != 10 || q.SettledBy != "a-lab" {
		t.Errorf("predict = kind %s line %d settled_by %q", q.Kind(), q.Line, q.SettledBy)
	}
	if q.Prompt != template.HTML("<p>Q?</p>\n") {
		t.Errorf("prompt = %q", q.Prompt)
	}
	want := []Option{
		{ID: "a", Text: "A", HTML: "A", Correct: true, Explain: "<p>Yes.</p>\n", Line: 13},
		{ID: "b", Text: "B", HTML: "B", Explain: "<p>No.</p>\n", Line: 16},
	}
	if !reflect.DeepEqual(q.Options, want) {
		t.Errorf("options = %+v, want %+v", q.Options, want)
	}
	if o, ok := q.Correct(); !ok || o.ID != "a" {
		t.Errorf("Correct() = %+v, %v", o, ok)
	}
	if o, ok := q.Option("b"); !ok || o.Text != "B" {
		t.Errorf("Option(b) = %+v, %v", o, ok)
	}
	if _, ok := q.Option("z"); ok {
		t.Error("Option(z) found an option")
	}
}

func TestParseCheck(t *testing.T) {
	body := "```check id=c1\nprompt: \"Which is *right*?\"\noptions:\n  - {text: One, explain: \"Because `1`.\"}\n  - {text: Two, correct: true, explain: Yes.}\n  - {text: Three, explain: No.}\n```\n"
	c := loadOne(t, map[string]string{"a.md": head("a", 1) + body})
	q, _, ok := c.Question("c1")
	if !ok {
		t.Fatal("no check c1")
	}
	if q.Kind() != "check" || q.SettledBy != "" || len(q.Options) != 3 {
		t.Fatalf("check = %+v", q)
	}
	if q.Prompt != "<p>Which is <em>right</em>?</p>\n" || q.Options[0].Explain != "<p>Because <code>1</code>.</p>\n" {
		t.Errorf("Markdown not rendered: prompt %q, explain %q", q.Prompt, q.Options[0].Explain)
	}
	if ids := q.Options[0].ID + q.Options[1].ID + q.Options[2].ID; ids != "abc" {
		t.Errorf("option ids = %s, want abc", ids)
	}
	if o, _ := q.Correct(); o.ID != "b" {
		t.Errorf("correct option = %s, want b", o.ID)
	}
}

func TestParseModel(t *testing.T) {
	body := "```model id=m1\nwidget: two-ceilings\nvalues: {workers: 4, cpus: 1}\ngoal:\n  text: Reach it.\n  want:\n    - {param: workers, value: 8, tol: 0.5}\n  found: Found it.\nassumes: [x]\nignores: [y, z]\n```\n"
	c := loadOne(t, map[string]string{"a.md": head("a", 1) + body})
	m, _, ok := c.Model("m1")
	if !ok {
		t.Fatal("no model m1")
	}
	want := &Model{ID: "m1", Line: 10, Widget: model.KindTwoCeilings, Values: map[string]float64{"workers": 4, "cpus": 1},
		Goal:    Goal{Text: "Reach it.", Want: []Target{{Param: "workers", Value: 8, Tol: 0.5}}, Found: "Found it."},
		Assumes: []string{"x"}, Ignores: []string{"y", "z"}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("model =\n %+v\nwant\n %+v", m, want)
	}
	if _, _, ok := c.Question("m1"); ok {
		t.Error("Question(m1) found a model")
	}
}

func TestParseLab(t *testing.T) {
	// An open-loop preset with every field, and a closed-loop one (clients,
	// no rates).
	body := "```lab id=l1\nworkers: 4\nspin_ms: 1\nwait_ms: 0\nlimit: 16\ncpus: 2\nrates: [100, 250.5]\nseconds: 2.5\nseed: 42\ntimeout_ms: 500\n```\n" +
		"```lab id=l2\nworkers: 1\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nseconds: 3\nclosed: 8\n```\n" +
		"```lab id=l3\nworkers: 1\nspin_ms: 0\nwait_ms: 10\nlimit: 0\ncpus: 1\nrates: [60, 80, 90]\nseconds: 30\nseed: 21\nstall_every: 200\nstall_ms: 500\nrng: python\n```\n"
	c := loadOne(t, map[string]string{"a.md": head("a", 1) + body})
	for _, want := range []*Lab{
		{ID: "l1", Line: 10, Workers: 4, SpinMS: 1, WaitMS: 0, Limit: 16, CPUs: 2, Rates: []float64{100, 250.5},
			Seconds: 2.5, Seed: 42, TimeoutMS: 500},
		{ID: "l2", Line: 21, Workers: 1, SpinMS: 2, WaitMS: 18, Limit: 0, CPUs: 1, Seconds: 3, Closed: 8, Clients: []int{8}},
		// The published experiment's preset: a stall, CPython's arrivals.
		{ID: "l3", Line: 30, Workers: 1, SpinMS: 0, WaitMS: 10, Limit: 0, CPUs: 1, Rates: []float64{60, 80, 90}, Seconds: 30, Seed: 21,
			StallEvery: 200, StallMS: 500, RNG: "python"},
	} {
		lab, _, ok := c.Lab(want.ID)
		if !ok {
			t.Fatalf("no lab %s", want.ID)
		}
		// Each setting's line is kept, for the checks of the lab's
		// limits (LoadOptions.CheckLab), which name it.
		if !lab.complete || lab.KeyLine("workers") != want.Line+1 || lab.KeyLine("cpus") != want.Line+5 || !lab.Gives("seconds") || lab.Gives("backlog") || lab.KeyLine("backlog") != want.Line {
			t.Errorf("lab %s: complete %v, lines %v", want.ID, lab.complete, lab.keyLines)
		}
		want.keyLines, want.complete = lab.keyLines, lab.complete
		if !reflect.DeepEqual(lab, want) {
			t.Errorf("lab =\n %+v\nwant\n %+v", lab, want)
		}
	}
}

func TestParseTable(t *testing.T) {
	// Cells written as YAML numbers are read as their text; the
	// fingerprint is over that text.
	rows := [][]string{{"10", "9.5"}, {"20", "yes"}}
	fpr := Fingerprint(&goodLab, []string{"rate", "ok"}, rows, "typed in a test")
	body := goodBody("a") + "```table id=t1 preset=a-lab\ncaption: Made up for a test.\ncolumns: [rate, ok]\nrows:\n  - [10, 9.5]\n  - [\"20\", yes]\nsource: typed in a test\nfingerprint: " + fpr + "\n```\n"
	c := loadOne(t, map[string]string{"a.md": head("a", 1) + body})
	b, _, ok := c.Block("t1")
	if !ok {
		t.Fatal("no table t1")
	}
	want := &Table{ID: "t1", Line: 29, Preset: "a-lab", Caption: "Made up for a test.", Columns: []string{"rate", "ok"},
		Rows: rows, Source: "typed in a test", Fingerprint: fpr}
	// Its preset, set at load.
	if lb, _, _ := c.Block("a-lab"); b.(*Table).Lab != lb {
		t.Errorf("table's Lab %p, want its preset a-lab %p", b.(*Table).Lab, lb)
	}
	want.Lab = b.(*Table).Lab
	if !reflect.DeepEqual(b, want) {
		t.Errorf("table =\n %+v\nwant\n %+v", b, want)
	}
}

func TestParseCallouts(t *testing.T) {
	body := "Intro.\n\n> [!remember]\n> Keep *this*.\n>\n> And this.\n\n> [!LIMITS]\n> Stops here.\n\n> [!ASOF 2026-01-31]\n> Dated.\n\n> An ordinary quote.\n"
	c := loadOne(t, map[string]string{"a.md": head("a", 1) + body})
	l, _ := c.Lesson("a")
	var got []*Callout
	var prose []string
	for _, p := range l.Body {
		if co, ok := p.Block.(*Callout); ok {
			got = append(got, co)
		} else if p.Block == nil {
			prose = append(prose, string(p.HTML))
		}
	}
	want := []*Callout{
		{ID: "callout-1", Line: 12, Type: CalloutRemember, Body: "<p>Keep <em>this</em>.</p>\n<p>And this.</p>\n"},
		{ID: "callout-2", Line: 17, Type: CalloutLimits, Body: "<p>Stops here.</p>\n"},
		{ID: "callout-3", Line: 20, Type: CalloutAsOf, Date: "2026-01-31", Body: "<p>Dated.</p>\n"},
	}
	if !reflect.DeepEqual(got, want) {
		for _, g := range got {
			t.Logf("got %+v", g)
		}
		t.Errorf("callouts differ from want")
	}
	if wantProse := []string{"<p>Intro.</p>\n", "<blockquote>\n<p>An ordinary quote.</p>\n</blockquote>\n"}; !reflect.DeepEqual(prose, wantProse) {
		t.Errorf("prose = %q, want %q", prose, wantProse)
	}
}

func TestProse(t *testing.T) {
	body := "## Why it *matters*\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```go\nfmt.Println(\"ordinary code\")\n```\n\n[evil](javascript:alert(1))\n"
	c := loadOne(t, map[string]string{"a.md": head("a", 1) + body})
	l, _ := c.Lesson("a")
	if len(l.Body) != 1 || l.Body[0].Block != nil {
		t.Fatalf("body = %+v, want one prose part", l.Body)
	}
	html := string(l.Body[0].HTML)
	// A table takes the focus: on a phone it scrolls sideways in itself.
	for _, want := range []string{`<h2 id="why-it-matters">`, `<table tabindex="0">`, `<code class="language-go">`, `<a href="">evil</a>`} {
		if !strings.Contains(html, want) {
			t.Errorf("prose HTML lacks %q:\n%s", want, html)
		}
	}
}

func TestCourseNavigation(t *testing.T) {
	// Files are read in name order but sorted by part, chapter and number.
	c := loadOne(t, map[string]string{
		"z.md":        head("first", 1),
		"a.md":        head("third", 3),
		"m.md":        head("second", 2),
		"README.md":   "# Not a lesson\n",
		".draft.md":   "not even front matter",
		"_partial.md": "not even front matter",
		"notes.txt":   "ignored",
	})
	var slugs []string
	for _, l := range c.Lessons {
		slugs = append(slugs, l.Slug)
	}
	if want := []string{"first", "second", "third"}; !reflect.DeepEqual(slugs, want) {
		t.Fatalf("order = %v, want %v", slugs, want)
	}
	tests := []struct {
		slug       string
		prev, next string // "" = none
	}{
		{"first", "", "second"},      // the first lesson has no previous
		{"second", "first", "third"}, // a middle lesson has both
		{"third", "second", ""},      // the last lesson has no next
		{"missing", "", ""},          // an unknown slug has neither
	}
	for _, tt := range tests {
		p, okp := c.Prev(tt.slug)
		n, okn := c.Next(tt.slug)
		if okp != (tt.prev != "") || (okp && p.Slug != tt.prev) {
			t.Errorf("Prev(%s) = %v, %v; want %q", tt.slug, p, okp, tt.prev)
		}
		if okn != (tt.next != "") || (okn && n.Slug != tt.next) {
			t.Errorf("Next(%s) = %v, %v; want %q", tt.slug, n, okn, tt.next)
		}
	}
	if _, ok := c.Lesson("missing"); ok {
		t.Error("Lesson(missing) found a lesson")
	}
	if l, ok := c.Lesson("second"); !ok || l.File != "m.md" {
		t.Errorf("Lesson(second) = %v, %v", l, ok)
	}
}

func TestCountsListsEveryKind(t *testing.T) {
	c := loadOne(t, map[string]string{"a.md": head("a", 1) + goodBody("a") + "> [!REMEMBER]\n> x\n"})
	l, _ := c.Lesson("a")
	want := map[string]int{"predict": 1, "check": 0, "model": 0, "lab": 1, "table": 0, "record": 0, "callout": 1}
	if got := l.Counts(); !reflect.DeepEqual(got, want) {
		t.Errorf("Counts() = %v, want %v", got, want)
	}
}

func TestCalloutIDsAreNotCourseIDs(t *testing.T) {
	// Callouts are numbered per lesson, so two lessons both have callout-1,
	// and Course.Block does not return either.
	c := loadOne(t, map[string]string{
		"a.md": head("a", 1) + "> [!REMEMBER]\n> x\n",
		"b.md": head("b", 2) + "> [!REMEMBER]\n> y\n",
	})
	if _, _, ok := c.Block("callout-1"); ok {
		t.Error("Course.Block found a callout")
	}
	a, _ := c.Lesson("a")
	if b, ok := a.Block("callout-1"); !ok || b.Kind() != "callout" {
		t.Errorf("Lesson.Block(callout-1) = %v, %v", b, ok)
	}
}

func TestErrorsFormat(t *testing.T) {
	errs := Errors{{File: "a.md", Line: 3, Msg: "bad"}, {File: "b.md", Msg: "worse"}}
	if got, want := errs.Error(), "a.md:3: bad\nb.md: worse"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var e Error
	if !errors.As(error(errs[0]), &e) || e.Line != 3 {
		t.Errorf("errors.As(Error) = %+v", e)
	}
}

func TestCRLFAndBOM(t *testing.T) {
	// Files saved on Windows still load, with the same line numbers.
	src := "\xef\xbb\xbf" + strings.ReplaceAll(head("a", 1)+"```check id=c\nprompt: x\n```\n", "\n", "\r\n")
	_, err := Load(fstest.MapFS{"a.md": {Data: []byte(src)}})
	if err == nil || !strings.HasPrefix(err.Error(), "a.md:10: check \"c\": has 0 options") {
		t.Errorf("CRLF lesson: err = %v, want a.md:10: check \"c\": has 0 options...", err)
	}
}

func TestContentIsFlat(t *testing.T) {
	// Load reads only the top level; the embedded FS holds only lessons.
	entries, err := fs.ReadDir(Content(), ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || !isLessonFile(e.Name()) {
			t.Errorf("content holds %s, which Load skips", e.Name())
		}
	}
}

// BenchmarkLoad measures parsing and validating the embedded course, the
// work the server does once at start-up (and on each change with --content).
func BenchmarkLoad(b *testing.B) {
	fsys := Content()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(fsys); err != nil {
			b.Fatal(err)
		}
	}
}

// Option text is inline Markdown: pages get it rendered (code spans as
// <code>), messages and CSVs plain (the marks removed).
func TestOptionMarkdown(t *testing.T) {
	body := strings.Replace(goodBody("a"), "  - text: B\n", "  - text: \"Below the ceiling, while `done` stays *near* it\"\n", 1)
	c := loadOne(t, map[string]string{"a.md": head("a", 1) + body})
	q, _, _ := c.Question("a-p")
	o, _ := q.Option("b")
	if want := "Below the ceiling, while <code>done</code> stays <em>near</em> it"; string(o.HTML) != want {
		t.Errorf("HTML = %q, want %q", o.HTML, want)
	}
	if want := "Below the ceiling, while done stays near it"; o.Text != want {
		t.Errorf("Text = %q, want %q", o.Text, want)
	}
	// HTML in text is escaped by the renderer, never passed through.
	body = strings.Replace(goodBody("a"), "  - text: B\n", "  - text: \"a < b & c\"\n", 1)
	c = loadOne(t, map[string]string{"a.md": head("a", 1) + body})
	q, _, _ = c.Question("a-p")
	if o, _ := q.Option("b"); string(o.HTML) != "a &lt; b &amp; c" || o.Text != "a < b & c" {
		t.Errorf("option b = %q / %q", o.HTML, o.Text)
	}
}

// A lab's show: and a predict's read: are parsed, and show: is not part of
// the preset's settings: the fingerprint of a table is the same with and
// without it, so adding show: to a recorded lesson keeps its tables valid.
func TestShowAndRead(t *testing.T) {
	body := strings.Replace(goodBody("a"), "seconds: 1\n", "seconds: 1\nshow: [ok_per_sec, mean_ms]\n", 1)
	body = strings.Replace(body, "settled_by: a-lab\n", "settled_by: a-lab\nread: {rows: [10], columns: [mean_ms]}\n", 1)
	c := loadOne(t, map[string]string{"a.md": head("a", 1) + body})
	lab, _, _ := c.Lab("a-lab")
	if !reflect.DeepEqual(lab.Show, []string{"ok_per_sec", "mean_ms"}) {
		t.Errorf("show = %v", lab.Show)
	}
	q, _, _ := c.Question("a-p")
	if q.Read == nil || !reflect.DeepEqual(q.Read.Rows, []float64{10}) || !reflect.DeepEqual(q.Read.Columns, []string{"mean_ms"}) {
		t.Errorf("read = %+v", q.Read)
	}
	plain := goodLab
	shown := goodLab
	shown.Show = []string{"ok_per_sec", "mean_ms"}
	cols, rows := []string{"offered", "ok"}, [][]string{{"10", "9"}}
	if Fingerprint(&plain, cols, rows, "s") != Fingerprint(&shown, cols, rows, "s") {
		t.Error("show: changes the fingerprint; it is presentation, not a setting")
	}
	// Every course lesson's tables still match with the show: lists the
	// content carries (TestEmbeddedContentLoads loads them); and every
	// course predict names the cells that settle it.
	course, err := Load(Content())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range course.Lessons {
		if l.Part == FixturePart {
			continue
		}
		for _, b := range l.Blocks() {
			if q, ok := b.(*Question); ok && q.Type == "predict" && q.Read == nil {
				t.Errorf("%s: predict %s has no read: naming the rows and columns that settle it", l.File, q.ID)
			}
			if lb, ok := b.(*Lab); ok && len(lb.Show) == 0 {
				t.Errorf("%s: lab %s has no show: naming the columns its lesson talks about", l.File, lb.ID)
			}
		}
	}
}

// Settling finds the preset and tables that settle a predict, and
// SettledBy goes the other way, from a lab or table to its predict.
func TestSettling(t *testing.T) {
	c, err := Load(Content())
	if err != nil {
		t.Fatal(err)
	}
	l, _ := c.Lesson("admission-limit")
	q, _, _ := c.Question("limit-predict")
	lab, tables := l.Settling(q)
	if lab == nil || lab.ID != "limit-on" || len(tables) != 1 || tables[0].ID != "limit-on-result" {
		t.Fatalf("Settling(limit-predict) = %v, %v", lab, tables)
	}
	for id, want := range map[string]string{"limit-on": "limit-predict", "limit-on-result": "limit-predict", "limit-off": "", "limit-off-result": "", "limit-nine": ""} {
		got := ""
		if q := l.SettledBy(id); q != nil {
			got = q.ID
		}
		if got != want {
			t.Errorf("SettledBy(%s) = %q, want %q", id, got, want)
		}
	}
}

// TestSettlingFoldsTwins: a predict settled by a simulated preset also
// folds the live preset with the same settings and its table (the same
// sweep, measured), and not a live preset whose settings differ.
func TestSettlingFoldsTwins(t *testing.T) {
	lab := func(id, extra string) string {
		return "```lab id=" + id + "\nworkers: 1\nspin_ms: 0\nwait_ms: 10\nlimit: 0\ncpus: 1\nrates: [50]\nseconds: 1\n" + extra + "```\n\n" +
			"```table id=" + id + "-result preset=" + id + "\npending: true\n```\n\n"
	}
	body := head("tw", 1) + "\nText.\n\n" +
		"```predict id=tw-p\nprompt: Q?\noptions:\n  - text: A\n    correct: true\n    explain: Yes.\n  - text: B\n    explain: No.\nsettled_by: tw-sim\n```\n\n" +
		lab("tw-sim", "simulated: true\n") + lab("tw-live", "") + lab("tw-other", "seed: 2\n")
	c, err := LoadWith(fstest.MapFS{"tw.md": {Data: []byte(body)}}, LoadOptions{Pending: true})
	if err != nil {
		t.Fatal(err)
	}
	l := c.Lessons[0]
	for id, want := range map[string]string{"tw-sim": "tw-p", "tw-sim-result": "tw-p", "tw-live": "tw-p", "tw-live-result": "tw-p", "tw-other": "", "tw-other-result": ""} {
		got := ""
		if q := l.SettledBy(id); q != nil {
			got = q.ID
		}
		if got != want {
			t.Errorf("SettledBy(%s) = %q, want %q", id, got, want)
		}
	}
}
