package lessons

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// Options are "systematically" first or longest when, over one lesson's
// questions (Predicts and Checks together), the correct option is the
// first in more than half of them, or strictly the longest in more than
// half of them; or, over the whole course, first or longest in more than
// maxCourseShare of all questions. With four options a fair shuffle puts
// the right one first a quarter of the time; a learner who always picks
// the first or the longest must not do better than a coin toss in any
// lesson, nor much better than chance over the course.
const maxCourseShare = 0.35

// optionOrder counts, for a set of questions, how many there are, in how
// many the correct option is first, and in how many it is strictly the
// longest (in characters).
func optionOrder(qs []*Question) (n, first, longest int) {
	for _, q := range qs {
		n++
		best, bestLen, tie := -1, -1, false
		for i, o := range q.Options {
			switch l := utf8.RuneCountInString(o.Text); {
			case l > bestLen:
				best, bestLen, tie = i, l, false
			case l == bestLen:
				tie = true
			}
		}
		for i, o := range q.Options {
			if !o.Correct {
				continue
			}
			if i == 0 {
				first++
			}
			if i == best && !tie {
				longest++
			}
		}
	}
	return n, first, longest
}

// TestOptionOrder holds the course to the rule above, lesson by lesson
// and over the course.
func TestOptionOrder(t *testing.T) {
	c, err := LoadWith(Content(), LoadOptions{Pending: true})
	if err != nil {
		t.Fatalf("embedded content does not load: %v", err)
	}
	var all []*Question
	for _, l := range c.Lessons {
		if l.Part == FixturePart {
			continue
		}
		var qs []*Question
		for _, b := range l.Blocks() {
			if q, ok := b.(*Question); ok {
				qs = append(qs, q)
			}
		}
		all = append(all, qs...)
		n, first, longest := optionOrder(qs)
		if 2*first > n {
			t.Errorf("%s: the correct option is first in %d of %d questions: more than half; reorder the options", l.File, first, n)
		}
		if 2*longest > n {
			t.Errorf("%s: the correct option is the longest in %d of %d questions: more than half; even out the options' lengths", l.File, longest, n)
		}
	}
	n, first, longest := optionOrder(all)
	if n == 0 {
		t.Fatal("the course has no questions")
	}
	if share := float64(first) / float64(n); share > maxCourseShare {
		t.Errorf("the correct option is first in %d of the course's %d questions (%.0f%%): want at most %.0f%%", first, n, 100*share, 100*maxCourseShare)
	}
	if share := float64(longest) / float64(n); share > maxCourseShare {
		t.Errorf("the correct option is the longest in %d of the course's %d questions (%.0f%%): want at most %.0f%%", longest, n, 100*share, 100*maxCourseShare)
	}
	t.Logf("course: %d questions, correct first in %d, longest in %d", n, first, longest)
}

// TestOptionOrderCounts checks the counting on made-up questions.
func TestOptionOrderCounts(t *testing.T) {
	q := func(correct int, texts ...string) *Question {
		var os []Option
		for i, s := range texts {
			os = append(os, Option{Text: s, Correct: i == correct})
		}
		return &Question{Options: os}
	}
	tests := []struct {
		q              *Question
		first, longest int
	}{
		{q(0, "first and longest", "short"), 1, 1},
		{q(1, "a", "second, longest"), 0, 1},
		{q(0, "tie", "tie"), 1, 0}, // a tie is not strictly longest
		{q(2, "aaa", "bb", "c"), 0, 0},
	}
	for i, tt := range tests {
		n, first, longest := optionOrder([]*Question{tt.q})
		if n != 1 || first != tt.first || longest != tt.longest {
			t.Errorf("case %d: first %d longest %d, want %d %d", i, first, longest, tt.first, tt.longest)
		}
	}
}

// TestMinutesMatchReading holds each lesson's minutes (front matter) to
// its reading (Lesson.Reading: words at 200 a minute, one run of each
// preset, a minute per prediction and model), within two minutes, so the
// figure cannot drift as the text changes.
func TestMinutesMatchReading(t *testing.T) {
	c, err := LoadWith(Content(), LoadOptions{Pending: true})
	if err != nil {
		t.Fatalf("embedded content does not load: %v", err)
	}
	for _, l := range c.Lessons {
		if l.Part == FixturePart {
			continue
		}
		r := l.Reading()
		if d := l.Minutes - r.Minutes; d < -2 || d > 2 {
			t.Errorf("%s: minutes: %d, but the reading is %d minutes (%d words at %d a minute, %.0f s of runs, %d minutes of questions, models and records): write %d",
				l.File, l.Minutes, r.Minutes, r.Words, ReadingWordsPerMinute, r.RunSeconds, r.Doing, r.Minutes)
		} else {
			t.Logf("%s: minutes %d, reading %d (%d words, %.0f s of runs, %d to do)", l.File, l.Minutes, r.Minutes, r.Words, r.RunSeconds, r.Doing)
		}
	}
}

func TestReadingCounts(t *testing.T) {
	// 400 words of prose and a preset of two 5 s windows: 2 minutes of
	// reading and 12 s of running.
	body := strings.Repeat("word ", 400) + "\n\n" + goodBody("a")
	body = strings.Replace(body, "rates: [10]\nseconds: 1", "rates: [10, 20]\nseconds: 5", 1)
	c := loadOne(t, map[string]string{"a.md": head("a", 1) + body})
	l, _ := c.Lesson("a")
	r := l.Reading()
	// The predict adds its prompt (1), options (2) and explanations (2),
	// and a minute to make it.
	if r.Words != 405 || r.RunSeconds != 12 || r.Doing != 1 || r.Minutes != 3 {
		t.Errorf("Reading = %+v, want 405 words, 12 s of runs, 1 to do, 3 minutes", r)
	}
}

var reSession = regexp.MustCompile(`; session (\S+);`)

// TestContentPresetsAreRecordedTogether: every preset of the course has a
// table, and all the tables of a lesson were recorded in one session (one
// call of the recorder, on one build), so a comparison between them is
// between presets, not between days or machines.
func TestContentPresetsAreRecordedTogether(t *testing.T) {
	c, err := LoadWith(Content(), LoadOptions{Pending: true})
	if err != nil {
		t.Fatalf("embedded content does not load: %v", err)
	}
	for _, l := range c.Lessons {
		if l.Part == FixturePart {
			continue
		}
		sessions := map[string][]string{}
		for _, b := range l.Blocks() {
			switch b := b.(type) {
			case *Lab:
				tb := c.tableOf(b.ID)
				switch {
				case tb == nil && judgeOf(l, b.ID) != nil:
					// A design task's preset: the learner's runs are its
					// measurement, judged by a judge block; it has no table.
				case tb == nil:
					t.Errorf("%s:%d: preset %s has no table: add one with pending: true and record it (server lessons record --lab %s)", l.File, b.Line, b.ID, b.ID)
				case tb.Pending:
					t.Errorf("%s:%d: table %s is still to be recorded: server lessons record --lesson %s", l.File, tb.Line, tb.ID, l.Slug)
				}
			case *Table:
				if b.Pending {
					continue
				}
				m := reSession.FindStringSubmatch(b.Source)
				if m != nil && b.Lab != nil && b.Lab.Simulated {
					// A simulated table is the same on any machine and in
					// any session (package doc): it stands apart.
					continue
				}
				if m == nil {
					t.Errorf("%s:%d: table %s names no recording session (it was recorded before sessions were written): record the lesson again with `server lessons record --lesson %s`", l.File, b.Line, b.ID, l.Slug)
					continue
				}
				sessions[m[1]] = append(sessions[m[1]], b.ID)
			}
		}
		if len(sessions) > 1 {
			t.Errorf("%s: its tables come from %d recording sessions (%s): record the lesson's presets together with `server lessons record --lesson %s`",
				l.File, len(sessions), fmt.Sprint(sessions), l.Slug)
		}
	}
}

// TestTableCaptionsDiffer holds every lesson's recorded tables to
// different captions: pages name each table's scrolling region by its
// caption, and two regions with one name are one landmark too many (axe's
// landmark-unique). Two presets that differ only in a knob the caption
// leaves out would share one.
func TestTableCaptionsDiffer(t *testing.T) {
	c, err := LoadWith(Content(), LoadOptions{Pending: true})
	if err != nil {
		t.Fatalf("embedded content does not load: %v", err)
	}
	for _, l := range c.Lessons {
		seen := map[string]*Table{}
		for _, b := range l.Blocks() {
			tb, ok := b.(*Table)
			if !ok || tb.Caption == "" {
				continue
			}
			if first, dup := seen[tb.Caption]; dup {
				t.Errorf("%s:%d: table %s has the caption of table %s (line %d): %q", l.File, tb.Line, tb.ID, first.ID, first.Line, tb.Caption)
				continue
			}
			seen[tb.Caption] = tb
		}
	}
}
