package web

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// LearnerCookie is the name of the anonymous learner id cookie.
const LearnerCookie = "cl_learner"

// learnerCookieAge is how long the learner cookie lives.
const learnerCookieAge = 365 * 24 * time.Hour

// httpMetrics are the server's Prometheus series.
type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "capacitylab_http_requests_total",
			Help: "HTTP requests served, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "capacitylab_http_request_duration_seconds",
			Help:    "Time to serve an HTTP request, by route pattern.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

// statusWriter records the status and size of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush sends buffered data to the client (for streamed responses).
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection over (websocket upgrades); the request is
// then counted with status 101.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

// observe records metrics for every request and a log line for those
// RequestLog says (logSampler).
func (s *server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		d := time.Since(start)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		s.metrics.requests.WithLabelValues(route, methodLabel(r.Method), strconv.Itoa(sw.status)).Inc()
		s.metrics.latency.WithLabelValues(route).Observe(d.Seconds())
		logIt, unlogged := s.requestLog.take(start, sw.status, d)
		if !logIt {
			return
		}
		attrs := []any{"method", r.Method, "path", r.URL.Path, "route", route,
			"status", sw.status, "bytes", sw.bytes, "ms", float64(d.Microseconds()) / 1000}
		if unlogged > 0 {
			attrs = append(attrs, "unlogged", unlogged)
		}
		s.log.InfoContext(r.Context(), "request", attrs...)
	})
}

// RequestLog is which requests the server writes a log line for: every
// request that failed on the server's side (5xx) or took longer than
// SlowRequest, and of the others all (RequestLogAll), at most
// SampledPerSecond a second (RequestLogSampled, the default), or none
// (RequestLogErrors). The metrics at /metrics count every request in any
// case.
type RequestLog string

const (
	RequestLogSampled RequestLog = "sampled"
	RequestLogAll     RequestLog = "all"
	RequestLogErrors  RequestLog = "errors"
)

// SampledPerSecond is how many ordinary requests a second RequestLogSampled
// logs: a quiet server logs each one, a busy one a line for this many a
// second rather than a write per request. The next line logged after some
// were left out says how many (unlogged=N).
const SampledPerSecond = 10

// SlowRequest is how long a request may take before it is always logged.
const SlowRequest = 500 * time.Millisecond

// ParseRequestLog reads a --request-log value.
func ParseRequestLog(v string) (RequestLog, error) {
	switch l := RequestLog(v); l {
	case RequestLogSampled, RequestLogAll, RequestLogErrors:
		return l, nil
	}
	return "", fmt.Errorf("%q is not a request log: want sampled (server errors, slow requests and at most %d others a second), all or errors (server errors and slow requests only)", v, SampledPerSecond)
}

// logSampler decides which requests get a log line (RequestLog).
type logSampler struct {
	mode RequestLog

	mu       sync.Mutex
	second   int64 // the Unix second the budget is for
	left     int   // lines left in that second
	unlogged int   // ordinary requests left out since the last line
}

// take reports whether a request that started at start, answered status
// and took d gets a line, and how many ordinary requests were left out
// since the last line logged.
func (l *logSampler) take(start time.Time, status int, d time.Duration) (bool, int) {
	if l.mode == RequestLogAll {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if status >= 500 || d >= SlowRequest {
		n := l.unlogged
		l.unlogged = 0
		return true, n
	}
	if l.mode == RequestLogErrors {
		l.unlogged++
		return false, 0
	}
	if sec := start.Unix(); sec != l.second {
		l.second, l.left = sec, SampledPerSecond
	}
	if l.left == 0 {
		l.unlogged++
		return false, 0
	}
	l.left--
	n := l.unlogged
	l.unlogged = 0
	return true, n
}

// methodLabel is a request method as a metric label: one of HTTP's
// methods, else "other", so that made-up methods cannot add series.
// (Routes are chi's patterns or "unmatched", never raw paths, and codes
// are the statuses the handlers write.)
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// secure sets the security headers on every response and caps the body.
func (s *server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.securityHeaders(w, r)
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.bodyLimit(r))
		}
		next.ServeHTTP(w, r)
	})
}

// securityHeaders sets the security headers of every response (secure's,
// and the front door's refusals').
func (s *server) securityHeaders(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", s.policy(r.Context(), false))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "strict-origin-when-cross-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
}

// framable replaces the security policy set by secure with the widgets'
// (s.widgetCSP and the LTI platforms' origins), whose frame-ancestors let
// course pages on other sites frame them.
func (s *server) framable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", s.policy(r.Context(), true))
		next.ServeHTTP(w, r)
	})
}

// learnerID returns the request's learner: the LTI session's (lti.go),
// else the id in the learner cookie, or "" when there is none or it is not
// one we issue.
func learnerID(r *http.Request) string {
	if sess, ok := ltiSessionOf(r.Context()); ok {
		return sess.Learner
	}
	c, err := r.Cookie(LearnerCookie)
	if err != nil || !validLearnerID(c.Value) {
		return ""
	}
	return c.Value
}

func validLearnerID(v string) bool {
	if len(v) != 32 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ensureLearner returns the request's learner id, issuing a new random
// 128-bit one in a cookie when there is none. Only writes call it, so
// reading pages never creates learners.
func ensureLearner(w http.ResponseWriter, r *http.Request) string {
	if id := learnerID(r); id != "" {
		return id
	}
	var b [16]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	http.SetCookie(w, learnerCookie(r, id, int(learnerCookieAge/time.Second)))
	return id
}

func learnerCookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     LearnerCookie,
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   secureRequest(r),
		SameSite: http.SameSiteLaxMode,
	}
}
