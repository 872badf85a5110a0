package labsvc_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
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
		// A knob given twice: which value counts would be a guess.
		{"knob twice", "POST", "/config", `{"spin_ms": 3, "spin_ms": 900}`, jsonCT, 400, `the field "spin_ms" is given twice`},
		// A knob named in capitals is not a knob.
		{"knob in capitals", "POST", "/config", `{"SPIN_MS": 900}`, jsonCT, 400, "SPIN_MS"},
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

// TestControlAnswersOnlyItsOwnHostNames checks the guard against DNS
// rebinding: a page at a name its owner then points at this machine is of
// the control API's own origin under that name, so its Origin passes the
// cross-site check; only the Host header tells. A request naming any host
// but an IP address, localhost (or under .localhost) or the name the lab
// was given (AllowControlHost) is refused, reads and changes alike; the
// lab's own names pass.
func TestControlAnswersOnlyItsOwnHostNames(t *testing.T) {
	req, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := labsvc.NewServer(labsvc.DefaultConfig(), nil)
	srv.AllowControlHost("lab.internal")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx, req, ctl) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	base := "http://" + ctl.Addr().String()
	_, port, _ := net.SplitHostPort(ctl.Addr().String())
	before := srv.Config()
	send := func(method, path, host, body string) (int, string) {
		t.Helper()
		r, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Host = host
		if method == "POST" {
			// What a rebound page's fetch sends: its own origin.
			r.Header.Set("Origin", "http://"+host)
			r.Header.Set("Sec-Fetch-Site", "same-origin")
			r.Header.Set("Content-Type", "application/json")
		}
		res, err := controlClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var ce labsvc.ControlError
		json.Unmarshal(b, &ce)
		return res.StatusCode, ce.Error
	}
	cases := []struct {
		what, method, path, host string
		status                   int
	}{
		// A rebound name changing the lab, and reading it.
		{"a rebound name's change", "POST", "/config", "evil.example:" + port, 403},
		{"a rebound name's reset", "POST", "/reset", "evil.example:" + port, 403},
		{"a rebound name's read", "GET", "/stats", "evil.example:" + port, 403},
		{"a rebound name's metrics", "GET", "/metrics", "evil.example:" + port, 403},
		// A name ending like localhost is not localhost.
		{"a name ending in localhost", "GET", "/config", "evillocalhost:" + port, 403},
		// The lab's own names.
		{"127.0.0.1", "GET", "/config", "127.0.0.1:" + port, 200},
		{"localhost", "POST", "/config", "localhost:" + port, 200},
		{"LOCALHOST., any case, with a dot", "GET", "/config", "LOCALHOST.:" + port, 200},
		{"a name under .localhost", "GET", "/config", "lab.localhost:" + port, 200},
		{"IPv6 loopback", "GET", "/config", "[::1]:" + port, 200},
		{"another IP address of the machine", "GET", "/stats", "10.1.2.3:" + port, 200},
		{"the name --control gave", "POST", "/reset", "lab.internal:" + port, 200},
	}
	for _, c := range cases {
		body := ""
		if c.path == "/config" && c.method == "POST" {
			body = `{"spin_ms": 3}`
		}
		code, msg := send(c.method, c.path, c.host, body)
		if code != c.status {
			t.Errorf("%s: %s %s Host %s = %d %q, want %d", c.what, c.method, c.path, c.host, code, msg, c.status)
		}
		if code == 403 && !strings.Contains(msg, "own host names") || code == 403 && !strings.Contains(msg, "lab.internal") {
			t.Errorf("%s: the refusal %q does not say which names are allowed", c.what, msg)
		}
		if code == 403 && c.method == "POST" && srv.Config() != before {
			t.Errorf("%s: config changed to %+v by a refused request", c.what, srv.Config())
		}
	}
	if got := srv.Config().SpinMS; got != 3 {
		t.Errorf("spin_ms %d after localhost's change, want 3", got)
	}
}
