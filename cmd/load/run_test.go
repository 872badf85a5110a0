package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"capacitylab/labsvc"
	"capacitylab/loadrun"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lab is an in-process lab on real loopback listeners.
type lab struct{ target, control string }

func startLab(t *testing.T, cfg labsvc.Config) lab {
	t.Helper()
	req, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- labsvc.NewServer(cfg, nil).Serve(ctx, req, ctl) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("lab: %v", err)
		}
	})
	return lab{target: "http://" + req.Addr().String(), control: "http://" + ctl.Addr().String()}
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
	l := startLab(t, labsvc.Config{Workers: 4, SpinMS: 0, WaitMS: 5, CPUs: 1})
	records := filepath.Join(t.TempDir(), "records.csv")
	out, errOut, err := runLoad(t, noenv, "--target", l.target, "--control", l.control, "--rate", "50,100", "--seconds", "1", "--records", records)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	if errOut != "" {
		t.Errorf("stderr is not a terminal, yet got %q", errOut)
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
	if !slices.Equal(recs[0], loadrun.CSVHeader()) {
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
	l := startLab(t, labsvc.Config{Workers: 2, SpinMS: 0, WaitMS: 5, CPUs: 1})
	env := map[string]string{"TARGET": l.target, "CONTROL": l.control}
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

func TestClosedTable(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 2, SpinMS: 0, WaitMS: 5, CPUs: 1})
	out, _, err := runLoad(t, noenv, "--target", l.target, "--control", l.control, "--closed", "1,2", "--seconds", "0.5")
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
			"1 worker, spin 2 ms, wait 18 ms, limit off, cpus 1", "the workers bind at"},
		// Sixteen workers on one CPU: 800/s of workers, 500/s of processor.
		{"processor binds", labsvc.Config{Workers: 16, SpinMS: 2, WaitMS: 18, Limit: 10, CPUs: 1},
			"16 workers, spin 2 ms, wait 18 ms, limit 10, cpus 1", "the processors bind at 500/s"},
		// No spin: no processor ceiling at all.
		{"no spin", labsvc.Config{Workers: 3, SpinMS: 0, WaitMS: 10, CPUs: 2},
			"3 workers, spin 0 ms, wait 10 ms, limit off, cpus 2", "no processor ceiling"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := startLab(t, c.cfg)
			out, _, err := runLoad(t, noenv, "--target", l.target, "--control", l.control, "--check")
			if err != nil {
				t.Fatalf("check: %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			if len(lines) != 4 {
				t.Fatalf("got %d lines, want 4:\n%s", len(lines), out)
			}
			if !strings.HasPrefix(lines[0], "service up at "+l.target) {
				t.Errorf("line 1 %q", lines[0])
			}
			if lines[1] != c.knobs {
				t.Errorf("line 2 %q, want %q", lines[1], c.knobs)
			}
			svc := regexp.MustCompile(`^service time at rest ([0-9.]+) ms \(median of n=10 sequential requests; the lab measured [0-9.]+ ms\)$`).FindStringSubmatch(lines[2])
			if svc == nil {
				t.Fatalf("line 3 %q", lines[2])
			}
			if !strings.Contains(lines[3], "ceilings: workers ÷ service time = ") || !strings.Contains(lines[3], c.binds) {
				t.Errorf("line 4 %q, want the two ceilings and %q", lines[3], c.binds)
			}
		})
	}
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
	l := startLab(t, labsvc.Config{Workers: 1, SpinMS: 0, WaitMS: 1, CPUs: 1})
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
		{"rate above cap", []string{"--rate", "40,6000"}, "at most 5000 a second"},
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target, conns := counter(t)
			args := append([]string{"--target", target, "--control", l.control, "--seconds", "1"}, c.args...)
			out, _, err := runLoad(t, noenv, args...)
			checkRefused(t, err, out, conns.Load(), c.want)
		})
	}
	t.Run("unreachable target", func(t *testing.T) {
		_, _, err := runLoad(t, noenv, "--target", freeURL(t), "--control", "none", "--rate", "10", "--seconds", "1")
		if err == nil || exitStatus(err) != 2 || !strings.Contains(err.Error(), "is not reachable: connection refused") {
			t.Errorf("err = %v, want exit 2 naming the unreachable target", err)
		}
	})
}
