package web

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"
	"golang.org/x/net/html"

	"capacitylab/labsvc"
	"capacitylab/measure"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
)

// buildLab builds cmd/lab, whose hidden "lab-child" mode is what the runner
// starts for each run, and returns its path.
func buildLab(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lab")
	out, err := exec.Command("go", "build", "-o", bin, "capacitylab/cmd/lab").CombinedOutput()
	if err != nil {
		t.Fatalf("building cmd/lab: %v\n%s", err, out)
	}
	return bin
}

// loadChildEnv makes this test binary a run's load child (measure.ChildMain
// in TestMain): the generator the runner starts for each run beside its
// lab child.
const loadChildEnv = "CAPACITYLAB_WEB_TEST_LOAD_CHILD"

// testLoad is the ChildCommand that starts this test binary as a load
// child.
func testLoad(t testing.TB) labsvc.ChildCommand {
	t.Helper()
	cc, err := labsvc.SelfCommand(loadChildEnv)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// newRunSite starts a real server with a runner whose runs start real lab
// children from labBin (any path when no run will start).
func newRunSite(t *testing.T, dbPath, labBin string, capacity int) (*testSite, *runner.Runner) {
	t.Helper()
	var rn *runner.Runner
	site := newSiteAt(t, dbPath, func(d *Deps) {
		var err error
		// Every test client is 127.0.0.1: the address's share is the
		// whole queue here (TestSweepFairShares tests the share).
		rn, err = runner.New(runner.Config{Load: testLoad(t), Lab: labsvc.ChildCommand{Path: labBin, Args: []string{"lab-child"}}, QueueCapacity: capacity, PerAddress: capacity, Store: d.Store})
		if err != nil {
			t.Fatal(err)
		}
		d.Runner = rn
	})
	// Cleanups run last-in first-out: the runner stops before the site
	// and its store close.
	t.Cleanup(func() { rn.Close() })
	return site, rn
}

// postSweep posts a JSON body to /api/sweeps and decodes the answer.
func postSweep(t testing.TB, c *http.Client, base, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("POST", base+"/api/sweeps", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
		t.Fatalf("POST /api/sweeps %s: answer is not JSON: %v", body, err)
	}
	return res.StatusCode, res.Header, m
}

// Every bad field is refused with 400 and a message naming it, and
// nothing is queued.
func TestSweepValidation(t *testing.T) {
	site, rn := newRunSite(t, filepath.Join(t.TempDir(), "db"), "/nonexistent/lab", 4)
	tests := []struct {
		name, body, field string
	}{
		// No worker at all.
		{"workers zero", `{"workers":0,"rates":[10],"seconds":1}`, "workers"},
		// Negative processor time.
		{"spin negative", `{"spin_ms":-1,"rates":[10],"seconds":1}`, "spin_ms"},
		// Waiting beyond the lab's cap.
		{"wait too long", `{"wait_ms":20000,"rates":[10],"seconds":1}`, "wait_ms"},
		// A negative admission limit.
		{"limit negative", `{"limit":-1,"rates":[10],"seconds":1}`, "limit"},
		// Only two doors exist.
		{"accept unknown", `{"accept":"kernel","rates":[10],"seconds":1}`, "accept"},
		// The kernel's backlog has a bound.
		{"backlog too big", `{"backlog":70000,"rates":[10],"seconds":1}`, "backlog"},
		// Workers that accept for themselves keep no queue to limit.
		{"limit with workers accepting", `{"accept":"workers","limit":10,"rates":[10],"seconds":1}`, "limit"},
		// More CPUs than the sandbox allows on any host.
		{"cpus too many", `{"cpus":99,"rates":[10],"seconds":1}`, "cpus"},
		// Open loop with no rates.
		{"no rates", `{"rates":[],"seconds":1}`, "rates"},
		// A rate of zero.
		{"rate zero", `{"rates":[10,0],"seconds":1}`, "rates"},
		// A rate above 2,000 a second.
		{"rate too high", `{"rates":[2001],"seconds":1}`, "rates"},
		// Nine windows.
		{"too many rates", `{"rates":[1,2,3,4,5,6,7,8,9],"seconds":1}`, "rates"},
		// A window of no time.
		{"seconds zero", `{"rates":[10],"seconds":0}`, "seconds"},
		// A window over 30 s.
		{"seconds too long", `{"rates":[10],"seconds":31}`, "seconds"},
		// An unknown mode.
		{"mode unknown", `{"mode":"sideways","rates":[10],"seconds":1}`, "mode"},
		// Client counts in open mode.
		{"clients in open mode", `{"rates":[10],"clients":[4],"seconds":1}`, "clients"},
		// Closed mode without clients.
		{"closed without clients", `{"mode":"closed","seconds":1}`, "clients"},
		// Closed mode with too many clients.
		{"closed too many clients", `{"mode":"closed","clients":[1000],"seconds":1}`, "clients"},
		// A negative timeout.
		{"timeout negative", `{"rates":[10],"seconds":1,"timeout_ms":-5}`, "timeout_ms"},
		// A timeout over 10 s.
		{"timeout too long", `{"rates":[10],"seconds":1,"timeout_ms":60000}`, "timeout_ms"},
		// A stall beyond the lab's cap.
		{"stall too long", `{"rates":[10],"seconds":1,"stall_every":10,"stall_ms":20000}`, "stall_ms"},
		// A negative stall period.
		{"stall every negative", `{"rates":[10],"seconds":1,"stall_every":-2}`, "stall_every"},
		// A random source the generator does not have.
		{"rng unknown", `{"rates":[10],"seconds":1,"rng":"lcg"}`, "rng"},
		// A field the API does not have.
		{"unknown field", `{"rates":[10],"seconds":1,"colour":"red"}`, "colour"},
		// Rates as a string.
		{"rates wrong type", `{"rates":"fast","seconds":1}`, "rates"},
		// A block that is not a lab of the course.
		{"unknown block", `{"rates":[10],"seconds":1,"block":"no-such-block"}`, "block"},
		// A knob change at the window's end or later.
		{"knob change past the window", `{"rates":[10],"seconds":1,"at":["1s:WAIT_MS=2000"]}`, "at"},
		// A knob the lab does not have.
		{"knob change unknown knob", `{"rates":[10],"seconds":2,"at":["1s:SPEED=2"]}`, "at"},
		// A value the lab would refuse.
		{"knob change bad value", `{"rates":[10],"seconds":2,"at":["1s:WAIT_MS=20000"]}`, "at"},
		// Text that is not a change.
		{"knob change form", `{"rates":[10],"seconds":2,"at":["WAIT_MS=20"]}`, "at"},
		// A change that is not text.
		{"knob change wrong type", `{"rates":[10],"seconds":2,"at":[5]}`, "at"},
		// A client's workers in closed mode.
		{"max_inflight closed", `{"mode":"closed","clients":[2],"seconds":1,"max_inflight":4}`, "max_inflight"},
		// A negative pool of client workers.
		{"max_inflight negative", `{"rates":[10],"seconds":1,"max_inflight":-1}`, "max_inflight"},
		// A retrying client's spec with a parameter it does not have.
		{"retry unknown parameter", `{"rates":[10],"seconds":1,"retry":"retries=3,speed=2"}`, "retry"},
		// Retries in closed mode.
		{"retry closed", `{"mode":"closed","clients":[2],"seconds":1,"retry":"retries=2"}`, "retry"},
		// A share above 1, and two that are together.
		{"critical above 1", `{"rates":[10],"seconds":1,"critical":1.5}`, "critical"},
		{"shares together above 1", `{"rates":[10],"seconds":1,"critical":0.6,"sheddable":0.5}`, "sheddable"},
		// A run over time asked with a word, not true or false.
		{"over_time wrong type", `{"rates":[10],"seconds":2,"over_time":"yes"}`, "over_time"},
		// A run over time whose windows are shorter than a sample.
		{"over_time short windows", `{"rates":[10],"seconds":0.5,"over_time":true}`, "over_time"},
		// Not JSON at all.
		{"not json", `rates=10`, "body"},
		// Names that match fields only when case is ignored.
		{"names in another case", `{"RATES":[40],"Seconds":1}`, "RATES"},
		// A field given twice (encoding/json would keep the last).
		{"field twice", `{"rates":[10],"seconds":1,"rates":[2000]}`, "rates"},
		// A control character in text.
		{"control character", `{"rates":[10],"seconds":1,"block":"sat\u0007sweep"}`, "block"},
		// Bytes that are not UTF-8.
		{"not UTF-8", "{\"rates\":[10],\"seconds\":1,\"block\":\"sat\xffsweep\"}", "body"},
	}
	c := site.client()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, m := postSweep(t, c, site.srv.URL, tt.body)
			if code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %v", code, m)
			}
			errs, _ := m["errors"].(map[string]any)
			msg, _ := errs[tt.field].(string)
			if msg == "" {
				t.Fatalf("no message for %q: %v", tt.field, m)
			}
			if len(rn.Active()) != 0 {
				t.Errorf("a refused request was queued: %+v", rn.Active())
			}
		})
	}
	// A plain form (no script) with a bad rate gets an HTML page naming the field.
	res := site.post(nil, "/api/sweeps", url.Values{"rates": {"40, fast"}, "seconds": {"1"}})
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, `data-field="rates"`) || !strings.Contains(res.body, `&#34;fast&#34; is not a number`) {
		t.Errorf("form with a bad rate: %d\n%s", res.StatusCode, res.body)
	}
	// A plain form with a bad retry spec gets a page naming the field, the
	// parameter and what it allows; a share that is not a number is named.
	res = site.post(nil, "/api/sweeps", url.Values{"rates": {"40"}, "seconds": {"1"}, "retry": {"retries=2,backoff=linear"}})
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, `data-field="retry"`) ||
		!strings.Contains(res.body, `retry&#39;s backoff &#34;linear&#34; is not allowed: want none, fixed, exp or jitter`) {
		t.Errorf("form with a bad retry spec: %d\n%s", res.StatusCode, res.body)
	}
	res = site.post(nil, "/api/sweeps", url.Values{"rates": {"40"}, "seconds": {"1"}, "critical": {"lots"}})
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, `data-field="critical"`) || !strings.Contains(res.body, `&#34;lots&#34; is not a number`) {
		t.Errorf("form with a critical share that is not a number: %d\n%s", res.StatusCode, res.body)
	}
	// A form field given twice is refused, naming it.
	res = site.post(nil, "/api/sweeps", url.Values{"rates": {"40", "2000"}, "seconds": {"1"}})
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, `data-field="rates"`) || !strings.Contains(res.body, "given 2 times") {
		t.Errorf("form with rates twice: %d\n%s", res.StatusCode, res.body)
	}
	// A rate in Go's hex spelling is not a plain number either.
	res = site.post(nil, "/api/sweeps", url.Values{"rates": {"0x1p4"}, "seconds": {"1e0"}})
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, `&#34;0x1p4&#34; is not a number`) || strings.Contains(res.body, `data-field="seconds"`) {
		t.Errorf("form with a hex rate and seconds 1e0: %d\n%s", res.StatusCode, res.body)
	}
	// A good plain form from a lesson's lab block is queued and redirected
	// to the run's page; the run remembers the lesson it came from. (The
	// lab program does not exist here, so the run itself then fails.)
	form := url.Values{"workers": {"2"}, "spin_ms": {"1"}, "wait_ms": {"4"}, "limit": {"0"}, "cpus": {"1"}, "stall_every": {"50"}, "stall_ms": {"30"},
		"backlog": {"16"}, "accept": {"workers"},
		"mode": {"open"}, "rates": {"20, 40"}, "clients": {""}, "seconds": {"1"}, "seed": {"5"}, "rng": {"python"}, "timeout_ms": {"0"}, "block": {"sat-sweep"},
		"max_inflight": {"3"}, "at": {"500ms:WAIT_MS=8; 700ms:STALL_EVERY=0"}, "over_time": {"true"},
		"retry": {"retries=2,backoff=jitter"}, "critical": {"0.2"}, "sheddable": {"0.3"}}
	res = site.post(nil, "/api/sweeps", form)
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/runs/") {
		t.Fatalf("good form: %d, Location %q\n%s", res.StatusCode, loc, res.body)
	}
	snap, ok := rn.Get(strings.TrimPrefix(loc, "/runs/"))
	if !ok || snap.Request.Lesson != "saturation" || snap.Request.Workers != 2 || len(snap.Request.Rates) != 2 || snap.Request.Seed != 5 ||
		snap.Request.StallEvery != 50 || snap.Request.StallMS != 30 || snap.Request.RNG != "python" ||
		snap.Request.Backlog != 16 || snap.Request.Accept != labsvc.AcceptWorkers ||
		snap.Request.MaxInFlight != 3 || len(snap.Request.At) != 2 || snap.Request.At[1].String() != "700ms:STALL_EVERY=0" || !snap.Request.OverTime ||
		snap.Request.Retry != "retries=2,backoff=jitter" || snap.Request.Critical != 0.2 || snap.Request.Sheddable != 0.3 {
		t.Errorf("queued from the form: %+v", snap.Request)
	}
	// The Over time checkbox sends true when checked and nothing when not;
	// the preset's hidden fields send false; anything else is named.
	res = site.post(nil, "/api/sweeps", url.Values{"rates": {"10"}, "seconds": {"1"}, "over_time": {"sometimes"}})
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, `data-field="over_time"`) ||
		!strings.Contains(res.body, `&#34;sometimes&#34; is not allowed: want true (a sample every second) or false`) {
		t.Errorf("form with a bad over_time: %d\n%s", res.StatusCode, res.body)
	}
	// A bad knob change in a form is named like any other field.
	res = site.post(nil, "/api/sweeps", url.Values{"rates": {"10"}, "seconds": {"1"}, "at": {"500ms:WAIT_MS=20000"}})
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, `data-field="at"`) || !strings.Contains(res.body, `WAIT_MS=20000: 20000 is not allowed: want 0 to 10000`) {
		t.Errorf("form with a bad knob change: %d\n%s", res.StatusCode, res.body)
	}
	// A bad stall or random source in a form is named like any other field.
	res = site.post(nil, "/api/sweeps", url.Values{"rates": {"10"}, "seconds": {"1"}, "stall_ms": {"soon"}})
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, `data-field="stall_ms"`) || !strings.Contains(res.body, `&#34;soon&#34; is not a whole number`) {
		t.Errorf("form with a bad stall: %d\n%s", res.StatusCode, res.body)
	}
	res = site.post(nil, "/api/sweeps", url.Values{"rates": {"10"}, "seconds": {"1"}, "rng": {"dice"}})
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, `data-field="rng"`) || !strings.Contains(res.body, `random source &#34;dice&#34; is not known: want pcg or python`) {
		t.Errorf("form with a bad rng: %d\n%s", res.StatusCode, res.body)
	}
}

// wsURL turns the test server's URL into the websocket URL of a run.
// checkStream fails unless a watcher's events are the run's log in order,
// each exactly once, but for progress events a newer progress replaced
// (the only events a stream may skip).
func checkStream(t *testing.T, name string, got, log []runner.Event) {
	t.Helper()
	next := 0
	for i, e := range got {
		for next < len(log) && log[next].Seq < e.Seq {
			if log[next].Kind != runner.KindProgress {
				t.Fatalf("%s: event %d is seq %d; it skipped seq %d, a %s", name, i, e.Seq, log[next].Seq, log[next].Kind)
			}
			next++
		}
		if next == len(log) || log[next].Seq != e.Seq || log[next].Kind != e.Kind {
			t.Fatalf("%s: event %d (seq %d, %s) is not the log's next", name, i, e.Seq, e.Kind)
		}
		next++
	}
	if next != len(log) {
		t.Fatalf("%s: got %d events, stopping at seq %d of %d", name, len(got), next, len(log))
	}
}

func wsURL(base, id string, since int) string {
	return "ws" + strings.TrimPrefix(base, "http") + fmt.Sprintf("/ws/runs/%s?since=%d", id, since)
}

// readEvents reads events from a run's stream until the server closes it
// or stop returns true; it returns the events and the close code (0 when
// stop ended it). Panel messages, which are not events of the run's log,
// are checked to follow the event they name and left out.
func readEvents(t *testing.T, conn *websocket.Conn, stop func(runner.Event) bool) ([]runner.Event, int) {
	t.Helper()
	var out []runner.Event
	for {
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, data, err := conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return out, ce.Code
			}
			t.Fatalf("reading the stream: %v (after %d events)", err, len(out))
		}
		var e runner.Event
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		if e.Kind == "panel" {
			if len(out) == 0 || e.Seq > out[len(out)-1].Seq {
				t.Fatalf("a panel message for seq %d before that event", e.Seq)
			}
			continue
		}
		out = append(out, e)
		if stop != nil && stop(e) {
			return out, 0
		}
	}
}

func dial(t *testing.T, base, id string, since int) *websocket.Conn {
	t.Helper()
	h := http.Header{"Origin": {base}}
	conn, res, err := websocket.DefaultDialer.Dial(wsURL(base, id, since), h)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, res)
	}
	return conn
}

// A run posted as JSON streams every event in order to a watcher from the
// start; a second watcher that drops after the first row and reconnects
// with its last seq gets the rest exactly once; then the saved run is
// served as a page, JSON and two CSV files, and survives a restart.
func TestSweepStreamAndSavedRun(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) }) // registered first, so it runs after every other cleanup
	lab := buildLab(t)
	dbPath := filepath.Join(t.TempDir(), "runs.db")
	site, _ := newRunSite(t, dbPath, lab, 4)
	c := site.client()
	code, _, m := postSweep(t, c, site.srv.URL, `{"workers":4,"spin_ms":1,"wait_ms":4,"cpus":1,"rates":[40,80],"seconds":1,"seed":3}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST: %d %v", code, m)
	}
	id := m["id"].(string)
	if m["position"].(float64) != 1 || m["stream"] != "/ws/runs/"+id {
		t.Errorf("202 body %v", m)
	}

	// A watcher from the start, and one that leaves after the first row.
	full := dial(t, site.srv.URL, id, 0)
	defer full.Close()
	part := dial(t, site.srv.URL, id, 0)
	first, _ := readEvents(t, part, func(e runner.Event) bool { return e.Kind == runner.KindRow })
	part.Close()
	lastSeq := first[len(first)-1].Seq
	again := dial(t, site.srv.URL, id, lastSeq)
	rest, restCode := readEvents(t, again, nil)
	again.Close()

	all, code1 := readEvents(t, full, nil)
	if code1 != websocket.CloseNormalClosure || restCode != websocket.CloseNormalClosure {
		t.Errorf("close codes %d and %d, want %d", code1, restCode, websocket.CloseNormalClosure)
	}
	// The run's whole log, replayed to a watcher after the end: every
	// event numbered from 1 without gaps. The live watchers got the same
	// events, in order, except that one behind may have had a progress
	// replaced by a newer one.
	after := dial(t, site.srv.URL, id, 0)
	log, _ := readEvents(t, after, nil)
	after.Close()
	for i, e := range log {
		if e.Seq != i+1 {
			t.Fatalf("replayed event %d has seq %d: the log is out of order or has gaps", i, e.Seq)
		}
	}
	kinds := map[runner.Kind]int{}
	for _, e := range log {
		kinds[e.Kind]++
	}
	if log[0].Kind != runner.KindQueued || kinds[runner.KindStarted] != 1 || kinds[runner.KindRow] != 2 || kinds[runner.KindProgress] < 8 || log[len(log)-1].Kind != runner.KindDone {
		t.Errorf("kinds %v, last %+v", kinds, log[len(log)-1])
	}
	joined := append(append([]runner.Event(nil), first...), rest...)
	checkStream(t, "full watcher", all, log)
	checkStream(t, "reconnecting watcher", joined, log)

	// The saved run.
	arrivals := 0
	for _, e := range all {
		if e.Kind == runner.KindRow {
			arrivals += e.Row.Arrivals
		}
	}
	api := site.get(c, "/api/runs/"+id)
	var v runView
	if err := json.Unmarshal([]byte(api.body), &v); err != nil || api.StatusCode != 200 {
		t.Fatalf("GET /api/runs/%s: %d %v", id, api.StatusCode, err)
	}
	if v.Status != "done" || len(v.Rows) != 2 || !v.Mine || v.Records != arrivals || len(v.Prediction) != 2 {
		t.Errorf("api run: status %s, %d rows, mine %v, %d records (want %d), %d predictions", v.Status, len(v.Rows), v.Mine, v.Records, arrivals, len(v.Prediction))
	}
	csvRows := site.get(c, "/runs/"+id+".csv")
	if lines := strings.Split(strings.TrimSpace(csvRows.body), "\n"); csvRows.StatusCode != 200 || len(lines) != 3 || !strings.HasPrefix(lines[0], "offered,sent,ok,") {
		t.Errorf("rows CSV: %d\n%s", csvRows.StatusCode, csvRows.body)
	}
	recs := site.get(c, "/runs/"+id+"/records.csv")
	sc := bufio.NewScanner(strings.NewReader(recs.body))
	n := 0
	for sc.Scan() {
		n++
	}
	if recs.StatusCode != 200 || n != arrivals+1 || !strings.HasPrefix(recs.body, "window,seq,intended_ms,") {
		t.Errorf("records CSV: status %d, %d lines, want a header and %d records", recs.StatusCode, n, arrivals)
	}
	page := site.get(c, "/runs/"+id)
	doc := parse(t, page.body)
	if got := len(find(doc, func(n nodeT) bool { v, ok := attr(n, "data-window"); return ok && v != "" })); got != 2 {
		t.Errorf("run page has %d table rows, want 2", got)
	}
	if st := find(doc, byTestID("run-status")); len(st) != 1 || !strings.HasPrefix(text(st[0]), "Done: all 2 windows measured") {
		t.Errorf("run page status: %v", testIDText(t, page.body, "run-status"))
	}
	chartHTML := renderNode(find(doc, byTestID("run-chart"))[0])
	if plotPoints(chartHTML, "ok") != 2 || !strings.Contains(chartHTML, `class="ln q-ok model"`) {
		t.Error("run page chart lacks the measured points or the model line")
	}
	list := site.get(c, "/runs")
	if mine := find(parse(t, list.body), byTestID("runs-mine")); len(mine) != 1 || !strings.Contains(renderNode(mine[0]), id) {
		t.Errorf("/runs does not list the run under the learner's own")
	}

	// Origin from another site is refused.
	_, res, err := websocket.DefaultDialer.Dial(wsURL(site.srv.URL, id, 0), http.Header{"Origin": {"http://evil.example"}})
	if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin websocket: err %v, response %v; want 403", err, res)
	}

	// After a restart (a new server on the same file, no runner memory) the
	// run is still there and its stream replays from the store.
	site.srv.Close()
	site.store.Close()
	site2 := newSiteAt(t, dbPath, nil)
	api2 := site2.get(nil, "/api/runs/"+id)
	var v2 runView
	json.Unmarshal([]byte(api2.body), &v2)
	if api2.StatusCode != 200 || v2.Status != "done" || len(v2.Rows) != 2 || v2.Records != arrivals || v2.LastSeq != log[len(log)-1].Seq {
		t.Errorf("after restart: %d %+v; want done, last_seq %d as live", api2.StatusCode, v2, log[len(log)-1].Seq)
	}
	replayed := dial(t, site2.srv.URL, id, 0)
	es, code2 := readEvents(t, replayed, nil)
	replayed.Close()
	// It is the whole log, numbered as it was live (TestStoredStreamKeepsSeq
	// compares it message by message).
	rowsSeen := 0
	for i, e := range es {
		if e.Seq != i+1 {
			t.Fatalf("stored stream: event %d has seq %d", i, e.Seq)
		}
		if e.Kind == runner.KindRow {
			rowsSeen++
		}
	}
	if code2 != websocket.CloseNormalClosure || len(es) == 0 || es[len(es)-1].Seq != all[len(all)-1].Seq || es[len(es)-1].Kind != runner.KindDone || rowsSeen != 2 {
		t.Errorf("stored stream: close %d, %d events (%d live) %+v", code2, len(es), len(all), es)
	}
}

// 500 learners posting at once: exactly the queue's capacity is accepted,
// every other answer is 429 with Retry-After, and no goroutine is left.
func TestSweepBurstExactlyCapacity(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) }) // registered first, so it runs after every other cleanup
	lab := buildLab(t)
	const capacity, posts = 5, 500
	site, rn := newRunSite(t, filepath.Join(t.TempDir(), "db"), lab, capacity)
	tr := &http.Transport{MaxIdleConnsPerHost: 100}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	// Long runs, so none ends while the burst lasts.
	body := `{"workers":1,"spin_ms":0,"wait_ms":1,"rates":[5],"seconds":30}`
	var mu sync.Mutex
	codes := map[int]int{}
	var badRetry []string
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range posts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("POST", site.srv.URL+"/api/sweeps", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			res, err := client.Do(req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				codes[-1]++
				return
			}
			res.Body.Close()
			codes[res.StatusCode]++
			if res.StatusCode == http.StatusTooManyRequests {
				if ra := res.Header.Get("Retry-After"); ra == "" || ra == "0" {
					badRetry = append(badRetry, ra)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if codes[http.StatusAccepted] != capacity || codes[http.StatusTooManyRequests] != posts-capacity {
		t.Errorf("answers %v: want %d × 202 and %d × 429", codes, capacity, posts-capacity)
	}
	if len(badRetry) > 0 {
		t.Errorf("%d answers 429 without a useful Retry-After: %q", len(badRetry), badRetry[:min(3, len(badRetry))])
	}
	if got := len(rn.Active()); got != capacity {
		t.Errorf("%d runs queued or running, want %d", got, capacity)
	}
	// Stop everything now so goleak sees the end of it.
	rn.Close()
	tr.CloseIdleConnections()
	site.srv.Close()
}

// A learner with a run in the queue is told so (409, naming the run); only
// they can cancel it (403 for others); a cancelled run's stream ends with a
// cancelled event; a full queue answers a plain form with a 429 page.
func TestSweepConflictCancelAndFull(t *testing.T) {
	lab := buildLab(t)
	site, rn := newRunSite(t, filepath.Join(t.TempDir(), "db"), lab, 2)
	long := `{"workers":1,"spin_ms":0,"wait_ms":1,"rates":[5],"seconds":30}`
	alice, bob := site.client(), site.client()
	code, _, m := postSweep(t, alice, site.srv.URL, long)
	if code != http.StatusAccepted {
		t.Fatalf("alice's POST: %d %v", code, m)
	}
	id := m["id"].(string)
	code, _, m = postSweep(t, alice, site.srv.URL, long)
	if code != http.StatusConflict || m["run"] != id {
		t.Errorf("alice's second POST: %d %v, want 409 naming %s", code, m, id)
	}
	// Bob fills the queue; a third learner's plain form gets the 429 page.
	if code, _, m := postSweep(t, bob, site.srv.URL, long); code != http.StatusAccepted {
		t.Fatalf("bob's POST: %d %v", code, m)
	}
	full := site.post(nil, "/api/sweeps", url.Values{"rates": {"5"}, "seconds": {"1"}})
	if full.StatusCode != http.StatusTooManyRequests || full.Header.Get("Retry-After") == "" || !strings.Contains(full.body, "The queue is full") {
		t.Errorf("plain form to a full queue: %d, Retry-After %q", full.StatusCode, full.Header.Get("Retry-After"))
	}
	// The same refusal as JSON: code busy, and retry_after equal to the header.
	code, hdr, m := postSweep(t, site.client(), site.srv.URL, long)
	errObj, _ := m["error"].(map[string]any)
	if ra, _ := m["retry_after"].(float64); code != http.StatusTooManyRequests || errObj["code"] != CodeBusy ||
		ra < 1 || hdr.Get("Retry-After") != strconv.Itoa(int(ra)) {
		t.Errorf("JSON POST to a full queue: %d %v, Retry-After %q", code, m, hdr.Get("Retry-After"))
	}
	// A plain form with a bad field gets the error page listing that field.
	bad := site.post(nil, "/api/sweeps", url.Values{"rates": {"5"}, "seconds": {"-1"}})
	if bad.StatusCode != http.StatusBadRequest || !strings.Contains(testIDText(t, bad.body, "error-fields"), "seconds") {
		t.Errorf("plain form with seconds=-1: %d, want 400 listing seconds:\n%s", bad.StatusCode, bad.body)
	}

	conn := dial(t, site.srv.URL, id, 0)
	defer conn.Close()
	if res := site.do(bob, "POST", "/api/runs/"+id+"/cancel", nil, nil); res.StatusCode != http.StatusForbidden {
		t.Errorf("bob cancelling alice's run: %d %s", res.StatusCode, res.body)
	}
	if res := site.do(alice, "POST", "/api/runs/"+id+"/cancel", nil, nil); res.StatusCode != http.StatusOK {
		t.Errorf("alice cancelling her run: %d %s", res.StatusCode, res.body)
	}
	es, closeCode := readEvents(t, conn, nil)
	if last := es[len(es)-1]; last.Kind != runner.KindCancelled || closeCode != websocket.CloseNormalClosure {
		t.Errorf("stream after cancelling ends with %+v, close %d", last, closeCode)
	}
	if res := site.do(alice, "POST", "/api/runs/"+id+"/cancel", nil, nil); res.StatusCode != http.StatusConflict {
		t.Errorf("cancelling a finished run: %d, want 409", res.StatusCode)
	}
	if s, _ := rn.Get(id); s.Status != "cancelled" {
		t.Errorf("run status %q, want cancelled", s.Status)
	}
}

// Two saved runs compare side by side: one table paired by offered rate
// (a dash where a run has no window at that rate) and one chart with both.
func TestCompareRuns(t *testing.T) {
	site := newSite(t)
	ctx := t.Context()
	saveRun := func(id string, limit int, rows ...result.Row) {
		req, _ := json.Marshal(runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, Limit: limit, CPUs: 1}, Rates: []float64{40, 80}, Seconds: 2}})
		if err := site.store.SaveRun(ctx, store.Run{ID: id, Learner: "someone", Request: req, Status: "done", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if err := site.store.AddRow(ctx, id, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	saveRun("limitoff", 0, result.Row{Window: 0, Offered: 40, OKPerSec: 40, P50MS: 30, P99MS: 90}, result.Row{Window: 1, Offered: 80, OKPerSec: 44, P50MS: 900, P99MS: 2000, Gaveup: 30})
	saveRun("limiton", 10, result.Row{Window: 0, Offered: 80, OKPerSec: 49, P50MS: 150, P99MS: 240, Refused: 60}, result.Row{Window: 1, Offered: 120, OKPerSec: 49, P50MS: 160, P99MS: 250, Refused: 140})

	list := site.get(nil, "/runs")
	if !strings.Contains(list.body, `data-testid="runs-compare"`) || strings.Count(list.body, `type="radio"`) != 6 {
		t.Errorf("/runs lacks the compare form")
	}
	page := site.get(nil, "/runs/compare?a=limitoff&b=limiton")
	if page.StatusCode != 200 {
		t.Fatalf("compare: %d %s", page.StatusCode, page.body)
	}
	doc := parse(t, page.body)
	rows := find(doc, func(n nodeT) bool { _, ok := attr(n, "data-offered"); return ok })
	var got []string
	for _, r := range rows {
		var cells []string
		for c := r.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode {
				cells = append(cells, text(c))
			}
		}
		got = append(got, strings.Join(cells, " "))
	}
	want := []string{
		"40 40 — 30 — 90 — 0 — 0 —",           // only A ran 40/s
		"80 44 49 900 150 2000 240 0 60 30 0", // both ran 80/s: the limit trades waiting for refusals
		"120 — 49 — 160 — 250 — 140 — 0",      // only B ran 120/s
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("compare table:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	chart := renderNode(find(doc, byTestID("compare-chart"))[0])
	// Three panels (ok/s, p50, p99), each with run A's two windows as
	// circles and run B's two as squares.
	if plotPoints(chart, "a") != 6 || plotPoints(chart, "b") != 6 || strings.Count(chart, `<rect class="pt q-b" x="`) != 7 {
		t.Errorf("compare chart lacks two points per run in each panel:\n%s", chart)
	}
	tests := []struct {
		name, query string
		status      int
	}{
		// B missing.
		{"one run", "?a=limitoff", http.StatusBadRequest},
		// B does not exist.
		{"unknown run", "?a=limitoff&b=nope", http.StatusNotFound},
	}
	for _, tt := range tests {
		if res := site.get(nil, "/runs/compare"+tt.query); res.StatusCode != tt.status {
			t.Errorf("%s: %d, want %d", tt.name, res.StatusCode, tt.status)
		}
	}
}

// A lab block's reference run is its latest done run; replayed with
// pace=real it streams started, progress, each row no sooner than its
// window's seconds after the one before, and done; its panel can show the
// first N rows.
func TestReferenceRunReplay(t *testing.T) {
	site := newSite(t)
	ctx := t.Context()
	req, _ := json.Marshal(runner.Request{Preset: measure.Preset{Config: labsvc.DefaultConfig(), Rates: []float64{20, 40}, Seconds: 0.5}, Block: "sat-sweep"})
	t0 := time.Now().Add(-time.Hour)
	for i, status := range []store.RunStatus{store.RunDone, store.RunFailed} {
		id := []string{"good", "broken"}[i]
		if err := site.store.SaveRun(ctx, store.Run{ID: id, Learner: "x", Block: "sat-sweep", Lesson: "saturation", Request: req, Status: status,
			CreatedAt: t0.Add(time.Duration(i) * time.Minute), StartedAt: t0, EndedAt: t0.Add(2 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		for w, rate := range []float64{20, 40} {
			if err := site.store.AddRow(ctx, id, result.Row{Window: w, Offered: rate, Sent: int(rate / 2), OK: int(rate / 2), OKPerSec: rate, Seconds: 0.5}); err != nil {
				t.Fatal(err)
			}
		}
	}
	res := site.get(nil, "/api/labs/sat-sweep/reference")
	var ref labReference
	if err := json.Unmarshal([]byte(res.body), &ref); err != nil || res.StatusCode != 200 || ref.ID != "good" || ref.Seconds != 1 || ref.Replay != "/ws/runs/good?pace=real" {
		t.Fatalf("reference: %d %s (%v)", res.StatusCode, res.body, err)
	}
	if res := site.get(nil, "/api/labs/never-run/reference"); res.StatusCode != http.StatusNotFound {
		t.Errorf("reference of a block never run: %d, want 404", res.StatusCode)
	}
	panel := site.get(nil, "/runs/good/panel?rows=1")
	if n := len(find(parse(t, panel.body), func(n nodeT) bool { _, ok := attr(n, "data-window"); return ok })); n != 1 || !strings.Contains(panel.body, "Replaying a recorded run") {
		t.Errorf("panel of the first row: %d rows\n%s", n, panel.body)
	}

	conn := dial(t, site.srv.URL, "good", 0)
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var es []runner.Event
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			break
		}
		var e runner.Event
		json.Unmarshal(data, &e)
		es = append(es, e)
	}
	// That was the stored run without pace: rows and done at once.
	if len(es) != 3 {
		t.Fatalf("unpaced stored stream: %d events", len(es))
	}
	paced, _, err := websocket.DefaultDialer.Dial(wsURL(site.srv.URL, "good", 0)+"&pace=real", http.Header{"Origin": {site.srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer paced.Close()
	start := time.Now()
	es, code := readEvents(t, paced, nil)
	kinds := map[runner.Kind]int{}
	for i, e := range es {
		kinds[e.Kind]++
		if e.Seq != i+1 {
			t.Fatalf("replay event %d has seq %d", i, e.Seq)
		}
	}
	if code != websocket.CloseNormalClosure || es[0].Kind != runner.KindStarted || kinds[runner.KindRow] != 2 || kinds[runner.KindProgress] < 2 || es[len(es)-1].Kind != runner.KindDone {
		t.Errorf("replay: close %d, kinds %v", code, kinds)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("two windows of 0.5 s replayed in %v, want at least their 1 s", d)
	}
	tests := []struct {
		name, url string
		status    int
	}{
		// Only real pace exists.
		{"unknown pace", "/ws/runs/good?pace=fast", http.StatusBadRequest},
		// Rows must be a count.
		{"bad rows", "/runs/good/panel?rows=-1", http.StatusBadRequest},
	}
	for _, tt := range tests {
		if res := site.get(nil, tt.url); res.StatusCode != tt.status {
			t.Errorf("%s: %d, want %d", tt.name, res.StatusCode, tt.status)
		}
	}
}

// TestRunPanelFollowsTheRun checks the run panels a live stream carries
// and the kept ones: each row event and the last event carry the panel
// with the rows the run has by then (other events carry none); a panel
// fetched after an event shows those rows too, never an older state; and a
// finished run's panel is the same bytes on every fetch.
func TestRunPanelFollowsTheRun(t *testing.T) {
	lab := buildLab(t)
	site, _ := newRunSite(t, filepath.Join(t.TempDir(), "runs.db"), lab, 4)
	code, _, m := postSweep(t, site.client(), site.srv.URL, `{"workers":2,"spin_ms":1,"wait_ms":4,"cpus":1,"rates":[20,40],"seconds":1,"seed":5}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST: %d %v", code, m)
	}
	id := m["id"].(string)
	ws := dial(t, site.srv.URL, id, 0)
	defer ws.Close()
	rowsIn := func(body string) int { return strings.Count(body, "<tr data-window=") }
	rows, panels := 0, 0
	var drawn runner.Event // the last row or terminal event
	var rowAt time.Time
	for {
		ws.SetReadDeadline(time.Now().Add(30 * time.Second))
		var e struct {
			runner.Event
			Panel string `json:"panel"`
		}
		if err := ws.ReadJSON(&e); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure {
				break
			}
			t.Fatalf("stream: %v", err)
		}
		switch {
		case e.Kind == "panel":
			panels++
			if e.Seq != drawn.Seq || rowsIn(e.Panel) != rows {
				t.Fatalf("panel message for seq %d with %d rows; want it for seq %d (%s) with %d", e.Seq, rowsIn(e.Panel), drawn.Seq, drawn.Kind, rows)
			}
			if drawn.Kind == runner.KindRow && time.Since(rowAt) < panelDelay/2 {
				t.Errorf("a row's panel came %v after the row, want about %v: the rows go out first", time.Since(rowAt), panelDelay)
			}
			if drawn.Kind.Terminal() && !strings.Contains(e.Panel, `data-status="done"`) {
				t.Errorf("the last event's panel does not say done")
			}
		case e.Kind == runner.KindRow || e.Kind.Terminal():
			// A row's panel comes before the next row (the last event may
			// overtake it: its own panel then shows every row).
			if e.Kind == runner.KindRow && drawn.Kind == runner.KindRow && panels == 0 {
				t.Fatalf("row event (seq %d) before the panel of row seq %d", e.Seq, drawn.Seq)
			}
			if e.Kind == runner.KindRow {
				rows++
				rowAt = time.Now()
			}
			drawn, panels = e.Event, 0
			// Pages that ask for the panel (a class's pages when the
			// run starts) get the same rows, never an older state.
			for i := range 3 {
				res := site.get(nil, "/runs/"+id+"/panel")
				if res.StatusCode != http.StatusOK || rowsIn(res.body) != rows {
					t.Fatalf("after %s event (seq %d), fetch %d: %d with %d rows, want 200 with %d", e.Kind, e.Seq, i+1, res.StatusCode, rowsIn(res.body), rows)
				}
			}
		}
	}
	if !drawn.Kind.Terminal() || panels != 1 || rows != 2 {
		t.Fatalf("stream ended after %s with %d panel messages for it and %d rows; want the last event, its panel, 2 rows", drawn.Kind, panels, rows)
	}
	first := site.get(nil, "/runs/"+id+"/panel").body
	if !strings.Contains(first, `data-status="done"`) {
		t.Fatalf("finished panel does not say done:\n%.400s", first)
	}
	if again := site.get(nil, "/runs/"+id+"/panel").body; again != first {
		t.Error("a finished run's panel differs between two fetches")
	}
}

// plotPoints counts a chart's measured points of a quantity in its plots
// (placed in percentages), leaving out the legend's key.
func plotPoints(chartHTML, quantity string) int {
	return len(regexp.MustCompile(`class="pt q-`+quantity+`" (cx|x)="[0-9.]+%"`).FindAllString(chartHTML, -1))
}

// A refused sweep's messages name the field as the API documents it, say
// what is allowed in a few words (never echoing a 300-digit number), and
// a window too short to measure anything is refused with the minimum.
func TestSweepMessagesArePlain(t *testing.T) {
	site, _ := newRunSite(t, filepath.Join(t.TempDir(), "db"), "/nonexistent/lab", 4)
	tests := []struct {
		name, body, field, want string
	}{
		// A lab knob of the wrong type is keyed by its JSON name, not by
		// the Go struct it sits in (Config.workers).
		{"knob of the wrong type", `{"workers":"many","rates":[10],"seconds":1}`, "workers", "want a whole number"},
		// The other knobs too.
		{"spin of the wrong type", `{"spin_ms":[2],"rates":[10],"seconds":1}`, "spin_ms", "want a whole number"},
		// The admission policy is a string, as POLICY spells it; a bad one
		// is named with what is allowed, and LIMIT belongs to the queue
		// policy.
		{"policy of the wrong type", `{"policy":5,"rates":[10],"seconds":1}`, "policy", "want a string such as \"inflight,quota=5\""},
		{"unknown policy", `{"policy":"fifo","rates":[10],"seconds":1}`, "policy", "fifo is not allowed: want queue, inflight, aimd, gradient or sojourn"},
		{"limit with a policy", `{"policy":"inflight,quota=5","limit":3,"rates":[10],"seconds":1}`, "limit", "3 is not allowed: want 0 with POLICY=inflight"},
		// A huge rate is named in a few characters.
		{"huge rate", `{"rates":[1e308],"seconds":1}`, "rates", "rate 1e+308 is not allowed"},
		// A huge window length too.
		{"huge seconds", `{"rates":[10],"seconds":1e300}`, "seconds", "1e+300 seconds a window is not allowed"},
		// A nanosecond window would be "done" with nothing sent: refused,
		// saying the minimum.
		{"a nanosecond window", `{"rates":[10],"seconds":1e-9}`, "seconds", "at least 0.5"},
		// Just under the minimum.
		{"just under the minimum", `{"rates":[10],"seconds":0.49}`, "seconds", "at least 0.5"},
	}
	c := site.client()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, m := postSweep(t, c, site.srv.URL, tt.body)
			errs, _ := m["errors"].(map[string]any)
			msg, _ := errs[tt.field].(string)
			if code != http.StatusBadRequest || !strings.Contains(msg, tt.want) {
				t.Fatalf("status %d, errors %v: want 400 with %q saying %q", code, errs, tt.field, tt.want)
			}
			if len(errs) != 1 {
				t.Errorf("errors %v, want only %q", errs, tt.field)
			}
			if len(msg) > 200 {
				t.Errorf("message of %d characters: %.120s…", len(msg), msg)
			}
		})
	}
	// The minimum itself is accepted.
	if code, _, m := postSweep(t, site.client(), site.srv.URL, `{"rates":[10],"seconds":0.5}`); code != http.StatusAccepted {
		t.Errorf("seconds 0.5: %d %v, want 202", code, m)
	}
}
