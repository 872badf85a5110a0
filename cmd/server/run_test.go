package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"capacitylab/lessons"
)

// syncBuffer collects a writer's output safely across goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// running is a server started by run in the test's process.
type running struct {
	url    string
	stderr *syncBuffer
	stop   func() error
}

// start calls run on 127.0.0.1:0 with args, reads the URL it prints and
// polls /healthz until it answers.
func start(t *testing.T, env map[string]string, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	getenv := func(k string) string { return env[k] }
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"--addr", "127.0.0.1:0"}, args...), getenv, stdout, stderr) }()
	var base string
	deadline := time.Now().Add(10 * time.Second)
	for base == "" {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("run returned early: %v\nstderr:\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no URL printed; stdout %q", stdout.String())
		}
		if line, ok := strings.CutPrefix(stdout.String(), "serving on "); ok {
			base = strings.TrimSpace(line)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		res, err := http.Get(base + "healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("/healthz never answered 200: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var once sync.Once
	var stopErr error
	r := &running{url: strings.TrimSuffix(base, "/"), stderr: stderr}
	r.stop = func() error {
		once.Do(func() {
			defer http.DefaultClient.CloseIdleConnections()
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(15 * time.Second):
				stopErr = errors.New("run did not return after cancel")
			}
		})
		return stopErr
	}
	t.Cleanup(func() { r.stop() })
	return r
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestRunServesAndShutsDown(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	r := start(t, nil, "--data", data)
	for _, p := range []string{"/", "/lessons/littles-law", "/lessons/sample", "/api/lessons", "/metrics"} {
		if code, body := get(t, http.DefaultClient, r.url+p); code != 200 {
			t.Errorf("GET %s = %d\n%.300s", p, code, body)
		}
	}
	if _, err := os.Stat(filepath.Join(data, dbFile)); err != nil {
		t.Errorf("no database file under --data: %v", err)
	}
	if err := r.stop(); err != nil {
		t.Fatalf("graceful shutdown: %v", err)
	}
	if !strings.Contains(r.stderr.String(), "shutting down") {
		t.Errorf("no shutdown log:\n%s", r.stderr.String())
	}
	if _, err := http.Get(r.url + "/healthz"); err == nil {
		t.Error("server still answers after shutdown")
	}
}

func TestEnvironmentFallbacks(t *testing.T) {
	data := filepath.Join(t.TempDir(), "envdata")
	r := start(t, map[string]string{"DATA": data, "FRAME_ANCESTORS": "https://course.example.org"})
	res, err := http.Get(r.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors https://course.example.org;") {
		t.Errorf("FRAME_ANCESTORS not applied: %q", csp)
	}
	// The widgets keep their own list: any course page by default.
	res, err = http.Get(r.url + "/widgets/littles-law")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors *;") {
		t.Errorf("widget page CSP = %q, want frame-ancestors *", csp)
	}
	if _, err := os.Stat(filepath.Join(data, dbFile)); err != nil {
		t.Errorf("DATA not applied: %v", err)
	}
}

func TestProgressSurvivesRestart(t *testing.T) {
	data := t.TempDir()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	r := start(t, nil, "--data", data)
	res, err := c.PostForm(r.url+"/lessons/sample/predict/sample-predict", url.Values{"action": {"lock"}, "option": {"c"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	r2 := start(t, nil, "--data", data)
	u1, _ := url.Parse(r.url)
	u2, _ := url.Parse(r2.url)
	jar.SetCookies(u2, jar.Cookies(u1))
	_, body := get(t, c, r2.url+"/lessons/sample")
	if !strings.Contains(body, "You predicted <strong>As many as are sent</strong>") {
		t.Errorf("prediction lost across restart:\n%s", body)
	}
}

func copyContent(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(lessons.Content(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(lessons.Content(), p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, p), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeLater rewrites a file with a modification time in the future, so
// the change is seen even on file systems with coarse timestamps.
func writeLater(t *testing.T, path, text string, n int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	when := time.Now().Add(time.Duration(n) * time.Second)
	if err := os.Chtimes(path, when, when); err != nil {
		t.Fatal(err)
	}
}

func TestContentDirReloadsAndShowsErrors(t *testing.T) {
	dir := copyContent(t)
	r := start(t, nil, "--data", t.TempDir(), "--content", dir)
	sample := filepath.Join(dir, "sample.md")
	orig, _ := os.ReadFile(sample)

	// An edit appears on the next request.
	writeLater(t, sample, strings.Replace(string(orig), "title: Sample lesson with every block kind", "title: Edited sample title", 1), 1)
	if _, body := get(t, http.DefaultClient, r.url+"/lessons/sample"); !strings.Contains(body, "Edited sample title") {
		t.Errorf("edit not picked up:\n%.500s", body)
	}

	// A broken edit shows the author what is wrong, with file and line.
	writeLater(t, sample, strings.Replace(string(orig), "    correct: true\n", "", -1), 2)
	code, body := get(t, http.DefaultClient, r.url+"/lessons/sample")
	if code != 500 || !strings.Contains(body, "sample.md:") || !strings.Contains(body, "did not validate") {
		t.Errorf("broken edit: %d\n%.1500s", code, body)
	}

	// Fixing it brings the lesson back.
	writeLater(t, sample, string(orig), 3)
	if code, _ := get(t, http.DefaultClient, r.url+"/lessons/sample"); code != 200 {
		t.Errorf("after the fix: %d", code)
	}
	if !strings.Contains(r.stderr.String(), "lessons do not validate") {
		t.Error("the broken edit was not logged")
	}
}

func TestBrokenContentStopsStartUp(t *testing.T) {
	dir := copyContent(t)
	sample := filepath.Join(dir, "sample.md")
	orig, _ := os.ReadFile(sample)
	os.WriteFile(sample, []byte(strings.Replace(string(orig), "    correct: true\n", "", -1)), 0o644)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--addr", "127.0.0.1:0", "--data", t.TempDir(), "--content", dir}, func(string) string { return "" }, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "sample.md:") {
		t.Errorf("err = %v, want the validation errors naming sample.md", err)
	}
}

func TestLessonsCheck(t *testing.T) {
	broken := copyContent(t)
	sample := filepath.Join(broken, "sample.md")
	orig, _ := os.ReadFile(sample)
	os.WriteFile(sample, []byte(strings.Replace(string(orig), "    correct: true\n", "", -1)), 0o644)
	tests := []struct {
		name    string
		args    []string
		wantErr bool
		out     string
	}{
		// The embedded course validates.
		{"embedded", []string{"lessons", "check"}, false, "ok: "},
		// A good directory validates.
		{"good dir", []string{"lessons", "check", copyContent(t)}, false, "ok: "},
		// A broken directory lists each problem with file and line.
		{"broken dir", []string{"lessons", "check", broken}, true, "sample.md:"},
		// A missing directory says so.
		{"missing dir", []string{"lessons", "check", filepath.Join(broken, "nope")}, true, ""},
		// A wrong subcommand shows the usage.
		{"usage", []string{"lessons", "lint"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout bytes.Buffer
			err := run(context.Background(), tt.args, func(string) string { return "" }, &stdout, io.Discard)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if !strings.Contains(stdout.String(), tt.out) {
				t.Errorf("output %q lacks %q", stdout.String(), tt.out)
			}
		})
	}
}

func TestHelpPrintsUsage(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"-h"}, func(string) string { return "" }, io.Discard, &stderr)
	if err != nil {
		t.Errorf("-h: err = %v, want nil", err)
	}
	for _, flag := range []string{"-addr", "-content", "-data", "-frame-ancestors", "-widget-frame-ancestors"} {
		if !strings.Contains(stderr.String(), flag) {
			t.Errorf("usage lacks %s:\n%s", flag, stderr.String())
		}
	}
}

func TestBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		// A frame-ancestors value that would inject another CSP directive.
		{"csp injection", []string{"--frame-ancestors", "'self'; script-src *"}, nil, "is not a CSP source"},
		// An empty frame-ancestors.
		{"empty frame-ancestors", []string{"--frame-ancestors", " "}, nil, "is empty"},
		// 'none' beside another source, which browsers would read as 'none' ignored.
		{"none with others", []string{"--frame-ancestors", "'none' https://course.example.org"}, nil, "'none' must be the only source"},
		// The widgets' own list is checked the same way and named.
		{"widget csp injection", []string{"--widget-frame-ancestors", "* ; script-src *"}, nil, "--widget-frame-ancestors: \";\" is not a CSP source"},
		// A request log mode that does not exist, named with what is allowed.
		{"request-log unknown", []string{"--request-log", "verbose"}, nil, `--request-log: "verbose" is not a request log: want sampled`},
		// The same from the environment, named by its variable.
		{"REQUEST_LOG unknown", nil, map[string]string{"REQUEST_LOG": "none"}, `REQUEST_LOG: "none" is not a request log`},
		// A stray argument.
		{"stray argument", []string{"serve"}, nil, "unexpected argument"},
		// An address that cannot be listened on.
		{"bad addr", []string{"--addr", "127.0.0.1:99999", "--data", "DATA"}, nil, "listen on"},
		// A content directory that does not exist.
		{"missing content", []string{"--content", "/nonexistent/lessons"}, nil, "is not a directory"},
		// An idle time under the one-minute floor: sessions would end mid-discussion.
		{"session-idle too short", []string{"--session-idle", "10s"}, nil, `--session-idle "10s" is not allowed: want a duration from 1m to 168h`},
		// Just under the floor is still refused.
		{"session-idle just under a minute", []string{"--session-idle", "59s"}, nil, `--session-idle "59s" is not allowed: want a duration from 1m to 168h`},
		// An idle time over the one-week ceiling.
		{"session-idle too long", []string{"--session-idle", "2000h"}, nil, `--session-idle "2000h" is not allowed: want a duration from 1m to 168h`},
		// Something that is not a duration at all.
		{"session-idle not a duration", []string{"--session-idle", "soon"}, nil, `--session-idle "soon" is not allowed: want a duration from 1m to 168h`},
		// A bare number has no unit, so it is not a duration.
		{"session-idle without unit", []string{"--session-idle", "90"}, nil, `--session-idle "90" is not allowed: want a duration from 1m to 168h`},
		// The environment's SESSION_IDLE is checked the same way, and named.
		{"SESSION_IDLE too short", nil, map[string]string{"SESSION_IDLE": "10s"}, `SESSION_IDLE "10s" is not allowed: want a duration from 1m to 168h`},
		// A bad SESSION_IDLE that is not a duration.
		{"SESSION_IDLE not a duration", nil, map[string]string{"SESSION_IDLE": "soon"}, `SESSION_IDLE "soon" is not allowed: want a duration from 1m to 168h`},
		// A trusted proxy named by host name: only addresses and networks are taken.
		{"trusted proxy by name", []string{"--trusted-proxies", "10.0.0.1,proxy.example"}, nil, `--trusted-proxies: "proxy.example" is neither an IP address nor a network`},
		// The same from the environment, named as the variable.
		{"TRUSTED_PROXIES bad network", nil, map[string]string{"TRUSTED_PROXIES": "10.0.0.0/33"}, `TRUSTED_PROXIES: "10.0.0.0/33" is neither`},
		// No processor time at all for a run.
		{"max-run-cpu zero", []string{"--max-run-cpu", "0"}, nil, `--max-run-cpu "0" is not allowed: want a whole number from 1 to 1000000`},
		// A join limit that is not a number, from the environment.
		{"JOINS_PER_MINUTE not a number", nil, map[string]string{"JOINS_PER_MINUTE": "lots"}, `JOINS_PER_MINUTE "lots" is not allowed: want a whole number from 1 to 100000`},
		// A run longer than an hour.
		{"max-run-seconds too long", []string{"--max-run-seconds", "7200"}, nil, `--max-run-seconds "7200" is not allowed: want a whole number from 1 to 3600`},
		// An address share of nothing.
		{"QUEUE_PER_ADDRESS zero", nil, map[string]string{"QUEUE_PER_ADDRESS": "0"}, `QUEUE_PER_ADDRESS "0" is not allowed`},
		// A queue that holds nothing.
		{"queue zero", []string{"--queue", "0"}, nil, `--queue "0" is not allowed: want a whole number from 1 to 100`},
		// A QUEUE from the environment beyond the cap, named as the variable.
		{"QUEUE too big", nil, map[string]string{"QUEUE": "500"}, `QUEUE "500" is not allowed: want a whole number from 1 to 100`},
		// A role the server does not have.
		{"unknown role", []string{"--role", "worker"}, nil, `--role "worker" is not allowed: want all, web or runner`},
		// The same from the environment, named as the variable.
		{"ROLE unknown", nil, map[string]string{"ROLE": "Web"}, `ROLE "Web" is not allowed: want all, web or runner`},
		// A web replica without the Postgres it shares with the runners.
		{"web without database", []string{"--role", "web"}, nil, "--role web needs --database-url (DATABASE_URL): web replicas and runners share one Postgres"},
		// A runner without it, its role from the environment.
		{"runner without database", nil, map[string]string{"ROLE": "runner"}, "ROLE runner needs --database-url (DATABASE_URL)"},
		// A runner that runs nothing.
		{"runner-slots zero", []string{"--runner-slots", "0"}, nil, `--runner-slots "0" is not allowed: want a whole number from 1 to 64`},
		// RUNNER_SLOTS that is not a number.
		{"RUNNER_SLOTS not a number", nil, map[string]string{"RUNNER_SLOTS": "two"}, `RUNNER_SLOTS "two" is not allowed: want a whole number from 1 to 64`},
		// A front door policy that is not one.
		{"admit unknown", []string{"--admit", "fifo"}, nil, `--admit "fifo" is not allowed: want inflight,quota=N, aimd or gradient`},
		// An inflight quota without its number, from the environment.
		{"ADMIT without quota", nil, map[string]string{"ADMIT": "inflight"}, `ADMIT "inflight" is not allowed: want inflight,quota=N`},
		// sojourn bounds a wait for a worker the server's door does not keep.
		{"admit sojourn", []string{"--admit", "sojourn"}, nil, "sojourn bounds the wait for a worker"},
		// No request served at all.
		{"admit-workers zero", []string{"--admit-workers", "0"}, nil, `--admit-workers "0" is not allowed: want a whole number from 1 to 1024`},
		// A line bound without a unit.
		{"admit-wait no unit", []string{"--admit-wait", "25"}, nil, `--admit-wait "25" is not allowed: want off, or a duration from 1ms to 1s, such as 10ms`},
		// A line bound past what any page would wait, from the environment.
		{"ADMIT_WAIT too long", nil, map[string]string{"ADMIT_WAIT": "5s"}, `ADMIT_WAIT "5s" is not allowed: want off, or a duration from 1ms to 1s`},
		// A memory limit with Go's unit misspelt.
		{"memory-limit unit", []string{"--memory-limit", "512MB"}, nil, `--memory-limit "512MB" is not allowed: want off, or a size from 64MiB up`},
		// A memory limit the server cannot rest under, from GOMEMLIMIT.
		{"GOMEMLIMIT too small", nil, map[string]string{"GOMEMLIMIT": "1MiB"}, `GOMEMLIMIT "1MiB" is not allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A case that wrongly passes the checks starts a server: on
			// loopback, with a temporary data directory (the case's own
			// flags, given later, win), and stopped after a while, so the
			// test fails instead of serving forever.
			args := []string{"--addr", "127.0.0.1:0", "--data", t.TempDir()}
			for _, a := range tt.args {
				if a == "DATA" {
					a = t.TempDir()
				}
				args = append(args, a)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := run(ctx, args, func(k string) string { return tt.env[k] }, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to say %q", err, tt.want)
			}
		})
	}
}

// The bounds on one run's cost are the server's to raise: the heaviest
// run the form allows is refused by default and taken with
// --max-run-seconds and --max-run-cpu (MAX_RUN_CPU from the environment).
func TestRunCostFlags(t *testing.T) {
	heavy := `{"workers":1024,"spin_ms":1000,"rates":[2000,2000,2000,2000,2000,2000,2000,2000],"seconds":30}`
	post := func(r *running) int {
		t.Helper()
		req, _ := http.NewRequest("POST", r.url+"/api/sweeps", strings.NewReader(heavy))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	// The runs' lab is /bin/false: nothing is measured, only accepted.
	if code := post(start(t, nil, "--data", t.TempDir(), "--lab-command", "/bin/false")); code != http.StatusBadRequest {
		t.Errorf("the heaviest run by default: %d, want 400", code)
	}
	raised := start(t, map[string]string{"MAX_RUN_CPU": "480000"}, "--data", t.TempDir(), "--lab-command", "/bin/false", "--max-run-seconds", "240")
	if code := post(raised); code != http.StatusAccepted {
		t.Errorf("the heaviest run with the bounds raised: %d, want 202", code)
	}
}

// A sweep posted to the server runs end to end with the server's own
// binary as both of its children ("lab-child" and "load-child", as in
// production: no --lab-command): both rows come back, every request
// accounted for.
func TestRunSweepWithOwnChildren(t *testing.T) {
	srv := start(t, nil, "--data", t.TempDir())
	body := `{"workers":2,"spin_ms":1,"wait_ms":9,"limit":0,"cpus":1,"rates":[20,40],"seconds":1,"seed":3}`
	req, _ := http.NewRequest("POST", srv.url+"/api/sweeps", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var acc struct{ ID string }
	err = json.NewDecoder(res.Body).Decode(&acc)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusAccepted || acc.ID == "" {
		t.Fatalf("POST /api/sweeps: %d, id %q (%v)", res.StatusCode, acc.ID, err)
	}
	var run struct {
		Status string
		Reason string
		Rows   []struct {
			Arrivals, Sent, Lost int
			NotSent              int `json:"not_sent"`
		}
	}
	for end := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		res, err := http.Get(srv.url + "/api/runs/" + acc.ID)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(res.Body).Decode(&run)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != "queued" && run.Status != "running" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the run is still %s after a minute", run.Status)
		}
	}
	if run.Status != "done" || len(run.Rows) != 2 {
		t.Fatalf("the run ended %s (%s) with %d rows, want done with 2", run.Status, run.Reason, len(run.Rows))
	}
	for i, r := range run.Rows {
		if r.Sent == 0 || r.Lost != 0 || r.Sent+r.NotSent != r.Arrivals {
			t.Errorf("row %d: %d arrivals, %d sent, %d not sent, %d lost: want every arrival accounted for and none lost", i, r.Arrivals, r.Sent, r.NotSent, r.Lost)
		}
	}
}
