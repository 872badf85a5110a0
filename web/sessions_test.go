package web

import (
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/net/html"

	"capacitylab/classroom"
	"capacitylab/labsvc"
	"capacitylab/lessons"
	"capacitylab/runner"
)

// classSite is a real server with class sessions (and, with a lab binary,
// a runner) on a SQLite file.
type classSite struct {
	*testSite
	m  *classroom.Manager
	rn *runner.Runner // nil without a lab
}

func newClassSite(t *testing.T, dbPath, key, labBin string) *classSite {
	t.Helper()
	return newClassSiteWith(t, dbPath, key, labBin, nil)
}

// newClassSiteWith is newClassSite with tweak applied to the Deps before
// the class Manager is made.
func newClassSiteWith(t *testing.T, dbPath, key, labBin string, tweak func(*Deps)) *classSite {
	t.Helper()
	var m *classroom.Manager
	var rn *runner.Runner
	site := newSiteAt(t, dbPath, func(d *Deps) {
		var q Queue // nil, not a nil *runner.Runner, without a lab
		if labBin != "" {
			var err error
			rn, err = runner.New(runner.Config{Load: testLoad(t), Lab: labsvc.ChildCommand{Path: labBin, Args: []string{"lab-child"}}, Store: d.Store})
			if err != nil {
				t.Fatal(err)
			}
			d.Runner, q = rn, rn
		}
		if tweak != nil {
			tweak(d) // may set a runner of its own (d.Runner)
			if r, ok := d.Runner.(*runner.Runner); ok && rn == nil {
				rn, q = r, r
			}
		}
		var err error
		m, err = classroom.New(classroom.Config{Store: d.Store, Lessons: ClassLessons(d.Course), StartRun: ClassRuns(d.Course, q), CancelRun: CancelClassRuns(q)})
		if err != nil {
			t.Fatal(err)
		}
		d.Classes = m
		d.InstructorKey = key
	})
	// Cleanups run last-in first-out: connections and the runner stop
	// before the server and its store close.
	t.Cleanup(func() {
		m.Close()
		if rn != nil {
			rn.Close()
		}
	})
	return &classSite{testSite: site, m: m, rn: rn}
}

// created is the JSON answer to POST /api/sessions.
func (s *classSite) create(lesson, key string) (int, sessionCreated, string) {
	s.t.Helper()
	body, _ := json.Marshal(map[string]string{"lesson": lesson, "key": key})
	req, _ := http.NewRequest("POST", s.srv.URL+"/api/sessions", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	var out sessionCreated
	var raw json.RawMessage
	json.NewDecoder(res.Body).Decode(&raw)
	json.Unmarshal(raw, &out)
	return res.StatusCode, out, string(raw)
}

func hostToken(t *testing.T, c sessionCreated) string {
	t.Helper()
	u, err := url.Parse(c.HostURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("token")
}

// joinAs joins the session through the join form and returns a client
// holding the participant's cookie.
func (s *classSite) joinAs(code, name string) *http.Client {
	s.t.Helper()
	c := s.client()
	res := s.post(c, "/join", url.Values{"code": {strings.ToLower(code)}, "name": {name}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/sessions/"+code {
		s.t.Fatalf("join as %q: %d %s %s", name, res.StatusCode, res.Header.Get("Location"), res.body)
	}
	return c
}

// wsClient is a real websocket client of the site.
type wsClient struct {
	t    *testing.T
	name string
	ws   *websocket.Conn
	last int
}

func (s *classSite) dialWS(name, path string, jar http.CookieJar, origin string) (*wsClient, *http.Response, error) {
	d := websocket.Dialer{Jar: jar, HandshakeTimeout: 5 * time.Second}
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	ws, res, err := d.Dial("ws"+strings.TrimPrefix(s.srv.URL, "http")+path, h)
	if err != nil {
		return nil, res, err
	}
	s.t.Cleanup(func() { ws.Close() })
	return &wsClient{t: s.t, name: name, ws: ws}, res, nil
}

func (s *classSite) host(code, token string) *wsClient {
	s.t.Helper()
	c, _, err := s.dialWS("host", "/ws/sessions/"+code+"?token="+url.QueryEscape(token), nil, s.srv.URL)
	if err != nil {
		s.t.Fatalf("host websocket: %v", err)
	}
	return c
}

func (s *classSite) participant(name, code string, hc *http.Client) *wsClient {
	s.t.Helper()
	c, _, err := s.dialWS(name, "/ws/sessions/"+code, hc.Jar, s.srv.URL)
	if err != nil {
		s.t.Fatalf("%s websocket: %v", name, err)
	}
	return c
}

func (c *wsClient) send(m classroom.In) {
	c.t.Helper()
	if err := c.ws.WriteJSON(m); err != nil {
		c.t.Fatalf("%s: %v", c.name, err)
	}
}

// expect returns the next message of kind, skipping the kinds in skip.
func (c *wsClient) expect(kind string, skip ...string) classroom.Out {
	c.t.Helper()
	for {
		c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		var o classroom.Out
		if err := c.ws.ReadJSON(&o); err != nil {
			c.t.Fatalf("%s: waiting for %s: %v", c.name, kind, err)
		}
		c.last = max(c.last, o.Seq)
		if o.Kind == kind {
			return o
		}
		skipped := false
		for _, k := range skip {
			skipped = skipped || k == o.Kind
		}
		if !skipped {
			c.t.Fatalf("%s: got %+v, want %s", c.name, o, kind)
		}
	}
}

// TestClassSessionWeb runs a whole class over HTTP and real websockets:
// the instructor key, joining by form, both rounds of a predict question
// with a changed and a locked vote, a participant's refused host action,
// the pages, and both CSV downloads.
func TestClassSessionWeb(t *testing.T) {
	s := newClassSite(t, filepath.Join(t.TempDir(), "class.db"), "sesame", "")
	for _, c := range []struct {
		what, lesson, key string // plain-English description, lesson, key
		status            int
	}{
		{"no key when the server has one", "sample", "", http.StatusForbidden},
		{"a wrong key", "sample", "open", http.StatusForbidden},
		{"no lesson", "", "sesame", http.StatusBadRequest},
		{"a lesson that does not exist", "nope", "sesame", http.StatusNotFound},
	} {
		if st, _, body := s.create(c.lesson, c.key); st != c.status || !strings.Contains(body, `"message"`) {
			t.Errorf("%s: %d %s, want %d with a message", c.what, st, body, c.status)
		}
	}
	// A misspelt field is named in the answer, beside the fields allowed.
	if res, err := http.Post(s.srv.URL+"/api/sessions", "application/json", strings.NewReader(`{"lessn":"sample","key":"sesame"}`)); err != nil {
		t.Fatal(err)
	} else {
		var body struct{ Error Error }
		json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body.Error.Message, `"lessn"`) || !strings.Contains(body.Error.Message, `"lesson"`) {
			t.Errorf("a misspelt field: %d %q, want 400 naming lessn and the allowed fields", res.StatusCode, body.Error.Message)
		}
	}
	st, created, body := s.create("sample", "sesame")
	if st != http.StatusCreated {
		t.Fatalf("create: %d %s", st, body)
	}
	code, tok := created.Code, hostToken(t, created)
	if !strings.Contains(created.JoinURL, "/join/"+code+"?key=") || len(tok) < 43 {
		t.Fatalf("created = %+v", created)
	}

	// Pages: the host view needs the token; the QR code is an SVG.
	if res := s.get(nil, "/sessions/"+code+"/host?token="+url.QueryEscape(tok)); res.StatusCode != 200 || !hasTestID(t, res.body, "open-sample-predict") {
		t.Fatalf("host page: %d", res.StatusCode)
	}
	if res := s.get(nil, "/sessions/"+code+"/host?token=wrong"); res.StatusCode != http.StatusForbidden {
		t.Fatalf("host page with a wrong token: %d", res.StatusCode)
	}
	// The projector's address is on the class's screen: it carries the
	// projector token, and the page holds nothing of the host token.
	projPath := strings.TrimPrefix(created.ProjectorURL, s.srv.URL)
	projTok := strings.TrimPrefix(projPath, "/sessions/"+code+"/projector?token=")
	if projTok == projPath || projTok == "" || strings.Contains(created.ProjectorURL, tok) {
		t.Fatalf("projector_url %q: want /sessions/%s/projector?token= with a token that is not the host's", created.ProjectorURL, code)
	}
	if res := s.get(nil, projPath); res.StatusCode != 200 || strings.Contains(res.body, "open-sample-predict") || strings.Contains(res.body, tok) {
		t.Fatalf("projector page: %d (it must have no host controls and not the host token)", res.StatusCode)
	} else if strings.Contains(res.body, "site-header") || !hasTestID(t, res.body, "presenter-join") || testIDText(t, res.body, "class-code") != code {
		t.Fatalf("projector page: want the presenter view (no site header, the join screen with the code %s)", code)
	}
	if res := s.get(nil, "/sessions/"+code+"/projector?token="+url.QueryEscape(tok)); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != projPath {
		t.Fatalf("projector page with the host token: %d %q, want 303 to %s", res.StatusCode, res.Header.Get("Location"), projPath)
	}
	if res := s.get(nil, "/sessions/"+code+"/projector?token=wrong"); res.StatusCode != http.StatusForbidden {
		t.Fatalf("projector page with a wrong token: %d", res.StatusCode)
	}
	for _, path := range []string{"/host", "/results.csv", "/answers.csv"} {
		if res := s.get(nil, "/sessions/"+code+path+"?token="+projTok); res.StatusCode != http.StatusForbidden {
			t.Errorf("%s with the projector token: %d, want 403", path, res.StatusCode)
		}
	}
	if res := s.get(nil, "/sessions/"+code+"/qr.svg"); res.StatusCode != 200 || !strings.HasPrefix(res.body, "<svg") {
		t.Fatalf("qr: %d %.40s", res.StatusCode, res.body)
	}
	if res := s.get(nil, "/join/"+code); res.StatusCode != 200 || testIDText(t, res.body, "join-code-shown") != code {
		t.Fatalf("join link page: %d", res.StatusCode)
	}
	if res := s.get(nil, "/sessions/"+code); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/join/"+code {
		t.Fatalf("session page without joining: %d %s", res.StatusCode, res.Header.Get("Location"))
	}

	host := s.host(code, tok)
	host.expect(classroom.KindState)
	ada := s.joinAs(code, "Ada")
	bob := s.joinAs(code, "")
	if res := s.get(ada, "/sessions/"+code); res.StatusCode != 200 || testIDText(t, res.body, "class-you") != "Ada" {
		t.Fatalf("participant page: %d", res.StatusCode)
	}
	if res := s.get(bob, "/join/"+code); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("join link for someone who joined: %d, want 303 back to the session", res.StatusCode)
	}
	pa := s.participant("Ada", code, ada)
	pb := s.participant("Bob", code, bob)
	if st := pa.expect(classroom.KindState).State; st.You == nil || st.You.Name != "Ada" || st.Questions[0].Correct != "" {
		t.Fatalf("Ada's state = %+v", st)
	}
	pb.expect(classroom.KindState)
	// The projector's socket watches with its own token and may do nothing.
	proj, _, err := s.dialWS("projector", "/ws/sessions/"+code+"?token="+projTok, nil, s.srv.URL)
	if err != nil {
		t.Fatalf("projector websocket: %v", err)
	}
	if st := proj.expect(classroom.KindState).State; st.Role != classroom.RoleProjector || st.Participants != nil || st.Connected != 2 {
		t.Fatalf("projector state = %+v, want role projector, 2 connected, no names", st)
	}
	proj.send(classroom.In{Kind: classroom.KindOpen, Question: "sample-predict"})
	if o := proj.expect(classroom.KindError); o.Code != classroom.ErrCodeForbidden {
		t.Fatalf("projector's open: %+v, want forbidden", o)
	}

	host.send(classroom.In{Kind: classroom.KindOpen, Question: "sample-predict"})
	host.expect(classroom.KindRound, classroom.KindPresence)
	pa.expect(classroom.KindRound)
	pb.expect(classroom.KindRound)
	// A refusal names the open question by its words, as the class reads it.
	host.send(classroom.In{Kind: classroom.KindOpen, Question: "sample-check"})
	if o := host.expect(classroom.KindError); o.Message != "Voting on ‘With one worker and 20 ms per request, how many…’ is still open: close it first." {
		t.Fatalf("opening a second question: %+v, want a conflict naming the open one by its words", o)
	}
	pa.send(classroom.In{Kind: classroom.KindVote, Question: "sample-predict", Option: "a"})
	pa.expect(classroom.KindVoted)
	pa.send(classroom.In{Kind: classroom.KindVote, Question: "sample-predict", Option: "b"})
	pa.expect(classroom.KindVoted)
	pb.send(classroom.In{Kind: classroom.KindVote, Question: "sample-predict", Option: "a"})
	pb.expect(classroom.KindVoted)
	host.expect(classroom.KindTally)
	host.expect(classroom.KindTally)
	if o := host.expect(classroom.KindTally); o.Total != 2 {
		t.Fatalf("tally = %+v, want 2 votes", o)
	}
	// Bob tries to close the vote: refused, to Bob only.
	pb.send(classroom.In{Kind: classroom.KindClose, Question: "sample-predict"})
	if o := pb.expect(classroom.KindError); o.Code != classroom.ErrCodeForbidden {
		t.Fatalf("Bob's close: %+v", o)
	}
	host.send(classroom.In{Kind: classroom.KindClose, Question: "sample-predict"})
	for _, c := range []*wsClient{host, pa, pb} {
		if o := c.expect(classroom.KindRound); o.Status != "closed" {
			t.Fatalf("%s: %+v", c.name, o)
		}
	}
	pb.send(classroom.In{Kind: classroom.KindVote, Question: "sample-predict", Option: "b"})
	if o := pb.expect(classroom.KindError); o.Code != classroom.ErrCodeConflict {
		t.Fatalf("vote after close: %+v", o)
	}
	host.send(classroom.In{Kind: classroom.KindReveal, Question: "sample-predict"})
	for _, c := range []*wsClient{host, pa, pb} {
		if o := c.expect(classroom.KindRevealed); o.Total != 2 {
			t.Fatalf("%s: revealed %+v", c.name, o)
		}
	}
	host.send(classroom.In{Kind: classroom.KindNextRound, Question: "sample-predict"})
	pa.expect(classroom.KindRound)
	pb.expect(classroom.KindRound)
	pa.send(classroom.In{Kind: classroom.KindVote, Question: "sample-predict", Option: "b"})
	pa.expect(classroom.KindVoted)
	pb.send(classroom.In{Kind: classroom.KindVote, Question: "sample-predict", Option: "b"})
	pb.expect(classroom.KindVoted)
	host.send(classroom.In{Kind: classroom.KindReveal, Question: "sample-predict"})
	o := pb.expect(classroom.KindRevealed, classroom.KindRound)
	if len(o.Movement) != 2 || o.Movement[0] != (classroom.Move{From: "a", To: "b", Count: 1}) {
		t.Fatalf("movement = %+v, want Bob a→b and Ada b→b", o.Movement)
	}
	// The answer, the reveal's second step: the lesson's right option and
	// its explanation, rendered from the lesson's Markdown.
	host.send(classroom.In{Kind: classroom.KindAnswer, Question: "sample-predict"})
	for _, c := range []*wsClient{host, pa, pb, proj} {
		o := c.expect(classroom.KindAnswered, classroom.KindRevealed, classroom.KindRound, classroom.KindTally, classroom.KindPresence)
		if o.Correct != "a" || o.Explain["a"] != "<p>One worker finishes one request every 20 ms, so 1000 / 20 = 50 a second.</p>" || len(o.Explain) != 3 {
			t.Fatalf("%s: answer %+v, want a with the lesson's explanations", c.name, o)
		}
	}

	// The CSVs need the host token.
	if res := s.get(nil, "/sessions/"+code+"/results.csv"); res.StatusCode != http.StatusForbidden {
		t.Fatalf("results without the token: %d", res.StatusCode)
	}
	res := s.get(nil, "/sessions/"+code+"/results.csv?token="+url.QueryEscape(tok))
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("results.csv: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	lines := strings.Split(strings.TrimSpace(res.body), "\n")
	if lines[0] != "question,prompt,type,round,status,letter,option,option_text,correct,count" || len(lines) != 1+2*countOptions(t, s, "sample-predict") {
		t.Fatalf("results.csv:\n%s", res.body)
	}
	// Each option's letter is its place on the class's screens (the
	// session's one order), beside its id, its words and the prompt.
	q, _, _ := s.course.Question("sample-predict")
	letter := map[string]string{}
	for i, o := range classOptions(code, q) {
		letter[o.ID] = classroom.OptionLetter(i)
	}
	const prompt = `"With one worker and 20 ms per request, how many requests a second can the fixture lab finish?"`
	for _, want := range []string{
		"sample-predict," + prompt + ",predict,1,revealed," + letter["a"] + ",a,About 50,yes,1",
		"sample-predict," + prompt + ",predict,2,revealed," + letter["b"] + ",b,About 500,no,",
	} {
		if !strings.Contains(res.body, want) {
			t.Fatalf("results.csv has no row %s:\n%s", want, res.body)
		}
	}
	res = s.get(nil, "/sessions/"+code+"/answers.csv?token="+url.QueryEscape(tok))
	for _, want := range []string{
		"1,Ada,sample-predict," + prompt + ",1," + letter["b"] + ",b,About 500,no",
		"2,Participant 2,sample-predict," + prompt + ",1," + letter["a"] + ",a,About 50,yes",
	} {
		if !strings.Contains(res.body, want) {
			t.Fatalf("answers.csv has no row %s:\n%s", want, res.body)
		}
	}
}

func countOptions(t *testing.T, s *classSite, id string) int {
	q, _, ok := s.course.Question(id)
	if !ok {
		t.Fatalf("no question %s", id)
	}
	return len(q.Options)
}

// TestClassSessionSurvivesRestart stops the server mid-round and starts a
// new one on the same SQLite file: the participant's cookie still works
// and their vote is there.
func TestClassSessionSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "class.db")
	s := newClassSite(t, path, "", "")
	_, created, _ := s.create("sample", "")
	code, tok := created.Code, hostToken(t, created)
	host := s.host(code, tok)
	host.expect(classroom.KindState)
	mo := s.joinAs(code, "Mo")
	p := s.participant("Mo", code, mo)
	p.expect(classroom.KindState)
	host.send(classroom.In{Kind: classroom.KindOpen, Question: "sample-check"})
	p.expect(classroom.KindRound)
	p.send(classroom.In{Kind: classroom.KindVote, Question: "sample-check", Option: "a"})
	p.expect(classroom.KindVoted)
	s.m.Close()
	s.srv.Close()
	s.store.Close()

	s2 := newClassSite(t, path, "", "")
	if res := s2.get(mo, "/sessions/"+code); res.StatusCode != 200 {
		t.Fatalf("participant page after restart: %d", res.StatusCode)
	}
	p2 := s2.participant("Mo after restart", code, mo)
	st := p2.expect(classroom.KindState).State
	var check classroom.QuestionState
	for _, q := range st.Questions {
		if q.ID == "sample-check" {
			check = q
		}
	}
	if st.Focus != "sample-check" || len(check.Rounds) != 1 || check.Rounds[0].Yours != "a" || check.Rounds[0].Status != "open" {
		t.Fatalf("after restart: focus %q, %+v", st.Focus, check)
	}
	if res := s2.get(nil, "/sessions/"+code+"/host?token="+url.QueryEscape(tok)); res.StatusCode != 200 {
		t.Fatalf("host page after restart: %d", res.StatusCode)
	}
}

// TestJoinCodeGuessingLimited checks 429 and Retry-After after repeated
// wrong codes from one address, on the join link and the join form; that a
// malformed code gets a message naming the alphabet and is not counted (it
// can match nothing, so it tells a guesser nothing); and that the join
// link's key still lets a learner in from the limited address, through
// its page and its form, while a made-up key does not.
func TestJoinCodeGuessingLimited(t *testing.T) {
	s := newClassSite(t, filepath.Join(t.TempDir(), "class.db"), "", "")
	_, created, _ := s.create("sample", "")
	for range classroom.MissLimit + 5 {
		if res := s.post(nil, "/join", url.Values{"code": {"AB0"}}); res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, "without I, L and O") {
			t.Fatalf("malformed code: %d", res.StatusCode)
		}
	}
	wrong := "ZZZZZZ"
	if wrong == created.Code {
		wrong = "YYYYYY"
	}
	for i := range classroom.MissLimit {
		if res := s.get(nil, "/join/"+wrong); res.StatusCode != http.StatusNotFound {
			t.Fatalf("miss %d: %d, want 404 (malformed codes must not have counted)", i+1, res.StatusCode)
		}
	}
	res := s.get(nil, "/join/"+created.Code)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" || !strings.Contains(res.body, "Scan the QR code") {
		t.Fatalf("after %d misses even the right code: %d (Retry-After %q), want 429 pointing to the QR code", classroom.MissLimit, res.StatusCode, res.Header.Get("Retry-After"))
	}
	if res := s.post(nil, "/join", url.Values{"code": {created.Code}}); res.StatusCode != http.StatusTooManyRequests || !hasTestID(t, res.body, "error-retry") {
		t.Fatalf("join form while limited: %d, want 429 saying when to retry", res.StatusCode)
	}
	// A made-up key is no way round the limit.
	if res := s.get(nil, "/join/"+created.Code+"?key=made-up-key1"); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a made-up key: %d, want 429", res.StatusCode)
	}
	// The join link (as its QR code carries it) still works: its page
	// keeps the key in the form, and the form joins.
	link, err := url.Parse(created.JoinURL)
	if err != nil {
		t.Fatal(err)
	}
	key := link.Query().Get("key")
	res = s.get(nil, link.RequestURI())
	if res.StatusCode != http.StatusOK || !strings.Contains(res.body, `name="key" value="`+key+`"`) {
		t.Fatalf("join link while limited: %d, want the join page carrying the key", res.StatusCode)
	}
	c := s.client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if res := s.post(c, "/join", url.Values{"code": {created.Code}, "key": {key}, "name": {"Ada"}}); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/sessions/"+created.Code {
		t.Fatalf("join form with the link's key while limited: %d to %q, want 303 to the session", res.StatusCode, res.Header.Get("Location"))
	}
	// As JSON the same error carries retry_after, equal to the header.
	res = s.do(nil, "GET", "/join/"+created.Code, nil, map[string]string{"Accept": "application/json"})
	var body struct {
		Error      Error `json:"error"`
		RetryAfter int   `json:"retry_after"`
	}
	if err := json.Unmarshal([]byte(res.body), &body); err != nil || res.StatusCode != http.StatusTooManyRequests ||
		body.Error.Code != CodeBusy || body.RetryAfter < 1 || res.Header.Get("Retry-After") != strconv.Itoa(body.RetryAfter) {
		t.Fatalf("JSON while limited: %d %s (Retry-After %q, err %v)", res.StatusCode, res.body, res.Header.Get("Retry-After"), err)
	}
}

// TestInstructorKeyGuessingLimited checks that instructor keys tried are
// limited per address as join-code misses are: after MissLimit keys (the
// right one counted too) even the right key is refused with 429 and a
// Retry-After, as JSON and on the teach form, so the key cannot be guessed
// without limit, not even by guesses sent at once. Asking without a key is
// not a guess and does not count.
func TestInstructorKeyGuessingLimited(t *testing.T) {
	s := newClassSite(t, filepath.Join(t.TempDir(), "class.db"), "sesame-key", "")
	for range classroom.MissLimit + 5 {
		if status, _, body := s.create("sample", ""); status != http.StatusForbidden || !strings.Contains(body, "needs the instructor key") {
			t.Fatalf("no key: %d %s, want 403 asking for the key", status, body)
		}
	}
	if status, _, body := s.create("sample", "sesame-key"); status != http.StatusCreated {
		t.Fatalf("the right key after requests without one: %d %s, want 201 (asking without a key is no guess)", status, body)
	}
	// MissLimit-1 guesses sent at once: each is counted before it is
	// compared, so none gets past the count.
	statuses := make(chan int, classroom.MissLimit)
	for i := range classroom.MissLimit - 1 {
		go func() {
			status, _, _ := s.create("sample", "guess-"+strconv.Itoa(i))
			statuses <- status
		}()
	}
	for i := range classroom.MissLimit - 1 {
		if status := <-statuses; status != http.StatusForbidden {
			t.Fatalf("wrong key %d: %d, want 403", i+1, status)
		}
	}
	status, _, raw := s.create("sample", "sesame-key")
	if status != http.StatusTooManyRequests || !strings.Contains(raw, "Too many instructor keys were tried") || !strings.Contains(raw, `"retry_after"`) {
		t.Fatalf("the right key after %d keys tried: %d %s, want 429 with retry_after", classroom.MissLimit, status, raw)
	}
	form := s.post(nil, "/sessions", url.Values{"lesson": {"sample"}, "key": {"sesame-key"}})
	if form.StatusCode != http.StatusTooManyRequests || form.Header.Get("Retry-After") == "" || !strings.Contains(form.body, "Too many instructor keys were tried") {
		t.Fatalf("teach form with the right key while limited: %d (Retry-After %q), want 429 beside the key field\n%.300s", form.StatusCode, form.Header.Get("Retry-After"), form.body)
	}
}

// TestClientAddr checks which address join-code misses are counted against.
func TestClientAddr(t *testing.T) {
	cases := []struct {
		what, remote, want string // plain-English description, RemoteAddr, counted as
	}{
		// An IPv4 client is its address.
		{"IPv4", "203.0.113.7:51234", "203.0.113.7"},
		// An IPv4-mapped IPv6 address is the IPv4 address.
		{"IPv4-mapped", "[::ffff:203.0.113.7]:51234", "203.0.113.7"},
		// Two addresses in one IPv6 /64 are one client.
		{"IPv6", "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:443", "2001:db8:1:2::/64"},
		{"IPv6, same /64", "[2001:db8:1:2::1]:443", "2001:db8:1:2::/64"},
		// Another /64 is another client.
		{"IPv6, next /64", "[2001:db8:1:3::1]:443", "2001:db8:1:3::/64"},
		// Loopback IPv6 is its /64 too.
		{"IPv6 loopback", "[::1]:8080", "::/64"},
		// Something that is not host:port is kept as it is.
		{"no port", "pipe", "pipe"},
	}
	for _, c := range cases {
		r := &http.Request{RemoteAddr: c.remote}
		if got := clientAddr(r); got != c.want {
			t.Errorf("%s: clientAddr(%q) = %q, want %q", c.what, c.remote, got, c.want)
		}
	}
}

// TestJoinCodeLimitSparesMembers checks that once an address is refused
// for guessing codes (as a whole class behind one school NAT can be, after
// a few typos), the requests that carry a token of the session still work:
// the host's and projector's pages, the CSVs, and a joined participant's
// page and socket. Anyone without such a token, or with a made-up one,
// is still refused.
func TestJoinCodeLimitSparesMembers(t *testing.T) {
	s := newClassSite(t, filepath.Join(t.TempDir(), "class.db"), "", "")
	_, created, _ := s.create("sample", "")
	code, tok := created.Code, hostToken(t, created)
	projPath := strings.TrimPrefix(created.ProjectorURL, s.srv.URL)
	ada := s.joinAs(code, "Ada")
	wrong := "ZZZZZZ"
	if wrong == code {
		wrong = "YYYYYY"
	}
	for range classroom.MissLimit {
		s.get(nil, "/join/"+wrong)
	}
	if res := s.get(nil, "/join/"+code); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after %d misses a newcomer gets %d, want 429", classroom.MissLimit, res.StatusCode)
	}
	fake := s.client()
	u, _ := url.Parse(s.srv.URL)
	fake.Jar.SetCookies(u, []*http.Cookie{{Name: participantCookiePrefix + code, Value: "made-up"}})
	cases := []struct {
		what   string // plain-English description
		client *http.Client
		path   string
		status int
	}{
		{"the host view", nil, "/sessions/" + code + "/host?token=" + url.QueryEscape(tok), http.StatusOK},
		{"the projector view", nil, projPath, http.StatusOK},
		{"the results CSV", nil, "/sessions/" + code + "/results.csv?token=" + url.QueryEscape(tok), http.StatusOK},
		{"the answers CSV", nil, "/sessions/" + code + "/answers.csv?token=" + url.QueryEscape(tok), http.StatusOK},
		{"a joined participant's page", ada, "/sessions/" + code, http.StatusOK},
		{"a joined participant's join link", ada, "/join/" + code, http.StatusSeeOther},
		{"the QR code as the host and projector views load it", nil, strings.TrimPrefix(created.QRURL, s.srv.URL), http.StatusOK},
		{"the QR code without a token", nil, "/sessions/" + code + "/qr.svg", http.StatusTooManyRequests},
		{"a made-up host token", nil, "/sessions/" + code + "/host?token=nope", http.StatusTooManyRequests},
		{"a made-up participant cookie", fake, "/sessions/" + code, http.StatusTooManyRequests},
		{"a made-up cookie for a code that does not exist", fake, "/join/" + wrong, http.StatusTooManyRequests},
	}
	for _, c := range cases {
		if res := s.get(c.client, c.path); res.StatusCode != c.status {
			t.Errorf("%s while the address is limited: %d, want %d", c.what, res.StatusCode, c.status)
		}
	}
	for _, path := range []string{"/sessions/" + code + "/host?token=" + url.QueryEscape(tok), projPath} {
		res := s.get(nil, path)
		imgs := find(parse(t, res.body), func(n nodeT) bool { return must(attr(n, "class")) == "class-qr" })
		if len(imgs) != 1 || must(attr(imgs[0], "src")) != strings.TrimPrefix(created.QRURL, s.srv.URL) {
			t.Errorf("%s: the QR image must load from %s", path, created.QRURL)
		}
	}
	host := s.host(code, tok)
	host.expect(classroom.KindState)
	p := s.participant("Ada", code, ada)
	if st := p.expect(classroom.KindState).State; st.You == nil || st.You.Name != "Ada" {
		t.Fatalf("Ada's socket while the address is limited: state %+v", st)
	}
}

// TestClassSocketChecks refuses session sockets from other sites, without
// a token or cookie, or with a wrong token.
func TestClassSocketChecks(t *testing.T) {
	s := newClassSite(t, filepath.Join(t.TempDir(), "class.db"), "", "")
	_, created, _ := s.create("sample", "")
	code, tok := created.Code, hostToken(t, created)
	jar, _ := cookiejar.New(nil)
	cases := []struct {
		what, path, origin string // plain-English description, path, Origin
		status             int
	}{
		{"another site's page", "/ws/sessions/" + code + "?token=" + url.QueryEscape(tok), "http://evil.example", http.StatusForbidden},
		{"no token and no cookie", "/ws/sessions/" + code, "", http.StatusForbidden},
		{"a wrong host token", "/ws/sessions/" + code + "?token=nope", "", http.StatusForbidden},
		{"a bad since", "/ws/sessions/" + code + "?token=" + url.QueryEscape(tok) + "&since=-1", "", http.StatusBadRequest},
	}
	for _, c := range cases {
		_, res, err := s.dialWS(c.what, c.path, jar, c.origin)
		if err == nil || res == nil || res.StatusCode != c.status {
			got := 0
			if res != nil {
				got = res.StatusCode
			}
			t.Errorf("%s: status %d (%v), want %d", c.what, got, err, c.status)
		}
	}
}

// TestClassRunForEveryone has the host run the lesson's lab preset: every
// participant is told the run's id at once and follows it on the run
// stream to its last row.
func TestClassRunForEveryone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real lab and runs a two-second sweep")
	}
	s := newClassSite(t, filepath.Join(t.TempDir(), "class.db"), "", buildLab(t))
	_, created, _ := s.create("sample", "")
	code, tok := created.Code, hostToken(t, created)
	host := s.host(code, tok)
	host.expect(classroom.KindState)
	var ps []*wsClient
	for _, name := range []string{"Ada", "Bob"} {
		p := s.participant(name, code, s.joinAs(code, name))
		p.expect(classroom.KindState)
		ps = append(ps, p)
	}
	// Knobs beyond the sandbox are refused, naming the knob; no run starts.
	tooMany := 100000
	host.send(classroom.In{Kind: classroom.KindRun, Lab: "sample-lab", Knobs: &classroom.Knobs{Workers: &tooMany}})
	if o := host.expect(classroom.KindError, classroom.KindPresence); !strings.Contains(o.Message, "workers") || o.Code != classroom.ErrCodeInvalid {
		t.Fatalf("run with 100000 workers: %+v, want an invalid refusal naming workers", o)
	}
	// The stall knobs are checked like the others.
	longStall := 20000
	host.send(classroom.In{Kind: classroom.KindRun, Lab: "sample-lab", Knobs: &classroom.Knobs{StallMS: &longStall}})
	if o := host.expect(classroom.KindError, classroom.KindPresence); !strings.Contains(o.Message, "stall_ms: 20000 is not allowed") {
		t.Fatalf("run with a 20 s stall: %+v, want a refusal naming stall_ms", o)
	}
	// The host changes the preset's rates (10, 20) to 15 and 25.
	host.send(classroom.In{Kind: classroom.KindRun, Lab: "sample-lab", Knobs: &classroom.Knobs{Rates: []float64{15, 25}}})
	run := host.expect(classroom.KindRunStart, classroom.KindPresence)
	if run.RunID == "" || run.Lab != "sample-lab" {
		t.Fatalf("run message = %+v", run)
	}
	// A second run while the first is going is refused, to the host.
	host.send(classroom.In{Kind: classroom.KindRun, Lab: "sample-lab"})
	if o := host.expect(classroom.KindError); !strings.Contains(o.Message, "still waiting or running") {
		t.Fatalf("second run: %+v", o)
	}
	for _, p := range ps {
		if o := p.expect(classroom.KindRunStart); o.RunID != run.RunID {
			t.Fatalf("%s: run %+v", p.name, o)
		}
		rs, _, err := s.dialWS(p.name+" run", "/ws/runs/"+run.RunID+"?since=0", nil, s.srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for {
			rs.ws.SetReadDeadline(time.Now().Add(60 * time.Second))
			var e runner.Event
			if err := rs.ws.ReadJSON(&e); err != nil {
				t.Fatalf("%s: run stream: %v", p.name, err)
			}
			if e.Kind == runner.KindRow {
				if want := float64(15 + 10*rows); e.Row.Offered != want {
					t.Fatalf("%s: row %d offered %v a second, want %v (the host's knobs)", p.name, rows, e.Row.Offered, want)
				}
				rows++
			}
			if e.Kind.Terminal() {
				if e.Kind != runner.KindDone || rows != 2 {
					t.Fatalf("%s: run ended %s (%s) after %d rows, want done after 2", p.name, e.Kind, e.Reason, rows)
				}
				break
			}
		}
	}
	// A participant who joins late learns of the run from the state.
	late := s.participant("late", code, s.joinAs(code, "late"))
	if st := late.expect(classroom.KindState).State; st.RunID != run.RunID {
		t.Fatalf("late joiner's state has run %q, want %q", st.RunID, run.RunID)
	}
}

// TestTeachAndJoinForms covers the HTML paths: /teach and its form's 303
// to the host view, and the join form's answers to bad input.
func TestTeachAndJoinForms(t *testing.T) {
	s := newClassSite(t, filepath.Join(t.TempDir(), "class.db"), "", "")
	if res := s.get(nil, "/teach"); res.StatusCode != 200 || !hasTestID(t, res.body, "teach-littles-law") || hasTestID(t, res.body, "teach-sample") {
		t.Fatalf("/teach: %d, want the course's lessons without the sample fixture", res.StatusCode)
	}
	res := s.post(nil, "/sessions", url.Values{"lesson": {"sample"}})
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/sessions/") || !strings.Contains(loc, "/host?token=") {
		t.Fatalf("teach form: %d %q, want 303 to the host view", res.StatusCode, loc)
	}
	code := strings.Split(loc, "/")[2]
	if res := s.get(nil, "/join"); res.StatusCode != 200 || !hasTestID(t, res.body, "join-code") {
		t.Fatalf("/join: %d", res.StatusCode)
	}
	cases := []struct {
		what   string // plain-English description
		form   url.Values
		status int
		says   string // the page says this
	}{
		{"no code", url.Values{"code": {" "}}, http.StatusBadRequest, "Type the code"},
		{"a name that is too long", url.Values{"code": {code}, "name": {strings.Repeat("n", 41)}}, http.StatusBadRequest, "at most 40"},
		{"a name with a control character", url.Values{"code": {code}, "name": {"a\x07b"}}, http.StatusBadRequest, "control characters"},
		{"a good name", url.Values{"code": {code}, "name": {"Zoë"}}, http.StatusSeeOther, ""},
	}
	for _, c := range cases {
		res := s.post(nil, "/join", c.form)
		if res.StatusCode != c.status || !strings.Contains(res.body, c.says) {
			t.Errorf("%s: %d, want %d saying %q\n%.300s", c.what, res.StatusCode, c.status, c.says, res.body)
		}
	}
}

// TestTeachLivesOnTeach checks instructor controls stay off lesson
// pages and /teach asks for the instructor key once: one key field in one
// form with every lesson's Teach button; a wrong key comes back beside
// that field, not on an error page; the right key starts the session and
// leaves a teach pass, with which every Teach button works without the
// key, until it is forgotten. A server without a key shows no field.
func TestTeachLivesOnTeach(t *testing.T) {
	s := newClassSite(t, filepath.Join(t.TempDir(), "class.db"), "sesame", "")
	lesson := s.get(nil, "/lessons/littles-law")
	for _, id := range []string{"teach-littles-law", "teach-key", "teach-start"} {
		if hasTestID(t, lesson.body, id) {
			t.Errorf("the lesson page shows %s: instructor controls belong on /teach", id)
		}
	}
	if strings.Contains(lesson.body, "Instructor key") || strings.Contains(lesson.body, "Teach this lesson") {
		t.Error("the lesson page still offers teaching")
	}

	browser := s.client()
	teach := s.get(browser, "/teach")
	doc := parse(t, teach.body)
	keys := find(doc, byTestID("teach-key"))
	starts := find(doc, byTestID("teach-start"))
	forms := find(doc, byTestID("teach-form"))
	if len(keys) != 1 || len(forms) != 1 || len(starts) < 8 || len(find(forms[0], byTestID("teach-start"))) != len(starts) {
		t.Fatalf("/teach: %d key fields, %d forms, %d Teach buttons; want one field in one form holding every lesson's button", len(keys), len(forms), len(starts))
	}
	if must(attr(forms[0], "action")) != "/sessions" || must(attr(starts[0], "name")) != "lesson" || must(attr(starts[0], "value")) == "" {
		t.Fatal("the Teach buttons must post their lesson to /sessions")
	}

	// A wrong key: /teach again, the message beside the field.
	res := s.post(browser, "/sessions", url.Values{"lesson": {"littles-law"}, "key": {"open sesame"}})
	if res.StatusCode != http.StatusForbidden || testIDText(t, res.body, "teach-error") != "That instructor key is not this server's; check it and try again." ||
		!hasTestID(t, res.body, "teach-key") || !hasTestID(t, res.body, "teach-littles-law") {
		t.Fatalf("a wrong key: %d, want /teach with the message beside the key field\n%.400s", res.StatusCode, res.body)
	}
	if !strings.Contains(res.body, `aria-describedby="teach-key-error teach-key-help"`) {
		t.Error("the key field is not described by its error")
	}
	// The right key starts the session and leaves a pass in the browser.
	res = s.post(browser, "/sessions", url.Values{"lesson": {"littles-law"}, "key": {"sesame"}})
	if res.StatusCode != http.StatusSeeOther || !strings.Contains(res.Header.Get("Location"), "/host?token=") {
		t.Fatalf("the right key: %d %q, want 303 to the host view", res.StatusCode, res.Header.Get("Location"))
	}
	var pass *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == teachPassCookie {
			pass = c
		}
	}
	if pass == nil || !pass.HttpOnly || pass.SameSite != http.SameSiteStrictMode || pass.MaxAge != teachPassHours*3600 || strings.Contains(pass.Value, "sesame") {
		t.Fatalf("teach pass cookie %+v: want HttpOnly, SameSite=Strict, %d hours, without the key in it", pass, teachPassHours)
	}
	// With the pass: no key field, and another lesson starts without it.
	teach = s.get(browser, "/teach")
	if hasTestID(t, teach.body, "teach-key") || !hasTestID(t, teach.body, "teach-key-held") {
		t.Fatal("/teach asks for the key again although this browser holds a pass")
	}
	res = s.post(browser, "/sessions", url.Values{"lesson": {"overload"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("a Teach button with the pass: %d, want 303", res.StatusCode)
	}
	// Another browser has no pass; the JSON API still takes only the key.
	if res := s.post(nil, "/sessions", url.Values{"lesson": {"overload"}}); res.StatusCode != http.StatusForbidden || !hasTestID(t, res.body, "teach-key") {
		t.Fatalf("another browser without the key: %d, want /teach asking for it", res.StatusCode)
	}
	// Forgetting the pass asks for the key again.
	res = s.post(browser, "/teach/forget", nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/teach" {
		t.Fatalf("forget: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	if teach := s.get(browser, "/teach"); !hasTestID(t, teach.body, "teach-key") {
		t.Fatal("after forgetting, /teach does not ask for the key")
	}

	// ?lesson= shows one lesson, a fixture too; an unknown one is a 404.
	one := s.get(nil, "/teach?lesson=sample")
	if n := len(find(parse(t, one.body), byTestID("teach-start"))); one.StatusCode != 200 || n != 1 || !hasTestID(t, one.body, "teach-sample") {
		t.Fatalf("/teach?lesson=sample: %d with %d Teach buttons, want the fixture alone", one.StatusCode, n)
	}
	if res := s.get(nil, "/teach?lesson=nope"); res.StatusCode != http.StatusNotFound {
		t.Fatalf("/teach?lesson=nope: %d, want 404", res.StatusCode)
	}

	// Without a configured key there is no field at all.
	open := newClassSite(t, filepath.Join(t.TempDir(), "open.db"), "", "")
	if body := open.get(nil, "/teach").body; hasTestID(t, body, "teach-key") || hasTestID(t, body, "teach-key-held") {
		t.Fatal("a server without an instructor key asks for one")
	}
}

// TestTeachPass checks the teach pass cookie's value: it holds for
// teachPassHours with the key it was made with, and not after, nor with
// another key, nor altered.
func TestTeachPass(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	pass := teachPass("sesame", t0)
	end, mac, _ := strings.Cut(pass, ".")
	later, _ := strconv.ParseInt(end, 10, 64)
	cases := []struct {
		what string // plain-English description
		key  string
		v    string
		at   time.Time
		ok   bool
	}{
		{"at once", "sesame", pass, t0, true},
		{"a second before its end", "sesame", pass, t0.Add(teachPassHours*time.Hour - time.Second), true},
		{"at its end", "sesame", pass, t0.Add(teachPassHours * time.Hour), false},
		{"after the key changed", "sesame2", pass, t0, false},
		{"with its end moved later", "sesame", strconv.FormatInt(later+3600, 10) + "." + mac, t0, false},
		{"without its MAC", "sesame", end, t0, false},
		{"on a server without a key", "", pass, t0, false},
		{"empty", "sesame", "", t0, false},
	}
	for _, c := range cases {
		if got := validTeachPass(c.key, c.v, c.at); got != c.ok {
			t.Errorf("%s: valid = %v, want %v", c.what, got, c.ok)
		}
	}
}

// TestClassOptionOrder checks that every screen of a class shows a
// question's options in one order, the session's (lessons.Question.Order
// keyed by the join code), and each option as its rendered Markdown
// (hidden-queue has options with code in them).
func TestClassOptionOrder(t *testing.T) {
	s := newClassSite(t, filepath.Join(t.TempDir(), "class.db"), "", "")
	st, created, body := s.create("hidden-queue", "")
	if st != http.StatusCreated {
		t.Fatalf("create: %d %s", st, body)
	}
	code := created.Code
	participant := s.joinAs(code, "Ada")
	pages := map[string]string{
		"host":        s.get(nil, "/sessions/"+code+"/host?token="+url.QueryEscape(hostToken(t, created))).body,
		"projector":   s.get(nil, strings.TrimPrefix(created.ProjectorURL, s.srv.URL)).body,
		"participant": s.get(participant, "/sessions/"+code).body,
	}
	l, _ := s.course.Lesson("hidden-queue")
	shuffled, withCode := 0, 0
	for _, b := range l.Blocks() {
		q, ok := b.(*lessons.Question)
		if !ok {
			continue
		}
		var want []string
		for _, o := range q.Order(code) {
			want = append(want, o.ID)
		}
		if strings.Join(want, "") != optionIDs(q) {
			shuffled++
		}
		for role, page := range pages {
			sec := find(parse(t, page), func(n *html.Node) bool { return must(attr(n, "data-class-question")) == q.ID })
			if len(sec) != 1 {
				t.Fatalf("%s: question %s is not on the page", role, q.ID)
			}
			var got []string
			for i, li := range find(sec[0], func(n *html.Node) bool { _, ok := attr(n, "data-option"); return ok && n.Data == "li" }) {
				got = append(got, must(attr(li, "data-option")))
				// Lettered A, B, … in the order shown, on every screen.
				letter := string(rune('A' + i))
				shown := find(li, func(n *html.Node) bool { return must(attr(n, "class")) == "option-letter" })
				if must(attr(li, "data-letter")) != letter || len(shown) != 1 || text(shown[0]) != letter {
					t.Errorf("%s: %s's option %d is not lettered %s", role, q.ID, i+1, letter)
				}
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s: %s's options in the order %v, want the session's %v", role, q.ID, got, want)
			}
			for _, o := range q.Options {
				if strings.Contains(string(o.HTML), "<code>") {
					withCode++
					if !strings.Contains(renderNode(sec[0]), string(o.HTML)) {
						t.Errorf("%s: option %s of %s is not shown as %s", role, o.ID, q.ID, o.HTML)
					}
					if strings.Contains(text(sec[0]), "`") {
						t.Errorf("%s: %s shows a raw backtick", role, q.ID)
					}
				}
			}
		}
	}
	if shuffled == 0 || withCode == 0 {
		t.Errorf("the test shows nothing: %d questions shuffled, %d options with code", shuffled, withCode)
	}
}

// TestClassGates: a participant's page of a class on cap-inside shows no
// recorded table and no prose past the first Predict's gate until the
// host shows that Predict's answer; /sessions/{code}/parts then sends
// the parts it opened, and only those (the next Predict's measurement
// stays out). The host's own page shows everything.
func TestClassGates(t *testing.T) {
	s := newClassSite(t, filepath.Join(t.TempDir(), "class.db"), "", "")
	st, created, body := s.create("cap-inside", "")
	if st != http.StatusCreated {
		t.Fatalf("create: %d %s", st, body)
	}
	code, tok := created.Code, hostToken(t, created)
	pc := s.joinAs(code, "Ada")
	page := s.get(pc, "/sessions/"+code).body
	for _, id := range []string{"cap-release-queue-result", "cap-release-queue-time", "cap-release-quota-result", "cap-w64-limit-result"} {
		if strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("before any answer, the participant's page shows table %s", id)
		}
	}
	notes := find(parse(t, page), byTestID("class-gate-note"))
	var shown []string
	for _, n := range notes {
		if _, hidden := attr(n, "hidden"); !hidden {
			shown = append(shown, must(attr(n, "data-class-gate-note")))
		}
	}
	if len(notes) != 3 || strings.Join(shown, " ") != "cap-predict-release" {
		t.Errorf("gate notes: %d, shown %v; want one at each of the 3 Predicts' gates, the first shown", len(notes), shown)
	}
	if !strings.Contains(page, `data-testid="class-q-cap-predict-quota"`) || !strings.Contains(page, `data-testid="class-lab-cap-release-quota"`) {
		t.Error("the questions and labs past the gate are not on the page for session.js")
	}
	parts := func(c *http.Client) (int, []classPart) {
		t.Helper()
		res := s.get(c, "/sessions/"+code+"/parts")
		var out struct{ Parts []classPart }
		json.Unmarshal([]byte(res.body), &out)
		return res.StatusCode, out.Parts
	}
	if st, got := parts(pc); st != http.StatusOK || len(got) != 0 {
		t.Errorf("parts before any answer: %d, %d parts, want 200 and none", st, len(got))
	}
	if st, _ := parts(nil); st != http.StatusForbidden {
		t.Errorf("parts for someone who has not joined: %d, want 403", st)
	}
	if hp := s.get(nil, "/sessions/"+code+"/host?token="+url.QueryEscape(tok)).body; strings.Contains(hp, `data-class-gated`) {
		t.Error("the host's page leaves parts out")
	}

	host := s.host(code, tok)
	host.expect(classroom.KindState)
	for _, k := range []string{classroom.KindOpen, classroom.KindClose, classroom.KindReveal, classroom.KindAnswer} {
		host.send(classroom.In{Kind: k, Question: "cap-predict-release"})
	}
	host.expect(classroom.KindAnswered, classroom.KindRound, classroom.KindRevealed, classroom.KindTally, classroom.KindPresence)
	st, got := parts(pc)
	var html strings.Builder
	for _, p := range got {
		html.WriteString(p.HTML)
	}
	if st != http.StatusOK || !strings.Contains(html.String(), `id="cap-release-queue-result"`) || !strings.Contains(html.String(), `id="cap-release-queue-time"`) {
		t.Errorf("parts after the first answer: %d, want the release's tables", st)
	}
	if strings.Contains(html.String(), `id="cap-release-quota-result"`) {
		t.Error("the second Predict's measurement came with the first's answer")
	}
	page = s.get(pc, "/sessions/"+code).body
	if !strings.Contains(page, `id="cap-release-queue-result"`) || strings.Contains(page, `id="cap-release-quota-result"`) {
		t.Error("after the first answer, the participant's page does not show the first measurement and only it")
	}
}

// A class whose run did not finish is shown the lesson's recorded run of
// the preset (its tables, their ids apart from the same tables in a
// participant's page), or, for a preset the lesson recorded nothing of
// (the capstone's), a simulation of it, labelled as such. A lab of
// another lesson is not found.
func TestClassRecordedFallback(t *testing.T) {
	s := newClassSite(t, filepath.Join(t.TempDir(), "class.db"), "", "")
	for _, c := range []struct {
		lesson, lab, kind string
		want              []string // in the fragment
	}{
		{"sample", "sample-lab", "recorded", []string{`id="recorded-sample-table"`, "fixture 5", "The run recorded for this lesson"}},
		{"capstone", "capstone-service", "simulated", []string{"A simulation of the same settings: computed, not measured", `data-testid="sim-chart"`}},
	} {
		st, created, body := s.create(c.lesson, "")
		if st != http.StatusCreated {
			t.Fatalf("create %s: %d %s", c.lesson, st, body)
		}
		participant := s.joinAs(created.Code, "Ada")
		res := s.get(participant, "/sessions/"+created.Code+"/recorded/"+c.lab)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("%s: %d %s", c.lab, res.StatusCode, res.body)
		}
		if got := must(attr(find(parse(t, res.body), byTestID("class-recorded"))[0], "data-kind")); got != c.kind {
			t.Errorf("%s: kind %q, want %q", c.lab, got, c.kind)
		}
		for _, w := range c.want {
			if !strings.Contains(res.body, w) {
				t.Errorf("%s: the fallback lacks %s:\n%s", c.lab, w, res.body)
			}
		}
		if c.lesson == "sample" {
			if res := s.get(participant, "/sessions/"+created.Code+"/recorded/littles-sweep"); res.StatusCode != http.StatusNotFound {
				t.Errorf("another lesson's lab: %d, want 404", res.StatusCode)
			}
		}
	}
}
