package lessons

import (
	"fmt"
	"slices"
)

// A Predict gates the rest of its lesson. Its gate is the first block
// after it that measures what settles it (its lab preset, the preset's
// tables, or a simulated or live twin's; see Settling): what comes after
// that block reads the measurement (prose with its numbers, widgets set
// from it, later questions that build on it), so pages show nothing past
// the gate until the learner has answered or skipped the Predict. The
// gate block itself shows its own folded state. Lessons write the
// reading of a measurement below it; checkGates makes that a rule for
// the marks, which say what each number reads.

// gateIndex maps the index in Body of each gate block to the predicts
// it gates, in lesson order.
func (l *Lesson) gateIndex() map[int][]*Question {
	out := map[int][]*Question{}
	for i, p := range l.Body {
		q, ok := p.Block.(*Question)
		if !ok || q.Type != "predict" {
			continue
		}
		if g := l.gateOf(q, i); g >= 0 {
			out[g] = append(out[g], q)
		}
	}
	return out
}

// gateOf returns the index of q's gate block, searching from q's index
// qi, or -1 when no settling block follows q.
func (l *Lesson) gateOf(q *Question, qi int) int {
	ids := l.settlingIDs(q)
	for i := qi + 1; i < len(l.Body); i++ {
		if b := l.Body[i].Block; b != nil && ids[b.BlockID()] {
			return i
		}
	}
	return -1
}

// settlingIDs is every block that measures what settles q: its lab
// preset, the preset's tables, and a twin preset with its tables.
func (l *Lesson) settlingIDs(q *Question) map[string]bool {
	lab, tables := l.Settling(q)
	ids := map[string]bool{}
	for _, t := range tables {
		ids[t.ID] = true
	}
	if lab == nil {
		return ids
	}
	labs := append([]*Lab{lab}, l.twins(lab)...)
	for _, lb := range labs {
		ids[lb.ID] = true
		for _, p := range l.Body {
			if t, ok := p.Block.(*Table); ok && t.Preset == lb.ID {
				ids[t.ID] = true
			}
		}
	}
	return ids
}

// GatesAfter returns the predicts whose gate is part i of the body: a
// page shows the parts after i only once each of them is answered.
func (l *Lesson) GatesAfter(i int) []*Question {
	if l.gates != nil {
		return l.gates[i]
	}
	return l.gateIndex()[i]
}

// Gate returns the index in Body of q's gate block, or -1.
func (l *Lesson) Gate(q *Question) int {
	for i, p := range l.Body {
		if p.Block == q {
			return l.gateOf(q, i)
		}
	}
	return -1
}

// Cut returns the index of the last part a page shows when answered
// says which predicts are answered: the first gate with a predict not
// answered, or the last part.
func (l *Lesson) Cut(answered func(q *Question) bool) (int, *Question) {
	for i := range l.Body {
		for _, q := range l.GatesAfter(i) {
			if !answered(q) {
				return i, q
			}
		}
	}
	return len(l.Body) - 1, nil
}

// scheduleColumns are the columns of an open-loop measurement fixed
// before the service answers anything: what was offered and sent.
// Numbers read from them give nothing of a Predict away.
var scheduleColumns = []string{"offered", "sent"}

// checkGates reports each mark that reads the measurement settling a
// Predict where a learner sees it before answering: above the Predict,
// or between the Predict and its gate block. A mark in the Predict's own
// block (its explanations, shown once answered) is where it belongs.
func (c *Course) checkGates() Errors {
	var errs Errors
	for _, l := range c.Lessons {
		for qi, p := range l.Body {
			q, ok := p.Block.(*Question)
			if !ok || q.Type != "predict" {
				continue
			}
			g := l.gateOf(q, qi)
			if g < 0 {
				continue
			}
			gate := l.Body[g].Block
			ids := l.settlingIDs(q)
			for _, m := range l.Marks {
				if m.Block == q.ID || m.Line > blockLine(gate) {
					continue
				}
				r, ok := c.settlingRead(m, ids)
				if !ok {
					continue
				}
				where := fmt.Sprintf("between the Predict %s (line %d) and the %s block %s (line %d) that settles it", q.ID, q.Line, gate.Kind(), gate.BlockID(), blockLine(gate))
				if m.Line < q.Line {
					where = fmt.Sprintf("above the Predict %s (line %d) that it settles", q.ID, q.Line)
				}
				errs = append(errs, Error{File: m.File, Line: m.Line, Msg: fmt.Sprintf(
					"mark %s reads %s's `%s`, %s: a learner sees it before answering. Move the sentence below line %d, where the page shows it once the Predict is answered or skipped, or leave the number out",
					m.Source(), r.preset, r.column, where, blockLine(gate))})
			}
		}
	}
	return errs
}

// settlingRead returns a cell m reads from one of the presets in ids,
// other than an open-loop schedule's columns.
func (c *Course) settlingRead(m Mark, ids map[string]bool) (cellRead, bool) {
	e := &evalEnv{course: c, static: true}
	if _, err := m.expr.eval(e); err != nil {
		return cellRead{}, false // checkMarkRefs reports it
	}
	for _, r := range e.reads {
		if !ids[r.preset] {
			continue
		}
		if lab, _, ok := c.Lab(r.preset); ok && lab.Closed == 0 && slices.Contains(scheduleColumns, r.column) {
			continue
		}
		return r, true
	}
	return cellRead{}, false
}

// blockLine is the file line a block starts on.
func blockLine(b Block) int {
	switch b := b.(type) {
	case *Lab:
		return b.Line
	case *Table:
		return b.Line
	case *Question:
		return b.Line
	}
	return 0
}

// Settles reports whether mark m reads the measurement that settles the
// Predict q (an open loop's schedule, offered and sent, aside): a page
// shows it only once q is answered.
func (c *Course) Settles(m Mark, q *Question) bool {
	_, l, ok := c.Question(q.ID)
	if !ok {
		return false
	}
	_, reads := c.settlingRead(m, l.settlingIDs(q))
	return reads
}

// GatedBy returns the predicts whose gate comes before part i: a page
// shows part i once each of them is answered.
func (l *Lesson) GatedBy(i int) []*Question {
	var out []*Question
	for j := 0; j < i && j < len(l.Body); j++ {
		out = append(out, l.GatesAfter(j)...)
	}
	return out
}
