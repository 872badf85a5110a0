package main

import (
	"encoding/json"
	"fmt"
	"maps"
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

// A websocket or an event stream is a long-lived answer whose life is the
// caller's choice, not the upstream's work: it leaves the policy's count
// (and gives its worker back) when its headers arrive, and its lifetime
// is no latency sample. Behind AIMD with latency_ms=200, one worker, a
// websocket held 600 ms and an event stream of 500 ms leave the limit at
// its start of 10 (it was cut 10 → 7 → 5); while the websocket is open
// nothing is inside, and a plain request gets the one worker.
func TestLongLivedResponses(t *testing.T) {
	up := streamingUpstream(t)
	p := startProxy(t, map[string]string{"UPSTREAM": up, "WORKERS": "1", "POLICY": "aimd,start=10,latency_ms=200,backoff=0.75,interval_ms=60000"})

	c := dialEcho(t, p.addr)
	defer c.Close()
	if err := echo(c, "open"); err != nil {
		t.Fatal(err)
	}
	for _, sample := range []string{"admit_inflight", "proxy_upstream_inflight"} {
		if got := metric(t, p.control, sample); got != 0 {
			t.Errorf("%s = %v with a websocket open, want 0: it holds no place", sample, got)
		}
	}
	if a, err := get(t, p.addr+"/quick", 2*time.Second); err != nil || a.status != 200 {
		t.Errorf("a request while a websocket is open with WORKERS=1: %+v, %v; want 200 at once", a, err)
	}
	time.Sleep(600 * time.Millisecond)
	if err := echo(c, "still open"); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	waitMetric(t, p.control, `proxy_upstream_total{outcome="stream"}`, 1)

	a, err := get(t, p.addr+"/events", 5*time.Second)
	if err != nil || a.status != 200 || strings.Count(a.body, "data: ") != 5 {
		t.Errorf("an event stream of 500 ms: %+v, %v; want 200 and 5 events", a, err)
	}
	waitMetric(t, p.control, `proxy_upstream_total{outcome="stream"}`, 2)
	waitMetric(t, p.control, `proxy_upstream_total{outcome="served"}`, 1)
	waitMetric(t, p.control, "admit_inflight", 0)
	if got := metric(t, p.control, "admit_limit"); got != 10 {
		t.Errorf("admit_limit = %v after a 600 ms websocket and a 500 ms event stream behind latency_ms=200, want 10: neither is overload", got)
	}
}

// headersUpstream answers each request with the forwarding headers it
// received, and its Host, as JSON.
func headersUpstream(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{
			"Host":              r.Host,
			"Forwarded":         strings.Join(r.Header.Values("Forwarded"), ", "),
			"X-Forwarded-For":   strings.Join(r.Header.Values("X-Forwarded-For"), ", "),
			"X-Forwarded-Host":  strings.Join(r.Header.Values("X-Forwarded-Host"), ", "),
			"X-Forwarded-Proto": strings.Join(r.Header.Values("X-Forwarded-Proto"), ", "),
		})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// forwardedThrough sends a request with a TLS terminator's forwarding
// headers to the proxy at addr and returns what the upstream received.
func forwardedThrough(t *testing.T, addr string) map[string]string {
	t.Helper()
	req, err := http.NewRequest("GET", addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "lab.internal"
	req.Header.Set("Forwarded", "for=203.0.113.7;proto=https;host=lab.example.org")
	req.Header.Set("X-Forwarded-For", "203.0.113.7")
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("X-Forwarded-Host", "lab.example.org")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := map[string]string{}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	return got
}

// Behind a trusted hop (TRUSTED_PROXIES names the caller's address) the
// proxy keeps the forwarding chain and adds itself to it: the client's
// address stays first in X-Forwarded-For and Forwarded, the edge's scheme
// (https) and host are passed on. From anyone else the headers are
// replaced by what the proxy saw itself, as before: the caller's address,
// http, the Host it was sent. The upstream's Host is the upstream's own
// either way (so a virtual host or a TLS name behind UPSTREAM matches);
// the caller's travels in X-Forwarded-Host.
func TestForwardingHeaders(t *testing.T) {
	up := headersUpstream(t)
	upHost := strings.TrimPrefix(up, "http://")

	trusted := startProxy(t, map[string]string{"UPSTREAM": up, "TRUSTED_PROXIES": "127.0.0.1"})
	want := map[string]string{
		"Host":              upHost,
		"Forwarded":         "for=203.0.113.7;proto=https;host=lab.example.org, for=127.0.0.1;host=lab.internal;proto=http",
		"X-Forwarded-For":   "203.0.113.7, 127.0.0.1",
		"X-Forwarded-Host":  "lab.example.org",
		"X-Forwarded-Proto": "https",
	}
	if got := forwardedThrough(t, trusted.addr); !maps.Equal(got, want) {
		t.Errorf("behind a trusted hop the upstream received\n%v\nwant\n%v", got, want)
	}

	untrusted := startProxy(t, map[string]string{"UPSTREAM": up, "TRUSTED_PROXIES": "10.0.0.0/8"})
	want = map[string]string{
		"Host":              upHost,
		"Forwarded":         "",
		"X-Forwarded-For":   "127.0.0.1",
		"X-Forwarded-Host":  "lab.internal",
		"X-Forwarded-Proto": "http",
	}
	if got := forwardedThrough(t, untrusted.addr); !maps.Equal(got, want) {
		t.Errorf("from a caller not trusted the upstream received\n%v\nwant\n%v", got, want)
	}
}

// A Forwarded value is written as it is when it is a token, else quoted:
// an IPv6 address (in brackets) or a host with a port (RFC 7239).
func TestForwardedValue(t *testing.T) {
	for v, want := range map[string]string{"127.0.0.1": "127.0.0.1", "lab.internal": "lab.internal", "[::1]": `"[::1]"`, "lab.example.org:8443": `"lab.example.org:8443"`, "": `""`} {
		if got := forwardedValue(v); got != want {
			t.Errorf("forwardedValue(%q) = %s, want %s", v, got, want)
		}
	}
}
