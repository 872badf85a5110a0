package web

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"capacitylab/lessons"
	"capacitylab/static"
	"capacitylab/store"
)

// testSite is a real server on 127.0.0.1 with a real SQLite file.
type testSite struct {
	t      *testing.T
	srv    *httptest.Server
	store  *store.Store
	dbPath string
	course *lessons.Course
	logs   *syncBuffer
	free   []int // processors kept free for the load generator (benchmarks: newBenchSite)
}

// syncBuffer is a bytes.Buffer safe for the server's concurrent logging.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func loadCourse(t testing.TB) *lessons.Course {
	t.Helper()
	c, err := lessons.Load(lessons.Content())
	if err != nil {
		t.Fatalf("embedded lessons: %v", err)
	}
	return c
}

func newAssets(t testing.TB) *Assets {
	t.Helper()
	a, err := NewAssets(static.FS())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// newSite starts a server over the embedded course with a fresh database.
func newSite(t *testing.T) *testSite {
	t.Helper()
	return newSiteAt(t, filepath.Join(t.TempDir(), "progress.db"), nil)
}

func newSiteAt(t *testing.T, dbPath string, tweak func(*Deps)) *testSite {
	t.Helper()
	return newSiteWith(t, dbPath, nil, tweak)
}

// newSiteWith is newSiteAt with the store opened with opts.
func newSiteWith(t *testing.T, dbPath string, opts []store.Option, tweak func(*Deps)) *testSite {
	t.Helper()
	st, err := store.Open(dbPath, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return newSiteOn(t, st, dbPath, tweak)
}

// newSiteOn starts a server on st (closed when the test ends); dbPath
// is its SQLite file, if it is one.
func newSiteOn(t *testing.T, st *store.Store, dbPath string, tweak func(*Deps)) *testSite {
	t.Helper()
	c := loadCourse(t)
	logs := &syncBuffer{}
	d := Deps{
		Course: func() (*lessons.Course, error) { return c, nil },
		Store:  st,
		Assets: newAssets(t),
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	}
	if tweak != nil {
		tweak(&d)
	}
	srv := httptest.NewServer(NewServer(d))
	t.Cleanup(func() {
		srv.Close()
		st.Close()
	})
	return &testSite{t: t, srv: srv, store: st, dbPath: dbPath, course: c, logs: logs}
}

// client returns a client with its own cookie jar that does not follow
// redirects, so tests see each 303.
func (s *testSite) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type response struct {
	*http.Response
	body string
}

func (s *testSite) do(c *http.Client, method, path string, form url.Values, header map[string]string) response {
	s.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, s.srv.URL+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if c == nil {
		c = s.client()
	}
	res, err := c.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return response{res, string(b)}
}

func (s *testSite) get(c *http.Client, path string) response { return s.do(c, "GET", path, nil, nil) }

func (s *testSite) post(c *http.Client, path string, form url.Values) response {
	return s.do(c, "POST", path, form, nil)
}

func (s *testSite) postJSON(c *http.Client, path string, form url.Values) response {
	return s.do(c, "POST", path, form, map[string]string{"Accept": "application/json"})
}

// parse parses an HTML page.
func parse(t testing.TB, body string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// find returns every element for which match is true, in document order.
func find(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func byTestID(id string) func(*html.Node) bool {
	return func(n *html.Node) bool { v, _ := attr(n, "data-testid"); return v == id }
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// testIDText returns the text of the one element with data-testid id, or
// fails the test.
func testIDText(t testing.TB, body, id string) string {
	t.Helper()
	ns := find(parse(t, body), byTestID(id))
	if len(ns) != 1 {
		t.Fatalf("want one element with data-testid=%q, found %d", id, len(ns))
	}
	return text(ns[0])
}

func hasTestID(t testing.TB, body, id string) bool {
	return len(find(parse(t, body), byTestID(id))) > 0
}

type nodeT = *html.Node

func must(v string, _ bool) string { return v }

// learnerOf returns the learner id in c's cookie jar for the test site.
func learnerOf(t testing.TB, s *testSite, c *http.Client) string {
	t.Helper()
	u, _ := url.Parse(s.srv.URL)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == LearnerCookie {
			return ck.Value
		}
	}
	t.Fatal("no learner cookie")
	return ""
}

func renderNode(n *html.Node) string {
	var b strings.Builder
	html.Render(&b, n)
	return b.String()
}

// normalise parses an HTML fragment and renders it back, so it compares
// equal to the same markup found inside a parsed page.
func normalise(t testing.TB, fragment string) string {
	t.Helper()
	body := &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
	ns, err := html.ParseFragment(strings.NewReader(fragment), body)
	if err != nil || len(ns) == 0 {
		t.Fatalf("fragment: %v", err)
	}
	return renderNode(ns[0])
}

// readingOn returns a client whose learner has skipped every Predict of
// the lesson, so its pages show the parts past each Predict's gate.
func (s *testSite) readingOn(slug string) *http.Client {
	s.t.Helper()
	c := s.client()
	l, ok := s.course.Lesson(slug)
	if !ok {
		s.t.Fatalf("no lesson %s", slug)
	}
	for _, b := range l.Blocks() {
		if q, ok := b.(*lessons.Question); ok && q.Type == "predict" {
			if res := s.post(c, "/lessons/"+slug+"/predict/"+q.ID, url.Values{"action": {"skip"}}); res.StatusCode != http.StatusSeeOther {
				s.t.Fatalf("skip %s: %d %s", q.ID, res.StatusCode, res.body)
			}
		}
	}
	return c
}
