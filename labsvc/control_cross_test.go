package labsvc_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
)

// The control API retunes the lab, and it listens on a fixed local port
// any web page a learner opens could post to. So a change must come from
// a program, not a page of another site: a foreign Origin or
// Sec-Fetch-Site: cross-site is refused (403), a change must say
// Content-Type: application/json (415 otherwise, which also makes a
// browser ask first), and the body must be one JSON object of whole
// numbers (400 for a string, a second value or trailing text; 413 for a
// body over the cap). Nothing refused changes anything.
func TestControlRefusesCrossSiteAndLooseBodies(t *testing.T) {
	l := labtest.Serve(t, labsvc.DefaultConfig())
	before := l.Server.Config()
	send := func(method, path, body string, h map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, l.Control+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range h {
			req.Header.Set(k, v)
		}
		res, err := controlClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var ce labsvc.ControlError
		json.Unmarshal(b, &ce)
		return res.StatusCode, ce.Error
	}
	jsonCT := map[string]string{"Content-Type": "application/json"}
	tests := []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		says                     string
	}{
		// A page of another site posting a form-like body, as a browser
		// does without asking first.
		{"foreign origin, text/plain", "POST", "/config", `{"spin_ms": 900}`,
			map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example"}, 403, "other sites"},
		// Even with the right content type.
		{"foreign origin, json", "POST", "/config", `{"spin_ms": 900}`,
			map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, 403, "other sites"},
		// A browser that says the request is cross-site.
		{"sec-fetch-site cross-site", "POST", "/config", `{"spin_ms": 900}`,
			map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403, "other sites"},
		// /reset is a change too.
		{"reset from another site", "POST", "/reset", "", map[string]string{"Origin": "https://evil.example"}, 403, "other sites"},
		// A change without a JSON content type.
		{"config as text/plain", "POST", "/config", `{"spin_ms": 900}`, map[string]string{"Content-Type": "text/plain"}, 415, "Content-Type: application/json"},
		{"reset without a content type", "POST", "/reset", "", nil, 415, "Content-Type: application/json"},
		// A number as a string.
		{"string number", "POST", "/config", `{"spin_ms": "900"}`, jsonCT, 400, "SPIN_MS: \"900\" is not allowed"},
		// A second object after the first.
		{"two objects", "POST", "/config", `{"spin_ms": 3} {"spin_ms": 900}`, jsonCT, 400, "one JSON object"},
		// Trailing text.
		{"trailing text", "POST", "/config", `{"spin_ms": 3} x`, jsonCT, 400, "one JSON object"},
		// A list is not an object.
		{"array", "POST", "/config", `[1]`, jsonCT, 400, "not a JSON object"},
		// A body over the cap says so, not "not a JSON object".
		{"2 MB", "POST", "/config", `{"spin_ms": 3, "x": "` + strings.Repeat("a", 2<<20) + `"}`, jsonCT, 413, "too large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := send(tc.method, tc.path, tc.body, tc.header)
			if code != tc.status || !strings.Contains(msg, tc.says) {
				t.Errorf("%s %s = %d %q, want %d saying %q", tc.method, tc.path, code, msg, tc.status, tc.says)
			}
			if got := l.Server.Config(); got != before {
				t.Errorf("config in force %+v after a refused request, want %+v", got, before)
			}
		})
	}
	// A program on this machine (no Origin, JSON) may change it; a page
	// of the lab's own origin too.
	if code, msg := send("POST", "/config", `{"spin_ms": 3}`, jsonCT); code != 200 {
		t.Errorf("a program's change: %d %q, want 200", code, msg)
	}
	if code, msg := send("POST", "/reset", "", map[string]string{"Content-Type": "application/json", "Origin": l.Control}); code != 200 {
		t.Errorf("a same-origin reset: %d %q, want 200", code, msg)
	}
	// Reads stay open to any client.
	if code, _ := send("GET", "/stats", "", map[string]string{"Origin": "https://evil.example"}); code != 200 {
		t.Errorf("GET /stats with a foreign Origin = %d, want 200 (a page cannot read the answer)", code)
	}
}
