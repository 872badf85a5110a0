package lessons

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"capacitylab/result"

	"gopkg.in/yaml.v3"
)

// What a predict reads (its read: field), what its options' values say of
// it, and how `lessons check` holds the recorded runs to the options.

// stretchColumns checks a time-range read's columns: each one a stretch
// of seconds reads (result.StretchColumns), none twice. A window table's
// column gets the name it has over time.
func (fp *fileParser) stretchColumns(d *ydoc, what string, cols []string) {
	known := result.StretchColumns()
	seen := map[string]bool{}
	for i, c := range cols {
		line := d.line("read", "columns", i)
		switch {
		case c == "ok_per_sec":
			fp.p.add(line, "%s: read.columns: ok_per_sec is the whole window's: over from_s to to_s, name ok, which is read a second (want one of %s)", what, strings.Join(known, ", "))
		case !slices.Contains(known, c):
			fp.p.add(line, "%s: read.columns: %q is not read over a time range: want one of %s (counts are read a second, what was inside as a mean, p50_ms and p99_ms as the lowest and highest second's)", what, c, strings.Join(known, ", "))
		case seen[c]:
			fp.p.add(line, "%s: read.columns names %q twice", what, c)
		}
		seen[c] = true
	}
}

// ShareOf reads a read: column written A/B, one window-table column as a
// share of another (ok/sent: the share of the requests sent answered ok),
// which pages show as a percentage; ok is false for a plain column.
func ShareOf(col string) (num, den string, ok bool) {
	num, den, ok = strings.Cut(col, "/")
	return num, den, ok
}

// readColumns checks a window reading's columns: each a window-table
// column (RecordColumns) or a share of two (ok/sent), none twice.
func (fp *fileParser) readColumns(d *ydoc, what string, cols []string) {
	known := AllColumns()
	seen := map[string]bool{}
	for i, c := range cols {
		line := d.line("read", "columns", i)
		num, den, share := ShareOf(c)
		switch {
		case share && (!slices.Contains(known, num) || !slices.Contains(known, den)):
			fp.p.add(line, "%s: read.columns: %q is not a share of two columns: want A/B with A and B of %s, such as ok/sent", what, c, strings.Join(known, ", "))
		case !share && !slices.Contains(known, c):
			fp.p.add(line, "%s: read.columns: unknown column %q: want one of %s, or a share of two such as ok/sent", what, c, strings.Join(known, ", "))
		case seen[c]:
			fp.p.add(line, "%s: read.columns names %q twice", what, c)
		}
		seen[c] = true
	}
}

// optionValues reads a predict's options' value fields into q's options:
// none, or one on every option, each a number or [low, high] of the
// quantity the predict's read names first.
func (fp *fileParser) optionValues(d *ydoc, what string, q *Question, opts []optionFields) {
	given := 0
	for i, o := range opts {
		if o.Value.Kind == 0 {
			continue
		}
		given++
		oid := string(rune('a' + i))
		b, msg := bandOf(&o.Value)
		if msg != "" {
			fp.p.add(d.line("options", i, "value"), "%s: option %s: value %s: want a number (value: 30) or a band from low to high (value: [27, 33]) of the predict's quantity, in its units", what, oid, msg)
			continue
		}
		if i < len(q.Options) {
			q.Options[i].Value = &b
		}
	}
	switch {
	case given == 0:
	case given < len(opts):
		fp.p.add(d.line("options"), "%s: %d of its %d options give a value: want a value on every option (each is drawn beside the measurement) or on none", what, given, len(opts))
	case q.Read == nil:
		fp.p.add(d.line("options"), "%s: its options give values but it has no read: name the quantity they are values of as the first of read.columns", what)
	}
}

// bandOf reads an option's value: a number, or a list of one or two
// numbers, low then high, none below 0. msg says what is wrong ("" when
// nothing is).
func bandOf(n *yaml.Node) (b Band, msg string) {
	var nums []*yaml.Node
	switch n.Kind {
	case yaml.ScalarNode:
		nums = []*yaml.Node{n}
	case yaml.SequenceNode:
		nums = n.Content
	default:
		return b, "is a mapping"
	}
	if len(nums) < 1 || len(nums) > 2 {
		return b, fmt.Sprintf("has %d numbers", len(nums))
	}
	var vs []float64
	for _, e := range nums {
		v, err := strconv.ParseFloat(e.Value, 64)
		if e.Kind != yaml.ScalarNode || err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return b, fmt.Sprintf("%q is not a number", e.Value)
		}
		if v < 0 {
			return b, fmt.Sprintf("%g is below 0 (measured quantities are not)", v)
		}
		vs = append(vs, v)
	}
	b = Band{Lo: vs[0], Hi: vs[len(vs)-1]}
	if b.Lo > b.Hi {
		return b, fmt.Sprintf("[%g, %g] runs from high to low", b.Lo, b.Hi)
	}
	return b, ""
}

// checkStretch checks a time-range read against the preset that settles
// it: a run over time, and whole seconds inside its windows.
func (fp *fileParser) checkStretch(ra readAt, lab *Lab) {
	r := ra.q.Read
	key := "from_s"
	if r.FromS == 0 && r.ToS != 0 {
		key = "to_s"
	}
	if !lab.OverTime {
		fp.p.add(ra.d.line("read", key), "%s: read.%s: the preset %q is not a run over time (over_time: true): a time range reads the per-second rows of one; leave from_s and to_s out, or read a preset that has them", ra.what, key, lab.ID)
		return
	}
	whole := func(v float64) bool { return v == math.Trunc(v) }
	secs := lab.Seconds
	if !whole(r.FromS) || r.FromS < 0 || r.FromS >= secs {
		fp.p.add(ra.d.line("read", "from_s"), "%s: read.from_s %g is not allowed: want a whole second from 0 to %g, inside the preset's %g s windows (the time table's rows are seconds)", ra.what, r.FromS, secs-1, secs)
	}
	if r.ToS != 0 && (!whole(r.ToS) || r.ToS <= r.FromS || r.ToS > secs) {
		fp.p.add(ra.d.line("read", "to_s"), "%s: read.to_s %g is not allowed: want a whole second after from_s (%g) and at most the window's %g s, or leave it out for the window's end", ra.what, r.ToS, r.FromS, secs)
	}
}

// checkValues checks that a predict whose options give values reads one
// window, so that each value is of one number.
func (fp *fileParser) checkValues(ra readAt, lab *Lab) {
	if len(ra.q.Options) == 0 || ra.q.Options[0].Value == nil {
		return
	}
	windows := len(ra.q.Read.Rows)
	if windows == 0 {
		windows = max(1, len(lab.Rates), len(lab.Clients))
	}
	if windows != 1 {
		fp.p.add(ra.d.line("read"), "%s: its options give values, but read names %d windows: want one (read.rows: [one of %s]), so each value is of one number", ra.what, windows, RateList(lab.Rates))
	}
}

// Measured is what the recorded run of a predict's settling preset says
// of the quantity its read names first, for `lessons check`: ok is false
// when the lesson has no table to read it from (pending, or a preset
// learners' runs settle) or the reading has no number (no such row, a
// cell that is not a number). what describes the quantity in words.
func (l *Lesson) Measured(q *Question) (v float64, what string, ok bool) {
	if q.Read == nil || len(q.Read.Columns) == 0 {
		return 0, "", false
	}
	lab, tables := l.Settling(q)
	if lab == nil {
		return 0, "", false
	}
	col := q.Read.Columns[0]
	window := 0
	if len(q.Read.Rows) > 0 {
		window = slices.Index(lab.Rates, q.Read.Rows[0])
		if window < 0 {
			return 0, "", false
		}
	}
	for _, t := range tables {
		if t.Pending || len(t.Rows) == 0 || t.TimeTable() != q.Read.Over {
			continue
		}
		if q.Read.Over {
			samples, err := result.ParseSamples(t.Columns, t.Rows)
			if err != nil {
				return 0, "", false
			}
			from, to, empty := q.Read.Range(lab.Seconds)
			if empty {
				return 0, "", false
			}
			lo, hi, _ := result.ReadStretch(samples, window, from, to).Column(col)
			if math.IsNaN(lo) || lo != hi {
				// A percentile over seconds is a span, not one number.
				return 0, "", false
			}
			return lo, fmt.Sprintf("%s from %g s to %g s", col, from, to), true
		}
		if window >= len(t.Rows) {
			return 0, "", false
		}
		cell := func(name string) (float64, bool) {
			ci := slices.Index(t.Columns, name)
			if ci < 0 || ci >= len(t.Rows[window]) {
				return 0, false
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(t.Rows[window][ci]), 64)
			return v, err == nil
		}
		if num, den, share := ShareOf(col); share {
			n, ok1 := cell(num)
			d, ok2 := cell(den)
			if !ok1 || !ok2 || d == 0 {
				return 0, "", false
			}
			return 100 * n / d, col + " in percent", true
		}
		v, ok := cell(col)
		if !ok {
			return 0, "", false
		}
		return v, col, true
	}
	return 0, "", false
}

// checkValues holds each predict whose options give values to its
// recorded run: the measured quantity falls in the correct option's band
// and in no other's, or the recorded run cannot tell the options apart.
func (c *Course) checkValues() Errors {
	var errs Errors
	for _, l := range c.Lessons {
		for _, b := range l.Blocks() {
			q, ok := b.(*Question)
			if !ok || q.Type != "predict" || len(q.Options) == 0 || q.Options[0].Value == nil {
				continue
			}
			v, what, ok := l.Measured(q)
			if !ok {
				continue
			}
			for _, o := range q.Options {
				in := o.Value.Contains(v)
				switch {
				case o.Correct && !in:
					errs = append(errs, Error{File: l.File, Line: o.Line, Msg: fmt.Sprintf("predict %q: option %s is correct, but its value %s does not hold the recorded %s, %s: want the recorded run inside the correct option's value (change the values or the question)", q.ID, o.ID, o.Value, what, strconv.FormatFloat(v, 'f', -1, 64))})
				case !o.Correct && in:
					errs = append(errs, Error{File: l.File, Line: o.Line, Msg: fmt.Sprintf("predict %q: option %s is wrong, but its value %s holds the recorded %s, %s: the recorded run cannot tell it from the correct option (change the values or the question)", q.ID, o.ID, o.Value, what, strconv.FormatFloat(v, 'f', -1, 64))})
				}
			}
		}
	}
	return errs
}

// Contains reports whether v lies in the band, ends included.
func (b Band) Contains(v float64) bool { return v >= b.Lo && v <= b.Hi }

// String writes the band as an option gives it: "30" or "[27, 33]".
func (b Band) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	if b.Lo == b.Hi {
		return f(b.Lo)
	}
	return "[" + f(b.Lo) + ", " + f(b.Hi) + "]"
}
