package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// proc is a server process of an end-to-end test (this test binary run as
// the server, see serveEnv), with its log kept for the test to read.
type proc struct {
	t    *testing.T
	name string
	args []string
	url  string // "http://127.0.0.1:port" once serving
	cmd  *exec.Cmd

	mu  sync.Mutex
	log bytes.Buffer // its standard error, the server's log
}

// startProc starts a server process with args (on 127.0.0.1, a fresh
// data directory) and waits for "serving on".
func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, args: append([]string{"--addr", "127.0.0.1:0", "--data", t.TempDir()}, args...)}
	p.start()
	t.Cleanup(p.kill)
	return p
}

func (p *proc) start() {
	p.t.Helper()
	cmd := exec.Command(os.Args[0], p.args...)
	cmd.Env = append(os.Environ(), serveEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.cmd = cmd
	go func() {
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log.Write(sc.Bytes())
			p.log.WriteByte('\n')
			p.mu.Unlock()
		}
	}()
	line := make(chan string, 1)
	go func() {
		r := bufio.NewReader(out)
		s, _ := r.ReadString('\n')
		line <- s
		io.Copy(io.Discard, r)
	}()
	select {
	case s := <-line:
		u, ok := strings.CutPrefix(strings.TrimSpace(s), "serving on ")
		if !ok {
			p.t.Fatalf("%s printed %q; its log:\n%s", p.name, s, p.logText())
		}
		p.url = strings.TrimSuffix(u, "/")
	case <-time.After(60 * time.Second):
		p.t.Fatalf("%s printed no URL in 60 s; its log:\n%s", p.name, p.logText())
	}
}

func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// kill ends the process at once (SIGKILL: nothing flushed or closed).
func (p *proc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
}

// restart starts the process again with the same arguments (a new port).
func (p *proc) restart() {
	p.t.Helper()
	p.kill()
	p.start()
}

// learner is one browser: a cookie jar, and the address it comes from
// (sent as X-Forwarded-For, which the replicas believe from 127.0.0.1).
type learner struct {
	c    *http.Client
	addr string
}

func newLearner(addr string) *learner {
	jar, _ := cookiejar.New(nil)
	return &learner{c: &http.Client{Jar: jar, Timeout: 30 * time.Second}, addr: addr}
}

// do sends a request to base+path; body, if any, is JSON.
func (l *learner) do(method, base, path, body string) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Origin", base)
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if l.addr != "" {
		req.Header.Set("X-Forwarded-For", l.addr)
	}
	res, err := l.c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, b, err
}

// submit posts a sweep on base and returns its id.
func (l *learner) submit(t *testing.T, base, body string) string {
	t.Helper()
	res, b, err := l.do("POST", base, "/api/sweeps", body)
	if err != nil {
		t.Fatal(err)
	}
	var acc struct{ ID string }
	json.Unmarshal(b, &acc)
	if res.StatusCode != http.StatusAccepted || acc.ID == "" {
		t.Fatalf("POST %s/api/sweeps: %d %s", base, res.StatusCode, b)
	}
	return acc.ID
}

// apiRun is the part of GET /api/runs/{id} these tests read.
type apiRun struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
	Rows   []struct {
		Window int `json:"window"`
		Sent   int `json:"sent"`
	} `json:"rows"`
}

func (l *learner) run(t *testing.T, base, id string) (apiRun, int) {
	t.Helper()
	res, b, err := l.do("GET", base, "/api/runs/"+id, "")
	if err != nil {
		return apiRun{}, 0
	}
	var r apiRun
	json.Unmarshal(b, &r)
	return r, res.StatusCode
}

// watch reads run id's stream on base from since until its terminal event
// or stop returns true for an event; it returns the events (panels left
// out) and whether the stream reached its end.
func watch(t *testing.T, base, id string, since int, stop func(streamEvent) bool) ([]streamEvent, bool) {
	t.Helper()
	ws := "ws" + strings.TrimPrefix(base, "http") + "/ws/runs/" + id + "?since=" + strconv.Itoa(since)
	conn, _, err := websocket.DefaultDialer.Dial(ws, http.Header{"Origin": {base}})
	if err != nil {
		t.Fatalf("dialling %s: %v", ws, err)
	}
	defer conn.Close()
	var got []streamEvent
	for {
		conn.SetReadDeadline(time.Now().Add(90 * time.Second))
		_, msg, err := conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure && len(got) > 0 && terminal(got[len(got)-1].Kind) {
				return got, true
			}
			t.Fatalf("the stream of %s on %s ended with %v after %+v", id, base, err, got)
		}
		var e streamEvent
		json.Unmarshal(msg, &e)
		if e.Kind == "panel" || e.Kind == "" {
			continue
		}
		got = append(got, e)
		if stop != nil && stop(e) {
			return got, false
		}
	}
}

// contiguous fails unless evs are numbered from first on, one by one.
func contiguous(t *testing.T, evs []streamEvent, first int) {
	t.Helper()
	for i, e := range evs {
		if e.Seq != first+i {
			t.Fatalf("event %d has seq %d, want %d: %+v", i, e.Seq, first+i, evs)
		}
	}
}

// sweepBody is a short real sweep: two windows of two seconds.
const sweepBody = `{"workers":4,"spin_ms":1,"wait_ms":4,"cpus":1,"rates":[20,20],"seconds":2,"seed":3}`

// waitFor polls cond every 100 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Past one machine, end to end on this one: a private Postgres, two web
// replicas and two runners, each a process of its own on 127.0.0.1, as
// docs/SCALING.md and compose's scale profile set them up. In order: a
// sweep submitted on replica A, run by a runner, watched from replica B,
// resumed on A after B is killed; a runner killed mid-run (its run ends
// "runner lost", the other runner goes on); Postgres stopped for 30 s
// mid-run (clear errors meanwhile, then the run ends done, its log
// contiguous with one terminal event); 500
// simultaneous submissions across both replicas (exactly the queue's
// capacity accepted).
func TestScaleOutEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Postgres, four server processes and real labs")
	}
	pg := startPrivatePostgres(t)
	db := pg.URL()
	const capacity = 8
	// The front door is open (--admit queue): this test is about the
	// shared queue's bound, and 500 submissions at one instant are far
	// past the door's bound, which would refuse most with 503 before
	// they reached the queue (the door's own tests are web/admission_test.go).
	web := func(name string) *proc {
		return startProc(t, name, "--role", "web", "--database-url", db, "--trusted-proxies", "127.0.0.1",
			"--queue", strconv.Itoa(capacity), "--queue-per-address", "3", "--admit", "queue")
	}
	runnerProc := func(name string) *proc {
		return startProc(t, name, "--role", "runner", "--database-url", db, "--runner-slots", "1")
	}
	a, b := web("replica A"), web("replica B")
	r1, r2 := runnerProc("runner 1"), runnerProc("runner 2")
	runners := []*proc{r1, r2}

	t.Run("watched on B, resumed on A after B is killed", func(t *testing.T) {
		l := newLearner("10.0.0.1")
		id := l.submit(t, a.url, sweepBody)
		// On B until the first row.
		seen, _ := watch(t, b.url, id, 0, func(e streamEvent) bool { return e.Kind == "row" })
		contiguous(t, seen, 1)
		b.kill()
		last := seen[len(seen)-1].Seq
		rest, ended := watch(t, a.url, id, last, nil)
		if !ended {
			t.Fatal("the resumed stream did not end")
		}
		contiguous(t, rest, last+1)
		if k := rest[len(rest)-1].Kind; k != "done" {
			t.Fatalf("the run ended %s: %+v", k, rest)
		}
		r, code := l.run(t, a.url, id)
		if code != 200 || r.Status != "done" || len(r.Rows) != 2 {
			t.Fatalf("GET /api/runs/%s on A: %d %+v", id, code, r)
		}
		b.restart()
		if r, code := l.run(t, b.url, id); code != 200 || r.Status != "done" || len(r.Rows) != 2 {
			t.Fatalf("GET /api/runs/%s on the restarted B: %d %+v", id, code, r)
		}
	})

	t.Run("a runner killed mid-run", func(t *testing.T) {
		l := newLearner("10.0.0.2")
		id := l.submit(t, a.url, `{"workers":4,"spin_ms":1,"wait_ms":4,"cpus":1,"rates":[20,20,20,20],"seconds":3,"seed":4}`)
		watch(t, b.url, id, 0, func(e streamEvent) bool { return e.Kind == "progress" })
		var holder *proc
		waitFor(t, 10*time.Second, "a runner's log to name the run", func() bool {
			for _, p := range runners {
				if strings.Contains(p.logText(), id) {
					holder = p
					return true
				}
			}
			return false
		})
		holder.kill()
		killed := time.Now()
		evs, ended := watch(t, b.url, id, 0, nil)
		t.Logf("the run's stream ended %v after its runner was killed", time.Since(killed).Round(time.Millisecond))
		if !ended {
			t.Fatal("the stream did not end")
		}
		contiguous(t, evs, 1)
		r, _ := l.run(t, a.url, id)
		if r.Status != "failed" || !strings.HasPrefix(r.Reason, "runner lost") {
			t.Fatalf("the killed runner's run: %+v", r)
		}
		// The other runner takes the next run.
		id2 := l.submit(t, b.url, sweepBody)
		evs, _ = watch(t, a.url, id2, 0, nil)
		if k := evs[len(evs)-1].Kind; k != "done" {
			t.Fatalf("the next run ended %s", k)
		}
		holder.restart()
	})

	t.Run("Postgres stopped mid-run", func(t *testing.T) {
		l := newLearner("10.0.0.3")
		id := l.submit(t, a.url, `{"workers":4,"spin_ms":1,"wait_ms":4,"cpus":1,"rates":[20,20,20],"seconds":3,"seed":5}`)
		seen, _ := watch(t, a.url, id, 0, func(e streamEvent) bool { return e.Kind == "row" })
		acked := 0
		for _, e := range seen {
			if e.Kind == "row" {
				acked++
			}
		}
		pg.stop()
		down := time.Now()
		// Meanwhile: a clear error, not a hang.
		res, body, err := l.do("GET", b.url, "/api/runs/"+id, "")
		if err != nil || res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("GET /api/runs/%s on B with Postgres down: %v %v %s", id, err, res, body)
		} else {
			t.Logf("with Postgres down, B answers %d: %s", res.StatusCode, body)
		}
		// Down for 30 s, three times the runners' 10 s heartbeat bound:
		// no reaper may take the runner for lost for the beats the outage
		// kept from being written, and the runner's writes wait.
		time.Sleep(30 * time.Second)
		pg.start()
		t.Logf("Postgres was down %v", time.Since(down).Round(time.Millisecond))
		// Recovery: the run, fine all along, ends done with every row.
		var r apiRun
		waitFor(t, 120*time.Second, "the run to end after Postgres came back", func() bool {
			var code int
			r, code = l.run(t, b.url, id)
			return code == 200 && (r.Status == "done" || r.Status == "failed" || r.Status == "interrupted")
		})
		t.Logf("the run across the stop ended %s: %q, %d rows (%d acknowledged before)", r.Status, r.Reason, len(r.Rows), acked)
		if r.Status != "done" || len(r.Rows) != 3 {
			for _, r := range runners {
				t.Logf("%s's log:\n%s", r.name, r.logText())
			}
			t.Fatalf("the run across a 30 s outage ended %s (%q) with %d of 3 rows: want done", r.Status, r.Reason, len(r.Rows))
		}
		// Every event it sent is stored: its whole log, from either
		// replica, is numbered 1, 2, ... to its end, with nothing missing
		// from the seconds Postgres was down.
		for _, p := range []*proc{a, b} {
			evs, ended := watch(t, p.url, id, 0, nil)
			if !ended {
				t.Fatalf("the stored stream on %s did not end", p.name)
			}
			if t.Failed() {
				break
			}
			for i, e := range evs {
				if e.Seq != i+1 {
					for _, r := range runners {
						t.Logf("%s's log:\n%s", r.name, r.logText())
					}
					break
				}
			}
			contiguous(t, evs, 1)
			for _, e := range evs[:len(evs)-1] {
				if terminal(e.Kind) {
					t.Fatalf("the stored log on %s has a terminal event (%d %s) before its end: %+v", p.name, e.Seq, e.Kind, evs)
				}
			}
			if len(evs) < len(seen) {
				t.Fatalf("%d events stored, %d were sent before Postgres stopped", len(evs), len(seen))
			}
		}
		id2 := l.submit(t, a.url, sweepBody)
		evs, _ := watch(t, b.url, id2, 0, nil)
		if k := evs[len(evs)-1].Kind; k != "done" {
			t.Fatalf("a run after Postgres came back ended %s", k)
		}
	})

	t.Run("500 simultaneous submissions across both replicas", func(t *testing.T) {
		const n = 500
		learners := make([]*learner, n)
		for i := range learners {
			learners[i] = newLearner(fmt.Sprintf("10.1.%d.%d", i/250, i%250+1))
		}
		codes := make([]int, n)
		retry := make([]string, n)
		ids := make([]string, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, l := range learners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				base := a.url
				if i%2 == 1 {
					base = b.url
				}
				<-start
				// 30 s windows: a run that ended during the burst would
				// free its place in the queue for one more (CI's burst
				// took 4 s, long enough for a 1 s run to end and a ninth
				// to be accepted).
				res, body, err := l.do("POST", base, "/api/sweeps", `{"workers":4,"spin_ms":1,"wait_ms":4,"cpus":1,"rates":[20],"seconds":30,"seed":6}`)
				if err != nil {
					codes[i] = -1
					return
				}
				codes[i], retry[i] = res.StatusCode, res.Header.Get("Retry-After")
				var acc struct{ ID string }
				json.Unmarshal(body, &acc)
				ids[i] = acc.ID
			}()
		}
		close(start)
		wg.Wait()
		count := map[int]int{}
		for i, c := range codes {
			count[c]++
			if c == http.StatusTooManyRequests {
				if s, err := strconv.Atoi(retry[i]); err != nil || s < 1 {
					t.Errorf("a 429 with Retry-After %q", retry[i])
				}
			}
		}
		t.Logf("500 submissions: %v", count)
		if count[http.StatusAccepted] != capacity || count[http.StatusTooManyRequests] != n-capacity {
			for i, id := range ids {
				if codes[i] == http.StatusAccepted {
					r, code := learners[i].run(t, a.url, id)
					t.Logf("accepted run %s: %d %s %q", id, code, r.Status, r.Reason)
				}
			}
			t.Fatalf("answers %v: want exactly %d accepted (the queue's capacity) and the rest 429", count, capacity)
		}
		// Cancel them so the processes stop clean.
		for i, id := range ids {
			if codes[i] == http.StatusAccepted {
				learners[i].do("POST", a.url, "/api/runs/"+id+"/cancel", "")
			}
		}
	})
}
