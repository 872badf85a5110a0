package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"capacitylab/admit"
	"capacitylab/forwarding"
)

// proxy is the request handler: the policy's gate (its door and, with
// WORKERS > 0, the queue of callers waiting for a worker) and the reverse
// proxy.
type proxy struct {
	s      settings
	rp     *httputil.ReverseProxy
	reg    *prometheus.Registry
	sent   *prometheus.CounterVec // answers from upstream by what the policy learned
	logger *slog.Logger
	gate   *admit.Gate
}

// result is what the policy learns of one request sent upstream, set by
// the reverse proxy's hooks.
type result struct {
	caller  context.Context // the caller's request's: ended when the caller went away
	ticket  admit.Ticket    // its admission, for the gate's Leave
	outcome admit.Outcome
	// released: the request was ended for the policy and its worker
	// given back when its answer began (a long-lived answer).
	released bool
	// headers stops the TIMEOUT timer when the answer's headers arrive:
	// false when it had already fired (nil without TIMEOUT).
	headers func() bool
}

// errHeaderTimeout is why a request is cancelled when its answer's
// headers did not arrive within TIMEOUT.
var errHeaderTimeout = errors.New("the upstream did not answer within TIMEOUT")

type resultKey struct{}

func newProxy(s settings, logger *slog.Logger) (*proxy, error) {
	gate, err := admit.NewGate(s.policy, s.limit, s.workers)
	if err != nil {
		return nil, err
	}
	target, err := url.Parse(s.upstream)
	if err != nil {
		return nil, err
	}
	p := &proxy{s: s, gate: gate, logger: logger, reg: prometheus.NewRegistry()}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			p.setForwarding(r)
		},
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        256,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     90 * time.Second,
		},
		ModifyResponse: func(resp *http.Response) error {
			res := resp.Request.Context().Value(resultKey{}).(*result)
			if res.headers != nil && !res.headers() {
				return errHeaderTimeout // TIMEOUT passed as the headers came
			}
			switch {
			case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
				res.outcome = admit.Overloaded
			case longLived(resp):
				// Its life is the caller's, not the upstream's work:
				// it leaves the count now, and is no sample.
				res.outcome, res.released = admit.LongLived, true
				p.gate.Leave(res.ticket, admit.LongLived)
			default:
				res.outcome = admit.Served
			}
			return nil
		},
		ErrorHandler: p.upstreamFailed,
		ErrorLog:     slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	p.sent = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "proxy_upstream_total",
		Help: "Requests sent upstream, by what the policy learned: served, overloaded (429, 5xx, no connection), timeout (no headers within TIMEOUT, or the caller left), stream (a websocket or event stream: it left the policy's count as it began), abandoned."},
		[]string{"outcome"})
	for _, o := range []admit.Outcome{admit.Served, admit.Overloaded, admit.TimedOut, admit.LongLived, admit.Abandoned} {
		p.sent.WithLabelValues(outcomeName(o))
	}
	upstream := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "proxy_upstream_inflight", Help: "Requests sent upstream and not yet answered."},
		func() float64 { return float64(gate.Busy()) })
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "proxy_waiting", Help: "Callers waiting for a worker (WORKERS > 0)."},
		func() float64 { return float64(gate.Waiting()) })
	p.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), p.sent, upstream, waiting)
	if err := gate.Register(p.reg); err != nil {
		return nil, err
	}
	return p, nil
}

// setForwarding writes the outgoing request's forwarding headers. The
// reverse proxy has removed the caller's. From a caller in
// TRUSTED_PROXIES (a TLS terminator, a load balancer) the chain it sent
// is kept and this hop added: its address appended to X-Forwarded-For,
// its X-Forwarded-Host and -Proto passed on (the edge's), and, if it sent
// Forwarded (RFC 7239), an element for this hop appended. From anyone
// else the headers say what this proxy saw: the caller's address, the
// Host it was sent, http; no Forwarded. The Host header itself is
// UPSTREAM's (SetURL), so a virtual host or a TLS name behind it matches;
// the caller's is in X-Forwarded-Host.
func (p *proxy) setForwarding(r *httputil.ProxyRequest) {
	host, _, _ := net.SplitHostPort(r.In.RemoteAddr)
	peer, err := netip.ParseAddr(host)
	if err != nil || !forwarding.Trusted(p.s.trusted, peer) {
		r.SetXForwarded()
		return
	}
	in, out := r.In.Header, r.Out.Header
	xff := append(slices.Clone(in.Values("X-Forwarded-For")), peer.Unmap().String())
	out.Set("X-Forwarded-For", strings.Join(xff, ", "))
	for h, own := range map[string]string{"X-Forwarded-Host": r.In.Host, "X-Forwarded-Proto": "http"} {
		if v := in.Values(h); len(v) > 0 {
			out[h] = slices.Clone(v)
		} else {
			out.Set(h, own)
		}
	}
	if fwd := in.Values("Forwarded"); len(fwd) > 0 {
		node := peer.Unmap().String()
		if peer.Unmap().Is6() {
			node = "[" + node + "]"
		}
		hop := "for=" + forwardedValue(node) + ";host=" + forwardedValue(r.In.Host) + ";proto=http"
		out.Set("Forwarded", strings.Join(append(slices.Clone(fwd), hop), ", "))
	}
}

// forwardedValue writes a Forwarded parameter's value: as it is when it is
// a token, else quoted (an IPv6 address in brackets, a host with a port).
func forwardedValue(v string) string {
	if v != "" && !strings.ContainsFunc(v, func(r rune) bool {
		return !(r < 0x80 && (r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)))
	}) {
		return v
	}
	return strconv.Quote(v)
}

// longLived reports whether an answer is a long-lived one: a protocol
// switched (a websocket) or an event stream.
func longLived(resp *http.Response) bool {
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return true
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

// outcomeName names an outcome as proxy_upstream_total labels it.
func outcomeName(o admit.Outcome) string {
	switch o {
	case admit.Served:
		return "served"
	case admit.Overloaded:
		return "overloaded"
	case admit.TimedOut:
		return "timeout"
	case admit.LongLived:
		return "stream"
	}
	return "abandoned"
}

// ServeHTTP admits or refuses a caller (every one Normal: the proxy has
// no classes), waits for a worker if need be, and sends its request
// upstream.
func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t, err := p.gate.Enter(r.Context(), admit.Normal)
	switch {
	case errors.Is(err, admit.ErrRefused):
		admit.Refuse(w)
		return
	case err != nil:
		return // the caller went away while it waited for a worker
	}
	p.forward(w, r, t)
}

// forward sends the request upstream and gives the worker back.
func (p *proxy) forward(w http.ResponseWriter, r *http.Request, t admit.Ticket) {
	res := &result{caller: r.Context(), ticket: t, outcome: admit.Abandoned}
	ctx := context.WithValue(r.Context(), resultKey{}, res)
	if p.s.timeout > 0 {
		// TIMEOUT bounds the wait for the answer's headers, not its
		// body: a stream or a websocket lasts as long as its two ends
		// want (ModifyResponse stops the timer).
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		res.headers = time.AfterFunc(p.s.timeout, func() { cancel(errHeaderTimeout) }).Stop
		defer res.headers() // no answer came: let the timer go
	}
	// Deferred: the reverse proxy panics with http.ErrAbortHandler when
	// the caller goes away in the middle of the answer.
	defer func() {
		if res.outcome == admit.Served && res.caller.Err() != nil {
			res.outcome = admit.TimedOut // the caller left before the whole answer
		}
		p.sent.WithLabelValues(outcomeName(res.outcome)).Inc()
		if !res.released {
			p.gate.Leave(t, res.outcome)
		}
	}()
	p.rp.ServeHTTP(w, r.WithContext(ctx))
}

// upstreamFailed is the reverse proxy's ErrorHandler: no answer from the
// upstream.
func (p *proxy) upstreamFailed(w http.ResponseWriter, r *http.Request, err error) {
	res := r.Context().Value(resultKey{}).(*result)
	switch {
	case res.released:
		// A long-lived answer that failed as it began (a websocket's
		// hijack): the policy has counted it already.
		p.logger.Debug("long-lived answer failed", "err", err)
		plain(w, http.StatusBadGateway, "the upstream's answer could not be passed on\n")
	case res.caller.Err() != nil:
		// The caller went away: it gave up, a timeout from its side.
		res.outcome = admit.TimedOut
	case errors.Is(context.Cause(r.Context()), errHeaderTimeout):
		res.outcome = admit.TimedOut
		plain(w, http.StatusGatewayTimeout, errHeaderTimeout.Error()+"\n")
	default:
		res.outcome = admit.Overloaded
		p.logger.Debug("upstream failed", "err", err)
		plain(w, http.StatusBadGateway, "the upstream could not be reached\n")
	}
}

func plain(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// close lets go of the idle connections to the upstream.
func (p *proxy) close() {
	p.rp.Transport.(*http.Transport).CloseIdleConnections()
}

// controlHandler serves GET /healthz, /config and /metrics.
func (p *proxy) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		plain(w, http.StatusOK, "ok\n")
	})
	mux.HandleFunc("GET /config", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(configReply{Upstream: p.s.upstream, Policy: p.s.policy, Describe: p.s.policy.Describe(),
			Limit: p.s.limit, Workers: p.s.workers, TimeoutMS: p.s.timeout.Milliseconds(), TrustedProxies: prefixes(p.s.trusted)})
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{}))
	return mux
}

// configReply is the body of GET /config: the settings in force.
type configReply struct {
	Upstream  string     `json:"upstream"`
	Policy    admit.Spec `json:"policy"`
	Describe  string     `json:"policy_in_force"` // every parameter, defaults included
	Limit     int        `json:"limit"`
	Workers   int        `json:"workers"`
	TimeoutMS int64      `json:"timeout_ms"`
	// TrustedProxies are the networks of TRUSTED_PROXIES, comma-separated
	// ("" for none).
	TrustedProxies string `json:"trusted_proxies"`
}

// prefixes writes networks as TRUSTED_PROXIES reads them.
func prefixes(ps []netip.Prefix) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return strings.Join(out, ",")
}
