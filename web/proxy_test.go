package web

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"capacitylab/classroom"
)

// newProxySite is a site with class sessions whose trusted proxies are
// trusted (nil: none, the default).
func newProxySite(t *testing.T, trusted []netip.Prefix) *testSite {
	t.Helper()
	var m *classroom.Manager
	site := newSiteAt(t, filepath.Join(t.TempDir(), "proxy.db"), func(d *Deps) {
		var err error
		m, err = classroom.New(classroom.Config{Store: d.Store, Lessons: ClassLessons(d.Course)})
		if err != nil {
			t.Fatal(err)
		}
		d.Classes = m
		d.TrustedProxies = trusted
	})
	t.Cleanup(func() { m.Close() })
	return site
}

// Behind a TLS proxy the site must see the real client and the https the
// browser used, but only when the proxy is one it was told to trust:
// forwarding headers from anyone else are ignored, as before.
func TestTrustedProxy(t *testing.T) {
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	tests := []struct {
		name    string
		trusted []netip.Prefix
		header  map[string]string // forwarding headers every request carries
		https   bool              // whether the site should see https
		perXFF  bool              // whether misses count per forwarded client
	}{
		// No trusted proxy (the default): X-Forwarded-* are ignored.
		{"untrusted headers ignored", nil, map[string]string{"X-Forwarded-Proto": "https"}, false, false},
		// A trusted proxy's X-Forwarded-For and X-Forwarded-Proto are believed.
		{"trusted x-forwarded", loopback, map[string]string{"X-Forwarded-Proto": "https"}, true, true},
		// RFC 7239 Forwarded from a trusted proxy too.
		{"trusted forwarded", loopback, map[string]string{"Forwarded": "for=CLIENT;proto=https"}, true, true},
		// Trusting another network does not make this peer a proxy.
		{"other network trusted", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, map[string]string{"Forwarded": "for=CLIENT;proto=https"}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			site := newProxySite(t, tt.trusted)
			do := func(method, path, body, client string, h map[string]string) *http.Response {
				t.Helper()
				req, err := http.NewRequest(method, site.srv.URL+path, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range tt.header {
					req.Header.Set(k, strings.ReplaceAll(v, "CLIENT", client))
				}
				if _, ok := tt.header["Forwarded"]; !ok {
					req.Header.Set("X-Forwarded-For", client+", 127.0.0.1")
				}
				for k, v := range h {
					req.Header.Set(k, v)
				}
				res, err := site.client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { res.Body.Close() })
				return res
			}
			// A new learner's cookie is Secure only over https.
			res := do("POST", "/lessons/sample/predict/sample-predict", url.Values{"action": {"lock"}, "option": {"c"}}.Encode(), "203.0.113.9",
				map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
			var cookie *http.Cookie
			for _, c := range res.Cookies() {
				if c.Name == LearnerCookie {
					cookie = c
				}
			}
			if cookie == nil || cookie.Secure != tt.https {
				t.Errorf("learner cookie %+v, want Secure %v", cookie, tt.https)
			}
			// HSTS only over https.
			if hsts := res.Header.Get("Strict-Transport-Security"); (hsts != "") != tt.https {
				t.Errorf("Strict-Transport-Security %q, want it sent: %v", hsts, tt.https)
			}
			// A class session's join link (and so its QR code) has the
			// scheme the browser used.
			res = do("POST", "/api/sessions", `{"lesson":"sample"}`, "203.0.113.9", map[string]string{"Content-Type": "application/json"})
			var created sessionCreated
			json.NewDecoder(res.Body).Decode(&created)
			want := "http://"
			if tt.https {
				want = "https://"
			}
			if !strings.HasPrefix(created.JoinURL, want) || !strings.HasPrefix(created.ProjectorURL, want) {
				t.Errorf("join link %q, projector %q: want them to start %s", created.JoinURL, created.ProjectorURL, want)
			}
			// Wrong join codes are counted against the client: behind a
			// trusted proxy each forwarded client has its own allowance.
			for range classroom.MissLimit {
				do("GET", "/join/ABCDEF", "", "198.51.100.1", nil)
			}
			if res := do("GET", "/join/ABCDEF", "", "198.51.100.1", nil); res.StatusCode != http.StatusTooManyRequests {
				t.Errorf("after %d misses the same client got %d, want 429", classroom.MissLimit, res.StatusCode)
			}
			other := do("GET", "/join/ABCDEF", "", "198.51.100.2", nil).StatusCode
			if held := other == http.StatusTooManyRequests; held == tt.perXFF {
				t.Errorf("another forwarded client got %d: want it held only when forwarding headers are not believed", other)
			}
		})
	}
}
