package web

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/andybalholm/brotli"

	"capacitylab/lessons"
	"capacitylab/store"
)

const (
	samplePredict = "/lessons/sample/predict/sample-predict"
	sampleCheck   = "/lessons/sample/check/sample-check"
)

func TestRoutes(t *testing.T) {
	s := newSite(t)
	css := newAssets(t).URL("css/app.css")
	tests := []struct {
		name     string
		method   string
		path     string
		form     url.Values
		header   map[string]string
		status   int
		ctype    string
		contains string
	}{
		// The index lists every lesson.
		{"index", "GET", "/", nil, nil, 200, "text/html", "How many requests are inside your service"},
		// The health check answers plain ok.
		{"healthz", "GET", "/healthz", nil, nil, 200, "text/plain", "ok"},
		// Metrics are in Prometheus text format.
		{"metrics", "GET", "/metrics", nil, nil, 200, "text/plain", "capacitylab_http_requests_total"},
		// A lesson page renders its title and blocks.
		{"lesson", "GET", "/lessons/sample", nil, nil, 200, "text/html", `data-testid="predict-sample-predict"`},
		// /lessons alone sends the reader to the index.
		{"lessons redirect", "GET", "/lessons", nil, nil, 301, "", ""},
		// A hashed stylesheet is served.
		{"static hashed", "GET", css, nil, nil, 200, "text/css", "prefers-color-scheme"},
		// The unhashed name works too (module imports use it).
		{"static plain", "GET", "/static/js/lesson.js", nil, nil, 200, "text/javascript", "data-enhance"},
		// Browsers asking for /favicon.ico are sent to the site icon.
		{"favicon", "GET", "/favicon.ico", nil, nil, 302, "", ""},
		// An unknown static file is a 404.
		{"static missing", "GET", "/static/nope.css", nil, nil, 404, "text/html", "There is no file"},
		// The course as JSON.
		{"api lessons", "GET", "/api/lessons", nil, nil, 200, "application/json", `"slug": "littles-law"`},
		// A newcomer's progress export is empty.
		{"api progress", "GET", "/api/progress", nil, nil, 200, "application/json", `"predictions": []`},
		// The progress page offers export and reset.
		{"progress page", "GET", "/progress", nil, nil, 200, "text/html", "Delete my progress"},
		// Locking in a prediction redirects to the block.
		{"predict lock", "POST", samplePredict, url.Values{"action": {"lock"}, "option": {"a"}}, nil, 303, "", ""},
		// Skipping also redirects to the block.
		{"predict skip", "POST", samplePredict, url.Values{"action": {"skip"}}, nil, 303, "", ""},
		// Revealing with nothing locked is a conflict that says what to do.
		{"predict reveal first", "POST", samplePredict, url.Values{"action": {"reveal"}}, nil, 409, "text/html", "before revealing"},
		// An unknown action names the allowed ones.
		{"predict bad action", "POST", samplePredict, url.Values{"action": {"guess"}}, nil, 400, "text/html", "want lock, skip, open or reveal"},
		// Locking without an option explains itself.
		{"predict no option", "POST", samplePredict, url.Values{"action": {"lock"}}, nil, 400, "text/html", "Choose one of the options"},
		// An option that does not exist names the ones that do.
		{"predict bad option", "POST", samplePredict, url.Values{"action": {"lock"}, "option": {"z"}}, nil, 400, "text/html", "choose one of a, b, c"},
		// A check answer redirects to the block.
		{"check", "POST", sampleCheck, url.Values{"option": {"b"}}, nil, 303, "", ""},
		// The JSON twin of a check answer returns the block's HTML.
		{"check json", "POST", sampleCheck, url.Values{"option": {"a"}}, map[string]string{"Accept": "application/json"}, 200, "application/json", `"correct": true`},
		// A predict id used as a check is not found.
		{"check wrong kind", "POST", "/lessons/sample/check/sample-predict", url.Values{"option": {"a"}}, nil, 404, "text/html", "no check block"},
		// A check on an unknown lesson is not found.
		{"check unknown lesson", "POST", "/lessons/nope/check/sample-check", url.Values{"option": {"a"}}, nil, 404, "text/html", "no lesson called"},
		// Reset without confirmation is refused with a reason.
		{"reset unconfirmed", "POST", "/progress/reset", url.Values{}, nil, 400, "text/html", "needs confirming"},
		// Reset with confirmation redirects to the progress page.
		{"reset", "POST", "/progress/reset", url.Values{"confirm": {"yes"}}, nil, 303, "", ""},
		// The JSON reset twin.
		{"api reset", "POST", "/api/progress/reset", url.Values{"confirm": {"yes"}}, nil, 200, "application/json", `"reset": true`},
		// An unknown lesson is a helpful 404.
		{"unknown lesson", "GET", "/lessons/littles-lw", nil, nil, 404, "text/html", "/lessons/littles-law"},
		// An unknown page is a 404 with a way back.
		{"unknown page", "GET", "/nowhere", nil, nil, 404, "text/html", "See all lessons"},
		// An unknown API URL answers JSON.
		{"unknown api", "GET", "/api/nowhere", nil, nil, 404, "application/json", `"code": "not_found"`},
		// HEAD works wherever GET does (link checkers use it).
		{"head", "HEAD", "/lessons/sample", nil, nil, 200, "text/html", ""},
		// A wrong method says which.
		{"method", "DELETE", "/lessons/sample", nil, nil, 405, "text/html", "DELETE is not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.do(nil, tt.method, tt.path, tt.form, tt.header)
			if res.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d; body:\n%.500s", res.StatusCode, tt.status, res.body)
			}
			if got := res.Header.Get("Content-Type"); !strings.HasPrefix(got, tt.ctype) {
				t.Errorf("Content-Type = %q, want %s", got, tt.ctype)
			}
			if !strings.Contains(res.body, tt.contains) {
				t.Errorf("body does not contain %q:\n%.800s", tt.contains, res.body)
			}
		})
	}
}

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	s := newSite(t)
	paths := []string{"/", "/lessons/sample", "/nowhere", "/api/lessons", "/static/js/lesson.js", "/healthz", "/metrics"}
	for _, p := range paths {
		res := s.get(nil, p)
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'self'", "base-uri 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", p, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP allows unsafe-inline: %q", p, csp)
		}
		if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options = %q", p, got)
		}
		if got := res.Header.Get("Referrer-Policy"); got == "" {
			t.Errorf("%s: no Referrer-Policy", p)
		}
	}
}

func TestFrameAncestorsConfigurable(t *testing.T) {
	s := newSiteAt(t, t.TempDir()+"/p.db", func(d *Deps) { d.FrameAncestors = "'self' https://course.example.org" })
	csp := s.get(nil, "/").Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "frame-ancestors 'self' https://course.example.org;") {
		t.Errorf("CSP = %q", csp)
	}
}

func TestPagesNeedNoInlineScriptOrStyle(t *testing.T) {
	s := newSite(t)
	c := s.client()
	s.post(c, samplePredict, url.Values{"action": {"lock"}, "option": {"b"}})
	s.post(c, samplePredict, url.Values{"action": {"reveal"}})
	s.post(c, sampleCheck, url.Values{"option": {"b"}})
	for _, p := range []string{"/", "/lessons/sample", "/lessons/littles-law", "/progress", "/nowhere"} {
		doc := parse(t, s.get(c, p).body)
		for _, n := range find(doc, func(n nodeT) bool { return true }) {
			for _, a := range n.Attr {
				if a.Key == "style" || strings.HasPrefix(a.Key, "on") {
					t.Errorf("%s: <%s %s=...> needs an inline policy", p, n.Data, a.Key)
				}
			}
			if n.Data == "script" {
				if _, ok := attr(n, "src"); !ok || n.FirstChild != nil {
					t.Errorf("%s: inline <script>", p)
				}
			}
			if n.Data == "style" {
				t.Errorf("%s: inline <style>", p)
			}
		}
	}
}

func TestAccessibleStructure(t *testing.T) {
	s := newSite(t)
	body := s.get(nil, "/lessons/sample").body
	doc := parse(t, body)
	if hs := find(doc, func(n nodeT) bool { return n.Data == "html" }); len(hs) != 1 || must(attr(hs[0], "lang")) != "en" {
		t.Error("<html> has no lang")
	}
	if len(find(doc, func(n nodeT) bool { return n.Data == "a" && must(attr(n, "href")) == "#main" })) != 1 {
		t.Error("no skip link to #main")
	}
	if len(find(doc, func(n nodeT) bool { return n.Data == "main" && must(attr(n, "id")) == "main" })) != 1 {
		t.Error("no <main id=main>")
	}
	if h1 := find(doc, func(n nodeT) bool { return n.Data == "h1" }); len(h1) != 1 {
		t.Errorf("%d <h1>, want 1", len(h1))
	}
	// Every radio is labelled and sits in a fieldset with a legend.
	radios := find(doc, func(n nodeT) bool { return n.Data == "input" && must(attr(n, "type")) == "radio" })
	if len(radios) == 0 {
		t.Fatal("no radios on the sample lesson")
	}
	for _, r := range radios {
		var label, fieldset bool
		for p := r.Parent; p != nil; p = p.Parent {
			label = label || p.Data == "label"
			if p.Data == "fieldset" {
				fieldset = len(find(p, func(n nodeT) bool { return n.Data == "legend" })) == 1
			}
		}
		if !label || !fieldset {
			t.Errorf("radio %v: in label %v, in fieldset with legend %v", r.Attr, label, fieldset)
		}
	}
	// Every in-page link points at an element that exists.
	ids := map[string]bool{}
	for _, n := range find(doc, func(n nodeT) bool { _, ok := attr(n, "id"); return ok }) {
		id := must(attr(n, "id"))
		if ids[id] {
			t.Errorf("duplicate id %q", id)
		}
		ids[id] = true
	}
	for _, a := range find(doc, func(n nodeT) bool { return strings.HasPrefix(must(attr(n, "href")), "#") }) {
		if id := strings.TrimPrefix(must(attr(a, "href")), "#"); !ids[id] {
			t.Errorf("link to #%s, which is not on the page", id)
		}
	}
}

func TestPredictLockCannotChange(t *testing.T) {
	s := newSite(t)
	c := s.client()
	res := s.post(c, samplePredict, url.Values{"action": {"lock"}, "option": {"b"}})
	if res.StatusCode != 303 || res.Header.Get("Location") != "/lessons/sample#sample-predict" {
		t.Fatalf("lock: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	page := s.get(c, "/lessons/sample").body
	if got := testIDText(t, page, "predict-locked"); !strings.Contains(got, "You predicted About 500, locked in at") {
		t.Errorf("after lock the page says %q", got)
	}
	if hasTestID(t, page, "predict-lock") {
		t.Error("the lock button is still offered after locking")
	}
	if got := testIDText(t, page, "predict-settled"); !strings.Contains(got, "the lab sweep below") {
		t.Errorf("settled-by says %q", got)
	}
	tests := []struct {
		name string
		form url.Values
	}{
		// Another option is refused.
		{"change option", url.Values{"action": {"lock"}, "option": {"a"}}},
		// A skip after a lock is refused.
		{"skip after lock", url.Values{"action": {"skip"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.postJSON(c, samplePredict, tt.form)
			var body errorBody
			json.Unmarshal([]byte(res.body), &body)
			if res.StatusCode != 409 || body.Error == nil || body.Error.Code != CodeConflict || !strings.Contains(body.Error.Message, `locked in as "About 500"`) {
				t.Errorf("got %d %s", res.StatusCode, res.body)
			}
		})
	}
	e, err := s.store.Export(t.Context(), learnerOf(t, s, c))
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Predictions) != 1 || e.Predictions[0].Option != "b" {
		t.Errorf("stored predictions = %+v, want only b", e.Predictions)
	}
	// Reveal shows the answer and every explanation, once a measurement
	// was seen (here the recorded results, opened).
	s.post(c, samplePredict, url.Values{"action": {"open"}})
	s.post(c, samplePredict, url.Values{"action": {"reveal"}})
	page = s.get(c, "/lessons/sample").body
	got := testIDText(t, page, "predict-answer")
	for _, want := range []string{"The answer is About 50", "Your prediction was different", "1000 / 20 = 50", "processor ceiling"} {
		if !strings.Contains(got, want) {
			t.Errorf("revealed block lacks %q: %q", want, got)
		}
	}
	if hasTestID(t, page, "predict-reveal") {
		t.Error("Reveal is still offered after revealing")
	}
}

func TestPredictSkipIsRecorded(t *testing.T) {
	s := newSite(t)
	c := s.client()
	s.post(c, samplePredict, url.Values{"action": {"skip"}})
	page := s.get(c, "/lessons/sample").body
	if got := testIDText(t, page, "predict-locked"); !strings.HasPrefix(got, "You skipped this prediction") {
		t.Errorf("after skip: %q", got)
	}
	var e store.Export
	json.Unmarshal([]byte(s.get(c, "/api/progress").body), &e)
	if len(e.Predictions) != 1 || !e.Predictions[0].Skipped || e.Predictions[0].Option != "" {
		t.Errorf("export = %+v, want one skipped prediction", e.Predictions)
	}
	res := s.postJSON(c, samplePredict, url.Values{"action": {"lock"}, "option": {"a"}})
	if res.StatusCode != 409 || !strings.Contains(res.body, "skipped") {
		t.Errorf("lock after skip: %d %s", res.StatusCode, res.body)
	}
}

func TestCheckFirstAttemptCounts(t *testing.T) {
	s := newSite(t)
	c := s.client()
	// Wrong first (b), then right (a).
	res := s.postJSON(c, sampleCheck, url.Values{"option": {"b"}})
	var first blockResponse
	if err := json.Unmarshal([]byte(res.body), &first); err != nil {
		t.Fatal(err, res.body)
	}
	if first.Check == nil || first.Check.Correct || first.Check.Attempts != 1 {
		t.Fatalf("first answer: %+v", first.Check)
	}
	if !strings.Contains(first.HTML, "Not quite.") || !strings.Contains(first.HTML, "Utilisation needs the service time") {
		t.Errorf("wrong answer HTML lacks verdict or its explanation: %s", first.HTML)
	}
	s.post(c, sampleCheck, url.Values{"option": {"a"}})
	s.post(c, samplePredict, url.Values{"action": {"skip"}}) // the check is past the Predict's gate
	page := s.get(c, "/lessons/sample").body
	got := testIDText(t, page, "check-result")
	for _, want := range []string{"Right.", "You answered Requests in flight", "In flight = arrival rate", "Attempt 2", "(not right) is the one that counts"} {
		if !strings.Contains(got, want) {
			t.Errorf("check result lacks %q: %q", want, got)
		}
	}
	// The progress page counts the first answer, which was wrong.
	prog := s.get(c, "/progress").body
	if !strings.Contains(prog, "1 of 1 check answered") || !strings.Contains(prog, "0 of 1 answered right first time") {
		t.Errorf("progress page does not count the first attempt:\n%s", prog)
	}
	var e store.Export
	json.Unmarshal([]byte(s.get(c, "/api/progress").body), &e)
	if len(e.Attempts) != 2 || !e.Attempts[0].First || e.Attempts[0].Correct || e.Attempts[1].First {
		t.Errorf("export attempts = %+v", e.Attempts)
	}
}

func TestIndexShowsProgress(t *testing.T) {
	s := newSite(t)
	c := s.client()
	l, _ := s.course.Lesson("littles-law")
	total := lessonProgress(l, (&store.Export{}).State()).Total
	home := s.get(c, "/").body
	if got := testIDText(t, home, "progress-littles-law"); got != "Not started" {
		t.Errorf("fresh progress = %q", got)
	}
	if hasTestID(t, home, "progress-sample") || hasTestID(t, home, "lesson-sample") {
		t.Error("the index lists the sample fixture lesson")
	}
	s.post(c, "/lessons/littles-law/predict/littles-double", url.Values{"action": {"skip"}})
	s.post(c, "/lessons/littles-law/check/littles-size", url.Values{"option": {"a"}})
	if got, want := testIDText(t, s.get(c, "/").body, "progress-littles-law"), fmt.Sprintf("2 of %d done", total); got != want {
		t.Errorf("progress = %q, want %q (a skipped prediction and one check)", got, want)
	}
	// The fixture's own progress is kept, only not listed.
	s.post(c, samplePredict, url.Values{"action": {"skip"}})
	if res := s.get(c, "/"); hasTestID(t, res.body, "progress-sample") {
		t.Error("the index lists the sample fixture once it has progress")
	}
}

func TestProgressSurvivesReopeningTheDatabase(t *testing.T) {
	path := t.TempDir() + "/progress.db"
	s1 := newSiteAt(t, path, nil)
	c := s1.client()
	s1.post(c, samplePredict, url.Values{"action": {"lock"}, "option": {"c"}})
	s1.post(c, sampleCheck, url.Values{"option": {"a"}})
	s1.srv.Close()
	if err := s1.store.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := newSiteAt(t, path, nil)
	// The same browser (cookie) against the new server.
	base, _ := url.Parse(s1.srv.URL)
	base2, _ := url.Parse(s2.srv.URL)
	c.Jar.SetCookies(base2, c.Jar.Cookies(base))
	page := s2.get(c, "/lessons/sample").body
	if got := testIDText(t, page, "predict-locked"); !strings.Contains(got, "As many as are sent") {
		t.Errorf("after reopen: %q", got)
	}
	if got := testIDText(t, page, "check-result"); !strings.Contains(got, "Right.") {
		t.Errorf("after reopen: %q", got)
	}
	res := s2.postJSON(c, samplePredict, url.Values{"action": {"lock"}, "option": {"a"}})
	if res.StatusCode != 409 {
		t.Errorf("changing after reopen: %d", res.StatusCode)
	}
}

func TestLearnerCookieAttributes(t *testing.T) {
	tests := []struct {
		name       string
		tls        bool
		wantSecure bool
	}{
		// Over plain HTTP the cookie cannot be Secure (it would not come back).
		{"http", false, false},
		// Over TLS it is Secure.
		{"https", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := store.Open(t.TempDir() + "/p.db")
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			c := loadCourse(t)
			h := NewServer(Deps{Course: func() (*lessons.Course, error) { return c, nil }, Store: st, Assets: newAssets(t)})
			var srv *httptest.Server
			if tt.tls {
				srv = httptest.NewTLSServer(h)
			} else {
				srv = httptest.NewServer(h)
			}
			defer srv.Close()
			client := srv.Client()
			client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			// Reading a page does not create a learner.
			res, err := client.Get(srv.URL + "/lessons/sample")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if len(res.Cookies()) != 0 {
				t.Errorf("GET set cookies: %v", res.Cookies())
			}
			res, err = client.PostForm(srv.URL+samplePredict, url.Values{"action": {"skip"}})
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			cs := res.Cookies()
			if len(cs) != 1 {
				t.Fatalf("cookies = %v", cs)
			}
			ck := cs[0]
			if ck.Name != LearnerCookie || !validLearnerID(ck.Value) || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode ||
				ck.Path != "/" || ck.MaxAge < 300*24*3600 || ck.Secure != tt.wantSecure {
				t.Errorf("cookie = %+v (raw %q)", ck, ck.Raw)
			}
		})
	}
}

func TestLearnerIDsAreRandom(t *testing.T) {
	s := newSite(t)
	seen := map[string]bool{}
	for range 20 {
		c := s.client()
		s.post(c, samplePredict, url.Values{"action": {"skip"}})
		id := learnerOf(t, s, c)
		if seen[id] {
			t.Fatalf("learner id %s issued twice", id)
		}
		seen[id] = true
	}
}

func TestForgedCookieIsIgnored(t *testing.T) {
	s := newSite(t)
	res := s.do(nil, "POST", samplePredict, url.Values{"action": {"skip"}}, map[string]string{"Cookie": LearnerCookie + "=../../etc"})
	cs := res.Cookies()
	if res.StatusCode != 303 || len(cs) != 1 || !validLearnerID(cs[0].Value) {
		t.Errorf("a malformed id must be replaced by a fresh one: %d %v", res.StatusCode, cs)
	}
}

func TestResetDeletesProgressAfterConfirmation(t *testing.T) {
	s := newSite(t)
	c := s.client()
	s.post(c, samplePredict, url.Values{"action": {"lock"}, "option": {"a"}})
	id := learnerOf(t, s, c)
	if res := s.post(c, "/progress/reset", url.Values{}); res.StatusCode != 400 {
		t.Fatalf("unconfirmed reset: %d", res.StatusCode)
	}
	if e, _ := s.store.Export(t.Context(), id); len(e.Predictions) != 1 {
		t.Fatal("unconfirmed reset deleted progress")
	}
	res := s.post(c, "/progress/reset", url.Values{"confirm": {"yes"}})
	if res.StatusCode != 303 || res.Header.Get("Location") != "/progress?reset=done" {
		t.Fatalf("reset: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	if e, _ := s.store.Export(t.Context(), id); len(e.Predictions) != 0 {
		t.Errorf("after reset: %+v", e)
	}
	if !hasTestID(t, s.get(c, "/progress?reset=done").body, "progress-was-reset") {
		t.Error("no confirmation after reset")
	}
	// The browser starts afresh and may predict again.
	if hasTestID(t, s.get(c, "/lessons/sample").body, "predict-locked") {
		t.Error("prediction still shown after reset")
	}
	// The JSON twin takes {"confirm": true}.
	s.post(c, samplePredict, url.Values{"action": {"lock"}, "option": {"a"}})
	id = learnerOf(t, s, c)
	req, _ := http.NewRequest("POST", s.srv.URL+"/api/progress/reset", strings.NewReader(`{"confirm": true}`))
	req.Header.Set("Content-Type", "application/json")
	r2, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if e, _ := s.store.Export(t.Context(), id); r2.StatusCode != 200 || len(e.Predictions) != 0 {
		t.Errorf("JSON reset: %d, left %+v", r2.StatusCode, e.Predictions)
	}
}

func TestExportDownload(t *testing.T) {
	s := newSite(t)
	c := s.client()
	s.post(c, sampleCheck, url.Values{"option": {"a"}})
	res := s.get(c, "/api/progress?download=1")
	if cd := res.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") {
		t.Errorf("Content-Disposition = %q", cd)
	}
	var e map[string]any
	if err := json.Unmarshal([]byte(res.body), &e); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"learner", "exported_at", "predictions", "check_attempts", "model_goals"} {
		if _, ok := e[k]; !ok {
			t.Errorf("export lacks %q: %s", k, res.body)
		}
	}
}

func TestAPILessons(t *testing.T) {
	s := newSite(t)
	var out struct {
		Lessons []lessonJSON `json:"lessons"`
	}
	if err := json.Unmarshal([]byte(s.get(nil, "/api/lessons").body), &out); err != nil {
		t.Fatal(err)
	}
	// The course without its fixtures (part lessons.FixturePart), in order.
	var listed []*lessons.Lesson
	for _, l := range s.course.Lessons {
		if l.Part != lessons.FixturePart {
			listed = append(listed, l)
		}
	}
	if len(out.Lessons) != len(listed) || len(listed) == len(s.course.Lessons) {
		t.Fatalf("%d lessons, want %d (of %d, fixtures left out)", len(out.Lessons), len(listed), len(s.course.Lessons))
	}
	for i, l := range out.Lessons {
		want := listed[i]
		if l.Slug != want.Slug || l.Title != want.Title || l.Part != want.Part || l.Chapter != want.Chapter ||
			l.Number != want.Number || l.Minutes != want.Minutes || l.URL != "/lessons/"+want.Slug {
			t.Errorf("lesson %d = %+v", i, l)
		}
		for kind, n := range l.Blocks {
			if n != want.Counts()[kind] {
				t.Errorf("%s: %d %s blocks, want %d", l.Slug, n, kind, want.Counts()[kind])
			}
		}
	}
}

func TestErrorPathNeverShowsInternals(t *testing.T) {
	s := newSite(t)
	c := s.client()
	s.post(c, samplePredict, url.Values{"action": {"skip"}})
	s.store.Close() // every query now fails inside database/sql
	tests := []struct {
		name   string
		header map[string]string
		ctype  string
	}{
		// A browser gets an HTML page.
		{"html", nil, "text/html"},
		// lesson.js gets JSON.
		{"json", map[string]string{"Accept": "application/json"}, "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.do(c, "GET", "/lessons/sample", nil, tt.header)
			if res.StatusCode != 500 || !strings.HasPrefix(res.Header.Get("Content-Type"), tt.ctype) {
				t.Fatalf("got %d %s", res.StatusCode, res.Header.Get("Content-Type"))
			}
			for _, leak := range []string{"sql", "database", "closed", "sqlite", ".go"} {
				if strings.Contains(strings.ToLower(res.body), leak) {
					t.Errorf("response shows internals (%q):\n%s", leak, res.body)
				}
			}
			if !strings.Contains(res.body, "Something went wrong on our side") {
				t.Errorf("no friendly message:\n%s", res.body)
			}
		})
	}
	if logs := s.logs.String(); !strings.Contains(logs, `msg="request failed"`) || !strings.Contains(logs, "is closed") {
		t.Errorf("the internal error was not logged:\n%s", s.logs.String())
	}
	if res := s.get(nil, "/healthz"); res.StatusCode != 503 {
		t.Errorf("healthz with a closed store = %d, want 503", res.StatusCode)
	}
}

func TestContentErrorsAreShownToAuthors(t *testing.T) {
	errs := lessons.Errors{{File: "broken.md", Line: 12, Msg: "check \"q1\": no option is correct"}}
	s := newSiteAt(t, t.TempDir()+"/p.db", func(d *Deps) {
		d.Course = func() (*lessons.Course, error) { return nil, errs }
	})
	res := s.get(nil, "/lessons/sample")
	if res.StatusCode != 500 || !strings.Contains(res.body, "broken.md:12: check &#34;q1&#34;: no option is correct") {
		t.Errorf("got %d:\n%s", res.StatusCode, res.body)
	}
}

func TestBodyLimit(t *testing.T) {
	s := newSite(t)
	big := url.Values{"action": {"skip"}, "pad": {strings.Repeat("x", MaxBodyBytes)}}
	res := s.postJSON(nil, samplePredict, big)
	if res.StatusCode != 413 || !strings.Contains(res.body, "too_large") {
		t.Errorf("got %d %s", res.StatusCode, res.body)
	}
}

func TestCrossOriginWritesRefused(t *testing.T) {
	s := newSite(t)
	tests := []struct {
		name   string
		header map[string]string
		status int
	}{
		// A form on another site posting here is refused.
		{"cross-site fetch metadata", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		// An old browser sending only Origin is checked against Host.
		{"foreign origin", map[string]string{"Origin": "https://evil.example"}, 403},
		// The site's own form is accepted.
		{"same origin", map[string]string{"Sec-Fetch-Site": "same-origin"}, 303},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.do(nil, "POST", samplePredict, url.Values{"action": {"skip"}}, tt.header)
			if res.StatusCode != tt.status {
				t.Errorf("status = %d, want %d: %s", res.StatusCode, tt.status, res.body)
			}
		})
	}
}

func TestStaticCaching(t *testing.T) {
	s := newSite(t)
	a := newAssets(t)
	hashed := a.URL("js/lesson.js")
	res := s.get(nil, hashed)
	if cc := res.Header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
		t.Errorf("hashed Cache-Control = %q", cc)
	}
	plain := s.get(nil, "/static/js/lesson.js")
	if cc := plain.Header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("plain Cache-Control = %q", cc)
	}
	etag := plain.Header.Get("ETag")
	if res := s.do(nil, "GET", "/static/js/lesson.js", nil, map[string]string{"If-None-Match": etag}); res.StatusCode != 304 {
		t.Errorf("revalidation = %d, want 304", res.StatusCode)
	}
	if !strings.Contains(hashed, "lesson.") || hashed == "/static/js/lesson.js" {
		t.Errorf("URL is not hashed: %s", hashed)
	}
}

func TestNotFoundSuggestsCloseLessons(t *testing.T) {
	s := newSite(t)
	tests := []struct {
		name, path, want string
	}{
		// A typo in a lesson slug.
		{"typo", "/lessons/littles-lw", "/lessons/littles-law"},
		// A slug without the /lessons/ prefix.
		{"missing prefix", "/littles-law", "/lessons/littles-law"},
		// A partial slug.
		{"partial", "/lessons/littles", "/lessons/littles-law"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.get(nil, tt.path)
			if res.StatusCode != 404 {
				t.Fatalf("status %d", res.StatusCode)
			}
			near := find(parse(t, res.body), byTestID("error-near"))
			if len(near) != 1 || !strings.Contains(renderNode(near[0]), `href="`+tt.want+`"`) {
				t.Errorf("no suggestion of %s:\n%s", tt.want, res.body)
			}
		})
	}
}

func TestMetricsCountRoutes(t *testing.T) {
	s := newSite(t)
	s.get(nil, "/lessons/sample")
	s.get(nil, "/lessons/nope")
	m := s.get(nil, "/metrics").body
	for _, want := range []string{
		`capacitylab_http_requests_total{code="200",method="GET",route="/lessons/{slug}"} 1`,
		`capacitylab_http_requests_total{code="404",method="GET",route="/lessons/{slug}"} 1`,
		`capacitylab_http_request_duration_seconds_bucket{route="/lessons/{slug}",le="0.005"}`,
		`go_goroutines`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestJSONActionReturnsBlockHTML(t *testing.T) {
	s := newSite(t)
	c := s.client()
	res := s.postJSON(c, samplePredict, url.Values{"action": {"lock"}, "option": {"a"}})
	var br blockResponse
	if err := json.Unmarshal([]byte(res.body), &br); err != nil {
		t.Fatal(err)
	}
	if br.Block != "sample-predict" || br.Kind != "predict" || br.Prediction == nil || br.Prediction.Option != "a" {
		t.Errorf("response = %+v", br)
	}
	if len(res.Cookies()) != 1 {
		t.Error("the JSON twin must issue the learner cookie too")
	}
	// The fragment is exactly what the page renders for that block.
	page := parse(t, s.get(c, "/lessons/sample").body)
	section := find(page, func(n nodeT) bool { return must(attr(n, "id")) == "sample-predict" })
	if len(section) != 1 || renderNode(section[0]) != normalise(t, br.HTML) {
		t.Errorf("fragment differs from the page's block:\nfragment: %s\npage: %s", br.HTML, renderNode(section[0]))
	}
}

// TestLessonPageUnder150KB adds up each lesson page and everything it
// loads (stylesheets, icon, scripts and the modules they import) as a
// browser that takes gzip receives them, and checks the sum against the
// budget. The uncompressed sum is logged beside it.
func TestLessonPageUnder150KB(t *testing.T) {
	s := newSite(t)
	// Static imports, and dynamic ones (import("./x.js")): widgets.js
	// loads modellimits.js on a page with a quota, AIMD, retry or
	// late-scaling widget, and modeltail.js on one with a variability,
	// fan-out or USL widget, so each counts on such a page.
	importRE := regexp.MustCompile(`(?m)^\s*import\b[^"']*["']\./([^"']+)["']|\bimport\(\s*["']\./([^"']+)["']\s*\)`)
	dynamicKinds := map[string][]string{
		"modellimits.js": {"quota", "aimd", "retry-amplification", "late-scaling"},
		"modeltail.js":   {"variability-wait", "fanout-tail", "usl"},
	}
	for _, l := range s.course.Lessons {
		page, wire := s.getWire(t, "/lessons/"+l.Slug)
		total, plain := wire, len(page)
		loads := func(module string) bool {
			kinds, ok := dynamicKinds[module]
			if !ok {
				t.Fatalf("widgets.js imports %s when a page needs it: say for which widgets", module)
			}
			for _, k := range kinds {
				if strings.Contains(page, `data-kind="`+k+`"`) {
					return true
				}
			}
			return false
		}
		// Everything the page loads: stylesheets, icons, scripts, and the
		// modules those scripts import.
		var queue []string
		for _, n := range find(parse(t, page), func(n nodeT) bool { return n.Data == "link" || n.Data == "script" }) {
			for _, k := range []string{"href", "src"} {
				if v, ok := attr(n, k); ok && strings.HasPrefix(v, "/static/") {
					queue = append(queue, v)
				}
			}
		}
		seen := map[string]bool{}
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			if seen[u] {
				continue
			}
			seen[u] = true
			body, n := s.getWire(t, u)
			total += n
			plain += len(body)
			if strings.HasSuffix(u, ".js") {
				dir := u[:strings.LastIndex(u, "/")+1]
				for _, m := range importRE.FindAllStringSubmatch(body, -1) {
					if m[1] != "" || loads(m[2]) {
						queue = append(queue, dir+m[1]+m[2])
					}
				}
			}
		}
		t.Logf("%s: %d bytes in all over the wire, %d uncompressed (%d files)", l.Slug, total, plain, len(seen)+1)
		if total > 150<<10 {
			t.Errorf("%s: %d bytes in all, over 150 KB", l.Slug, total)
		}
	}
}

// getWire fetches path as a browser that takes gzip does and returns the
// decoded body and the number of body bytes that crossed the wire.
func (s *testSite) getWire(t *testing.T, path string) (string, int) {
	t.Helper()
	req, err := http.NewRequest("GET", s.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Setting the header ourselves stops the transport decompressing.
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Errorf("%s: %d", path, res.StatusCode)
	}
	if res.Header.Get("Content-Encoding") != "gzip" {
		return string(raw), len(raw)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(body), len(raw)
}

// TestNewcomerPageCache checks that the cached page a newcomer gets never
// carries a learner's state, and that a new course value replaces it.
func TestNewcomerPageCache(t *testing.T) {
	var current atomic.Pointer[lessons.Course]
	current.Store(loadCourse(t))
	s := newSiteAt(t, t.TempDir()+"/p.db", func(d *Deps) {
		d.Course = func() (*lessons.Course, error) { return current.Load(), nil }
	})
	learner := s.client()
	// The learner answers before any newcomer has visited, then views the page.
	s.post(learner, samplePredict, url.Values{"action": {"lock"}, "option": {"b"}})
	if !hasTestID(t, s.get(learner, "/lessons/sample").body, "predict-locked") {
		t.Fatal("learner does not see their lock")
	}
	first := s.get(nil, "/lessons/sample").body
	second := s.get(nil, "/lessons/sample").body
	if first != second {
		t.Error("two newcomer views differ")
	}
	if hasTestID(t, first, "predict-locked") || !hasTestID(t, first, "predict-lock") {
		t.Error("a newcomer sees a learner's prediction")
	}
	if !hasTestID(t, s.get(learner, "/lessons/sample").body, "predict-locked") {
		t.Error("after a newcomer view, the learner lost their state")
	}
	// The cached page goes out gzipped to clients that take gzip.
	req, _ := http.NewRequest("GET", s.srv.URL+"/lessons/sample", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("cached page not gzipped: %v", res.Header)
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(zr); string(b) != first {
		t.Error("gzipped page differs from the plain one")
	}
	// Author mode: a reloaded course is a new value, and its pages are new.
	c2 := loadCourse(t)
	for _, l := range c2.Lessons {
		if l.Slug == "sample" {
			l.Title = "Reloaded title"
		}
	}
	current.Store(c2)
	if !strings.Contains(s.get(nil, "/lessons/sample").body, "Reloaded title") {
		t.Error("a new course value still serves the old page")
	}
}

// TestStaticEncodings fetches an asset as clients that accept different
// encodings: each gets the encoding it prefers among gzip and brotli (br
// on a tie, as the smaller), a body that decodes to the plain one, an
// ETag of its own that a 304 answers, and Vary: Accept-Encoding.
func TestStaticEncodings(t *testing.T) {
	s := newSite(t)
	u := newAssets(t).URL("css/app.css")
	plain := s.do(nil, "GET", u, nil, map[string]string{"Accept-Encoding": "identity"})
	tests := []struct {
		name   string
		accept string
		want   string // Content-Encoding
	}{
		// A browser that takes both gets brotli, the smaller.
		{"browser", "gzip, deflate, br, zstd", "br"},
		// gzip alone (curl --compressed, Go's client).
		{"gzip", "gzip", "gzip"},
		// A higher q-value for gzip wins over brotli.
		{"gzip preferred", "br;q=0.5, gzip", "gzip"},
		// gzip refused with q=0 is honoured.
		{"refused", "gzip;q=0, identity", ""},
		// Any encoding: the smallest.
		{"star", "*", "br"},
		// Any but brotli.
		{"star without br", "*, br;q=0", "gzip"},
		// No Accept-Encoding: the plain body.
		{"none", "", ""},
	}
	etags := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, raw := rawGet(t, s.srv.URL+u, map[string]string{"Accept-Encoding": tt.accept})
			if got := res.Header.Get("Content-Encoding"); got != tt.want {
				t.Fatalf("Content-Encoding = %q, want %q", got, tt.want)
			}
			if tt.want != "" && len(raw) >= len(plain.body) {
				t.Errorf("%s length %d is not smaller than %d", tt.want, len(raw), len(plain.body))
			}
			if got := decodeBody(t, tt.want, raw); got != plain.body {
				t.Error("decoded body differs from the plain one")
			}
			if !strings.Contains(strings.Join(res.Header.Values("Vary"), ","), "Accept-Encoding") {
				t.Errorf("Vary = %q", res.Header.Values("Vary"))
			}
			etag := res.Header.Get("ETag")
			if prev, seen := etags[tt.want]; seen && prev != etag {
				t.Errorf("ETag %s for %q, but %s before", etag, tt.want, prev)
			}
			for coding, other := range etags {
				if coding != tt.want && other == etag {
					t.Errorf("%q and %q share the ETag %s", tt.want, coding, etag)
				}
			}
			etags[tt.want] = etag
			again, body := rawGet(t, s.srv.URL+u, map[string]string{"Accept-Encoding": tt.accept, "If-None-Match": etag})
			if again.StatusCode != http.StatusNotModified || len(body) != 0 {
				t.Errorf("revalidating with its ETag: %d with %d bytes, want 304 and none", again.StatusCode, len(body))
			}
		})
	}
}

// rawGet fetches url with the given headers, the body as sent (not
// decompressed).
func rawGet(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	// Setting Accept-Encoding ourselves stops the transport decompressing.
	res, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, raw
}

// decodeBody decodes a body sent with Content-Encoding coding.
func decodeBody(t *testing.T, coding string, raw []byte) string {
	t.Helper()
	var r io.Reader = bytes.NewReader(raw)
	switch coding {
	case "gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case "br":
		r = brotli.NewReader(r)
	case "":
	default:
		t.Fatalf("unknown Content-Encoding %q", coding)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decoding %s: %v", coding, err)
	}
	return string(b)
}

func TestCloseSlugs(t *testing.T) {
	c := loadCourse(t)
	tests := []struct {
		name, want string
		first      string // "" = no suggestion
	}{
		// One letter wrong.
		{"typo", "littles-lav", "littles-law"},
		// A prefix of the slug.
		{"prefix", "littles", "littles-law"},
		// A single letter matches nothing useful.
		{"too short", "a", ""},
		// Unrelated words suggest nothing.
		{"unrelated", "kubernetes-networking", ""},
		// The exact slug is its own best match.
		{"exact", "sample", "sample"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := closeSlugs(c, tt.want)
			switch {
			case tt.first == "" && len(got) > 0:
				t.Errorf("suggested %v", got)
			case tt.first != "" && (len(got) == 0 || got[0].Slug != tt.first):
				t.Errorf("got %v, want %s first", got, tt.first)
			}
		})
	}
}

// TestLessonPageETags checks the lesson page's bytes on the wire: a
// newcomer's page as stored (brotli, gzip or plain, each decoding to the
// same page), a learner's gzipped per request, each with an ETag over its
// bytes that a revalidation answers with 304; a learner with answers
// never gets the newcomer's page for the newcomer's ETag, nor a newcomer
// the learner's; a new course value gets new ETags.
func TestLessonPageETags(t *testing.T) {
	var current atomic.Pointer[lessons.Course]
	current.Store(loadCourse(t))
	s := newSiteAt(t, t.TempDir()+"/e.db", func(d *Deps) {
		d.Course = func() (*lessons.Course, error) { return current.Load(), nil }
	})
	page := s.srv.URL + "/lessons/sample"
	plainRes, plainRaw := rawGet(t, page, nil)
	newcomer := string(plainRaw)
	if plainRes.StatusCode != 200 || plainRes.Header.Get("Content-Encoding") != "" || !hasTestID(t, newcomer, "predict-lock") {
		t.Fatalf("a newcomer's plain page: %d %q", plainRes.StatusCode, plainRes.Header.Get("Content-Encoding"))
	}
	newcomerTags := map[string]bool{}
	for _, coding := range []string{"", "gzip", "br"} {
		res, raw := rawGet(t, page, map[string]string{"Accept-Encoding": cmpOr(coding, "identity")})
		if got := res.Header.Get("Content-Encoding"); got != coding {
			t.Fatalf("asking for %q: Content-Encoding %q", coding, got)
		}
		if decodeBody(t, coding, raw) != newcomer {
			t.Errorf("the newcomer's page in %q differs from the plain one", coding)
		}
		vary := strings.Join(res.Header.Values("Vary"), ",")
		if !strings.Contains(vary, "Accept-Encoding") || !strings.Contains(vary, "Cookie") {
			t.Errorf("Vary = %q, want Accept-Encoding and Cookie", vary)
		}
		etag := res.Header.Get("ETag")
		if etag == "" || newcomerTags[etag] {
			t.Errorf("%q: ETag %q, want one of its own", coding, etag)
		}
		newcomerTags[etag] = true
		again, body := rawGet(t, page, map[string]string{"Accept-Encoding": cmpOr(coding, "identity"), "If-None-Match": etag})
		if again.StatusCode != 304 || len(body) != 0 || again.Header.Get("ETag") != etag {
			t.Errorf("%q revalidated: %d with %d bytes, want 304 and none", coding, again.StatusCode, len(body))
		}
	}

	// A learner who locked in a prediction.
	learner := s.client()
	s.post(learner, samplePredict, url.Values{"action": {"lock"}, "option": {"b"}})
	cookie := ""
	for _, c := range learner.Jar.Cookies(plainRes.Request.URL) {
		cookie += c.Name + "=" + c.Value + "; "
	}
	if !strings.Contains(cookie, LearnerCookie) {
		t.Fatalf("the learner has no cookie: %q", cookie)
	}
	res, raw := rawGet(t, page, map[string]string{"Accept-Encoding": "gzip, br", "Cookie": cookie})
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("a learner's page: Content-Encoding %q, want gzip (rendered per request)", res.Header.Get("Content-Encoding"))
	}
	own := decodeBody(t, "gzip", raw)
	if !hasTestID(t, own, "predict-locked") {
		t.Fatal("the learner's gzipped page does not show their lock")
	}
	learnerTag := res.Header.Get("ETag")
	if learnerTag == "" || newcomerTags[learnerTag] {
		t.Errorf("the learner's ETag %q is empty or a newcomer's", learnerTag)
	}
	again, body := rawGet(t, page, map[string]string{"Accept-Encoding": "gzip, br", "Cookie": cookie, "If-None-Match": learnerTag})
	if again.StatusCode != 304 || len(body) != 0 {
		t.Errorf("the learner revalidating their page: %d with %d bytes, want 304", again.StatusCode, len(body))
	}
	// The learner sends every ETag a newcomer got (a shared browser):
	// they get their own page, whole.
	for tag := range newcomerTags {
		res, raw := rawGet(t, page, map[string]string{"Accept-Encoding": "gzip", "Cookie": cookie, "If-None-Match": tag})
		if res.StatusCode != 200 || !hasTestID(t, decodeBody(t, res.Header.Get("Content-Encoding"), raw), "predict-locked") {
			t.Errorf("a learner sending the newcomer's ETag %s: %d, want 200 with their own page", tag, res.StatusCode)
		}
	}
	// And a newcomer sending the learner's ETag gets the newcomer's page.
	res, raw = rawGet(t, page, map[string]string{"Accept-Encoding": "gzip", "If-None-Match": learnerTag})
	if res.StatusCode != 200 || decodeBody(t, "gzip", raw) != newcomer {
		t.Errorf("a newcomer sending the learner's ETag: %d, want 200 with the newcomer's page", res.StatusCode)
	}
	// The learner opens the recorded results: their page changes, and the
	// old ETag no longer answers 304.
	s.post(learner, samplePredict, url.Values{"action": {"open"}})
	if res, _ := rawGet(t, page, map[string]string{"Accept-Encoding": "gzip", "Cookie": cookie, "If-None-Match": learnerTag}); res.StatusCode != 200 || res.Header.Get("ETag") == learnerTag {
		t.Errorf("after opening the results, the old ETag: %d with ETag %s, want 200 and a new one", res.StatusCode, res.Header.Get("ETag"))
	}

	// Author mode: a reloaded course is a new value; its newcomer page is new.
	c2 := loadCourse(t)
	for _, l := range c2.Lessons {
		if l.Slug == "sample" {
			l.Title = "Reloaded title"
		}
	}
	current.Store(c2)
	for tag := range newcomerTags {
		res, raw := rawGet(t, page, map[string]string{"Accept-Encoding": "gzip, br", "If-None-Match": tag})
		if res.StatusCode != 200 || !strings.Contains(decodeBody(t, res.Header.Get("Content-Encoding"), raw), "Reloaded title") {
			t.Errorf("after a reload, the old ETag %s: %d, want 200 with the new page", tag, res.StatusCode)
		}
	}
}
