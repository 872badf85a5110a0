package lessons

import (
	"html/template"
	"math"
	"regexp"
	"strings"
)

// ReadingWordsPerMinute is the reading pace Reading assumes.
const ReadingWordsPerMinute = 200

// recordMinutes is how long Reading allows for writing a record block's
// five fields.
const recordMinutes = 3

// judgeMinutes is how long Reading allows for choosing a design a judge
// block judges, besides its runs.
const judgeMinutes = 3

// runOverheadSeconds is what a run costs beyond its windows, per window:
// the pause between windows, draining and resetting the lab, the last
// requests' tail (the runner's WindowOverhead, rounded up).
const runOverheadSeconds = 1.0

// ReadingTime is how long a lesson takes: its words at ReadingWordsPerMinute,
// one run of each lab preset (a simulated one costs nothing to wait for),
// and time for what the learner does besides
// reading: a minute to answer a question (a prediction or a check) or move a model to its goal,
// recordMinutes to write a record.
type ReadingTime struct {
	Words      int     // every word a learner reads (see Lesson.Reading)
	RunSeconds float64 // one run of every preset: windows, overhead, and draining an overloaded lab
	Doing      int     // minutes of doing: questions (predictions and checks) and models, a minute each; records, recordMinutes each
	Minutes    int     // Words ÷ ReadingWordsPerMinute + RunSeconds ÷ 60 + Doing, to the nearest minute
}

var (
	reTag  = regexp.MustCompile(`<[^>]*>`)
	reWord = regexp.MustCompile(`[\p{L}\p{N}][\p{L}\p{N}'’.,:/-]*`)
)

// countWords counts the words of rendered HTML or plain text.
func countWords(s string) int {
	return len(reWord.FindAllString(reTag.ReplaceAllString(s, " "), -1))
}

// tableReadRows is how many rows of a recorded table Reading counts: a
// learner reads the first rows of a long table (a run over time, a row a
// second) for its shape and then skims.
const tableReadRows = 12

// tableWords is what reading a recorded table costs, in words: each
// column a learner is shown first (its preset's show, else every column)
// once as a heading and once a row, for at most tableReadRows rows. A
// pending table has no rows yet and costs its headings.
func tableWords(t *Table) int {
	cols := len(t.Show)
	if cols == 0 {
		cols = len(t.Columns)
	}
	return cols * (1 + min(len(t.Rows), tableReadRows))
}

// Reading estimates how long the lesson takes to read and do: every word
// of its prose and callouts, its questions (prompts, options and every
// explanation, which the page shows once answered), its models (goal,
// what is found, assumptions) and record forms, table captions and the
// cells a learner reads (tableWords); one
// run of each lab preset; a minute for each question and model; and
// recordMinutes for each record to write. The front matter's minutes should match it
// (TestMinutesMatchReading holds the course to within two minutes).
func (l *Lesson) Reading() ReadingTime {
	var r ReadingTime
	html := func(h template.HTML) { r.Words += countWords(string(h)) }
	text := func(s string) { r.Words += countWords(s) }
	for _, p := range l.Body {
		if p.Block == nil {
			html(p.HTML)
			continue
		}
		switch b := p.Block.(type) {
		case *Question:
			r.Doing++
			html(b.Prompt)
			for _, o := range b.Options {
				text(o.Text)
				html(o.Explain)
			}
		case *Model:
			r.Doing++
			text(b.Goal.Text)
			text(b.Goal.Found)
			text(strings.Join(b.Assumes, " "))
			text(strings.Join(b.Ignores, " "))
		case *Callout:
			html(b.Body)
		case *RecordBlock:
			r.Doing += recordMinutes
			html(b.Prompt)
			for _, f := range b.Fields {
				text(f.Label + " " + f.Hint)
			}
		case *Table:
			text(b.Caption)
			r.Words += tableWords(b)
		case *Judge:
			// Choosing and running a design: judgeMinutes, and a run of the
			// judged preset at each seed besides the one counted with it.
			r.Doing += judgeMinutes
			if lb, ok := l.Block(b.Lab); ok {
				if lab, ok := lb.(*Lab); ok && len(b.Seeds) > 1 {
					windows := float64(max(len(lab.Rates), 1))
					r.RunSeconds += float64(len(b.Seeds)-1) * (windows*(lab.Seconds+runOverheadSeconds) + lab.DrainSeconds(1))
				}
			}
		case *Lab:
			if b.Simulated {
				// Simulate answers at once: no windows to wait through.
				continue
			}
			windows := float64(max(len(b.Rates), 1))
			r.RunSeconds += windows*(b.Seconds+runOverheadSeconds) + b.DrainSeconds(1)
		}
	}
	r.Minutes = int(math.Round(float64(r.Words)/ReadingWordsPerMinute + r.RunSeconds/60 + float64(r.Doing)))
	return r
}
