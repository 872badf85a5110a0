package evidence_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"capacitylab/evidence"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/model"
	"capacitylab/result"
	"capacitylab/sim"
)

// The lab of these tests: 4 workers of 20 ms each, so 200 answers a
// second at most, with the lab's queue wait on every answer.
var lab = labsvc.Config{Workers: 4, SpinMS: 0, WaitMS: 20, CPUs: 1}

// kneeRates step through the lab's 200/s knee and end with a light
// window after the overload, as load's knee search does.
var kneeRates = []float64{40, 80, 120, 160, 190, 240, 320, 40}

const kneeSeconds = 6

// sweep is a simulated sweep as cmd/load --simulate runs it (a
// loadrun.Sweep with package sim as its driver; cmd/load's
// TestSimulateTableAndJSON holds its --json rows to this sweep's), with
// the JSON rows load prints and the records CSV it writes.
type sweep struct {
	rep     result.Report
	rates   []float64
	seconds float64
	json    []byte // load's --json output: one row a line
	csv     []byte // load's --records file
}

// simulated runs the sweep once per test binary for each set of rates.
var simulated = sync.OnceValues(func() (sweep, error) { return runSweep(kneeRates, kneeSeconds) })

func runSweep(rates []float64, seconds float64) (sweep, error) {
	m := sim.Model{Lab: lab}
	rep, err := loadrun.Sweep{Rates: rates, Seconds: seconds, Seed: 7, Driver: m}.Run(context.Background(), nil)
	if err != nil {
		return sweep{}, err
	}
	s := sweep{rep: rep, rates: rates, seconds: seconds}
	var js, rc bytes.Buffer
	for _, r := range rep.Rows() {
		if err := json.NewEncoder(&js).Encode(r); err != nil {
			return s, err
		}
	}
	if err := result.WriteCSV(&rc, rep.Records()); err != nil {
		return s, err
	}
	s.json, s.csv = js.Bytes(), rc.Bytes()
	return s, nil
}

func kneeSweep(t *testing.T) sweep {
	t.Helper()
	s, err := simulated()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// loadRows reads load's --json rows.
func loadRows(t *testing.T, b []byte) []result.Row {
	t.Helper()
	var rows []result.Row
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var r result.Row
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

// parseRecords reads load's records CSV (result.CSVHeader), the columns
// the package doc of result defines, until evidence.Read lands.
func parseRecords(t *testing.T, b []byte) []result.Record {
	t.Helper()
	lines, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(lines[0], ",") != strings.Join(result.CSVHeader(), ",") {
		t.Fatalf("header %q", lines[0])
	}
	ms := func(s string) time.Duration {
		if s == "" {
			return -1
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(math.Round(v*1000)) * time.Microsecond
	}
	opt := func(s string) float64 {
		if s == "" {
			return -1
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	out := make([]result.Record, 0, len(lines)-1)
	for _, l := range lines[1:] {
		var r result.Record
		r.Window, _ = strconv.Atoi(l[0])
		r.Seq, _ = strconv.Atoi(l[1])
		r.Intended, r.Sent, r.End = ms(l[2]), ms(l[3]), ms(l[4])
		if err := r.Outcome.UnmarshalText([]byte(l[6])); err != nil {
			t.Fatal(err)
		}
		if r.Outcome == result.NotSent {
			r.Sent, r.End = r.Intended, r.Intended
		}
		r.Status, _ = strconv.Atoi(l[7])
		r.Reason = l[8]
		r.QueueWaitMS, r.ServiceMS = opt(l[9]), opt(l[10])
		out = append(out, r)
	}
	return out
}

// dataset is the sweep read into a Dataset, from its records as load had
// them or as its CSV has them, with load's rows as report data or none.
func (s sweep) dataset(t *testing.T, records []result.Record, withData bool) evidence.Dataset {
	d := evidence.Dataset{Name: "records.csv", Format: evidence.LoadCSV, Timing: evidence.FromIntended, Records: records}
	for _, r := range s.rates {
		d.Windows = append(d.Windows, evidence.Window{Offered: r, Seconds: s.seconds})
	}
	if withData {
		d.Data = &evidence.ReportData{Tool: "capacitylab load", Version: 1, Loop: "open", Schedule: "poisson", QueueHeader: "X-Queue-Wait-Ms", Rows: loadRows(t, s.json)}
	}
	return d
}

// The rows Analyze folds equal load's printed rows, every field of every
// row, for the records load had; without load's report data the lab's
// columns are -1 as result.Metrics gives them and nothing else differs.
func TestAnalyzeRowsEqualLoads(t *testing.T) {
	s := kneeSweep(t)
	want := loadRows(t, s.json)
	a := evidence.Analyze(s.dataset(t, s.rep.Records(), true), evidence.Options{})
	if len(a.Rows) != len(want) {
		t.Fatalf("%d rows, load printed %d", len(a.Rows), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(a.Rows[i], want[i]) {
			t.Errorf("row %d:\n got  %+v\n load %+v", i, a.Rows[i], want[i])
		}
	}
	bare := evidence.Analyze(s.dataset(t, s.rep.Records(), false), evidence.Options{})
	for i := range want {
		w := want[i]
		w.Done, w.Queued, w.Backlogged, w.LabServiceMS, w.LabCPUMS, w.Note = -1, -1, -1, -1, -1, ""
		w.LabWaitMS, w.LabServiceSCV = -1, -1
		if !reflect.DeepEqual(bare.Rows[i], w) {
			t.Errorf("row %d without report data:\n got  %+v\n want %+v", i, bare.Rows[i], w)
		}
	}
}

// The same from the records CSV load writes: the file keeps each time to
// the microsecond and a record's latency is taken between whole
// microseconds, so the rows are load's exactly.
func TestAnalyzeRowsFromCSV(t *testing.T) {
	s := kneeSweep(t)
	want := loadRows(t, s.json)
	a := evidence.Analyze(s.dataset(t, parseRecords(t, s.csv), true), evidence.Options{})
	if len(a.Rows) != len(want) {
		t.Fatalf("%d rows, load printed %d", len(a.Rows), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(a.Rows[i], want[i]) {
			t.Errorf("row %d from the CSV:\n got  %+v\n load %+v", i, a.Rows[i], want[i])
		}
	}
}

// The knee of 4 workers of 20 ms (200 a second) is the first window
// offered more than 200: the one before it kept up, and the ceiling is
// within 3% of 200, measured at or past the knee.
func TestAnalyzeKneeAndCeiling(t *testing.T) {
	s := kneeSweep(t)
	a := evidence.Analyze(s.dataset(t, s.rep.Records(), true), evidence.Options{})
	if a.Knee < 1 || a.Rows[a.Knee-1].Offered >= 200 || a.Rows[a.Knee].Offered <= 200 {
		t.Fatalf("knee at window %d (%+v): want the first window offered more than 200/s", a.Knee, a.Rows)
	}
	if want := "window 6 (240/s) answered"; !strings.HasPrefix(a.KneeWhy, want) {
		t.Errorf("KneeWhy %q: want it to start %q", a.KneeWhy, want)
	}
	if math.Abs(a.Ceiling-200) > 6 || a.CeilingWindow < a.Knee || a.Rows[a.CeilingWindow].OKPerSec != a.Ceiling {
		t.Errorf("ceiling %v in window %d: want within 3%% of 200, at or past the knee (%d), that window's ok_per_sec", a.Ceiling, a.CeilingWindow, a.Knee)
	}
	// Below the lab's capacity nothing saturates.
	light := s.dataset(t, s.rep.Records(), true)
	light.Windows = light.Windows[:a.Knee]
	light.Data.Rows = light.Data.Rows[:a.Knee]
	if la := evidence.Analyze(light, evidence.Options{}); la.Knee != -1 || !strings.HasPrefix(la.KneeWhy, "no window saturated") {
		t.Errorf("windows below the knee only: knee %d %q, want -1 and no window saturated", la.Knee, la.KneeWhy)
	}
}

// outstanding is the mean number of requests outstanding over [0, span],
// counted every 250 µs: a second way to the records' in flight.
func outstanding(recs []result.Record, window int, span time.Duration) float64 {
	const step = 250 * time.Microsecond
	var mine []result.Record
	for _, r := range recs {
		if r.Window == window && r.Outcome != result.NotSent {
			mine = append(mine, r)
		}
	}
	total, n := 0, 0
	for at := step / 2; at < span; at += step {
		for _, r := range mine {
			if r.Sent <= at && at < r.End {
				total++
			}
		}
		n++
	}
	return float64(total) / float64(n)
}

// In flight from the records is the mean number outstanding (counted
// another way here), and below the knee it is Little's product of the
// ok answers within a few percent. Past the knee, where requests gave
// up after 2 s, the ones not answered ok are counted apart (and the
// two need not agree: the window is not in a steady state).
func TestAnalyzeInFlightAndLittle(t *testing.T) {
	s := kneeSweep(t)
	recs := s.rep.Records()
	a := evidence.Analyze(s.dataset(t, recs, true), evidence.Options{})
	for i, w := range a.Windows {
		r := a.Rows[i]
		last := time.Duration(0)
		for _, rec := range recs {
			if rec.Window == i && rec.Outcome != result.NotSent {
				last = max(last, rec.End)
			}
		}
		span := max(time.Duration(r.Seconds*float64(time.Second)), last)
		if c := outstanding(recs, i, span); math.Abs(c-w.InFlight) > 0.01*c+0.01 {
			t.Errorf("window %d: in flight %v, counting every 100 µs gives %v", i, w.InFlight, c)
		}
		if want := result.Round(r.OKPerSec*r.MeanMS/1000, 1000); w.Little != want {
			t.Errorf("window %d: Little %v, want ok/s × mean = %v", i, w.Little, want)
		}
		if sat, _ := evidence.Saturated(a.Rows, i); !sat && i < a.Knee {
			if d := math.Abs(w.InFlight-w.Little) / w.Little; d > 0.03 {
				t.Errorf("window %d below the knee: in flight %v, Little %v: %.1f%% apart", i, w.InFlight, w.Little, d*100)
			}
			if ok, why := evidence.LittleCheck(w); !ok {
				t.Errorf("window %d: LittleCheck: %s", i, why)
			}
		}
	}
	over := a.Windows[6] // 320/s: many gave up
	if a.Rows[6].Gaveup == 0 || over.InFlightOther <= 0 || over.InFlight <= over.Little {
		t.Errorf("320/s: gaveup %d, in flight %v (not ok %v), Little %v: want gave-up requests in flight beyond Little's product of ok answers",
			a.Rows[6].Gaveup, over.InFlight, over.InFlightOther, over.Little)
	}
}

// The lab reports each answer's queue wait; its service is 20 ms, so the
// split gives 20 ms of service in every window and the rest as queueing.
func TestAnalyzeQueueServiceSplit(t *testing.T) {
	s := kneeSweep(t)
	a := evidence.Analyze(s.dataset(t, s.rep.Records(), true), evidence.Options{})
	for i, w := range a.Windows {
		if math.Abs(w.ServiceMS-20) > 0.002 || math.Abs(w.QueueMS+w.ServiceMS-a.Rows[i].MeanMS) > 0.002 {
			t.Errorf("window %d: queue %v + service %v ms, mean %v: want 20 ms of service and the rest queueing", i, w.QueueMS, w.ServiceMS, a.Rows[i].MeanMS)
		}
	}
	if a.Windows[5].QueueMS < 100 {
		t.Errorf("past the knee the queue wait is %v ms: want the queue to dominate", a.Windows[5].QueueMS)
	}
	recs := slices.Clone(s.rep.Records())
	for i := range recs {
		recs[i].QueueWaitMS = -1
	}
	for i, w := range evidence.Analyze(s.dataset(t, recs, false), evidence.Options{}).Windows {
		if w.QueueMS != -1 || w.ServiceMS != -1 {
			t.Errorf("window %d without queue waits: queue %v, service %v, want -1 and -1", i, w.QueueMS, w.ServiceMS)
		}
	}
}

// The limit is model.AdmissionLimit's for the measured ceiling and the
// lightest window's p50; a budget shorter than that p50 gives none and
// says so.
func TestAnalyzeLimit(t *testing.T) {
	s := kneeSweep(t)
	d := s.dataset(t, s.rep.Records(), true)
	if a := evidence.Analyze(d, evidence.Options{}); a.Limit != nil {
		t.Errorf("no budget: limit %+v, want none", a.Limit)
	}
	a := evidence.Analyze(d, evidence.Options{BudgetMS: 250})
	l := a.Limit
	if l == nil {
		t.Fatal("budget 250 ms: no limit")
	}
	// Windows 1 and 8 both offered 40/s: the first is the lightest.
	if l.Window != 0 || l.ServiceMS != a.Rows[0].P50MS || l.Ceiling != a.Ceiling {
		t.Errorf("limit %+v: want S the p50 of window 1 (%v) and the ceiling %v", l, a.Rows[0].P50MS, a.Ceiling)
	}
	workers := a.Ceiling * l.ServiceMS / 1000
	adm := model.AdmissionLimit(workers, 250, l.ServiceMS)
	if !l.Feasible || l.Limit != int(adm.Rounded) || l.Sentence != adm.Sentence || math.Abs(l.Workers-workers) > 0.001 {
		t.Errorf("limit %+v: want model.AdmissionLimit(%v, 250, %v) = %v", l, workers, l.ServiceMS, float64(adm.Rounded))
	}
	if want := int(math.Floor(a.Ceiling * 0.25)); l.InFlight != want {
		t.Errorf("in flight %d, want ⌊ceiling × budget⌋ = %d", l.InFlight, want)
	}
	// The course's 4 workers of 20 ms and 250 ms: about 4 × 230 ÷ 20 = 46.
	if l.Limit < 44 || l.Limit > 46 {
		t.Errorf("limit %d: want about 46 for 4 workers, 20 ms and 250 ms", l.Limit)
	}
	short := evidence.Analyze(d, evidence.Options{BudgetMS: 15})
	if short.Limit == nil || short.Limit.Feasible || short.Limit.Limit != 0 || !slices.ContainsFunc(short.Warnings, func(w string) bool {
		return strings.Contains(w, "cannot be met even at rest")
	}) {
		t.Errorf("budget 15 ms under a 20 ms p50: limit %+v, warnings %q: want no limit and a warning that it cannot be met at rest", short.Limit, short.Warnings)
	}
	// Another budget from the analysis alone is Analyze's for it, from
	// none, a feasible one and one that cannot be met, to each.
	for _, from := range []float64{0, 250, 15} {
		for _, to := range []float64{0, 250, 15, 400} {
			got := evidence.Analyze(d, evidence.Options{BudgetMS: from}).WithBudget(to)
			if want := evidence.Analyze(d, evidence.Options{BudgetMS: to}); !reflect.DeepEqual(got, want) {
				t.Errorf("Analyze at %v ms, WithBudget(%v): limit %+v, warnings %q; want Analyze's at %v: %+v, %q", from, to, got.Limit, got.Warnings, to, want.Limit, want.Warnings)
			}
		}
	}
}

// keep is d with only windows idx, renumbered from 0.
func keep(d evidence.Dataset, idx ...int) evidence.Dataset {
	out := d
	out.Windows, out.Records = nil, nil
	var rows []result.Row
	for k, i := range idx {
		out.Windows = append(out.Windows, d.Windows[i])
		for _, r := range d.Records {
			if r.Window == i {
				r.Window = k
				out.Records = append(out.Records, r)
			}
		}
		if d.Data != nil {
			rows = append(rows, d.Data.Rows[i])
		}
	}
	if d.Data != nil {
		data := *d.Data
		data.Rows = rows
		out.Data = &data
	}
	return out
}

func item(t *testing.T, a evidence.Analysis, id string) evidence.CheckItem {
	t.Helper()
	for _, c := range a.Checklist {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no checklist item %q in %+v", id, a.Checklist)
	return evidence.CheckItem{}
}

// A complete result (our lab through its knee by load, with its records,
// report data and a light window at the end) meets every item, in the
// method's order.
func TestChecklistComplete(t *testing.T) {
	s := kneeSweep(t)
	a := evidence.Analyze(s.dataset(t, s.rep.Records(), true), evidence.Options{})
	order := []string{evidence.CheckOpenLoop, evidence.CheckKnee, evidence.CheckRecords, evidence.CheckN, evidence.CheckQueue,
		evidence.CheckUtil, evidence.CheckErrors, evidence.CheckRecovery, evidence.CheckLittle}
	if len(a.Checklist) != len(order) {
		t.Fatalf("%d items, want %d", len(a.Checklist), len(order))
	}
	for i, c := range a.Checklist {
		if c.ID != order[i] || !c.Met || c.Title == "" || c.Detail == "" {
			t.Errorf("item %d: %+v, want %s met with a title and a detail", i, c, order[i])
		}
	}
	if d := item(t, a, evidence.CheckRecovery).Detail; !strings.Contains(d, "Window 8, after the last saturated one (window 7)") {
		t.Errorf("recovery: %q, want window 8 after window 7", d)
	}
	if len(a.Warnings) != 0 {
		t.Errorf("warnings %q, want none", a.Warnings)
	}
}

// Each item is not met by a result lacking what it asks for, and its
// Detail says what is missing.
func TestChecklistLacking(t *testing.T) {
	s := kneeSweep(t)
	fresh := func() evidence.Dataset { return s.dataset(t, slices.Clone(s.rep.Records()), true) }
	edit := func(d evidence.Dataset, f func(r *result.Record)) evidence.Dataset {
		for i := range d.Records {
			f(&d.Records[i])
		}
		return d
	}
	gauges := func(d evidence.Dataset, name, kind string) evidence.Dataset {
		d.Data = &evidence.ReportData{Tool: "capacitylab load", Version: 1}
		for i := range d.Windows {
			d.Data.Gauges = append(d.Data.Gauges, evidence.WindowGauges{Window: i, Readings: map[string]evidence.GaugeReading{name: {Kind: kind, Mean: 1, Max: 2, N: 6}}})
		}
		return d
	}
	noQueue := func(r *result.Record) { r.QueueWaitMS = -1 }
	cases := []struct {
		name string
		d    func() evidence.Dataset
		id   string
		met  bool
		want string
	}{
		{"timed from the send", func() evidence.Dataset {
			d := fresh()
			d.Format, d.Timing = evidence.VegetaCSV, evidence.FromSent
			return d
		},
			evidence.CheckOpenLoop, false, "vegeta actually sent each request, not from when it was due: a generator that fell behind leaves out the time its requests waited to be sent (coordinated omission)"},
		{"closed loop", func() evidence.Dataset {
			d := fresh()
			for i := range d.Windows {
				d.Windows[i].Clients = 2 * (i + 1)
			}
			return d
		}, evidence.CheckOpenLoop, false, "Windows 1, 2, 3, 4, 5, 6, 7 and 8 ran a closed loop"},
		{"never saturated", func() evidence.Dataset { return keep(fresh(), 0, 1, 2, 3, 4) }, evidence.CheckKnee, false, "No window saturated (no window saturated"},
		{"saturated from the start", func() evidence.Dataset { return keep(fresh(), 5, 6) }, evidence.CheckKnee, false, "The first window already saturated (window 1 (240/s) answered"},
		{"a window without records", func() evidence.Dataset {
			d := fresh()
			d.Records = slices.DeleteFunc(d.Records, func(r result.Record) bool { return r.Window == 2 })
			return d
		}, evidence.CheckRecords, false, "Window 3 has no records"},
		{"a lost request", func() evidence.Dataset {
			return edit(fresh(), func(r *result.Record) {
				if r.Window == 1 && r.Seq == 10 {
					r.Outcome = result.Unfinished
				}
			})
		}, evidence.CheckRecords, false, "Window 2 has sent requests with no outcome (lost)"},
		{"a short window", func() evidence.Dataset {
			d := fresh()
			d.Records = slices.DeleteFunc(d.Records, func(r result.Record) bool { return r.Window == 0 && r.Seq >= 60 })
			return d
		}, evidence.CheckN, false, "window 1 has n = 60: a p99 needs at least 100"},
		{"no queue wait, no gauge", func() evidence.Dataset { d := edit(fresh(), noQueue); d.Data = nil; return d },
			evidence.CheckQueue, false, "Nothing in the file says how long requests queued"},
		{"a queue gauge", func() evidence.Dataset { return gauges(edit(fresh(), noQueue), "app_queue_depth", "gauge") },
			evidence.CheckQueue, true, "its queue gauge app_queue_depth"},
		{"no processor reading", func() evidence.Dataset { d := fresh(); d.Data = nil; return d },
			evidence.CheckUtil, false, "Expose a processor counter such as process_cpu_seconds_total"},
		{"a processor counter", func() evidence.Dataset { return gauges(fresh(), "process_cpu_seconds_total", "counter") },
			evidence.CheckUtil, true, "the service's process_cpu_seconds_total"},
		{"errors below the knee", func() evidence.Dataset {
			return edit(fresh(), func(r *result.Record) {
				if r.Window == 1 && r.Seq%25 == 0 {
					r.Outcome, r.Status, r.Reason = result.Error, 500, "status_500"
				}
			})
		}, evidence.CheckErrors, false, "window 2: 19 of 468 (0 refused, 0 gave up, 19 failed)"},
		{"no light window after", func() evidence.Dataset { return keep(fresh(), 0, 1, 2, 3, 4, 5, 6) }, evidence.CheckRecovery, false,
			"No light window follows the last saturated one (window 7)"},
		{"still slow after", func() evidence.Dataset {
			return edit(fresh(), func(r *result.Record) {
				if r.Window == 7 && r.Seq%20 == 0 {
					r.End += 300 * time.Millisecond
				}
			})
		}, evidence.CheckRecovery, false, "After the last saturated window (7), window 8 kept up but its p99 was"},
		{"the generator sent late", func() evidence.Dataset {
			return edit(fresh(), func(r *result.Record) {
				if r.Window == 0 && r.Outcome == result.OK {
					r.Sent = r.End - time.Millisecond
				}
			})
		}, evidence.CheckLittle, false, "Not reconciled within 10% below the knee: window 1: 0.043 in flight against 0.856 by Little's product, of which 0.814 is send lag"},
		{"a straggler long after the window", func() evidence.Dataset {
			d := fresh()
			d.Records = append(d.Records, result.Record{Window: 0, Seq: 999, Intended: time.Second, Sent: time.Second, End: 30 * time.Second,
				Outcome: result.Gaveup, Reason: result.ReasonReadTimeout, QueueWaitMS: -1, ServiceMS: -1})
			slices.SortStableFunc(d.Records, func(a, b result.Record) int { return a.Window - b.Window })
			return d
		}, evidence.CheckLittle, false, "more apart than 10%"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := item(t, evidence.Analyze(c.d(), evidence.Options{}), c.id)
			if got.Met != c.met || !strings.Contains(got.Detail, c.want) {
				t.Errorf("%s: met %v, %q\nwant met %v and %q", c.id, got.Met, got.Detail, c.met, c.want)
			}
		})
	}
}

// The analysis's own warnings come after the file's: records of windows
// the file lacks, report data that does not fit the records, a timing
// from the send, and last (WithBudget replaces them) a budget that is
// not one.
func TestAnalyzeWarnings(t *testing.T) {
	s := kneeSweep(t)
	d := s.dataset(t, slices.Clone(s.rep.Records()), true)
	d.Warnings = []string{"the file's own warning"}
	d.Timing = evidence.FromSent
	d.Data.Rows = d.Data.Rows[:3]
	d.Records = append(d.Records, result.Record{Window: 9, Outcome: result.OK, End: time.Millisecond})
	a := evidence.Analyze(d, evidence.Options{BudgetMS: -5})
	want := []string{
		"the file's own warning",
		"1 records name a window the file does not have",
		"the report data has 3 rows for 8 windows of records",
		"(coordinated omission)",
		"a latency budget of -5 ms cannot be met: want a positive number of milliseconds",
	}
	if len(a.Warnings) != len(want) {
		t.Fatalf("warnings %q, want %d", a.Warnings, len(want))
	}
	for i, w := range want {
		if !strings.Contains(a.Warnings[i], w) {
			t.Errorf("warning %d: %q, want it to hold %q", i, a.Warnings[i], w)
		}
	}
	if a.Rows[0].Done != -1 || a.Limit != nil {
		t.Errorf("row %+v, limit %+v: want the lab's columns -1 when the report data does not fit, and no limit", a.Rows[0], a.Limit)
	}
}

// A closed loop's rows are load's too: offered is sent ÷ seconds and
// clients are set, and the knee is where more clients brought no more
// answers.
func TestAnalyzeClosedLoopRows(t *testing.T) {
	rep, err := loadrun.Sweep{Clients: []int{1, 2, 4, 8, 16}, Seconds: 3, Seed: 7, Driver: sim.Model{Lab: lab}}.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := evidence.Dataset{Format: evidence.LoadCSV, Timing: evidence.FromIntended, Records: rep.Records(),
		Data: &evidence.ReportData{Loop: "closed", Rows: rep.Rows()}}
	for _, c := range []int{1, 2, 4, 8, 16} {
		d.Windows = append(d.Windows, evidence.Window{Seconds: 3, Clients: c})
	}
	a := evidence.Analyze(d, evidence.Options{})
	for i, want := range rep.Rows() {
		if !reflect.DeepEqual(a.Rows[i], want) {
			t.Errorf("closed-loop row %d:\n got  %+v\n load %+v", i, a.Rows[i], want)
		}
	}
	// 4 workers: 8 clients bring no more answers than 4 did.
	if a.Knee != 3 || a.Rows[a.Knee].Clients != 8 {
		t.Errorf("knee at window %d (%q), want window 4 (8 clients)", a.Knee, a.KneeWhy)
	}
	if c := item(t, a, evidence.CheckOpenLoop); c.Met || !strings.Contains(c.Detail, "ran a closed loop") {
		t.Errorf("open loop: %+v, want not met: a closed loop", c)
	}
}

// A file with nothing in it gives an analysis that says so, and a report.
func TestAnalyzeEmpty(t *testing.T) {
	a := evidence.Analyze(evidence.Dataset{Name: "empty.csv"}, evidence.Options{BudgetMS: 100})
	if a.Knee != -1 || a.CeilingWindow != -1 || a.Limit != nil || len(a.Checklist) != 9 {
		t.Fatalf("empty analysis %+v", a)
	}
	for _, c := range a.Checklist {
		if c.Met || c.Detail == "" {
			t.Errorf("item %s of an empty file: met %v, detail %q: want not met, with why", c.ID, c.Met, c.Detail)
		}
	}
	var b bytes.Buffer
	if err := evidence.WriteReport(&b, evidence.Dataset{Name: "empty.csv"}, a); err != nil || !strings.Contains(b.String(), "checklist: 0 of 9 met") {
		t.Errorf("report of an empty file: %v, %d bytes", err, b.Len())
	}
}
