package lessons

import (
	"cmp"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

//go:embed content
var content embed.FS

// Content returns the course content embedded in the binary: the files of
// lessons/content, at the root of the returned FS.
func Content() fs.FS {
	sub, err := fs.Sub(content, "content")
	if err != nil {
		// fs.Sub fails only for an invalid directory name; "content" is valid.
		panic(err)
	}
	return sub
}

// Load parses and validates every lesson file at the root of fsys: each
// *.md file except README.md and names starting with "." or "_".
// Subdirectories are not read. On any problem it returns nil and an Errors
// listing every problem found, each with file and line; otherwise the
// course in reading order (part, number). A table still to be
// recorded (pending: true) is a problem, and lab blocks' settings are not
// checked against the lab and the generator: see LoadWith.
func Load(fsys fs.FS) (*Course, error) {
	return LoadWith(fsys, LoadOptions{})
}

// LoadOptions says what LoadWith accepts and checks beyond what Load does.
type LoadOptions struct {
	// Pending accepts tables written "pending: true", whose presets are
	// still to be recorded, for authors (`server lessons check --pending`,
	// `server --content`) and the recorder. The embedded course is loaded
	// without it, so nothing unrecorded ships.
	Pending bool

	// CheckLab says what in a lab block's settings the lab or the load
	// generator would refuse, one problem a setting (package recorder's
	// CheckLab: the content package does not know their limits). Load
	// reports each at the setting's line, with every other problem of
	// the course. nil leaves the settings unchecked.
	CheckLab func(*Lab) []LabProblem

	noPrints bool // skip table fingerprint checks: the recorder reads presets whose tables are stale
}

// LabProblem is a setting of a lab block that cannot be run as it is.
type LabProblem struct {
	Key string // the setting, as the block names it: workers, rng, accept, ...
	Msg string // what is wrong and what is allowed, e.g. "workers 0 is not allowed: want 1 to 1024"
}

// LoadWith is Load with the options opts asks for.
func LoadWith(fsys fs.FS, opts LoadOptions) (*Course, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, Errors{{File: ".", Msg: fmt.Sprintf("cannot read the content directory: %v", err)}}
	}
	md := newMarkdown()
	var errs Errors
	var files []*parsed
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !isLessonFile(name) {
			continue
		}
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			errs = append(errs, Error{File: name, Msg: fmt.Sprintf("cannot read the file: %v", err)})
			continue
		}
		pf, perrs := parseFileWith(md, name, src, opts)
		errs = append(errs, perrs...)
		files = append(files, pf)
		if opts.CheckLab != nil && pf.lesson != nil {
			errs = append(errs, checkLabs(pf.lesson, opts.CheckLab)...)
		}
	}
	if len(files) == 0 && len(errs) == 0 {
		return nil, Errors{{File: ".", Msg: "no lessons found: want at least one *.md file (other than README.md) at the top of the content directory"}}
	}
	errs = append(errs, checkCourse(files)...)
	if len(errs) > 0 {
		return nil, errs.sorted()
	}
	c := &Course{}
	for _, f := range files {
		c.Lessons = append(c.Lessons, f.lesson)
	}
	sortLessons(c.Lessons)
	// Marks name blocks anywhere in the course, so they are checked once
	// every file has loaded.
	if errs := append(c.checkMarkRefs(), c.checkGates()...); len(errs) > 0 {
		return nil, errs.sorted()
	}
	return c, nil
}

// Check runs the same parsing and validation as LoadWith, for authors
// (`server lessons check [--pending] [DIR]`), and then recomputes every
// mark: a number that no longer rounds to what the tables give, a claim
// that no longer holds, or (without Pending) a mark reading a table not
// recorded yet is a problem too, as is a predict whose recorded run falls
// outside its correct option's value or inside a wrong one's. It returns nil or an Errors; it prints
// nothing.
func Check(fsys fs.FS, opts LoadOptions) error {
	c, err := LoadWith(fsys, opts)
	if err != nil {
		return err
	}
	var errs Errors
	for _, r := range c.CheckMarks() {
		if r.Status == MarkOK || (r.Status == MarkPending && opts.Pending) {
			continue
		}
		msg := strings.TrimPrefix(r.String(), fmt.Sprintf("%s:%d: ", r.File, r.Line))
		errs = append(errs, Error{File: r.File, Line: r.Line, Msg: "mark " + msg})
	}
	errs = append(errs, c.checkValues()...)
	if len(errs) > 0 {
		return errs.sorted()
	}
	return nil
}

// checkLabs runs check on every lab block of l that gives every setting a
// preset must (a missing one is reported already), each problem at its
// setting's line.
func checkLabs(l *Lesson, check func(*Lab) []LabProblem) Errors {
	var errs Errors
	for _, b := range l.Blocks() {
		lab, ok := b.(*Lab)
		if !ok || !lab.complete {
			continue
		}
		for _, pr := range check(lab) {
			errs = append(errs, Error{File: l.File, Line: lab.KeyLine(pr.Key), Msg: fmt.Sprintf("lab %q: %s", lab.ID, pr.Msg)})
		}
	}
	return errs
}

// isLessonFile reports whether a file name at the content root is a lesson.
func isLessonFile(name string) bool {
	return path.Ext(name) == ".md" && name != "README.md" &&
		!strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "_")
}

func sortLessons(ls []*Lesson) {
	slices.SortStableFunc(ls, func(a, b *Lesson) int {
		return cmp.Or(cmp.Compare(a.Part, b.Part), cmp.Compare(a.Number, b.Number), cmp.Compare(a.Slug, b.Slug))
	})
}

// checkCourse runs the checks that span files: unique slugs, unique block
// ids, unique positions, each chapter's lessons next to each other in
// reading order, and builds_on naming earlier lessons.
func checkCourse(files []*parsed) Errors {
	var errs Errors
	add := func(file string, line int, format string, args ...any) {
		errs = append(errs, Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
	type at struct {
		file string
		line int
	}
	slugs := map[string]at{}
	ids := map[string]at{}
	places := map[string]at{}
	bySlug := map[string]*Lesson{}
	for _, f := range files {
		l := f.lesson
		if l.Slug != "" {
			if prev, dup := slugs[l.Slug]; dup {
				add(l.File, f.slugLine, "front matter: slug %q is already used by %s:%d: want a slug unique in the course", l.Slug, prev.file, prev.line)
			} else {
				slugs[l.Slug] = at{l.File, f.slugLine}
				bySlug[l.Slug] = l
			}
		}
		if l.Part != "" && l.Number > 0 {
			key := fmt.Sprintf("%s\x00%d", l.Part, l.Number)
			if prev, dup := places[key]; dup {
				add(l.File, f.numberLine, "front matter: number %d is already used in part %q by %s:%d: want each lesson's number unique in its part", l.Number, l.Part, prev.file, prev.line)
			} else {
				places[key] = at{l.File, f.numberLine}
			}
		}
		for _, r := range f.ids {
			if prev, dup := ids[r.id]; dup {
				add(l.File, r.line, "block id %q is already used at %s:%d: want ids unique in the course", r.id, prev.file, prev.line)
			} else {
				ids[r.id] = at{l.File, r.line}
			}
		}
	}
	sorted := make([]*Lesson, 0, len(files))
	for _, f := range files {
		sorted = append(sorted, f.lesson)
	}
	sortLessons(sorted)
	pos := map[*Lesson]int{}
	for i, l := range sorted {
		pos[l] = i
	}
	// A chapter is the lessons of a part that share its name, and it must
	// be one run in reading order: the index lists each chapter once.
	line := map[*Lesson]int{}
	for _, f := range files {
		line[f.lesson] = f.chapterLine
	}
	first := map[string]*Lesson{}
	for i, l := range sorted {
		if l.Part == "" || l.Chapter == "" || l.Number <= 0 {
			continue
		}
		key := l.Part + "\x00" + l.Chapter
		prev, seen := first[key]
		switch {
		case !seen:
			first[key] = l
		case sorted[i-1].Part != l.Part || sorted[i-1].Chapter != l.Chapter:
			add(l.File, line[l], "front matter: chapter %q comes back here after %s (number %d) of chapter %q: want a chapter's lessons numbered one after another (it starts at %s, number %d)",
				l.Chapter, sorted[i-1].File, sorted[i-1].Number, sorted[i-1].Chapter, prev.File, prev.Number)
		}
	}
	for _, f := range files {
		l := f.lesson
		for i, s := range l.BuildsOn {
			line := 1
			if i < len(f.buildsOnLines) {
				line = f.buildsOnLines[i]
			}
			dep, ok := bySlug[s]
			switch {
			case s == l.Slug || !validName(s):
				// Reported with the front matter.
			case !ok:
				add(l.File, line, "front matter: builds_on names %q, but no lesson has that slug", s)
			case pos[dep] > pos[l]:
				add(l.File, line, "front matter: builds_on names %q, which comes later in the course (%s, chapter %q, number %d): list earlier lessons only", s, dep.Part, dep.Chapter, dep.Number)
			}
		}
	}
	return errs
}

// Fixture reports whether l is a test fixture (part FixturePart): the site
// serves it at its URL but does not list it.
func (l *Lesson) Fixture() bool { return l.Part == FixturePart }

// Listed returns the lessons the site lists (its index, /teach,
// /api/lessons, a learning platform's picker): every lesson but the
// fixtures, in course order.
func (c *Course) Listed() []*Lesson {
	out := make([]*Lesson, 0, len(c.Lessons))
	for _, l := range c.Lessons {
		if !l.Fixture() {
			out = append(out, l)
		}
	}
	return out
}

// Lesson returns the lesson with the given slug.
func (c *Course) Lesson(slug string) (*Lesson, bool) {
	i := c.index(slug)
	if i < 0 {
		return nil, false
	}
	return c.Lessons[i], true
}

// Prev returns the lesson before slug in reading order, if any.
func (c *Course) Prev(slug string) (*Lesson, bool) {
	i := c.index(slug)
	if i <= 0 {
		return nil, false
	}
	return c.Lessons[i-1], true
}

// Next returns the lesson after slug in reading order, if any.
func (c *Course) Next(slug string) (*Lesson, bool) {
	i := c.index(slug)
	if i < 0 || i+1 >= len(c.Lessons) {
		return nil, false
	}
	return c.Lessons[i+1], true
}

func (c *Course) index(slug string) int {
	return slices.IndexFunc(c.Lessons, func(l *Lesson) bool { return l.Slug == slug })
}

// Block returns the block with the given id (a question, model, lab or
// table; ids are unique in the course) and the lesson that holds it.
// Callout ids are unique only within a lesson and are not found here.
func (c *Course) Block(id string) (Block, *Lesson, bool) {
	for _, l := range c.Lessons {
		if b, ok := l.Block(id); ok {
			if _, isCallout := b.(*Callout); !isCallout {
				return b, l, true
			}
		}
	}
	return nil, nil, false
}

// Question returns the predict or check block with the given id and the
// lesson that holds it.
func (c *Course) Question(id string) (*Question, *Lesson, bool) {
	b, l, ok := c.Block(id)
	q, isQ := b.(*Question)
	if !ok || !isQ {
		return nil, nil, false
	}
	return q, l, true
}

// Model returns the model block with the given id and the lesson that
// holds it.
func (c *Course) Model(id string) (*Model, *Lesson, bool) {
	b, l, ok := c.Block(id)
	m, isM := b.(*Model)
	if !ok || !isM {
		return nil, nil, false
	}
	return m, l, true
}

// Lab returns the lab block with the given id and the lesson that holds it.
func (c *Course) Lab(id string) (*Lab, *Lesson, bool) {
	b, l, ok := c.Block(id)
	lb, isL := b.(*Lab)
	if !ok || !isL {
		return nil, nil, false
	}
	return lb, l, true
}

// Block returns the block of this lesson with the given id.
func (l *Lesson) Block(id string) (Block, bool) {
	for _, p := range l.Body {
		if p.Block != nil && p.Block.BlockID() == id {
			return p.Block, true
		}
	}
	return nil, false
}

// Blocks returns the lesson's blocks in document order.
func (l *Lesson) Blocks() []Block {
	var bs []Block
	for _, p := range l.Body {
		if p.Block != nil {
			bs = append(bs, p.Block)
		}
	}
	return bs
}

// BlockKinds lists every block kind, in the order pages and JSON show them.
func BlockKinds() []string {
	return []string{"predict", "check", "model", "lab", "table", "record", "callout"}
}

// Counts returns how many blocks of each kind the lesson has; every kind in
// BlockKinds is present, with 0 when the lesson has none.
func (l *Lesson) Counts() map[string]int {
	counts := make(map[string]int, len(BlockKinds()))
	for _, k := range BlockKinds() {
		counts[k] = 0
	}
	for _, p := range l.Body {
		if p.Block != nil {
			counts[p.Block.Kind()]++
		}
	}
	return counts
}

// Correct returns the correct option of the question.
func (q *Question) Correct() (Option, bool) {
	for _, o := range q.Options {
		if o.Correct {
			return o, true
		}
	}
	return Option{}, false
}

// Option returns the option with the given id ("a", "b", ...).
func (q *Question) Option(id string) (Option, bool) {
	for _, o := range q.Options {
		if o.ID == id {
			return o, true
		}
	}
	return Option{}, false
}

// Settling returns the measurement that settles a predict block: the lab
// preset its settled_by names (directly, or as the preset of the table it
// names) and that preset's recorded tables in this lesson. lab is nil
// when settled_by names nothing of this lesson.
func (l *Lesson) Settling(q *Question) (lab *Lab, tables []*Table) {
	b, ok := l.Block(q.SettledBy)
	if !ok {
		return nil, nil
	}
	switch b := b.(type) {
	case *Lab:
		lab = b
	case *Table:
		lb, _ := l.Block(b.Preset)
		lab, _ = lb.(*Lab)
		if lab == nil {
			return nil, []*Table{b}
		}
	default:
		return nil, nil
	}
	for _, p := range l.Body {
		if t, ok := p.Block.(*Table); ok && t.Preset == lab.ID {
			tables = append(tables, t)
		}
	}
	return lab, tables
}

// SettledBy returns the predict block whose measurement a lab or table
// block is (see Settling), or nil: the first such predict in the lesson.
// A page keeps that measurement folded until the learner has answered the
// predict. Pages ask for every block on every view, so a loaded lesson
// answers from an index built once (settledIndex).
func (l *Lesson) SettledBy(id string) *Question {
	if l.settled != nil {
		return l.settled[id]
	}
	return l.settledIndex()[id]
}

// settledIndex maps each lab and table block that settles a predict to
// that predict (the first, in lesson order): every block settlingIDs
// names, twins and their tables included, since a simulated preset and a
// live one with the same settings measure one sweep.
func (l *Lesson) settledIndex() map[string]*Question {
	out := map[string]*Question{}
	for _, p := range l.Body {
		q, ok := p.Block.(*Question)
		if !ok || q.Type != "predict" {
			continue
		}
		for id := range l.settlingIDs(q) {
			if _, seen := out[id]; !seen {
				out[id] = q
			}
		}
	}
	return out
}

// twins returns the other lab presets of the lesson with lab's settings
// where one of the two is simulated and the other is not: the same sweep,
// simulated and measured.
func (l *Lesson) twins(lab *Lab) []*Lab {
	if lab == nil {
		return nil
	}
	var out []*Lab
	same := strings.TrimSuffix(canonicalPreset(lab), " simulated")
	for _, p := range l.Body {
		if o, ok := p.Block.(*Lab); ok && o != lab && o.Simulated != lab.Simulated && strings.TrimSuffix(canonicalPreset(o), " simulated") == same {
			out = append(out, o)
		}
	}
	return out
}
