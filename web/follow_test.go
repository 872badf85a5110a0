package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"capacitylab/labsvc"
	"capacitylab/runner"
	"capacitylab/store"
	"capacitylab/store/storetest"
)

// postgresSchemaURL makes a schema of the test's own in the database
// CAPACITYLAB_TEST_POSTGRES names and returns the URL with it as the
// search path, or skips the test loudly (storetest.PostgresURL).
func postgresSchemaURL(t testing.TB, what string) string {
	t.Helper()
	return storetest.PostgresURL(t, what)
}

// replicaSite starts a server with SharedRuns on its own store handle of
// the Postgres schema at dbURL; with lab set it holds a runner that runs
// real lab and load children.
func replicaSite(t *testing.T, dbURL, lab string) (*testSite, *runner.Runner) {
	t.Helper()
	st, err := store.OpenPostgres(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	var rn *runner.Runner
	site := newSiteOn(t, st, "", func(d *Deps) {
		d.SharedRuns = true
		if lab == "" {
			return
		}
		rn, err = runner.New(runner.Config{Load: testLoad(t), Lab: labsvc.ChildCommand{Path: lab, Args: []string{"lab-child"}}, Store: d.Store})
		if err != nil {
			t.Fatal(err)
		}
		d.Runner = rn
	})
	if rn != nil {
		t.Cleanup(func() { rn.Close() })
	}
	return site, rn
}

// streamRead is what one websocket client read from a run stream.
type streamRead struct {
	events []runner.Event
	raw    [][]byte       // the events' messages as sent
	panels []panelMessage // the panel messages, in order
	code   int            // the close code; 0 when stop ended the reading
	err    error
}

// readStream reads a run stream until the server closes it or stop
// returns true, from any goroutine (it reports, it does not fail).
func readStream(conn *websocket.Conn, stop func(runner.Event) bool) streamRead {
	var r streamRead
	for {
		conn.SetReadDeadline(time.Now().Add(60 * time.Second))
		_, data, err := conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				r.code = ce.Code
				return r
			}
			r.err = fmt.Errorf("reading the stream: %w (after %d events)", err, len(r.events))
			return r
		}
		var e runner.Event
		if err := json.Unmarshal(data, &e); err != nil {
			r.err = fmt.Errorf("message %s: %w", data, err)
			return r
		}
		if e.Kind == "panel" {
			var p panelMessage
			json.Unmarshal(data, &p)
			r.panels = append(r.panels, p)
			continue
		}
		r.events, r.raw = append(r.events, e), append(r.raw, data)
		if stop != nil && stop(e) {
			return r
		}
	}
}

// metric reads one of a server's metrics from /metrics.
func metric(t *testing.T, site *testSite, name string) string {
	t.Helper()
	body := site.get(nil, "/metrics").body
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	return m[1]
}

// Two web servers share one Postgres; A holds the runner and runs a real
// sweep, B and C hold no runner. Every client on B gets A's events in
// order with their seqs and JSON as logged, each row's and the end's
// panel, and the end; B serves the run's live state from the store; a
// client that leaves B mid-run and resumes on C, or on A, with its last
// seq gets exactly the rest; and B's 60 sockets on the run share one
// store watch.
func TestFollowRunAcrossServers(t *testing.T) {
	dbURL := postgresSchemaURL(t, "the streams of runs held by another server")
	lab := buildLab(t)
	a, rn := replicaSite(t, dbURL, lab)
	b, _ := replicaSite(t, dbURL, "")
	c, _ := replicaSite(t, dbURL, "")

	// Two runs: the runner runs one at a time, so the second waits.
	sweep := `{"workers":4,"spin_ms":1,"wait_ms":4,"cpus":1,"rates":[40,80,120],"seconds":1,"seed":3}`
	var ids []string
	for range 2 {
		code, _, m := postSweep(t, a.client(), a.srv.URL, sweep) // two learners
		if code != http.StatusAccepted {
			t.Fatalf("POST: %d %v", code, m)
		}
		ids = append(ids, m["id"].(string))
	}
	id := ids[0]

	// B's live view of the waiting run comes from the store, once the
	// first has started (the runner then tells the second it is next).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if snap, _ := rn.Get(id); snap.Status == store.RunRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first run did not start in 30 s")
		}
	}
	var queued runView
	if res := b.get(nil, "/api/runs/"+ids[1]); res.StatusCode != 200 || json.Unmarshal([]byte(res.body), &queued) != nil {
		t.Fatalf("GET /api/runs/%s on B: %d %s", ids[1], res.StatusCode, res.body)
	}
	if queued.Status != store.RunQueued || queued.Position != 1 || queued.EstimatedStart.IsZero() || queued.LastSeq < 1 {
		t.Errorf("B's view of the waiting run: status %s, position %d, estimated start %v, last seq %d; want queued, 1, a time, 1 or more",
			queued.Status, queued.Position, queued.EstimatedStart, queued.LastSeq)
	}
	if page := b.get(nil, "/runs/"+ids[1]); !strings.HasPrefix(testIDText(t, page.body, "run-status"), "Queued: number 1 in line") {
		t.Errorf("B's page of the waiting run says %q", testIDText(t, page.body, "run-status"))
	}

	const watchers = 60
	var wg sync.WaitGroup
	reads := make([]streamRead, watchers)
	conns := make([]*websocket.Conn, watchers)
	for i := range watchers {
		conns[i] = dial(t, b.srv.URL, id, 0)
		defer conns[i].Close()
	}
	if got := metric(t, b, "capacitylab_followed_run_watches_total"); got != "1" {
		t.Errorf("%d sockets on one run opened %s store watches on B, want 1", watchers, got)
	}
	if got := metric(t, b, "capacitylab_followed_runs"); got != "1" {
		t.Errorf("B follows %s runs, want 1", got)
	}
	for i := range watchers {
		wg.Go(func() { reads[i] = readStream(conns[i], nil) })
	}

	// Movers: on B until the first row, then on C, or on A, from the
	// last seq they saw.
	moves := []*testSite{c, a}
	names := []string{"C", "A"}
	movers := make([]*websocket.Conn, len(moves))
	firsts := make([]streamRead, len(moves))
	for i := range moves {
		movers[i] = dial(t, b.srv.URL, id, 0)
		defer movers[i].Close()
	}
	for i := range moves {
		firsts[i] = readStream(movers[i], func(e runner.Event) bool { return e.Kind == runner.KindRow })
		movers[i].Close()
		if firsts[i].err != nil || len(firsts[i].events) == 0 {
			t.Fatalf("mover to %s on B: %v", names[i], firsts[i].err)
		}
	}
	rests := make([]streamRead, len(moves))
	for i, to := range moves {
		since := firsts[i].events[len(firsts[i].events)-1].Seq
		again := dial(t, to.srv.URL, id, since)
		defer again.Close()
		wg.Go(func() { rests[i] = readStream(again, nil) })
	}
	// B's view mid-run, from the store.
	var mid runView
	if res := b.get(nil, "/api/runs/"+id); res.StatusCode != 200 || json.Unmarshal([]byte(res.body), &mid) != nil {
		t.Fatalf("GET /api/runs/%s on B: %d %s", id, res.StatusCode, res.body)
	}
	if seq := firsts[0].events[len(firsts[0].events)-1].Seq; mid.Status != store.RunRunning || len(mid.Rows) < 1 || mid.LastSeq < seq {
		t.Errorf("B's view mid-run: status %s, %d rows, last seq %d; want running, a row or more, seq %d or more", mid.Status, len(mid.Rows), mid.LastSeq, seq)
	}
	// Its panel (what a page fetches) is live, from where the stream is.
	panel := b.get(nil, "/runs/"+id+"/panel").body
	if !strings.Contains(panel, `data-live="true"`) || !strings.HasPrefix(testIDText(t, panel, "run-status"), "Running: window ") {
		t.Errorf("B's panel mid-run: status %q, live %v", testIDText(t, panel, "run-status"), strings.Contains(panel, `data-live="true"`))
	}
	wg.Wait()

	// The runner's log, as A logged it.
	logged, sub, err := rn.Subscribe(id, 0)
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	if len(logged) == 0 || logged[len(logged)-1].Kind != runner.KindDone {
		t.Fatalf("the run did not end done: %+v", logged)
	}
	bySeq := map[int]runner.Event{}
	for _, e := range logged {
		bySeq[e.Seq] = e
	}
	rowPanel := regexp.MustCompile(`data-window="\d+"`)
	for i, r := range reads {
		name := fmt.Sprintf("watcher %d on B", i)
		if r.err != nil || r.code != websocket.CloseNormalClosure {
			t.Fatalf("%s: close %d, %v", name, r.code, r.err)
		}
		checkStream(t, name, r.events, logged)
		for j, e := range r.events {
			if want := bySeq[e.Seq].JSON; string(r.raw[j]) != string(want) {
				t.Fatalf("%s: event seq %d is\n%s\nwant, as A logged it,\n%s", name, e.Seq, r.raw[j], want)
			}
		}
		// Each row's panel, then the end's, as a held run's.
		rows := 0
		panels := map[int]string{}
		for _, p := range r.panels {
			panels[p.Seq] = p.Panel
		}
		for _, e := range r.events {
			if e.Kind != runner.KindRow && !e.Kind.Terminal() {
				continue
			}
			if e.Kind == runner.KindRow {
				rows++
			}
			p, ok := panels[e.Seq]
			if !ok {
				t.Fatalf("%s: no panel message after the %s of seq %d (panels %v)", name, e.Kind, e.Seq, len(r.panels))
			}
			if got := len(rowPanel.FindAllString(p, -1)); got != rows {
				t.Errorf("%s: the panel after seq %d shows %d rows, want %d", name, e.Seq, got, rows)
			}
		}
		if rows != 3 {
			t.Errorf("%s: %d rows, want 3", name, rows)
		}
	}
	for i, rest := range rests {
		name := "mover from B to " + names[i]
		if rest.err != nil || rest.code != websocket.CloseNormalClosure {
			t.Fatalf("%s: close %d, %v", name, rest.code, rest.err)
		}
		es := append(firsts[i].events, rest.events...)
		checkStream(t, name, es, logged)
		if last := es[len(es)-1]; last.Seq != logged[len(logged)-1].Seq {
			t.Errorf("%s ended at seq %d, want %d", name, last.Seq, logged[len(logged)-1].Seq)
		}
	}
	// Once every socket is gone, B follows nothing.
	deadline := time.Now().Add(10 * time.Second)
	for metric(t, b, "capacitylab_followed_runs") != "0" {
		if time.Now().After(deadline) {
			t.Fatal("B still follows the run after its end and its sockets closed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The ended run on B: done, as stored, and the stream a stored one.
	var done runView
	if res := b.get(nil, "/api/runs/"+id); json.Unmarshal([]byte(res.body), &done) != nil || done.Status != store.RunDone || len(done.Rows) != 3 {
		t.Errorf("B's view after the end: %d %s", res.StatusCode, res.body)
	}
	if panel := b.get(nil, "/runs/"+id+"/panel").body; !strings.HasPrefix(testIDText(t, panel, "run-status"), "Done: all 3 windows") {
		t.Errorf("B's panel after the end (and after one fetched mid-run) says %q", testIDText(t, panel, "run-status"))
	}
}

// Without SharedRuns (one server) a run stored running that the runner
// does not hold is over: its page says interrupted and its stream ends at
// once with the interrupted event, as before servers shared a store,
// dated as its last stored event.
func TestStoredRunningIsOverOnOneServer(t *testing.T) {
	site := newSite(t)
	ctx := context.Background()
	req := `{"workers":4,"spin_ms":1,"wait_ms":4,"cpus":1,"rates":[40],"seconds":1}`
	if err := site.store.SaveRun(ctx, store.Run{ID: "r-left", Learner: "someone", Status: store.RunRunning, Request: json.RawMessage(req), CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ev := runner.Event{Seq: 1, Kind: runner.KindQueued, Position: 1, At: time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)}
	ev.JSON, _ = json.Marshal(ev)
	if err := site.store.AddRunEvent(ctx, "r-left", store.RunEvent{Seq: 1, Kind: string(ev.Kind), JSON: ev.JSON}); err != nil {
		t.Fatal(err)
	}
	var v runView
	if res := site.get(nil, "/api/runs/r-left"); json.Unmarshal([]byte(res.body), &v) != nil || v.Status != store.RunInterrupted || v.LastSeq != 1 {
		t.Errorf("GET /api/runs/r-left: %d %s; want interrupted, last_seq 1 (its one stored event)", res.StatusCode, res.body)
	}
	conn := dial(t, site.srv.URL, "r-left", 0)
	defer conn.Close()
	r := readStream(conn, nil)
	if r.err != nil || r.code != websocket.CloseNormalClosure || len(r.events) != 2 || r.events[1].Kind != runner.KindInterrupted || r.events[1].Seq != 2 {
		t.Errorf("stream: close %d, %v, events %+v; want queued then interrupted (seq 2)", r.code, r.err, r.events)
	} else if !r.events[1].At.Equal(ev.At) {
		// Its end was never stored: no date of its own, but not 0001-01-01.
		t.Errorf("the interrupted event is dated %v, want its last stored event's time, %v", r.events[1].At, ev.At)
	}
	if !strings.Contains(v.Reason, "stopped") {
		t.Errorf("reason %q", v.Reason)
	}
}

// A follower hands on each event as it is stored (the wake-up), once,
// and ends a run whose status became final though its terminal event was
// never stored (a runner that could not write it) at its next check,
// with the terminal event the status says, numbered after the last
// stored one; the last socket to go stops it.
func TestFollowerEndsWithTheStoredStatus(t *testing.T) {
	st, err := store.Open(t.TempDir() + "/f.db")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	run := store.Run{ID: "r-away", Learner: "someone", Status: store.RunRunning, CreatedAt: time.Now(),
		Request: json.RawMessage(`{"workers":4,"spin_ms":1,"wait_ms":4,"cpus":1,"rates":[40,80],"seconds":1}`)}
	if err := st.SaveRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	add := func(seq int, kind runner.Kind) {
		t.Helper()
		e := runner.Event{Seq: seq, Kind: kind}
		e.JSON, _ = json.Marshal(e)
		if err := st.AddRunEvent(ctx, run.ID, store.RunEvent{Seq: seq, Kind: string(kind), JSON: e.JSON}); err != nil {
			t.Fatal(err)
		}
	}
	add(1, runner.KindQueued)
	add(2, runner.KindStarted)
	s := &server{store: st, log: slog.New(slog.DiscardHandler)}
	fs := newFollows(st, s.log, s.storedLog, prometheus.NewRegistry())
	fs.check = 200 * time.Millisecond
	f, err := fs.acquire(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	replay, sub := f.relay.Subscribe(1)
	defer sub.Close()
	if len(replay) != 1 || replay[0].Seq != 2 {
		t.Fatalf("replay after seq 1: %+v, want seq 2", replay)
	}
	take := func(want ...runner.Kind) {
		t.Helper()
		var got []runner.Event
		for len(got) < len(want) {
			select {
			case <-sub.Ready():
				es, _ := sub.Take()
				got = append(got, es...)
			case <-time.After(5 * time.Second):
				t.Fatalf("got %+v, want %v", got, want)
			}
		}
		for i, e := range got {
			if i >= len(want) || e.Kind != want[i] || e.Seq != 3+i {
				t.Fatalf("got %+v, want %v from seq 3", got, want)
			}
		}
	}
	add(3, runner.KindProgress)
	add(3, runner.KindProgress) // written again: handed on once
	take(runner.KindProgress)
	run.Status, run.Reason, run.EndedAt = store.RunFailed, "runner lost: test", time.Now()
	if err := st.SaveRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.Ready():
		es, more := sub.Take()
		if len(es) != 1 || es[0].Kind != runner.KindFailed || es[0].Seq != 4 || es[0].Reason != "runner lost: test" || more {
			t.Fatalf("after the status became final: %+v (more %v), want failed seq 4 with its reason, the end", es, more)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the follower did not end the run within 5 s of its final status (check every 200 ms)")
	}
	// The follower hands on the terminal event, then stops: wait for it.
	deadline := time.Now().Add(5 * time.Second)
	running, watches := fs.counts()
	for running != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		running, watches = fs.counts()
	}
	if running != 0 || watches != 1 {
		t.Errorf("5 s after the end: %d followers running, %d watches opened; want 0 and 1", running, watches)
	}
	fs.release(f)
}

// A run over time followed from the store: every watcher gets every
// sample event, and the time chart redrawn while the window is measured
// goes to a replica's watchers only while that replica has at most
// liveChartWatchers of them (counted per replica): C's one watcher gets
// it, B's nine get the chart with the row.
func TestFollowRunOverTime(t *testing.T) {
	dbURL := postgresSchemaURL(t, "the streams of runs over time held by another server")
	lab := buildLab(t)
	a, _ := replicaSite(t, dbURL, lab)
	b, _ := replicaSite(t, dbURL, "")
	c, _ := replicaSite(t, dbURL, "")
	// The first run keeps the runner busy while the watchers connect, so
	// they are all there before the second's first sample.
	if code, _, m := postSweep(t, a.client(), a.srv.URL, `{"workers":4,"spin_ms":0,"wait_ms":10,"cpus":1,"rates":[20],"seconds":2,"seed":3}`); code != http.StatusAccepted {
		t.Fatalf("POST the first run: %d %v", code, m)
	}
	code, _, m := postSweep(t, a.client(), a.srv.URL, `{"workers":4,"spin_ms":0,"wait_ms":10,"cpus":1,"rates":[40],"seconds":7,"seed":3,"over_time":true}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST: %d %v", code, m)
	}
	id := m["id"].(string)
	sites := []*testSite{c}
	for range liveChartWatchers + 1 {
		sites = append(sites, b)
	}
	reads := make([]streamRead, len(sites))
	var wg sync.WaitGroup
	for i, site := range sites {
		conn := dial(t, site.srv.URL, id, 0)
		defer conn.Close()
		wg.Go(func() { reads[i] = readStream(conn, nil) })
	}
	wg.Wait()
	samplesPanel := regexp.MustCompile(`data-testid="run-time-chart" data-samples="(\d+)"`)
	for i, r := range reads {
		name := fmt.Sprintf("watcher %d on B", i)
		if i == 0 {
			name = "the watcher on C"
		}
		if r.err != nil || r.code != websocket.CloseNormalClosure {
			t.Fatalf("%s: close %d, %v", name, r.code, r.err)
		}
		samples, rowSeq := map[int]bool{}, 0
		for _, e := range r.events {
			switch e.Kind {
			case runner.KindSample:
				samples[e.Seq] = true
			case runner.KindRow:
				rowSeq = e.Seq
			}
		}
		if len(samples) < 7 || rowSeq == 0 {
			t.Fatalf("%s: %d sample events and row seq %d: want every second of the 7 s window, then the row", name, len(samples), rowSeq)
		}
		live := 0
		for _, p := range r.panels {
			if p.Seq >= rowSeq {
				continue
			}
			live++
			m := samplesPanel.FindStringSubmatch(p.Panel)
			if m == nil {
				t.Fatalf("%s: the panel after seq %d has no time chart:\n%s", name, p.Seq, p.Panel)
			}
			before := 0
			for seq := range samples {
				if seq <= p.Seq {
					before++
				}
			}
			if n, _ := strconv.Atoi(m[1]); n < before {
				t.Errorf("%s: the time chart after seq %d shows %d samples, want the %d sent by then or more", name, p.Seq, n, before)
			}
		}
		switch {
		case i == 0 && live == 0:
			t.Errorf("%s, alone on its server, got no time chart while the window was measured", name)
		case i > 0 && live != 0:
			t.Errorf("%s got %d panels while the window was measured: want none with %d watching on B (liveChartWatchers %d)", name, live, liveChartWatchers+1, liveChartWatchers)
		}
	}
}

// A client that resumes on a server whose follower is behind it (it saw
// seq 3 elsewhere; this server's relay has 2) gets neither seq 3 again
// nor a gap: only the events after its since.
func TestResumeAheadOfTheFollower(t *testing.T) {
	relay := runner.NewRelay(0)
	ev := func(seq int, kind runner.Kind) runner.Event {
		e := runner.Event{Seq: seq, Kind: kind}
		e.JSON, _ = json.Marshal(e)
		return e
	}
	relay.Add([]runner.Event{ev(1, runner.KindQueued), ev(2, runner.KindStarted)})
	replay, sub := relay.Subscribe(3)
	defer sub.Close()
	src := newRunSource(replay, sub, 3, nil)
	if msgs, ended, _ := src.Take(); len(msgs) != 0 || ended {
		t.Fatalf("replay after seq 3 with the relay at 2: %q (ended %v), want nothing yet", msgs, ended)
	}
	relay.Add([]runner.Event{ev(3, runner.KindSample), ev(4, runner.KindProgress), ev(5, runner.KindDone)})
	var got []runner.Event
	for ended := false; !ended; {
		select {
		case <-src.Ready():
		case <-time.After(5 * time.Second):
			t.Fatalf("no end after %+v", got)
		}
		var msgs [][]byte
		msgs, ended, _ = src.Take()
		for _, m := range msgs {
			var e runner.Event
			json.Unmarshal(m, &e)
			got = append(got, e)
		}
	}
	// The relay hands 3 to the subscription; the source does not send it.
	if len(got) != 2 || got[0].Seq != 4 || got[1].Seq != 5 {
		t.Errorf("resumed with since=3: %+v, want seq 4 and 5", got)
	}
}
