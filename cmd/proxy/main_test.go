package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
)

// childEnv makes this test binary a lab child (labsvc.ChildMain): the
// upstream of these tests is a real lab in a process of its own.
const childEnv = "PROXY_TEST_CHILD"

func TestMain(m *testing.M) {
	labsvc.ChildMain(childEnv)
	goleak.VerifyTestMain(m)
}

// lockedBuffer is a strings.Builder safe to write from one goroutine while
// another reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var startLine = regexp.MustCompile(`^proxy: listening on http://(127\.0\.0\.1:\d+) \(requests\) and http://(127\.0\.0\.1:\d+) \(control\); upstream (\S+); (.*)\n$`)

type running struct {
	addr, control string // URLs
	line          string // the start line's settings
}

// startProxy runs the proxy (run, as main does) on kernel-chosen loopback
// ports with env as its environment until the test ends, and checks it
// then stops cleanly.
func startProxy(t *testing.T, env map[string]string, args ...string) running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr lockedBuffer
	errc := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"--addr", "127.0.0.1:0", "--control", "127.0.0.1:0"}, args...), func(k string) string { return env[k] }, pw, &stderr)
		pw.CloseWithError(io.EOF)
		errc <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("no start line: %v (run: %v; stderr %q)", err, <-errc, stderr.String())
	}
	m := startLine.FindStringSubmatch(line)
	if m == nil {
		cancel()
		<-errc
		t.Fatalf("start line %q does not match %v", line, startLine)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("run did not return within 10 s of cancel")
		}
	})
	return running{addr: "http://" + m[1], control: "http://" + m[2], line: m[4]}
}

var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// answer is one caller's answer through the proxy.
type answer struct {
	status     int
	retryAfter string
	body       string
	labService string // X-Service-Ms: the lab served it
}

func get(t *testing.T, url string, timeout time.Duration) (answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(body), labService: resp.Header.Get("X-Service-Ms")}, err
}

// burst sends n callers at once through the proxy.
func burst(t *testing.T, url string, n int) []answer {
	t.Helper()
	start := make(chan struct{})
	out := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			a, err := get(t, url, 10*time.Second)
			if err != nil {
				t.Errorf("caller %d: %v", i, err)
			}
			out[i] = a
		})
	}
	close(start)
	wg.Wait()
	return out
}

// statuses counts answers by status; every 503 must be a whole refusal
// with Retry-After: 1 and the lab door's body.
func statuses(t *testing.T, as []answer) map[int]int {
	t.Helper()
	n := map[int]int{}
	for i, a := range as {
		n[a.status]++
		if a.status == 503 && (a.retryAfter != "1" || a.body != "queue full\n") {
			t.Errorf("caller %d: 503 with Retry-After %q and body %q, want the door's refusal", i, a.retryAfter, a.body)
		}
		if a.status == 200 && a.labService == "" {
			t.Errorf("caller %d: 200 without X-Service-Ms: not the lab's answer", i)
		}
	}
	return n
}

// metric reads a sample (its name and labels as written) from a /metrics.
func metric(t *testing.T, control, sample string) float64 {
	t.Helper()
	a, err := get(t, control+"/metrics", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(a.body, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no %s in %s/metrics", sample, control)
	return 0
}

// labStats reads the upstream lab's window.
func labStats(t *testing.T, c *labsvc.Child) labsvc.Stats {
	t.Helper()
	ctl, err := client.Get(c.Control() + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Body.Close()
	var st labsvc.Stats
	if err := jsonDecode(ctl.Body, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

// The demo's experiment 3 in miniature: a fixed quota of 2 in flight at
// the proxy in front of a lab of 4 workers busy 300 ms a request. Of six
// callers at once two reach the lab and four are refused by the proxy,
// with the lab door's refusal; the proxy's metrics and the lab's count
// agree.
func TestInFlightQuotaThroughTheProxy(t *testing.T) {
	lab := labtest.Child(t, childEnv, labsvc.Config{Workers: 4, SpinMS: 0, WaitMS: 300, CPUs: 1})
	p := startProxy(t, map[string]string{"UPSTREAM": lab.Target(), "POLICY": "inflight,quota=2"})
	if p.line != "POLICY=inflight,quota=2 WORKERS=0" {
		t.Errorf("start line settings %q", p.line)
	}
	n := statuses(t, burst(t, p.addr+"/work", 6))
	if n[200] != 2 || n[503] != 4 {
		t.Errorf("statuses %v, want 2 ok and 4 refused", n)
	}
	for sample, want := range map[string]float64{
		"admit_limit": 2, "admit_inflight": 0, "admit_refused_total": 4,
		`proxy_upstream_total{outcome="served"}`: 2, "proxy_upstream_inflight": 0,
	} {
		if got := metric(t, p.control, sample); got != want {
			t.Errorf("%s = %v, want %v", sample, got, want)
		}
	}
	if st := labStats(t, lab); st.Done != 2 || st.Refused != 0 {
		t.Errorf("the lab served %d and refused %d, want 2 and 0: only the admitted reach it", st.Done, st.Refused)
	}
}

// With WORKERS=1 and LIMIT=1 the proxy holds the queue the lab would have
// held: of three callers at once one goes upstream, one waits at the
// proxy and one is refused; each reaches the lab alone, so the lab never
// queues.
func TestQueueAtTheProxy(t *testing.T) {
	lab := labtest.Child(t, childEnv, labsvc.Config{Workers: 4, SpinMS: 0, WaitMS: 200, CPUs: 1})
	p := startProxy(t, map[string]string{"UPSTREAM": lab.Target(), "WORKERS": "1", "LIMIT": "1"})
	n := statuses(t, burst(t, p.addr, 3))
	if n[200] != 2 || n[503] != 1 {
		t.Errorf("statuses %v, want 2 ok and 1 refused", n)
	}
	st := labStats(t, lab)
	if st.Done != 2 || st.QueuedMax != 0 || st.QueueWaitMS.Max != 0 {
		t.Errorf("the lab served %d, queued_max %d, longest queue wait %v ms; want 2 served one at a time, none queued", st.Done, st.QueuedMax, st.QueueWaitMS.Max)
	}
	if got := metric(t, p.control, "admit_queue_seconds_count"); got != 2 {
		t.Errorf("admit_queue_seconds_count = %v, want 2 (one handed at once, one after waiting)", got)
	}
	if got := metric(t, p.control, "admit_limit"); got != 2 {
		t.Errorf("admit_limit = %v, want WORKERS + LIMIT = 2", got)
	}
}

// AIMD at the proxy learns from the upstream's 503s. The lab (one worker,
// LIMIT=1, a second a request) is filled through the proxy: one served,
// one queued. Then each caller is refused by the lab, and the proxy passes
// the 503 on as it is and halves its limit: 8 → 4 → 2 (each was admitted
// after the cut before it, so each counts; the interval is long, so no
// answer in time grows the limit back meanwhile). With two inside at a
// limit of 2 the proxy refuses the next caller itself.
func TestAIMDThroughTheProxy(t *testing.T) {
	lab := labtest.Child(t, childEnv, labsvc.Config{Workers: 1, SpinMS: 0, WaitMS: 1000, Limit: 1, CPUs: 1})
	p := startProxy(t, map[string]string{"UPSTREAM": lab.Target()}, "--policy", "aimd,start=8,backoff=0.5,interval_ms=60000")
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if a, err := get(t, p.addr, 10*time.Second); err != nil || a.status != 200 {
				t.Errorf("a caller filling the lab: %+v, %v; want 200", a, err)
			}
		})
	}
	defer wg.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if st := labStats(t, lab); st.InService == 1 && st.Queued == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lab never held one in service and one queued")
		}
	}
	for _, want := range []float64{4, 2} {
		a, err := get(t, p.addr, 5*time.Second)
		if err != nil || a.status != 503 || a.body != "queue full\n" || a.retryAfter != "1" {
			t.Fatalf("a caller the lab refuses: %+v, %v; want the lab's 503 passed on", a, err)
		}
		if got := metric(t, p.control, "admit_limit"); got != want {
			t.Errorf("admit_limit = %v after the lab's 503, want %v", got, want)
		}
	}
	if got := metric(t, p.control, "admit_refused_total"); got != 0 {
		t.Errorf("admit_refused_total = %v before the limit was reached, want 0", got)
	}
	if a, err := get(t, p.addr, 5*time.Second); err != nil || a.status != 503 {
		t.Errorf("a caller at the limit: %+v, %v; want 503", a, err)
	}
	for sample, want := range map[string]float64{"admit_refused_total": 1, `proxy_upstream_total{outcome="overloaded"}`: 2, "admit_inflight": 2} {
		if got := metric(t, p.control, sample); got != want {
			t.Errorf("%s = %v, want %v", sample, got, want)
		}
	}
	if st := labStats(t, lab); st.Refused != 2 {
		t.Errorf("the lab refused %d, want 2: the proxy's own refusal never reached it", st.Refused)
	}
}

// An upstream that cannot be reached answers 502 and is an overload
// signal; one slower than TIMEOUT answers 504 and is a timeout; a caller
// that gives up first is a timeout too (the caller's). Each cuts an AIMD
// limit.
func TestUpstreamFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	down := startProxy(t, map[string]string{"UPSTREAM": closed, "POLICY": "aimd,start=4,backoff=0.5"})
	if a, err := get(t, down.addr, 5*time.Second); err != nil || a.status != 502 {
		t.Errorf("through a proxy to nothing: %+v, %v; want 502", a, err)
	}
	if got := metric(t, down.control, "admit_limit"); got != 2 {
		t.Errorf("admit_limit = %v after the upstream could not be reached, want 2", got)
	}

	lab := labtest.Child(t, childEnv, labsvc.Config{Workers: 4, SpinMS: 0, WaitMS: 400, CPUs: 1})
	slow := startProxy(t, map[string]string{"UPSTREAM": lab.Target(), "POLICY": "aimd,start=4,backoff=0.5", "TIMEOUT": "100ms"})
	if a, err := get(t, slow.addr, 5*time.Second); err != nil || a.status != 504 {
		t.Errorf("through a proxy with TIMEOUT=100ms to a 400 ms lab: %+v, %v; want 504", a, err)
	}
	// The caller gives up after 40 ms, before the proxy's TIMEOUT (100 ms)
	// and long before the lab answers. (With 100 ms, as TIMEOUT, the two
	// raced: CI once saw the proxy's 504 arrive first.)
	if _, err := get(t, slow.addr, 40*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a caller with a 40 ms timeout: %v, want its deadline", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for metric(t, slow.control, `proxy_upstream_total{outcome="timeout"}`) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := metric(t, slow.control, `proxy_upstream_total{outcome="timeout"}`); got != 2 {
		t.Errorf(`proxy_upstream_total{outcome="timeout"} = %v, want 2 (TIMEOUT, then the caller's)`, got)
	}
	if got := metric(t, slow.control, "admit_limit"); got != 1 {
		t.Errorf("admit_limit = %v after two timeouts, want 4 × 0.5 × 0.5 = 1", got)
	}
}

// Sojourn at the proxy: one worker, a lab answering in 50 ms, a burst of
// twelve. The queue stands at the proxy, so after its first interval the
// callers that waited more than twice the target are dropped with the
// door's refusal; every caller is answered, ok or refused.
func TestSojournAtTheProxy(t *testing.T) {
	lab := labtest.Child(t, childEnv, labsvc.Config{Workers: 4, SpinMS: 0, WaitMS: 50, CPUs: 1})
	p := startProxy(t, map[string]string{"UPSTREAM": lab.Target(), "WORKERS": "1", "POLICY": "sojourn,target_ms=5,interval_ms=40"})
	n := statuses(t, burst(t, p.addr, 12))
	dropped := metric(t, p.control, "admit_dropped_total")
	t.Logf("statuses %v, dropped %v", n, dropped)
	if n[200]+n[503] != 12 || n[503] < 1 || float64(n[503]) != dropped || n[200] < 2 {
		t.Errorf("statuses %v, admit_dropped_total %v: want every caller answered, the first two served, and the 503s all dropped from the queue", n, dropped)
	}
	if st := labStats(t, lab); st.Done != int64(n[200]) {
		t.Errorf("the lab served %d, callers got %d ok: the dropped never reach it", st.Done, n[200])
	}
}

// GET /config says the settings in force, every parameter spelt out.
func TestControlConfig(t *testing.T) {
	p := startProxy(t, map[string]string{"POLICY": "gradient,tolerance=2"}, "--workers", "3", "--timeout", "2.5s", "--trusted-proxies", "10.0.0.1 172.16.0.0/12")
	a, err := get(t, p.control+"/config", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var c configReply
	if err := jsonDecode(strings.NewReader(a.body), &c); err != nil {
		t.Fatal(err)
	}
	want := configReply{Upstream: defaultUpstream, Policy: "gradient,tolerance=2",
		Describe: "gradient,start=20,min=1,max=1000,smoothing=0.2,tolerance=2,headroom=4,interval_ms=100,samples=10,long=600", Workers: 3, TimeoutMS: 2500,
		TrustedProxies: "10.0.0.1/32,172.16.0.0/12"}
	if c != want {
		t.Errorf("GET /config = %+v, want %+v", c, want)
	}
	if h, err := get(t, p.control+"/healthz", 5*time.Second); err != nil || h.body != "ok\n" {
		t.Errorf("GET /healthz = %+v, %v", h, err)
	}
}

// Bad settings: exit status 2, one line naming each variable, its value
// and what is allowed, and nothing listens.
func TestBadSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"unknown policy", map[string]string{"POLICY": "fifo"}, nil, "POLICY: fifo is not allowed: want queue, inflight, aimd, gradient or sojourn"},
		{"quota missing", nil, []string{"--policy", "inflight"}, "POLICY: inflight is not allowed: want inflight,quota=N with N a whole number from 1 to 100000"},
		{"parameter out of range", nil, []string{"--policy=gradient,tolerance=0.5"}, "POLICY: gradient,tolerance=0.5 is not allowed: want tolerance from 1 to 10"},
		{"limit without workers", map[string]string{"LIMIT": "5"}, nil, "LIMIT: 5 is not allowed: want 0 with WORKERS=0"},
		{"limit with another policy", map[string]string{"LIMIT": "5", "WORKERS": "2", "POLICY": "aimd"}, nil, "LIMIT: 5 is not allowed: want 0 with POLICY=aimd"},
		{"sojourn without workers", map[string]string{"POLICY": "sojourn"}, nil, "WORKERS: 0 is not allowed: want 1 or more with POLICY=sojourn"},
		{"bad upstream", map[string]string{"UPSTREAM": "ftp://127.0.0.1:21"}, nil, "UPSTREAM: ftp://127.0.0.1:21 is not allowed: want an http:// or https:// URL with a host"},
		{"bad workers", nil, []string{"--workers=-1"}, "WORKERS: -1 is not allowed: want 0 to 100000"},
		{"bad timeout", map[string]string{"TIMEOUT": "soon"}, nil, "TIMEOUT: soon is not allowed: want a duration from 0 to 10m0s"},
		{"bad trusted proxies", map[string]string{"TRUSTED_PROXIES": "10.0.0.1,lb.example"}, nil, `TRUSTED_PROXIES: 10.0.0.1,lb.example is not allowed: want addresses and networks such as 10.0.0.1,192.168.0.0/16 ("lb.example" is neither`},
		{"empty flag", nil, []string{"--policy="}, "POLICY: an empty value is not allowed: want queue, inflight"},
		{"two at once", map[string]string{"WORKERS": "x", "TIMEOUT": "-1s"}, nil, "TIMEOUT: -1s is not allowed: want a duration from 0 to 10m0s, such as 2.5s or 500ms; WORKERS: x is not allowed"},
		{"unknown flag", nil, []string{"--quota=5"}, "usage: flag provided but not defined: -quota; want only the flags"},
		{"empty address flag", nil, []string{"--control="}, "usage: --control is empty: want host:port, such as 127.0.0.1:7001"},
		{"empty workers flag", map[string]string{"WORKERS": "3"}, []string{"--workers="}, "WORKERS: an empty value is not allowed: want 0 to 100000"},
		{"stray argument", nil, []string{"serve"}, `usage: unexpected argument "serve"; want only the flags --addr, --control, --limit`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			var stdout, stderr strings.Builder
			err = run(t.Context(), append([]string{"--addr", addr, "--control", "127.0.0.1:0"}, tc.args...), func(k string) string { return tc.env[k] }, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || labsvc.ExitStatus(err) != 2 {
				t.Fatalf("run = %v (exit %d), want one line with %q and exit 2", err, labsvc.ExitStatus(err), tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q: nothing should have started", stdout.String())
			}
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				t.Errorf("something listens on %s after a bad setting", addr)
			}
		})
	}
}

// A flag wins over its variable; an empty or blank variable is unset.
func TestSettingsSources(t *testing.T) {
	env := map[string]string{"WORKERS": "4", "POLICY": "  ", "TIMEOUT": "", "UPSTREAM": "http://127.0.0.1:9", "TRUSTED_PROXIES": "10.0.0.1, 192.168.0.0/16"}
	s, err := parseSettings([]string{"--workers", "7", "--limit=3"}, func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := settings{addr: defaultAddr, control: defaultControl, upstream: "http://127.0.0.1:9", limit: 3, workers: 7,
		trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32"), netip.MustParsePrefix("192.168.0.0/16")}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("settings %+v, want %+v", s, want)
	}
	if got := s.String(); got != "POLICY=queue LIMIT=3 WORKERS=7" {
		t.Errorf("settings say %q", got)
	}
}

// -h lists every flag with its variable, default and what it allows, then
// the policies' parameters, and is not an error to exit 2 for.
func TestHelp(t *testing.T) {
	var stdout, stderr strings.Builder
	if err := run(t.Context(), []string{"-h"}, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("run -h = %v", err)
	}
	for _, want := range []string{
		"usage: proxy [flags]",
		"env ADDR, default 127.0.0.1:7000)",
		"env CONTROL_ADDR, default 127.0.0.1:7001)",
		"env UPSTREAM, default http://127.0.0.1:8000, an http:// or https:// URL)",
		"env POLICY, default queue, queue, inflight,quota=N",
		"env LIMIT, default 0, 0 to 100000)",
		"env WORKERS, default 0, 0 to 100000)",
		"env TIMEOUT, default 0, 0 to 10m0s)",
		"env TRUSTED_PROXIES, default none, addresses and networks such as 10.0.0.1,192.168.0.0/16)",
		"policies and their parameters' defaults (package admit):",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("-h lacks %q:\n%s", want, stderr.String())
		}
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q: nothing should have started", stdout.String())
	}
}
