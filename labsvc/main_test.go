package labsvc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"capacitylab/affinity"
	"capacitylab/labsvc"
)

// The supervisor tests re-execute this test binary as the lab child:
// labsvc.ChildMain serves (the same RunChild that cmd/lab and cmd/server use)
// when LABSVC_TEST_CHILD=1; the other values are test-only behaviours.
const childEnv = "LABSVC_TEST_CHILD"

func TestMain(m *testing.M) {
	labsvc.ChildMain(childEnv)
	switch os.Getenv(childEnv) {
	case "":
		goleak.VerifyTestMain(m)
	case "parent":
		// Start a lab child, say its pid, and wait to be killed.
		cc, err := labsvc.SelfCommand(childEnv)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		c, err := labsvc.StartChild(context.Background(), cc, labsvc.DefaultConfig())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(c.Pid())
		<-c.Done()
		os.Exit(1)
	case "die":
		// Serve, then fail on its own after a moment, leaving last words.
		go func() {
			time.Sleep(300 * time.Millisecond)
			fmt.Fprintln(os.Stderr, "simulated failure: the lab ran out of cheese")
			os.Exit(3)
		}()
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		_ = labsvc.RunChild(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
		os.Exit(0)
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: want 1, parent or die\n", childEnv, os.Getenv(childEnv))
		os.Exit(2)
	}
}

// testChild is the ChildCommand that re-executes this test binary: mode
// "serve" is a normal lab child, "die" one that fails on its own.
func testChild(t testing.TB, mode string) labsvc.ChildCommand {
	if mode == "serve" {
		cc, err := labsvc.SelfCommand(childEnv)
		if err != nil {
			t.Fatal(err)
		}
		return cc
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return labsvc.ChildCommand{Path: exe, Env: []string{childEnv + "=" + mode}}
}

// reply is one answer read off the wire.
type reply struct {
	status     int
	header     http.Header
	body       string
	queueWait  float64 // X-Queue-Wait-Ms
	serviceMS  float64 // X-Service-Ms
	retryAfter string
	close      bool // the answer said Connection: close
}

// call makes one request on a fresh connection and reads the whole answer.
// Any connection error (such as a reset) is returned.
func call(addr string, timeout time.Duration) (reply, error) {
	return callWith(addr, "", timeout)
}

// callWith is call with one more header line, such as
// "X-Criticality: critical" ("": none).
func callWith(addr, header string, timeout time.Duration) (reply, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return reply{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	req := "GET /work HTTP/1.1\r\nHost: lab\r\nUser-Agent: labsvc-test\r\n"
	if header != "" {
		req += header + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		return reply{}, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return reply{}, err
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: string(body), retryAfter: resp.Header.Get("Retry-After"), close: resp.Close}
	if resp.StatusCode == http.StatusOK {
		if r.queueWait, err = strconv.ParseFloat(resp.Header.Get("X-Queue-Wait-Ms"), 64); err != nil {
			return r, fmt.Errorf("X-Queue-Wait-Ms: %w", err)
		}
		if r.serviceMS, err = strconv.ParseFloat(resp.Header.Get("X-Service-Ms"), 64); err != nil {
			return r, fmt.Errorf("X-Service-Ms: %w", err)
		}
	}
	return r, nil
}

var controlClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// getJSON GETs or POSTs (when body != "") url and decodes the JSON answer
// into v, returning the status.
func doJSON(t testing.TB, method, url, body string, v any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json") // as the control API asks of changes
	}
	resp, err := controlClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("%s %s: decoding: %v", method, url, err)
		}
	}
	return resp.StatusCode
}

func stats(t testing.TB, control string) labsvc.Stats {
	t.Helper()
	var st labsvc.Stats
	if code := doJSON(t, "GET", control+"/stats", "", &st); code != 200 {
		t.Fatalf("GET /stats: status %d", code)
	}
	return st
}

// quiet polls the stats until nothing is being read, queued or in
// service, or fails after timeout.
func quiet(t testing.TB, control string, timeout time.Duration) labsvc.Stats {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		st := stats(t, control)
		if st.Queued == 0 && st.InService == 0 && st.Reading == 0 {
			return st
		}
		if time.Now().After(end) {
			t.Fatalf("lab not quiet after %v: %+v", timeout, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func cfg(workers, spin, wait, limit int) labsvc.Config {
	return labsvc.Config{Workers: workers, SpinMS: spin, WaitMS: wait, Limit: limit, CPUs: 1}
}

// processGone reports whether the process with the pid has ended: it no
// longer exists, or it is a zombie (dead, waiting for whoever inherited it
// to reap it).
func processGone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// metric reads the value of the unlabelled sample name from a lab's
// GET /metrics (Prometheus text format).
func metric(t testing.TB, control, name string) float64 {
	t.Helper()
	resp, err := controlClient.Get(control + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(text), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", name, err)
			}
			return f
		}
	}
	t.Fatalf("no %s in %s/metrics", name, control)
	return 0
}

// watchWakeups measures, until the returned function is called, how late a
// thread on cpus wakes (affinity.WakeLate, 5 ms naps). The function says
// whether the machine was quiet there, nine naps in ten waking within
// 1 ms, and describes what was measured. Physics tests hold a lab to its
// timing goals only on a quiet machine and otherwise skip with what was
// measured (physics.Skip). Where it cannot be measured it reports not
// quiet.
func watchWakeups(t *testing.T, cpus []int) func() (bool, string) {
	t.Helper()
	stop := make(chan struct{})
	probe, err := affinity.WakeLate(cpus, 5*time.Millisecond, stop)
	if err != nil {
		close(stop)
		return func() (bool, string) { return false, "the wake-up floor was not measured: " + err.Error() }
	}
	return sync.OnceValues(func() (bool, string) {
		close(stop)
		late := <-probe
		if len(late) == 0 {
			return false, "the wake-up probe took no samples"
		}
		slices.Sort(late)
		p90 := late[len(late)*9/10]
		return p90 <= time.Millisecond, fmt.Sprintf("a thread on processor(s) %v woke %v late nine times in ten, at most %v (%d naps)", cpus, p90, late[len(late)-1], len(late))
	})
}
