// Package lessons loads and validates the course: lesson files written in
// Markdown with interactive blocks, parsed once at start-up and served from
// memory.
//
// # Files
//
// [Load] reads every file named *.md at the root of a content directory
// (an [fs.FS]); README.md and names starting with "." or "_" are skipped so
// a directory can carry notes and editor files, and subdirectories are not
// read. The embedded course is [Content]; the server's --content flag
// passes os.DirFS instead. Lessons are ordered by part (compared as text),
// then number; a chapter is the lessons of a part that share its name, and
// they must be numbered one after another, so the index lists each chapter
// once, in the order of its lessons.
//
// A lesson file is UTF-8 Markdown that reads well as plain text. It has
// three kinds of content: front matter, prose, and blocks.
//
// # Front matter
//
// The file starts with a line "---", YAML fields, and a line "---":
//
//	---
//	slug: littles-law              # required: a-z, 0-9 and single hyphens, at most 64 characters, unique in the course
//	part: Capacity                 # required text
//	chapter: Measurement and queues     # required text
//	number: 1                      # required: 1 to 999, unique within the part; a chapter's numbers follow on
//	title: How many requests are inside your service  # required text
//	minutes: 20                    # required: 1 to 240; the course holds it to Lesson.Reading
//	builds_on: [some-earlier-slug] # optional: slugs of lessons that come earlier in the course
//	as_of: 2026-11-30              # required: YYYY-MM-DD, when the content was last checked
//	---
//
// Unknown fields are errors. The title is shown as the page's only level-1
// heading, so the body starts its sections at "##"; "#" in the body is an
// error.
//
// # Prose
//
// Prose is CommonMark with the GitHub extensions (tables, strikethrough,
// autolinks, task lists), rendered with goldmark. Headings get ids made
// from their text. Raw HTML is not allowed: it is an error, and goldmark's
// safe mode would drop it anyway.
//
// # Blocks
//
// An interactive block is a fenced code block at the left margin (not in a
// list or quote) whose info string gives the kind and an id, with YAML
// inside. A fence whose first word is one of the kinds below, or which
// carries an id=, is a block; any other fence is ordinary code.
//
//	```predict id=littles-double
//	prompt: Markdown text of the question
//	options:
//	  - text: plain text of the option
//	    explain: Markdown, why this option is right or wrong
//	  - text: another option
//	    correct: true
//	    explain: ...
//	settled_by: littles-sweep
//	```
//
// Ids use the slug alphabet, are unique across the whole course, may not
// start with "callout-", and may not equal a heading id in the same lesson
// (both become HTML ids). Unknown YAML fields, unknown kinds and unknown
// info-string attributes are errors. A block's YAML starts on the line
// after its fence, and every message names the file line.
//
// predict and check: prompt (Markdown, required); options, 2 to 8, each
// with text (required, distinct: one line of inline Markdown, so `code`
// and *emphasis* render on pages; [Option].Text is the same with the marks
// removed, for messages and CSVs), explain (Markdown, required) and
// correct (true on exactly one option). Options get the ids a, b, c... in
// the file's order. A predict also needs settled_by: the id of the lab or
// table block, later in the same lesson, whose measurement settles it;
// pages link to it, and keep that measurement (the preset's run, its
// recorded tables and other learners' runs of it; see [Lesson.Settling]
// and [Lesson.SettledBy]) folded until the learner has locked in or
// skipped the prediction. A simulated preset and a live one of the lesson
// with the same settings are twins, one sweep simulated and measured: a
// predict settled by either folds both, and their tables. A predict names
// what settles it with read: rows (offered rates of the settling preset;
// left out for a closed loop, or for every row) and columns (names of
// [RecordColumns], or a share of one in another written A/B, such as
// ok/sent, which pages show as a percentage with its two counts); pages
// then put the learner's prediction beside those cells of what was
// measured, in the recorded run and in the learner's own. The first
// column is the quantity the prompt asks for; write the prompt so that it
// asks for what read names, in the same units (a prompt about answers a
// second reads ok_per_sec, not ok; one about a share reads ok/sent).
//
//	settled_by: littles-sweep
//	read: {rows: [20, 40], columns: [ok_per_sec, mean_ms]}
//
// A predict settled by a run over time (over_time: true) may read a
// stretch of each window instead of the whole window: from_s and to_s,
// whole seconds from the window's start (0 ≤ from_s < to_s ≤ seconds;
// to_s left out is the window's end), read the time table's rows whose
// second lies in [from_s, to_s). Its columns are then those a stretch
// reads (result.StretchColumns): ok, refused, gaveup and client_busy a
// second (their total over the stretch's seconds), in_flight, queued,
// in_service and limit as the mean of its seconds, and p50_ms and p99_ms
// as the lowest and highest second's (a percentile of seconds is not the
// percentile of their answers). A window-table column (ok_per_sec) or an
// unknown name is an error naming what is allowed, as is a stretch of a
// preset that is not over time or one outside its windows.
//
//	settled_by: moves-aimd
//	read: {rows: [50], columns: [ok, gaveup], from_s: 12}   # ok a second from 12 s to the window's end
//
// A predict's options may each carry value: the number (value: 30) or the
// band from low to high (value: [27, 33]) of the predict's quantity (the
// first of read.columns, in that reading's units: a second for a
// stretch's counts) that the option stands for. Either every option gives
// one or none does; a predict whose options give values must have a read
// naming one window (one of read.rows, or a preset with one window), and
// no value is below 0. Pages draw the learner's option as a band (or a
// line) on the chart of the reading, and [Check] holds the recorded run
// to the options: the quantity it measured must lie in the correct
// option's value and in no other's, or the recorded run cannot tell the
// options apart (the error names the option's line). A check's options
// carry no value.
//
// # Option order
//
// Pages show a question's options shuffled, and each viewer sees one
// order that does not change: [Question.Order] takes a key (the web
// pages pass the learner's id, "" before a learner has one; a class
// session passes its own key, so the whole class sees one order) and
// returns a permutation fixed by the key and the question's id alone.
// Answers, progress and CSVs always name options by id, never by their
// place on the page, so the order can change without touching anything
// recorded. Write options that read well in any order.
//
// model: widget (a kind from package model: littles-law, admission-limit,
// two-ceilings, queue-curve, quota, aimd, retry-amplification,
// late-scaling, variability-wait, fanout-tail, usl); solve (required for the kinds
// that work one quantity out, littles-law and quota, and allowed for no
// other: the quantity the widget works out, one of the kind's Solves,
// which must then be left out of values); values (initial parameter
// values, checked by model.Validate; missing ones take the widget's
// defaults); goal with text (the instruction), want (a list of {param,
// value, tol}: every param a quantity of the widget, model.QuantityNames,
// a parameter's value in its range, tol above 0; all must hold at once:
// {param: delivered_pct, value: 95, tol: 5} asks an aimd widget to let in
// 90 to 100% of the new capacity; find: true marks a value the text asks the
// learner to find, such as the slowest release a quota survives, whose
// hints then say only that it is not found yet, never the value or which
// way it lies, and whose slider is not laid out around it) and found
// (what the learner has found, shown on reaching the goal); assumes and
// ignores (non-empty lists of sentences).
//
//	```model id=littles-model
//	widget: littles-law
//	solve: inflight
//	values: {arrivals: 48, latency_ms: 230}
//	goal:
//	  text: Hold arrivals at 48/s and bring the time in system to 100 ms.
//	  want:
//	    - {param: arrivals, value: 48, tol: 0.5}
//	    - {param: latency_ms, value: 100, tol: 2}
//	  found: 4.8 requests are inside on average.
//	assumes: [the service is stable over the window]
//	ignores: [how the time splits into waiting and service]
//	```
//
// lab: a sweep preset. Required: workers, spin_ms, wait_ms, limit, cpus (the
// lab's knobs, checked against the lab's limits by LoadOptions.CheckLab:
// the server and the recorder load the course with recorder.CheckLab,
// which uses labsvc.Config.Validate; Load alone does not) and seconds (window
// length, above 0 and at most 30). An open-loop preset gives rates (1 to 8
// offered rates, each above 0 and at most 2000 a second, one window each);
// a closed-loop preset gives closed (1 to 1024 clients, one window), or
// clients (1 to 8 client counts, one window each, such as [1, 2, 4, 8]:
// its table begins with a clients column, and a mark names its rows by
// their client counts, as an open loop's by their rates), and no rates,
// since a closed loop has no offered rate: rates next to closed or
// clients is an error, and so is closed next to clients. Optional: seed (default 0, a seed like any other; it shapes the
// open loop's arrivals), closed (0 = open loop), timeout_ms (caller
// timeout, 0 to 60000; 0 = the runner's default, 2 s), stall_every and
// stall_ms (the lab's periodic stall, checked as the knobs are; default
// 0, off) and rng (the arrivals' random source: pcg, the default, or python
// for CPython's random.seed and expovariate; see package loadrun; checked
// by CheckLab too), the lab's backlog (BACKLOG, 0 to 65535; 0 = the system's
// maximum) and accept (ACCEPT: door, the default, or workers, which needs
// limit 0), policy (POLICY, the door's admission policy as package admit
// spells it: queue, the default, whose bound is limit; or inflight, aimd,
// gradient or sojourn with parameters after commas, such as
// "inflight,quota=5", which need limit 0), max_inflight (an open-loop
// client of that many workers, as the capacity demo's client has: 0, the
// default, for none, to 256; arrivals finding them all busy count in
// client_busy), at (at most 8 knob changes made at their times into every
// window through the lab's control API, such as [30s:WAIT_MS=2000]: a bad
// release; package recorder checks each falls inside the window and names
// a knob the lab can change with a value it allows; with simulated, the
// simulator makes them at their times, and BACKLOG is refused),
// over_time (true: a run over time, every window sampled each second; the
// recorder writes a time table beside the window table, see below),
// retry (an open-loop retrying client as package retry writes one:
// parameters name=value joined by commas, such as
// "retries=3,backoff=jitter,budget=0.1"; a bad one is an error at its line
// naming the parameter and what it allows), critical and sheddable (the
// shares of arrivals, 0 to 1 and together at most 1, sent with
// X-Criticality critical and sheddable; open loop), dist (the lab's DIST,
// how each request's service time varies about SPIN_MS + WAIT_MS, as
// package dist spells it: exponential, lognormal,scv=4,
// bimodal,p=0.1,x=10, with seed=N if wanted; checked by CheckLab; a lab
// that gives dist, constant too, has two more columns, [VariedColumns]:
// the lab's mean queue wait and its service time's SCV), lock_ms and
// coherency_us (the lab's contention knobs LOCK_MS and COHERENCY_US),
// fanout (1 to 100: each arrival a request of that many sub-requests
// sent at once, done with its last; its table adds [FanoutColumns]) and
// hedge (a hedging client as package hedge writes one, such as
// "percentile=95" or "delay_ms=20"; its table adds [HedgeColumns]), both
// for an open loop without retry,
// and show (the columns, names of [RecordColumns], that the
// lesson's text talks about: pages show them first, in this order, in the preset's recorded table
// and in the table of a run of it, with the other columns one click away;
// an unknown name is an error at its line). show is presentation, not a
// setting: the fingerprint does not cover it, so adding it to a recorded
// lesson keeps its tables valid.
//
// simulated: true makes a preset whose table is produced by the simulator
// (package sim) from the preset's knobs rather than measured on a lab, as
// when a lesson reproduces a published simulation: the recorder simulates
// it (see Recording), pages offer Simulate and no Run for it, and its
// table, which is the same on any machine, stands apart from the rule that
// a lesson's tables share one recording session.
//
//	```lab id=littles-sweep
//	workers: 1
//	spin_ms: 2
//	wait_ms: 18
//	limit: 0
//	cpus: 1
//	rates: [10, 20, 30, 40]
//	seconds: 5
//	seed: 1
//	show: [offered, ok_per_sec, mean_ms, p50_ms, queued]
//	```
//
// table: a recorded result table. The fence names the lab block it was
// recorded from with preset=, which must be a lab block in the same lesson.
// Required: caption (text), columns (non-empty headings), rows (at least
// one, each with one cell per column; cells are text), source (how it was
// recorded: command, seed, machine, date) and fingerprint. Tables hold
// measurements and are written by `server lessons record` (below), never
// typed:
//
//	```table id=littles-sweep-result preset=littles-sweep
//	caption: "Recorded: 1 worker, 2 ms spin + 18 ms wait, ..."
//	columns: [offered, sent, ok, refused, gaveup, error, ok_per_sec, p50_ms, p99_ms, done, lost, queued, mean_ms, p95_ms, n, late, send_lag_p99_ms, lab_service_ms, lab_cpu_ms]
//	rows:
//	  - ["10", "...", ...]     one row per window, one cell per column
//	source: "server lessons record --lab littles-sweep; seed 1; linux/amd64, 2 cores, go1.26.8; build 085f71a2c3d4; session 20261130T114000Z; 2026-11-30 11:42 UTC; load average at start 0.12 0.30 0.41; other programs used 0.02 cores"
//	fingerprint: 64 hex digits
//	```
//
// fingerprint is the SHA-256 (see [Fingerprint]) of "capacitylab table v1",
// the preset's settings in a fixed form (workers, spin_ms, wait_ms, limit,
// cpus, rates, seconds, seed, closed, timeout_ms, then stall_every and
// stall_ms when either is set, rng when given, and backlog, accept,
// policy, simulated, max_inflight, at, over_time, retry, critical,
// sheddable, clients (more than one), dist, lock_ms, coherency_us,
// fanout (more than 1) and hedge only when set; not its id), the columns,
// every cell and the source. The loader recomputes it from the lab block
// and the table, and reports a table without one, one that does not match
// (a number edited by hand, a row added or dropped, an edited source, a
// preset changed after recording, a --seconds-scale trial), and one whose
// preset is not a lab block of the lesson. The caption is not covered: an
// author may reword it, and recording again keeps it while the preset is
// unchanged. The fingerprint catches honest mistakes; it is not a
// signature.
//
// A table of made-up data for tests says fixture: true instead of carrying
// a fingerprint; that is allowed only in lessons whose part is "Fixtures"
// ([FixturePart], such as sample.md), never in the course.
//
// A preset still to be recorded (new, or changed so its old numbers no
// longer belong to it) has a table that says only that, and maybe a
// caption:
//
//	```table id=limit-nine-result preset=limit-nine
//	pending: true
//	```
//
// [Load] refuses it, naming the command that records it, so nothing
// unrecorded ships in the embedded course; [LoadWith] with Pending set
// accepts it, for the recorder, for `server lessons check --pending` and
// for `server --content` (drafts). A lab block with no table at all loads
// (tests and fixtures have them), but the course's tests require a table,
// pending or recorded, for every preset, and all of a lesson's tables from
// one recording session.
//
// record: a form in which the learner writes their own record of a
// decision, with one of their saved runs attached (the web package stores
// it with their progress and exports it as Markdown). Required: prompt
// (Markdown, shown above the form) and the five fields setting, criterion,
// measurement, number and reverse (what would reverse the decision), each
// a mapping with label (plain text, at most 80 characters) and optionally
// hint (plain text, at most 300 characters). A missing field, a field
// without a label and an unknown field are errors. The block takes no
// attributes other than id=.
//
//	```record id=limit-record
//	prompt: Write your own record for the limit you would ship.
//	setting: {label: Setting, hint: The value you ship, e.g. LIMIT=10.}
//	criterion: {label: Criterion, hint: What the number must satisfy.}
//	measurement: {label: Measurement, hint: Which sweep, seed, machine, date.}
//	number: {label: Number, hint: The number and its arithmetic.}
//	reverse: {label: What would reverse it, hint: What would change your mind.}
//	```
//
// judge: a design task's judge (the capstone). It names a lab block of the
// lesson (lab, an open-loop preset learners run, not simulated), whose
// workers, admission limit and policy the learner chooses; the rate judged
// (one of the lab's rates); the seeds a choice must pass at (1 to 5, each
// once); and the criterion's two halves: budget_ms (the p99 of the answers
// at most this, above 0 and at most 60000) and delivered (the least share
// of requests sent that are answered, above 0 and at most 1). Pages judge
// the learner's finished runs of the preset, a choice at a time (package
// web), and once one passes show the cheapest choice that passes in the
// simulator. A preset a judge block names needs no recorded table: the
// learner's runs are its measurement.
//
//	```judge id=capstone-judge
//	lab: capstone-service
//	rate: 100
//	seeds: [1, 2, 3]
//	budget_ms: 230
//	delivered: 0.99
//	```
//
// # Recording
//
// `server lessons record [--content DIR] [--lesson SLUG] [--lab ID]
// [--seconds-scale F] [--max-load F] [--busy]` (package recorder) runs
// each lab preset of the course (default: every lesson except the
// fixtures; see [PlanRecording]) as a learner's run is measured (package
// measure: a fresh lab child with the preset's knobs and a load child of
// its own): open loop over its rates, or a closed loop of its clients. It
// writes the result ([WriteTable]) as the table with preset=ID (recorded
// or pending), replacing it where it stands, or inserting a table with id
// ID-result after the lab block; nothing else in the file changes. Columns
// are [RecordColumns] (backlogged after queued when the preset's accept is
// workers), written by recorder.RowCells: counts as whole numbers, rates
// and milliseconds to one decimal (send_lag_p99_ms to two), "-" for a lab
// counter that could not be read. It prints progress on standard error.
//
// A preset with over_time: true gets a second table, its time table
// ([WriteTimeTable]): the same kind of table block (caption, columns,
// rows, source, fingerprint over the same preset and source), whose
// columns are [TimeColumns] (window, at_s, seconds, ok, refused, gaveup,
// client_busy, in_flight, queued, in_service, limit, p50_ms, p99_ms,
// dropped), one row a second of each window and a last one, seconds
// shorter, for what is left of it;
// "—" where there is nothing to say (the lab was not read that second, or
// no answer was ok). It replaces the preset's time table where it stands,
// or is inserted with id ID-time after the preset's window table. A
// table whose columns begin window, at_s is a time table
// ([Table.TimeTable]); a preset has at most one table of each kind, and
// a mark's table of a preset is its window table.
//
// It refuses to start when the 1-minute load average is above --max-load
// (default recorder.DefaultMaxLoad, 0.3) per core, and refuses a table
// when other programs used more than that while its preset ran (measured
// from /proc on Linux, less the recorder's and its lab and load children's
// own processor time), when a window lost a request (lost ≠ 0), when the
// lab had not drained before a window, or when the preset changed while it
// ran. --busy records anyway,
// and the source then says BUSY and why. The source names the session (the
// time the invocation started; every table it writes shares it, and a
// lesson's tables must share one), the load average at the start, what
// other programs used during the run, and whether the generator had to
// share the lab's processors (a preset whose CPUS takes every core).
//
// A simulated preset runs no lab and no generator: the recorder simulates
// it with package sim (the preset's knobs and timeout, its arrivals from its
// seed and rng, no processor time beyond SPIN_MS) and its source says so
// ("simulated by package sim, no lab or generator ran", the rng and seed,
// the build and the session) instead of naming a machine and its load; the
// busy checks do not apply to it.
//
// # Marks
//
// A number in a lesson's text that was read from a recorded table, or
// worked out from one, is marked with where it comes from, so a test can
// recompute it whenever the tables are recorded again:
//
//	the ceiling, [47.1]{= sat-sweep[60].ok_per_sec} a second
//	about [10.0]{= loops-closed[#1].(ok_per_sec * mean_ms / 1000)} inside
//	a limit of [9]{= (230 - 21.5) / 21.5; floor}
//	about [190]{= moves-w4[250].ok_per_sec; ±2%}
//	the tail [stayed within the budget]{? max(limit-nine[60,80,100].p99_ms) <= 230}
//
// A mark is written on one line, in prose, in callouts, or in the text of
// a predict, check, model or record block (not in lab or table blocks,
// code, or inline code). The loader replaces it with its text, so the page
// and the questions show the plain number or words. [NUMBER]{= EXPR} holds
// a number (digits, optional comma thousands and decimals); by default
// EXPR must round to it at the decimals written; "; floor" and "; ceil"
// round down or up (as limits do), "; ±X" and "; ±X%" accept anything
// within X, or X percent of what EXPR gives. [words]{? CLAIM} holds a claim
// in words, and CLAIM must be true.
//
// EXPR reads recorded cells as NAME[ROW].COLUMN, where NAME is a table or
// its lab preset (anywhere in the course), ROW is a row by its offered
// rate (60), by its client count for a closed loop of several windows
// (clients: [1, 8, 64]: 8), or by position (#1, as a one-window closed
// loop's row must be named), or a list
// of rows (60,80,100), a range of positions (#11-#30, as a time table's
// seconds are read) or * for every row, inside min, max, sum or mean; and
// COLUMN a column, or (EXPR) over the row's columns, as in
// overload-sweep[100].(done - ok). NAME.SETTING reads a preset's knob
// (workers, spin_ms, wait_ms, limit, cpus, seconds, seed, closed,
// timeout_ms, windows, stall_every, stall_ms, backlog, lock_ms,
// coherency_us). Numbers, + - * / (or − × ÷), parentheses, min, max,
// sum, mean, abs, the comparisons < <= > >= = != (or ≤ ≥ ≠) and "and",
// "or" make the rest. Put spaces around a minus between names: a hyphen
// joins a name.
//
// Load checks each mark's syntax and that what it names exists (for a
// table not recorded yet, against its preset's rates and RecordColumns);
// [Course.CheckMarks] computes each one and says whether it holds, is
// stale (with the number to write), is broken (a cell that is not a
// number) or pending (reads a table not recorded yet). [Check] reports
// the ones that do not hold, the course's tests fail on them, `server
// lessons marks` lists them and --fix ([FixMarks]) rewrites the stale
// numbers.
//
// # Gates
//
// A Predict gates the rest of its lesson ([Lesson.GatesAfter],
// [Lesson.Cut]): pages show nothing after the first block that measures
// what settles it (its lab preset, the preset's tables, or a twin's)
// until the learner has answered or skipped it, because what follows
// reads that measurement. So a mark that reads a Predict's settling
// measurement must stand below that block, or in the Predict's own
// explanations: Load refuses one above the Predict or between the
// Predict and the block, naming the line to move it below
// ([Course.Settles] says which marks read which Predict's measurement).
// An open loop's schedule, offered and sent, is known before the service
// answers and may be read anywhere.
//
// # Reading time
//
// [Lesson.Reading] counts every word a learner reads (prose, callouts,
// prompts, options, explanations, models, record forms, captions) at
// [ReadingWordsPerMinute], adds one run of each preset, a minute for
// each prediction and model and three for each record to write; the
// course's tests hold each lesson's minutes to it, within two minutes.
//
// # Callouts
//
// A callout is a GitHub-style alert: a quote at the left margin whose first
// line is a marker alone, followed by Markdown.
//
//	> [!REMEMBER]
//	> Something worth remembering.
//
//	> [!LIMITS]
//	> Where this stops holding.
//
//	> [!ASOF 2026-11-30]
//	> A fact that was true on that date and may expire.
//
// Markers are case-insensitive; other kinds (such as GitHub's NOTE) are
// errors, as are a missing or malformed ASOF date and a callout with no
// text. Callouts get the ids callout-1, callout-2, ... in order within
// their lesson.
//
// # Errors
//
// Load and [Check] report every problem they find, not just the first, as
// an [Errors] value: one [Error] per problem, each "file:line: what is
// wrong: what is allowed", sorted by file and line. Course-wide checks
// (unique slugs and ids, builds_on naming an existing, earlier lesson,
// unique numbers within a chapter) report at the second occurrence and
// name the first.
package lessons
