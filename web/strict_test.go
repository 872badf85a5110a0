package web

import (
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestBodiesAreReadStrictly checks that every endpoint reads JSON bodies
// and forms one strict way (input.DecodeJSON, input.FormErrors through
// parseForm): a JSON name matches a field exactly, not in another case; a
// field given twice is refused, in JSON and in a form; text holds no
// control characters but tab and line breaks, and is UTF-8. Each refusal
// is a 400 that names the field and says what is allowed; nothing is done.
func TestBodiesAreReadStrictly(t *testing.T) {
	s := newClassSite(t, filepath.Join(t.TempDir(), "class.db"), "", "")
	postJSONBody := func(path, body string) response {
		t.Helper()
		req, err := http.NewRequest("POST", s.srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return response{res, string(b)}
	}
	cases := []struct {
		what, path, body string
		says             string // the answer says this
	}{
		// A name in another case than the field's, which encoding/json
		// would take.
		{"lesson in capitals", "/api/sessions", `{"LESSON": "sample"}`, `field names are exact: \"lesson\"`},
		// A field given twice: which one counts would be a guess.
		{"lesson twice", "/api/sessions", `{"lesson": "sample", "lesson": "littles-law"}`, `the field \"lesson\" is given twice`},
		// A control character in text.
		{"a bell in the lesson", "/api/sessions", `{"lesson": "sam\u0007ple"}`, "a control character (U+0007)"},
		// Bytes that are not UTF-8.
		{"not UTF-8", "/api/sessions", "{\"lesson\": \"sam\xffple\"}", "not UTF-8"},
		// The same on another endpoint, through the same decoder.
		{"confirm in capitals", "/api/progress/reset", `{"Confirm": true}`, `field names are exact: \"confirm\"`},
		{"confirm twice", "/api/progress/reset", `{"confirm": false, "confirm": true}`, `the field \"confirm\" is given twice`},
	}
	for _, c := range cases {
		res := postJSONBody(c.path, c.body)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, c.says) {
			t.Errorf("%s: %d %s; want 400 saying %q", c.what, res.StatusCode, res.body, c.says)
		}
	}

	forms := []struct {
		what, path string
		form       url.Values
		says       string
	}{
		// Two options for one prediction.
		{"option twice", "/lessons/sample/predict/sample-predict", url.Values{"action": {"lock"}, "option": {"a", "b"}}, "option: is given 2 times; give it once"},
		// A control character in a form's text.
		{"a control character in a form", "/lessons/sample/predict/sample-predict", url.Values{"action": {"lock\x01"}, "option": {"a"}}, "action: holds a control character (U+0001)"},
		// Bytes that are not UTF-8 in a form.
		{"not UTF-8 in a form", "/join", url.Values{"code": {"ABC\xff"}}, "code: is not valid UTF-8 text"},
		// A class session's form, twice.
		{"teach lesson twice", "/sessions", url.Values{"lesson": {"sample", "littles-law"}}, "lesson: is given 2 times"},
	}
	for _, c := range forms {
		res := s.postJSON(nil, c.path, c.form)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, c.says) {
			t.Errorf("%s: %d %s; want 400 saying %q", c.what, res.StatusCode, res.body, c.says)
		}
	}
	// The same form, each field once, is taken.
	if got := s.post(nil, "/lessons/sample/predict/sample-predict", url.Values{"action": {"skip"}}); got.StatusCode != http.StatusSeeOther {
		t.Errorf("a good form: %d %s", got.StatusCode, got.body)
	}
}
