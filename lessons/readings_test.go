package lessons

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// overBody is a predict reading a stretch of a run over time, with a value
// on each option (fences on lines 10 and 23 after head).
const overBody = "```predict id=a-p\n" + // 10
	"prompt: Q?\n" + // 11
	"options:\n" + // 12
	"  - text: A\n" + // 13
	"    correct: true\n" + // 14
	"    value: [20, 30]\n" + // 15
	"    explain: Yes.\n" + // 16
	"  - text: B\n" + // 17
	"    value: [0, 5]\n" + // 18
	"    explain: No.\n" + // 19
	"settled_by: a-lab\n" + // 20
	"read: {columns: [ok, p99_ms], from_s: 2}\n" + // 21
	"```\n" + // 22
	"```lab id=a-lab\n" + // 23
	"workers: 1\nspin_ms: 0\nwait_ms: 20\nlimit: 0\ncpus: 1\nrates: [30]\nseconds: 5\n" + // 24-30
	"over_time: true\n" + // 31
	"```\n" // 32

// overRows are a time table's rows for overBody's lab: ok 25 a second
// from 2 s to the window's end, and a last moment past it.
var overRows = [][]string{
	{"0", "0", "1", "30", "0", "0", "0", "1", "0", "1", "—", "20.1", "21.0", "—"},
	{"0", "1", "1", "30", "0", "0", "0", "1", "0", "1", "—", "20.1", "22.0", "—"},
	{"0", "2", "1", "24", "0", "1", "0", "1", "0", "1", "—", "20.1", "31.5", "—"},
	{"0", "3", "1", "25", "0", "0", "0", "1", "0", "1", "—", "20.1", "24.0", "—"},
	{"0", "4", "1", "26", "0", "0", "0", "1", "0", "1", "—", "20.1", "29.0", "—"},
	{"0", "5", "0.04", "1", "0", "0", "0", "0", "0", "0", "—", "20.1", "20.1", "—"},
}

// withTimeTable is body followed by a recorded time table of rows for its
// lab a-lab, with the fingerprint the recorder would write.
func withTimeTable(t *testing.T, body string, rows [][]string) string {
	t.Helper()
	c, err := Load(fstest.MapFS{"a.md": {Data: []byte(head("a", 1) + body)}})
	if err != nil {
		t.Fatalf("the lesson without its table does not load: %v", err)
	}
	lab, _, _ := c.Lab("a-lab")
	cols := TimeColumns()
	src := "recorded in a test"
	var b strings.Builder
	b.WriteString("```table id=a-time preset=a-lab\ncaption: c\ncolumns: [" + strings.Join(cols, ", ") + "]\nrows:\n")
	for _, r := range rows {
		b.WriteString("  - [\"" + strings.Join(r, "\", \"") + "\"]\n")
	}
	b.WriteString("source: " + src + "\nfingerprint: " + Fingerprint(lab, cols, rows, src) + "\n```\n")
	return head("a", 1) + body + b.String()
}

// A predict reads a stretch of a run over time: ok a second over the
// seconds asked for, from the time table, and the options' values are
// parsed into bands.
func TestReadStretch(t *testing.T) {
	c, err := Load(fstest.MapFS{"a.md": {Data: []byte(withTimeTable(t, overBody, overRows))}})
	if err != nil {
		t.Fatal(err)
	}
	q, l, _ := c.Question("a-p")
	if r := q.Read; r == nil || !r.Over || r.FromS != 2 || r.ToS != 0 || !slices.Equal(r.Columns, []string{"ok", "p99_ms"}) {
		t.Fatalf("read = %+v, want ok and p99_ms from 2 s to the window's end", q.Read)
	}
	if from, to, empty := q.Read.Range(5); from != 2 || to != 5 || empty {
		t.Errorf("Range(5) = %g, %g, %v; want 2, 5, false", from, to, empty)
	}
	if _, _, empty := q.Read.Range(2); !empty {
		t.Error("Range(2): a window of 2 s has nothing from 2 s on, want empty")
	}
	if a, b := q.Options[0].Value, q.Options[1].Value; a == nil || *a != (Band{20, 30}) || b == nil || *b != (Band{0, 5}) {
		t.Errorf("values = %v, %v; want [20, 30] and [0, 5]", a, b)
	}
	// (24 + 25 + 26) ÷ 3 s: the moment past the window's end is not read.
	v, what, ok := l.Measured(q)
	if !ok || v != 25 || what != "ok from 2 s to 5 s" {
		t.Errorf("Measured = %g, %q, %v; want 25, \"ok from 2 s to 5 s\", true", v, what, ok)
	}
	if err := Check(fstest.MapFS{"a.md": {Data: []byte(withTimeTable(t, overBody, overRows))}}, LoadOptions{}); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// Check holds the recorded run inside the correct option's value and
// outside every other's.
func TestCheckValues(t *testing.T) {
	tests := []struct {
		name string
		edit func(string) string
		want []string
	}{
		{"correct option misses the recorded run", func(s string) string { return strings.Replace(s, "[20, 30]", "[26, 30]", 1) }, []string{
			`a.md:13: predict "a-p": option a is correct, but its value [26, 30] does not hold the recorded ok from 2 s to 5 s, 25: want the recorded run inside the correct option's value (change the values or the question)`,
		}},
		{"a wrong option holds it too", func(s string) string { return strings.Replace(s, "[0, 5]", "[0, 25]", 1) }, []string{
			`a.md:17: predict "a-p": option b is wrong, but its value [0, 25] holds the recorded ok from 2 s to 5 s, 25: the recorded run cannot tell it from the correct option (change the values or the question)`,
		}},
		{"a line is a band of one value", func(s string) string { return strings.Replace(s, "[20, 30]", "25", 1) }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(fstest.MapFS{"a.md": {Data: []byte(withTimeTable(t, tc.edit(overBody), overRows))}}, LoadOptions{})
			var got []string
			var es Errors
			if errors.As(err, &es) {
				for _, e := range es {
					got = append(got, e.Error())
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Check:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A bad read: or value: is an error naming its line and what is allowed.
func TestBrokenReadings(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"a time range of a preset not over time", strings.Replace(overBody, "over_time: true\n", "", 1), []string{
			`a.md:21: predict "a-p": read.from_s: the preset "a-lab" is not a run over time (over_time: true): a time range reads the per-second rows of one; leave from_s and to_s out, or read a preset that has them`,
		}},
		{"from_s inside a second", strings.Replace(overBody, "from_s: 2", "from_s: 2.5", 1), []string{
			`a.md:21: predict "a-p": read.from_s 2.5 is not allowed: want a whole second from 0 to 4, inside the preset's 5 s windows (the time table's rows are seconds)`,
		}},
		{"to_s past the window", strings.Replace(overBody, "from_s: 2", "from_s: 2, to_s: 6", 1), []string{
			`a.md:21: predict "a-p": read.to_s 6 is not allowed: want a whole second after from_s (2) and at most the window's 5 s, or leave it out for the window's end`,
		}},
		{"to_s before from_s", strings.Replace(overBody, "from_s: 2", "from_s: 2, to_s: 2", 1), []string{
			`a.md:21: predict "a-p": read.to_s 2 is not allowed: want a whole second after from_s (2) and at most the window's 5 s, or leave it out for the window's end`,
		}},
		{"the whole window's column over a stretch", strings.Replace(overBody, "[ok, p99_ms]", "[ok_per_sec]", 1), []string{
			`a.md:21: predict "a-p": read.columns: ok_per_sec is the whole window's: over from_s to to_s, name ok, which is read a second (want one of ok, refused, gaveup, client_busy, in_flight, queued, in_service, limit, p50_ms, p99_ms)`,
		}},
		{"a column a stretch does not read", strings.Replace(overBody, "[ok, p99_ms]", "[ok, dropped]", 1), []string{
			`a.md:21: predict "a-p": read.columns: "dropped" is not read over a time range: want one of ok, refused, gaveup, client_busy, in_flight, queued, in_service, limit, p50_ms, p99_ms (counts are read a second, what was inside as a mean, p50_ms and p99_ms as the lowest and highest second's)`,
		}},
		{"a value on some options only", strings.Replace(overBody, "    value: [0, 5]\n", "", 1), []string{
			`a.md:12: predict "a-p": 1 of its 2 options give a value: want a value on every option (each is drawn beside the measurement) or on none`,
		}},
		{"values without a read", strings.Replace(overBody, "read: {columns: [ok, p99_ms], from_s: 2}\n", "", 1), []string{
			`a.md:12: predict "a-p": its options give values but it has no read: name the quantity they are values of as the first of read.columns`,
		}},
		{"a band from high to low", strings.Replace(overBody, "[20, 30]", "[30, 20]", 1), []string{
			`a.md:15: predict "a-p": option a: value [30, 20] runs from high to low: want a number (value: 30) or a band from low to high (value: [27, 33]) of the predict's quantity, in its units`,
		}},
		{"a value that is not a number", strings.Replace(overBody, "[20, 30]", "[20, lots]", 1), []string{
			`a.md:15: predict "a-p": option a: value "lots" is not a number: want a number (value: 30) or a band from low to high (value: [27, 33]) of the predict's quantity, in its units`,
		}},
		{"a value below 0", strings.Replace(overBody, "[0, 5]", "[-1, 5]", 1), []string{
			`a.md:18: predict "a-p": option b: value -1 is below 0 (measured quantities are not): want a number (value: 30) or a band from low to high (value: [27, 33]) of the predict's quantity, in its units`,
		}},
		{"values read over two windows", strings.Replace(overBody, "rates: [30]", "rates: [30, 40]", 1), []string{
			`a.md:21: predict "a-p": its options give values, but read names 2 windows: want one (read.rows: [one of 30, 40]), so each value is of one number`,
		}},
		{"a value on a check's option", strings.Replace(strings.Replace(overBody, "```predict", "```check", 1), "settled_by: a-lab\nread: {columns: [ok, p99_ms], from_s: 2}\n", "", 1), []string{
			`a.md:15: check "a-p": option a: value is for a predict's options (the value of the quantity its read: names): remove it`,
			`a.md:18: check "a-p": option b: value is for a predict's options (the value of the quantity its read: names): remove it`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(fstest.MapFS{"a.md": {Data: []byte(head("a", 1) + tc.body)}})
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("Load = %v, want Errors", err)
			}
			var got []string
			for _, e := range es {
				got = append(got, e.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Load:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// Every predict of the course that reads a stretch of a run over time
// reads what its recorded run's marks say: capacity-moves' AIMD predict
// asks for ok a second from 12 s on, and reads 30.5, not the whole
// window's ok_per_sec.
func TestCourseStretchReadings(t *testing.T) {
	c, err := Load(Content())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"moves-predict-aimd":     30.5,
		"moves-predict-gradient": 27.7,
		"moves-predict":          32.4,
		"cap-predict-release":    7.5,
		"cap-predict-quota":      22.1,
	}
	for id, w := range want {
		q, l, ok := c.Question(id)
		if !ok {
			t.Errorf("no predict %s", id)
			continue
		}
		if q.Read == nil || !q.Read.Over || q.Read.Columns[0] != "ok" {
			t.Errorf("%s reads %+v, want ok over a stretch of seconds", id, q.Read)
			continue
		}
		v, _, ok := l.Measured(q)
		if !ok || math.Abs(v-w) > 0.05 {
			t.Errorf("%s measured %g (%v), want %g", id, v, ok, w)
		}
	}
}

// A share names two window-table columns.
func TestBrokenShare(t *testing.T) {
	body := strings.Replace(goodBody("a"), "settled_by: a-lab\n", "settled_by: a-lab\nread: {columns: [ok/nope, ok/sent]}\n", 1)
	_, err := Load(fstest.MapFS{"a.md": {Data: []byte(head("a", 1) + body)}})
	want := `a.md:19: predict "a-p": read.columns: "ok/nope" is not a share of two columns: want A/B with A and B of clients, offered, sent, ok, refused, gaveup, error, ok_per_sec, p50_ms, p99_ms, done, lost, queued, backlogged, mean_ms, p95_ms, n, late, send_lag_p99_ms, lab_service_ms, lab_cpu_ms, attempts, attempts_per_sec, amplification, breaker_open, critical_arrivals, critical_ok_share, default_ok_share, sheddable_ok_share, lab_wait_ms, lab_service_scv, sub_requests, sub_p50_ms, sub_p99_ms, over_sub_p99, hedges, such as ok/sent`
	if err == nil || err.Error() != want {
		t.Errorf("Load = %v\nwant %s", err, want)
	}
}
