package evidence_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"capacitylab/evidence"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
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
		return time.Duration(math.Round(v * 1000)) * time.Microsecond
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
		if !reflect.DeepEqual(bare.Rows[i], w) {
			t.Errorf("row %d without report data:\n got  %+v\n want %+v", i, bare.Rows[i], w)
		}
	}
}

// From the records CSV load writes, the rows are load's but for the
// latencies, which may differ by 1 µs: the file has each time truncated
// to the microsecond, while load rounds each latency it measured in
// nanoseconds to the nearest microsecond. Every count and rate is
// exact.
func TestAnalyzeRowsFromCSV(t *testing.T) {
	s := kneeSweep(t)
	want := loadRows(t, s.json)
	a := evidence.Analyze(s.dataset(t, parseRecords(t, s.csv), true), evidence.Options{})
	if len(a.Rows) != len(want) {
		t.Fatalf("%d rows, load printed %d", len(a.Rows), len(want))
	}
	off := 0
	for i := range want {
		got, w := reflect.ValueOf(a.Rows[i]), reflect.ValueOf(want[i])
		for f := range got.NumField() {
			name := got.Type().Field(f).Name
			g, l := got.Field(f).Interface(), w.Field(f).Interface()
			if g == l {
				continue
			}
			if strings.HasSuffix(name, "MS") && math.Abs(g.(float64)-l.(float64)) <= 0.001+1e-9 {
				off++
				continue
			}
			t.Errorf("row %d %s: %v from the CSV, load printed %v", i, name, g, l)
		}
	}
	t.Logf("%d latency figures 1 µs from load's over %d rows", off, len(want))
}
