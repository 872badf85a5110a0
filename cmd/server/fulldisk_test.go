package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory and
// unmounts it when the test ends. It needs root (CI runs as root); without
// it the test is skipped, saying so loudly.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("SKIPPED, NOT RUN: cannot mount a %s tmpfs to fill (%v: %s); this needs root, as CI has. "+
			"web's TestFullStoreAnswers503 and runner's TestRunNotSavedIsNotDone cover a full disk without it", size, err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file in dir until the file system is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	// And the last few bytes.
	for {
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
	return path
}

// The server on a really full disk (a small tmpfs filled to the last
// byte): a run whose data cannot be stored ends failed saying so, never
// done; a change answers 503 saying the disk is full; /healthz says writes
// are failing; killed and restarted on the full disk, the server starts
// and serves what it stored; with room again, writes work and /healthz
// says ok.
func TestFullDiskTmpfs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes and a real lab")
	}
	data := mountTmpfs(t, "16m")
	base, cmd := serverProcess(t, data)
	jar, _ := cookiejar.New(nil)
	learner := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	lock := func(c *http.Client, base string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/lessons/sample/predict/sample-predict", strings.NewReader(url.Values{"action": {"lock"}, "option": {"c"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := lock(learner, base); code != http.StatusOK {
		t.Fatalf("a prediction with room: %d %s", code, body)
	}
	// A run; the disk fills as its first window begins.
	req, _ := http.NewRequest("POST", base+"/api/sweeps", strings.NewReader(`{"workers":4,"spin_ms":0,"wait_ms":1,"cpus":1,"rates":[300,300,300],"seconds":1,"seed":3}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var acc struct{ ID string }
	json.NewDecoder(res.Body).Decode(&acc)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /api/sweeps: %d", res.StatusCode)
	}
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws/runs/"+acc.ID, http.Header{"Origin": {base}})
	if err != nil {
		t.Fatal(err)
	}
	var filler string
	var end struct {
		Kind, Reason string
	}
	for {
		conn.SetReadDeadline(time.Now().Add(60 * time.Second))
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("run stream: %v", err)
		}
		var e struct{ Kind, Reason string }
		json.Unmarshal(msg, &e)
		if e.Kind == "started" && filler == "" {
			filler = fill(t, data)
		}
		if terminal(e.Kind) {
			end = e
			break
		}
	}
	conn.Close()
	if end.Kind != "failed" || !strings.Contains(end.Reason, "could not be saved") || !strings.Contains(end.Reason, "disk is full") {
		t.Errorf("the run on a filling disk ended %q: %q; want failed, saying its data could not be saved because the disk is full", end.Kind, end.Reason)
	}
	// Reads work; a change is refused with 503 saying why.
	if code, _ := get(t, learner, base+"/lessons/sample"); code != http.StatusOK {
		t.Errorf("a lesson page on the full disk: %d", code)
	}
	if code, body := lock(&http.Client{}, base); code != http.StatusServiceUnavailable || !strings.Contains(body, "disk is full") {
		t.Errorf("a new learner's prediction on the full disk: %d %s; want 503 saying the disk is full", code, body)
	}
	if code, body := get(t, http.DefaultClient, base+"/healthz"); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "degraded: store writes failing") {
		t.Errorf("/healthz on the full disk: %d %q", code, body)
	}

	// Killed and restarted on the full disk: it starts and serves reads.
	cmd.Process.Kill()
	cmd.Wait()
	base, cmd = serverProcess(t, data)
	if code, body := get(t, learner, base+"/lessons/sample"); code != http.StatusOK || !strings.Contains(body, "You predicted") {
		t.Errorf("after a restart on the full disk the learner's lesson page: %d, prediction shown %v", code, strings.Contains(body, "You predicted"))
	}
	code, body := get(t, http.DefaultClient, base+"/api/runs/"+acc.ID)
	if code != http.StatusOK || strings.Contains(body, `"status": "done"`) || strings.Contains(body, `"status": "running"`) {
		t.Errorf("the run after a restart on the full disk: %d %s; want it shown, neither done nor running", code, body)
	}
	// Stopped cleanly and started again on the full disk (the database
	// must then be opened without its write-ahead files): still served.
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	base, cmd = serverProcess(t, data)
	if code, body := get(t, learner, base+"/lessons/sample"); code != http.StatusOK || !strings.Contains(body, "You predicted") {
		t.Errorf("after a clean restart on the full disk: %d, prediction shown %v", code, strings.Contains(body, "You predicted"))
	}

	// Room again: after a restart (a store opened read-only stays so),
	// writes work and /healthz says ok.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	base, cmd = serverProcess(t, data)
	if code, body := lock(&http.Client{}, base); code != http.StatusOK {
		t.Errorf("a prediction with room again: %d %s", code, body)
	}
	if code, body := get(t, http.DefaultClient, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz with room again: %d %q", code, body)
	}

	// Stopped cleanly with room (the write-ahead files are gone), the
	// disk filled, then started: SQLite cannot create its WAL index, so
	// the store is opened read-only; pages are served, changes refused.
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(data, dbFile+"-shm")); err == nil {
		t.Fatal("the WAL index outlived a clean stop, so the read-only start would not be tested")
	}
	fill(t, data)
	base, _ = serverProcess(t, data)
	if code, body := get(t, learner, base+"/lessons/sample"); code != http.StatusOK || !strings.Contains(body, "You predicted") {
		t.Errorf("started on a full disk after a clean stop: lesson page %d, prediction shown %v", code, strings.Contains(body, "You predicted"))
	}
	if code, body := lock(&http.Client{}, base); code != http.StatusServiceUnavailable || !strings.Contains(body, "disk is full") {
		t.Errorf("a prediction on a store opened read-only: %d %s; want 503 saying the disk is full", code, body)
	}
	if code, body := get(t, http.DefaultClient, base+"/healthz"); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "degraded") {
		t.Errorf("/healthz on a store opened read-only: %d %q", code, body)
	}
}
