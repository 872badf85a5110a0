package lessons

import (
	"bytes"
	"fmt"
	"html/template"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Limits on front matter values.
const (
	maxSlugLen = 64
	maxNumber  = 999
	maxMinutes = 240
)

var (
	reName    = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)
	reMarker  = regexp.MustCompile(`^\[!([A-Za-z]+)(?:[ \t]+([^\]]*?))?[ \t]*\]$`)
	reDateFmt = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
)

// newMarkdown returns the goldmark converter used for all content: GFM
// (tables, strikethrough, autolinks, task lists), heading ids, and
// goldmark's default safe mode (raw HTML is not passed through).
func newMarkdown() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithAutoHeadingID(), parser.WithASTTransformers(util.Prioritized(focusableTables{}, 1000))),
	)
}

// focusableTables makes every table of the prose reachable by keyboard
// (tabindex 0): on a narrow screen a wide one scrolls sideways inside
// itself (app.css), and a region that scrolls must take the focus so that
// its arrows scroll it, as the result tables' regions do.
type focusableTables struct{}

func (focusableTables) Transform(doc *ast.Document, _ text.Reader, _ parser.Context) {
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if _, ok := n.(*east.Table); ok && entering {
			n.SetAttributeString("tabindex", []byte("0"))
		}
		return ast.WalkContinue, nil
	})
}

// idRef is where a block id was defined, for course-wide checks.
type idRef struct {
	id   string
	line int
}

// parsed is one file's lesson plus the line numbers course-wide checks need.
type parsed struct {
	lesson        *Lesson
	slugLine      int
	numberLine    int
	chapterLine   int
	buildsOnLines []int
	ids           []idRef // question, model, lab and table ids
}

// fileParser parses one file. Lines are 1-based file lines.
type fileParser struct {
	md        goldmark.Markdown
	p         *problems
	src       []byte // whole file, LF line ends
	lineStart []int  // byte offset of each line's start
	bodyStart int    // offset of the body within src

	tables []*tableAt // tables parsed so far, for checkTables
	reads  []readAt   // predicts' read: fields, for checkReads
	judges []judgeAt  // judge blocks, for checkJudges
	opts   LoadOptions
}

// lineOf returns the file line of byte offset off within src.
func (fp *fileParser) lineOf(off int) int {
	return sort.Search(len(fp.lineStart), func(i int) bool { return fp.lineStart[i] > off })
}

// bodyLine returns the file line of offset off within the body (an
// unknown offset, -1, counts as the body's start).
func (fp *fileParser) bodyLine(off int) int { return fp.lineOf(fp.bodyStart + max(off, 0)) }

// lineText returns file line n (1-based) without its line end, or "" and
// false past the end.
func (fp *fileParser) lineText(n int) (string, bool) {
	if n < 1 || n > len(fp.lineStart) {
		return "", false
	}
	start := fp.lineStart[n-1]
	end := len(fp.src)
	if n < len(fp.lineStart) {
		end = fp.lineStart[n] - 1
	}
	if start > end {
		return "", true
	}
	return strings.TrimSuffix(string(fp.src[start:end]), "\n"), true
}

// parseFileWith parses and validates one lesson file as opts allow. It
// always returns a lesson (possibly incomplete) so course-wide checks can
// still run.
func parseFileWith(md goldmark.Markdown, name string, src []byte, opts LoadOptions) (*parsed, Errors) {
	p := &problems{file: name}
	src = bytes.TrimPrefix(src, []byte("\xef\xbb\xbf"))
	src = bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))
	var marks []Mark
	if utf8.Valid(src) {
		src, marks = extractMarks(name, src, p)
	}
	fp := &fileParser{md: md, p: p, src: src, lineStart: []int{0}, opts: opts}
	for i, b := range src {
		if b == '\n' && i+1 < len(src) {
			fp.lineStart = append(fp.lineStart, i+1)
		}
	}
	out := &parsed{lesson: &Lesson{File: name, Marks: marks}}
	if !utf8.Valid(src) {
		bad := 0
		for i := 0; i < len(src); {
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size <= 1 {
				bad = i
				break
			}
			i += size
		}
		p.add(fp.lineOf(bad), "the file is not valid UTF-8: save it as UTF-8")
		return out, p.errs
	}
	body, ok := fp.frontMatter(out)
	if ok {
		fp.body(out, body)
	}
	return out, p.errs
}

// frontMatterFields is the YAML between the --- lines.
type frontMatterFields struct {
	Slug     string   `yaml:"slug"`
	Part     string   `yaml:"part"`
	Chapter  string   `yaml:"chapter"`
	Number   int      `yaml:"number"`
	Title    string   `yaml:"title"`
	Minutes  int      `yaml:"minutes"`
	BuildsOn []string `yaml:"builds_on"`
	AsOf     string   `yaml:"as_of"`
}

// frontMatter reads the front matter into out and returns the body. ok is
// false when the body cannot be located.
func (fp *fileParser) frontMatter(out *parsed) (body []byte, ok bool) {
	first, _ := fp.lineText(1)
	if strings.TrimRight(first, " \t") != "---" {
		fp.p.add(1, "a lesson starts with front matter: put --- on line 1, then slug, part, chapter, number, title, minutes, builds_on and as_of, then ---")
		return fp.src, true
	}
	closing := 0
	for n := 2; n <= len(fp.lineStart); n++ {
		if t, _ := fp.lineText(n); strings.TrimRight(t, " \t") == "---" {
			closing = n
			break
		}
	}
	if closing == 0 {
		fp.p.add(1, "the front matter opened on line 1 is never closed: add a line --- after it")
		return nil, false
	}
	yamlStart := fp.lineStart[1]
	yamlEnd := fp.lineStart[closing-1]
	fp.bodyStart = len(fp.src)
	if closing < len(fp.lineStart) {
		fp.bodyStart = fp.lineStart[closing]
	}
	var fm frontMatterFields
	d, decoded := decodeYAML(fp.p, 2, 1, "front matter", fp.src[yamlStart:yamlEnd], &fm)
	l := out.lesson
	l.Slug, l.Part, l.Chapter, l.Number = fm.Slug, fm.Part, fm.Chapter, fm.Number
	l.Title, l.Minutes, l.BuildsOn, l.AsOf = fm.Title, fm.Minutes, fm.BuildsOn, fm.AsOf
	out.slugLine = d.line("slug")
	out.numberLine = d.line("number")
	out.chapterLine = d.line("chapter")
	for i := range fm.BuildsOn {
		out.buildsOnLines = append(out.buildsOnLines, d.line("builds_on", i))
	}
	if decoded {
		fp.checkFrontMatter(d, l)
	}
	return fp.src[fp.bodyStart:], true
}

func (fp *fileParser) checkFrontMatter(d *ydoc, l *Lesson) {
	p := fp.p
	for _, f := range []struct{ key, want string }{
		{"slug", `a lowercase name such as "littles-law"`},
		{"part", `the part of the course, such as "Capacity"`},
		{"chapter", "the chapter title"},
		{"number", "the lesson's position in its part, 1, 2, ..."},
		{"title", "the lesson title"},
		{"minutes", "the reading and doing time in minutes"},
		{"as_of", "the date the content was last checked, YYYY-MM-DD"},
	} {
		if !d.has(f.key) {
			p.add(1, "front matter: %s is missing: want %s", f.key, f.want)
		}
	}
	if d.has("slug") && !validName(l.Slug) {
		p.add(d.line("slug"), "front matter: slug %q is not allowed: want lowercase letters, digits and single hyphens, at most %d characters", l.Slug, maxSlugLen)
	}
	for _, f := range []struct {
		key string
		val *string
	}{{"part", &l.Part}, {"chapter", &l.Chapter}, {"title", &l.Title}} {
		*f.val = strings.TrimSpace(*f.val)
		if d.has(f.key) && *f.val == "" {
			p.add(d.line(f.key), "front matter: %s is empty: want text", f.key)
		}
	}
	if d.has("number") && (l.Number < 1 || l.Number > maxNumber) {
		p.add(d.line("number"), "front matter: number %d is not allowed: want 1 to %d", l.Number, maxNumber)
	}
	if d.has("minutes") && (l.Minutes < 1 || l.Minutes > maxMinutes) {
		p.add(d.line("minutes"), "front matter: minutes %d is not allowed: want 1 to %d", l.Minutes, maxMinutes)
	}
	if d.has("as_of") && !validDate(l.AsOf) {
		p.add(d.line("as_of"), "front matter: as_of %q is not a date: want YYYY-MM-DD, such as 2026-11-30", l.AsOf)
	}
	seen := map[string]bool{}
	for i, s := range l.BuildsOn {
		line := d.line("builds_on", i)
		switch {
		case !validName(s):
			p.add(line, "front matter: builds_on[%d] %q is not a lesson slug: want lowercase letters, digits and single hyphens", i, s)
		case s == l.Slug:
			p.add(line, "front matter: builds_on names this lesson itself (%q): list earlier lessons only", s)
		case seen[s]:
			p.add(line, "front matter: builds_on lists %q twice", s)
		}
		seen[s] = true
	}
}

func validName(s string) bool { return len(s) <= maxSlugLen && reName.MatchString(s) }

func validDate(s string) bool {
	if !reDateFmt.MatchString(s) {
		return false
	}
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

// body parses the Markdown body into parts.
func (fp *fileParser) body(out *parsed, body []byte) {
	doc := fp.md.Parser().Parse(text.NewReader(body), parser.WithContext(parser.NewContext()))
	headings := fp.checkTree(doc, body)
	l := out.lesson
	var prose bytes.Buffer
	flush := func() {
		if prose.Len() > 0 {
			l.Body = append(l.Body, Part{HTML: template.HTML(prose.String())})
			prose.Reset()
		}
	}
	callouts := 0
	var blocks []blockRef
	var refs []ref
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		if fc, ok := n.(*ast.FencedCodeBlock); ok && isInteractive(infoOf(fc, body)) {
			flush()
			if b := fp.fenced(out, fc, body, &blocks, &refs); b != nil {
				l.Body = append(l.Body, Part{Block: b})
			}
			continue
		}
		if bq, ok := n.(*ast.Blockquote); ok {
			if m := markerOf(bq, body); m != nil {
				flush()
				callouts++
				if c := fp.callout(bq, m, body, callouts); c != nil {
					l.Body = append(l.Body, Part{Block: c})
				}
				continue
			}
		}
		fp.render(&prose, body, n)
	}
	flush()
	for _, part := range l.Body {
		if c, ok := part.Block.(*Callout); ok {
			if hl, clash := headings[c.ID]; clash {
				fp.p.add(hl, "the heading's id %q is also the id of the callout on line %d: reword the heading", c.ID, c.Line)
			}
		}
	}
	fp.checkRefs(blocks, refs, headings)
	l.settled = l.settledIndex()
	l.gates = l.gateIndex()
	fp.checkReads(l)
	fp.checkJudges(l)
	for _, ta := range fp.tables {
		if lb, ok := l.Block(ta.table.Preset); ok {
			if lab, ok := lb.(*Lab); ok {
				ta.table.Show = lab.Show
				ta.table.Lab = lab
			}
		}
	}
	fp.checkTables(l, fp.tables)
}

// render renders one top-level node as HTML into w.
func (fp *fileParser) render(w *bytes.Buffer, src []byte, n ast.Node) {
	if err := fp.md.Renderer().Render(w, src, n); err != nil {
		fp.p.add(fp.bodyLine(startOf(n)), "the Markdown could not be rendered: %v", err)
	}
}

// checkTree reports raw HTML, level-1 headings, and interactive blocks or
// callouts that are not at the top level, and returns heading ids with
// their lines.
func (fp *fileParser) checkTree(doc ast.Node, body []byte) map[string]int {
	headings := map[string]int{}
	htmlLine := 0 // report raw HTML once per line
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.HTMLBlock, *ast.RawHTML:
			if line := fp.bodyLine(startOf(n)); line != htmlLine {
				fp.p.add(line, "raw HTML is not allowed in lessons: write Markdown instead")
				htmlLine = line
			}
		case *ast.Heading:
			line := fp.bodyLine(startOf(n))
			if n.Level == 1 {
				fp.p.add(line, "a level-1 heading (# ...) is not allowed: the title comes from the front matter, so start sections at ##")
			}
			if id, ok := n.AttributeString("id"); ok {
				if b, ok := id.([]byte); ok {
					headings[string(b)] = line
				}
			}
		case *ast.FencedCodeBlock:
			if n.Parent() != doc {
				if info := infoOf(n, body); isInteractive(info) {
					fp.p.add(fp.bodyLine(n.Info.Segment.Start), "a %s block must start at the left margin, not inside a list or quote", firstWord(info))
				}
			}
		case *ast.Blockquote:
			if n.Parent() != doc && markerOf(n, body) != nil {
				fp.p.add(fp.bodyLine(startOf(n)), "a callout must start at the left margin, not inside a list or another quote")
			}
		}
		return ast.WalkContinue, nil
	})
	return headings
}

// startOf returns the body offset where n's text starts, or -1 when n
// holds no text.
func startOf(n ast.Node) int {
	switch n := n.(type) {
	case *ast.Text:
		return n.Segment.Start
	case *ast.RawHTML:
		if n.Segments.Len() > 0 {
			return n.Segments.At(0).Start
		}
	}
	if n.Type() == ast.TypeBlock && n.Lines().Len() > 0 {
		return n.Lines().At(0).Start
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if s := startOf(c); s >= 0 {
			return s
		}
	}
	return -1
}

func infoOf(fc *ast.FencedCodeBlock, src []byte) string {
	if fc.Info == nil {
		return ""
	}
	return strings.TrimSpace(string(fc.Info.Segment.Value(src)))
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// isFenceKind reports whether kind is written as a fenced block.
func isFenceKind(kind string) bool {
	switch kind {
	case "predict", "check", "model", "lab", "table", "record", "judge":
		return true
	}
	return false
}

// isInteractive reports whether a fence's info string marks a lesson block:
// its first word is a block kind, or it carries an id=.
func isInteractive(info string) bool {
	f := strings.Fields(info)
	if len(f) == 0 {
		return false
	}
	if isFenceKind(f[0]) {
		return true
	}
	for _, t := range f[1:] {
		if strings.HasPrefix(t, "id=") {
			return true
		}
	}
	return false
}

// marker is a parsed callout marker line such as [!ASOF 2026-11-30].
type marker struct {
	kind, arg string
	para      *ast.Paragraph
	lineStart int // body offsets of the marker line
	lineEnd   int
	bad       bool // starts with [! but is not a well-formed marker
}

// markerOf returns the callout marker of a blockquote, or nil when the
// quote is an ordinary quote.
func markerOf(bq *ast.Blockquote, src []byte) *marker {
	para, ok := bq.FirstChild().(*ast.Paragraph)
	if !ok || para.Lines().Len() == 0 {
		return nil
	}
	seg := para.Lines().At(0)
	line := strings.TrimSpace(string(seg.Value(src)))
	if !strings.HasPrefix(line, "[!") {
		return nil
	}
	m := &marker{para: para, lineStart: seg.Start, lineEnd: seg.Stop}
	sm := reMarker.FindStringSubmatch(line)
	if sm == nil {
		m.bad = true
		return m
	}
	m.kind, m.arg = strings.ToLower(sm[1]), strings.TrimSpace(sm[2])
	return m
}

// callout builds a callout from a marked blockquote.
func (fp *fileParser) callout(bq *ast.Blockquote, m *marker, src []byte, n int) *Callout {
	line := fp.bodyLine(m.lineStart)
	const want = "want > [!REMEMBER], > [!LIMITS] or > [!ASOF YYYY-MM-DD] alone on the first line of the quote"
	if m.bad {
		fp.p.add(line, "callout marker is not well formed: %s", want)
		return nil
	}
	c := &Callout{ID: fmt.Sprintf("callout-%d", n), Line: line}
	switch m.kind {
	case CalloutRemember, CalloutLimits:
		if m.arg != "" {
			fp.p.add(line, "callout %s takes no argument, got %q: %s", strings.ToUpper(m.kind), m.arg, want)
			return nil
		}
	case CalloutAsOf:
		if !validDate(m.arg) {
			fp.p.add(line, "callout ASOF needs a date, got %q: want > [!ASOF YYYY-MM-DD], such as > [!ASOF 2026-11-30]", m.arg)
			return nil
		}
		c.Date = m.arg
	default:
		fp.p.add(line, "unknown callout kind %q: %s", strings.ToUpper(m.kind), want)
		return nil
	}
	c.Type = m.kind
	// Drop the marker line: the inline nodes that start on it.
	for ch := m.para.FirstChild(); ch != nil; {
		next := ch.NextSibling()
		if s := startOf(ch); s < 0 || s >= m.lineEnd {
			break
		}
		m.para.RemoveChild(m.para, ch)
		ch = next
	}
	if m.para.ChildCount() == 0 {
		bq.RemoveChild(bq, m.para)
	}
	if bq.ChildCount() == 0 {
		fp.p.add(line, "callout %s has no text: write it on the quoted lines after the marker", strings.ToUpper(m.kind))
		return nil
	}
	var buf bytes.Buffer
	for ch := bq.FirstChild(); ch != nil; ch = ch.NextSibling() {
		fp.render(&buf, src, ch)
	}
	c.Body = template.HTML(buf.String())
	return c
}
