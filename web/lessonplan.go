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

// lessonPlan is one lesson's page as parts: stored HTML and the
// learner-dependent blocks between them.
type lessonPlan struct {
	parts []planPart
	size  int // bytes of stored HTML, to size the buffer
}

// planPart is stored HTML (block == nil) or a learner-dependent block,
// with its HTML for the common cases kept too.
type planPart struct {
	html  []byte
	block lessons.Block
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
	var blocks []lessons.Block
	for _, part := range l.Body {
		if part.Block != nil && perLearner(part.Block) {
			blocks = append(blocks, part.Block)
		}
	}
	pieces := bytes.Split(buf.Bytes(), []byte(planMark))
	if len(pieces) != len(blocks)+1 {
		return nil, fmt.Errorf("lesson %s: plan found %d block marks, want %d", l.Slug, len(pieces)-1, len(blocks))
	}
	p := &lessonPlan{}
	for i, html := range pieces {
		p.parts = append(p.parts, planPart{html: html})
		p.size += len(html)
		if i == len(blocks) {
			break
		}
		b := blocks[i]
		part := planPart{block: b}
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
	for i := range p.parts {
		part := &p.parts[i]
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
