package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
)

// TestErrorPathStatuses checks that errors raised outside the lesson
// handlers (sweeps on a server without a runner) go through the one error
// path: the status from statusOf, JSON for API clients, the error page for
// a plain form.
func TestErrorPathStatuses(t *testing.T) {
	s := newSite(t) // no runner
	tests := []struct {
		name     string
		header   map[string]string
		wantJSON bool
	}{
		// lesson pages' script (runs.js) asks for JSON: the error object.
		{"json client", map[string]string{"Accept": "application/json"}, true},
		// a browser form without script: the HTML error page.
		{"plain form", map[string]string{"Accept": "text/html,application/xhtml+xml,*/*"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.do(nil, "POST", "/api/sweeps", url.Values{"rates": {"5"}}, tt.header)
			if res.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("status %d, want 503: %s", res.StatusCode, res.body)
			}
			if res.Header.Get("Retry-After") != "" {
				t.Errorf("Retry-After %q on an error without a retry time", res.Header.Get("Retry-After"))
			}
			if tt.wantJSON {
				var body errorBody
				if err := json.Unmarshal([]byte(res.body), &body); err != nil || body.Error == nil || body.Error.Code != CodeUnavailable || body.Error.Message == "" {
					t.Errorf("JSON body %s (err %v), want code %q with a message", res.body, err, CodeUnavailable)
				}
				return
			}
			doc := parse(t, res.body)
			page := find(doc, byTestID("error"))
			if len(page) != 1 || must(attr(page[0], "data-code")) != CodeUnavailable || testIDText(t, res.body, "error-message") == "" {
				t.Errorf("HTML page without the unavailable error:\n%s", res.body)
			}
		})
	}
}
