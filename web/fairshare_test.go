package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"capacitylab/classroom"
	"capacitylab/labsvc"
	"capacitylab/runner"
	"capacitylab/store"
)

// slowLab is a lab command that never says it is ready: the first run
// waits for it (labsvc.ChildReadyTimeout) while the others stay queued.
var slowLab = labsvc.ChildCommand{Path: "/bin/sh", Args: []string{"-c", "sleep 30"}}

// One client address cannot hold the queue: a burst of requests without
// cookies (a new learner each) gets the address's share of places, the
// rest a 429 with Retry-After saying why; another address still gets in.
// The heaviest run a form allows is refused by the run's cost bounds
// unless the server raised them.
func TestSweepFairShares(t *testing.T) {
	var rn *runner.Runner
	site := newSiteAt(t, filepath.Join(t.TempDir(), "db"), func(d *Deps) {
		var err error
		rn, err = runner.New(runner.Config{Load: testLoad(t), Lab: slowLab, QueueCapacity: 8, Store: d.Store})
		if err != nil {
			t.Fatal(err)
		}
		d.Runner = rn
		d.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	t.Cleanup(func() { rn.Close() })
	post := func(client, body string) (int, http.Header, map[string]any) {
		t.Helper()
		c := site.client() // no cookies: a new learner every time
		req, _ := http.NewRequest("POST", site.srv.URL+"/api/sweeps", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", client)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, res.Header, m
	}
	small := `{"rates":[10],"seconds":1}`
	accepted := 0
	var refused map[string]any
	var retry string
	for range 30 {
		code, h, m := post("203.0.113.5", small)
		switch code {
		case http.StatusAccepted:
			accepted++
		case http.StatusTooManyRequests:
			refused, retry = m, h.Get("Retry-After")
		default:
			t.Fatalf("burst: status %d %v", code, m)
		}
	}
	if accepted != runner.DefaultPerAddress {
		t.Errorf("a burst of 30 from one address got %d places, want %d (runner.DefaultPerAddress)", accepted, runner.DefaultPerAddress)
	}
	msg := fmt.Sprint(refused["error"])
	if retry == "" || !strings.Contains(msg, "your address") || !strings.Contains(msg, fmt.Sprint(runner.DefaultPerAddress)+" runs") {
		t.Errorf("the refusal: Retry-After %q, %s; want a wait and a message saying the address has its share", retry, msg)
	}
	if code, _, m := post("198.51.100.7", small); code != http.StatusAccepted {
		t.Errorf("another address: %d %v, want 202", code, m)
	}

	// The heaviest run the caps on a single field allow: 8 windows of
	// 30 s at 2,000 a second, each request asking a second of processor.
	heavy := `{"workers":1024,"spin_ms":1000,"rates":[2000,2000,2000,2000,2000,2000,2000,2000],"seconds":30}`
	code, _, m := post("192.0.2.44", heavy)
	errs, _ := m["errors"].(map[string]any)
	if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(errs["seconds"]), "longer than a run may be") || !strings.Contains(fmt.Sprint(errs["spin_ms"]), "processor") {
		t.Errorf("the heaviest run: %d %v, want 400 naming the run's length and its processor time", code, m)
	}
}

// A server may raise the bounds on a run's cost.
func TestRunCostBoundsRaised(t *testing.T) {
	lim := runner.HostLimits()
	lim.MaxRunSeconds, lim.MaxRunCPUSeconds = 240, 500_000
	var rn *runner.Runner
	site := newSiteAt(t, filepath.Join(t.TempDir(), "db"), func(d *Deps) {
		var err error
		rn, err = runner.New(runner.Config{Load: testLoad(t), Lab: slowLab, Limits: lim, Store: d.Store})
		if err != nil {
			t.Fatal(err)
		}
		d.Runner = rn
	})
	t.Cleanup(func() { rn.Close() })
	heavy := `{"workers":1024,"spin_ms":1000,"rates":[2000,2000,2000,2000,2000,2000,2000,2000],"seconds":30}`
	if code, _, m := postSweep(t, site.client(), site.srv.URL, heavy); code != http.StatusAccepted {
		t.Errorf("the heaviest run with raised bounds: %d %v, want 202", code, m)
	}
}

// Joining a class and starting sessions without an instructor key are
// limited per address, with defaults a lecture hall behind one address
// never meets: 300 joins in a minute from one address all work. Past a
// limit the answer is 429 with Retry-After and a message saying why.
func TestClassRateLimits(t *testing.T) {
	site := newProxySite(t, nil)
	code, created := createSessionJSON(t, site, "")
	if code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	for i := range 300 {
		res := site.post(nil, "/join", url.Values{"code": {created.Code}, "name": {fmt.Sprint("learner ", i)}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("join %d of 300 from one address: %d\n%.300s", i+1, res.StatusCode, res.body)
		}
	}

	// A server with small limits: joins and sessions past them get 429.
	limited := func(key string) *testSite {
		return newSiteAt(t, filepath.Join(t.TempDir(), "small.db"), func(d *Deps) {
			m, err := classroom.New(classroom.Config{Store: d.Store, Lessons: ClassLessons(d.Course)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			d.Classes, d.InstructorKey = m, key
			d.JoinsPerMinute, d.SessionsPerHour = 5, 2
		})
	}
	small := limited("")
	for i := range 3 {
		code, got := createSessionJSON(t, small, "")
		if i < 2 && code != http.StatusCreated {
			t.Fatalf("session %d of a limit of 2 an hour: %d", i+1, code)
		}
		if i == 2 && code != http.StatusTooManyRequests {
			t.Errorf("session 3 with a limit of 2 an hour: %d, want 429", code)
		}
		if i == 0 {
			created = got
		}
	}
	for i := range 6 {
		res := small.post(nil, "/join", url.Values{"code": {created.Code}, "name": {fmt.Sprint("learner ", i)}})
		want := http.StatusSeeOther
		if i == 5 {
			want = http.StatusTooManyRequests
		}
		if res.StatusCode != want {
			t.Errorf("join %d with a limit of 5 a minute: %d, want %d", i+1, res.StatusCode, want)
		}
		if want == http.StatusTooManyRequests && (res.Header.Get("Retry-After") == "" || !strings.Contains(res.body, "joins came from your address")) {
			t.Errorf("the refused join: Retry-After %q\n%.2000s", res.Header.Get("Retry-After"), res.body)
		}
	}
	// An instructor with the server's key is not held by the session limit.
	keyed := limited("sesame")
	for i := range 3 {
		if code, _ := createSessionJSON(t, keyed, "sesame"); code != http.StatusCreated {
			t.Errorf("session %d with the instructor key: %d, want 201", i+1, code)
		}
	}
}

// createSessionJSON starts a class session on the sample lesson.
func createSessionJSON(t *testing.T, site *testSite, key string) (int, sessionCreated) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"lesson": "sample", "key": key})
	req, _ := http.NewRequest("POST", site.srv.URL+"/api/sessions", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out sessionCreated
	json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

// A run whose lab has not come up yet (slowLab never says it is ready)
// says the lab is starting, not "Running: window 1 of N" over empty
// progress bars, on its panel (what a class's screens fetch when the
// class run starts) and its page.
func TestRunPanelSaysTheLabIsStarting(t *testing.T) {
	var rn *runner.Runner
	site := newSiteAt(t, filepath.Join(t.TempDir(), "db"), func(d *Deps) {
		var err error
		rn, err = runner.New(runner.Config{Load: testLoad(t), Lab: slowLab, Store: d.Store})
		if err != nil {
			t.Fatal(err)
		}
		d.Runner = rn
	})
	t.Cleanup(func() { rn.Close() })
	req, _ := http.NewRequest("POST", site.srv.URL+"/api/sweeps", strings.NewReader(`{"rates":[10, 20],"seconds":1}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := site.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tk struct {
		ID string `json:"id"`
	}
	json.NewDecoder(resp.Body).Decode(&tk)
	resp.Body.Close()
	if tk.ID == "" {
		t.Fatalf("the sweep was not queued: %d", resp.StatusCode)
	}
	for end := time.Now().Add(5 * time.Second); ; {
		if s, _ := rn.Get(tk.ID); s.Status == store.RunRunning {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the run did not start within 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, path := range []string{"/runs/" + tk.ID + "/panel", "/runs/" + tk.ID} {
		page := site.get(nil, path)
		if got := testIDText(t, page.body, "run-status"); !strings.HasPrefix(got, "Starting the lab") {
			t.Errorf("%s: status %q, want it to say the lab is starting", path, got)
		}
	}
}

// One client cannot hold the queue through class sessions: a class run
// counts against the address of the host who starts it, so one address
// with nine sessions gets its share of places (runner.DefaultPerAddress)
// and every other host run is refused saying why, while a learner at
// another address still gets a place. The host's cancel frees a place at
// once, and so does ending a session whose run is waiting.
func TestClassRunsCountAgainstTheHostsAddress(t *testing.T) {
	var rn *runner.Runner
	s := newClassSiteWith(t, filepath.Join(t.TempDir(), "class.db"), "", "", func(d *Deps) {
		var err error
		rn, err = runner.New(runner.Config{Load: testLoad(t), Lab: slowLab, QueueCapacity: 8, Store: d.Store})
		if err != nil {
			t.Fatal(err)
		}
		d.Runner = rn
		d.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	type class struct {
		host  *wsClient
		runID string
	}
	var classes []*class
	refusals := 0
	for i := range 9 {
		code, created, raw := s.create("sample", "")
		if code != http.StatusCreated {
			t.Fatalf("session %d: %d %s", i, code, raw)
		}
		c := &class{host: s.host(created.Code, hostToken(t, created))}
		c.host.expect(classroom.KindState)
		c.host.send(classroom.In{Kind: classroom.KindRun, Lab: "sample-lab"})
		switch o := c.host.expectEither(classroom.KindRunStart, classroom.KindError); o.Kind {
		case classroom.KindRunStart:
			c.runID = o.RunID
		default:
			refusals++
			if want := fmt.Sprintf("Your address already has %d runs waiting or running", runner.DefaultPerAddress); !strings.Contains(o.Message, want) || o.Code != classroom.ErrCodeConflict {
				t.Errorf("session %d's run refused with %+v, want a conflict saying %q", i, o, want)
			}
		}
		classes = append(classes, c)
	}
	if started := len(classes) - refusals; started != runner.DefaultPerAddress {
		t.Fatalf("one address's nine sessions started %d class runs, want %d (its share)", started, runner.DefaultPerAddress)
	}
	// A learner elsewhere still gets a place.
	req, _ := http.NewRequest("POST", s.srv.URL+"/api/sweeps", strings.NewReader(`{"rates":[10],"seconds":1}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", "198.51.100.7")
	lres, err := s.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	lres.Body.Close()
	if lres.StatusCode != http.StatusAccepted {
		t.Errorf("a learner at another address: %d, want 202", lres.StatusCode)
	}

	// The host of the first class cancels its run (running: it waits for
	// its lab); the place is free, and a refused class gets it.
	first, waiting, refused := classes[0], classes[1], classes[3]
	first.host.send(classroom.In{Kind: classroom.KindCancel})
	untilStatus(t, rn, first.runID, store.RunCancelled)
	refused.host.send(classroom.In{Kind: classroom.KindRun, Lab: "sample-lab"})
	if o := refused.host.expect(classroom.KindRunStart); o.RunID == "" {
		t.Fatalf("a refused class after the cancel: %+v, want its run started", o)
	}
	// A second cancel of the same run says it has ended.
	first.host.send(classroom.In{Kind: classroom.KindCancel})
	if o := first.host.expect(classroom.KindError); o.Code != classroom.ErrCodeConflict || !strings.Contains(o.Message, "already ended") {
		t.Errorf("cancelling an ended run: %+v, want a conflict saying it has ended", o)
	}
	// Ending a session cancels its waiting run.
	waiting.host.send(classroom.In{Kind: classroom.KindEnd})
	waiting.host.expect(classroom.KindEnded)
	untilStatus(t, rn, waiting.runID, store.RunCancelled)
}

// untilStatus waits up to 10 s for run id to have status want.
func untilStatus(t *testing.T, rn *runner.Runner, id string, want store.RunStatus) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap, ok := rn.Get(id)
		if ok && snap.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: status %s (held %v) after 10 s, want %s", id, snap.Status, ok, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// expectEither returns the next message of kind a or b, skipping presence.
func (c *wsClient) expectEither(a, b string) classroom.Out {
	c.t.Helper()
	for {
		c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		var o classroom.Out
		if err := c.ws.ReadJSON(&o); err != nil {
			c.t.Fatalf("%s: waiting for %s or %s: %v", c.name, a, b, err)
		}
		c.last = max(c.last, o.Seq)
		switch o.Kind {
		case a, b:
			return o
		case classroom.KindPresence:
		default:
			c.t.Fatalf("%s: got %+v, want %s or %s", c.name, o, a, b)
		}
	}
}
