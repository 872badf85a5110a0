package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"capacitylab/affinity"
	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
	"capacitylab/loadrun"
	"capacitylab/result"
)

// childEnv makes this test binary a lab child (labsvc.ChildMain), for the
// tests that need a lab in a process of its own.
const childEnv = "LOAD_TEST_CHILD"

func TestMain(m *testing.M) {
	labsvc.ChildMain(childEnv)
	goleak.VerifyTestMain(m)
}

// A lab child on processors of its own (CPUS=1): load reads them from the
// control API and keeps every thread of its process off them while it
// runs, says so on stderr, and puts the affinity back when it ends.
func TestKeepsOffTheLab(t *testing.T) {
	before, err := affinity.ProcessCPUs(os.Getpid())
	if err != nil {
		t.Skipf("no processor affinity here: %v", err)
	}
	if len(before) < 2 {
		t.Skipf("this process may use only processor(s) %v: there is nothing to keep off", before)
	}
	cc, err := labsvc.SelfCommand(childEnv)
	if err != nil {
		t.Fatal(err)
	}
	child, err := labsvc.StartChild(t.Context(), cc, labsvc.Config{Workers: 2, SpinMS: 0, WaitMS: 5, CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer child.Stop()
	lab, err := affinity.ProcessCPUs(child.Pid())
	if err != nil {
		t.Fatal(err)
	}
	// Read where this process's threads may run while the window runs.
	during := make(chan map[int][]int, 1)
	go func() {
		time.Sleep(500 * time.Millisecond)
		threads, _ := affinity.ThreadCPUs(os.Getpid())
		during <- threads
	}()
	_, errOut, err := runLoad(t, noenv, "--target", child.Target(), "--control", child.Control(), "--rate", "50", "--seconds", "1")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	want := fmt.Sprintf("load: generator pinned to processor(s) %v, away from the lab's %v\n", without(before, lab), lab)
	if errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	for tid, cpus := range <-during {
		for _, c := range cpus {
			if slices.Contains(lab, c) {
				t.Errorf("during the run thread %d of load may use %v, which includes the lab's %v", tid, cpus, lab)
			}
		}
	}
	if after, _ := affinity.ProcessCPUs(os.Getpid()); !slices.Equal(after, before) {
		t.Errorf("after the run this process may use %v, want %v as before", after, before)
	}
}

// without returns xs less the members of ys.
func without(xs, ys []int) []int {
	var out []int
	for _, x := range xs {
		if !slices.Contains(ys, x) {
			out = append(out, x)
		}
	}
	return out
}

// counter is a TCP listener that counts connections and answers nothing.
func counter(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return "http://" + ln.Addr().String(), &n
}

func freeURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}

func noenv(string) string { return "" }

func runLoad(t *testing.T, getenv func(string) string, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := run(ctx, args, getenv, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func TestTable(t *testing.T) {
	l := labtest.Serve(t, labsvc.Config{Workers: 4, SpinMS: 0, WaitMS: 5, CPUs: 1})
	records := filepath.Join(t.TempDir(), "records.csv")
	out, errOut, err := runLoad(t, noenv, "--target", l.Target, "--control", l.Control, "--rate", "50,100", "--seconds", "1", "--records", records)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	// Progress is drawn only on a terminal; stderr carries one line saying
	// where the generator runs (here the lab is in this process, on every
	// processor it may use, so nothing is pinned).
	if !strings.HasPrefix(errOut, "load: generator not pinned: ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr is not a terminal, yet got %q; want only the line about pinning", errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want a header and 2 rows:\n%s", len(lines), out)
	}
	header := strings.Fields(lines[0])
	if !slices.Equal(header, columns(false)) {
		t.Errorf("header %q, want %q", header, columns(false))
	}
	// Aligned: every line ends each column at the same place.
	for _, line := range lines[1:] {
		if len(line) != len(lines[0]) {
			t.Errorf("row %q is not as wide as the header %q", line, lines[0])
		}
		f := strings.Fields(line)
		if f[col("lost")] != "0" || f[col("done")] != f[col("ok")] || f[col("not_sent")] != "0" {
			t.Errorf("row %q: want lost 0, done = ok, nothing unsent", line)
		}
	}
	if f := strings.Fields(lines[1]); f[0] != "50" {
		t.Errorf("first row offered %q, want 50", f[0])
	}

	// The records file has one line per arrival, in the documented columns.
	b, err := os.ReadFile(records)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs[0], result.CSVHeader()) {
		t.Errorf("records header %q", recs[0])
	}
	sent := atoi(t, strings.Fields(lines[1])[1]) + atoi(t, strings.Fields(lines[2])[1])
	if len(recs)-1 != sent {
		t.Errorf("%d records, want one per request sent (%d)", len(recs)-1, sent)
	}
}

func col(name string) int { return slices.Index(columns(false), name) }

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("%q is not a count", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func TestJSONAndEnv(t *testing.T) {
	l := labtest.Serve(t, labsvc.Config{Workers: 2, SpinMS: 0, WaitMS: 5, CPUs: 1})
	env := map[string]string{"TARGET": l.Target, "CONTROL": l.Control}
	out, _, err := runLoad(t, func(k string) string { return env[k] }, "--rate", "40", "--seconds", "0.5", "--json")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	n := 0
	for sc.Scan() {
		n++
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		for _, c := range columns(false) {
			if _, ok := m[c]; !ok {
				t.Errorf("JSON row lacks %q: %s", c, sc.Text())
			}
		}
		if m["offered"] != 40.0 || m["lost"] != 0.0 {
			t.Errorf("row %s: want offered 40, lost 0", sc.Text())
		}
	}
	if n != 1 {
		t.Errorf("%d JSON lines, want 1", n)
	}
}

// --target and --control with two labs each and --fanout 4: each lab
// serves half of the sub-requests (their own /stats say so) and the row's
// done is both labs' together.
func TestSplitAcrossTwoLabs(t *testing.T) {
	a := labtest.Serve(t, labsvc.Config{Workers: 8, SpinMS: 0, WaitMS: 5, CPUs: 1})
	b := labtest.Serve(t, labsvc.Config{Workers: 8, SpinMS: 0, WaitMS: 5, CPUs: 1})
	out, _, err := runLoad(t, noenv, "--target", a.Target+","+b.Target, "--control", a.Control+","+b.Control,
		"--rate", "20", "--seconds", "1", "--fanout", "4", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var row result.Row
	if err := json.Unmarshal([]byte(out), &row); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if row.Lost != 0 || row.SubRequests != 4*row.Sent || row.Sent == 0 || row.Done != row.SubRequests {
		t.Fatalf("row %+v: want lost 0, sub_requests 4 × sent, done all of them (both labs')", row)
	}
	for _, l := range []labtest.Lab{a, b} {
		c, err := loadrun.NewControl(l.Control, nil)
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if int(st.Done) != row.SubRequests/2 {
			t.Errorf("the lab at %s served %d: want half of the %d sub-requests", l.Target, st.Done, row.SubRequests)
		}
	}
}

func TestClosedTable(t *testing.T) {
	l := labtest.Serve(t, labsvc.Config{Workers: 2, SpinMS: 0, WaitMS: 5, CPUs: 1})
	out, _, err := runLoad(t, noenv, "--target", l.Target, "--control", l.Control, "--closed", "1,2", "--seconds", "0.5")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 || strings.Fields(lines[0])[0] != "clients" || strings.Fields(lines[2])[0] != "2" {
		t.Errorf("closed-loop table:\n%s\nwant a clients column and rows for 1 and 2 clients", out)
	}
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name  string
		cfg   labsvc.Config
		knobs string
		binds string
	}{
		// The lessons' first lab: one worker, 20 ms a request; workers bind near 50/s.
		{"one worker", labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1},
			"1 worker, spin 2 ms, wait 18 ms, limit off, cpus 1", "workers"},
		// Sixteen workers on one CPU: 800/s of workers, under 500/s of
		// processor (2 ms of spin plus the lab's own work per request).
		{"processor binds", labsvc.Config{Workers: 16, SpinMS: 2, WaitMS: 18, Limit: 10, CPUs: 1},
			"16 workers, spin 2 ms, wait 18 ms, limit 10, cpus 1", "processors"},
		// No spin: the lab's own work per request is still processor time,
		// so there is a processor ceiling, far above 500/s; three workers
		// of 10 ms do 300/s and bind.
		{"no spin", labsvc.Config{Workers: 3, SpinMS: 0, WaitMS: 10, CPUs: 2},
			"3 workers, spin 0 ms, wait 10 ms, limit off, cpus 2", "workers"},
		// No spin and no wait: the workers are nearly free, and what binds
		// is the processor time the lab spends on each request.
		{"no work at all", labsvc.Config{Workers: 64, SpinMS: 0, WaitMS: 0, CPUs: 1},
			"64 workers, spin 0 ms, wait 0 ms, limit off, cpus 1", "processors"},
	}
	num := `([0-9][0-9.,e+-]*)`
	atRest := regexp.MustCompile(`^at rest \(n=20 sequential requests\): service time ` + num + ` ms \(median; set ` + num + ` ms(, [+-][0-9.]+%[^)]*)?\), processor time ` + num +
		` ms a request \(mean; spin ` + num + ` \+ the lab's own ` + num + `\), latency ` + num + ` ms \(median\)$`)
	ceilings := regexp.MustCompile(`^ceilings: workers ÷ service time = (\d+) ÷ ` + num + ` ms = ` + num + `/s; cpus ÷ processor time = (\d+) ÷ ` + num +
		` ms = ` + num + `/s; the (workers|processors) bind at ` + num + `/s$`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := labtest.Serve(t, c.cfg)
			out, _, err := runLoad(t, noenv, "--target", l.Target, "--control", l.Control, "--check")
			if err != nil {
				t.Fatalf("check: %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			if len(lines) != 4 {
				t.Fatalf("got %d lines, want 4:\n%s", len(lines), out)
			}
			if !strings.HasPrefix(lines[0], "service up at "+l.Target) {
				t.Errorf("line 1 %q", lines[0])
			}
			if lines[1] != c.knobs {
				t.Errorf("line 2 %q, want %q", lines[1], c.knobs)
			}
			m := atRest.FindStringSubmatch(lines[2])
			if m == nil {
				t.Fatalf("line 3 %q does not match %v", lines[2], atRest)
			}
			svc, set, cpu, spin, own := parseNum(t, m[1]), parseNum(t, m[2]), parseNum(t, m[4]), parseNum(t, m[5]), parseNum(t, m[6])
			if set != float64(c.cfg.SpinMS+c.cfg.WaitMS) || spin != float64(c.cfg.SpinMS) {
				t.Errorf("line 3 %q: set %v ms and spin %v ms, want %d and %d", lines[2], set, spin, c.cfg.SpinMS+c.cfg.WaitMS, c.cfg.SpinMS)
			}
			if svc < set || cpu <= 0 || own <= 0 {
				t.Errorf("line 3 %q: want a service time of at least the %v ms set and processor time of the lab's own", lines[2], set)
			}
			// The processor time is the spin plus the lab's own work, as printed.
			if math.Abs(spin+own-cpu) > 0.0011*cpu+0.0006 {
				t.Errorf("line 3 %q: %v + %v is not %v", lines[2], spin, own, cpu)
			}
			m = ceilings.FindStringSubmatch(lines[3])
			if m == nil {
				t.Fatalf("line 4 %q does not match %v", lines[3], ceilings)
			}
			w, ws, wc := parseNum(t, m[1]), parseNum(t, m[2]), parseNum(t, m[3])
			p, pt, pc := parseNum(t, m[4]), parseNum(t, m[5]), parseNum(t, m[6])
			binds, at := m[7], parseNum(t, m[8])
			// Every ceiling follows from the figures printed beside it
			// (to the four significant digits they are printed with), and
			// from the figures of line 3.
			follows := func(what string, n, per, ceiling float64) {
				if want := n / per * 1000; math.Abs(ceiling-want) > 0.005*want {
					t.Errorf("line 4 %q: %s %v ÷ %v ms = %v/s, want %.4g/s", lines[3], what, n, per, ceiling, want)
				}
			}
			follows("workers", w, ws, wc)
			follows("cpus", p, pt, pc)
			if w != float64(c.cfg.Workers) || p != float64(c.cfg.CPUs) || ws != svc || pt != cpu {
				t.Errorf("line 4 %q: want %d workers ÷ the %v ms and %d cpus ÷ the %v ms of line 3", lines[3], c.cfg.Workers, svc, c.cfg.CPUs, cpu)
			}
			if binds != c.binds || at != min(wc, pc) {
				t.Errorf("line 4 %q: want the %s to bind, at the lower ceiling %v/s", lines[3], c.binds, min(wc, pc))
			}
		})
	}
}

// parseNum reads a number as --check prints it (with thousands commas).
func parseNum(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return v
}

func TestCheckServiceDown(t *testing.T) {
	out, _, err := runLoad(t, noenv, "--target", freeURL(t), "--control", freeURL(t), "--check")
	if err == nil || exitStatus(err) != 1 {
		t.Fatalf("err = %v (status %d), want exit 1", err, exitStatus(err))
	}
	if !strings.HasPrefix(out, "service NOT up") || strings.Count(out, "\n") != 1 {
		t.Errorf("output %q, want one line saying the service is not up", out)
	}
}

// checkRefused fails unless a run was bad input: exit status 2, one line
// containing want, nothing printed and nothing sent.
func checkRefused(t *testing.T, err error, stdout string, conns int64, want string) {
	t.Helper()
	if err == nil || exitStatus(err) != 2 {
		t.Fatalf("err = %v, want exit status 2", err)
	}
	if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("message %q, want one line containing %q", err, want)
	}
	if stdout != "" || conns != 0 {
		t.Errorf("stdout %q and %d connections; want nothing sent", stdout, conns)
	}
}

func TestBadInput(t *testing.T) {
	l := labtest.Serve(t, labsvc.Config{Workers: 1, SpinMS: 0, WaitMS: 1, CPUs: 1})
	pool := startPool(t, 1, time.Millisecond, 0) // its /metrics, for --metrics
	cases := []struct {
		name string
		args []string
		want string
	}{
		// Rates must be numbers.
		{"unparsable rate", []string{"--rate", "40,x"}, `"x" is not a number`},
		// Zero arrivals a second is no load.
		{"zero rate", []string{"--rate", "0"}, "0 is not allowed"},
		// The generator's cap protects the machine.
		{"rate above cap", []string{"--rate", "40,12000"}, "at most 10000 a second"},
		// A window needs a length.
		{"zero seconds", []string{"--seconds", "0"}, "--seconds 0 is not allowed"},
		// Negative lengths too.
		{"negative seconds", []string{"--seconds", "-3"}, "--seconds -3 is not allowed"},
		// Only two arrival processes exist.
		{"unknown schedule", []string{"--schedule", "bursty"}, `schedule "bursty" is not known`},
		// Zero clients cannot close a loop.
		{"zero clients", []string{"--closed", "0"}, `"0" is not allowed`},
		// Open and closed loop at once.
		{"rate and closed", []string{"--rate", "40", "--closed", "2"}, "exclude each other"},
		// A negative patience.
		{"negative timeout", []string{"--timeout", "-1s"}, "timeout -1s is not allowed"},
		// Flags only.
		{"stray argument", []string{"40"}, `unexpected argument "40"`},
		// A flag that does not exist.
		{"unknown flag", []string{"--rps", "40"}, "flag provided but not defined"},
		// Records into a directory that does not exist.
		{"unwritable records", []string{"--records", "/nonexistent/dir/r.csv"}, "cannot be written"},
		// The control API is not there.
		{"control unreachable", []string{"--control", freeURL(t)}, "control API at"},
		// A knob change at the window's end or later.
		{"knob change past the window", []string{"--at", "1s:WAIT_MS=5"}, "knob change 1s:WAIT_MS=5 is past the end of the window: want a time from 0 to less than the window's 1s"},
		// A change that is not TIME:KNOB=VALUE.
		{"knob change form", []string{"--at", "WAIT_MS=5"}, "want TIME:KNOB=VALUE"},
		// A knob the lab does not have.
		{"unknown knob", []string{"--at", "500ms:SPEED=3"}, `--at: knob change 500ms:SPEED=3: unknown knob "SPEED": want one of WORKERS, SPIN_MS, WAIT_MS`},
		// A knob that cannot change while the lab runs.
		{"fixed knob", []string{"--at", "500ms:CPUS=2"}, "CPUS cannot change while the lab runs"},
		// A value the lab would refuse.
		{"bad knob value", []string{"--at", "500ms:WAIT_MS=99999"}, "knob change 500ms:WAIT_MS=99999: 99999 is not allowed: want 0 to 10000"},
		// A change needs the lab's control API.
		{"knob change without control", []string{"--control", "none", "--at", "500ms:WAIT_MS=5"}, "--at changes the lab's knobs through its control API"},
		// The client's workers are an open loop's.
		{"max-inflight closed", []string{"--closed", "2", "--max-inflight", "3"}, "--max-inflight is for an open loop"},
		// A negative pool.
		{"negative max-inflight", []string{"--max-inflight", "-1"}, "--max-inflight -1 is not allowed"},
		// The retrying client's spec: a parameter it does not have, a value out of range, not name=value.
		{"retry unknown parameter", []string{"--retry", "retries=3,speed=2"}, `--retry: retry's speed "2" is not allowed: want a parameter of parameters name=value`},
		{"retry out of range", []string{"--retry", "retries=11"}, `--retry: retry's retries "11" is not allowed: want a whole number from 0 to 10`},
		{"retry bad backoff", []string{"--retry", "retries=2,backoff=linear"}, `--retry: retry's backoff "linear" is not allowed: want none, fixed, exp or jitter`},
		{"retry not name=value", []string{"--retry", "3"}, `--retry: retry "3" is not allowed: want parameters name=value`},
		// A closed loop's clients wait for their answers; they do not retry.
		{"retry closed", []string{"--closed", "2", "--retry", "retries=2"}, "--retry is for an open loop"},
		// Fan-out and hedging: their ranges, their specs, not closed, not with retries.
		{"fanout 0", []string{"--fanout", "0"}, "--fanout 0 is not allowed: want 1 (each arrival one request) to 100 sub-requests an arrival"},
		{"fanout above 100", []string{"--fanout", "101"}, "--fanout 101 is not allowed"},
		{"hedge bad delay", []string{"--hedge", "delay_ms=0"}, `--hedge: hedge's delay_ms "0" is not allowed: want a whole number from 1 to 60000`},
		{"hedge neither delay nor percentile", []string{"--hedge", "max=2"}, `--hedge: hedge "max=2" is not allowed: want one of delay_ms (a fixed delay) and percentile`},
		{"hedge with retry", []string{"--hedge", "percentile=95", "--retry", "retries=1"}, "--retry does not go with --fanout or --hedge yet"},
		{"fanout closed", []string{"--closed", "2", "--fanout", "3"}, "--fanout and --hedge are for an open loop"},
		{"fanout above the rate cap", []string{"--fanout", "100", "--rate", "200"}, "fan-out 100 at rate 200"},
		// Several targets split a fanned-out request's sub-requests: each
		// needs a sub-request and a control API of its own (or none).
		{"two targets without fan-out", []string{"--target", "http://127.0.0.1:1,http://127.0.0.1:2", "--control", "none"}, "2 targets need a fan-out of at least 2"},
		{"three targets, fan-out 2", []string{"--target", "http://127.0.0.1:1,http://127.0.0.1:2,http://127.0.0.1:3", "--control", "none", "--fanout", "2"}, "3 targets need a fan-out of at least 3"},
		{"two targets, one control", []string{"--target", "http://127.0.0.1:1,http://127.0.0.1:2", "--fanout", "2"}, "2 targets but 1 control APIs: give one control URL for each target, in the same order, or none"},
		{"one target, two controls", []string{"--control", l.Control + "," + l.Control}, "2 control APIs for one target"},
		{"a bad target in the list", []string{"--target", "http://127.0.0.1:1,ftp://x", "--fanout", "2"}, `target "ftp://x" is not allowed`},
		{"two targets and --check", []string{"--target", "http://127.0.0.1:1,http://127.0.0.1:2", "--fanout", "2", "--check"}, "--check checks one lab"},
		{"two targets and --at", []string{"--target", "http://127.0.0.1:1,http://127.0.0.1:2", "--control", l.Control + "," + l.Control, "--fanout", "2", "--at", "1s:WAIT_MS=2"}, "knob changes go to one lab"},
		// Shares of the arrivals.
		{"critical above 1", []string{"--critical", "1.5"}, "--critical 1.5 is not allowed: want a share of the arrivals from 0 to 1"},
		{"negative sheddable", []string{"--sheddable", "-0.1"}, "--sheddable -0.1 is not allowed"},
		{"shares above 1 together", []string{"--critical", "0.6", "--sheddable", "0.5"}, "--critical 0.6 and --sheddable 0.5 are not allowed: want shares of the arrivals together at most 1"},
		{"classes closed", []string{"--closed", "2", "--sheddable", "0.5"}, "--critical and --sheddable are for an open loop"},
		{"samples without over-time", []string{"--samples", "s.csv"}, "--samples writes a run over time's samples: add --over-time"},
		// The knee search's flags.
		{"knee not FROM:TO", []string{"--knee", "40-400"}, `--knee "40-400" is not FROM:TO`},
		{"knee FROM not below TO", []string{"--knee", "400:40"}, `--knee "400:40" is not allowed: want 0 < FROM < TO ≤ 10000`},
		{"knee FROM equal to TO", []string{"--knee", "40:40"}, "want 0 < FROM < TO"},
		{"knee TO above the cap", []string{"--knee", "40:20000"}, "TO ≤ 10000"},
		{"knee zero FROM", []string{"--knee", "0:40"}, "want 0 < FROM"},
		{"step 1", []string{"--knee", "40:400", "--step", "1"}, "--step 1 is not allowed: want a factor more than 1 and at most 4"},
		{"step above 4", []string{"--knee", "40:400", "--step", "5"}, "--step 5 is not allowed"},
		{"knee and rate", []string{"--knee", "40:400", "--rate", "40"}, "--knee and --rate exclude each other"},
		{"knee and closed", []string{"--knee", "40:400", "--closed", "4"}, "--knee and --closed exclude each other"},
		{"knee and arrivals", []string{"--knee", "40:400", "--arrivals", "x.txt"}, "--knee and --arrivals exclude each other"},
		{"max-errors 0", []string{"--knee", "40:400", "--max-errors", "0"}, "--max-errors 0 is not allowed: want a share of the requests sent more than 0 and at most 1"},
		{"max-errors above 1", []string{"--knee", "40:400", "--max-errors", "1.5"}, "--max-errors 1.5 is not allowed"},
		{"negative max-p99", []string{"--knee", "40:400", "--max-p99", "-1ms"}, "--max-p99 -1ms is not allowed"},
		{"budget under two windows", []string{"--knee", "40:400", "--budget", "5s"}, "--budget 5s is not allowed: want room for at least one window and the recovery window (7s"},
		{"step without knee", []string{"--step", "2"}, "--step is for a knee search: add --knee FROM:TO"},
		{"budget without knee", []string{"--budget", "1m"}, "--budget is for a knee search"},
		{"recovery without knee", []string{"--recovery=false"}, "--recovery is for a knee search"},
		// The service's metrics.
		{"gauge without metrics", []string{"--gauge", "inflight"}, "--gauge inflight reads the service's metrics: add --metrics URL"},
		{"counter without metrics", []string{"--counter", "x_total"}, "--counter x_total reads the service's metrics"},
		{"metrics without names", []string{"--metrics", pool.url + "/metrics"}, "--metrics reads the metrics named: add --gauge NAME or --counter NAME"},
		{"metrics not a URL", []string{"--metrics", "localhost:9/metrics", "--gauge", "a"}, `--metrics "localhost:9/metrics" is not allowed`},
		{"gauge not a name", []string{"--metrics", pool.url + "/metrics", "--gauge", "in flight"}, `--gauge "in flight" is not a metric name`},
		{"gauge missing", []string{"--metrics", pool.url + "/metrics", "--gauge", "pool_inflight", "--gauge", `pool_inflight{pool="other"}`, "--counter", "nope_total"},
			`/metrics does not show pool_inflight{pool="other"}, nope_total`},
		{"metrics unreachable", []string{"--metrics", freeURL(t) + "/metrics", "--gauge", "a"}, "--metrics http://127.0.0.1:"},
		{"queue header not a name", []string{"--queue-header", "Queue Ms"}, `--queue-header: queue header "Queue Ms" is not a header name`},
		{"report a directory", []string{"--report", "/tmp/"}, `--report "/tmp/" is not allowed`},
		{"report unwritable", []string{"--report", "/nonexistent/dir/r"}, `--report "/nonexistent/dir/r.csv" cannot be written`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target, conns := counter(t)
			args := append([]string{"--target", target, "--control", l.Control, "--seconds", "1"}, c.args...)
			out, _, err := runLoad(t, noenv, args...)
			checkRefused(t, err, out, conns.Load(), c.want)
		})
	}
	t.Run("unreachable second target", func(t *testing.T) {
		target, _ := counter(t)
		free := freeURL(t)
		_, _, err := runLoad(t, noenv, "--target", target+","+free, "--control", "none", "--rate", "10", "--seconds", "1", "--fanout", "2")
		if err == nil || exitStatus(err) != 2 || !strings.Contains(err.Error(), "target "+free+" is not reachable: connection refused") {
			t.Errorf("err = %v, want exit 2 naming the unreachable target %s", err, free)
		}
	})
	t.Run("unreachable target", func(t *testing.T) {
		_, _, err := runLoad(t, noenv, "--target", freeURL(t), "--control", "none", "--rate", "10", "--seconds", "1")
		if err == nil || exitStatus(err) != 2 || !strings.Contains(err.Error(), "is not reachable: connection refused") {
			t.Errorf("err = %v, want exit 2 naming the unreachable target", err)
		}
	})
}

// --at through a real lab: WAIT_MS 5 until 500 ms into each window, then
// 40; stderr says when the lab took it; the records' service times are
// the old WAIT_MS before it and the new one after; the lab has its own
// knobs back when load ends. With --max-inflight 2 at 40 a second, the
// arrivals that found both workers busy are client_busy, and sent +
// client_busy = arrivals.
func TestAtAndMaxInFlight(t *testing.T) {
	l := labtest.Serve(t, labsvc.Config{Workers: 8, SpinMS: 0, WaitMS: 5, CPUs: 1})
	recs := filepath.Join(t.TempDir(), "r.csv")
	out, errOut, err := runLoad(t, noenv, "--target", l.Target, "--control", l.Control, "--rate", "40,40", "--seconds", "1",
		"--at", "500ms:WAIT_MS=40", "--max-inflight", "2", "--json", "--records", recs)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	took := regexp.MustCompile(`load: window (\d), ([0-9.]+) s in: the lab took 500ms:WAIT_MS=40\n`).FindAllStringSubmatch(errOut, -1)
	if len(took) != 2 || took[0][1] != "1" || took[1][1] != "2" {
		t.Fatalf("stderr %q: want one line a window saying when the lab took the change", errOut)
	}
	for _, m := range took {
		if at := parseNum(t, m[2]); at < 0.5 || at > 0.75 {
			t.Errorf("window %s: the lab took the change %v s in, want 0.5 to 0.75 s", m[1], at)
		}
	}
	for _, r := range jsonRows(t, out) {
		if r.Lost != 0 || r.NotSent != 0 || r.ClientBusy == 0 || r.Sent+r.ClientBusy != r.Arrivals {
			t.Errorf("window %d: arrivals %d, sent %d, client_busy %d, not_sent %d, lost %d: want sent + client_busy = arrivals, some client_busy, lost 0",
				r.Window, r.Arrivals, r.Sent, r.ClientBusy, r.NotSent, r.Lost)
		}
	}
	rows2 := readRecords(t, recs)
	head := rows2[0]
	idx := func(name string) int { return slices.Index(head, name) }
	var before, after []float64
	for _, f := range rows2[1:] {
		if f[idx("outcome")] == "not_sent" {
			if f[idx("reason")] != "client_busy" {
				t.Errorf("record %v: not sent, want reason client_busy", f)
			}
			continue
		}
		sent, svc := parseNum(t, f[idx("sent_ms")]), parseNum(t, f[idx("service_ms")])
		switch {
		case sent < 450:
			before = append(before, svc)
		case sent > 800:
			after = append(after, svc)
		}
	}
	if len(before) == 0 || len(after) == 0 {
		t.Fatalf("%d answers sent before the change and %d well after it: want some of each", len(before), len(after))
	}
	// After the change every service time is at least the new WAIT_MS,
	// less the at most 1 ms the lab's waiter may end a wait early; before
	// it the median is the old one's.
	slices.Sort(before)
	if m := before[len(before)/2]; m < 5 || m >= 40 {
		t.Errorf("service time median %v ms before the change, want WAIT_MS 5's (5 to 40 ms)", m)
	}
	for _, v := range after {
		if v < 39 {
			t.Errorf("a request sent after the change took %v ms of service, more than 1 ms under the WAIT_MS of 40 it set", v)
		}
	}
	ctl, _ := loadrun.NewControl(l.Control, nil)
	var cfg labsvc.Config
	if err := ctl.Config(t.Context(), &cfg); err != nil || cfg.WaitMS != 5 {
		t.Errorf("after the run the lab has WAIT_MS %d (%v), want its own 5 back", cfg.WaitMS, err)
	}
}
