package classroom

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"capacitylab/store"
)

// testLesson is the lesson the tests teach: a predict and a check question
// and one lab.
var testLessonInfo = Lesson{
	Slug:  "queues",
	Title: "Queues",
	Questions: []Question{
		{ID: "p1", Type: "predict", Text: "When the rate doubles, what happens to the requests in flight?",
			Options: []string{"a", "b", "c"}, Correct: "b",
			Explain:    map[string]string{"a": "<p>Only if the time stayed put.</p>", "b": "<p>Both the rate and the time grow.</p>", "c": "<p>The queue does not empty.</p>"},
			OptionText: map[string]string{"a": "They double", "b": "More than double", "c": "-1, they never settle"},
			// The class sees c, a, b: A is c.
			Order: func(string) []string { return []string{"c", "a", "b"} }},
		{ID: "c1", Type: "check", Text: "Which limit holds the tail?", Options: []string{"a", "b"}, Correct: "a",
			Explain: map[string]string{"a": "<p>A short queue.</p>", "b": "<p>More workers do not.</p>"}},
	},
	Labs: []string{"lab-1"},
}

func testLessons(slug string) (Lesson, error) {
	if slug != testLessonInfo.Slug {
		return Lesson{}, errors.New("no lesson " + slug)
	}
	return testLessonInfo, nil
}

// env is a Manager on a real SQLite file, served over real TCP by a small
// handler that does what the web layer does: upgrade, check the token,
// Serve.
type env struct {
	t    testing.TB
	opts []store.Option // how the store is opened
	path string
	url  string // a Postgres URL instead of path (postgresURL)
	st   *store.Store
	m    *Manager
	srv  *httptest.Server
}

func newEnv(t *testing.T, cfg Config) *env { return newEnvTB(t, cfg) }

func newEnvTB(t testing.TB, cfg Config) *env {
	t.Helper()
	e := &env{t: t, path: filepath.Join(t.TempDir(), "class.db")}
	e.start(cfg)
	t.Cleanup(e.stop)
	return e
}

func (e *env) start(cfg Config) {
	e.t.Helper()
	var st *store.Store
	var err error
	if e.url != "" {
		st, err = store.OpenPostgres(context.Background(), e.url, e.opts...)
	} else {
		st, err = store.Open(e.path, e.opts...)
	}
	if err != nil {
		e.t.Fatal(err)
	}
	cfg.Store = st
	if cfg.Lessons == nil {
		cfg.Lessons = testLessons
	}
	m, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.st, e.m = st, m
	e.srv = httptest.NewServer(http.HandlerFunc(e.serveWS))
}

func (e *env) stop() {
	if e.m == nil {
		return
	}
	e.m.Close()
	e.srv.Close()
	e.st.Close()
	e.m = nil
}

func (e *env) serveWS(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s, err := e.m.Get(r.Context(), q.Get("code"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	who, err := s.Holder(q.Get("token"), q.Get("p"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	since, _ := strconv.Atoi(q.Get("since"))
	up := websocket.Upgrader{}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.Serve(ws, who, since, q.Get("epoch"))
}

// client is a real websocket client of one session.
type client struct {
	t    testing.TB
	name string
	ws   *websocket.Conn
	last int // last seq seen
}

func (e *env) dial(name, code string, params url.Values) *client {
	e.t.Helper()
	params.Set("code", code)
	u := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/?" + params.Encode()
	ws, _, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		e.t.Fatalf("%s: dial: %v", name, err)
	}
	c := &client{t: e.t, name: name, ws: ws}
	e.t.Cleanup(func() { ws.Close() })
	return c
}

func (e *env) host(code, token string) *client {
	return e.dial("host", code, url.Values{"token": {token}})
}

func (e *env) participant(name, code, token string) *client {
	return e.dial(name, code, url.Values{"p": {token}})
}

func (c *client) send(m any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(m); err != nil {
		c.t.Fatalf("%s: send: %v", c.name, err)
	}
}

// next returns the next message, failing after two seconds.
func (c *client) next() Out {
	c.t.Helper()
	c.ws.SetReadDeadline(time.Now().Add(2 * time.Second))
	var o Out
	_, data, err := c.ws.ReadMessage()
	if err != nil {
		c.t.Fatalf("%s: read: %v", c.name, err)
	}
	if err := json.Unmarshal(data, &o); err != nil {
		c.t.Fatalf("%s: decode %s: %v", c.name, data, err)
	}
	if o.Seq < c.last {
		c.t.Fatalf("%s: seq went back from %d to %d in %s", c.name, c.last, o.Seq, data)
	}
	c.last = o.Seq
	return o
}

// expect skips messages of the kinds in skip and returns the next one,
// which must be of kind.
func (c *client) expect(kind string, skip ...string) Out {
	c.t.Helper()
	for {
		o := c.next()
		if o.Kind == kind {
			return o
		}
		if !contains(skip, o.Kind) {
			c.t.Fatalf("%s: got %s message %+v, want %s", c.name, o.Kind, o, kind)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func counts(cs []OptionCount) string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.Option + "=" + strconv.Itoa(c.Count))
	}
	return b.String()
}

func mustJoin(t testing.TB, s *Session, name string) (int, string) {
	t.Helper()
	id, tok, err := s.Join(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return id, tok
}
