package web

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"capacitylab/lessons"
	"capacitylab/loadrun"
	"capacitylab/model"
	"capacitylab/recorder"
	"capacitylab/store"
)

// lessonLink is a lesson as a link.
type lessonLink struct {
	Slug  string
	Title string
}

func (l lessonLink) URL() string { return "/lessons/" + l.Slug }

func lessonURL(slug string) string { return "/lessons/" + slug }

func actionURL(slug, kind, id string) string { return "/lessons/" + slug + "/" + kind + "/" + id }

// progress counts a learner's interactive blocks done in one lesson.
type progress struct {
	Total      int // predict, check and model blocks
	Done       int // predictions locked or skipped, checks answered, goals reached
	Predicts   int // predict blocks
	LockedIn   int // predictions locked in (predictionCounts: made)
	Skipped    int // predictions skipped: done, not made
	Checks     int // check blocks
	Answered   int // checks answered at least once
	RightFirst int // checks answered right at the first attempt
	Models     int // model blocks (each with a goal)
	Reached    int // goals reached
	// Next is the first block not done, in page order ("" when all are).
	Next string
}

// Complete reports whether every interactive block is done.
func (p progress) Complete() bool { return p.Total > 0 && p.Done == p.Total }

// Label is the progress mark shown beside a lesson.
func (p progress) Label() string {
	switch {
	case p.Total == 0:
		return ""
	case p.Complete():
		return "Done"
	case p.Done == 0:
		return "Not started"
	default:
		return fmt.Sprintf("%d of %d done", p.Done, p.Total)
	}
}

// Counts says what was done out of what exists, kind by kind ("1 of 2
// predictions locked in, 1 skipped", "0 of 2 checks answered"), and how
// many checks were right first time out of those answered, once any was.
// Predictions count as a graded lesson counts them (predictionCounts).
func (p progress) Counts() []string {
	var out []string
	if p.Predicts > 0 {
		s := fmt.Sprintf("%d of %s locked in", p.LockedIn, counted(p.Predicts, "prediction", "predictions"))
		if p.Skipped > 0 {
			s += fmt.Sprintf(", %d skipped", p.Skipped)
		}
		out = append(out, s)
	}
	if p.Checks > 0 {
		out = append(out, fmt.Sprintf("%d of %s answered", p.Answered, counted(p.Checks, "check", "checks")))
		if p.Answered > 0 {
			out = append(out, fmt.Sprintf("%d of %d answered right first time", p.RightFirst, p.Answered))
		}
	}
	if p.Models > 0 {
		out = append(out, fmt.Sprintf("%d of %s reached", p.Reached, counted(p.Models, "model goal", "model goals")))
	}
	return out
}

// lessonProgress folds a learner's state into the lesson's progress.
func lessonProgress(l *lessons.Lesson, st store.LessonState) progress {
	var p progress
	done := func(id string, ok bool) {
		p.Total++
		if ok {
			p.Done++
		} else if p.Next == "" {
			p.Next = id
		}
	}
	for _, part := range l.Body {
		switch b := part.Block.(type) {
		case *lessons.Question:
			if b.Type == "check" {
				p.Checks++
				c, ok := st.Checks[b.ID]
				if ok {
					p.Answered++
					if c.First.Correct {
						p.RightFirst++
					}
				}
				done(b.ID, ok)
			} else {
				p.Predicts++
				finished, made := predictionCounts(st, b.ID)
				switch {
				case made:
					p.LockedIn++
				case finished:
					p.Skipped++
				}
				done(b.ID, finished)
			}
		case *lessons.Model:
			p.Models++
			_, ok := st.Goals[b.ID]
			if ok {
				p.Reached++
			}
			done(b.ID, ok)
		}
	}
	return p
}

// indexPart is one part of the course index.
type indexPart struct {
	Name     string
	Chapters []indexChapter
}

type indexChapter struct {
	Name    string
	Lessons []indexLesson
}

type indexLesson struct {
	L        *lessons.Lesson
	Progress progress
}

// isFixture reports whether l is a test fixture: reachable by its URL,
// but not listed for learners (lessons.Lesson.Fixture).
func isFixture(l *lessons.Lesson) bool { return l.Fixture() }

// courseLessons returns the lessons learners see listed (the index,
// /teach, /api/lessons): lessons.Course.Listed, every lesson but the
// fixtures, in course order.
func courseLessons(c *lessons.Course) []*lessons.Lesson { return c.Listed() }

// neighbours returns the lessons before and after c.Lessons[i] among the
// lessons of its own kind: course lessons link only to course lessons,
// fixtures only to fixtures.
func neighbours(c *lessons.Course, i int) (prev, next *lessons.Lesson) {
	fixture := isFixture(c.Lessons[i])
	for j := i - 1; j >= 0 && prev == nil; j-- {
		if isFixture(c.Lessons[j]) == fixture {
			prev = c.Lessons[j]
		}
	}
	for j := i + 1; j < len(c.Lessons) && next == nil; j++ {
		if isFixture(c.Lessons[j]) == fixture {
			next = c.Lessons[j]
		}
	}
	return prev, next
}

// groupCourse groups the course's listed lessons (courseLessons) by part
// and chapter, keeping the course order. With withFixtures (the progress
// page) a fixture lesson the learner has progress in is listed too, so
// every answer in the export shows somewhere.
func groupCourse(c *lessons.Course, st store.LessonState, withFixtures bool) []indexPart {
	ls := courseLessons(c)
	if withFixtures {
		ls = slices.DeleteFunc(slices.Clone(c.Lessons), func(l *lessons.Lesson) bool {
			return isFixture(l) && lessonProgress(l, st).Done == 0
		})
	}
	var parts []indexPart
	for _, l := range ls {
		if len(parts) == 0 || parts[len(parts)-1].Name != l.Part {
			parts = append(parts, indexPart{Name: l.Part})
		}
		p := &parts[len(parts)-1]
		if len(p.Chapters) == 0 || p.Chapters[len(p.Chapters)-1].Name != l.Chapter {
			p.Chapters = append(p.Chapters, indexChapter{Name: l.Chapter})
		}
		ch := &p.Chapters[len(p.Chapters)-1]
		ch.Lessons = append(ch.Lessons, indexLesson{L: l, Progress: lessonProgress(l, st)})
	}
	return parts
}

// findLesson returns the index of the lesson with slug, or -1.
func findLesson(c *lessons.Course, slug string) int {
	for i, l := range c.Lessons {
		if l.Slug == slug {
			return i
		}
	}
	return -1
}

// findQuestion returns the question block with id and type in l, or nil.
func findQuestion(l *lessons.Lesson, id, typ string) *lessons.Question {
	for _, part := range l.Body {
		if q, ok := part.Block.(*lessons.Question); ok && q.ID == id && q.Type == typ {
			return q
		}
	}
	return nil
}

func findOption(q *lessons.Question, id string) *lessons.Option {
	for i := range q.Options {
		if q.Options[i].ID == id {
			return &q.Options[i]
		}
	}
	return nil
}

func correctOption(q *lessons.Question) *lessons.Option {
	for i := range q.Options {
		if q.Options[i].Correct {
			return &q.Options[i]
		}
	}
	return nil
}

func optionIDs(q *lessons.Question) string {
	ids := make([]string, len(q.Options))
	for i, o := range q.Options {
		ids[i] = o.ID
	}
	return strings.Join(ids, ", ")
}

// specOf returns the widget spec of a model block; an unknown kind (which
// the loader refuses) gets a spec with only its name.
func specOf(m *lessons.Model) model.Spec {
	if spec, ok := model.Specs()[m.Widget]; ok {
		return spec
	}
	return model.Spec{Kind: m.Widget, Title: m.Widget}
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// labEnv is the environment line that starts the lab with a preset's knobs
// (BACKLOG and ACCEPT only when the preset sets them).
func labEnv(l *lessons.Lab) string {
	return recorder.Preset(l).Config.String() + " go run ./cmd/lab"
}

// labLoad is the load command that runs a preset's sweep.
func labLoad(l *lessons.Lab) string {
	cmd := "go run ./cmd/load"
	if l.Closed > 0 {
		// A closed loop has no offered rate: cmd/load rejects --rate with --closed.
		cmd += " --closed " + strings.ReplaceAll(lessons.ClientList(l.ClientCounts()), ", ", ",") + " --seconds " + fmtNum(l.Seconds)
	} else {
		cmd += " --rate " + strings.ReplaceAll(labRates(l), ", ", ",") + " --seconds " + fmtNum(l.Seconds)
		cmd += " --seed " + strconv.FormatInt(l.Seed, 10)
		if l.RNG != "" {
			cmd += " --rng " + l.RNG
		}
	}
	if l.TimeoutMS > 0 {
		cmd += " --timeout " + strconv.Itoa(l.TimeoutMS) + "ms"
	}
	return cmd
}

func calloutTitle(c *lessons.Callout) string {
	switch c.Type {
	case lessons.CalloutRemember:
		return "Worth remembering"
	case lessons.CalloutLimits:
		return "Where this stops holding"
	case lessons.CalloutAsOf:
		if c.Date != "" {
			return "As of " + c.Date
		}
		return "As of"
	}
	return "Note"
}

// closeSlugs returns up to five lesson links whose slug is near want: it
// contains or is contained in want, or is within a small edit distance.
func closeSlugs(c *lessons.Course, want string) []lessonLink {
	want = strings.ToLower(strings.Trim(want, "/"))
	if want == "" || c == nil {
		return nil
	}
	type cand struct {
		l    lessonLink
		dist int
	}
	var cs []cand
	for _, l := range c.Lessons {
		d := editDistance(want, l.Slug)
		limit := max(2, len(l.Slug)/3)
		if len(want) >= 4 && (strings.Contains(l.Slug, want) || strings.Contains(want, l.Slug)) {
			d = min(d, 1)
		}
		if d <= limit {
			cs = append(cs, cand{lessonLink{l.Slug, l.Title}, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].dist < cs[j].dist })
	var out []lessonLink
	for i := 0; i < len(cs) && i < 5; i++ {
		out = append(out, cs[i].l)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func predictionOf(st store.LessonState, id string) *store.Prediction {
	if p, ok := st.Predictions[id]; ok {
		return &p
	}
	return nil
}

func checkOf(st store.LessonState, id string) *store.CheckState {
	if c, ok := st.Checks[id]; ok {
		return &c
	}
	return nil
}

func optionText(q *lessons.Question, id string) string {
	if o := findOption(q, id); o != nil {
		return o.Text
	}
	return id
}

func boolAttr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// slugify turns a heading into an id: lower case letters and digits
// joined by hyphens.
func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	return b.String()
}

// settledBy describes the block that settles a prediction, as link text.
func settledBy(l *lessons.Lesson, q *lessons.Question) string {
	b, ok := l.Block(q.SettledBy)
	if !ok {
		return "the measurement below"
	}
	switch b := b.(type) {
	case *lessons.Lab:
		if len(b.Clients) > 1 {
			return "the lab sweep below (" + lessons.ClientList(b.Clients) + " clients)"
		}
		if b.Closed > 0 {
			return "the lab run below (" + counted(b.Closed, "client", "clients") + ")"
		}
		return "the lab sweep below (" + labRates(b) + " a second)"
	case *lessons.Table:
		if b.Caption != "" {
			return "the table below: " + b.Caption
		}
		return "the recorded table below"
	}
	return "the measurement below"
}

func labRates(l *lessons.Lab) string {
	rates := make([]string, len(l.Rates))
	for i, r := range l.Rates {
		rates[i] = fmtNum(r)
	}
	return strings.Join(rates, ", ")
}

// labSummary says in words what a preset runs.
func labSummary(l *lessons.Lab) string {
	if len(l.Clients) > 1 {
		return fmt.Sprintf("%d windows of %s s with %s clients, closed loop (each client sends its next request when the last is answered).", len(l.Clients), fmtNum(l.Seconds), lessons.ClientList(l.Clients))
	}
	if l.Closed > 0 {
		return fmt.Sprintf("1 window of %s s with %s, closed loop (each client sends its next request when the last is answered).", fmtNum(l.Seconds), counted(l.Closed, "client", "clients"))
	}
	windows := "windows"
	if len(l.Rates) == 1 {
		windows = "window"
	}
	s := fmt.Sprintf("%d %s of %s s at %s requests a second", len(l.Rates), windows, fmtNum(l.Seconds), labRates(l))
	if len(l.Rates) > 1 && !slices.ContainsFunc(l.Rates, func(r float64) bool { return r != l.Rates[0] }) {
		// One rate repeated: each window draws arrivals of its own.
		s = fmt.Sprintf("%d windows of %s s at %s requests a second, each with arrivals of its own", len(l.Rates), fmtNum(l.Seconds), fmtNum(l.Rates[0]))
	}
	seed := "seed " + strconv.FormatInt(l.Seed, 10)
	if l.RNG == string(loadrun.Python) {
		seed = "CPython's random.seed(" + strconv.FormatInt(l.Seed, 10) + ") for each window"
	}
	return s + ", open loop (Poisson arrivals, " + seed + ")."
}

// lessonPageInfo is the page frame of a lesson: besides the site's own
// stylesheet and lesson.js, the model widgets' stylesheet and script when
// the lesson has a model block, and runs.js when it has a lab block, each
// linked once however many blocks use it.
// Its path is the lesson's own URL, so it does not depend on the request.
func (s *server) lessonPageInfo(l *lessons.Lesson) pageInfo {
	p := s.pageAt(lessonURL(l.Slug), l.Title)
	p.Wide = true // room for the contents beside the text
	var hasModel, hasLab bool
	for _, b := range l.Blocks() {
		switch b.(type) {
		case *lessons.Model:
			hasModel = true
		case *lessons.Lab:
			hasLab = true
		}
	}
	if hasModel {
		p.Styles = append(p.Styles, s.assets.URL("css/widgets.css"))
		p.Scripts = append(p.Scripts, s.assets.URL("js/widgets.js"))
	}
	if hasLab {
		p.Scripts = append(p.Scripts, s.assets.URL("js/runs.js"))
	}
	return p
}

// tableLabel names a lesson table's scrollable region for screen readers:
// its caption, else its id.
func tableLabel(t *lessons.Table) string {
	if t.Caption != "" {
		return t.Caption
	}
	return "Table " + t.ID
}

// blockLabel names a block's region for screen readers: the heading its
// kind shows (Predict, Check, Lab, Your record), numbered among the
// lesson's blocks of that kind when there are several ("Check 2 of 3"),
// so that no two regions of a page share a name.
func blockLabel(l *lessons.Lesson, b lessons.Block) string {
	heading := blockHeading(b)
	n, at := 0, 0
	for _, part := range l.Body {
		o := part.Block
		if o == nil || blockHeading(o) != heading {
			continue
		}
		n++
		if o == b {
			at = n
		}
	}
	if n <= 1 || at == 0 {
		return heading
	}
	return fmt.Sprintf("%s %d of %d", heading, at, n)
}

// blockHeading is the heading a block shows ("" for kinds without one).
func blockHeading(b lessons.Block) string {
	switch b := b.(type) {
	case *lessons.Question:
		if b.Type == "predict" {
			return "Predict"
		}
		return "Check"
	case *lessons.Lab:
		return "Lab"
	case *lessons.RecordBlock:
		return "Your record"
	case *lessons.Judge:
		return "Your choices, judged"
	}
	return ""
}
