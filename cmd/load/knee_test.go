package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"capacitylab/evidence"
	"capacitylab/result"
)

// poolService is a small HTTP service that is not our lab: a fixed pool
// of workers, each sleeping sleep per request, and a bounded queue in
// front of them (a request that finds it full is refused, 503). Each
// answer says how long it queued in the Queue-Ms header, and /metrics
// shows, in Prometheus's text format, the requests in it (waiting or in
// service) as a gauge per pool label, and a counter of requests served.
type poolService struct {
	url     string
	workers int
	sleep   time.Duration

	slots    chan struct{}
	inside   atomic.Int64 // waiting or in service
	queueCap int64
	served   atomic.Int64
	requests atomic.Int64 // requests to / (served or refused)

	mu     sync.Mutex
	svcSum time.Duration    // time in service, summed
	waits  map[float64]bool // every Queue-Ms value sent
}

func startPool(t *testing.T, workers int, sleep time.Duration, queueCap int) *poolService {
	t.Helper()
	p := &poolService{workers: workers, sleep: sleep, slots: make(chan struct{}, workers), queueCap: int64(queueCap), waits: map[float64]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		if p.inside.Add(1) > int64(p.workers)+p.queueCap {
			p.inside.Add(-1)
			http.Error(w, "full", http.StatusServiceUnavailable)
			return
		}
		defer p.inside.Add(-1)
		arrived := time.Now()
		p.slots <- struct{}{}
		began := time.Now()
		time.Sleep(p.sleep)
		took := time.Since(began)
		<-p.slots
		wait := strconv.FormatFloat(float64(began.Sub(arrived).Microseconds())/1000, 'f', 3, 64)
		p.mu.Lock()
		p.svcSum += took
		v, _ := strconv.ParseFloat(wait, 64)
		p.waits[v] = true
		p.mu.Unlock()
		p.served.Add(1)
		w.Header().Set("Queue-Ms", wait)
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# HELP pool_inflight Requests waiting or in service.\n# TYPE pool_inflight gauge\n")
		fmt.Fprintf(w, "pool_inflight{pool=\"main\"} %d\npool_inflight{pool=\"spare\"} 1\n", p.inside.Load())
		fmt.Fprintf(w, "# HELP pool_requests_total Requests served.\n# TYPE pool_requests_total counter\npool_requests_total %d\n", p.served.Load())
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	p.url = "http://" + ln.Addr().String()
	return p
}

// ceiling is workers ÷ the mean time a request was in service: what the
// pool can answer a second, from its own measure of its sleeps.
func (p *poolService) ceiling() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.served.Load()
	if n == 0 {
		return 0
	}
	return float64(p.workers) / (p.svcSum.Seconds() / float64(n))
}

// kneeOutput splits --json output into the rows and the summary.
func kneeOutput(t *testing.T, out string) ([]result.Row, kneeSummary) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var s struct {
		Summary *kneeSummary `json:"summary"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil || s.Summary == nil {
		t.Fatalf("last line %q is not the summary: %v", lines[len(lines)-1], err)
	}
	return jsonRows(t, strings.Join(lines[:len(lines)-1], "\n")), *s.Summary
}

// The knee search against a pool of 4 workers sleeping 10 ms each (a
// ceiling near 400/s): the rates are FROM × 1.25^k; the first saturated
// window (evidence.Saturated) is within one step of the pool's ceiling,
// one more window a step higher confirms it and the search stops; the
// most ok/s is within 10% of the ceiling; a recovery window at FROM
// follows, marked; the summary names all of it, every record is in the
// report's CSV and its JSON has every row.
func TestKneeFindsPoolKnee(t *testing.T) {
	pool := startPool(t, 4, 10*time.Millisecond, 64)
	name := filepath.Join(t.TempDir(), "knee")
	out, errOut, err := runLoad(t, noenv, "--control", "none", "--target", pool.url, "--knee", "200:1000", "--seconds", "1.5",
		"--max-errors", "1", "--json", "--report", name)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	t.Logf("the pool's ceiling %.1f/s; load printed:\n%s", pool.ceiling(), out)
	rows, sum := kneeOutput(t, out)
	search := rows[:len(rows)-1]
	for i, r := range search {
		want := result.Round(200*math.Pow(1.25, float64(i)), 100)
		if r.Offered != want || r.Window != i || r.Lost != 0 {
			t.Errorf("window %d: offered %v, window %d, lost %d; want offered %v, window %d, lost 0", i, r.Offered, r.Window, r.Lost, want, i)
		}
	}
	// The knee is the first saturated window, and the search ran exactly
	// one window past it.
	knee := -1
	for i := range search {
		if sat, _ := evidence.Saturated(search, i); sat {
			knee = i
			break
		}
	}
	if knee < 0 || sum.Knee == nil || sum.Knee.Window != knee || len(search) != knee+2 {
		t.Fatalf("rows %+v\nsummary %+v: want the search to end one window past its first saturated one", search, sum)
	}
	rec := rows[len(rows)-1]
	if rec.Offered != 200 || rec.Window != len(search) || !strings.Contains(rec.Note, "recovery: 200/s again") {
		t.Errorf("last row %+v: want the recovery window at 200/s, marked", rec)
	}
	if sum.Recovery == nil || !sum.Recovered || sum.Windows != len(rows) || sum.Lost != 0 {
		t.Errorf("summary %+v: want the recovery window recovered, every window counted, lost 0", sum)
	}
	if sum.BeforeKnee == nil || sum.BeforeKnee.Window != knee-1 || sum.BeforeKnee.N != search[knee-1].N {
		t.Errorf("before the knee %+v, want window %d's percentiles and n", sum.BeforeKnee, knee-1)
	}

	// The report: every arrival of every window in NAME.csv, the rows
	// and why it stopped in NAME.json.
	recs := readRecords(t, name+".csv")
	if !slices.Equal(recs[0], result.CSVHeader()) {
		t.Fatalf("report CSV header %v", recs[0])
	}
	perWindow := map[string]int{}
	for _, r := range recs[1:] {
		perWindow[r[0]]++
	}
	for _, r := range rows {
		if got := perWindow[strconv.Itoa(r.Window)]; got != r.Arrivals {
			t.Errorf("window %d: %d records, want its %d arrivals", r.Window, got, r.Arrivals)
		}
	}
	var d evidence.ReportData
	b, err := os.ReadFile(name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.Tool != "capacitylab load" || d.Version != 1 || len(d.Rows) != len(rows) || d.Stopped != sum.Stopped || d.Loop != "open" || d.Target != pool.url {
		t.Errorf("report data %+v: want the tool, version 1, every row and why it stopped", d)
	}
	// NAME.html is the analysis of those two files: the knee it names is
	// the search's.
	page, err := os.ReadFile(name + ".html")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name + ".csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ds, err := evidence.Read("r.csv", f, evidence.DefaultLimits())
	if err == nil {
		err = ds.Attach(&d)
	}
	if err != nil {
		t.Fatal(err)
	}
	if a := evidence.Analyze(ds, evidence.Options{}); a.Knee != knee || !strings.Contains(string(page), html.EscapeString(a.KneeWhy)) {
		t.Errorf("report: knee %d (%q), search's %d; want the report to name it", a.Knee, a.KneeWhy, knee)
	}

	// The figures need a generator that sent on time: a window of 1.5 s
	// a few milliseconds late throughout is not the rate asked for.
	late := slices.MaxFunc(search, func(a, b result.Row) int { return cmp.Compare(a.SendLagP99MS, b.SendLagP99MS) })
	if late.SendLagP99MS > 5 {
		t.Skipf("the generator sent late (send lag p99 %.1f ms in window %d): the machine is too busy to check where the knee and the ceiling are", late.SendLagP99MS, late.Window)
	}
	if !strings.Contains(sum.Stopped, "confirmed it") {
		t.Errorf("stopped %q: want the step past the knee to confirm it", sum.Stopped)
	}
	ceiling := pool.ceiling()
	if r := search[knee].Offered; r/1.25 > ceiling || r*1.25 < ceiling {
		t.Errorf("knee at %v/s, more than one step from the pool's ceiling %.1f/s", r, ceiling)
	}
	if sum.Ceiling == nil || math.Abs(sum.Ceiling.OKPerSec-ceiling) > 0.1*ceiling {
		t.Errorf("ceiling %+v, want within 10%% of the pool's %.1f/s", sum.Ceiling, ceiling)
	}
}

// Each stop rule, against the pool: the search ends right after the first
// window that breaks the rule (and no window before it does), says which
// rule in its summary and its report, and keeps the budget.
func TestKneeStopRules(t *testing.T) {
	notOK := func(r result.Row) float64 { return float64(r.Refused+r.Gaveup+r.Error) / float64(max(r.Sent, 1)) }
	cases := []struct {
		name     string
		queue    int
		args     []string
		broke    func(result.Row) bool // the rule, on one window
		stopped  string
		recovery bool
	}{
		{"max-p99", 64, []string{"--knee", "200:1000", "--max-p99", "30ms", "--max-errors", "1"},
			func(r result.Row) bool { return r.P99MS > 30 }, "passed --max-p99 30ms", true},
		{"max-errors", 2, []string{"--knee", "200:1000", "--max-errors", "0.02"},
			func(r result.Row) bool { return notOK(r) > 0.02 }, "past --max-errors 0.02", true},
		// Each window counts 1 s + 2 s (--timeout) + 0.5 s: the fifth
		// would end past 9 s.
		{"budget", 64, []string{"--knee", "50:1000", "--step", "1.1", "--budget", "9s", "--recovery=false"},
			func(result.Row) bool { return false }, "would not fit the budget", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pool := startPool(t, 4, 10*time.Millisecond, c.queue)
			name := filepath.Join(t.TempDir(), "r")
			began := time.Now()
			args := append([]string{"--control", "none", "--target", pool.url, "--seconds", "1", "--json", "--report", name}, c.args...)
			out, errOut, err := runLoad(t, noenv, args...)
			took := time.Since(began)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, errOut)
			}
			rows, sum := kneeOutput(t, out)
			search := rows
			if c.recovery {
				search = rows[:len(rows)-1]
				if last := rows[len(rows)-1]; !strings.Contains(last.Note, "recovery:") || sum.Recovery == nil {
					t.Errorf("last row %+v: want the recovery window", last)
				}
			} else if sum.Recovery != nil || strings.Contains(rows[len(rows)-1].Note, "recovery") {
				t.Errorf("--recovery=false, yet a recovery window ran: %+v", rows[len(rows)-1])
			}
			if !strings.Contains(sum.Stopped, c.stopped) {
				t.Fatalf("stopped %q, want it to say %q\n%s", sum.Stopped, c.stopped, out)
			}
			for i, r := range search {
				if sat, _ := evidence.Saturated(search, i); sat && i < len(search)-2 {
					t.Errorf("window %d saturated, yet the search ran past the window confirming it", i)
				}
				if last := i == len(search)-1; c.broke(r) != last && (c.name != "budget") {
					t.Errorf("window %d (%+v): rule broken %v, want broken only in the last window of the search", i, r, c.broke(r))
				}
			}
			if c.name == "budget" && (took > 9*time.Second || len(search) < 2) {
				t.Errorf("the search took %v in %d windows, want within the 9 s budget and more than one window", took, len(search))
			}
			b, err := os.ReadFile(name + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var d evidence.ReportData
			if err := json.Unmarshal(b, &d); err != nil || d.Stopped != sum.Stopped {
				t.Errorf("report's stopped %q (%v), want %q", d.Stopped, err, sum.Stopped)
			}
		})
	}
}

// --metrics with --gauge and --counter reads the pool's /metrics while
// each window runs: the gauge of one labelled series, the sum of all of
// them, and the counter's increase a second, which is the rate answered;
// the readings come beside each row (a metrics object in --json) and in
// the report's data. --queue-header puts the pool's Queue-Ms values into
// the records' queue_wait_ms.
func TestMetricsAndQueueHeader(t *testing.T) {
	pool := startPool(t, 4, 10*time.Millisecond, 64)
	name := filepath.Join(t.TempDir(), "m")
	records := filepath.Join(t.TempDir(), "records.csv")
	out, errOut, err := runLoad(t, noenv, "--control", "none", "--target", pool.url, "--rate", "100,200", "--seconds", "2",
		"--metrics", pool.url+"/metrics", "--gauge", `pool_inflight{pool="main"}`, "--gauge", "pool_inflight", "--counter", "pool_requests_total",
		"--queue-header", "Queue-Ms", "--json", "--report", name, "--records", records)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	type line struct {
		result.Row
		Metrics map[string]evidence.GaugeReading `json:"metrics"`
	}
	var lines []line
	for l := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var r line
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		lines = append(lines, r)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2 rows:\n%s", len(lines), out)
	}
	for _, l := range lines {
		main, all, served := l.Metrics[`pool_inflight{pool="main"}`], l.Metrics["pool_inflight"], l.Metrics["pool_requests_total"]
		// Readings once a second from a quarter second in, and one as
		// the window ends: at least two in 2 s, at most four.
		if main.Kind != "gauge" || main.N < 2 || main.N > 4 || all.N != main.N || served.Kind != "counter" {
			t.Errorf("window %d: readings %+v, want two gauges and a counter read 2 to 4 times", l.Window, l.Metrics)
		}
		// The spare series always shows 1: the sum is the main one's plus 1.
		if math.Abs(all.Mean-main.Mean-1) > 1e-9 || main.Max < main.Mean {
			t.Errorf("window %d: pool_inflight mean %v, the main series' %v: want the sum of both series", l.Window, all.Mean, main.Mean)
		}
		// In flight ≈ rate × time in the pool (10 ms and a little
		// queueing): well under the 4 workers, above nothing.
		if want := l.Offered * 0.0105; main.Mean > 4*want || main.Max > 68 {
			t.Errorf("window %d: pool_inflight{pool=\"main\"} mean %v max %v, want about %.1f", l.Window, main.Mean, main.Max, want)
		}
		if served.Mean < 0.8*l.OKPerSec || served.Mean > 1.25*l.OKPerSec {
			t.Errorf("window %d: pool_requests_total %v a second, want about the %v ok answers a second", l.Window, served.Mean, l.OKPerSec)
		}
	}
	b, err := os.ReadFile(name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var d evidence.ReportData
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Gauges) != 2 || d.Gauges[1].Window != 1 || d.Gauges[1].Readings["pool_requests_total"] != lines[1].Metrics["pool_requests_total"] || d.QueueHeader != "Queue-Ms" {
		t.Errorf("report data gauges %+v, queue header %q: want both windows' readings as printed, Queue-Ms", d.Gauges, d.QueueHeader)
	}
	// Every ok record carries a Queue-Ms value the pool sent.
	pool.mu.Lock()
	n, bad := 0, []string(nil)
	for _, r := range readRecords(t, records)[1:] {
		if r[6] != "ok" {
			continue
		}
		n++
		if v, err := strconv.ParseFloat(r[9], 64); err != nil || !pool.waits[v] {
			bad = r
		}
	}
	pool.mu.Unlock()
	if bad != nil {
		t.Errorf("record %v: queue_wait_ms %q is not a Queue-Ms value the pool sent", bad, bad[9])
	}
	if n == 0 {
		t.Error("no ok records")
	}

	// The table prints the readings on a line under each row.
	out, errOut, err = runLoad(t, noenv, "--control", "none", "--target", pool.url, "--rate", "100", "--seconds", "1",
		"--metrics", pool.url+"/metrics", "--gauge", `pool_inflight{pool="main"}`, "--counter", "pool_requests_total")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	ls := strings.Split(strings.TrimSpace(out), "\n")
	if len(ls) != 3 || !strings.HasPrefix(ls[2], `  metrics: pool_inflight{pool="main"} mean `) || !strings.Contains(ls[2], "; pool_requests_total ") {
		t.Errorf("table:\n%s\nwant a header, the row and its metrics line", out)
	}
	if f := strings.Fields(ls[1]); len(f) < 3 || f[1] != f[2] {
		t.Errorf("row %q: want every request sent answered ok", ls[1])
	}
	t.Logf("load printed:\n%s", out)
}

// Ctrl-C in a real load process, mid-window of a knee search: the process
// ends the window at once and exits (status 1, saying it was
// interrupted) with the summary printed for what it measured; the
// records file has every finished window and the cut one, whose arrivals
// after the interrupt are not_sent, nothing lost; the report's data has
// every row, and no recovery window ran.
func TestKneeInterrupt(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "load")
	if b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	pool := startPool(t, 4, 10*time.Millisecond, 64)
	dir := t.TempDir()
	records, report := filepath.Join(dir, "records.csv"), filepath.Join(dir, "r")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--control", "none", "--target", pool.url, "--knee", "50:400", "--seconds", "2",
		"--records", records, "--report", report)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The header and two rows: two windows have ended; the third starts
	// 0.5 s later and is interrupted 1 s into its 2 s.
	sc := bufio.NewScanner(stdout)
	var out []string
	for len(out) < 3 && sc.Scan() {
		out = append(out, sc.Text())
	}
	if len(out) < 3 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("load printed %q before ending; stderr %s", out, errOut.String())
	}
	time.Sleep(1500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	interrupted := time.Now()
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	err = cmd.Wait()
	if time.Since(interrupted) > 5*time.Second {
		t.Errorf("load took %v to end after SIGINT", time.Since(interrupted))
	}
	text := strings.Join(out, "\n")
	t.Logf("load printed:\n%s\nand on stderr:\n%s", text, errOut.String())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(errOut.String(), "load: interrupted after 3 windows; every request sent was accounted for") {
		t.Fatalf("exit %v, stderr %q: want status 1 saying it was interrupted after 3 windows\n%s", err, errOut.String(), text)
	}
	if len(out) < 4 || !strings.Contains(out[3], "cancelled before the window ended") {
		t.Fatalf("stdout:\n%s\nwant the cut window's row, noted", text)
	}
	for _, want := range []string{"knee search: 3 windows; stopped: interrupted", "ceiling: ", "lost 0"} {
		if !strings.Contains(text, want) {
			t.Errorf("stdout:\n%s\nwant the summary, with %q", text, want)
		}
	}
	if strings.Contains(text, "recovery") {
		t.Errorf("stdout:\n%s\nwant no recovery window after Ctrl-C", text)
	}
	// The records: windows 0 and 1 whole, window 2 cut: sent before the
	// interrupt, not_sent after it, nothing unfinished.
	recs := readRecords(t, records)
	byWindow := map[string]map[string]int{}
	for _, r := range recs[1:] {
		if byWindow[r[0]] == nil {
			byWindow[r[0]] = map[string]int{}
		}
		byWindow[r[0]][r[6]]++
	}
	if len(byWindow) != 3 || byWindow["0"]["not_sent"] != 0 || byWindow["1"]["not_sent"] != 0 || byWindow["2"]["not_sent"] == 0 || byWindow["2"]["ok"] == 0 {
		t.Errorf("records by window and outcome %v: want windows 0 and 1 whole, window 2 cut with its rest not_sent", byWindow)
	}
	for w, outcomes := range byWindow {
		if outcomes["unfinished"] != 0 {
			t.Errorf("window %s: %d records unfinished (lost)", w, outcomes["unfinished"])
		}
	}
	if rep := readRecords(t, report+".csv"); len(rep) != len(recs) {
		t.Errorf("report CSV has %d lines, --records %d: want the same records", len(rep), len(recs))
	}
	b, err := os.ReadFile(report + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var d evidence.ReportData
	if err := json.Unmarshal(b, &d); err != nil || len(d.Rows) != 3 || !strings.HasPrefix(d.Stopped, "interrupted") || d.Rows[2].Lost != 0 {
		t.Errorf("report data %+v (%v): want 3 rows, the last cut with lost 0, stopped: interrupted", d, err)
	}
	if page, err := os.ReadFile(report + ".html"); err != nil || !strings.Contains(string(page), "<html") {
		t.Errorf("report.html after the interrupt: %v; want the report of what was measured", err)
	}
}

// Each window of a knee search has the schedule a plain sweep has at its
// rate, so a simulated search's rows are the simulated sweep's through
// the same rates, exactly (the lab simulated, nothing sent); the recovery
// window repeats the first window's schedule, so its row is the first's.
func TestKneeSimulatedIsTheSweep(t *testing.T) {
	lab := []string{"--simulate", "--workers", "4", "--wait-ms", "10", "--seconds", "5", "--seed", "7", "--json"}
	out, _, err := runLoad(t, noenv, append(lab, "--knee", "100:1000")...)
	if err != nil {
		t.Fatal(err)
	}
	rows, sum := kneeOutput(t, out)
	search := rows[:len(rows)-1]
	rates := make([]string, len(search))
	for i, r := range search {
		rates[i] = strconv.FormatFloat(r.Offered, 'f', -1, 64)
	}
	out, _, err = runLoad(t, noenv, append(lab, "--rate", strings.Join(rates, ","))...)
	if err != nil {
		t.Fatal(err)
	}
	if sweep := jsonRows(t, out); !reflect.DeepEqual(sweep, search) {
		t.Errorf("the search's rows:\n%+v\nthe sweep's through the same rates:\n%+v", search, sweep)
	}
	rec := rows[len(rows)-1]
	first := rows[0]
	rec.Window, rec.Note = 0, ""
	if !reflect.DeepEqual(rec, first) || sum.Knee == nil {
		t.Errorf("recovery row %+v, first row %+v: want the same; summary %+v", rec, first, sum)
	}
}
