package input

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type knobs struct {
	Workers int `json:"workers"`
}

type request struct {
	knobs
	Rates []float64      `json:"rates"`
	Mode  string         `json:"mode"`
	Extra map[string]int `json:"extra"`
}

// TestDecodeJSON checks each mistake DecodeJSON names, and that what it
// accepts decodes.
func TestDecodeJSON(t *testing.T) {
	tests := []struct {
		name, body string
		problem    Problem // 0: accepted
		field, got string
	}{
		// One object with known fields, white space after it.
		{"good", `{"workers": 4, "rates": [40, 80]}` + "\n  ", 0, "", ""},
		// A field the request does not have, named as sent.
		{"unknown field", `{"rates": [10], "colour": "red"}`, UnknownField, "colour", ""},
		// A field of the wrong type, named by its JSON name even inside an
		// embedded struct (not "knobs.workers").
		{"wrong type inside", `{"workers": "many"}`, WrongType, "workers", "string"},
		// A number where a list goes.
		{"number for a list", `{"rates": 5}`, WrongType, "rates", "number"},
		// Not JSON at all.
		{"not json", `workers=4`, NotJSON, "", ""},
		// Nothing.
		{"empty", ``, NotJSON, "", ""},
		// Cut short.
		{"cut short", `{"workers": 4`, NotJSON, "", ""},
		// An array where the object goes.
		{"array", `[1]`, NotJSON, "", ""},
		// Tab and line breaks in a string are text.
		{"tab and line breaks", `{"workers": 4, "rates": [40, 80], "mode": "a\tb\r\nc"}`, 0, "", ""},
		// A second value after the first.
		{"two values", `{"workers": 4} {"workers": 5}`, Trailing, "", ""},
		// Garbage after the value.
		{"garbage after", `{"workers": 4} x`, Trailing, "", ""},
		// A name that matches a field only when case is ignored, which
		// encoding/json would take; inside an embedded struct too.
		{"name in another case", `{"RATES": [40], "workers": 4}`, UnknownField, "RATES", ""},
		{"embedded name in another case", `{"Workers": 4, "rates": [40, 80]}`, UnknownField, "Workers", ""},
		// A field given twice, whose first value encoding/json would drop.
		{"field twice", `{"workers": 4, "rates": [40, 80], "workers": 900}`, DuplicateField, "workers", ""},
		// Twice inside a nested object that decodes into a map.
		{"field twice in a map", `{"workers": 4, "rates": [40, 80], "extra": {"a": 1, "a": 2}}`, DuplicateField, "a", ""},
		// A control character in a string, escaped or not.
		{"control character escaped", `{"workers": 4, "rates": [40, 80], "mode": "a\u0007b"}`, BadText, "mode", "a control character (U+0007)"},
		{"control character raw", "{\"workers\": 4, \"rates\": [40, 80], \"mode\": \"a\x1bb\"}", NotJSON, "", ""},
		{"control character in a name", `{"workers": 4, "rates": [40, 80], "extra": {"a\u0000": 1}}`, BadText, "", "a control character (U+0000)"},
		// Bytes that are not UTF-8 (encoding/json would make them U+FFFD).
		{"not UTF-8", "{\"workers\": 4, \"rates\": [40, 80], \"mode\": \"a\xffb\"}", BadText, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q request
			err := DecodeJSON(strings.NewReader(tt.body), &q)
			t.Logf("%v", err)
			if tt.problem == 0 {
				if err != nil || q.Workers != 4 || len(q.Rates) != 2 {
					t.Fatalf("got %+v, %v; want it decoded", q, err)
				}
				return
			}
			var je *JSONError
			if !errors.As(err, &je) {
				t.Fatalf("error %v (%T), want a *JSONError", err, err)
			}
			if je.Problem != tt.problem || je.Field != tt.field || je.Got != tt.got {
				t.Errorf("%+v, want problem %d, field %q, got %q", *je, tt.problem, tt.field, tt.got)
			}
			if msg := je.Error(); strings.Contains(msg, "json:") || strings.Contains(msg, "Go ") {
				t.Errorf("message %q speaks the decoder's language", msg)
			}
		})
	}
}

// TestDecodeJSONTooBig checks that a body over its limit is a failure to
// read, returned as it is, not a mistake in the JSON, wherever the limit
// falls: inside the value or in what follows it.
func TestDecodeJSONTooBig(t *testing.T) {
	for _, body := range []string{`{"mode": "` + strings.Repeat("x", 100) + `"}`, `{"mode": "x"}` + strings.Repeat(" ", 50) + "x"} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		var q request
		err := DecodeJSON(http.MaxBytesReader(httptest.NewRecorder(), r.Body, 20), &q)
		var tooBig *http.MaxBytesError
		if !errors.As(err, &tooBig) {
			t.Errorf("%.30q: error %v (%T), want *http.MaxBytesError", body, err, err)
		}
	}
}

// TestFieldErrors checks the one field-error type's message: every field,
// sorted, with what is wrong.
func TestFieldErrors(t *testing.T) {
	fe := FieldErrors{"seconds": "0.1 seconds a window is not allowed: want at least 0.5", "cpus": "want 1 to 3"}
	if got, want := fe.Error(), "cpus: want 1 to 3; seconds: 0.1 seconds a window is not allowed: want at least 0.5"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var none FieldErrors
	if none.Error() != "" || len(none.Names()) != 0 || none.Err() != nil {
		t.Error("nil FieldErrors is not empty")
	}
	// Add keeps the first problem found with a field; Err is nil until
	// there is one.
	fe = FieldErrors{}
	if fe.Err() != nil {
		t.Error("empty FieldErrors.Err() is not nil")
	}
	fe.Add("LIMIT", NotAllowed("-3", "0 to 100000"))
	fe.Add("LIMIT", NotAllowed("-3", "0 with POLICY=aimd"))
	fe.Add("POLICY", NotAllowed("", "queue, inflight, aimd, gradient or sojourn"))
	if got, want := fe.Err().Error(), "LIMIT: -3 is not allowed: want 0 to 100000; POLICY: an empty value is not allowed: want queue, inflight, aimd, gradient or sojourn"; got != want {
		t.Errorf("Err().Error() = %q, want %q", got, want)
	}
}
