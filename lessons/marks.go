package lessons

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Mark says where a number or a claim in a lesson's text comes from, so a
// test can recompute it from the recorded tables (see the package doc,
// "Marks"). The loader replaces each mark with its text; the page shows
// the plain number or words.
type Mark struct {
	File string
	Line int
	Kind byte   // '=' for a number, '?' for a claim
	Text string // as written: the number (=) or the words (?)
	Expr string // the expression after = or ?, without the rule
	Rule string // "" (round to Text's decimals), "floor", "ceil", "±X" or "±X%"; = only
	Raw  string // the mark as written in the file
	// Block is the id of the lesson block the mark is written in (a
	// question's explanation, a widget's goal), "" for prose.
	Block string

	expr     exprNode
	written  float64 // Text as a number (= only)
	decimals int     // digits after the point in Text
	commas   bool    // Text groups thousands with commas
}

// reMark finds a mark: [TEXT]{= EXPR} or [TEXT]{? EXPR}, on one line.
var reMark = regexp.MustCompile(`\[([^\[\]\n]+)\]\{([=?])([^{}\n]*)\}`)

// reMarkNumber is the text of a number mark: digits with optional comma
// thousands and decimals, and an optional minus.
var reMarkNumber = regexp.MustCompile(`^[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?$`)

// extractMarks finds the marks in src (a whole lesson file, LF line ends)
// outside the front matter, lab and table blocks, ordinary code blocks and
// inline code, and returns src with each mark replaced by its text (so
// line numbers do not change) and the marks in order. Problems with a
// mark's syntax are added to p.
func extractMarks(file string, src []byte, p *problems) ([]byte, []Mark) {
	if !strings.Contains(string(src), "]{") {
		return src, nil
	}
	lines := strings.SplitAfter(string(src), "\n")
	var out strings.Builder
	var marks []Mark
	inFront := len(lines) > 0 && strings.TrimRight(lines[0], " \t\n") == "---"
	fence := "" // the open fence's marker, "" outside a fence
	skip := false
	block := "" // the open fence's id= attribute
	for i, ln := range lines {
		n := i + 1
		switch {
		case inFront:
			if n > 1 && strings.TrimRight(ln, " \t\n") == "---" {
				inFront = false
			}
		case fence != "":
			if closesFence(ln, fence) {
				fence, skip, block = "", false, ""
			} else if !skip {
				ln = replaceMarks(file, n, block, ln, p, &marks)
			}
		default:
			if marker, info, ok := opensFence(ln); ok {
				fence = marker
				kind := firstWord(info)
				skip = !isInteractive(info) || kind == "lab" || kind == "table"
				block = fenceID(info)
			} else {
				ln = replaceMarks(file, n, "", ln, p, &marks)
			}
		}
		out.WriteString(ln)
	}
	return []byte(out.String()), marks
}

// opensFence reports whether line opens a fenced block at most three
// spaces in, returning its marker (``` or ~~~, as long as written) and
// its info string.
func opensFence(line string) (marker, info string, ok bool) {
	t := strings.TrimRight(line, "\n")
	trim := strings.TrimLeft(t, " ")
	if len(t)-len(trim) > 3 || len(trim) < 3 || (trim[0] != '`' && trim[0] != '~') {
		return "", "", false
	}
	ch := trim[0]
	k := 0
	for k < len(trim) && trim[k] == ch {
		k++
	}
	if k < 3 || (ch == '`' && strings.ContainsRune(trim[k:], '`')) {
		return "", "", false
	}
	return trim[:k], strings.TrimSpace(trim[k:]), true
}

// closesFence reports whether line closes a fence opened with marker.
func closesFence(line, marker string) bool {
	t := strings.TrimRight(line, "\n")
	trim := strings.TrimLeft(t, " ")
	if len(t)-len(trim) > 3 {
		return false
	}
	rest := strings.TrimLeft(trim, marker[:1])
	return len(trim)-len(rest) >= len(marker) && strings.TrimSpace(rest) == ""
}

// fenceID is the id= attribute of a fence's info string, or "".
func fenceID(info string) string {
	for _, t := range strings.Fields(info) {
		if id, ok := strings.CutPrefix(t, "id="); ok {
			return id
		}
	}
	return ""
}

// replaceMarks replaces the marks of one line outside inline code spans;
// block is the id of the block the line is in ("" in prose).
func replaceMarks(file string, n int, block, line string, p *problems, marks *[]Mark) string {
	if !strings.Contains(line, "]{") {
		return line
	}
	var b strings.Builder
	for _, seg := range codeSpans(line) {
		if seg.code {
			b.WriteString(seg.text)
			continue
		}
		b.WriteString(reMark.ReplaceAllStringFunc(seg.text, func(m string) string {
			sm := reMark.FindStringSubmatch(m)
			mk, msg := parseMark(sm[1], sm[2][0], sm[3])
			if msg != "" {
				p.add(n, "mark %s: %s", m, msg)
				return sm[1]
			}
			mk.File, mk.Line, mk.Raw, mk.Block = file, n, m, block
			*marks = append(*marks, mk)
			return sm[1]
		}))
	}
	return b.String()
}

type textSeg struct {
	text string
	code bool
}

// codeSpans splits a line into text and inline code spans (a run of
// backticks up to the next run of the same length).
func codeSpans(line string) []textSeg {
	var segs []textSeg
	start := 0
	for i := 0; i < len(line); {
		if line[i] != '`' {
			i++
			continue
		}
		k := i
		for k < len(line) && line[k] == '`' {
			k++
		}
		run := line[i:k]
		end := -1
		for j := k; j < len(line); {
			if line[j] != '`' {
				j++
				continue
			}
			m := j
			for m < len(line) && line[m] == '`' {
				m++
			}
			if m-j == len(run) {
				end = m
				break
			}
			j = m
		}
		if end < 0 {
			i = k
			continue
		}
		segs = append(segs, textSeg{text: line[start:i]}, textSeg{text: line[i:end], code: true})
		start, i = end, end
	}
	return append(segs, textSeg{text: line[start:]})
}

// parseMark checks one mark's text, expression and rule, returning a
// message when something is wrong.
func parseMark(text string, kind byte, body string) (Mark, string) {
	mk := Mark{Kind: kind, Text: text}
	expr := strings.TrimSpace(body)
	if kind == '=' {
		if i := strings.LastIndexByte(expr, ';'); i >= 0 {
			mk.Rule = strings.TrimSpace(expr[i+1:])
			expr = strings.TrimSpace(expr[:i])
			if !validRule(mk.Rule) {
				return mk, fmt.Sprintf("rule %q is not allowed: want floor, ceil, ±X (within X) or ±X%% (within X percent), or no rule to round to the written decimals", mk.Rule)
			}
		}
		sm := reMarkNumber.FindStringSubmatch(strings.TrimSpace(text))
		if sm == nil {
			return mk, fmt.Sprintf("the text %q is not a number: a [NUMBER]{= ...} mark holds one number such as 47.1 or 1,004 (write words in a [words]{? claim} mark)", text)
		}
		mk.decimals = len(sm[1])
		mk.commas = strings.Contains(text, ",")
		v, _ := strconv.ParseFloat(strings.NewReplacer(",", "", "−", "-").Replace(strings.TrimSpace(text)), 64)
		mk.written = v
	} else if strings.TrimSpace(text) == "" {
		return mk, "the text is empty: a [words]{? claim} mark shows its words"
	}
	mk.Expr = expr
	if expr == "" {
		return mk, "the expression is empty: want e.g. {= sat-sweep[60].ok_per_sec}"
	}
	node, err := parseExpr(expr)
	if err != nil {
		return mk, err.Error()
	}
	mk.expr = node
	return mk, ""
}

func validRule(r string) bool {
	if r == "floor" || r == "ceil" {
		return true
	}
	_, _, err := ruleTolerance(r)
	return err == nil
}

// ruleTolerance parses "±X" or "±X%".
func ruleTolerance(r string) (tol float64, percent bool, err error) {
	s, ok := strings.CutPrefix(r, "±")
	if !ok {
		if s, ok = strings.CutPrefix(r, "+-"); !ok {
			return 0, false, fmt.Errorf("not a tolerance")
		}
	}
	s, percent = strings.CutSuffix(strings.TrimSpace(s), "%")
	tol, err = strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(tol > 0) || math.IsInf(tol, 0) {
		return 0, false, fmt.Errorf("not a tolerance")
	}
	return tol, percent, nil
}

// ---- expressions ----

// exprNode is a parsed mark expression.
type exprNode interface {
	eval(e *evalEnv) (value, error)
}

// value is a number, a list of numbers (from several rows) or a truth.
type value struct {
	nums   []float64
	list   bool
	isBool bool
	b      bool
}

func num(v float64) value { return value{nums: []float64{v}} }

func (v value) scalar(what string) (float64, error) {
	if v.isBool {
		return 0, fmt.Errorf("%s is a claim (true or false), not a number", what)
	}
	if v.list {
		return 0, fmt.Errorf("%s names several rows: use it inside min, max, sum or mean", what)
	}
	return v.nums[0], nil
}

type numNode float64

func (n numNode) eval(*evalEnv) (value, error) { return num(float64(n)), nil }

type unaryNode struct{ x exprNode }

func (n unaryNode) eval(e *evalEnv) (value, error) {
	v, err := n.x.eval(e)
	if err != nil {
		return value{}, err
	}
	x, err := v.scalar("the operand of −")
	return num(-x), err
}

type binNode struct {
	op   string // + - * / < <= > >= = != and or
	x, y exprNode
}

func (n binNode) eval(e *evalEnv) (value, error) {
	a, err := n.x.eval(e)
	if err != nil {
		return value{}, err
	}
	b, err := n.y.eval(e)
	if err != nil {
		return value{}, err
	}
	if n.op == "and" || n.op == "or" {
		if !a.isBool || !b.isBool {
			return value{}, fmt.Errorf("%q joins claims (comparisons), not numbers", n.op)
		}
		if n.op == "and" {
			return value{isBool: true, b: a.b && b.b}, nil
		}
		return value{isBool: true, b: a.b || b.b}, nil
	}
	x, err := a.scalar("the left side of " + n.op)
	if err != nil {
		return value{}, err
	}
	y, err := b.scalar("the right side of " + n.op)
	if err != nil {
		return value{}, err
	}
	truth := func(t bool) (value, error) { return value{isBool: true, b: t}, nil }
	switch n.op {
	case "+":
		return num(x + y), nil
	case "-":
		return num(x - y), nil
	case "*":
		return num(x * y), nil
	case "/":
		switch {
		case y == 0 && e.static:
			return num(1), nil
		case y == 0:
			return value{}, fmt.Errorf("division by zero")
		}
		return num(x / y), nil
	case "<":
		return truth(x < y)
	case "<=":
		return truth(x <= y)
	case ">":
		return truth(x > y)
	case ">=":
		return truth(x >= y)
	case "=":
		return truth(x == y)
	case "!=":
		return truth(x != y)
	}
	return value{}, fmt.Errorf("unknown operator %q", n.op)
}

type funcNode struct {
	name string // min, max, sum, mean, abs
	args []exprNode
}

func (n funcNode) eval(e *evalEnv) (value, error) {
	var xs []float64
	for _, a := range n.args {
		v, err := a.eval(e)
		if err != nil {
			return value{}, err
		}
		if v.isBool {
			return value{}, fmt.Errorf("%s takes numbers, not claims", n.name)
		}
		xs = append(xs, v.nums...)
	}
	if len(xs) == 0 {
		return value{}, fmt.Errorf("%s of nothing", n.name)
	}
	switch n.name {
	case "min":
		return num(slices.Min(xs)), nil
	case "max":
		return num(slices.Max(xs)), nil
	case "sum", "mean":
		s := 0.0
		for _, x := range xs {
			s += x
		}
		if n.name == "mean" {
			s /= float64(len(xs))
		}
		return num(s), nil
	case "abs":
		if len(xs) != 1 {
			return value{}, fmt.Errorf("abs takes one number")
		}
		return num(math.Abs(xs[0])), nil
	}
	return value{}, fmt.Errorf("unknown function %q", n.name)
}

// refNode is a reference to recorded cells, NAME[ROWS].COLUMN or
// NAME[ROWS].(EXPR over columns), or to a preset's knob, NAME.KNOB.
type refNode struct {
	name   string
	rows   []string // row keys: an offered rate as written, "#N", or "*"; nil for a knob
	column string   // a column, a knob, or "" when scoped is set
	scoped exprNode // an expression over the row's columns
}

// colNode is a bare column name inside NAME[ROWS].( ... ).
type colNode string

func (n colNode) eval(e *evalEnv) (value, error) {
	if e.row == nil {
		return value{}, fmt.Errorf("%q is not a reference: name a table or preset, as in sat-sweep[60].%s", string(n), string(n))
	}
	return e.cell(e.row, string(n))
}

// knobs are the preset settings a mark may name as NAME.KNOB.
var knobs = []string{"workers", "spin_ms", "wait_ms", "limit", "cpus", "seconds", "seed", "closed", "timeout_ms", "windows", "stall_every", "stall_ms", "backlog", "lock_ms", "coherency_us"}

func knobValue(l *Lab, k string) float64 {
	switch k {
	case "workers":
		return float64(l.Workers)
	case "spin_ms":
		return float64(l.SpinMS)
	case "wait_ms":
		return float64(l.WaitMS)
	case "limit":
		return float64(l.Limit)
	case "cpus":
		return float64(l.CPUs)
	case "seconds":
		return l.Seconds
	case "seed":
		return float64(l.Seed)
	case "closed":
		return float64(l.Closed)
	case "timeout_ms":
		return timeoutOf(l).Seconds() * 1000
	case "windows":
		return float64(max(len(l.Rates), len(l.Clients), 1))
	case "stall_every":
		return float64(l.StallEvery)
	case "stall_ms":
		return float64(l.StallMS)
	case "backlog":
		return float64(l.Backlog)
	case "lock_ms":
		return float64(l.LockMS)
	case "coherency_us":
		return float64(l.CoherencyUS)
	}
	return math.NaN()
}

func (n refNode) eval(e *evalEnv) (value, error) {
	lab, table, err := e.resolve(n.name)
	if err != nil {
		return value{}, err
	}
	if n.rows == nil {
		if !slices.Contains(knobs, n.column) {
			return value{}, fmt.Errorf("%s.%s: %q is not a setting of a preset: want one of %s, or name rows as %s[ROW].%s", n.name, n.column, n.column, strings.Join(knobs, ", "), n.name, n.column)
		}
		return num(knobValue(lab, n.column)), nil
	}
	if table != nil && table.Pending {
		table = nil
	}
	if table == nil {
		e.pending = appendUnique(e.pending, lab.ID)
	}
	if table == nil && !e.static {
		return value{}, errPending
	}
	idx, err := rowIndexes(table, lab, n)
	if err != nil {
		return value{}, err
	}
	out := value{list: len(n.rows) > 1 || n.rows[0] == "*"}
	for _, i := range idx {
		var v value
		scope := &rowScope{table: table, index: i, preset: lab.ID, cols: lab.Columns()}
		if n.scoped != nil {
			saved := e.row
			e.row = scope
			v, err = n.scoped.eval(e)
			e.row = saved
		} else {
			v, err = e.cell(scope, n.column)
		}
		if err != nil {
			return value{}, err
		}
		if v.isBool {
			return value{}, fmt.Errorf("%s: a row's expression must be a number", n.name)
		}
		out.nums = append(out.nums, v.nums...)
	}
	return out, nil
}

// rowIndexes resolves a reference's row keys against a table's first
// column (its offered rate) or, for a table not yet recorded (t nil),
// against its preset's windows.
func rowIndexes(t *Table, lab *Lab, n refNode) ([]int, error) {
	keys := []string{}
	if t != nil {
		for _, r := range t.Rows {
			if len(r) > 0 {
				keys = append(keys, r[0])
			} else {
				keys = append(keys, "")
			}
		}
	} else if len(lab.Clients) > 1 {
		for _, c := range lab.Clients {
			keys = append(keys, strconv.Itoa(c)) // a window for each client count
		}
	} else if lab.Closed > 0 {
		keys = []string{""} // one window; its offered rate is measured
	} else {
		for _, r := range lab.Rates {
			keys = append(keys, fmtNum(r))
		}
	}
	var idx []int
	for _, k := range n.rows {
		switch {
		case k == "*":
			for i := range keys {
				idx = append(idx, i)
			}
		case strings.HasPrefix(k, "#"):
			i, err := strconv.Atoi(k[1:])
			if err != nil || i < 1 || i > len(keys) {
				return nil, fmt.Errorf("%s[%s]: there is no row %s: want #1 to #%d", n.name, k, k, len(keys))
			}
			idx = append(idx, i-1)
		default:
			want, _ := strconv.ParseFloat(k, 64)
			i := slices.IndexFunc(keys, func(c string) bool {
				v, err := strconv.ParseFloat(c, 64)
				return err == nil && v == want
			})
			if i < 0 {
				have := strings.Join(slices.DeleteFunc(slices.Clone(keys), func(s string) bool { return s == "" }), ", ")
				if len(lab.Clients) > 1 {
					return nil, fmt.Errorf("%s[%s]: no row with %s clients: want one of %s, #N for the N-th row, or *", n.name, k, k, have)
				}
				if lab.Closed > 0 {
					return nil, fmt.Errorf("%s[%s]: a closed-loop table's one row has a measured offered rate: name it [#1]", n.name, k)
				}
				return nil, fmt.Errorf("%s[%s]: no row offered %s: want one of %s, #N for the N-th row, or *", n.name, k, k, have)
			}
			idx = append(idx, i)
		}
	}
	return idx, nil
}

// errPending stops an evaluation that needs a table not yet recorded.
var errPending = fmt.Errorf("a table it reads is not recorded yet")

// rowScope is one row a reference reads: table is nil for a table not
// recorded yet, whose columns are the ones the recorder writes.
type rowScope struct {
	table  *Table
	index  int
	preset string   // the table's preset, named when a column is not recorded yet
	cols   []string // the columns the recorder writes for that preset now
}

// evalEnv is what an expression is evaluated against.
type evalEnv struct {
	course  *Course
	row     *rowScope
	static  bool     // check references only: every cell reads as 1, and nothing divides by zero
	pending []string // presets read whose tables are not recorded yet
	reads   []cellRead
}

// resolve finds the lab preset and its table for a name that is either.
func (e *evalEnv) resolve(name string) (*Lab, *Table, error) {
	b, _, ok := e.course.Block(name)
	if !ok {
		return nil, nil, fmt.Errorf("no table or lab preset %q in the course", name)
	}
	switch b := b.(type) {
	case *Table:
		lb, _, ok := e.course.Lab(b.Preset)
		if !ok {
			return nil, nil, fmt.Errorf("table %q names preset %q, which is not a lab block", name, b.Preset)
		}
		return lb, b, nil
	case *Lab:
		return b, e.course.tableOf(b.ID), nil
	}
	return nil, nil, fmt.Errorf("%q is a %s block: want a table or a lab preset", name, b.Kind())
}

// tableOf returns the (window) table recorded from the preset with the
// given id.
func (c *Course) tableOf(preset string) *Table {
	for _, l := range c.Lessons {
		for _, b := range l.Blocks() {
			if t, ok := b.(*Table); ok && t.Preset == preset && !t.TimeTable() {
				return t
			}
		}
	}
	return nil
}

// cellRead is a column of a preset's measurement an expression read.
type cellRead struct{ preset, column string }

// cell reads one cell of a row as a number (in a static check, 1).
func (e *evalEnv) cell(r *rowScope, col string) (value, error) {
	if !slices.Contains(e.reads, cellRead{r.preset, col}) {
		e.reads = append(e.reads, cellRead{r.preset, col})
	}
	cols := r.cols
	if r.table != nil {
		cols = r.table.Columns
	}
	c := slices.Index(cols, col)
	if c < 0 && r.table != nil && slices.Contains(r.cols, col) {
		// A column the recorder writes now, in a table recorded before it
		// did: it will be there once the table is recorded again.
		e.pending = appendUnique(e.pending, r.preset)
		if e.static {
			return num(1), nil
		}
		return value{}, errPending
	}
	switch {
	case c < 0 && r.table == nil:
		return value{}, fmt.Errorf("no column %q: want one of %s", col, strings.Join(cols, ", "))
	case c < 0:
		return value{}, fmt.Errorf("table %s has no column %q: want one of %s", r.table.ID, col, strings.Join(cols, ", "))
	case e.static:
		return num(1), nil
	case c >= len(r.table.Rows[r.index]):
		return value{}, fmt.Errorf("table %s row %d has no cell for %s", r.table.ID, r.index+1, col)
	}
	s := r.table.Rows[r.index][c]
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return value{}, fmt.Errorf("table %s row %d, %s is %q, not a number", r.table.ID, r.index+1, col, s)
	}
	return num(v), nil
}

func appendUnique(xs []string, x string) []string {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

// ---- parsing ----

type token struct {
	kind string // "num", "name", "op", "row" (#N), "end"
	text string
}

func tokenize(s string) ([]token, error) {
	var toks []token
	rs := []rune(s)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case unicode.IsDigit(r):
			j := i
			for j < len(rs) && (unicode.IsDigit(rs[j]) || rs[j] == '.') {
				j++
			}
			toks = append(toks, token{"num", string(rs[i:j])})
			i = j
		case r >= 'a' && r <= 'z':
			j := i
			for j < len(rs) && (rs[j] >= 'a' && rs[j] <= 'z' || unicode.IsDigit(rs[j]) || rs[j] == '_' ||
				rs[j] == '-' && j+1 < len(rs) && (rs[j+1] >= 'a' && rs[j+1] <= 'z' || unicode.IsDigit(rs[j+1]))) {
				j++
			}
			toks = append(toks, token{"name", string(rs[i:j])})
			i = j
		case r == '#':
			j := i + 1
			for j < len(rs) && unicode.IsDigit(rs[j]) {
				j++
			}
			if j == i+1 {
				return nil, fmt.Errorf("# must be followed by a row number, as in [#1]")
			}
			toks = append(toks, token{"row", string(rs[i:j])})
			i = j
		default:
			two := ""
			if i+1 < len(rs) {
				two = string(rs[i : i+2])
			}
			switch {
			case two == "<=" || two == ">=" || two == "==" || two == "!=":
				op := two
				if op == "==" {
					op = "="
				}
				toks = append(toks, token{"op", op})
				i += 2
				continue
			}
			op, ok := map[rune]string{'+': "+", '-': "-", '−': "-", '*': "*", '×': "*", '/': "/", '÷': "/",
				'(': "(", ')': ")", '[': "[", ']': "]", ',': ",", '.': ".", '<': "<", '>': ">", '=': "=",
				'≤': "<=", '≥': ">=", '≠': "!="}[r]
			if !ok {
				return nil, fmt.Errorf("unexpected %q in the expression: want numbers, names, + − × ÷ ( ) and comparisons", string(r))
			}
			toks = append(toks, token{"op", op})
			i++
		}
	}
	return append(toks, token{kind: "end"}), nil
}

type exprParser struct {
	toks   []token
	pos    int
	scoped int // depth of NAME[ROWS].( ... ) scopes
}

func parseExpr(s string) (exprNode, error) {
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	p := &exprParser{toks: toks}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != "end" {
		return nil, fmt.Errorf("unexpected %q after the expression", t.text)
	}
	return n, nil
}

func (p *exprParser) peek() token { return p.toks[p.pos] }
func (p *exprParser) next() token { t := p.toks[p.pos]; p.pos = min(p.pos+1, len(p.toks)-1); return t }
func (p *exprParser) isOp(op string) bool {
	t := p.peek()
	return t.kind == "op" && t.text == op
}
func (p *exprParser) isWord(w string) bool {
	t := p.peek()
	return t.kind == "name" && t.text == w
}
func (p *exprParser) expect(op string) error {
	if !p.isOp(op) {
		t := p.peek()
		if t.kind == "end" {
			return fmt.Errorf("the expression ends where %q was expected", op)
		}
		return fmt.Errorf("want %q, found %q", op, t.text)
	}
	p.next()
	return nil
}

func (p *exprParser) or() (exprNode, error) {
	x, err := p.and()
	for err == nil && p.isWord("or") {
		p.next()
		var y exprNode
		y, err = p.and()
		x = binNode{"or", x, y}
	}
	return x, err
}

func (p *exprParser) and() (exprNode, error) {
	x, err := p.cmp()
	for err == nil && p.isWord("and") {
		p.next()
		var y exprNode
		y, err = p.cmp()
		x = binNode{"and", x, y}
	}
	return x, err
}

func (p *exprParser) cmp() (exprNode, error) {
	x, err := p.sum()
	if err != nil {
		return nil, err
	}
	for _, op := range []string{"<", "<=", ">", ">=", "=", "!="} {
		if p.isOp(op) {
			p.next()
			y, err := p.sum()
			return binNode{op, x, y}, err
		}
	}
	return x, nil
}

func (p *exprParser) sum() (exprNode, error) {
	x, err := p.prod()
	for err == nil && (p.isOp("+") || p.isOp("-")) {
		op := p.next().text
		var y exprNode
		y, err = p.prod()
		x = binNode{op, x, y}
	}
	return x, err
}

func (p *exprParser) prod() (exprNode, error) {
	x, err := p.unary()
	for err == nil && (p.isOp("*") || p.isOp("/")) {
		op := p.next().text
		var y exprNode
		y, err = p.unary()
		x = binNode{op, x, y}
	}
	return x, err
}

func (p *exprParser) unary() (exprNode, error) {
	if p.isOp("-") {
		p.next()
		x, err := p.unary()
		return unaryNode{x}, err
	}
	return p.atom()
}

func (p *exprParser) atom() (exprNode, error) {
	t := p.next()
	switch t.kind {
	case "num":
		v, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", t.text)
		}
		return numNode(v), nil
	case "op":
		if t.text == "(" {
			x, err := p.or()
			if err != nil {
				return nil, err
			}
			return x, p.expect(")")
		}
		return nil, fmt.Errorf("unexpected %q", t.text)
	case "name":
		switch {
		case p.isOp("("):
			if !slices.Contains([]string{"min", "max", "sum", "mean", "abs"}, t.text) {
				return nil, fmt.Errorf("unknown function %q: want min, max, sum, mean or abs", t.text)
			}
			p.next()
			f := funcNode{name: t.text}
			for {
				a, err := p.or()
				if err != nil {
					return nil, err
				}
				f.args = append(f.args, a)
				if p.isOp(",") {
					p.next()
					continue
				}
				return f, p.expect(")")
			}
		case p.isOp("["):
			return p.ref(t.text)
		case p.isOp("."):
			p.next()
			k := p.next()
			if k.kind != "name" {
				return nil, fmt.Errorf("want a setting after %s., such as %s.workers", t.text, t.text)
			}
			return refNode{name: t.text, column: k.text}, nil
		case p.scoped > 0:
			return colNode(t.text), nil
		}
		return nil, fmt.Errorf("%q is not a reference: write NAME[ROW].COLUMN (a table or preset, a row by its offered rate or #N, a column), NAME.SETTING, or a column inside NAME[ROW].( ... ); put spaces around a minus between names", t.text)
	case "row":
		return nil, fmt.Errorf("%s is a row: write it inside brackets after a table, as in name[%s].ok", t.text, t.text)
	}
	return nil, fmt.Errorf("the expression ends too soon")
}

// ref parses NAME[ROWS].COLUMN or NAME[ROWS].( EXPR ); NAME was read.
func (p *exprParser) ref(name string) (exprNode, error) {
	p.next() // [
	n := refNode{name: name}
	for {
		t := p.next()
		switch {
		case t.kind == "row" && p.isOp("-"):
			// #A-#B: the rows from position A to B, as a time table's
			// seconds are read.
			p.next()
			e := p.next()
			a, _ := strconv.Atoi(t.text[1:])
			b, _ := strconv.Atoi(e.text[1:])
			if e.kind != "row" || b < a {
				return nil, fmt.Errorf("%s[%s-%s]: want a range of positions, first to last, as in [#11-#30]", name, t.text, e.text)
			}
			for i := a; i <= b; i++ {
				n.rows = append(n.rows, "#"+strconv.Itoa(i))
			}
		case t.kind == "num" || t.kind == "row":
			n.rows = append(n.rows, t.text)
		case t.kind == "op" && t.text == "*":
			n.rows = append(n.rows, "*")
		default:
			return nil, fmt.Errorf("%s[...]: want rows by offered rate (60), position (#1), positions (#11-#30) or * for every row, found %q", name, t.text)
		}
		if p.isOp(",") {
			p.next()
			continue
		}
		if err := p.expect("]"); err != nil {
			return nil, fmt.Errorf("%s[...]: %v", name, err)
		}
		break
	}
	if err := p.expect("."); err != nil {
		return nil, fmt.Errorf("%s[%s]: want .COLUMN after the rows", name, strings.Join(n.rows, ","))
	}
	if p.isOp("(") {
		p.next()
		p.scoped++
		x, err := p.or()
		p.scoped--
		if err != nil {
			return nil, err
		}
		n.scoped = x
		return n, p.expect(")")
	}
	c := p.next()
	if c.kind != "name" {
		return nil, fmt.Errorf("%s[%s]: want a column name after the dot", name, strings.Join(n.rows, ","))
	}
	n.column = c.text
	return n, nil
}

// ---- checking ----

// Mark statuses, from CheckMarks.
const (
	MarkOK      = "ok"      // the number rounds to what is written, or the claim holds
	MarkStale   = "stale"   // the tables say otherwise: Want is the number to write
	MarkPending = "pending" // it reads a table not recorded yet
	MarkBroken  = "broken"  // it cannot be computed (a cell that is not a number, a division by zero)
)

// MarkResult is a mark checked against the recorded tables.
type MarkResult struct {
	Mark
	Status  string
	Value   float64  // = marks: what the tables give
	Want    string   // = marks that are stale: the text to write, with the same decimals
	Pending []string // presets whose tables are not recorded yet
	Err     string   // broken marks: why
}

// Source is the mark as written in the file.
func (m Mark) Source() string {
	body := m.Expr
	if m.Rule != "" {
		body += "; " + m.Rule
	}
	return "[" + m.Text + "]{" + string(m.Kind) + " " + body + "}"
}

// String is one line for a listing: "file:line: mark: status ...".
func (r MarkResult) String() string {
	head := fmt.Sprintf("%s:%d: %s", r.File, r.Line, r.Source())
	switch r.Status {
	case MarkOK:
		if r.Kind == '?' {
			return head + ": holds"
		}
		return head + ": ok (" + fmtValue(r.Value) + ")"
	case MarkStale:
		if r.Kind == '?' {
			return head + ": NO LONGER HOLDS: reword the claim (and what follows from it)"
		}
		return fmt.Sprintf("%s: STALE: the tables give %s; write %s", head, fmtValue(r.Value), r.Want)
	case MarkPending:
		cmds := make([]string, len(r.Pending))
		for i, p := range r.Pending {
			cmds[i] = "server lessons record --lab " + p
		}
		return head + ": pending: not recorded yet (" + strings.Join(cmds, "; ") + ")"
	}
	return head + ": BROKEN: " + r.Err
}

func fmtValue(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// CheckMarks recomputes every mark of the course from the recorded tables,
// in file and line order.
func (c *Course) CheckMarks() []MarkResult {
	var out []MarkResult
	for _, l := range c.Lessons {
		for _, m := range l.Marks {
			out = append(out, c.checkMark(m))
		}
	}
	slices.SortStableFunc(out, func(a, b MarkResult) int {
		if a.File != b.File {
			return strings.Compare(a.File, b.File)
		}
		return a.Line - b.Line
	})
	return out
}

func (c *Course) checkMark(m Mark) MarkResult {
	r := MarkResult{Mark: m}
	e := &evalEnv{course: c}
	v, err := m.expr.eval(e)
	r.Pending = e.pending
	switch {
	case err == errPending || (err != nil && len(e.pending) > 0):
		r.Status = MarkPending
		return r
	case err != nil:
		r.Status, r.Err = MarkBroken, err.Error()
		return r
	}
	if m.Kind == '?' {
		r.Status = MarkStale
		if v.b {
			r.Status = MarkOK
		}
		return r
	}
	x, err := v.scalar("the expression")
	if err != nil {
		r.Status, r.Err = MarkBroken, err.Error()
		return r
	}
	r.Value = x
	ok, want := m.agrees(x)
	r.Status = MarkOK
	if !ok {
		r.Status, r.Want = MarkStale, want
	}
	return r
}

// agrees reports whether v, rounded by the mark's rule, is the written
// number, and the text the rule gives for v.
func (m Mark) agrees(v float64) (bool, string) {
	scale := math.Pow(10, float64(m.decimals))
	const eps = 1e-9
	var got float64
	switch m.Rule {
	case "floor":
		got = math.Floor(v*scale+eps) / scale
	case "ceil":
		got = math.Ceil(v*scale-eps) / scale
	default:
		x := v * scale
		got = math.Round(x+math.Copysign(eps, x)) / scale // a half computed as 0.4999… still rounds away from zero
	}
	want := m.format(got)
	if m.Rule != "" && m.Rule != "floor" && m.Rule != "ceil" {
		tol, percent, _ := ruleTolerance(m.Rule)
		if percent {
			tol = tol / 100 * math.Abs(v)
		}
		return math.Abs(v-m.written) <= tol+eps, want
	}
	return math.Abs(got-m.written) < 0.5/scale, want
}

// format writes v as the mark's text is written: the same decimals, and
// comma thousands when the text has them.
func (m Mark) format(v float64) string {
	s := strconv.FormatFloat(v, 'f', m.decimals, 64)
	if !m.commas {
		return s
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, d := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	out := b.String()
	if hasFrac {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

// checkMarkRefs checks, when the course has loaded, that every mark names
// tables, presets, rows and columns that exist (for a table not recorded
// yet, the preset's windows and the recorder's columns) and gives a number
// (=) or a claim (?). Values are not compared here: that is CheckMarks.
func (c *Course) checkMarkRefs() Errors {
	var errs Errors
	for _, l := range c.Lessons {
		for _, m := range l.Marks {
			e := &evalEnv{course: c, static: true}
			v, err := m.expr.eval(e)
			switch {
			case err != nil:
			case m.Kind == '=' && v.isBool:
				err = fmt.Errorf("the expression is a claim (a comparison): write it as [words]{? ...}, or give a number")
			case m.Kind == '=' && v.list:
				err = fmt.Errorf("the expression names several rows: use min, max, sum or mean to make one number")
			case m.Kind == '?' && !v.isBool:
				err = fmt.Errorf("the expression is a number, not a claim: compare it (<, ≤, =, ≥, >) or write it as [NUMBER]{= ...}")
			}
			if err != nil {
				errs = append(errs, Error{File: m.File, Line: m.Line, Msg: fmt.Sprintf("mark %s: %v", m.Source(), err)})
			}
		}
	}
	return errs
}

// FixMarks rewrites, in the lesson files under dir, the number of every
// stale = mark in results to the number the tables give (Want), with the
// same decimals and rule, and returns how many it changed. Claims (?) are
// left for a person: their words, and the sentences around every changed
// number, may need rewording too.
func FixMarks(dir string, results []MarkResult) (int, error) {
	byFile := map[string][]MarkResult{}
	for _, r := range results {
		if r.Status == MarkStale && r.Kind == '=' && r.Want != "" {
			byFile[r.File] = append(byFile[r.File], r)
		}
	}
	changed := 0
	for file, rs := range byFile {
		path := filepath.Join(dir, file)
		src, err := os.ReadFile(path)
		if err != nil {
			return changed, err
		}
		lines := splitLines(src)
		for _, r := range rs {
			if r.Line < 1 || r.Line > len(lines) || !strings.Contains(string(lines[r.Line-1]), r.Raw) {
				return changed, fmt.Errorf("%s:%d: the mark %s is no longer there: the file changed since it was checked; check again", file, r.Line, r.Raw)
			}
			fixed := strings.Replace(r.Raw, "["+r.Text+"]", "["+r.Want+"]", 1)
			lines[r.Line-1] = []byte(strings.Replace(string(lines[r.Line-1]), r.Raw, fixed, 1))
			changed++
		}
		var out bytes.Buffer
		writeLines(&out, lines)
		if err := writeFileAtomic(path, out.Bytes()); err != nil {
			return changed, err
		}
	}
	return changed, nil
}
