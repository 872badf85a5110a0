package evidence

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"capacitylab/result"
)

// loadRecords makes the records of an open-loop sweep of windows with the
// given lengths (s) and rates, every outcome among them, times in whole
// microseconds as load's CSV carries them.
func loadRecords(seed uint64, seconds []float64, rates []float64) []result.Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	var recs []result.Record
	for w := range seconds {
		end := time.Duration(seconds[w] * float64(time.Second))
		var at time.Duration
		for seq := 0; ; seq++ {
			at += time.Duration(rng.ExpFloat64() / rates[w] * float64(time.Second)).Truncate(time.Microsecond)
			if at >= end {
				break
			}
			r := result.Record{Window: w, Seq: seq, Intended: at, QueueWaitMS: -1, ServiceMS: -1}
			lag := time.Duration(rng.IntN(3000)) * time.Microsecond
			lat := time.Duration(500+rng.IntN(40_000)) * time.Microsecond
			r.Sent, r.End = at+lag, at+lag+lat
			switch k := rng.IntN(20); {
			case k < 14:
				r.Outcome, r.Status = result.OK, 200
				r.QueueWaitMS, r.ServiceMS = float64(rng.IntN(5000))/1000, 1.25
			case k < 16:
				r.Outcome, r.Status = result.Refused, 503
			case k == 16:
				r.Outcome, r.Reason = result.Gaveup, result.ReasonReadTimeout
			case k == 17:
				r.Outcome, r.Status, r.Reason = result.Error, 500, "status_500"
			case k == 18:
				r.Outcome, r.Reason = result.NotSent, result.ReasonClientBusy
				r.Sent, r.End = at, at
			default:
				r.Outcome, r.Reason = result.NotSent, result.ReasonInFlightCap
				r.Sent, r.End = at, at
			}
			recs = append(recs, r)
		}
	}
	return recs
}

func csvOf(t testing.TB, recs []result.Record) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := result.WriteCSV(&b, recs); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// rowsOf folds records into one row a window as load does, each window
// with its offered rate and length.
func rowsOf(recs []result.Record, windows []Window) []result.Row {
	ms := make([]result.Metrics, len(windows))
	for _, r := range recs {
		ms[r.Window].Add(r)
	}
	rows := make([]result.Row, len(windows))
	for i, w := range windows {
		rows[i] = ms[i].Row(w.Offered, time.Duration(w.Seconds*float64(time.Second)))
		rows[i].Window = i
	}
	return rows
}

func hasWarning(ds Dataset, part string) bool {
	for _, w := range ds.Warnings {
		if strings.Contains(w, part) {
			return true
		}
	}
	return false
}

// Load's own CSV reads back into exactly the records written, and the rows
// computed from them are the rows computed from the originals.
func TestReadLoadCSVRoundTrip(t *testing.T) {
	recs := loadRecords(7, []float64{2, 3}, []float64{200, 400})
	ds, err := Read("run.csv", bytes.NewReader(csvOf(t, recs)), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if ds.Format != LoadCSV || ds.Timing != FromIntended || ds.Name != "run.csv" {
		t.Errorf("format %q timing %q name %q, want load-csv, intended, run.csv", ds.Format, ds.Timing, ds.Name)
	}
	if !reflect.DeepEqual(ds.Records, recs) {
		for i := range recs {
			if i >= len(ds.Records) || ds.Records[i] != recs[i] {
				t.Fatalf("record %d read as %+v, written as %+v (of %d, %d read)", i, ds.Records[min(i, len(ds.Records)-1)], recs[i], len(recs), len(ds.Records))
			}
		}
		t.Fatalf("%d records read, %d written", len(ds.Records), len(recs))
	}
	// Read from a reader that does not tell its size, the records grow a
	// chunk at a time and are the same.
	streamed, err := Read("run.csv", struct{ io.Reader }{bytes.NewReader(csvOf(t, recs))}, DefaultLimits())
	if err != nil || !reflect.DeepEqual(streamed.Records, recs) {
		t.Fatalf("read from a stream: %v, %d records, want the %d written", err, len(streamed.Records), len(recs))
	}
	// Without the report's data the windows are estimated: the next whole
	// second after the last arrival (2 s and 3 s here), rates from them.
	if len(ds.Windows) != 2 || ds.Windows[0].Seconds != 2 || ds.Windows[1].Seconds != 3 {
		t.Fatalf("windows %+v, want lengths 2 and 3 s", ds.Windows)
	}
	for i, w := range ds.Windows {
		n := 0
		for _, r := range recs {
			if r.Window == i {
				n++
			}
		}
		if want := result.Round(float64(n)/w.Seconds, 100); w.Offered != want || w.Clients != 0 {
			t.Errorf("window %d offered %v clients %d, want %v (%d arrivals ÷ %v s), 0", i, w.Offered, w.Clients, want, n, w.Seconds)
		}
	}
	if !hasWarning(ds, "estimated") || !hasWarning(ds, "--report") {
		t.Errorf("warnings %q: want one saying the rates were estimated and to upload the report's .json", ds.Warnings)
	}
	if hasWarning(ds, warnLoadClosedPfx) {
		t.Errorf("warnings %q: an open loop's windows called closed", ds.Warnings)
	}
	// The rows from what Read returned are the rows from the originals.
	want := rowsOf(recs, ds.Windows)
	if got := rowsOf(ds.Records, ds.Windows); !reflect.DeepEqual(got, want) {
		t.Errorf("rows from the read records\n%+v\nwant\n%+v", got, want)
	}
}

// load writes times truncated to the microsecond: records timed to the
// nanosecond read back as those times truncated, exactly.
func TestReadLoadCSVTruncatesToMicroseconds(t *testing.T) {
	recs := []result.Record{
		{Seq: 0, Intended: 1_234_567, Sent: 1_300_999, End: 9_000_001, Outcome: result.OK, Status: 200, QueueWaitMS: -1, ServiceMS: -1},
		{Seq: 1, Intended: 2_000_999, Sent: 2_000_999, End: 2_000_999, Outcome: result.NotSent, Reason: result.ReasonInFlightCap, QueueWaitMS: -1, ServiceMS: -1},
	}
	ds, err := Read("ns.csv", bytes.NewReader(csvOf(t, recs)), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		recs[i].Intended = recs[i].Intended.Truncate(time.Microsecond)
		recs[i].Sent = recs[i].Sent.Truncate(time.Microsecond)
		recs[i].End = recs[i].End.Truncate(time.Microsecond)
	}
	if !reflect.DeepEqual(ds.Records, recs) {
		t.Errorf("read %+v\nwant %+v", ds.Records, recs)
	}
}

// A window whose every request left when it was due is named as a closed
// loop's.
func TestReadLoadCSVClosedLoop(t *testing.T) {
	recs := loadRecords(3, []float64{1, 1}, []float64{100, 100})
	for i := range recs {
		if recs[i].Window == 1 && recs[i].Outcome != result.NotSent {
			lat := recs[i].End - recs[i].Sent
			recs[i].Sent = recs[i].Intended
			recs[i].End = recs[i].Sent + lat
		}
	}
	ds, err := Read("closed.csv", bytes.NewReader(csvOf(t, recs)), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var closed string
	for _, w := range ds.Warnings {
		if strings.HasPrefix(w, warnLoadClosedPfx) {
			closed = w
		}
	}
	if !strings.Contains(closed, "): 1.") || !strings.Contains(closed, "report's .json") {
		t.Errorf("warnings %q: want window 1 (only) named as closed-loop, its clients known only from the report's .json", ds.Warnings)
	}
	if ds.Windows[1].Clients != 0 {
		t.Errorf("clients %d set without report data", ds.Windows[1].Clients)
	}
	// With the report's data of a closed loop, the clients come from its
	// rows and the warning says what a closed loop hides.
	only := []result.Record{}
	for _, r := range recs {
		if r.Window == 1 {
			r.Window = 0
			only = append(only, r)
		}
	}
	ds, err = Read("closed.csv", bytes.NewReader(csvOf(t, only)), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.Attach(reportFor(only, []Window{{Offered: 80, Seconds: 1, Clients: 8}}, "closed")); err != nil {
		t.Fatal(err)
	}
	if ds.Windows[0].Clients != 8 || hasWarning(ds, warnLoadClosedPfx) || !hasWarning(ds, "load --closed") || !hasWarning(ds, "open-loop (load --rate)") {
		t.Errorf("window %+v, warnings %q: want 8 clients and the closed run's warning in place of the guess", ds.Windows[0], ds.Warnings)
	}
}

// reportFor is load's report data for recs: its rows as load computes
// them, with the windows' true lengths and rates.
func reportFor(recs []result.Record, windows []Window, loop string) *ReportData {
	rows := rowsOf(recs, windows)
	for i := range rows {
		rows[i].Clients = windows[i].Clients
	}
	return &ReportData{Tool: ReportDataTool, Version: ReportDataVersion, Loop: loop, Schedule: "poisson", Rows: rows}
}

// The report's data, read and attached, gives the windows load's own
// rates, lengths and clients, and the rows from the read records are then
// load's own rows.
func TestAttach(t *testing.T) {
	recs := loadRecords(11, []float64{1.5, 2.5}, []float64{300, 600})
	truth := []Window{{Offered: 300, Seconds: 1.5}, {Offered: 600, Seconds: 2.5}}
	data := reportFor(recs, truth, "open")
	j, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadData(bytes.NewReader(j), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := Read("run.csv", bytes.NewReader(csvOf(t, recs)), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if ds.Windows[0].Seconds != 2 {
		t.Fatalf("estimated window 0 at %v s, want 2 (the next whole second)", ds.Windows[0].Seconds)
	}
	if err := ds.Attach(got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ds.Windows, truth) || ds.Data != got {
		t.Errorf("windows %+v data %p, want %+v and the report data", ds.Windows, ds.Data, truth)
	}
	if hasWarning(ds, "estimated") {
		t.Errorf("warnings %q after Attach: want the estimate's warning gone", ds.Warnings)
	}
	if rows := rowsOf(ds.Records, ds.Windows); !reflect.DeepEqual(rows, data.Rows) {
		t.Errorf("rows from the read records\n%+v\nwant load's own\n%+v", rows, data.Rows)
	}
}

// Attach refuses report data that is not of these records, naming what
// differs, and changes nothing.
func TestAttachMismatch(t *testing.T) {
	recs := loadRecords(5, []float64{1, 1}, []float64{100, 200})
	truth := []Window{{Offered: 100, Seconds: 1}, {Offered: 200, Seconds: 1}}
	other := loadRecords(6, []float64{1, 1}, []float64{100, 200})
	cases := []struct {
		name string
		data *ReportData
		want string
	}{
		// One window fewer.
		{"windows", reportFor(recs[:0], truth[:1], "open"), "1 windows and the records 2"},
		// Another run of the same rates: other arrivals.
		{"arrivals", reportFor(other, truth, "open"), "window 0: the report data says"},
	}
	// The same arrivals with one outcome changed.
	changed := append([]result.Record(nil), recs...)
	for i := range changed {
		if changed[i].Window == 1 && changed[i].Outcome == result.OK {
			changed[i].Outcome, changed[i].Status = result.Refused, 503
			break
		}
	}
	cases = append(cases, struct {
		name string
		data *ReportData
		want string
	}{"outcome", reportFor(changed, truth, "open"), "window 1: the report data says"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ds, err := Read("run.csv", bytes.NewReader(csvOf(t, recs)), DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			before := append([]Window(nil), ds.Windows...)
			err = ds.Attach(c.data)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "load --report") {
				t.Fatalf("Attach: %v, want an error containing %q and what to upload", err, c.want)
			}
			if !reflect.DeepEqual(ds.Windows, before) || ds.Data != nil {
				t.Errorf("a refused Attach changed the windows to %+v", ds.Windows)
			}
		})
	}
	// Load's data does not go with another tool's file.
	ds, err := Read("vegeta.csv", openFixture(t, "vegeta.csv"), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.Attach(reportFor(recs, truth, "open")); err == nil || !strings.Contains(err.Error(), "vegeta") {
		t.Errorf("Attach to vegeta's file: %v, want a refusal naming it", err)
	}
}

// ReadData refuses what is not load's report data, saying what it wants.
func TestReadDataRefuses(t *testing.T) {
	good := reportFor(loadRecords(1, []float64{1}, []float64{50}), []Window{{Offered: 50, Seconds: 1}}, "open")
	edit := func(f func(d *ReportData)) string {
		d := *good
		d.Rows = append([]result.Row(nil), good.Rows...)
		f(&d)
		b, _ := json.Marshal(d)
		return string(b)
	}
	cases := []struct{ name, in, want string }{
		{"empty", "", "is empty"},
		{"not json", "window,seq\n", "not load's JSON"},
		{"wrong type", `{"tool":"capacitylab load","version":"1"}`, "version is a JSON string"},
		{"other tool", edit(func(d *ReportData) { d.Tool = "k6" }), `tool "k6" version 1`},
		{"newer version", edit(func(d *ReportData) { d.Version = 2 }), "version 2"},
		{"loop", edit(func(d *ReportData) { d.Loop = "sideways" }), `loop is "sideways"`},
		{"no rows", edit(func(d *ReportData) { d.Rows = nil }), "no rows"},
		{"row window", edit(func(d *ReportData) { d.Rows[0].Window = 3 }), "row 0 is for window 3"},
		{"seconds", edit(func(d *ReportData) { d.Rows[0].Seconds = 0 }), "seconds is 0"},
		{"clients in open loop", edit(func(d *ReportData) { d.Rows[0].Clients = 4 }), "open loop has 4 clients"},
		{"closed without clients", edit(func(d *ReportData) { d.Loop = "closed" }), "closed loop has 0 clients"},
		{"gauges", edit(func(d *ReportData) { d.Gauges = []WindowGauges{{Window: 5}} }), "gauges for window 5"},
		{"two values", edit(func(*ReportData) {}) + "{}", "more than one JSON value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadData(strings.NewReader(c.in), 1<<20)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("ReadData: %v, want an error containing %q", err, c.want)
			}
		})
	}
	big := edit(func(*ReportData) {})
	if _, err := ReadData(strings.NewReader(big), int64(len(big)-1)); err == nil || !strings.Contains(err.Error(), "larger than the limit of "+thousands(int64(len(big)-1))+" bytes") {
		t.Errorf("ReadData over its limit: %v, want the limit named", err)
	}
	if _, err := ReadData(strings.NewReader(big), int64(len(big))); err != nil {
		t.Errorf("ReadData at its limit: %v", err)
	}
}

func openFixture(t testing.TB, name string) *os.File {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// counts tallies a window's outcomes and reasons.
func counts(recs []result.Record, w int) map[string]int {
	c := map[string]int{}
	for _, r := range recs {
		if r.Window == w {
			c[r.Outcome.String()]++
			if r.Reason != "" {
				c[r.Outcome.String()+"/"+r.Reason]++
			}
		}
	}
	return c
}

// checkNumbered checks records are in window then seq order, numbered
// from 0 in each window, times from the window's first send.
func checkNumbered(t *testing.T, ds Dataset) {
	t.Helper()
	seq, win := -1, 0
	first := map[int]time.Duration{}
	for i, r := range ds.Records {
		if r.Window != win {
			if r.Window != win+1 {
				t.Fatalf("record %d in window %d after window %d", i, r.Window, win)
			}
			win, seq = r.Window, -1
		}
		if r.Seq != seq+1 {
			t.Fatalf("record %d: seq %d after %d", i, r.Seq, seq)
		}
		seq = r.Seq
		if _, ok := first[r.Window]; !ok {
			first[r.Window] = r.Sent
		}
		if r.Intended != r.Sent || r.End < r.Sent || r.Sent < 0 {
			t.Fatalf("record %d: intended %v sent %v end %v: want intended = sent ≤ end, from 0", i, r.Intended, r.Sent, r.End)
		}
	}
	for w, s := range first {
		if s != 0 {
			t.Errorf("window %d's first send at %v, want 0", w, s)
		}
	}
	if win != len(ds.Windows)-1 {
		t.Errorf("records reach window %d of %d", win, len(ds.Windows))
	}
}

// vegeta's CSV, made by the real vegeta v12.13.0 (testdata/README.md):
// one window per attack, outcomes as vegeta's own report counted them.
func TestReadVegetaFixture(t *testing.T) {
	ds, err := Read("vegeta.csv", openFixture(t, "vegeta.csv"), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if ds.Format != VegetaCSV || ds.Timing != FromSent {
		t.Errorf("format %q timing %q, want vegeta-csv, sent", ds.Format, ds.Timing)
	}
	checkNumbered(t, ds)
	labels := []string{"r40", "r80", "refused"}
	// vegeta report of each attack's .bin said (Status Codes): r40 0:8
	// 200:45 429:6 500:5 503:16; r80 0:15 200:93 429:11 500:9 503:32;
	// refused 0:10, all "connection refused".
	want := []map[string]int{
		{"ok": 45, "refused": 22, "gaveup": 8, "gaveup/read_timeout": 8, "error": 5, "error/status_500": 5},
		{"ok": 93, "refused": 43, "gaveup": 15, "gaveup/read_timeout": 15, "error": 9, "error/status_500": 9},
		{"error": 10, "error/conn_refused": 10},
	}
	rates := []float64{40, 80, 10}
	if len(ds.Windows) != 3 {
		t.Fatalf("windows %+v, want 3", ds.Windows)
	}
	for i, w := range ds.Windows {
		if w.Label != labels[i] {
			t.Errorf("window %d label %q, want %q", i, w.Label, labels[i])
		}
		if got := counts(ds.Records, i); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("window %d (%s): %v, want %v", i, w.Label, got, want[i])
		}
		// vegeta paces its sends evenly: the estimate is the rate asked
		// for within 1%.
		if math.Abs(w.Offered-rates[i])/rates[i] > 0.01 {
			t.Errorf("window %d offered %v, want %v within 1%%", i, w.Offered, rates[i])
		}
	}
	// The file's first line is r40's seq 0: its latency is its end.
	f, _ := os.ReadFile("testdata/vegeta.csv")
	first, err := csv.NewReader(bytes.NewReader(f)).Read()
	if err != nil {
		t.Fatal(err)
	}
	lat, _ := strconv.ParseInt(first[2], 10, 64)
	if r := ds.Records[0]; first[7] != "r40" || first[8] != "0" || r.End != time.Duration(lat) || r.Sent != 0 || r.Status != 200 {
		t.Errorf("r40 seq 0 read as %+v, want sent 0, end %v (its latency), status 200", r, time.Duration(lat))
	}
	for _, part := range []string{"coordinated omission", "cmd/load", "vegeta report", "-rate"} {
		if !hasWarning(ds, part) {
			t.Errorf("warnings %q: want one mentioning %q", ds.Warnings, part)
		}
	}
}

// Two runs joined under one attack name are refused; an error text that
// runs over two lines (quoted, as encoding/csv writes it) is one request,
// its line numbers counted past it.
func TestReadVegetaJoinedAndMultiline(t *testing.T) {
	veg, _ := os.ReadFile("testdata/vegeta.csv")
	_, err := Read("twice.csv", bytes.NewReader(append(append([]byte(nil), veg...), veg...)), DefaultLimits())
	if err == nil || !strings.Contains(err.Error(), `attack "r40" holds two requests numbered seq 0`) || !strings.Contains(err.Error(), "-name") {
		t.Errorf("two runs under one name: %v, want them refused, naming the attack and -name", err)
	}
	lines := strings.SplitAfter(string(veg), "\n")
	var timeout int
	for i, l := range lines {
		if strings.Contains(l, "Client.Timeout") {
			timeout = i
			break
		}
	}
	lines[timeout] = strings.Replace(lines[timeout], "(Client.Timeout exceeded", "(Client.Timeout\nexceeded", 1)
	in := strings.Join(lines[:timeout+1], "") + "x" + strings.Join(lines[timeout+1:], "")
	_, err = Read("multi.csv", strings.NewReader(in), DefaultLimits())
	// The bad line is the one after the request of two lines: its number
	// is the file's line, one more than the record's.
	if want := fmt.Sprintf("line %d: timestamp \"x", timeout+3); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Read: %v, want %q", err, want)
	}
	ds, err := Read("multi.csv", strings.NewReader(strings.Join(lines, "")), DefaultLimits())
	if err != nil || len(ds.Records) != 250 || counts(ds.Records, 0)["gaveup/read_timeout"]+counts(ds.Records, 1)["gaveup/read_timeout"] != 23 {
		t.Errorf("Read: %v, %d records: want 250, the one of two lines still a timeout", err, len(ds.Records))
	}
}

// k6's JSON output, made by hand from k6's documented format: windows per
// scenario, a request's send its end less its duration, dropped
// iterations as not sent, and warnings that say which scenario's executor
// the file shows and which it does not.
func TestReadK6JSON(t *testing.T) {
	ds, err := Read("k6.json", openFixture(t, "k6.json"), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if ds.Format != K6JSON || ds.Timing != FromSent {
		t.Errorf("format %q timing %q, want k6-json, sent", ds.Format, ds.Timing)
	}
	checkK6(t, ds)
	if hasWarning(ds, "whole seconds") {
		t.Errorf("warnings %q: JSON times are to the nanosecond", ds.Warnings)
	}
}

// k6's CSV with timeFormat unix_micro reads to the same records as its
// JSON.
func TestReadK6CSV(t *testing.T) {
	js, err := Read("k6.json", openFixture(t, "k6.json"), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	ds, err := Read("k6.csv", openFixture(t, "k6.csv"), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if ds.Format != K6CSV {
		t.Errorf("format %q, want k6-csv", ds.Format)
	}
	checkK6(t, ds)
	if !reflect.DeepEqual(ds.Records, js.Records) || !reflect.DeepEqual(ds.Windows, js.Windows) {
		t.Errorf("the CSV read differently from the JSON:\n%+v\n%+v", ds.Records, js.Records)
	}
}

// k6's CSV in its default whole-second times reads, with a warning.
func TestReadK6CSVSeconds(t *testing.T) {
	ds, err := Read("k6-seconds.csv", openFixture(t, "k6-seconds.csv"), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Records) != 21 || !hasWarning(ds, "whole seconds") || !hasWarning(ds, "K6_CSV_TIME_FORMAT=unix_micro") {
		t.Errorf("%d records, warnings %q: want 21 and one on whole seconds saying what to rerun with", len(ds.Records), ds.Warnings)
	}
}

func checkK6(t *testing.T, ds Dataset) {
	t.Helper()
	checkNumbered(t, ds)
	if len(ds.Windows) != 2 || ds.Windows[0].Label != "steady" || ds.Windows[1].Label != "arrivals" {
		t.Fatalf("windows %+v, want steady then arrivals", ds.Windows)
	}
	want := []map[string]int{
		{"ok": 6, "refused": 1, "gaveup": 1, "gaveup/read_timeout": 1},
		{"ok": 8, "refused": 1, "error": 1, "error/status_500": 1, "not_sent": 3, "not_sent/client_busy": 3},
	}
	for i := range want {
		if got := counts(ds.Records, i); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("window %d: %v, want %v", i, got, want[i])
		}
	}
	// steady's requests were sent every 100.137 ms (k6fixtures.py); the
	// second took 1.810 ms.
	r := ds.Records[1]
	if r.Sent != 100137*time.Microsecond || r.End-r.Sent != 1810*time.Microsecond || r.Status != 200 {
		t.Errorf("steady's second request %+v, want sent 100.137 ms, 1.810 ms long, 200", r)
	}
	// The timed-out one: status 0, error_code 1050, 60 s.
	if r := ds.Records[4]; r.Outcome != result.Gaveup || r.End-r.Sent != 60*time.Second {
		t.Errorf("steady's fifth request %+v, want gaveup after 60 s", r)
	}
	// 13 arrivals (3 dropped) sent every 50.011 ms: 12 gaps ahead of the
	// last, so 13 ÷ (12 × 50.011 ms × 13/12) ≈ 20 a second.
	if w := ds.Windows[1]; math.Abs(w.Offered-20) > 0.1 {
		t.Errorf("arrivals offered %v, want about 20 a second", w.Offered)
	}
	for _, part := range []string{
		"coordinated omission",
		`Scenario "arrivals" dropped 3 iterations`,
		"client_busy",
		"preAllocatedVUs",
		`which executor ran scenario "steady"`,
		"closed loop",
		"constant-arrival-rate",
		"does not carry the rate",
	} {
		if !hasWarning(ds, part) {
			t.Errorf("warnings %q: want one mentioning %q", ds.Warnings, part)
		}
	}
}

// Each kind of bad line is refused, naming its line and what is allowed.
func TestReadRefusesBadLines(t *testing.T) {
	load := func(lines ...string) string {
		return loadHeader11 + "\n" + strings.Join(lines, "\n") + "\n"
	}
	ok := "0,0,1.000,1.200,3.000,2.000,ok,200,,,"
	veg, _ := os.ReadFile("testdata/vegeta.csv")
	vegLines := strings.SplitAfter(string(veg), "\n")
	k6j, _ := os.ReadFile("testdata/k6.json")
	k6Lines := strings.SplitAfter(string(k6j), "\n")
	k6c, _ := os.ReadFile("testdata/k6.csv")
	k6cLines := strings.SplitAfter(string(k6c), "\n")
	cases := []struct{ name, in, want string }{
		{"latency not a number", load(ok, "0,1,2.000,2.100,4.000,abc,ok,200,,,"),
			`line 3: latency_ms "abc" is not a number: want milliseconds, e.g. 12.5`},
		{"fields", load(ok, "0,1,2.000,2.100,4.000,2.000,ok,200"), "line 3: 8 fields: want the 11 columns window,seq"},
		{"quoted", load(`0,0,"1.000",1.200,3.000,2.000,ok,200,,,`), "line 2: a quoted field"},
		{"outcome", load("0,0,1.000,1.200,3.000,2.000,fine,200,,,"), `line 2: outcome "fine" is not known: want ok, refused`},
		{"status", load("0,0,1.000,1.200,3.000,2.000,ok,999,,,"), `line 2: status "999" is not an HTTP status: want 100 to 599`},
		{"window skipped", load(ok, "2,0,1.000,1.200,3.000,2.000,ok,200,,,"), "line 3: window 2 follows window 0"},
		{"seq skipped", load(ok, "0,2,1.000,1.200,3.000,2.000,ok,200,,,"), "line 3: seq 2 follows seq 0 in window 0"},
		{"first window", load("1,0,1.000,1.200,3.000,2.000,ok,200,,,"), "line 2: window 1 follows window -1"},
		{"not sent with times", load("0,0,1.000,1.200,3.000,2.000,not_sent,,inflight_cap,,"), `line 2: sent_ms is "1.200" for a request not sent: want it empty`},
		{"end before sent", load("0,0,1.000,5.000,3.000,2.000,ok,200,,,"), "line 2: end_ms 3.000 is before sent_ms 5.000"},
		{"latency disagrees", load("0,0,1.000,1.200,3.000,9.000,ok,200,,,"), "line 2: latency_ms 9.000 is not end_ms − intended_ms"},
		{"missing time", load("0,0,1.000,,3.000,2.000,ok,200,,,"), "line 2: sent_ms is empty"},
		{"negative time", load("0,0,-1.000,1.200,3.000,4.000,ok,200,,,"), `line 2: intended_ms "-1.000" is not a number`},
		{"reason", load("0,0,1.000,1.200,3.000,2.000,error,,Bad Thing,,"), `line 2: reason "Bad Thing" is not a reason`},
		{"queue wait", load("0,0,1.000,1.200,3.000,2.000,ok,200,,soon,"), `line 2: queue_wait_ms "soon" is not a number`},
		{"header", "window,seq,intended_ms\n0,0,1\n", `line 1: load's header is "window,seq,intended_ms": want exactly`},
		{"k6 line in load", load(ok, strings.TrimSpace(k6Lines[3])), "line 3: this line is of k6's JSON output (k6-json) in a file of cmd/load's records (load-csv)"},
		{"vegeta line in load", load(ok, strings.TrimSpace(vegLines[0])), "line 3: this line is of vegeta's CSV (vegeta-csv) in a file of cmd/load's records"},
		{"long line", load(ok, strings.Repeat("9", 2000)), "line 3: longer than 1,024 bytes"},
		{"vegeta timestamp", vegLines[0] + "x" + vegLines[1], `line 2: timestamp "x`},
		{"vegeta fields", vegLines[0] + "1,2,3\n", "line 2: 3 fields: want vegeta's 12 columns"},
		{"vegeta code", vegLines[0] + strings.Replace(vegLines[1], ",200,", ",abc,", 1), `line 2: code "abc" is not an HTTP status`},
		{"load line in vegeta", vegLines[0] + vegLines[1] + ok + "\n", "line 3: 11 fields"},
		{"k6 line in vegeta", vegLines[0] + k6Lines[3], "line 2: this line is of k6's JSON output (k6-json) in a file of vegeta's CSV"},
		{"k6 not json", k6Lines[0] + "hello\n", `line 2: "hello" is not a JSON object`},
		{"k6 broken json", k6Lines[0] + `{"type":"Point",` + "\n", "line 2: not valid JSON"},
		{"k6 time", k6Lines[0] + strings.Replace(k6Lines[5], `"time":"2024`, `"time":"yesterday`, 1), `line 2: data.time "yesterday`},
		{"k6 status tag", k6Lines[0] + strings.Replace(k6Lines[5], `"status":"200",`, "", 1), "line 2: http_req_duration has no status tag"},
		{"k6 negative duration", k6Lines[0] + strings.Replace(k6Lines[5], `"value":2.137`, `"value":-2`, 1), "line 2: http_req_duration value -2 is not a duration"},
		{"vegeta line in k6", k6Lines[0] + vegLines[0], "line 2: this line is of vegeta's CSV (vegeta-csv) in a file of k6's JSON output"},
		{"k6 csv value", k6cLines[0] + strings.Replace(k6cLines[2], "2.137000", "fast", 1), `line 2: metric_value "fast" is not a number`},
		{"k6 csv fields", k6cLines[0] + "http_req_duration,1\n", "line 2: 2 fields: want the 16 columns of k6's header"},
		{"k6 csv time", k6cLines[0] + strings.Replace(k6cLines[2], "1715258085002137", "17152", 1), `line 2: timestamp "17152" is not a time`},
		{"load line in k6 csv", k6cLines[0] + ok + "\n", "line 2: 11 fields: want the 16 columns"},
		{"k6 json line in k6 csv", k6cLines[0] + k6Lines[3], "line 2: this line is of k6's JSON output (k6-json) in a file of k6's CSV output"},
		{"k6 csv quote", k6cLines[0] + `http_req_duration,"1` + "\n", "line 2: a quoted field is not closed by the end of the file: want k6's columns"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read("bad", strings.NewReader(c.in), DefaultLimits())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Read: %v\nwant an error containing %q", err, c.want)
			}
		})
	}
}

// A line number past a thousand is written as people read it.
func TestReadNamesLineWithThousands(t *testing.T) {
	var b strings.Builder
	b.WriteString(loadHeader11 + "\n")
	for i := range 1202 {
		fmt.Fprintf(&b, "0,%d,%d.000,%d.100,%d.900,0.900,ok,200,,,\n", i, i, i, i)
	}
	b.WriteString("0,1202,1202.000,1202.100,1202.900,abc,ok,200,,,\n")
	_, err := Read("long.csv", strings.NewReader(b.String()), DefaultLimits())
	if err == nil || !strings.HasPrefix(err.Error(), `line 1,204: latency_ms "abc" is not a number`) {
		t.Errorf("Read: %v, want line 1,204 named", err)
	}
}

// Files that are no results at all are refused saying which files are.
func TestReadRefusesFiles(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"empty", "", "the file is empty: want one of: cmd/load's records"},
		{"blank", " \n\n", "the file is empty"},
		{"unknown", "name,age\nada,36\n", `the format of the file is not known (its first line begins "name,age")`},
		{"lists formats", "hello\n", "vegeta encode --to csv results.bin > results.csv"},
		{"binary", "\x0e\xff\x81\x03\x01\x01\x06Result\x01\xff\x82\x00\x01\x0c", "not text; vegeta attack writes binary results"},
		{"vegeta json", `{"attack":"a","seq":0,"code":200,"timestamp":"2024-01-01T00:00:00Z","latency":1000}` + "\n", "vegeta's results as JSON"},
		{"header only", loadHeader + "\n", "the file holds no requests: want a line a request after the header"},
		{"k6 without requests", `{"type":"Metric","data":{"type":"gauge"},"metric":"vus"}` + "\n", "holds no requests: want Point lines of the metric http_req_duration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read("f", strings.NewReader(c.in), DefaultLimits())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Read: %v\nwant an error containing %q", err, c.want)
			}
		})
	}
}

// A file over the byte limit, or with more requests than the record
// limit, is refused saying the limit; one at the limits is read.
func TestReadLimits(t *testing.T) {
	recs := loadRecords(9, []float64{1}, []float64{20})
	load := csvOf(t, recs)
	veg, _ := os.ReadFile("testdata/vegeta.csv")
	k6j, _ := os.ReadFile("testdata/k6.json")
	k6c, _ := os.ReadFile("testdata/k6.csv")
	files := []struct {
		name     string
		in       []byte
		requests int
	}{{"load", load, len(recs)}, {"vegeta", veg, 250}, {"k6 json", k6j, 21}, {"k6 csv", k6c, 21}}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			n := int64(len(f.in))
			if _, err := Read("f", bytes.NewReader(f.in), Limits{MaxBytes: n, MaxRecords: f.requests}); err != nil {
				t.Errorf("at the limits (%d bytes, %d requests): %v", n, f.requests, err)
			}
			_, err := Read("f", bytes.NewReader(f.in), Limits{MaxBytes: n - 1, MaxRecords: f.requests})
			if want := "larger than the limit of " + thousands(n-1) + " bytes"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("one byte over: %v, want %q", err, want)
			}
			_, err = Read("f", bytes.NewReader(f.in), Limits{MaxBytes: n, MaxRecords: f.requests - 1})
			if want := "more than " + thousands(int64(f.requests-1)) + " requests: the limit is"; err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "line ") {
				t.Errorf("one request over: %v, want its line and %q", err, want)
			}
		})
	}
	if d := DefaultLimits(); d.MaxRecords != 1_000_000 || d.MaxBytes != 100<<20 {
		t.Errorf("DefaultLimits %+v", d)
	}
}

// FuzzRead: Read never panics, and what it accepts is numbered as the
// package promises. The seeds run with go test; go test -fuzz=FuzzRead
// explores beyond them.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"vegeta.csv", "k6.json", "k6.csv", "k6-seconds.csv"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(bytes.ReplaceAll(b, []byte(","), []byte(",,")))
	}
	load := csvOf(f, loadRecords(2, []float64{1, 1}, []float64{30, 60}))
	f.Add(load)
	f.Add(load[:len(load)*2/3])
	f.Add(bytes.ReplaceAll(load, []byte("ok"), []byte("not_sent")))
	f.Add([]byte(loadHeader11 + "\n0,0,99999999999.999999,1,1,1,ok,200,,,\n"))
	f.Add([]byte(`{"type":"Point","data":{"time":"2024-01-01T00:00:00Z","value":1e308,"tags":{"status":"200"}},"metric":"dropped_iterations"}`))
	f.Add([]byte("metric_name,timestamp,metric_value\nhttp_req_duration,1,1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ds, err := Read("fuzz", bytes.NewReader(b), Limits{MaxBytes: 1 << 20, MaxRecords: 10_000})
		if err != nil {
			return
		}
		if len(ds.Records) == 0 || len(ds.Windows) == 0 {
			t.Fatalf("accepted with %d records, %d windows", len(ds.Records), len(ds.Windows))
		}
		for i, r := range ds.Records {
			if r.Window < 0 || r.Window >= len(ds.Windows) || (i > 0 && r.Window < ds.Records[i-1].Window) {
				t.Fatalf("record %d in window %d of %d", i, r.Window, len(ds.Windows))
			}
		}
		for i, w := range ds.Windows {
			if !(w.Seconds > 0) || math.IsInf(w.Offered, 0) || math.IsNaN(w.Offered) {
				t.Fatalf("window %d: %+v", i, w)
			}
		}
	})
}
