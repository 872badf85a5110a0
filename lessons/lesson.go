package lessons

import (
	"html/template"

	"capacitylab/admit"
	"capacitylab/dist"
)

// Course is every lesson, validated, in reading order (part, number).
type Course struct {
	Lessons []*Lesson
}

// Lesson is one parsed and validated lesson file.
type Lesson struct {
	File     string   // path inside the content FS, for messages
	Slug     string   // front matter: URL name, unique in the course
	Part     string   // front matter: e.g. "Capacity"
	Chapter  string   // front matter: e.g. "Measurement and queues"
	Number   int      // front matter: order within the part; a chapter is a run of them
	Title    string   // front matter
	Minutes  int      // front matter: reading and doing time
	BuildsOn []string // front matter: slugs of earlier lessons
	AsOf     string   // front matter: YYYY-MM-DD the content was last checked
	Body     []Part   // prose and blocks in document order
	Marks    []Mark   // where the numbers and claims of the text come from, in order

	settled map[string]*Question // SettledBy's index, built when the lesson is loaded
	gates   map[int][]*Question  // GatesAfter's index, built when the lesson is loaded
}

// Part is one piece of a lesson body: either rendered prose (HTML is set)
// or an interactive block (Block is set).
type Part struct {
	HTML  template.HTML
	Block Block
}

// Block is an interactive block: *Question, *Model, *Lab, *Table,
// *RecordBlock or *Callout.
type Block interface {
	Kind() string // "predict", "check", "model", "lab", "table", "record", "callout"
	BlockID() string
}

// Option is one answer to a Predict or Check question.
type Option struct {
	ID      string        // "a", "b", ... unique within its question, in the file's order
	Text    string        // the option as plain text (Markdown marks removed), for messages and CSVs
	HTML    template.HTML // the option as shown on pages: its inline Markdown rendered
	Correct bool          // exactly one option per question is correct
	Explain template.HTML // why this option is right or wrong (rendered Markdown)
	// Value is, for a predict's option, the value or band of the
	// predict's quantity the option stands for; nil when the predict's
	// options give none.
	Value *Band
	Line  int // the option's line in its file
}

// Question is a Predict or a Check block.
type Question struct {
	ID        string // unique across the course
	Type      string // "predict" or "check"
	Line      int    // line of the block in its file
	Prompt    template.HTML
	Options   []Option
	SettledBy string // predict only: which measurement in the lesson settles it
	// Read is, for a predict, the rows and columns of the settling
	// measurement that answer it (nil: the author named none).
	Read *Reading
}

// Reading names the cells of a measurement that settle a prediction: the
// windows by offered rate (empty: every window; a closed-loop preset has
// one) and the columns. Without a time range the columns are of the
// window table (RecordColumns). With one (Over: the predict gave from_s
// or to_s), the reading is of a run over time's seconds FromS to ToS of
// each window (the time table's rows with at_s in [FromS, ToS)), and the
// columns are those a stretch of seconds reads (result.StretchColumns):
// counts a second, what was inside on average, percentiles as the lowest
// and highest second's. The first column is the quantity the predict
// asks for: its options' values are in its units.
type Reading struct {
	Rows    []float64
	Columns []string
	Over    bool    // a time range is read: FromS to ToS of each window
	FromS   float64 // seconds from each window's start, whole
	ToS     float64 // seconds from each window's start, whole; 0: the window's end
}

// Range is the stretch of each window r reads, from and to seconds from
// its start, for windows of the given length: [FromS, ToS), ToS capped at
// the window's length and standing for it when 0. empty is true when the
// windows end before FromS (a run made with shorter windows).
func (r *Reading) Range(windowSeconds float64) (from, to float64, empty bool) {
	to = windowSeconds
	if r.ToS > 0 && r.ToS < to {
		to = r.ToS
	}
	return r.FromS, to, r.FromS >= to
}

// Band is what an option says the predict's quantity (the first column
// its read: names, in that reading's units) is: from Lo to Hi, or exactly
// Lo when the two are equal. Pages draw it where a chart shows the
// quantity, and `lessons check` holds the recorded run inside the correct
// option's band and outside every other's.
type Band struct {
	Lo, Hi float64
}

// Kind returns "predict" or "check".
func (q *Question) Kind() string { return q.Type }

// BlockID returns the question's id.
func (q *Question) BlockID() string { return q.ID }

// Target is one condition of a model goal: Param within Tol of Value.
// Find marks a value the goal asks the learner to find (its text says
// what to look for): the widget's hints then name neither the value nor
// the way to it, and its slider is not laid out around it.
type Target struct {
	Param string
	Value float64
	Tol   float64
	Find  bool
}

// Goal is what a model block asks the learner to reach.
type Goal struct {
	Text  string   // the instruction, e.g. "Hold arrivals at 48/s ..."
	Want  []Target // all must hold for the goal to be reached
	Found string   // what the learner found, shown when the goal is reached
}

// Model is a widget block (kinds and parameters are specified by package model).
type Model struct {
	ID      string
	Line    int
	Widget  string             // a model kind, e.g. "littles-law"
	Solve   string             // littles-law only: which quantity is implied
	Values  map[string]float64 // initial values by parameter name
	Goal    Goal
	Assumes []string
	Ignores []string
}

// Kind returns "model".
func (m *Model) Kind() string { return "model" }

// BlockID returns the model block's id.
func (m *Model) BlockID() string { return m.ID }

// Lab is a sweep preset a learner can run.
type Lab struct {
	ID        string
	Line      int
	Workers   int
	SpinMS    int
	WaitMS    int
	Limit     int
	CPUs      int
	Rates     []float64 // offered rates, per second, one window each
	Seconds   float64   // window length
	Seed      int64
	Closed    int // clients for a closed-loop run; 0 = open loop
	TimeoutMS int // caller timeout; 0 = the load runner's default
	// Show names the columns (of RecordColumns) the lesson's text talks
	// about, in the order pages show them first, in this preset's
	// recorded table and in the table of a run of it; the others are one
	// click away. Not part of the preset's settings: the fingerprint does
	// not cover it. Empty: every column, in its own order.
	Show []string

	StallEvery int        // the lab's STALL_EVERY: every Nth request stalls; 0 = never
	StallMS    int        // the lab's STALL_MS: what a stalled request takes
	RNG        string     // random source of the arrivals: "" or "pcg" (the default), or "python"
	Backlog    int        // the lab's BACKLOG; 0 = the system's maximum
	Accept     string     // the lab's ACCEPT: "" for the door (written door or left out), or "workers"
	Policy     admit.Spec // the lab's POLICY; the zero value is the queue policy

	// Simulated says the preset's table is produced by the simulator
	// (package sim) from the preset's knobs, not measured on a lab: the
	// recorder simulates it, and pages offer Simulate and no Run for it.
	Simulated bool

	// MaxInFlight is the open-loop client's fixed pool of workers (0 for
	// none): arrivals that find them all busy count in client_busy.
	MaxInFlight int
	// At are knob changes made at their times into every window, as
	// written ("30s:WAIT_MS=2000"); package recorder checks them against
	// the preset's knobs (CheckLab) and reads them (recorder.Preset).
	At []string
	// OverTime makes the preset a run over time: every window sampled
	// each second, and the recorder writes a time table (TimeColumns)
	// beside its window table.
	OverTime bool
	// Retry is the open-loop client's retries, backoff, budget and
	// breaker as package retry writes a spec, in its canonical form
	// (retry.Spec.String; "" never retries). Critical and Sheddable are
	// the shares of arrivals sent with X-Criticality critical and
	// sheddable (open loop).
	Retry               string
	Critical, Sheddable float64

	// Clients are a closed loop's client counts, one window each, in
	// order (clients: [1, 2, 4]; closed: N is [N]), and Closed is the
	// first of them (0 for an open loop). Empty for an open loop.
	Clients []int
	// Dist is the lab's DIST (how each request's service time varies;
	// package dist), LockMS and CoherencyUS its contention knobs LOCK_MS
	// and COHERENCY_US; the zero values are the lab as it always was.
	Dist        dist.Spec
	LockMS      int
	CoherencyUS int
	// Fanout, when more than 1, makes every arrival a request of that
	// many sub-requests (open loop); Hedge is a hedging client as
	// package hedge writes a spec, canonical ("" sends no copies).
	Fanout int
	Hedge  string

	keyLines map[string]int // the line of each key the block gives
	complete bool           // every setting a preset must give is there
}

// Kind returns "lab".
func (l *Lab) Kind() string { return "lab" }

// Gives reports whether the lab block gives setting key (workers, rng, ...).
func (l *Lab) Gives(key string) bool {
	_, ok := l.keyLines[key]
	return ok
}

// KeyLine returns the line of setting key (workers, rng, ...) in the lab
// block, or the block's own line when the block does not give it.
func (l *Lab) KeyLine(key string) int {
	if n, ok := l.keyLines[key]; ok {
		return n
	}
	return l.Line
}

// BlockID returns the lab block's id.
func (l *Lab) BlockID() string { return l.ID }

// Table is a recorded result table; Preset names the lab block it came from.
type Table struct {
	ID      string
	Line    int
	Preset  string
	Caption string
	Columns []string
	Rows    [][]string
	Source  string // how it was recorded: command, seed, machine, date

	// Fingerprint is the SHA-256 (hex) that `server lessons record` wrote
	// over the preset, the columns, the rows and the source (see
	// [Fingerprint]); the loader checks it, so a number typed by hand or a
	// preset changed after recording is an error.
	Fingerprint string
	// Fixture marks a table of made-up data for tests; allowed only in
	// lessons whose part is "Fixtures", and then instead of a Fingerprint.
	Fixture bool
	// Show is its preset's Show, copied when the lesson is loaded.
	Show []string
	// Lab is its preset, set when the lesson is loaded (nil when Preset
	// names no lab block): a time table's chart marks the preset's knob
	// changes and its caller's timeout.
	Lab *Lab
	// Pending marks a table whose preset is still to be recorded: it has
	// no rows. Only LoadWith with Pending set accepts it.
	Pending bool
}

// Kind returns "table".
func (t *Table) Kind() string { return "table" }

// BlockID returns the table block's id.
func (t *Table) BlockID() string { return t.ID }

// Callout kinds.
const (
	CalloutRemember = "remember" // worth remembering
	CalloutLimits   = "limits"   // where this stops holding
	CalloutAsOf     = "asof"     // a dated fact that can expire
)

// Callout is a highlighted aside.
type Callout struct {
	ID   string
	Line int
	Type string // CalloutRemember, CalloutLimits or CalloutAsOf
	Date string // CalloutAsOf only: YYYY-MM-DD
	Body template.HTML
}

// Kind returns "callout".
func (c *Callout) Kind() string { return "callout" }

// BlockID returns the callout's id, callout-1, callout-2, ... within its lesson.
func (c *Callout) BlockID() string { return c.ID }

// Record field names, in the order a record block shows them.
const (
	FieldSetting     = "setting"     // the setting shipped, e.g. LIMIT=10
	FieldCriterion   = "criterion"   // what the number must satisfy
	FieldMeasurement = "measurement" // what was measured, and how
	FieldNumber      = "number"      // the number and the arithmetic behind it
	FieldReverse     = "reverse"     // what would make the author change it
)

// RecordFieldNames returns the five fields of a record block in order.
func RecordFieldNames() []string {
	return []string{FieldSetting, FieldCriterion, FieldMeasurement, FieldNumber, FieldReverse}
}

// RecordField is one field of a record block as the lesson labels it.
type RecordField struct {
	Name  string // one of RecordFieldNames
	Label string // the field's label (plain text)
	Hint  string // a sentence of guidance shown under the label (plain text, may be empty)
}

// RecordBlock is a form in which the learner writes their own record of a
// decision (setting, criterion, measurement, number, what would reverse
// it) with one of their saved runs attached. (Recording a table is
// package recorder's Record.)
type RecordBlock struct {
	ID     string
	Line   int
	Prompt template.HTML
	Fields []RecordField // always the five of RecordFieldNames, in that order
}

// Kind returns "record".
func (r *RecordBlock) Kind() string { return "record" }

// BlockID returns the record block's id.
func (r *RecordBlock) BlockID() string { return r.ID }

// Field returns the field with the given name.
func (r *RecordBlock) Field(name string) (RecordField, bool) {
	for _, f := range r.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return RecordField{}, false
}

// Judge judges a learner's saved runs of a lab preset (Lab) against a
// criterion over several seeds: the design task of the capstone. The
// learner chooses the preset's workers, admission limit and policy (with
// its parameters); every other setting must be the preset's, and a choice
// passes only when a run at every seed does, on both halves of the
// criterion at the offered rate Rate: at least Delivered of the requests
// sent answered, and their p99 within BudgetMS.
type Judge struct {
	ID        string
	Line      int
	Lab       string   // the lab block whose runs are judged
	Rate      float64  // the offered rate judged, one of the lab's rates
	Seeds     []uint64 // every seed a choice must pass
	BudgetMS  float64  // the p99 budget, ms
	Delivered float64  // the least share of requests sent answered, 0 to 1
}

// Kind returns "judge".
func (j *Judge) Kind() string { return "judge" }

// BlockID returns the judge block's id.
func (j *Judge) BlockID() string { return j.ID }
