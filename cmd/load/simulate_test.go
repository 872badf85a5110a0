package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/sim"
)

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "arrivals.txt")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readRecords(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// --simulate prints the real run's table, from the knob flags (or the
// environment, as cmd/lab reads it), with the simulator's rows: the same
// rows package sim gives for the same sweep.
func TestSimulateTableAndJSON(t *testing.T) {
	env := map[string]string{"WORKERS": "4", "SPIN_MS": "2", "LIMIT": "5", "TARGET": "http://127.0.0.1:1"}
	getenv := func(k string) string { return env[k] }
	out, errOut, err := runLoad(t, getenv, "--simulate", "--wait-ms", "38", "--rate", "50,150", "--seconds", "4", "--seed", "3")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "simulating WORKERS=4 SPIN_MS=2 WAIT_MS=38 LIMIT=5 CPUS=1") {
		t.Errorf("stderr %q, want it to say what is simulated", errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != strings.Join(columns(false), " ") {
		t.Fatalf("table:\n%s\nwant the real run's header and two rows", out)
	}
	for _, line := range lines[1:] {
		if len(line) != len(lines[0]) {
			t.Errorf("row %q is not as wide as the header", line)
		}
	}
	// The same sweep through package sim gives the same rows.
	m := sim.Model{Lab: labsvc.Config{Workers: 4, SpinMS: 2, WaitMS: 38, Limit: 5, CPUs: 1}}
	rep, err := loadrun.Sweep{Rates: []float64{50, 150}, Seconds: 4, Seed: 3, Driver: m}.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	jsonOut, _, err := runLoad(t, getenv, "--simulate", "--wait-ms", "38", "--rate", "50,150", "--seconds", "4", "--seed", "3", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for _, r := range rep.Rows() {
		if err := json.NewEncoder(&want).Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if jsonOut != want.String() {
		t.Errorf("--json rows:\n%s\npackage sim's:\n%s", jsonOut, want.String())
	}
	var last result.Row
	if err := json.Unmarshal([]byte(strings.Split(jsonOut, "\n")[1]), &last); err != nil {
		t.Fatal(err)
	}
	// 150 a second on 4 workers of 40 ms (100 a second at most) with LIMIT 5
	// refuses some, and the lab's counters are the simulated lab's.
	if last.Refused == 0 || last.Done != last.OK || last.Queued != 5 || last.Lost != 0 {
		t.Errorf("150/s row %+v: want refusals, done = ok, queued 5 (LIMIT), lost 0", last)
	}
}

// --simulate --policy runs the lab's own admission policy (package admit)
// in the simulated door: the rows are package sim's for the same knobs,
// and a quota of 6 on 4 workers of 40 ms at 150 a second refuses some
// and never lets more than 2 wait.
func TestSimulatePolicy(t *testing.T) {
	env := map[string]string{"WORKERS": "4", "POLICY": "inflight, quota=6", "TARGET": "http://127.0.0.1:1"}
	getenv := func(k string) string { return env[k] }
	out, errOut, err := runLoad(t, getenv, "--simulate", "--wait-ms", "38", "--rate", "150", "--seconds", "4", "--json")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "POLICY=inflight,quota=6") {
		t.Errorf("stderr %q, want it to name the policy simulated", errOut)
	}
	m := sim.Model{Lab: labsvc.Config{Workers: 4, SpinMS: 2, WaitMS: 38, CPUs: 1, Policy: "inflight,quota=6"}}
	rep, err := loadrun.Sweep{Rates: []float64{150}, Seconds: 4, Seed: 1, Driver: m}.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.NewEncoder(&want).Encode(rep.Rows()[0]); err != nil {
		t.Fatal(err)
	}
	if out != want.String() {
		t.Errorf("--json row:\n%s\npackage sim's:\n%s", out, want.String())
	}
	var row result.Row
	if err := json.Unmarshal([]byte(out), &row); err != nil {
		t.Fatal(err)
	}
	if row.Refused == 0 || row.Queued > 2 || row.Done != row.OK || row.Lost != 0 {
		t.Errorf("row %+v: want refusals, at most 2 queued (6 inside, 4 in service), done = ok, lost 0", row)
	}
}

// With one worker and fixed service, --simulate --arrivals gives every
// latency exactly: completion minus intended send, to the microsecond the
// records are written in.
func TestSimulateArrivalsExact(t *testing.T) {
	// One worker, 12 ms of waiting each.
	//   0        served 0–12:              latency 12,     queue wait 0
	//   0.004    waits to 12, served to 24: latency 20,    queue wait 8
	//   0.030001 finds the worker free (done at 24), served to 42.001: latency 12
	//   0.031    waits to 42.001, served to 54.001: latency 23.001, queue wait 11.001
	//   0.1      served 100–112:           latency 12
	// The last arrival is at 0.1 s, so the window lasts 1 s: offered 5.
	arrivals := writeFile(t, "0\n0.004\n0.030001\n0.031\n\n0.1\n")
	records := filepath.Join(t.TempDir(), "records.csv")
	out, errOut, err := runLoad(t, noenv, "--simulate", "--workers", "1", "--spin-ms", "0", "--wait-ms", "12", "--arrivals", arrivals, "--records", records)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	want := [][]string{
		// intended_ms, sent_ms, end_ms, latency_ms, outcome, status, queue_wait_ms, service_ms
		{"0.000", "0.000", "12.000", "12.000", "ok", "200", "0", "12"},
		{"4.000", "4.000", "24.000", "20.000", "ok", "200", "8", "12"},
		{"30.001", "30.001", "42.001", "12.000", "ok", "200", "0", "12"},
		{"31.000", "31.000", "54.001", "23.001", "ok", "200", "11.001", "12"},
		{"100.000", "100.000", "112.000", "12.000", "ok", "200", "0", "12"},
	}
	recs := readRecords(t, records)
	if len(recs) != len(want)+1 {
		t.Fatalf("%d records, want %d", len(recs)-1, len(want))
	}
	for i, w := range want {
		r := recs[i+1]
		got := []string{r[2], r[3], r[4], r[5], r[6], r[7], r[9], r[10]}
		if strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("record %d: %q, want %q", i, got, w)
		}
	}
	f := strings.Fields(strings.Split(out, "\n")[1])
	if f[0] != "5" || f[col("ok")] != "5" || f[col("done")] != "5" || f[col("queued")] != "1" || f[col("max_ms")] != "23.0" {
		t.Errorf("row %q: want offered 5 (5 arrivals in 1 s), 5 ok, done 5, queued 1, max 23.0", f)
	}
}

// --simulate --at makes the change in the simulated lab at its time: a
// request served before it takes the old WAIT_MS, one after it the new;
// stderr says when the simulated lab took it, as for a real lab.
func TestSimulateAt(t *testing.T) {
	arrivals := writeFile(t, "0\n0.6\n")
	records := filepath.Join(t.TempDir(), "records.csv")
	_, errOut, err := runLoad(t, noenv, "--simulate", "--workers", "1", "--spin-ms", "0", "--wait-ms", "100", "--arrivals", arrivals, "--seconds", "1",
		"--at", "500ms:WAIT_MS=300", "--records", records)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "load: window 1, 0.500 s in: the simulated lab took 500ms:WAIT_MS=300\n") {
		t.Errorf("stderr %q: want a line saying the simulated lab took the change at 0.5 s", errOut)
	}
	recs := readRecords(t, records)
	if len(recs) != 3 || recs[1][4] != "100.000" || recs[1][10] != "100" || recs[2][4] != "900.000" || recs[2][10] != "300" {
		t.Errorf("records %q: want the first served 0–100 ms (WAIT_MS 100), the second 600–900 ms (300)", recs[1:])
	}
}

// --arrivals feeds a real run too: the requests leave at the file's times.
func TestArrivalsRealRun(t *testing.T) {
	l := labtest.Serve(t, labsvc.Config{Workers: 2, SpinMS: 0, WaitMS: 2, CPUs: 1})
	arrivals := writeFile(t, "0.01\n0.05\n0.05\n0.2\n")
	records := filepath.Join(t.TempDir(), "records.csv")
	out, errOut, err := runLoad(t, noenv, "--target", l.Target, "--control", l.Control, "--arrivals", arrivals, "--seconds", "0.5", "--records", records)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	recs := readRecords(t, records)
	intended := []string{"10.000", "50.000", "50.000", "200.000"}
	if len(recs) != len(intended)+1 {
		t.Fatalf("%d records, want %d", len(recs)-1, len(intended))
	}
	for i, w := range intended {
		if recs[i+1][2] != w || recs[i+1][6] != "ok" {
			t.Errorf("record %d: intended %s, outcome %s; want %s and ok", i, recs[i+1][2], recs[i+1][6], w)
		}
	}
	if f := strings.Fields(strings.Split(out, "\n")[1]); f[0] != "8" || f[col("done")] != "4" {
		t.Errorf("row %q: want offered 8 (4 arrivals in 0.5 s) and done 4", f)
	}
}

// Mistakes in an arrivals file, the knobs or the flags that go with
// --simulate: exit status 2, one line saying what is wrong, nothing sent.
func TestSimulateBadInput(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		// An empty file.
		{"empty arrivals", nil, []string{"--simulate", "--arrivals", "EMPTY"}, "arrivals.txt: no arrival times: want one time in seconds"},
		// Out of order, naming the line.
		{"unsorted arrivals", nil, []string{"--arrivals", "UNSORTED"}, "arrivals.txt: line 3: 0.2 s comes before line 2's 0.5 s"},
		// A bad line, named.
		{"bad line", nil, []string{"--simulate", "--arrivals", "BAD"}, `arrivals.txt: line 2: "0,5" is not a time`},
		// No such file.
		{"missing file", nil, []string{"--arrivals", "/nonexistent/arrivals.txt"}, `--arrivals "/nonexistent/arrivals.txt" cannot be read: no such file or directory`},
		// A trace and rates at once.
		{"arrivals and rate", nil, []string{"--arrivals", "GOOD", "--rate", "40"}, "--arrivals and --rate exclude each other"},
		// A trace longer than the window it is given.
		{"arrivals past the window", nil, []string{"--simulate", "--arrivals", "GOOD", "--seconds", "0.5"}, "arrival 3 at 700ms is not before the window's end at 0.5 s"},
		// A trace longer than any window may be.
		{"arrivals too long", nil, []string{"--simulate", "--arrivals", "LONG"}, "arrivals.txt: the last time, 600.5 s, is past the longest window there may be (600 s)"},
		// A simulation has no service to read metrics or headers from.
		{"metrics simulated", nil, []string{"--simulate", "--metrics", "http://127.0.0.1:1/metrics", "--gauge", "a"}, "--metrics reads a real service: --simulate sends nothing"},
		{"queue header simulated", nil, []string{"--simulate", "--queue-header", "Queue-Ms"}, "--queue-header reads a real service: --simulate sends nothing"},
		// A knob flag without --simulate would be silently ignored by a real lab.
		{"knob without simulate", nil, []string{"--workers", "4", "--rate", "10"}, "--workers sets the simulated lab's knobs: add --simulate"},
		// The knobs are checked as cmd/lab checks them, from the environment too.
		{"bad knob env", map[string]string{"WORKERS": "0"}, []string{"--simulate", "--rate", "10"}, "WORKERS: 0 is not allowed: want 1 to 1024"},
		{"bad knob flag", nil, []string{"--simulate", "--stall-ms", "-4", "--rate", "10"}, "STALL_MS: -4 is not allowed: want 0 to 10000"},
		// The knob flags carry ACCEPT and BACKLOG too, and the simulator says it does not model them.
		{"accept without simulate", nil, []string{"--accept", "workers", "--rate", "10"}, "--accept sets the simulated lab's knobs: add --simulate"},
		{"bad accept", map[string]string{"ACCEPT": "kernel"}, []string{"--simulate", "--rate", "10"}, "ACCEPT: kernel is not allowed: want door or workers"},
		{"workers accept", nil, []string{"--simulate", "--accept", "workers", "--backlog", "16", "--rate", "10"}, "ACCEPT=workers BACKLOG=16 is not simulated"},
		// The admission policy is checked as cmd/lab checks it: an unknown
		// name or a parameter out of range is named with what is allowed.
		{"unknown policy", nil, []string{"--simulate", "--policy", "lifo", "--rate", "10"}, "POLICY: lifo is not allowed: want queue, inflight, aimd, gradient or sojourn"},
		{"policy parameter", map[string]string{"POLICY": "aimd,backoff=2"}, []string{"--simulate", "--rate", "10"}, "POLICY: aimd,backoff=2 is not allowed: want backoff from 0.5 to 0.99"},
		{"policy with limit", nil, []string{"--simulate", "--policy", "inflight,quota=6", "--limit", "3", "--rate", "10"}, "LIMIT: 3 is not allowed: want 0 with POLICY=inflight"},
		{"policy without simulate", nil, []string{"--policy", "inflight,quota=6", "--rate", "10"}, "--policy sets the simulated lab's knobs: add --simulate"},
		// A real lab's flags make no sense in a simulation.
		{"target with simulate", nil, []string{"--simulate", "--target", "http://127.0.0.1:1"}, "--target is for a real lab"},
		// The rate cap is the real run's.
		{"rate above cap", nil, []string{"--simulate", "--rate", "12000"}, "at most 10000 a second"},
		// The timeout cap is the real run's.
		{"long timeout", nil, []string{"--simulate", "--rate", "10", "--timeout", "2m"}, "timeout 2m0s is not allowed: want more than 0 and at most 1m0s"},
		// Knob changes are checked against the simulated lab's knobs as a
		// real lab's are against its own, with the same words.
		{"simulated fixed knob", nil, []string{"--simulate", "--rate", "10", "--at", "500ms:CPUS=2"}, "--at: knob change 500ms:CPUS=2: CPUS cannot change while the lab runs"},
		{"simulated bad value", nil, []string{"--simulate", "--rate", "10", "--at", "500ms:WAIT_MS=99999"}, "--at: knob change 500ms:WAIT_MS=99999: 99999 is not allowed: want 0 to 10000"},
		{"simulated change past the window", nil, []string{"--simulate", "--rate", "10", "--seconds", "1", "--at", "1s:WAIT_MS=5"}, "knob change 1s:WAIT_MS=5 is past the end of the window"},
		{"simulated backlog", nil, []string{"--simulate", "--rate", "10", "--at", "500ms:BACKLOG=16"}, "--at: knob change 500ms:BACKLOG=16 is not simulated"},
		// An unknown random source.
		{"bad rng", nil, []string{"--simulate", "--rng", "lcg"}, `--rng: random source "lcg" is not known: want pcg or python`},
	}
	files := map[string]string{"EMPTY": "\n\n", "UNSORTED": "0.1\n0.5\n0.2\n", "BAD": "0.1\n0,5\n", "GOOD": "0.1\n0.2\n0.7\n", "LONG": "1\n600.5\n"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string(nil), c.args...)
			for i, a := range args {
				if text, ok := files[a]; ok {
					args[i] = writeFile(t, text)
				}
			}
			target, conns := counter(t)
			env := map[string]string{"TARGET": target, "CONTROL": "none"}
			for k, v := range c.env {
				env[k] = v
			}
			out, _, err := runLoad(t, func(k string) string { return env[k] }, args...)
			checkRefused(t, err, out, conns.Load(), c.want)
		})
	}
}

// --rng python draws CPython's arrivals: the records' intended times are
// those of random.seed(21) and random.expovariate(80).
func TestSimulatePythonArrivals(t *testing.T) {
	records := filepath.Join(t.TempDir(), "records.csv")
	if _, errOut, err := runLoad(t, noenv, "--simulate", "--rng", "python", "--rate", "80", "--seconds", "1", "--seed", "21", "--records", records); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	recs := readRecords(t, records)
	if len(recs) < 50 {
		t.Fatalf("%d records in 1 s at 80 a second: too few", len(recs)-1)
	}
	py := loadrun.NewPyRandom(21)
	at := 0.0
	for i, r := range recs[1:] {
		at += py.Expovariate(80)
		ns := int64(math.Round(at * 1e9)) // the schedule's nanoseconds, written as whole microseconds
		if want := strconv.FormatFloat(float64(ns/1000)/1000, 'f', 3, 64); r[2] != want {
			t.Fatalf("record %d intended %s ms, CPython's expovariate gaps put it at %s", i, r[2], want)
		}
	}
}

// --max-inflight with --simulate: the simulated client has 2 workers, so
// against a lab of one worker taking 200 ms at least, an arrival every
// 20 ms mostly finds both busy: those count in client_busy, never in
// not_sent, and sent + client_busy = arrivals with lost 0.
func TestSimulateMaxInFlight(t *testing.T) {
	out, errOut, err := runLoad(t, noenv, "--simulate", "--workers", "1", "--spin-ms", "0", "--wait-ms", "200", "--rate", "50", "--seconds", "1",
		"--schedule", "uniform", "--max-inflight", "2", "--json")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	var r result.Row
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	// Two out at once, each at least 200 ms (the second waits for the
	// first): at most 2 sent in the first 200 ms and one per 200 ms after.
	if r.Lost != 0 || r.NotSent != 0 || r.Sent+r.ClientBusy != r.Arrivals || r.Arrivals != 50 || r.Sent > 7 || r.Sent < 4 {
		t.Errorf("arrivals %d, sent %d, client_busy %d, not_sent %d, lost %d: want 50 = sent (4 to 7) + client_busy, not_sent and lost 0",
			r.Arrivals, r.Sent, r.ClientBusy, r.NotSent, r.Lost)
	}
}

// --fanout and --hedge reach the sweep: simulated, each arrival's
// sub-requests and every copy are records (with their sub and copy
// columns), and the JSON row counts them.
func TestSimulateFanoutAndHedge(t *testing.T) {
	getenv := func(string) string { return "" }
	recs := filepath.Join(t.TempDir(), "records.csv")
	out, errOut, err := runLoad(t, getenv, "--simulate", "--workers", "200", "--wait-ms", "20", "--dist", "bimodal,p=0.05,x=20",
		"--rate", "20", "--seconds", "5", "--fanout", "10", "--hedge", "delay_ms=30", "--json", "--records", recs)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	var row result.Row
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &row); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := readRecords(t, recs)
	copies := 0
	sub := slices.Index(lines[0], "sub")
	for _, l := range lines[1:] {
		if l[sub+1] != "0" {
			copies++
		}
	}
	if row.SubRequests != 10*row.Sent || row.Hedges == 0 || row.Hedges != copies || len(lines)-1 != row.Attempts || row.OK != row.Arrivals {
		t.Errorf("row %+v, %d records, %d copies: want 10 sub-requests a request, every copy a record and a hedge", row, len(lines)-1, copies)
	}
}
