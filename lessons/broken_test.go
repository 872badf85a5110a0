package lessons

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// head is valid front matter for a lesson with the given slug and number;
// its body starts on line 10.
func head(slug string, number int) string {
	return "---\nslug: " + slug + "\npart: P\nchapter: C\nnumber: " + strconv.Itoa(number) +
		"\ntitle: T\nminutes: 5\nas_of: 2026-11-30\n---\n"
}

// good is a valid body: a predict settled by a lab (fences on lines 10 and
// 20).
const good = "```predict id=%s-p\n" + // 10
	"prompt: Q?\n" + // 11
	"options:\n" + // 12
	"  - text: A\n" + // 13
	"    correct: true\n" + // 14
	"    explain: Yes.\n" + // 15
	"  - text: B\n" + // 16
	"    explain: No.\n" + // 17
	"settled_by: %s-lab\n" + // 18
	"```\n" + // 19
	"```lab id=%s-lab\n" + // 20
	"workers: 1\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [10]\nseconds: 1\n" + // 21-27
	"```\n" // 28

func goodBody(slug string) string {
	return strings.ReplaceAll(good, "%s", slug)
}

// fixtureHead is head for a lesson in the fixtures part, where tables may
// be marked fixture: true.
func fixtureHead(slug string, number int) string {
	return strings.Replace(head(slug, number), "part: P", "part: "+FixturePart, 1)
}

// goodLab is the lab block of goodBody as parsed.
var goodLab = Lab{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1, Rates: []float64{10}, Seconds: 1}

// recordedTable is a table block for goodBody's lab, as the recorder would
// write it (fence on line 29 after head and goodBody), with the fingerprint
// computed for preset and the given row; edit changes the text afterwards.
func recordedTable(preset Lab, row []string, edit func(string) string) string {
	cols := []string{"offered", "ok"}
	src := "recorded in a test"
	fpr := Fingerprint(&preset, cols, [][]string{row}, src)
	tb := "```table id=t preset=a-lab\ncaption: c\ncolumns: [offered, ok]\nrows:\n  - [\"" + strings.Join(row, "\", \"") + "\"]\n" +
		"source: " + src + "\nfingerprint: " + fpr + "\n```\n"
	return edit(tb)
}

func same(s string) string { return s }

func TestBrokenLessons(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		// A file that does not open with --- has no front matter.
		{"no front matter", map[string]string{"a.md": "slug: a\n\nHello.\n"}, []string{
			"a.md:1: a lesson starts with front matter: put --- on line 1, then slug, part, chapter, number, title, minutes, builds_on and as_of, then ---",
		}},
		// Front matter that is opened but never closed swallows the file.
		{"front matter not closed", map[string]string{"a.md": "---\nslug: a\n\nHello.\n"}, []string{
			"a.md:1: the front matter opened on line 1 is never closed: add a line --- after it",
		}},
		// Every missing required field is reported, not just the first.
		{"missing fields", map[string]string{"a.md": "---\nslug: a\npart: P\nchapter: C\nnumber: 1\n---\nHi.\n"}, []string{
			"a.md:1: front matter: title is missing: want the lesson title",
			"a.md:1: front matter: minutes is missing: want the reading and doing time in minutes",
			"a.md:1: front matter: as_of is missing: want the date the content was last checked, YYYY-MM-DD",
		}},
		// Slugs are URL names: no capitals or underscores.
		{"bad slug", map[string]string{"a.md": strings.Replace(head("a", 1), "slug: a", "slug: Little_Law", 1)}, []string{
			`a.md:2: front matter: slug "Little_Law" is not allowed: want lowercase letters, digits and single hyphens, at most 64 characters`,
		}},
		// A number written as a word is a type error naming the field.
		{"number not a number", map[string]string{"a.md": strings.Replace(head("a", 1), "number: 1", "number: two", 1)}, []string{
			`a.md:5: front matter: number: want a whole number, got "two"`,
		}},
		// as_of must be a real calendar date.
		{"bad as_of", map[string]string{"a.md": strings.Replace(head("a", 1), "2026-11-30", "2026-02-30", 1)}, []string{
			`a.md:8: front matter: as_of "2026-02-30" is not a date: want YYYY-MM-DD, such as 2026-11-30`,
		}},
		// Unknown front matter fields are typos until proven otherwise.
		{"unknown front matter field", map[string]string{"a.md": strings.Replace(head("a", 1), "title: T", "title: T\ntags: [x]", 1)}, []string{
			`a.md:7: front matter: unknown field "tags": allowed fields are slug, part, chapter, number, title, minutes, builds_on, as_of`,
		}},
		// Two files may not share a slug; the second names the first.
		{"duplicate slug", map[string]string{"a.md": head("x", 1), "b.md": head("x", 2)}, []string{
			`b.md:2: front matter: slug "x" is already used by a.md:2: want a slug unique in the course`,
		}},
		// Two lessons may not share a place in a part, even in two chapters.
		{"duplicate number", map[string]string{"a.md": head("a", 1), "b.md": strings.Replace(head("b", 1), "chapter: C", "chapter: D", 1)}, []string{
			`b.md:5: front matter: number 1 is already used in part "P" by a.md:5: want each lesson's number unique in its part`,
		}},
		// A chapter is one run of numbers: the index lists it once.
		{"chapter split", map[string]string{"a.md": head("a", 1), "b.md": strings.Replace(head("b", 2), "chapter: C", "chapter: D", 1), "c.md": head("c", 3)}, []string{
			`c.md:4: front matter: chapter "C" comes back here after b.md (number 2) of chapter "D": want a chapter's lessons numbered one after another (it starts at a.md, number 1)`,
		}},
		// builds_on must name a lesson that exists.
		{"builds_on unknown", map[string]string{"a.md": strings.Replace(head("a", 1), "title: T", "title: T\nbuilds_on: [nope]", 1)}, []string{
			`a.md:7: front matter: builds_on names "nope", but no lesson has that slug`,
		}},
		// A lesson cannot build on itself.
		{"builds_on self", map[string]string{"a.md": strings.Replace(head("a", 1), "title: T", "title: T\nbuilds_on: [a]", 1)}, []string{
			`a.md:7: front matter: builds_on names this lesson itself ("a"): list earlier lessons only`,
		}},
		// builds_on must point backwards in reading order.
		{"builds_on later lesson", map[string]string{
			"a.md": strings.Replace(head("a", 1), "title: T", "title: T\nbuilds_on: [b]", 1),
			"b.md": head("b", 2),
		}, []string{
			`a.md:7: front matter: builds_on names "b", which comes later in the course (P, chapter "C", number 2): list earlier lessons only`,
		}},
		// A question needs exactly one correct option.
		{"two correct options", map[string]string{"a.md": head("a", 1) + strings.Replace(goodBody("a"), "    explain: No.", "    correct: true\n    explain: No.", 1)}, []string{
			`a.md:12: predict "a-p": has 2 correct options: want exactly one option with correct: true`,
		}},
		// Every option must say why it is right or wrong.
		{"option not explained", map[string]string{"a.md": head("a", 1) + strings.Replace(goodBody("a"), "    explain: No.\n", "", 1)}, []string{
			`a.md:16: predict "a-p": option b has no explanation: add explain: saying why it is right or wrong`,
		}},
		// One option is not a question.
		{"one option", map[string]string{"a.md": head("a", 1) + strings.Replace(goodBody("a"), "  - text: B\n    explain: No.\n", "", 1)}, []string{
			`a.md:12: predict "a-p": has 1 options: want 2 to 8`,
		}},
		// A predict must say which measurement settles it.
		{"predict without settled_by", map[string]string{"a.md": head("a", 1) + strings.Replace(goodBody("a"), "settled_by: a-lab\n", "", 1)}, []string{
			`a.md:10: predict "a-p": settled_by is missing: want the id of the lab or table block later in this lesson whose measurement settles it`,
		}},
		// settled_by must name a block that exists in the same lesson.
		{"settled_by unknown", map[string]string{"a.md": head("a", 1) + strings.Replace(goodBody("a"), "settled_by: a-lab", "settled_by: a-nope", 1)}, []string{
			`a.md:18: predict "a-p": settled_by: no block "a-nope" in this lesson: want the id of a lab or table block in this lesson`,
		}},
		// A measurement before the prediction cannot settle it.
		{"settled_by before", map[string]string{"a.md": head("a", 1) + "```lab id=a-lab0\nworkers: 1\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [10]\nseconds: 1\n```\n" +
			strings.Replace(goodBody("a"), "settled_by: a-lab", "settled_by: a-lab0", 1)}, []string{
			`a.md:27: predict "a-p": settled_by: "a-lab0" comes before this block (line 10): a prediction is settled by a measurement after it`,
		}},
		// Fences with an id but an unknown kind are mistakes, not code.
		{"unknown block kind", map[string]string{"a.md": head("a", 1) + "```quiz id=q1\nprompt: x\n```\n"}, []string{
			`a.md:10: unknown block kind "quiz": want predict, check, model, lab, table or record (callouts are quotes: > [!REMEMBER], > [!LIMITS], > [!ASOF YYYY-MM-DD])`,
		}},
		// A record block needs its prompt and all five fields, each labelled.
		{"record missing fields", map[string]string{"a.md": head("a", 1) + "```record id=r\n" + // 10
			"setting: {label: Setting}\n" + // 11
			"criterion: {hint: no label}\n" + // 12
			"measurement: {label: Measurement}\n" + // 13
			"number: {label: Number}\n" + // 14
			"```\n"}, []string{
			`a.md:10: record "r": prompt is missing: want the instruction shown above the form`,
			`a.md:10: record "r": reverse is missing: a record block gives all five fields (setting, criterion, measurement, number, reverse), each with label: and optionally hint:`,
			`a.md:12: record "r": criterion has no label: want label: the text shown next to the field`,
		}},
		// A record block's fields are the five names; anything else is a typo.
		{"record unknown field", map[string]string{"a.md": head("a", 1) + "```record id=r\nprompt: Write it.\nsettings: {label: S}\n```\n"}, []string{
			`a.md:12: record "r": unknown field "settings": allowed fields are prompt, setting, criterion, measurement, number, reverse`,
		}},
		// Every block needs an id.
		{"block without id", map[string]string{"a.md": head("a", 1) + "```check\nprompt: x\n```\n"}, []string{
			"a.md:10: check block has no id: write ```check id=some-name",
		}},
		// Ids are unique across the course, not just the file.
		{"duplicate id across files", map[string]string{"a.md": head("a", 1) + goodBody("a"), "b.md": head("b", 2) + goodBody("a")}, []string{
			`b.md:10: block id "a-p" is already used at a.md:10: want ids unique in the course`,
			`b.md:20: block id "a-lab" is already used at a.md:20: want ids unique in the course`,
		}},
		// A check has no settled_by; unknown fields are errors.
		{"unknown YAML field", map[string]string{"a.md": head("a", 1) + strings.Replace(goodBody("a"), "```predict", "```check", 1)}, []string{
			`a.md:18: check "a-p": unknown field "settled_by": allowed fields are prompt, options`,
		}},
		// An unknown field inside an option names the option.
		{"unknown option field", map[string]string{"a.md": head("a", 1) + strings.Replace(goodBody("a"), "explain: Yes.", "explain: Yes.\n    hint: no", 1)}, []string{
			`a.md:16: predict "a-p": unknown field "hint" in options[0]: allowed fields are text, correct, explain, value`,
		}},
		// A misspelt field inside the goal names the goal.
		{"unknown goal field", map[string]string{"a.md": head("a", 1) + "```model id=m\nwidget: littles-law\nsolve: inflight\ngoal: {txt: x}\n```\n"}, []string{
			`a.md:13: model "m": unknown field "txt" in goal: allowed fields are text, want, found`,
		}},
		// A wrongly typed value deep in a block is named by its path.
		{"nested type error", map[string]string{"a.md": head("a", 1) + strings.Replace(goodBody("a"), "correct: true", "correct: maybe", 1)}, []string{
			`a.md:14: predict "a-p": options[0].correct: want true or false, got "maybe"`,
		}},
		// Model widgets come from package model.
		{"unknown widget", map[string]string{"a.md": head("a", 1) + "```model id=m\nwidget: queueing\n```\n"}, []string{
			`a.md:11: model "m": unknown widget "queueing": want one of admission-limit, aimd, fanout-tail, late-scaling, littles-law, queue-curve, quota, retry-amplification, two-ceilings, usl, variability-wait`,
		}},
		// Model values are checked against the widget's ranges, goals against its parameters.
		{"model values and goal", map[string]string{"a.md": head("a", 1) + "```model id=m\nwidget: littles-law\nsolve: inflight\n" +
			"values: {arrivals: 9000, latency: 5}\ngoal:\n  text: Do it.\n  want:\n    - {param: cpus, value: 1, tol: 1}\n    - {param: arrivals, value: 40, tol: 0}\n  found: Done.\n" +
			"assumes: [a]\nignores: [b]\n```\n"}, []string{
			`a.md:13: model "m": values.arrivals: 9000 is out of range: want 0 to 5000 per second`,
			`a.md:13: model "m": values.latency: not a parameter of littles-law: want one of arrivals, latency_ms, inflight`,
			`a.md:17: model "m": goal.want[0]: param "cpus" is not a quantity of littles-law: want one of arrivals, latency_ms, inflight`,
			`a.md:18: model "m": goal.want[1]: tol 0 is not allowed: want a tolerance above 0`,
		}},
		// quota works one quantity out as littles-law does; aimd does not,
		// and its goal may name an output (delivered_pct), not a made-up one.
		{"quota and aimd solve and goal", map[string]string{"a.md": head("a", 1) + "```model id=m\nwidget: quota\nsolve: workers\n" +
			"goal:\n  text: Do it.\n  want:\n    - {param: with_quota_after, value: 25, tol: 1}\n  found: Done.\nassumes: [a]\nignores: [b]\n```\n" +
			"```model id=n\nwidget: aimd\nsolve: floor\ngoal:\n  text: Do it.\n  want:\n    - {param: delivered_pct, value: 95, tol: 5}\n" +
			"    - {param: goodput, value: 1, tol: 1}\n  found: Done.\nassumes: [a]\nignores: [b]\n```\n"}, []string{
			`a.md:12: model "m": solve "workers" is not a quantity quota works out: want one of quota, arrivals, latency_ms`,
			`a.md:23: model "n": solve applies to the widgets that work one quantity out (littles-law, quota) only: remove it`,
			`a.md:28: model "n": goal.want[1]: param "goodput" is not a quantity of aimd: want one of capacity_before, capacity_after, step_s, increase, backoff, interval_ms, floor, duration_s, mean_limit, delivered_pct, min_after, max_after, settle_s`,
		}},
		// The retry and late-scaling widgets: values in their ranges
		// (retries whole), goals on their own quantities.
		{"retry and late-scaling values and goal", map[string]string{"a.md": head("a", 1) + "```model id=r\nwidget: retry-amplification\n" +
			"values: {p: 1.5, retries: 2.5}\ngoal:\n  text: Do it.\n  want:\n    - {param: goodput, value: 1, tol: 1}\n  found: Done.\nassumes: [a]\nignores: [b]\n```\n" +
			"```model id=s\nwidget: late-scaling\nvalues: {capacity_after: 0}\ngoal:\n  text: Do it.\n  want:\n    - {param: worst_wait_ms, value: 10000, tol: 100}\n" +
			"    - {param: drain, value: 40, tol: 1}\n  found: Done.\nassumes: [a]\nignores: [b]\n```\n"}, []string{
			`a.md:12: model "r": values.p: 1.5 is out of range: want 0 to 1 of attempts`,
			`a.md:12: model "r": values.retries: 2.5 is not a whole number: want a whole number from 0 to 10 retries`,
			`a.md:16: model "r": goal.want[0]: param "goodput" is not a quantity of retry-amplification: want one of p, retries, budget, utilisation, attempts, attempts_no_budget, load_pct`,
			`a.md:23: model "s": values.capacity_after: 0 is out of range: want 1 to 100000 per second`,
			`a.md:28: model "s": goal.want[1]: param "drain" is not a quantity of late-scaling: want one of demand, capacity_before, capacity_after, lag_s, timeout_ms, backlog, drain_s, landing_wait_ms, worst_wait_ms, late_s`,
		}},
		// Rates and seconds have the course's bounds. (The knobs' limits
		// are the lab's: package recorder's CheckLab reports workers and
		// cpus here, as the server loads the course.)
		{"lab out of range", map[string]string{"a.md": head("a", 1) + "```lab id=l\nworkers: 0\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 99\n" +
			"rates: [10, 2500]\nseconds: 45\n```\n"}, []string{
			`a.md:16: lab "l": rates[1] 2500 is not allowed: want above 0 and at most 2000 requests a second`,
			`a.md:17: lab "l": seconds 45 is not allowed: want above 0 and at most 30`,
		}},
		// Too many rates make a sweep too long.
		{"too many rates", map[string]string{"a.md": head("a", 1) + "```lab id=l\nworkers: 1\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\n" +
			"rates: [1, 2, 3, 4, 5, 6, 7, 8, 9]\nseconds: 1\n```\n"}, []string{
			`a.md:16: lab "l": rates has 9 entries: want 1 to 8`,
		}},
		// A lab preset spells out every knob.
		{"lab missing knob", map[string]string{"a.md": head("a", 1) + "```lab id=l\nworkers: 1\nspin_ms: 2\nwait_ms: 18\ncpus: 1\nrates: [10]\nseconds: 1\n```\n"}, []string{
			`a.md:10: lab "l": limit is missing: a lab preset gives workers, spin_ms, wait_ms, limit, cpus, seconds, and rates (open loop) or closed (closed loop)`,
		}},
		// A table's preset must be a lab block in the same lesson.
		{"table preset not a lab", map[string]string{"a.md": head("a", 1) + goodBody("a") +
			"```table id=t preset=a-p\ncaption: c\ncolumns: [x]\nrows: [[\"1\"]]\nsource: s\n```\n"}, []string{
			`a.md:29: table "t": preset: "a-p" is a predict block (line 10): want a lab block`,
		}},
		// Every row has one cell per column (checked in a fixtures lesson,
		// so no fingerprint is needed).
		{"table row too short", map[string]string{"a.md": fixtureHead("a", 1) + goodBody("a") +
			"```table id=t preset=a-lab\ncaption: c\ncolumns: [x, y]\nrows:\n  - [\"1\", \"2\"]\n  - [\"3\"]\nsource: s\nfixture: true\n```\n"}, []string{
			`a.md:34: table "t": rows[1] has 1 cells: want 2, one per column`,
		}},
		// A table whose preset is not in the lesson was not recorded from it.
		{"table preset missing", map[string]string{"a.md": head("a", 1) + goodBody("a") +
			strings.Replace(recordedTable(goodLab, []string{"10", "10"}, same), "preset=a-lab", "preset=a-gone", 1)}, []string{
			`a.md:29: table "t": preset: no block "a-gone" in this lesson: want the id of a lab block in this lesson`,
		}},
		// A course table without a fingerprint was typed, not recorded.
		{"table without fingerprint", map[string]string{"a.md": head("a", 1) + goodBody("a") +
			"```table id=t preset=a-lab\ncaption: c\ncolumns: [x]\nrows: [[\"1\"]]\nsource: s\n```\n"}, []string{
			"a.md:29: table \"t\": fingerprint is missing: tables hold recorded numbers only; record it with `server lessons record --lab a-lab` instead of typing it",
		}},
		// One number changed by hand after recording breaks the fingerprint.
		{"table number edited", map[string]string{"a.md": head("a", 1) + goodBody("a") +
			recordedTable(goodLab, []string{"10", "10"}, func(s string) string { return strings.Replace(s, `["10", "10"]`, `["10", "9"]`, 1) })}, []string{
			"a.md:29: table \"t\": fingerprint does not match: the rows, columns or source were edited by hand, the preset \"a-lab\" (line 20) changed after recording, or it was a --seconds-scale trial; record it again with `server lessons record --lab a-lab`",
		}},
		// A preset changed after its table was recorded (here: the window
		// was 2 s when the table was recorded, 1 s now) is stale.
		{"preset changed after recording", map[string]string{"a.md": head("a", 1) + goodBody("a") +
			recordedTable(Lab{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1, Rates: []float64{10}, Seconds: 2}, []string{"10", "10"}, same)}, []string{
			"a.md:29: table \"t\": fingerprint does not match: the rows, columns or source were edited by hand, the preset \"a-lab\" (line 20) changed after recording, or it was a --seconds-scale trial; record it again with `server lessons record --lab a-lab`",
		}},
		// A fingerprint is 64 hex digits, nothing else.
		{"malformed fingerprint", map[string]string{"a.md": head("a", 1) + goodBody("a") +
			"```table id=t preset=a-lab\ncaption: c\ncolumns: [x]\nrows: [[\"1\"]]\nsource: s\nfingerprint: abc\n```\n"}, []string{
			"a.md:34: table \"t\": fingerprint \"abc\" is not allowed: want the 64 hex digits `server lessons record` writes",
		}},
		// Made-up data is allowed only in the fixtures part, never in the course.
		{"fixture table in a course lesson", map[string]string{"a.md": head("a", 1) + goodBody("a") +
			"```table id=t preset=a-lab\ncaption: c\ncolumns: [x]\nrows: [[\"1\"]]\nsource: s\nfixture: true\n```\n"}, []string{
			"a.md:34: table \"t\": fixture: true is allowed only in lessons whose part is \"Fixtures\": a course table is recorded with `server lessons record`",
		}},
		// A fixture has no fingerprint to check: it must not claim one.
		{"fixture with fingerprint", map[string]string{"a.md": fixtureHead("a", 1) + goodBody("a") +
			strings.Replace(recordedTable(goodLab, []string{"10", "10"}, same), "source: ", "fixture: true\nsource: ", 1)}, []string{
			"a.md:36: table \"t\": a fixture table has no fingerprint: remove one of fixture and fingerprint",
		}},
		// A closed loop has no offered rate; rates next to closed is a contradiction.
		{"closed preset with rates", map[string]string{"a.md": head("a", 1) + "```lab id=l\nworkers: 1\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\n" +
			"rates: [50]\nseconds: 1\nclosed: 10\n```\n"}, []string{
			`a.md:16: lab "l": rates is not allowed with closed: 10: a closed loop has no offered rate (each client sends its next request when an answer comes back): remove rates, or remove closed for an open-loop sweep`,
		}},
		// An open-loop preset needs its rates.
		{"open preset without rates", map[string]string{"a.md": head("a", 1) + "```lab id=l\nworkers: 1\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\n" +
			"seconds: 1\n```\n"}, []string{
			`a.md:10: lab "l": rates is missing: an open-loop preset gives 1 to 8 offered rates; a closed-loop preset gives closed: N clients instead`,
		}},
		// GitHub's NOTE is not one of our callouts.
		{"unknown callout", map[string]string{"a.md": head("a", 1) + "> [!NOTE]\n> Hi.\n"}, []string{
			`a.md:10: unknown callout kind "NOTE": want > [!REMEMBER], > [!LIMITS] or > [!ASOF YYYY-MM-DD] alone on the first line of the quote`,
		}},
		// ASOF needs its date.
		{"asof without date", map[string]string{"a.md": head("a", 1) + "> [!ASOF]\n> Hi.\n"}, []string{
			`a.md:10: callout ASOF needs a date, got "": want > [!ASOF YYYY-MM-DD], such as > [!ASOF 2026-11-30]`,
		}},
		// A callout with only its marker says nothing.
		{"empty callout", map[string]string{"a.md": head("a", 1) + "> [!REMEMBER]\n"}, []string{
			`a.md:10: callout REMEMBER has no text: write it on the quoted lines after the marker`,
		}},
		// Raw HTML is not allowed, in prose or in a block's Markdown.
		{"raw html", map[string]string{"a.md": head("a", 1) + "Hello <b>there</b>.\n\n" + strings.Replace(goodBody("a"), "explain: Yes.", "explain: <script>x</script>", 1)}, []string{
			`a.md:10: raw HTML is not allowed in lessons: write Markdown instead`,
			`a.md:17: predict "a-p": option a: raw HTML is not allowed in lessons: write Markdown instead`,
		}},
		// The title is the page's h1; the body starts at ##.
		{"level-1 heading", map[string]string{"a.md": head("a", 1) + "# Title again\n"}, []string{
			`a.md:10: a level-1 heading (# ...) is not allowed: the title comes from the front matter, so start sections at ##`,
		}},
		// Callouts are numbered callout-1, ...; a heading may not take that id.
		{"heading clashes with callout id", map[string]string{"a.md": head("a", 1) + "## Callout 1\n\n> [!LIMITS]\n> x\n"}, []string{
			`a.md:10: the heading's id "callout-1" is also the id of the callout on line 12: reword the heading`,
		}},
		// A block id may not equal a heading id on the same page.
		{"block id clashes with heading", map[string]string{"a.md": head("a", 1) + "## A lab\n\n" + goodBody("a")}, []string{
			`a.md:22: lab block: id "a-lab" is also the id of the heading on line 10: rename the block`,
		}},
		// A block inside a list would render as code; say so.
		{"block in a list", map[string]string{"a.md": head("a", 1) + "- item\n\n  ```check id=c\n  prompt: x\n  ```\n"}, []string{
			`a.md:12: a check block must start at the left margin, not inside a list or quote`,
		}},
		// A missing closing fence is named at the opening fence.
		{"unclosed fence", map[string]string{"a.md": head("a", 1) + strings.TrimSuffix(goodBody("a"), "```\n")}, []string{
			"a.md:20: the lab block opened here is never closed: add a line ``` after its YAML",
		}},
		// YAML syntax errors keep their line.
		{"yaml syntax", map[string]string{"a.md": head("a", 1) + "```check id=c\nprompt: x\n  options: [\n```\n"}, []string{
			`a.md:12: check "c": YAML: mapping values are not allowed in this context`,
		}},
		// Several problems in one file are all reported, in line order.
		{"many problems at once", map[string]string{"a.md": strings.Replace(head("a", 1), "minutes: 5", "minutes: 0", 1) +
			"# H\n\n> [!TIP]\n> x\n\n```lab id=l\nworkers: 1\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [0]\nseconds: 1\n```\n"}, []string{
			`a.md:7: front matter: minutes 0 is not allowed: want 1 to 240`,
			`a.md:10: a level-1 heading (# ...) is not allowed: the title comes from the front matter, so start sections at ##`,
			`a.md:12: unknown callout kind "TIP": want > [!REMEMBER], > [!LIMITS] or > [!ASOF YYYY-MM-DD] alone on the first line of the quote`,
			`a.md:21: lab "l": rates[0] 0 is not allowed: want above 0 and at most 2000 requests a second`,
		}},
		// Content must be UTF-8.
		{"not utf-8", map[string]string{"a.md": head("a", 1) + "caf\xe9\n"}, []string{
			`a.md:10: the file is not valid UTF-8: save it as UTF-8`,
		}},
		// A directory with no lessons is an error, not an empty course.
		{"no lessons", map[string]string{"README.md": "# Notes\n"}, []string{
			`.: no lessons found: want at least one *.md file (other than README.md) at the top of the content directory`,
		}},
		// A lab's show: names columns of the recorded tables; a typo is
		// caught at its line, and so is a column named twice.
		{"lab show unknown column", map[string]string{"a.md": head("a", 1) + strings.Replace(goodBody("a"), "seconds: 1\n", "seconds: 1\nshow: [offered, p99, ok, ok]\n", 1)}, []string{
			`a.md:28: lab "a-lab": show: unknown column "p99": want one of offered, sent, ok, refused, gaveup, error, ok_per_sec, p50_ms, p99_ms, done, lost, queued, mean_ms, p95_ms, n, late, send_lag_p99_ms, lab_service_ms, lab_cpu_ms`,
			`a.md:28: lab "a-lab": show names "ok" twice`,
		}},
		// An empty show: is a mistake, not "show nothing".
		{"lab show empty", map[string]string{"a.md": head("a", 1) + strings.Replace(goodBody("a"), "seconds: 1\n", "seconds: 1\nshow: []\n", 1)}, []string{
			`a.md:28: lab "a-lab": show is empty: want the columns the lesson talks about, from offered, sent, ok, refused, gaveup, error, ok_per_sec, p50_ms, p99_ms, done, lost, queued, mean_ms, p95_ms, n, late, send_lag_p99_ms, lab_service_ms, lab_cpu_ms, or no show: for every column`,
		}},
		// A predict's read: names columns and rows of its settling preset:
		// an unknown column and a rate the preset does not run are caught.
		{"predict read", map[string]string{"a.md": head("a", 1) + strings.Replace(goodBody("a"), "settled_by: a-lab\n", "settled_by: a-lab\nread: {rows: [10, 20], columns: [mean_ms, latency]}\n", 1)}, []string{
			`a.md:19: predict "a-p": read.columns: unknown column "latency": want one of clients, offered, sent, ok, refused, gaveup, error, ok_per_sec, p50_ms, p99_ms, done, lost, queued, backlogged, mean_ms, p95_ms, n, late, send_lag_p99_ms, lab_service_ms, lab_cpu_ms, attempts, attempts_per_sec, amplification, breaker_open, critical_arrivals, critical_ok_share, default_ok_share, sheddable_ok_share, lab_wait_ms, lab_service_scv, sub_requests, sub_p50_ms, sub_p99_ms, over_sub_p99, hedges, or a share of two such as ok/sent`,
			`a.md:19: predict "a-p": read.rows: 20 is not an offered rate of the preset "a-lab": want one of 10`,
		}},
		// An option is one line of inline Markdown: a list is not an option.
		{"option text not inline", map[string]string{"a.md": head("a", 1) + strings.Replace(goodBody("a"), "  - text: B\n", "  - text: \"- B\"\n", 1)}, []string{
			"a.md:16: predict \"a-p\": option b: the text is one line of inline Markdown (words, `code`, *emphasis*): no lists, headings or blank lines",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, body := range tt.files {
				fsys[name] = &fstest.MapFile{Data: []byte(body)}
			}
			c, err := Load(fsys)
			if err == nil {
				t.Fatalf("Load succeeded with %d lessons; want errors:\n%s", len(c.Lessons), strings.Join(tt.want, "\n"))
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Load error is %T, want lessons.Errors: %v", err, err)
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("errors:\n got: %s\nwant: %s", strings.ReplaceAll(got, "\n", "\n      "), strings.ReplaceAll(want, "\n", "\n      "))
			}
			if Check(fsys, LoadOptions{}) == nil {
				t.Error("Check returned nil where Load failed")
			}
		})
	}
}
