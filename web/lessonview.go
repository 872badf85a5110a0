package web

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"capacitylab/classroom"
	"capacitylab/hedge"
	"capacitylab/labsvc"
	"capacitylab/lessons"
	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/retry"
	"capacitylab/runner"
	"capacitylab/store"
)

// A lesson page keeps each Predict's measurement folded until the learner
// has answered the Predict (lessons.Lesson.SettledBy names which lab and
// table blocks that is): the lab block offers no Run and no recorded run,
// the table shows no numbers, each saying why. Once the learner has locked
// in or skipped, the lab block offers Run, and the table a button that
// opens it (recorded on the server, store.OpenResults). Reveal works only
// after a measurement was seen: the learner's own finished run of the
// preset, or the recorded table opened. Beside either, the page puts the
// learner's prediction next to the cells the Predict's read: names.

// lessonCtx is what a lesson page's blocks show besides the learner's
// stored answers: who is looking (the options' order), their runs and
// everyone's latest run of each lab block. It travels in the request's
// context (withLesson); a page rendered without it (a plan, a newcomer)
// sees an empty one.
type lessonCtx struct {
	Learner string             // the learner's id, the key of their option order ("" for a newcomer)
	Runs    map[string]runView // by lab block: the learner's latest run of it
	Done    map[string]bool    // lab blocks the learner has a finished run (status done) of
	Refs    map[string]store.Run
	// Prev is, by lab block, the learner's finished run of it before the
	// latest (Runs): the lab's panel offers to compare the two.
	Prev map[string]string
	// Busy is the learner's run that is queued or running, of any block
	// ("" when none): Run waits for it.
	Busy string
	// Judged is each judge block's judgement of the learner's runs.
	Judged map[string]judgement
}

type lessonCtxKey struct{}

// lessonCtxOf returns the page's lessonCtx, or an empty one.
func lessonCtxOf(ctx context.Context) *lessonCtx {
	if lc, ok := ctx.Value(lessonCtxKey{}).(*lessonCtx); ok {
		return lc
	}
	return &lessonCtx{}
}

// withLesson adds to r's context what the lesson's blocks need from
// outside the learner's answers (lessonCtx). A lesson without lab blocks
// needs only the learner's id.
func (s *server) withLesson(r *http.Request, l *lessons.Lesson) (*http.Request, error) {
	lc, err := s.lessonCtx(r.Context(), learnerID(r), l)
	if err != nil {
		return nil, err
	}
	return r.WithContext(context.WithValue(r.Context(), lessonCtxKey{}, lc)), nil
}

func (s *server) lessonCtx(ctx context.Context, learner string, l *lessons.Lesson) (*lessonCtx, error) {
	lc := &lessonCtx{Learner: learner, Runs: map[string]runView{}, Done: map[string]bool{}, Refs: map[string]store.Run{}, Prev: map[string]string{}}
	labs := lessonLabs(l)
	if len(labs) == 0 {
		return lc, nil
	}
	for _, lab := range labs {
		ref, err := s.store.LatestRun(ctx, lab.ID)
		switch {
		case err == nil:
			lc.Refs[lab.ID] = ref
		case !errors.Is(err, store.ErrNoRun):
			return nil, err
		}
	}
	if learner == "" {
		return lc, nil
	}
	runs, err := s.store.LearnerRuns(ctx, learner, recordRunsMax)
	if err != nil {
		return nil, err
	}
	for _, sr := range runs {
		live := sr.Status == store.RunQueued || sr.Status == store.RunRunning
		if live && lc.Busy == "" && s.sharedRuns {
			lc.Busy = sr.ID // live here or on another process
		} else if live && lc.Busy == "" && s.runner != nil {
			if snap, ok := s.runner.Get(sr.ID); ok && (snap.Status == store.RunQueued || snap.Status == store.RunRunning) {
				lc.Busy = sr.ID
			}
		}
		if sr.Block == "" || !hasLab(labs, sr.Block) {
			continue
		}
		if sr.Status == store.RunDone {
			lc.Done[sr.Block] = true
		}
		if latest, seen := lc.Runs[sr.Block]; seen {
			if _, has := lc.Prev[sr.Block]; !has && sr.Status == store.RunDone && sr.ID != latest.ID {
				lc.Prev[sr.Block] = sr.ID
			}
		} else {
			v, err := s.runView(ctx, sr.ID, learner, false)
			if err != nil {
				return nil, err
			}
			lc.Runs[sr.Block] = v
			if v.Status == store.RunDone {
				lc.Done[sr.Block] = true
			}
		}
	}
	return lc, s.judgeLesson(ctx, l, runs, lc)
}

// judgeLesson fills lc.Judged for each judge block of l from the learner's
// runs (newest first, without rows): the finished runs of the judged
// preset are read with their rows.
func (s *server) judgeLesson(ctx context.Context, l *lessons.Lesson, runs []store.Run, lc *lessonCtx) error {
	for _, b := range l.Blocks() {
		j, ok := b.(*lessons.Judge)
		if !ok {
			continue
		}
		var full []store.Run
		for _, sr := range runs {
			if sr.Block != j.Lab || sr.Status != store.RunDone {
				continue
			}
			r, err := s.store.Run(ctx, sr.ID)
			if err != nil {
				return err
			}
			full = append(full, r)
		}
		if lc.Judged == nil {
			lc.Judged = map[string]judgement{}
		}
		lc.Judged[j.ID] = s.judgeOf(ctx, l, j, full)
	}
	return nil
}

func lessonLabs(l *lessons.Lesson) []*lessons.Lab {
	var out []*lessons.Lab
	for _, b := range l.Blocks() {
		if lab, ok := b.(*lessons.Lab); ok {
			out = append(out, lab)
		}
	}
	return out
}

func hasLab(labs []*lessons.Lab, id string) bool {
	for _, l := range labs {
		if l.ID == id {
			return true
		}
	}
	return false
}

// refsKey names the recorded runs a newcomer's page of l shows (those of
// lab blocks no Predict folds), so the cached newcomer page is rebuilt
// when one of them changes.
func refsKey(l *lessons.Lesson, lc *lessonCtx) string {
	var b strings.Builder
	for _, lab := range lessonLabs(l) {
		if l.SettledBy(lab.ID) != nil {
			continue
		}
		b.WriteString(lab.ID + "=" + lc.Refs[lab.ID].ID + ";")
	}
	return b.String()
}

// folded reports whether a lab or table block is folded for this learner:
// a Predict it settles is not answered yet. It returns that Predict (nil
// when no Predict settles the block).
func folded(l *lessons.Lesson, id string, st store.LessonState) (*lessons.Question, bool) {
	q := l.SettledBy(id)
	if q == nil {
		return nil, false
	}
	_, answered := st.Predictions[q.ID]
	return q, !answered
}

// measured reports whether the learner has seen a measurement that
// settles q: their own finished run of its preset, or its recorded table
// opened after answering. Reveal needs it.
func measured(lc *lessonCtx, l *lessons.Lesson, q *lessons.Question, p *store.Prediction) bool {
	if p == nil {
		return false
	}
	if p.Opened() {
		return true
	}
	lab, _ := l.Settling(q)
	return lab != nil && lc.Done[lab.ID]
}

// orderedOptions is q's options in the order this page's viewer sees
// them (lessons.Question.Order, keyed by the learner).
func orderedOptions(ctx context.Context, q *lessons.Question) []lessons.Option {
	return q.Order(lessonCtxOf(ctx).Learner)
}

// orderKey names an order of q's options, for the kept HTML variants.
func orderKey(os []lessons.Option) string {
	var b strings.Builder
	for _, o := range os {
		b.WriteString(o.ID)
	}
	return b.String()
}

// nextStep is what a lesson asks of the learner after a lab block's
// measurement: the text that reads it, when some follows the block's
// recorded tables before the next heading (a lesson's "Read it": the link
// goes to the last of those tables, which the text follows), else the
// first heading or question after the block. text is "" when nothing
// follows.
func nextStep(l *lessons.Lesson, lab *lessons.Lab) (id, text string) {
	after := false
	last := lab.ID // the block the reading text follows
	for _, part := range l.Body {
		if !after {
			after = part.Block == lab
			continue
		}
		switch b := part.Block.(type) {
		case nil:
			prose := strings.TrimSpace(string(part.HTML))
			m := reHeading.FindStringSubmatchIndex(prose)
			if (m == nil || m[0] > 0) && last != lab.ID {
				return last, "Next: read what the rows show, below the recorded results"
			}
			if m != nil {
				return prose[m[2]:m[3]], "Next: " + htmlText(prose[m[4]:m[5]])
			}
		case *lessons.Table:
			if b.Preset == lab.ID {
				last = b.ID
				continue
			}
			return "", ""
		case *lessons.Question:
			if b.Type == "check" {
				return b.ID, "Next: the check question below"
			}
			return b.ID, "Next: the next prediction"
		case *lessons.Model:
			return b.ID, "Next: the model below"
		case *lessons.RecordBlock:
			return b.ID, "Next: your record"
		case *lessons.Lab:
			return b.ID, "Next: the next lab"
		}
	}
	return "", ""
}

// reHeading finds the first section heading in rendered prose.
var reHeading = regexp.MustCompile(`<h[23] id="([^"]+)">(.*?)</h[23]>`)

// reTag removes tags from a heading's HTML.
var reTag = regexp.MustCompile(`<[^>]*>`)

// htmlText is a heading's text: its tags removed and its entities
// decoded (goldmark escapes &, <, > and quotes).
func htmlText(h string) string {
	r := strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'")
	return r.Replace(reTag.ReplaceAllString(h, ""))
}

// openResults is action=open on a predict block: the learner opens the
// recorded results that settle it, which needs a lock or skip first.
func (s *server) openResults(ctx context.Context, learner string, q *lessons.Question) error {
	if learner == "" {
		return errorf(CodeConflict, "Lock in your prediction (or skip it) before opening the recorded results.")
	}
	if _, err := s.store.OpenResults(ctx, learner, q.ID); errors.Is(err, store.ErrNotLocked) {
		return errorf(CodeConflict, "Lock in your prediction (or skip it) before opening the recorded results.")
	} else if err != nil {
		return err
	}
	return nil
}

// revealRefused is the error for Reveal before any measurement was seen.
func revealRefused(l *lessons.Lesson, q *lessons.Question) error {
	lab, tables := l.Settling(q)
	what := "run the sweep below"
	if lab == nil {
		what = "look at the measurement below"
	} else if len(tables) > 0 {
		what = "run the sweep below, or open its recorded results,"
	}
	return errorf(CodeConflict, fmt.Sprintf("See a measurement first: %s then reveal the answer.", what))
}

// dataTable is a table of numbers as dataTableView shows it.
type dataTable struct {
	ID      string // prefix of its element ids
	Caption string // shown above the table, which it labels
	Label   string // the table's name when it has no caption
	TestID  string // data-testid of the table element ("" = none)
	Cols    []tableCol
	Rows    []tableRow
}

// tableCol is one column: Extra columns wait behind "Show all columns".
type tableCol struct {
	Key, Heading string
	Extra        bool
}

// tableRow is one row's cells, in Cols order; Window is the run window it
// measured (runs.js finds rows by it), "" for a recorded table.
type tableRow struct {
	Window string
	Cells  []string
}

// Extras counts the columns one click away.
func (t dataTable) Extras() int {
	n := 0
	for _, c := range t.Cols {
		if c.Extra {
			n++
		}
	}
	return n
}

// timeTableShow are the columns a recorded time table shows first (its
// preset's show: names a window table's): a second's outcomes, what was
// inside the lab and its limit, and the tail.
var timeTableShow = []string{"at_s", "ok", "refused", "gaveup", "client_busy", "in_service", "queued", "limit", "p99_ms"}

// recordedTable lays out a lesson's recorded table: the columns its
// preset shows (lessons.Table.Show; a time table timeTableShow) first, in
// that order, then the rest one click away; every column when it shows
// none.
func recordedTable(t *lessons.Table) dataTable {
	order := make([]int, 0, len(t.Columns))
	extra := map[int]bool{}
	show := t.Show
	if t.TimeTable() {
		show = timeTableShow
	}
	for _, name := range show {
		if i := slices.Index(t.Columns, name); i >= 0 && !slices.Contains(order, i) {
			order = append(order, i)
		}
	}
	if len(order) > 0 {
		for i := range t.Columns {
			if !slices.Contains(order, i) {
				order = append(order, i)
				extra[i] = true
			}
		}
	} else {
		for i := range t.Columns {
			order = append(order, i)
		}
	}
	dt := dataTable{ID: t.ID, Caption: t.Caption, Label: tableLabel(t)}
	for _, i := range order {
		dt.Cols = append(dt.Cols, tableCol{Key: t.Columns[i], Heading: t.Columns[i], Extra: extra[i]})
	}
	for _, row := range t.Rows {
		cells := make([]string, len(order))
		for j, i := range order {
			if i < len(row) {
				cells[j] = row[i]
			}
		}
		dt.Rows = append(dt.Rows, tableRow{Cells: cells})
	}
	return dt
}

// settlingLab is the preset that settles q, or nil.
func settlingLab(l *lessons.Lesson, q *lessons.Question) *lessons.Lab {
	lab, _ := l.Settling(q)
	return lab
}

// revealLater says what a learner must see before Reveal works.
func revealLater(l *lessons.Lesson, q *lessons.Question) string {
	lab, tables := l.Settling(q)
	switch {
	case lab != nil && len(tables) > 0:
		return "Reveal the answer once you have seen a measurement: run the sweep below, or open its recorded results."
	case lab != nil:
		return "Reveal the answer once you have run the sweep below."
	}
	return "Reveal the answer once you have looked at the measurement below."
}

// optionHTML is an option's text as pages show it (its id if unknown).
func optionHTML(q *lessons.Question, id string) template.HTML {
	if o := findOption(q, id); o != nil {
		return o.HTML
	}
	return template.HTML(template.HTMLEscapeString(id))
}

// runButton is the lab block's Run button: a sweep of several rates, or
// one window (a closed loop, or one rate).
func runButton(l *lessons.Lab) string {
	if l.Closed > 0 || len(l.Rates) == 1 {
		return "Run it"
	}
	return "Run this sweep"
}

// labPresetWords says a preset's service in words.
func labPresetWords(l *lessons.Lab) string {
	workers := counted(l.Workers, "worker", "workers")
	cpus := counted(l.CPUs, "processor", "processors")
	limit := "no admission limit"
	if l.Limit > 0 {
		limit = fmt.Sprintf("at most %s waiting for a worker (LIMIT=%d)", counted(l.Limit, "caller", "callers"), l.Limit)
	}
	if l.Policy != "" {
		limit = fmt.Sprintf("the admission policy POLICY=%s", l.Policy)
	}
	if l.Accept == lessons.AcceptWorkers {
		backlog := "the system's maximum"
		if l.Backlog > 0 {
			backlog = fmt.Sprintf("BACKLOG=%d", l.Backlog)
		}
		limit += fmt.Sprintf(", the workers accepting callers themselves (the rest wait in the kernel's accept queue, up to %s)", backlog)
	} else if l.Backlog > 0 {
		limit += fmt.Sprintf(", a listen backlog of %d", l.Backlog)
	}
	timeout := "2 s"
	if l.TimeoutMS > 0 {
		timeout = fmtNum(float64(l.TimeoutMS)/1000) + " s"
	}
	words := fmt.Sprintf("The service: %s on %s, each request %d ms of processor time then %d ms of waiting, %s. Callers give up after %s.",
		workers, cpus, l.SpinMS, l.WaitMS, limit, timeout)
	if sp, err := retry.Parse(l.Retry); err == nil && !sp.IsZero() {
		words += " " + sp.Words()
	}
	if l.Classed() {
		words += fmt.Sprintf(" Of their requests %s%% are marked critical and %s%% sheddable (X-Criticality), the rest default.",
			fmtNum(l.Critical*100), fmtNum(l.Sheddable*100))
	}
	if p, ok := l.Dist.Params(); ok && l.Varied() {
		words += " Each request's service time varies about its mean: " + p.Words() + "."
	}
	if l.LockMS > 0 {
		words += fmt.Sprintf(" Each request holds the service's one lock for %d ms, one at a time.", l.LockMS)
	}
	if l.CoherencyUS > 0 {
		words += fmt.Sprintf(" Each request spends %d µs more processor time for each other request in service.", l.CoherencyUS)
	}
	if l.Fanout > 1 {
		words += fmt.Sprintf(" Each arrival is a request of %d sub-requests sent at once, done when the last is answered.", l.Fanout)
	}
	if sp, err := hedge.Parse(l.Hedge); err == nil && !sp.IsZero() {
		words += " " + sp.Words()
	}
	return words
}

// lessonCancelURL is the cancel form's address for run id.
func lessonCancelURL(id string) string { return runURL(id) + "/cancel" }

// replaySeconds is how long a replay of a recorded run takes.
func replaySeconds(r store.Run) float64 {
	secs := 0.0
	for _, row := range r.Rows {
		secs += row.Seconds
	}
	return math.Round(secs)
}

// knob is one setting of the lab block's form (labKnob).
type knob struct {
	Block, Name, Label, Unit, Help, Env string
	Value, Min, Max, Step               string
	Text                                bool        // a list typed as text, not a number input
	Check                               bool        // a checkbox: Value "true" when checked, sending true
	Words                               bool        // words typed as text (no numeric keypad), such as a policy
	Choices                             [][2]string // a select of these values and their words
	Mode                                string      // shown only in this mode ("" = always)
}

// labServiceKnobs are the lab service's settings of a lab block's form,
// starting at the preset's values q.
func labServiceKnobs(block string, q runner.Request) []knob {
	accept := "door"
	if q.Accept == labsvc.AcceptWorkers {
		accept = string(labsvc.AcceptWorkers)
	}
	return []knob{
		{Block: block, Name: "workers", Label: "Workers", Help: "Requests the service works on at once.", Env: "WORKERS", Value: itoa(q.Workers), Min: "1", Max: "1024"},
		{Block: block, Name: "spin_ms", Label: "Processor time per request", Unit: "ms", Help: "Real computation on the lab's processors.", Env: "SPIN_MS", Value: itoa(q.SpinMS), Min: "0", Max: "1000"},
		{Block: block, Name: "wait_ms", Label: "Waiting time per request", Unit: "ms", Help: "A downstream call: it holds a worker but not a processor.", Env: "WAIT_MS", Value: itoa(q.WaitMS), Min: "0", Max: "10000"},
		{Block: block, Name: "limit", Label: "Admission limit", Unit: "callers", Help: "How many may wait for a worker; more are refused with 503. 0 means no limit.", Env: "LIMIT", Value: itoa(q.Limit), Min: "0", Max: "100000"},
		{Block: block, Name: "policy", Label: "Admission policy", Help: "Who the door lets in: queue (the admission limit bounds the callers waiting), or inflight,quota=N (at most N inside), aimd, gradient or sojourn (drops a request that waited in the queue past a bound), with settings after commas; any but queue needs an admission limit of 0.", Env: "POLICY", Value: q.Policy.String(), Words: true},
		{Block: block, Name: "cpus", Label: "Processors", Unit: "CPUs", Help: "Processors the lab may use; the load generator keeps one of the server's.", Env: "CPUS", Value: itoa(q.CPUs), Min: "1", Max: itoa(labsvc.MaxCPUs)},
		{Block: block, Name: "stall_every", Label: "Stall every", Unit: "requests", Help: "Every Nth request the lab admits takes the stall time instead of its work, like a pause to collect garbage. 0 means never.", Env: "STALL_EVERY", Value: itoa(q.StallEvery), Min: "0", Max: itoa(labsvc.MaxStallEvery)},
		{Block: block, Name: "stall_ms", Label: "Stall time", Unit: "ms", Help: "How long a stalled request takes.", Env: "STALL_MS", Value: itoa(q.StallMS), Min: "0", Max: itoa(labsvc.MaxStallMS)},
		{Block: block, Name: "accept", Label: "Who accepts callers", Help: "The door queues callers where the lab counts them (queued); free workers leave the rest in the kernel's queue (backlogged) and need an admission limit of 0.", Env: "ACCEPT", Value: accept,
			Choices: [][2]string{{"door", "The lab's door (the default)"}, {string(labsvc.AcceptWorkers), "Each free worker"}}},
		{Block: block, Name: "dist", Label: "Service time distribution", Help: "How each request's service time varies about its processor time plus waiting, which stays its mean: constant, exponential, lognormal,scv=S (S the squared coefficient of variation, 0.01 to 25), or bimodal,p=P,x=X (a share P of requests X times as long as the rest), each with seed=N if wanted.", Env: "DIST", Value: q.Dist.String(), Words: true},
		{Block: block, Name: "lock_ms", Label: "Lock held per request", Unit: "ms", Help: "Each request holds the lab's one lock this long after its processor time, one request at a time: at most 1000 ÷ this many requests a second. 0 means no lock.", Env: "LOCK_MS", Value: itoa(q.LockMS), Min: "0", Max: itoa(labsvc.MaxLockMS)},
		{Block: block, Name: "coherency_us", Label: "Coherency cost", Unit: "µs", Help: "Processor time a request spends, on top of its own, for each other request in service as it starts. 0 means none.", Env: "COHERENCY_US", Value: itoa(q.CoherencyUS), Min: "0", Max: itoa(labsvc.MaxCoherencyUS)},
		{Block: block, Name: "backlog", Label: "Listen backlog", Unit: "callers", Help: "Callers the kernel holds for the lab; past it a caller's connection is retried a second later. 0 means the system's maximum.", Env: "BACKLOG", Value: itoa(q.Backlog), Min: "0", Max: itoa(labsvc.MaxBacklog)},
	}
}

// labLoadKnobs are the load's settings of a lab block's form (besides
// the mode, a pair of radio buttons), starting at the preset's values q.
func labLoadKnobs(block string, q runner.Request, lim runner.Limits) []knob {
	rng := "pcg"
	if q.RNG == string(loadrun.Python) {
		rng = string(loadrun.Python)
	}
	return []knob{
		{Block: block, Name: "rates", Label: "Offered rates", Unit: "a second", Help: "One window per rate, separated by commas; arrivals are random (Poisson).", Env: "--rate", Value: joinFloats(q.Rates), Text: true, Mode: runner.ModeOpen},
		{Block: block, Name: "clients", Label: "Clients", Help: "Each sends its next request when its last one is answered.", Env: "--closed", Value: joinInts(q.Clients), Text: true, Mode: runner.ModeClosed},
		{Block: block, Name: "seconds", Label: "Window length", Unit: "s", Help: "How long each window sends.", Env: "--seconds", Value: fmtNum(q.Seconds), Min: fmtNum(runner.MinWindowSeconds), Max: fmtNum(lim.MaxWindowSeconds), Step: "any"},
		{Block: block, Name: "seed", Label: "Seed", Help: "The same seed sends the same arrivals.", Env: "--seed", Value: u64(q.Seed), Min: "0", Mode: runner.ModeOpen},
		{Block: block, Name: "rng", Label: "Random source", Help: "What draws the arrivals from the seed; CPython's gives the arrivals a Python script seeded the same way would.", Env: "--rng", Value: rng,
			Choices: [][2]string{{"pcg", "PCG (the default)"}, {string(loadrun.Python), "CPython's random module"}}, Mode: runner.ModeOpen},
		{Block: block, Name: "timeout_ms", Label: "Caller timeout", Unit: "ms", Help: "A caller gives up after this long; 0 means 2000.", Env: "--timeout", Value: itoa(q.TimeoutMS), Min: "0", Max: itoa(lim.MaxTimeoutMS)},
		{Block: block, Name: "max_inflight", Label: "Client workers", Help: "The callers' fixed pool of workers: an arrival that finds every one busy is not sent and is counted as client busy. 0 means no fixed pool.", Env: "--max-inflight", Value: itoa(q.MaxInFlight), Min: "0", Max: itoa(lim.MaxClients), Mode: runner.ModeOpen},
		{Block: block, Name: "retry", Label: "Retries", Help: "A client that retries: settings name=value joined by commas, such as retries=3,backoff=jitter,budget=0.1 (retries 0 to 10; on timeout, refused, error joined by +; backoff none, fixed, exp or jitter; base_ms, cap_ms; retry_after on or off; budget, a share of first attempts; breaker, a share failed, with breaker_min, window_ms, open_ms, probes). Empty means no retries.", Env: "--retry", Value: q.Retry, Words: true, Mode: runner.ModeOpen},
		{Block: block, Name: "critical", Label: "Critical share", Help: "The share of arrivals, 0 to 1, sent marked critical (X-Criticality: critical).", Env: "--critical", Value: fmtNum(q.Critical), Min: "0", Max: "1", Step: "any", Mode: runner.ModeOpen},
		{Block: block, Name: "sheddable", Label: "Sheddable share", Help: "The share of arrivals, 0 to 1, sent marked sheddable (X-Criticality: sheddable); with the critical share at most 1, the rest unmarked.", Env: "--sheddable", Value: fmtNum(q.Sheddable), Min: "0", Max: "1", Step: "any", Mode: runner.ModeOpen},
		{Block: block, Name: "fanout", Label: "Fan-out", Unit: "sub-requests", Help: "Each arrival is a request of this many sub-requests sent at once, done when the last is answered. 1 means one request an arrival.", Env: "--fanout", Value: itoa(max(q.Fanout, 1)), Min: "1", Max: itoa(loadrun.MaxFanout), Mode: runner.ModeOpen},
		{Block: block, Name: "hedge", Label: "Hedging", Help: "Send a copy of a request that has not been answered in time, take the first answer and cancel the other: delay_ms=N (a fixed delay) or percentile=P (the P-th percentile of recent answers, 50 to 99.9), with window, warmup and max after commas if wanted. Empty means no copies.", Env: "--hedge", Value: q.Hedge, Words: true, Mode: runner.ModeOpen},
		{Block: block, Name: "at", Label: "Knob changes", Help: "Change a lab knob partway through every window, as TIME:KNOB=VALUE, several separated by semicolons: 10s:WAIT_MS=200 is a bad release 10 s in. Each window starts from the settings above. Empty means none.", Env: "--at", Value: joinChanges(q.At), Words: true},
		{Block: block, Name: "over_time", Label: "Over time (a sample every second)", Help: "Also count every second of each window: requests by how they ended, what is inside, and the p50 and p99, drawn over time with the knob changes marked.", Env: "--over-time", Value: boolText(q.OverTime), Check: true},
	}
}

// joinChanges writes knob changes as the form's at field takes them.
func joinChanges(cs []result.KnobChange) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return strings.Join(s, "; ")
}

// classKnobs are the knobs a class's host may change before running a lab
// block for the class, the lab block's own (labKnob) starting at its
// preset: those a class session's run message takes (classroom.Knobs, by
// their JSON names), the rates only in open loop.
func classKnobs(b *lessons.Lab) []knob {
	q := labPreset(b)
	takes := map[string]bool{}
	t := reflect.TypeFor[classroom.Knobs]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		takes[name] = true
	}
	var out []knob
	for _, k := range append(labServiceKnobs(b.ID, q), labLoadKnobs(b.ID, q, runner.DefaultLimits(1))...) {
		if takes[k.Name] && (k.Mode == "" || k.Mode == q.Mode) {
			k.Mode = "" // the class's lab has no mode to choose: shown as it is
			out = append(out, k)
		}
	}
	return out
}

// labPresetValues are the fields and values a lab block's knobs send at
// their preset values, in the form's order: what a lesson's Run form
// sends while its knobs are not loaded.
func labPresetValues(b *lessons.Lab) [][2]string {
	q := labPreset(b)
	mode := runner.ModeOpen
	if q.Mode == runner.ModeClosed {
		mode = runner.ModeClosed
	}
	var out [][2]string
	for _, k := range labServiceKnobs(b.ID, q) {
		out = append(out, [2]string{k.Name, k.Value})
	}
	out = append(out, [2]string{"mode", mode})
	for _, k := range labLoadKnobs(b.ID, q, runner.DefaultLimits(1)) {
		if k.Check && k.Value != "true" {
			continue // an unchecked checkbox sends nothing
		}
		out = append(out, [2]string{k.Name, k.Value})
	}
	return out
}

// labSettingsURL is the page of a lab block's knobs.
func labSettingsURL(l *lessons.Lesson, b *lessons.Lab) string {
	return lessonURL(l.Slug) + "/lab/" + b.ID + "/settings"
}

// labSettings is GET /lessons/{slug}/lab/{id}/settings: the knobs of one
// lab block on a page of their own (labSettingsPage).
func (s *server) labSettings(w http.ResponseWriter, r *http.Request) error {
	c, err := s.loadCourse()
	if err != nil {
		return err
	}
	slug, id := chi.URLParam(r, "slug"), chi.URLParam(r, "id")
	b, l, ok := c.Lab(id)
	if !ok || l.Slug != slug {
		return errorf(CodeNotFound, fmt.Sprintf("The lesson %q has no lab %q.", slug, id))
	}
	st, err := s.state(r, l.Slug)
	if err != nil {
		return err
	}
	gate, isFolded := folded(l, b.ID, st)
	if !isFolded {
		gate = nil
	}
	s.render(w, r, http.StatusOK, labSettingsPage(s.page(r, "The settings of a sweep · "+l.Title), l, b, gate))
	return nil
}

// breakable writes a column name with a line-break opportunity after each
// underscore, so ok_per_sec may wrap in a narrow column.
func breakable(name string) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		parts := strings.Split(name, "_")
		for i, part := range parts {
			if i > 0 {
				if _, err := io.WriteString(w, "_<wbr>"); err != nil {
					return err
				}
			}
			if _, err := io.WriteString(w, template.HTMLEscapeString(part)); err != nil {
				return err
			}
		}
		return nil
	})
}
