package web

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/a-h/templ"

	"capacitylab/lessons"
	"capacitylab/store"
)

// A lesson page is mostly the same for everyone: the frame, the prose,
// the callout blocks, the pager. The predict, check, model, record, lab
// and table blocks show the learner's own state (their answers, their
// option order, their runs; a lab or table folds until its Predict is
// answered). A lessonPlan is a
// page rendered once per course value with those blocks cut out, so a
// request writes the stored HTML between them and renders only the blocks
// (see lessonPlan.write). The plan is built by rendering the very same
// lessonPage component, so the two cannot drift apart; TestLessonPlanMatchesRender
// compares them for every lesson and several learner states.

// planMark stands where a learner-dependent block goes while a plan is
// being rendered. It holds NUL bytes, which neither templ's escaping nor
// goldmark's output (it replaces NUL) can produce, and the plan checks
// that it found exactly one mark per such block.
const planMark = "\x00cl-block\x00"

// gateMark stands after a part that is a Predict's gate, and endMark
// after the lesson's last part: a plan keeps every part, and a request
// whose learner has not answered a gate's Predict writes the gate's note
// and skips from the gate to the end (see pageCut).
const (
	gateMark = "\x00cl-gate\x00"
	endMark  = "\x00cl-end\x00"
)

// planCtxKey marks a context in which lessonBlock writes planMark instead
// of a learner-dependent block.
type planCtxKey struct{}

// perLearner reports whether a block shows the learner's state (or a
// request's form values) and so is rendered per request.
func perLearner(b lessons.Block) bool {
	switch b.(type) {
	case *lessons.Question, *lessons.Model, *lessons.RecordBlock, *lessons.Lab, *lessons.Table, *lessons.Judge:
		return true
	}
	return false
}

// lessonBlock renders one block of a lesson page: blockView, or, while a
// plan is being built, planMark for a learner-dependent block.
func lessonBlock(l *lessons.Lesson, b lessons.Block, st store.LessonState) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		if ctx.Value(planCtxKey{}) != nil && perLearner(b) {
			_, err := io.WriteString(w, planMark)
			return err
		}
		return blockView(l, b, st).Render(ctx, w)
	})
}

// pageCut returns the last part of the body a lesson page shows its
// learner and the Predict that cuts it there (nil: the whole body): the
// first gate whose Predict the learner has not answered or skipped.
// While a plan is being built it is the whole body: the plan cuts per
// request (lessonPlan.write).
func pageCut(ctx context.Context, l *lessons.Lesson, st store.LessonState) (int, *lessons.Question) {
	if ctx.Value(planCtxKey{}) != nil {
		return len(l.Body) - 1, nil
	}
	return l.Cut(func(q *lessons.Question) bool {
		_, ok := st.Predictions[q.ID]
		return ok
	})
}

// lessonGate follows part i of a lesson page: while a plan is built,
// gateMark when part i is a gate; otherwise the gate's note when by, the
// Predict that cuts the page, has its gate there.
func lessonGate(l *lessons.Lesson, i int, by *lessons.Question) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		if ctx.Value(planCtxKey{}) != nil {
			if len(l.GatesAfter(i)) > 0 {
				_, err := io.WriteString(w, gateMark)
				return err
			}
			return nil
		}
		if by != nil && l.Gate(by) == i {
			return gateNote(l, i, by).Render(ctx, w)
		}
		return nil
	})
}

// bodyEnd follows a lesson page's last part: endMark while a plan is
// built, nothing otherwise.
func bodyEnd() templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		if ctx.Value(planCtxKey{}) != nil {
			_, err := io.WriteString(w, endMark)
			return err
		}
		return nil
	})
}

// lessonPlan is one lesson's page as parts: stored HTML, the
// learner-dependent blocks between them, its gates and the body's end.
type lessonPlan struct {
	parts []planPart
	size  int // bytes of stored HTML, to size the buffer
	end   int // index in parts of the body's end
}

// planPart is stored HTML, a learner-dependent block with its HTML for
// the common cases kept too, a gate (gates set) or the body's end.
type planPart struct {
	html  []byte
	block lessons.Block
	// gates are the Predicts whose gate the part before this one is,
	// with each one's note (gateNote) by id.
	gates []*lessons.Question
	notes map[string][]byte
	end   bool
	// blank is the block's HTML for a newcomer: nothing stored for it,
	// no form values for it in the request, the newcomer's option order,
	// no runs (nil: not kept).
	blank []byte
	// reached is a model block's HTML with a recorded goal, with holes
	// where the time it was reached shows (nil: not kept).
	reached holed
	// answered keeps a predict or check block's HTML for each answer
	// and option order seen so far, built on first use.
	answered *cache[holed]
	// newcomerOrder is a question's option order in blank.
	newcomerOrder string
}

// A kept block's HTML has holes where a learner's own values go: the time
// they locked in a prediction or reached a goal, and their attempts at a
// check. It is rendered in a context that asks for holes (withHoles), in
// which those values are written as holeMark (holeOr); a request fills each
// hole with its learner's value.

// holeMark stands where a learner's own value goes in a kept block. Like
// planMark it holds NUL bytes, which neither templ's escaping nor
// goldmark's output can produce.
const holeMark = "\x00cl-hole\x00"

// holesCtxKey marks a context in which a learner's own values are written
// as holes.
type holesCtxKey struct{}

// withHoles is ctx asking for holes where a learner's own values go.
func withHoles(ctx context.Context) context.Context {
	return context.WithValue(ctx, holesCtxKey{}, true)
}

// holeOr is value, or holeMark while a kept block is rendered with holes:
// what the templates write for a learner's own time or count.
func holeOr(ctx context.Context, value string) string {
	if ctx.Value(holesCtxKey{}) != nil {
		return holeMark
	}
	return value
}

// timeFills fill the holes a learner's time leaves: its datetime
// attribute and its text (localTime).
func timeFills(t time.Time) []string { return []string{isoTime(t), fmtTime(t)} }

// holed is HTML with holes: piece 0, hole 0, piece 1, … , the last piece.
type holed [][]byte

// cutHoles cuts html at its holes, which must be exactly n; otherwise it
// returns nil (the block is then rendered per request instead).
func cutHoles(html []byte, n int) holed {
	pieces := bytes.Split(html, []byte(holeMark))
	if len(pieces) != n+1 {
		return nil
	}
	return pieces
}

// write writes h with fills in its holes. Fills are times and numbers
// formatted by fmtTime, isoTime and itoa, which need no escaping.
func (h holed) write(buf *bytes.Buffer, fills ...string) {
	for i, piece := range h {
		buf.Write(piece)
		if i < len(fills) {
			buf.WriteString(fills[i])
		}
	}
}

// keptHoled returns a block's HTML for one variant (key) from kept,
// building it on first use; a block that cannot be cut is kept as nil and
// rendered per request.
func keptHoled(kept *cache[holed], key string, build func() (holed, error)) holed {
	h, _ := kept.getOrMake(key, func() (holed, bool, error) {
		h, err := build()
		if err != nil {
			h = nil
		}
		return h, true, nil
	})
	return h
}

// maxVariants bounds the HTML kept per block: its answers times the
// orders of its options learners have (24 for four options). Past it, the
// variant used longest ago makes room.
const maxVariants = 512

// buildPlan renders the lesson page with the learner-dependent blocks
// cut out, and each such block's HTML for the common states.
func buildPlan(ctx context.Context, page templ.Component, l *lessons.Lesson, models *modelCache) (*lessonPlan, error) {
	ctx = context.WithValue(ctx, widgetCtxKey{}, &widgetCtx{Models: models})
	var buf bytes.Buffer
	if err := page.Render(context.WithValue(ctx, planCtxKey{}, true), &buf); err != nil {
		return nil, err
	}
	// The marks the page must hold, in order: each learner-dependent
	// block, a gate after each gate part, and the body's end.
	var want []planPart
	for i, part := range l.Body {
		if part.Block != nil && perLearner(part.Block) {
			want = append(want, planPart{block: part.Block})
		}
		if gates := l.GatesAfter(i); len(gates) > 0 {
			notes := map[string][]byte{}
			for _, q := range gates {
				html, err := renderBytes(ctx, gateNote(l, i, q))
				if err != nil {
					return nil, err
				}
				notes[q.ID] = html
			}
			want = append(want, planPart{gates: gates, notes: notes})
		}
	}
	want = append(want, planPart{end: true})
	pieces, marks := splitPlan(buf.Bytes())
	if len(marks) != len(want) {
		return nil, fmt.Errorf("lesson %s: plan found %d marks, want %d", l.Slug, len(marks), len(want))
	}
	p := &lessonPlan{}
	for i, html := range pieces {
		p.parts = append(p.parts, planPart{html: html})
		p.size += len(html)
		if i == len(want) {
			break
		}
		part := want[i]
		if kind := markOf(part); marks[i] != kind {
			return nil, fmt.Errorf("lesson %s: plan mark %d is %q, want %q", l.Slug, i+1, marks[i], kind)
		}
		if part.block == nil {
			if part.end {
				p.end = len(p.parts)
			}
			p.parts = append(p.parts, part)
			continue
		}
		b := part.block
		blank, err := renderBytes(ctx, blockView(l, b, (&store.Export{}).State()))
		if err != nil {
			return nil, err
		}
		part.blank = blank
		switch b := b.(type) {
		case *lessons.Model:
			st := (&store.Export{}).State()
			st.Goals[b.ID] = store.Goal{Lesson: l.Slug, Block: b.ID}
			html, err := renderBytes(withHoles(ctx), blockView(l, b, st))
			if err != nil {
				return nil, err
			}
			part.reached = cutHoles(html, len(timeFills(time.Time{})))
		case *lessons.Question:
			part.answered = newCache[holed](maxVariants)
			part.newcomerOrder = orderKey(b.Order(""))
		case *lessons.Lab, *lessons.Table:
			part.answered = newCache[holed](maxVariants)
		}
		p.size += len(blank)
		p.parts = append(p.parts, part)
	}
	return p, nil
}

// markOf is the mark a plan part stands at.
func markOf(part planPart) string {
	switch {
	case part.block != nil:
		return planMark
	case part.end:
		return endMark
	}
	return gateMark
}

// splitPlan cuts a page rendered for a plan at its marks (planMark,
// gateMark, endMark), returning the HTML between them and the marks in
// order.
func splitPlan(page []byte) (pieces [][]byte, marks []string) {
	for {
		at, mark := -1, ""
		for _, m := range []string{planMark, gateMark, endMark} {
			if i := bytes.Index(page, []byte(m)); i >= 0 && (at < 0 || i < at) {
				at, mark = i, m
			}
		}
		if at < 0 {
			return append(pieces, page), marks
		}
		pieces = append(pieces, page[:at])
		marks = append(marks, mark)
		page = page[at+len(mark):]
	}
}

func renderBytes(ctx context.Context, c templ.Component) ([]byte, error) {
	var buf bytes.Buffer
	err := c.Render(ctx, &buf)
	return buf.Bytes(), err
}

// write renders the page for the request's learner into buf: the stored
// HTML, each learner-dependent block from its kept HTML when the
// learner's state and the request allow, else rendered. ctx carries the
// request's widget and record values (lessonWidgets, withRecords).
func (p *lessonPlan) write(ctx context.Context, buf *bytes.Buffer, l *lessons.Lesson, st store.LessonState) error {
	buf.Grow(p.size + 8<<10)
	wc, _ := ctx.Value(widgetCtxKey{}).(*widgetCtx)
	for i := 0; i < len(p.parts); i++ {
		part := &p.parts[i]
		if part.gates != nil {
			for _, q := range part.gates {
				if _, ok := st.Predictions[q.ID]; !ok {
					buf.Write(part.notes[q.ID])
					i = p.end // the parts up to the body's end are hidden
					break
				}
			}
			continue
		}
		if part.block == nil {
			buf.Write(part.html)
			continue
		}
		if part.writeKept(ctx, buf, l, wc, st) {
			continue
		}
		if err := blockView(l, part.block, st).Render(ctx, buf); err != nil {
			return err
		}
	}
	return nil
}

// writeKept writes the block's kept HTML when it is what the block shows
// for this state and request, and reports whether it did.
//
// A kept variant is keyed by every field of the learner's state that the
// block's template shows, except the ones cut out as holes (times, the
// attempt count): a template that starts showing another field must add
// it to the key. TestLessonPlanMatchesRender compares the kept HTML with
// a whole render for several learners.
func (part *planPart) writeKept(ctx context.Context, buf *bytes.Buffer, l *lessons.Lesson, wc *widgetCtx, st store.LessonState) bool {
	if part.blank == nil {
		return false
	}
	lc := lessonCtxOf(ctx)
	switch b := part.block.(type) {
	case *lessons.Question:
		order := orderKey(b.Order(lc.Learner))
		if b.Type == "predict" {
			pr, ok := st.Predictions[b.ID]
			if !ok && order == part.newcomerOrder {
				buf.Write(part.blank)
				return true
			}
			seen := measured(lc, l, b, &pr)
			key := order + "|" + strconv.FormatBool(ok) + "|" + pr.Option + "|" + strconv.FormatBool(pr.Skipped) + "|" + strconv.FormatBool(pr.Revealed()) + "|" + strconv.FormatBool(seen)
			h := keptHoled(part.answered, key, func() (holed, error) {
				st := (&store.Export{}).State()
				holes := 0
				if ok {
					st.Predictions[b.ID] = pr
					holes = len(timeFills(pr.LockedAt))
				}
				html, err := renderBytes(withHoles(ctx), blockView(l, b, st))
				return cutHoles(html, holes), err
			})
			if h == nil {
				return false
			}
			if ok {
				h.write(buf, timeFills(pr.LockedAt)...)
			} else {
				h.write(buf)
			}
			return true
		}
		c, ok := st.Checks[b.ID]
		if !ok && order == part.newcomerOrder {
			buf.Write(part.blank)
			return true
		}
		once := c.Count == 1
		key := order + "|" + strconv.FormatBool(ok) + "|" + c.Last.Option + "|" + strconv.FormatBool(c.Last.Correct) + "|" + strconv.FormatBool(c.First.Correct) + "|" + strconv.FormatBool(once)
		h := keptHoled(part.answered, key, func() (holed, error) {
			st := (&store.Export{}).State()
			holes := 0
			if ok {
				st.Checks[b.ID] = c
				if !once {
					holes = 1 // the attempt count
				}
			}
			html, err := renderBytes(withHoles(ctx), blockView(l, b, st))
			return cutHoles(html, holes), err
		})
		if h == nil {
			return false
		}
		if ok && !once {
			h.write(buf, itoa(c.Count))
		} else {
			h.write(buf)
		}
		return true
	case *lessons.Lab:
		// As a newcomer sees it (folded, or open with no runs to show), or
		// unfolded with no runs to show: the same for every learner.
		gate, isFolded := folded(l, b.ID, st)
		_, run := lc.Runs[b.ID]
		_, ref := lc.Refs[b.ID]
		if isFolded || (gate == nil && !run && !ref && lc.Busy == "") {
			buf.Write(part.blank)
			return true
		}
		if run || ref || lc.Busy != "" {
			return false
		}
		h := keptHoled(part.answered, "unfolded", func() (holed, error) {
			html, err := renderBytes(context.WithValue(ctx, lessonCtxKey{}, &lessonCtx{}), blockView(l, b, st))
			return cutHoles(html, 0), err
		})
		if h == nil {
			return false
		}
		h.write(buf)
		return true
	case *lessons.Table:
		gate, isFolded := folded(l, b.ID, st)
		if gate == nil || isFolded {
			buf.Write(part.blank)
			return true
		}
		if st.Predictions[gate.ID].Opened() {
			return false // the learner's prediction is in it
		}
		h := keptHoled(part.answered, "closed", func() (holed, error) {
			html, err := renderBytes(ctx, blockView(l, b, st))
			return cutHoles(html, 0), err
		})
		if h == nil {
			return false
		}
		h.write(buf)
		return true
	case *lessons.Model:
		if wc != nil && wc.Block == b.ID {
			return false // the request's form values for this widget
		}
		g, ok := st.Goals[b.ID]
		if !ok {
			buf.Write(part.blank)
			return true
		}
		if part.reached == nil {
			return false
		}
		part.reached.write(buf, timeFills(g.ReachedAt)...)
		return true
	case *lessons.RecordBlock:
		if d := recordDataOf(ctx, b, st); d.Saved == nil && d.Errors == nil && len(d.Runs) == 0 {
			buf.Write(part.blank)
			return true
		}
	}
	return false
}

// keptPlan is a lesson's plan kept by its slug and header links (server.plans), with the
// course value it was built from: a new course value (author mode
// reloads) builds a new plan.
type keptPlan struct {
	course *lessons.Course
	plan   *lessonPlan
}
