package loadrun_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"capacitylab/loadrun"
	"capacitylab/result"
)

// A control API that drops a call's connection without answering (as a
// lab's does when it is killed mid-call, or as a busy machine's network
// stack may) is called again: GET /stats answers the second time. A
// refusal is an answer: POST /config refused with 400 is made once and
// its reason returned.
func TestControlCallsAgainAfterADroppedConnection(t *testing.T) {
	var stats, config atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stats":
			if stats.Add(1) == 1 {
				// The first call: the connection closes with no answer.
				conn, _, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				conn.Close()
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"accepted": 7, "done": 7}`))
		case "/config":
			config.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error": "WAIT_MS: -1 is not allowed: want 0 to 10000"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctl, err := loadrun.NewControl(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ctl.Stats(t.Context())
	if err != nil || st.Done != 7 {
		t.Errorf("GET /stats after a dropped connection: %+v, %v; want the second call's answer (done 7)", st, err)
	}
	if n := stats.Load(); n != 2 {
		t.Errorf("GET /stats was made %d times, want 2 (the dropped call, then one that answered)", n)
	}
	err = ctl.Set(t.Context(), result.KnobChange{Knob: "WAIT_MS", Value: "-1"})
	if err == nil || !strings.Contains(err.Error(), "status 400: WAIT_MS: -1 is not allowed") {
		t.Errorf("POST /config refused: %v; want the lab's refusal with its reason", err)
	}
	if n := config.Load(); n != 1 {
		t.Errorf("the refused POST /config was made %d times, want once: a refusal is an answer", n)
	}
}
