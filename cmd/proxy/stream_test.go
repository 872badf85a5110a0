package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// streamingUpstream is an HTTP service on a loopback port until the test
// ends: /chunks answers 200 at once, then 8 chunks 100 ms apart; /events
// is an event stream of 5 events 100 ms apart; /slow answers after
// 400 ms; /quick at once; /ws is a websocket that echoes each message.
func streamingUpstream(t *testing.T) string {
	t.Helper()
	var up websocket.Upgrader
	mux := http.NewServeMux()
	mux.HandleFunc("GET /chunks", func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		for i := range 8 {
			fmt.Fprintf(w, "chunk %d\n", i)
			if rc.Flush() != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := range 5 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			if rc.Flush() != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(400 * time.Millisecond):
			fmt.Fprintln(w, "late")
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("GET /quick", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "quick")
	})
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			kind, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if c.WriteMessage(kind, msg) != nil {
				return
			}
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// dialEcho opens a websocket to the upstream's /ws through the proxy.
func dialEcho(t *testing.T, proxyURL string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	c, resp, err := d.Dial("ws"+strings.TrimPrefix(proxyURL, "http")+"/ws", nil)
	if err != nil {
		t.Fatalf("websocket through the proxy: %v", err)
	}
	resp.Body.Close()
	return c
}

// echo sends a message on c and reads it back.
func echo(c *websocket.Conn, msg string) error {
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		return err
	}
	_, got, err := c.ReadMessage()
	if err != nil {
		return err
	}
	if string(got) != msg {
		return fmt.Errorf("echoed %q, want %q", got, msg)
	}
	return nil
}

// waitMetric polls a sample until it reads want (5 s at most): what the
// proxy counts when a handler returns lands just after the caller has its
// answer.
func waitMetric(t *testing.T, control, sample string, want float64) {
	t.Helper()
	got := metric(t, control, sample)
	for deadline := time.Now().Add(5 * time.Second); got != want && time.Now().Before(deadline); got = metric(t, control, sample) {
		time.Sleep(10 * time.Millisecond)
	}
	if got != want {
		t.Errorf("%s = %v, want %v", sample, got, want)
	}
}

// TIMEOUT bounds the wait for the upstream's response headers, not the
// body that follows: behind TIMEOUT=250ms a chunked answer that takes
// 800 ms arrives whole (8 chunks and the terminating one) and is served,
// a websocket outlives TIMEOUT, and an answer whose headers come after
// 400 ms is still cut with 504 and counted a timeout.
func TestTimeoutBoundsHeadersNotBody(t *testing.T) {
	up := streamingUpstream(t)
	p := startProxy(t, map[string]string{"UPSTREAM": up, "TIMEOUT": "250ms"})

	a, err := get(t, p.addr+"/chunks", 5*time.Second)
	if err != nil || a.status != 200 || strings.Count(a.body, "chunk ") != 8 {
		t.Errorf("an 800 ms chunked answer behind TIMEOUT=250ms: status %d, %d of 8 chunks, %v; want 200, all 8 and the end", a.status, strings.Count(a.body, "chunk "), err)
	}
	waitMetric(t, p.control, `proxy_upstream_total{outcome="served"}`, 1)

	if a, err := get(t, p.addr+"/slow", 5*time.Second); err != nil || a.status != 504 {
		t.Errorf("headers 400 ms late behind TIMEOUT=250ms: %+v, %v; want 504", a, err)
	}
	waitMetric(t, p.control, `proxy_upstream_total{outcome="timeout"}`, 1)

	c := dialEcho(t, p.addr)
	defer c.Close()
	if err := echo(c, "at once"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	if err := echo(c, "after twice TIMEOUT"); err != nil {
		t.Errorf("a websocket %v after it opened, behind TIMEOUT=250ms: %v; want it open", 600*time.Millisecond, err)
	}
}
