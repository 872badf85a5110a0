package lessons

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"capacitylab/hedge"
	"capacitylab/input"
	"capacitylab/model"
	"capacitylab/result"
	"capacitylab/retry"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"gopkg.in/yaml.v3"
)

// Limits on block contents.
const (
	minOptions = 2
	maxOptions = 8
	maxRates   = 8
	maxRate    = 2000 // requests a second
	maxSeconds = 30   // window length
	maxClosed  = 1024 // closed-loop clients
	// maxClientWorkers bounds max_inflight, an open-loop client's fixed
	// pool of workers: the runner's cap on clients.
	maxClientWorkers = 256
	maxChanges       = 8 // knob changes (at) in a preset, the runner's cap
	maxTimeoutMS     = 60000
	maxFanout        = 100 // sub-requests an arrival: the generator's cap (loadrun.MaxFanout)

	maxRecordLabel = 80  // characters in a record field's label
	maxRecordHint  = 300 // characters in a record field's hint
)

// blockRef is a block found in the body, known from its fence line even
// when its YAML could not be read, so references to it do not cascade.
type blockRef struct {
	kind string
	id   string
	line int
}

// ref is a reference from one block to another in the same lesson.
type ref struct {
	what   string   // `predict "q1": settled_by`
	line   int      // where the reference is written
	target string   // the id referred to
	kinds  []string // kinds the target may have
	from   int      // index of the referring block in blocks; target must come after it when after is set
	after  bool
}

type optionFields struct {
	Text    string    `yaml:"text"`
	Correct bool      `yaml:"correct"`
	Explain string    `yaml:"explain"`
	Value   yaml.Node `yaml:"value"` // a predict's: a number or [low, high]; kept as a node to read either
}

type predictFields struct {
	Prompt    string         `yaml:"prompt"`
	Options   []optionFields `yaml:"options"`
	SettledBy string         `yaml:"settled_by"`
	Read      *readFields    `yaml:"read"`
}

type readFields struct {
	Rows    []float64 `yaml:"rows"`
	Columns []string  `yaml:"columns"`
	FromS   *float64  `yaml:"from_s"`
	ToS     *float64  `yaml:"to_s"`
}

type checkFields struct {
	Prompt  string         `yaml:"prompt"`
	Options []optionFields `yaml:"options"`
}

type targetFields struct {
	Param string  `yaml:"param"`
	Value float64 `yaml:"value"`
	Tol   float64 `yaml:"tol"`
	Find  bool    `yaml:"find"`
}

type goalFields struct {
	Text  string         `yaml:"text"`
	Want  []targetFields `yaml:"want"`
	Found string         `yaml:"found"`
}

type modelFields struct {
	Widget  string             `yaml:"widget"`
	Solve   string             `yaml:"solve"`
	Values  map[string]float64 `yaml:"values"`
	Goal    goalFields         `yaml:"goal"`
	Assumes []string           `yaml:"assumes"`
	Ignores []string           `yaml:"ignores"`
}

type labFields struct {
	Workers   int       `yaml:"workers"`
	SpinMS    int       `yaml:"spin_ms"`
	WaitMS    int       `yaml:"wait_ms"`
	Limit     int       `yaml:"limit"`
	CPUs      int       `yaml:"cpus"`
	Rates     []float64 `yaml:"rates"`
	Seconds   float64   `yaml:"seconds"`
	Seed      int64     `yaml:"seed"`
	Closed    int       `yaml:"closed"`
	TimeoutMS int       `yaml:"timeout_ms"`
	Show      []string  `yaml:"show"`

	StallEvery int    `yaml:"stall_every"`
	StallMS    int    `yaml:"stall_ms"`
	RNG        string `yaml:"rng"`
	Backlog    int    `yaml:"backlog"`
	Accept     string `yaml:"accept"`
	Policy     string `yaml:"policy"`
	Simulated  bool   `yaml:"simulated"`

	MaxInFlight int      `yaml:"max_inflight"`
	At          []string `yaml:"at"`
	OverTime    bool     `yaml:"over_time"`

	Retry     string  `yaml:"retry"`
	Critical  float64 `yaml:"critical"`
	Sheddable float64 `yaml:"sheddable"`

	Clients     []int  `yaml:"clients"`
	Fanout      int    `yaml:"fanout"`
	Hedge       string `yaml:"hedge"`
	Dist        string `yaml:"dist"`
	LockMS      int    `yaml:"lock_ms"`
	CoherencyUS int    `yaml:"coherency_us"`
}

type tableFields struct {
	Caption string     `yaml:"caption"`
	Columns []string   `yaml:"columns"`
	Rows    [][]string `yaml:"rows"`
	Source  string     `yaml:"source"`

	Fingerprint string `yaml:"fingerprint"`
	Fixture     bool   `yaml:"fixture"`
	Pending     bool   `yaml:"pending"`
}

type recordFieldFields struct {
	Label string `yaml:"label"`
	Hint  string `yaml:"hint"`
}

type judgeFields struct {
	Lab       string   `yaml:"lab"`
	Rate      float64  `yaml:"rate"`
	Seeds     []uint64 `yaml:"seeds"`
	BudgetMS  float64  `yaml:"budget_ms"`
	Delivered float64  `yaml:"delivered"`
}

type recordFields struct {
	Prompt      string             `yaml:"prompt"`
	Setting     *recordFieldFields `yaml:"setting"`
	Criterion   *recordFieldFields `yaml:"criterion"`
	Measurement *recordFieldFields `yaml:"measurement"`
	Number      *recordFieldFields `yaml:"number"`
	Reverse     *recordFieldFields `yaml:"reverse"`
}

// fenced parses one interactive fenced block. It returns nil when the block
// has problems that keep it from being shown.
func (fp *fileParser) fenced(out *parsed, fc *ast.FencedCodeBlock, body []byte, blocks *[]blockRef, refs *[]ref) Block {
	line := fp.bodyLine(fc.Info.Segment.Start)
	info := infoOf(fc, body)
	fp.checkClosed(fc, body, line, firstWord(info))
	kind, attrs, ok := fp.parseInfo(info, line)
	if !ok {
		return nil
	}
	id := attrs["id"]
	out.ids = append(out.ids, idRef{id: id, line: line})
	*blocks = append(*blocks, blockRef{kind: kind, id: id, line: line})
	self := len(*blocks) - 1
	var src bytes.Buffer
	for i := 0; i < fc.Lines().Len(); i++ {
		seg := fc.Lines().At(i)
		src.Write(seg.Value(body))
	}
	what := fmt.Sprintf("%s %q", kind, id)
	switch kind {
	case "predict":
		var f predictFields
		d, ok := decodeYAML(fp.p, line+1, line, what, src.Bytes(), &f)
		if !ok {
			return nil
		}
		q := fp.question(d, what, kind, id, line, f.Prompt, f.Options)
		if !d.has("settled_by") || strings.TrimSpace(f.SettledBy) == "" {
			fp.p.add(d.line("settled_by"), "%s: settled_by is missing: want the id of the lab or table block later in this lesson whose measurement settles it", what)
		} else {
			q.SettledBy = strings.TrimSpace(f.SettledBy)
			*refs = append(*refs, ref{what: what + ": settled_by", line: d.line("settled_by"), target: q.SettledBy,
				kinds: []string{"lab", "table"}, from: self, after: true})
		}
		if f.Read != nil {
			q.Read = &Reading{Rows: f.Read.Rows, Columns: f.Read.Columns, Over: f.Read.FromS != nil || f.Read.ToS != nil}
			if f.Read.FromS != nil {
				q.Read.FromS = *f.Read.FromS
			}
			if f.Read.ToS != nil {
				q.Read.ToS = *f.Read.ToS
			}
			known := AllColumns()
			if q.Read.Over {
				known = result.StretchColumns()
			}
			if len(f.Read.Columns) == 0 {
				fp.p.add(d.line("read"), "%s: read.columns is empty: want the columns that settle it, from %s", what, strings.Join(known, ", "))
			}
			if q.Read.Over {
				fp.stretchColumns(d, what, q.Read.Columns)
			} else {
				fp.readColumns(d, what, q.Read.Columns)
			}
			fp.reads = append(fp.reads, readAt{q: q, what: what, d: d})
		}
		fp.optionValues(d, what, q, f.Options)
		return q
	case "check":
		var f checkFields
		d, ok := decodeYAML(fp.p, line+1, line, what, src.Bytes(), &f)
		if !ok {
			return nil
		}
		for i, o := range f.Options {
			if o.Value.Kind != 0 {
				fp.p.add(d.line("options", i, "value"), "%s: option %s: value is for a predict's options (the value of the quantity its read: names): remove it", what, string(rune('a'+i)))
			}
		}
		return fp.question(d, what, kind, id, line, f.Prompt, f.Options)
	case "model":
		var f modelFields
		d, ok := decodeYAML(fp.p, line+1, line, what, src.Bytes(), &f)
		if !ok {
			return nil
		}
		return fp.model(d, what, id, line, f)
	case "lab":
		var f labFields
		d, ok := decodeYAML(fp.p, line+1, line, what, src.Bytes(), &f)
		if !ok {
			return nil
		}
		return fp.lab(d, what, id, line, f)
	case "table":
		var f tableFields
		d, ok := decodeYAML(fp.p, line+1, line, what, src.Bytes(), &f)
		t := &Table{ID: id, Line: line, Preset: attrs["preset"]}
		if t.Preset != "" {
			*refs = append(*refs, ref{what: what + ": preset", line: line, target: t.Preset, kinds: []string{"lab"}, from: self})
		}
		if !ok {
			return nil
		}
		return fp.table(d, what, t, f)
	case "record":
		var f recordFields
		d, ok := decodeYAML(fp.p, line+1, line, what, src.Bytes(), &f)
		if !ok {
			return nil
		}
		return fp.record(d, what, id, line, f)
	case "judge":
		var f judgeFields
		d, ok := decodeYAML(fp.p, line+1, line, what, src.Bytes(), &f)
		if !ok {
			return nil
		}
		j := fp.judge(d, what, id, line, f)
		if j.Lab != "" {
			*refs = append(*refs, ref{what: what + ": lab", line: d.line("lab"), target: j.Lab, kinds: []string{"lab"}, from: self})
			fp.judges = append(fp.judges, judgeAt{j: j, what: what, d: d})
		}
		return j
	}
	return nil
}

// maxJudgeSeeds is the most seeds a judge block may ask a choice to pass:
// each is a run the learner makes.
const maxJudgeSeeds = 5

// judge validates a judge block: the lab it judges, the rate, the seeds
// and both halves of the criterion. That the rate is one of the lab's is
// checked once the lesson's blocks are known (checkJudges).
func (fp *fileParser) judge(d *ydoc, what, id string, line int, f judgeFields) *Judge {
	p := fp.p
	j := &Judge{ID: id, Line: line, Lab: strings.TrimSpace(f.Lab), Rate: f.Rate, Seeds: f.Seeds, BudgetMS: f.BudgetMS, Delivered: f.Delivered}
	if j.Lab == "" {
		p.add(line, "%s: lab is missing: want the id of the lab block whose runs are judged", what)
	}
	if !d.has("rate") || !(f.Rate > 0) {
		p.add(d.line("rate"), "%s: rate is missing or not above 0: want the offered rate judged, one of the lab's rates", what)
	}
	seen := map[uint64]bool{}
	for i, s := range f.Seeds {
		if seen[s] {
			p.add(d.line("seeds", i), "%s: seeds[%d] %d is given twice: want each seed once", what, i, s)
		}
		seen[s] = true
	}
	if n := len(f.Seeds); n == 0 || n > maxJudgeSeeds {
		p.add(d.line("seeds"), "%s: seeds has %d entries: want 1 to %d seeds a choice must pass on", what, n, maxJudgeSeeds)
	}
	if !(f.BudgetMS > 0) || f.BudgetMS > maxTimeoutMS {
		p.add(d.line("budget_ms"), "%s: budget_ms %g is not allowed: want the p99 budget, above 0 and at most %d ms (the longest caller timeout)", what, f.BudgetMS, maxTimeoutMS)
	}
	if !(f.Delivered > 0 && f.Delivered <= 1) {
		p.add(d.line("delivered"), "%s: delivered %g is not allowed: want the least share of requests sent that must be answered, above 0 and at most 1 (0.99)", what, f.Delivered)
	}
	return j
}

// judgeAt is a judge block to check against its lab once the lesson's
// blocks are known.
type judgeAt struct {
	j    *Judge
	what string
	d    *ydoc
}

// checkJudges checks each judge block's rate against the lab it judges,
// which must be an open-loop preset offering that rate.
func (fp *fileParser) checkJudges(l *Lesson) {
	for _, ja := range fp.judges {
		b, ok := l.Block(ja.j.Lab)
		lab, isLab := b.(*Lab)
		if !ok || !isLab {
			continue // reported by checkRefs
		}
		switch {
		case lab.Closed > 0:
			fp.p.add(ja.d.line("lab"), "%s: lab %q is a closed loop: want an open-loop preset, whose rate is judged", ja.what, lab.ID)
		case lab.Simulated:
			fp.p.add(ja.d.line("lab"), "%s: lab %q is simulated: want a preset learners run", ja.what, lab.ID)
		case ja.j.Rate > 0 && !slices.Contains(lab.Rates, ja.j.Rate):
			fp.p.add(ja.d.line("rate"), "%s: rate %g is not an offered rate of the preset %q: want one of %s", ja.what, ja.j.Rate, lab.ID, RateList(lab.Rates))
		}
	}
}

// record validates a record block: a prompt and the five fields, each
// with a label and an optional hint.
func (fp *fileParser) record(d *ydoc, what, id string, line int, f recordFields) *RecordBlock {
	p := fp.p
	rb := &RecordBlock{ID: id, Line: line}
	if strings.TrimSpace(f.Prompt) == "" {
		p.add(d.line("prompt"), "%s: prompt is missing: want the instruction shown above the form", what)
	} else {
		rb.Prompt = fp.snippet(f.Prompt, d.line("prompt"), what+": prompt")
	}
	given := map[string]*recordFieldFields{FieldSetting: f.Setting, FieldCriterion: f.Criterion,
		FieldMeasurement: f.Measurement, FieldNumber: f.Number, FieldReverse: f.Reverse}
	for _, name := range RecordFieldNames() {
		g := given[name]
		if g == nil {
			p.add(line, "%s: %s is missing: a record block gives all five fields (%s), each with label: and optionally hint:", what, name, strings.Join(RecordFieldNames(), ", "))
			continue
		}
		label, hint := strings.TrimSpace(g.Label), strings.TrimSpace(g.Hint)
		switch {
		case label == "":
			p.add(d.line(name), "%s: %s has no label: want label: the text shown next to the field", what, name)
		case len(label) > maxRecordLabel:
			p.add(d.line(name, "label"), "%s: %s label is %d characters: want at most %d", what, name, len(label), maxRecordLabel)
		}
		if len(hint) > maxRecordHint {
			p.add(d.line(name, "hint"), "%s: %s hint is %d characters: want at most %d", what, name, len(hint), maxRecordHint)
		}
		rb.Fields = append(rb.Fields, RecordField{Name: name, Label: label, Hint: hint})
	}
	return rb
}

// checkClosed reports a fence that runs to the end of the file because its
// closing fence is missing.
func (fp *fileParser) checkClosed(fc *ast.FencedCodeBlock, body []byte, line int, kind string) {
	open, _ := fp.lineText(line)
	open = strings.TrimLeft(open, " ")
	if open == "" {
		return
	}
	ch := open[0]
	n := len(open) - len(strings.TrimLeft(open, string(ch)))
	next := line + 1
	if k := fc.Lines().Len(); k > 0 {
		next = fp.bodyLine(fc.Lines().At(k-1).Start) + 1
	}
	t, ok := fp.lineText(next)
	t = strings.TrimSpace(t)
	if !ok || len(t) < n || strings.Trim(t, string(ch)) != "" {
		fp.p.add(line, "the %s block opened here is never closed: add a line %s after its YAML", kind, strings.Repeat(string(ch), n))
	}
}

// parseInfo splits a fence info string such as "table id=t1 preset=lab1".
func (fp *fileParser) parseInfo(info string, line int) (kind string, attrs map[string]string, ok bool) {
	f := strings.Fields(info)
	kind = f[0]
	if !isFenceKind(kind) {
		fp.p.add(line, "unknown block kind %q: want predict, check, model, lab, table or record (callouts are quotes: > [!REMEMBER], > [!LIMITS], > [!ASOF YYYY-MM-DD])", kind)
		return "", nil, false
	}
	allowed := "id=NAME"
	if kind == "table" {
		allowed = "id=NAME and preset=LAB-ID"
	}
	attrs = map[string]string{}
	ok = true
	for _, t := range f[1:] {
		k, v, found := strings.Cut(t, "=")
		switch {
		case !found || (k != "id" && !(k == "preset" && kind == "table")):
			fp.p.add(line, "%s block: unknown attribute %q: want %s", kind, t, allowed)
			ok = false
		case attrs[k] != "" || (found && v == ""):
			fp.p.add(line, "%s block: %s must be given once, with a value", kind, k)
			ok = false
		default:
			attrs[k] = v
		}
	}
	id, hasID := attrs["id"]
	switch {
	case !hasID:
		fp.p.add(line, "%s block has no id: write ```%s id=some-name", kind, kind)
		ok = false
	case !validName(id):
		fp.p.add(line, "%s block: id %q is not allowed: want lowercase letters, digits and single hyphens, at most %d characters", kind, id, maxSlugLen)
		ok = false
	case strings.HasPrefix(id, "callout-"):
		fp.p.add(line, "%s block: id %q is reserved: ids starting with callout- name callouts", kind, id)
		ok = false
	}
	if kind == "table" && attrs["preset"] == "" && ok {
		fp.p.add(line, "table block has no preset: write ```table id=%s preset=LAB-ID naming the lab block it was recorded from", id)
	}
	return kind, attrs, ok
}

// question validates and builds a predict or check block.
func (fp *fileParser) question(d *ydoc, what, kind, id string, line int, prompt string, opts []optionFields) *Question {
	p := fp.p
	q := &Question{ID: id, Type: kind, Line: line}
	if strings.TrimSpace(prompt) == "" {
		p.add(d.line("prompt"), "%s: prompt is missing: want the question to ask", what)
	} else {
		q.Prompt = fp.snippet(prompt, d.line("prompt"), what+": prompt")
	}
	if len(opts) < minOptions || len(opts) > maxOptions {
		p.add(d.line("options"), "%s: has %d options: want %d to %d", what, len(opts), minOptions, maxOptions)
	}
	correct := 0
	texts := map[string]string{}
	for i, o := range opts {
		oid := string(rune('a' + i))
		ol := d.line("options", i)
		text := strings.TrimSpace(o.Text)
		if text == "" {
			p.add(ol, "%s: option %s has no text", what, oid)
		} else if prev, dup := texts[text]; dup {
			p.add(ol, "%s: option %s has the same text as option %s", what, oid, prev)
		} else {
			texts[text] = oid
		}
		opt := Option{ID: oid, Text: text, Correct: o.Correct, Line: ol}
		if text != "" {
			opt.HTML, opt.Text = fp.inline(text, ol, fmt.Sprintf("%s: option %s", what, oid))
		}
		if strings.TrimSpace(o.Explain) == "" {
			p.add(ol, "%s: option %s has no explanation: add explain: saying why it is right or wrong", what, oid)
		} else {
			opt.Explain = fp.snippet(o.Explain, d.line("options", i, "explain"), fmt.Sprintf("%s: option %s", what, oid))
		}
		if o.Correct {
			correct++
		}
		q.Options = append(q.Options, opt)
	}
	if len(opts) > 0 && correct != 1 {
		p.add(d.line("options"), "%s: has %d correct options: want exactly one option with correct: true", what, correct)
	}
	return q
}

// model validates and builds a model block against package model's specs.
func (fp *fileParser) model(d *ydoc, what, id string, line int, f modelFields) *Model {
	p := fp.p
	m := &Model{ID: id, Line: line, Widget: f.Widget, Solve: f.Solve, Values: f.Values,
		Goal: Goal{Text: strings.TrimSpace(f.Goal.Text), Found: strings.TrimSpace(f.Goal.Found)}}
	spec, known := model.Specs()[f.Widget]
	if !d.has("widget") {
		p.add(line, "%s: widget is missing: want one of %s", what, strings.Join(model.Kinds(), ", "))
		return m
	}
	if !known {
		p.add(d.line("widget"), "%s: unknown widget %q: want one of %s", what, f.Widget, strings.Join(model.Kinds(), ", "))
		return m
	}
	var names []string
	for _, prm := range spec.Params {
		names = append(names, prm.Name)
	}
	allowed := strings.Join(names, ", ")
	if len(spec.Solves) > 0 {
		solves := strings.Join(spec.Solves, ", ")
		switch {
		case f.Solve == "":
			p.add(d.line("solve"), "%s: solve is missing: want the quantity the widget works out, one of %s", what, solves)
		case !slices.Contains(spec.Solves, f.Solve):
			p.add(d.line("solve"), "%s: solve %q is not a quantity %s works out: want one of %s", what, f.Solve, f.Widget, solves)
		default:
			if _, given := f.Values[f.Solve]; given {
				p.add(d.line("values", f.Solve), "%s: values.%s is worked out by the widget (solve: %s): leave it out", what, f.Solve, f.Solve)
			}
		}
	} else if d.has("solve") {
		p.add(d.line("solve"), "%s: solve applies to the widgets that work one quantity out (%s) only: remove it", what, strings.Join(solvingKinds(), ", "))
	}
	if err := model.Validate(f.Widget, f.Values); err != nil {
		var pes input.FieldErrors
		if errors.As(err, &pes) {
			for _, param := range pes.Names() {
				msg := pes[param]
				if !slices.Contains(names, param) {
					msg += ": want one of " + allowed
				}
				p.add(d.line("values", param), "%s: values.%s: %s", what, param, msg)
			}
		} else {
			p.add(d.line("values"), "%s: values: %v", what, err)
		}
	}
	if !d.has("goal") {
		p.add(line, "%s: goal is missing: want text, want (a list of param, value, tol) and found", what)
	} else {
		if m.Goal.Text == "" {
			p.add(d.line("goal", "text"), "%s: goal.text is missing: want the instruction to the learner", what)
		}
		if m.Goal.Found == "" {
			p.add(d.line("goal", "found"), "%s: goal.found is missing: want what the learner has found when the goal is reached", what)
		}
		if len(f.Goal.Want) == 0 {
			p.add(d.line("goal", "want"), "%s: goal.want is empty: want at least one {param, value, tol}", what)
		}
		quantities := model.QuantityNames(f.Widget)
		for i, t := range f.Goal.Want {
			tl := d.line("goal", "want", i)
			switch {
			case !slices.Contains(quantities, t.Param):
				p.add(tl, "%s: goal.want[%d]: param %q is not a quantity of %s: want one of %s", what, i, t.Param, f.Widget, strings.Join(quantities, ", "))
			case !(t.Tol > 0) || math.IsInf(t.Tol, 0):
				p.add(tl, "%s: goal.want[%d]: tol %g is not allowed: want a tolerance above 0", what, i, t.Tol)
			case !slices.Contains(names, t.Param):
				if math.IsNaN(t.Value) || math.IsInf(t.Value, 0) {
					p.add(tl, "%s: goal.want[%d]: value %g is not allowed: want a number", what, i, t.Value)
				}
			default:
				if err := model.Validate(f.Widget, map[string]float64{t.Param: t.Value}); err != nil {
					p.add(tl, "%s: goal.want[%d]: %v", what, i, err)
				}
			}
			m.Goal.Want = append(m.Goal.Want, Target(t))
		}
	}
	m.Assumes = fp.list(d, what, "assumes", f.Assumes, "what the model takes for granted")
	m.Ignores = fp.list(d, what, "ignores", f.Ignores, "what the model leaves out")
	return m
}

// solvingKinds are the widgets that work one quantity out of the others
// (their spec has Solves), in Kinds order.
func solvingKinds() []string {
	var out []string
	for _, k := range model.Kinds() {
		if len(model.Specs()[k].Solves) > 0 {
			out = append(out, k)
		}
	}
	return out
}

// list checks a non-empty list of non-empty strings.
func (fp *fileParser) list(d *ydoc, what, key string, items []string, want string) []string {
	if len(items) == 0 {
		fp.p.add(d.line(key), "%s: %s is empty: want a list of %s", what, key, want)
	}
	out := make([]string, 0, len(items))
	for i, s := range items {
		s = strings.TrimSpace(s)
		if s == "" {
			fp.p.add(d.line(key, i), "%s: %s[%d] is empty", what, key, i)
		}
		out = append(out, s)
	}
	return out
}

// lab validates and builds a lab block: the settings it must give, the
// course's own bounds on rates, seconds, clients and timeout, and the
// columns it shows. Whether the lab and the load generator accept its
// knobs and random source is for LoadOptions.CheckLab (package recorder):
// the content does not know their limits.
func (fp *fileParser) lab(d *ydoc, what, id string, line int, f labFields) *Lab {
	p := fp.p
	missing := false
	for _, k := range []string{"workers", "spin_ms", "wait_ms", "limit", "cpus", "seconds"} {
		if !d.has(k) {
			p.add(line, "%s: %s is missing: a lab preset gives workers, spin_ms, wait_ms, limit, cpus, seconds, and rates (open loop) or closed (closed loop)", what, k)
			missing = true
		}
	}
	if d.has("clients") {
		switch {
		case d.has("closed"):
			p.add(d.line("clients"), "%s: clients and closed exclude each other: closed: N is one window of N clients, clients: [N1, N2, ...] a window for each", what)
		case len(f.Clients) < 1 || len(f.Clients) > maxRates:
			p.add(d.line("clients"), "%s: clients has %d entries: want 1 to %d client counts, one window each", what, len(f.Clients), maxRates)
		}
		for i, c := range f.Clients {
			if c < 1 || c > maxClosed {
				p.add(d.line("clients", i), "%s: clients[%d] %d is not allowed: want 1 to %d clients", what, i, c, maxClosed)
			}
		}
		if len(f.Clients) > 0 && f.Closed == 0 {
			f.Closed = f.Clients[0]
		}
	} else if f.Closed > 0 {
		f.Clients = []int{f.Closed}
	}
	closedLoop := f.Closed > 0
	switch {
	case closedLoop && d.has("rates"):
		p.add(d.line("rates"), "%s: rates is not allowed with closed: %d: a closed loop has no offered rate (each client sends its next request when an answer comes back): remove rates, or remove closed for an open-loop sweep", what, f.Closed)
	case !closedLoop && !d.has("rates"):
		p.add(line, "%s: rates is missing: an open-loop preset gives 1 to %d offered rates; a closed-loop preset gives closed: N clients instead", what, maxRates)
		missing = true
	}
	l := &Lab{ID: id, Line: line, Workers: f.Workers, SpinMS: f.SpinMS, WaitMS: f.WaitMS, Limit: f.Limit, CPUs: f.CPUs,
		Rates: f.Rates, Seconds: f.Seconds, Seed: f.Seed, Closed: f.Closed, TimeoutMS: f.TimeoutMS,
		StallEvery: f.StallEvery, StallMS: f.StallMS, RNG: f.RNG, Show: f.Show,
		Backlog: f.Backlog, Accept: strings.TrimSpace(f.Accept), Simulated: f.Simulated, MaxInFlight: f.MaxInFlight, At: f.At,
		OverTime: f.OverTime, Retry: strings.TrimSpace(f.Retry), Critical: f.Critical, Sheddable: f.Sheddable,
		Clients: f.Clients, LockMS: f.LockMS, CoherencyUS: f.CoherencyUS, Fanout: f.Fanout, Hedge: strings.TrimSpace(f.Hedge),
		keyLines: d.keyLines(), complete: !missing}
	if l.Accept == "door" {
		l.Accept = ""
	}
	_ = l.Policy.UnmarshalText([]byte(f.Policy)) // canonical, or kept as given for Validate to name
	_ = l.Dist.UnmarshalText([]byte(f.Dist))     // likewise
	if d.has("show") && len(f.Show) == 0 {
		p.add(d.line("show"), "%s: show is empty: want the columns the lesson talks about, from %s, or no show: for every column", what, strings.Join(l.Columns(), ", "))
	}
	fp.columns(d, what, "show", f.Show, l.Columns())
	if missing {
		return l
	}
	if !closedLoop && (len(f.Rates) < 1 || len(f.Rates) > maxRates) {
		p.add(d.line("rates"), "%s: rates has %d entries: want 1 to %d", what, len(f.Rates), maxRates)
	}
	for i, r := range f.Rates {
		if !(r > 0 && r <= maxRate) {
			p.add(d.line("rates", i), "%s: rates[%d] %g is not allowed: want above 0 and at most %d requests a second", what, i, r, maxRate)
		}
	}
	if !(f.Seconds > 0 && f.Seconds <= maxSeconds) {
		p.add(d.line("seconds"), "%s: seconds %g is not allowed: want above 0 and at most %d", what, f.Seconds, maxSeconds)
	}
	if f.Closed < 0 || f.Closed > maxClosed {
		p.add(d.line("closed"), "%s: closed %d is not allowed: want 0 (open loop) to %d clients", what, f.Closed, maxClosed)
	}
	if f.TimeoutMS < 0 || f.TimeoutMS > maxTimeoutMS {
		p.add(d.line("timeout_ms"), "%s: timeout_ms %d is not allowed: want 0 (the runner's default) to %d", what, f.TimeoutMS, maxTimeoutMS)
	}
	switch {
	case f.MaxInFlight < 0 || f.MaxInFlight > maxClientWorkers:
		p.add(d.line("max_inflight"), "%s: max_inflight %d is not allowed: want 0 (no fixed pool of client workers) to %d", what, f.MaxInFlight, maxClientWorkers)
	case f.MaxInFlight > 0 && closedLoop:
		p.add(d.line("max_inflight"), "%s: max_inflight is for an open loop: with closed: %d the clients are the workers", what, f.Closed)
	}
	if sp, err := retry.Parse(l.Retry); err != nil {
		p.add(d.line("retry"), "%s: %v", what, err)
	} else {
		l.Retry = sp.String() // canonical, as the fingerprint covers it
		if l.Retry != "" && closedLoop {
			p.add(d.line("retry"), "%s: retry is for an open loop: with closed: %d each client waits for its answer and never retries", what, f.Closed)
		}
	}
	switch {
	case f.Fanout < 0 || f.Fanout > maxFanout:
		p.add(d.line("fanout"), "%s: fanout %d is not allowed: want 1 (each arrival one request) to %d sub-requests an arrival", what, f.Fanout, maxFanout)
	case f.Fanout > 1 && closedLoop:
		p.add(d.line("fanout"), "%s: fanout is for an open loop: with a closed loop each client sends one request at a time", what)
	case f.Fanout > 1 && l.Retry != "":
		p.add(d.line("fanout"), "%s: fanout does not go with retry: a fanned-out request's sub-requests are not retried", what)
	}
	if sp, err := hedge.Parse(l.Hedge); err != nil {
		p.add(d.line("hedge"), "%s: %v", what, err)
	} else {
		l.Hedge = sp.String() // canonical, as the fingerprint covers it
		switch {
		case l.Hedge != "" && closedLoop:
			p.add(d.line("hedge"), "%s: hedge is for an open loop: with a closed loop each client sends one request at a time", what)
		case l.Hedge != "" && l.Retry != "":
			p.add(d.line("hedge"), "%s: hedge does not go with retry: a hedged request is not also retried", what)
		}
	}
	for _, c := range []struct {
		key   string
		share float64
	}{{"critical", f.Critical}, {"sheddable", f.Sheddable}} {
		switch {
		case math.IsNaN(c.share) || c.share < 0 || c.share > 1:
			p.add(d.line(c.key), "%s: %s %g is not allowed: want a share of the arrivals from 0 to 1, e.g. 0.2", what, c.key, c.share)
		case c.share > 0 && closedLoop:
			p.add(d.line(c.key), "%s: %s is for an open loop: with closed: %d every request is sent without a class", what, c.key, f.Closed)
		}
	}
	if f.Critical >= 0 && f.Sheddable >= 0 && f.Critical+f.Sheddable > 1 {
		p.add(d.line("sheddable"), "%s: critical %g and sheddable %g are not allowed: want shares of the arrivals together at most 1 (the rest are sent without a class)", what, f.Critical, f.Sheddable)
	}
	if len(f.At) > maxChanges {
		p.add(d.line("at"), "%s: at has %d knob changes: want at most %d", what, len(f.At), maxChanges)
	}
	for i, c := range f.At {
		if strings.TrimSpace(c) == "" {
			p.add(d.line("at", i), "%s: at[%d] is empty: want a knob change such as 30s:WAIT_MS=2000", what, i)
		}
	}
	return l
}

// table validates a recorded result table.
func (fp *fileParser) table(d *ydoc, what string, t *Table, f tableFields) *Table {
	p := fp.p
	t.Caption, t.Source = strings.TrimSpace(f.Caption), strings.TrimSpace(f.Source)
	t.Columns, t.Rows = f.Columns, f.Rows
	t.Fingerprint, t.Fixture, t.Pending = strings.TrimSpace(f.Fingerprint), f.Fixture, f.Pending
	fp.tables = append(fp.tables, &tableAt{table: t, fingerprintLine: d.line("fingerprint"), fixtureLine: d.line("fixture")})
	if t.Pending {
		// A preset still to be recorded: nothing measured may be written yet.
		for _, k := range []string{"columns", "rows", "source", "fingerprint", "fixture"} {
			if d.has(k) {
				p.add(d.line(k), "%s: a pending table has no %s: it holds nothing until `server lessons record --lab %s` writes it", what, k, t.Preset)
			}
		}
		if !fp.opts.Pending {
			p.add(d.line("pending"), "%s: is still to be recorded (pending: true): record it with `server lessons record --lab %s` on a quiet machine; pending tables load only with --pending (authors and the recorder), never in the course that ships", what, t.Preset)
		}
		return t
	}
	if t.Caption == "" {
		p.add(d.line("caption"), "%s: caption is missing: want a sentence saying what the table shows", what)
	}
	if t.Source == "" {
		p.add(d.line("source"), "%s: source is missing: want how it was recorded (command, seed, machine, date)", what)
	}
	if len(f.Columns) == 0 {
		p.add(d.line("columns"), "%s: columns is empty: want the column headings", what)
	}
	for i, c := range f.Columns {
		if strings.TrimSpace(c) == "" {
			p.add(d.line("columns", i), "%s: columns[%d] is empty", what, i)
		}
	}
	if len(f.Rows) == 0 {
		p.add(d.line("rows"), "%s: rows is empty: want at least one row", what)
	}
	for i, r := range f.Rows {
		if len(f.Columns) > 0 && len(r) != len(f.Columns) {
			p.add(d.line("rows", i), "%s: rows[%d] has %d cells: want %d, one per column", what, i, len(r), len(f.Columns))
		}
	}
	return t
}

// columns checks a list of column names (a lab's show, a predict's
// read.columns): each one of known, none twice.
func (fp *fileParser) columns(d *ydoc, what, key string, cols, known []string) {
	seen := map[string]bool{}
	path := []any{key}
	if key == "read" {
		path = append(path, "columns")
	}
	for i, c := range cols {
		switch {
		case !slices.Contains(known, c):
			fp.p.add(d.line(append(path, i)...), "%s: %s: unknown column %q: want one of %s", what, strings.Join(pathNames(path), "."), c, strings.Join(known, ", "))
		case seen[c]:
			fp.p.add(d.line(append(path, i)...), "%s: %s names %q twice", what, strings.Join(pathNames(path), "."), c)
		}
		seen[c] = true
	}
}

func pathNames(path []any) []string {
	out := make([]string, len(path))
	for i, p := range path {
		out[i] = fmt.Sprint(p)
	}
	return out
}

// readAt is a predict's read: field, checked against its settling preset
// once the whole lesson is parsed (checkReads).
type readAt struct {
	q    *Question
	what string
	d    *ydoc
}

// checkReads checks each predict's read.rows against the preset that
// settles it: offered rates of an open-loop preset, none for a closed loop
// (it has one window); a time range against its windows (checkStretch),
// and options' values against the windows read (checkValues).
func (fp *fileParser) checkReads(l *Lesson) {
	for _, ra := range fp.reads {
		lab, _ := l.Settling(ra.q)
		if lab == nil {
			continue // settled_by is reported by checkRefs
		}
		for i, r := range ra.q.Read.Rows {
			line := ra.d.line("read", "rows", i)
			switch {
			case lab.Closed > 0 && len(lab.Clients) <= 1:
				fp.p.add(line, "%s: read.rows: the preset %q is a closed loop with one window: leave rows out", ra.what, lab.ID)
			case lab.Closed > 0:
				if !slices.Contains(lab.Clients, int(r)) || r != math.Trunc(r) {
					fp.p.add(line, "%s: read.rows: %g is not a client count of the preset %q: want one of %s", ra.what, r, lab.ID, ClientList(lab.Clients))
				}
			case !slices.Contains(lab.Rates, r):
				fp.p.add(line, "%s: read.rows: %g is not an offered rate of the preset %q: want one of %s", ra.what, r, lab.ID, RateList(lab.Rates))
			}
		}
		fp.checkValues(ra, lab)
		if ra.q.Read.Over {
			fp.checkStretch(ra, lab)
			continue
		}
		cols := lab.Columns()
		for i, rc := range ra.q.Read.Columns {
			names := []string{rc}
			if num, den, share := ShareOf(rc); share {
				names = []string{num, den}
			}
			for _, c := range names {
				if slices.Contains(AllColumns(), c) && !slices.Contains(cols, c) {
					fp.p.add(ra.d.line("read", "columns", i), "%s: read.columns: the preset %q has no column %q (only a lab with accept: workers, retry: or classes has it): want one of %s", ra.what, lab.ID, c, strings.Join(cols, ", "))
				}
			}
		}
	}
}

// inline renders an option's text, one paragraph of inline Markdown, to
// HTML without its paragraph, and to plain text (code spans keep their
// text, emphasis marks go).
func (fp *fileParser) inline(src string, line int, what string) (template.HTML, string) {
	b := []byte(src)
	doc := fp.md.Parser().Parse(text.NewReader(b), parser.WithContext(parser.NewContext()))
	para, ok := doc.FirstChild().(*ast.Paragraph)
	if !ok || doc.ChildCount() != 1 {
		fp.p.add(line, "%s: the text is one line of inline Markdown (words, `code`, *emphasis*): no lists, headings or blank lines", what)
		return template.HTML(template.HTMLEscapeString(src)), src
	}
	var plain strings.Builder
	bad := false
	_ = ast.Walk(para, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.RawHTML:
			bad = true
			return ast.WalkStop, nil
		case *ast.Text:
			plain.Write(n.Segment.Value(b))
			if n.SoftLineBreak() || n.HardLineBreak() {
				plain.WriteByte(' ')
			}
		case *ast.String:
			plain.Write(n.Value)
		}
		return ast.WalkContinue, nil
	})
	if bad {
		fp.p.add(line, "%s: raw HTML is not allowed in lessons: write Markdown instead", what)
		return template.HTML(template.HTMLEscapeString(src)), src
	}
	var buf bytes.Buffer
	for c := para.FirstChild(); c != nil; c = c.NextSibling() {
		if err := fp.md.Renderer().Render(&buf, b, c); err != nil {
			fp.p.add(line, "%s: the Markdown could not be rendered: %v", what, err)
		}
	}
	return template.HTML(strings.TrimSpace(buf.String())), strings.TrimSpace(plain.String())
}

// snippet renders a Markdown field (a prompt or an explanation) to HTML,
// reporting raw HTML and nested blocks at line.
func (fp *fileParser) snippet(src string, line int, what string) template.HTML {
	b := []byte(src)
	doc := fp.md.Parser().Parse(text.NewReader(b), parser.WithContext(parser.NewContext()))
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.HTMLBlock, *ast.RawHTML:
			fp.p.add(line, "%s: raw HTML is not allowed in lessons: write Markdown instead", what)
			return ast.WalkStop, nil
		case *ast.Heading:
			fp.p.add(line, "%s: headings are not allowed here", what)
			return ast.WalkStop, nil
		case *ast.FencedCodeBlock:
			if isInteractive(infoOf(n, b)) {
				fp.p.add(line, "%s: a %s block cannot be nested here", what, firstWord(infoOf(n, b)))
				return ast.WalkStop, nil
			}
		}
		return ast.WalkContinue, nil
	})
	var buf bytes.Buffer
	if err := fp.md.Renderer().Render(&buf, b, doc); err != nil {
		fp.p.add(line, "%s: the Markdown could not be rendered: %v", what, err)
	}
	return template.HTML(buf.String())
}

// checkRefs checks references between blocks of one lesson, and that no
// block id is also a heading id (both become HTML ids on the page).
func (fp *fileParser) checkRefs(blocks []blockRef, refs []ref, headings map[string]int) {
	for _, r := range refs {
		idx := slices.IndexFunc(blocks, func(b blockRef) bool { return b.id == r.target })
		want := strings.Join(r.kinds, " or ")
		switch {
		case idx < 0:
			fp.p.add(r.line, "%s: no block %q in this lesson: want the id of a %s block in this lesson", r.what, r.target, want)
		case !slices.Contains(r.kinds, blocks[idx].kind):
			fp.p.add(r.line, "%s: %q is a %s block (line %d): want a %s block", r.what, r.target, blocks[idx].kind, blocks[idx].line, want)
		case r.after && idx < r.from:
			fp.p.add(r.line, "%s: %q comes before this block (line %d): a prediction is settled by a measurement after it", r.what, r.target, blocks[idx].line)
		}
	}
	for _, b := range blocks {
		if hl, ok := headings[b.id]; ok {
			fp.p.add(b.line, "%s block: id %q is also the id of the heading on line %d: rename the block", b.kind, b.id, hl)
		}
	}
}
