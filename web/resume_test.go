package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/gorilla/websocket"

	"capacitylab/labsvc"
	"capacitylab/runner"
)

// A sequence number means the same event for the life of a run: a watcher
// that saw a run live up to seq N and resumes with since=N once the
// runner no longer holds the run (evicted by later runs, or after a
// restart) gets every later event once, in order, with the numbers and
// the very messages it would have had live, ending with the terminal one.
func TestStoredStreamKeepsSeq(t *testing.T) {
	lab := buildLab(t)
	dbPath := filepath.Join(t.TempDir(), "runs.db")
	var rn *runner.Runner
	site := newSiteAt(t, dbPath, func(d *Deps) {
		var err error
		// Retain 1: the runner keeps only the last finished run's log.
		rn, err = runner.New(runner.Config{Load: testLoad(t), Lab: labsvc.ChildCommand{Path: lab, Args: []string{"lab-child"}}, Retain: 1, Store: d.Store})
		if err != nil {
			t.Fatal(err)
		}
		d.Runner = rn
	})
	t.Cleanup(func() { rn.Close() })
	sweep := `{"workers":4,"spin_ms":1,"wait_ms":4,"cpus":1,"rates":[40,80],"seconds":1,"seed":3}`
	run := func() (string, [][]byte, []runner.Event) {
		t.Helper()
		code, _, m := postSweep(t, site.client(), site.srv.URL, sweep)
		if code != http.StatusAccepted {
			t.Fatalf("POST: %d %v", code, m)
		}
		id := m["id"].(string)
		conn := dial(t, site.srv.URL, id, 0)
		defer conn.Close()
		raw, es := readRaw(t, conn)
		if len(es) == 0 || !es[len(es)-1].Kind.Terminal() {
			t.Fatalf("run %s: live stream ended with %+v", id, es)
		}
		return id, raw, es
	}
	id, raw, live := run()
	// N: a progress event of the second window, as a watcher that lost
	// its connection mid-run last saw.
	n := -1
	for i, e := range live {
		if e.Kind == runner.KindProgress && e.Window == 1 {
			n = i
			break
		}
	}
	if n < 0 {
		t.Fatalf("no progress in window 2: %+v", live)
	}
	since := live[n].Seq
	// What it would have had live: the runner's log after N (the watcher
	// above got the same, but for a progress a newer one may replace).
	logged, sub, err := rn.Subscribe(id, since)
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	checkStream(t, "live", live[n+1:], logged)
	var wantRaw [][]byte
	for _, e := range logged {
		wantRaw = append(wantRaw, e.JSON)
	}
	_ = raw

	check := func(name, base string) {
		t.Helper()
		conn := dial(t, base, id, since)
		defer conn.Close()
		got, es := readRaw(t, conn)
		if len(got) != len(wantRaw) {
			t.Fatalf("%s: resumed with since=%d: %d events (%+v), want the %d after it", name, since, len(es), es, len(wantRaw))
		}
		for i := range got {
			if !bytes.Equal(got[i], wantRaw[i]) {
				t.Errorf("%s: event %d is\n%s\nwant, as sent live,\n%s", name, i, got[i], wantRaw[i])
			}
		}
	}
	// Evicted: two later runs push it out of the runner's memory.
	run()
	run()
	if _, ok := rn.Get(id); ok {
		t.Fatal("the first run is still in the runner's memory; the test needs it evicted")
	}
	check("after eviction", site.srv.URL)

	// Restarted: a new server on the same file, no runner at all.
	site.srv.Close()
	site2 := newSiteAt(t, dbPath, nil)
	check("after a restart", site2.srv.URL)
}

// readRaw reads a run stream's event messages (not its panel messages)
// until the server closes it with 1000, as bytes and decoded.
func readRaw(t *testing.T, conn *websocket.Conn) ([][]byte, []runner.Event) {
	t.Helper()
	var raw [][]byte
	var es []runner.Event
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				t.Fatalf("stream ended with %v after %d events", err, len(es))
			}
			return raw, es
		}
		var e runner.Event
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatal(err)
		}
		if e.Kind == "panel" {
			continue
		}
		raw, es = append(raw, data), append(es, e)
	}
}
