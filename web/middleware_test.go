package web

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestObserveKeepsHijackAndFlush checks that the metrics middleware does
// not hide the connection from handlers that stream or upgrade it, and
// counts an upgraded request as 101.
func TestObserveKeepsHijackAndFlush(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := &server{log: slog.New(slog.DiscardHandler), metrics: newHTTPMetrics(reg), requestLog: &logSampler{mode: RequestLogSampled}}
	h := s.observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/flush":
			io.WriteString(w, "part")
			w.(http.Flusher).Flush()
		case "/hijack":
			conn, rw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n")
			rw.Flush()
			conn.Close()
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/flush")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "part" {
		t.Errorf("flush body = %q", b)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /hijack HTTP/1.1\r\nHost: x\r\n\r\n")
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 101") {
		t.Fatalf("hijacked reply %q, %v", line, err)
	}
	// The middleware records after the handler returns, which for a
	// hijacked connection can be a moment after the client read the reply.
	var counts map[string]float64
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		counts = codeCounts(t, reg)
		if counts["101"] == 1 && counts["200"] == 1 {
			return
		}
	}
	t.Errorf("requests by code = %v, want one 101 and one 200", counts)
}

func codeCounts(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	counts := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "capacitylab_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "code" {
					counts[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return counts
}

// Metric labels come from fixed sets: a request with a made-up method or
// to a made-up path adds no series of its own (its method counts as
// "other", its route as "unmatched" or the pattern it matched), so no
// client can grow /metrics without bound.
func TestMetricLabelsAreBounded(t *testing.T) {
	site := newSite(t)
	c := &http.Client{}
	for i := range 300 {
		method := fmt.Sprintf("M%03dX", i)
		for _, path := range []string{fmt.Sprintf("/nowhere/%d", i), fmt.Sprintf("/lessons/no-such-%d", i), "/"} {
			req, err := http.NewRequest(method, site.srv.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
	body := site.get(nil, "/metrics").body
	known := map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true,
		"OPTIONS": true, "CONNECT": true, "TRACE": true, "other": true}
	series := 0
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "capacitylab_http_request") {
			continue
		}
		series++
		if m := regexp.MustCompile(`method="([^"]*)"`).FindStringSubmatch(line); m != nil && !known[m[1]] {
			t.Errorf("a series with method %q: %s", m[1], line)
		}
		if m := regexp.MustCompile(`route="([^"]*)"`).FindStringSubmatch(line); m != nil && strings.ContainsAny(m[1], "0123456789") {
			t.Errorf("a series with a raw path as its route: %s", line)
		}
	}
	// Three routes (unmatched, /lessons/{slug}, /) by a few methods and
	// statuses, and their latency buckets: well under a thousand lines.
	// Per-method series would be 900 counters alone.
	if series > 300 {
		t.Errorf("%d lines of capacitylab_http_request* series after 300 made-up methods, want the count bounded (no series per method)", series)
	}
}

// TestRequestLog checks which requests get a log line under each
// --request-log: every line's unlogged count plus the line itself adds up
// to every request made, a server error is always logged, and sampled
// keeps to its budget a second.
func TestRequestLog(t *testing.T) {
	requestLines := func(logs string) (lines, covered int) {
		for _, line := range strings.Split(logs, "\n") {
			if !strings.Contains(line, "msg=request ") {
				continue
			}
			lines++
			covered++
			if m := regexp.MustCompile(` unlogged=(\d+)`).FindStringSubmatch(line); m != nil {
				n, _ := strconv.Atoi(m[1])
				covered += n
			}
		}
		return lines, covered
	}
	const ordinary = 200
	for _, mode := range []RequestLog{RequestLogSampled, RequestLogAll, RequestLogErrors} {
		t.Run(string(mode), func(t *testing.T) {
			site := newSiteAt(t, t.TempDir()+"/log.db", func(d *Deps) { d.RequestLog = mode })
			start := time.Now()
			for range ordinary {
				if res := site.get(nil, "/healthz"); res.StatusCode != 200 {
					t.Fatalf("healthz: %d", res.StatusCode)
				}
			}
			seconds := int(time.Since(start)/time.Second) + 1
			// A server error (the store is gone) is logged whatever the mode.
			site.store.Close()
			if res := site.get(nil, "/healthz"); res.StatusCode != 503 {
				t.Fatalf("healthz with the store closed: %d, want 503", res.StatusCode)
			}
			logs := site.logs.String()
			if !regexp.MustCompile(`msg=request .*status=503`).MatchString(logs) {
				t.Errorf("the 503 has no request line:\n%s", logs)
			}
			lines, covered := requestLines(logs)
			if covered != ordinary+1 {
				t.Errorf("the lines and their unlogged counts cover %d requests, want %d:\n%s", covered, ordinary+1, logs)
			}
			switch mode {
			case RequestLogAll:
				if lines != ordinary+1 {
					t.Errorf("all: %d request lines, want %d", lines, ordinary+1)
				}
			case RequestLogErrors:
				if lines != 1 {
					t.Errorf("errors: %d request lines, want only the 503's", lines)
				}
			case RequestLogSampled:
				// The ordinary requests took `seconds` wall-clock seconds at most
				// (started within them): at most the budget of each, and the 503.
				if most := SampledPerSecond*(seconds+1) + 1; lines > most || lines < 2 {
					t.Errorf("sampled: %d request lines for %d requests in under %d s, want 2 to %d", lines, ordinary+1, seconds, most)
				}
			}
		})
	}
}

func TestParseRequestLog(t *testing.T) {
	for _, v := range []string{"sampled", "all", "errors"} {
		if got, err := ParseRequestLog(v); err != nil || string(got) != v {
			t.Errorf("ParseRequestLog(%q) = %q, %v", v, got, err)
		}
	}
	_, err := ParseRequestLog("some")
	if err == nil || !strings.Contains(err.Error(), `"some" is not a request log`) || !strings.Contains(err.Error(), "sampled") {
		t.Errorf("a bad value's error = %v, want it to name the value and what is allowed", err)
	}
}
