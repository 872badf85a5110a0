package web

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"capacitylab/admit"
	"capacitylab/lti"
)

// TestRequestClass checks the front door's table of who is refused first.
func TestRequestClass(t *testing.T) {
	learner := &http.Cookie{Name: LearnerCookie, Value: strings.Repeat("ab", 16)}
	for _, c := range []struct {
		method, path string
		cookie       *http.Cookie
		upgrade      bool
		want         admit.Class
	}{
		{"GET", "/healthz", nil, false, admit.Critical},
		{"GET", "/metrics", nil, false, admit.Critical},
		{"GET", "/ws/sessions/ABCDEF", nil, true, admit.Critical},
		{"GET", "/ws/runs/r1", nil, true, admit.Critical},
		{"GET", "/ws/runs/r1", nil, false, admit.Sheddable},    // not an upgrade: a plain read
		{"GET", "/lessons/sample", nil, true, admit.Sheddable}, // an upgrade header elsewhere buys nothing
		{"POST", "/lti/launch", nil, false, admit.Critical},
		{"GET", "/lti/login", nil, false, admit.Critical},
		{"POST", "/lti/deep-link", nil, false, admit.Critical},
		{"GET", "/lti/jwks.json", nil, false, admit.Critical},
		{"GET", "/lti/grades", nil, false, admit.Sheddable},
		{"POST", "/lessons/sample/predict/p", nil, false, admit.Normal},
		{"POST", "/join", nil, false, admit.Normal},
		{"GET", "/static/css/app.css", nil, false, admit.Critical},
		{"GET", "/favicon.ico", nil, false, admit.Critical},
		{"GET", "/lessons/sample", learner, false, admit.Normal},
		{"GET", "/lessons/sample", &http.Cookie{Name: LearnerCookie, Value: "forged"}, false, admit.Sheddable},
		{"GET", "/", &http.Cookie{Name: lti.SessionCookie, Value: "x"}, false, admit.Normal},
		{"GET", "/sessions/ABCDEF", &http.Cookie{Name: participantCookiePrefix + "ABCDEF", Value: "x"}, false, admit.Normal},
		{"GET", "/teach", &http.Cookie{Name: teachPassCookie, Value: "x"}, false, admit.Normal},
		{"GET", "/lessons/sample", nil, false, admit.Sheddable},
		{"HEAD", "/", nil, false, admit.Sheddable},
		{"GET", "/api/lessons", nil, false, admit.Sheddable},
	} {
		r := httptest.NewRequest(c.method, c.path, nil)
		if c.cookie != nil {
			r.AddCookie(c.cookie)
		}
		if c.upgrade {
			r.Header.Set("Connection", "Upgrade")
			r.Header.Set("Upgrade", "websocket")
		}
		if got := requestClass(r); got != c.want {
			t.Errorf("%s %s (cookie %v, upgrade %v): %s, want %s", c.method, c.path, c.cookie, c.upgrade, got, c.want)
		}
	}
}

// newGatedSite is a test site behind a gate applying spec, its metrics on
// a registry of its own.
func newGatedSite(t *testing.T, spec string) (*testSite, *prometheus.Registry) {
	t.Helper()
	g, err := admit.NewGate(admit.Spec(spec), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	site := newSiteAt(t, t.TempDir()+"/door.db", func(d *Deps) {
		d.Gate, d.Registry = g, reg
	})
	return site, reg
}

// holdInside opens a connection that sends a POST's headers and not its
// body, so the request is let in and its handler waits for the body: a
// normal request inside until close is called.
func holdInside(t *testing.T, site *testSite) (close func()) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(site.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	// Closed before the server is (cleanups run last first), which waits
	// for its handlers, even when the test stops early.
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /api/progress/reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
	return func() { c.Close() }
}

// metricValue is the value of the sample name{labels} in reg, 0 if none.
func metricValue(t *testing.T, reg prometheus.Gatherer, name, labels string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		if mf.GetName() == name {
			expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain)).Encode(mf)
		}
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+labels+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}

// waitInside waits until n requests are inside the gate.
func waitInside(t *testing.T, reg prometheus.Gatherer, n float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for metricValue(t, reg, "admit_inflight", "") != n {
		if time.Now().After(deadline) {
			t.Fatalf("admit_inflight is %v after 5 s, want %v", metricValue(t, reg, "admit_inflight", ""), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// With a quota of 4 and three requests inside, an anonymous visitor's
// page load is refused (503, Retry-After, the site's error page; JSON for
// the API), while a learner's page, the site's assets and the health
// check are served; once the three leave, the anonymous page is served
// again. Every refusal is counted by class.
func TestFrontDoorRefusesAnonymousFirst(t *testing.T) {
	site, reg := newGatedSite(t, "inflight,quota=4")
	var release []func()
	for range 3 {
		release = append(release, holdInside(t, site))
	}
	waitInside(t, reg, 3)

	res := site.get(nil, "/lessons/sample")
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != admit.RetryAfter {
		t.Fatalf("anonymous page with 3 of 4 inside: %d Retry-After %q, want 503 with Retry-After %s", res.StatusCode, res.Header.Get("Retry-After"), admit.RetryAfter)
	}
	doc := parse(t, res.body)
	if errs := find(doc, byTestID("error")); len(errs) != 1 || must(attr(errs[0], "data-code")) != CodeUnavailable {
		t.Fatalf("the refusal is not the site's error page with code %s:\n%.600s", CodeUnavailable, res.body)
	}
	if got := testIDText(t, res.body, "error-retry"); got != "Try again in about 1 s." {
		t.Errorf("the page says %q, want when to try again", got)
	}
	if res.Header.Get("Content-Security-Policy") == "" || !strings.Contains(res.body, "/static/css/app.") || !strings.Contains(res.body, `class="site-header"`) {
		t.Errorf("the refusal page lacks the site's stylesheet, header or Content-Security-Policy:\n%.600s", res.body)
	}
	api := site.get(nil, "/api/lessons")
	var body struct {
		Error      errorJSON `json:"error"`
		RetryAfter int       `json:"retry_after"`
	}
	if err := json.Unmarshal([]byte(api.body), &body); err != nil || api.StatusCode != http.StatusServiceUnavailable || body.Error.Code != CodeUnavailable || body.RetryAfter != 1 {
		t.Errorf("anonymous API read: %d %s, want 503 with the JSON error %s and retry_after 1", api.StatusCode, api.body, CodeUnavailable)
	}

	learner := site.client()
	u, _ := url.Parse(site.srv.URL)
	learner.Jar.SetCookies(u, []*http.Cookie{{Name: LearnerCookie, Value: strings.Repeat("0f", 16)}})
	for _, path := range []string{"/lessons/sample", "/healthz", "/metrics"} {
		if res := site.get(learner, path); res.StatusCode != http.StatusOK {
			t.Errorf("a learner's %s with 3 of 4 inside: %d, want 200", path, res.StatusCode)
		}
	}
	// The refusal page's own stylesheet is served, even at the bound.
	styled := holdInside(t, site)
	waitInside(t, reg, 4)
	if res := site.get(nil, "/static/css/app.css"); res.StatusCode != http.StatusOK {
		t.Errorf("the stylesheet with 4 of 4 inside: %d, want 200: assets are never refused", res.StatusCode)
	}
	styled()
	waitInside(t, reg, 3)
	if res := site.get(nil, "/healthz"); res.StatusCode != http.StatusOK {
		t.Errorf("anonymous /healthz: %d, want 200: the health check is never refused", res.StatusCode)
	}

	for _, r := range release {
		r()
	}
	waitInside(t, reg, 0)
	if res := site.get(nil, "/lessons/sample"); res.StatusCode != http.StatusOK {
		t.Errorf("anonymous page once the three left: %d, want 200", res.StatusCode)
	}
	for labels, want := range map[string]float64{
		`{class="sheddable",decision="refused"}`:  2,
		`{class="normal",decision="refused"}`:     0,
		`{class="sheddable",decision="admitted"}`: 1,
		`{class="critical",decision="exempt"}`:    4, // two health checks, the metrics, the stylesheet
		`{class="normal",decision="admitted"}`:    5, // the four held, the learner's page
	} {
		if got := metricValue(t, reg, "admit_requests_total", labels); got != want {
			t.Errorf("admit_requests_total%s = %v, want %v", labels, got, want)
		}
	}
	if got := metricValue(t, reg, "admit_refused_total", ""); got != 2 {
		t.Errorf("admit_refused_total = %v, want 2", got)
	}
}
