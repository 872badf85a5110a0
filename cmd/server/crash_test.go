package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// serverProcess starts this test binary as a real server process (see
// serveEnv) on 127.0.0.1 with data in dir, and returns its URL and the
// process.
func serverProcess(t *testing.T, dir string, args ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--addr", "127.0.0.1:0", "--data", dir}, args...)...)
	cmd.Env = append(os.Environ(), serveEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		u, ok := strings.CutPrefix(strings.TrimSpace(s), "serving on ")
		if !ok {
			t.Fatalf("server printed %q", s)
		}
		return strings.TrimSuffix(u, "/"), cmd
	case <-time.After(20 * time.Second):
		t.Fatal("the server process printed no URL in 20 s")
	}
	return "", nil
}

// streamEvent is the part of a run stream's message this test reads.
type streamEvent struct {
	Seq    int    `json:"seq"`
	Kind   string `json:"kind"`
	Window int    `json:"window"`
}

func terminal(kind string) bool {
	return kind == "done" || kind == "failed" || kind == "cancelled" || kind == "interrupted"
}

// A watcher that saw a run live up to seq N, whose server was then killed
// (SIGKILL: nothing is flushed or closed), resumes against the restarted
// server with since=N and gets every later event once, in order, numbered
// on from N, ending with the terminal one: the run is interrupted, and
// runs.js, which waits for a terminal event, stops showing "Running".
func TestRunStreamResumesAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process and a real lab, and runs a sweep")
	}
	data := t.TempDir()
	base, cmd := serverProcess(t, data)
	req, _ := http.NewRequest("POST", base+"/api/sweeps", strings.NewReader(`{"workers":4,"spin_ms":1,"wait_ms":4,"cpus":1,"rates":[20,20,20],"seconds":2,"seed":3}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var acc struct{ ID string }
	json.NewDecoder(res.Body).Decode(&acc)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted || acc.ID == "" {
		t.Fatalf("POST /api/sweeps: %d %+v", res.StatusCode, acc)
	}
	wsBase := "ws" + strings.TrimPrefix(base, "http")
	dial := func(base string, since int) *websocket.Conn {
		t.Helper()
		conn, _, err := websocket.DefaultDialer.Dial(base+"/ws/runs/"+acc.ID+"?since="+strconv.Itoa(since), http.Header{"Origin": {strings.Replace(base, "ws", "http", 1)}})
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}
	// Watch live until a progress event of the second window.
	conn := dial(wsBase, 0)
	var seen int
	for {
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("live stream: %v", err)
		}
		var e streamEvent
		json.Unmarshal(msg, &e)
		if e.Kind == "panel" {
			continue
		}
		if terminal(e.Kind) {
			t.Fatalf("the run ended (%s) before the test could kill the server", e.Kind)
		}
		seen = e.Seq
		if e.Kind == "progress" && e.Window == 1 {
			break
		}
	}
	conn.Close()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	// The same data, a new server (in this process).
	r := start(t, nil, "--data", data)
	rwsBase := "ws" + strings.TrimPrefix(r.url, "http")
	conn = dial(rwsBase, seen)
	defer conn.Close()
	var got []streamEvent
	for {
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, msg, err := conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure {
				t.Fatalf("resumed stream ended with %v after %+v", err, got)
			}
			break
		}
		var e streamEvent
		json.Unmarshal(msg, &e)
		if e.Kind != "panel" {
			got = append(got, e)
		}
	}
	if len(got) == 0 || got[len(got)-1].Kind != "interrupted" {
		t.Fatalf("resumed with since=%d after the kill: %+v, want the later events ending with interrupted", seen, got)
	}
	for i, e := range got {
		if e.Seq != seen+1+i {
			t.Errorf("event %d of the resumed stream has seq %d, want %d: every later event once, in order (%+v)", i, e.Seq, seen+1+i, got)
		}
	}
	// Resuming from the terminal event gets nothing more, and a clean end.
	conn2 := dial(rwsBase, got[len(got)-1].Seq)
	defer conn2.Close()
	conn2.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, msg, err := conn2.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Errorf("resumed after the terminal event: %s %v, want a normal close", msg, err)
	}
}
