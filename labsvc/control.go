package labsvc

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"capacitylab/admit"
	"capacitylab/affinity"
	"capacitylab/dist"
	"capacitylab/input"
)

// maxControlBody bounds a POST /config body.
const maxControlBody = 64 << 10

// metrics are the Prometheus instruments of one Server. Counters are
// cumulative since start (a reset of the stats window does not touch them).
type metrics struct {
	accepted, refused, done prometheus.Counter
	bads                    *prometheus.CounterVec
	queueWait, service      prometheus.Histogram
	spinCPU                 prometheus.Counter
	classes                 [3]classMetrics // by admit.Class
}

// classMetrics are one class's counters (lab_class_*_total{class}).
type classMetrics struct {
	accepted, refused, dropped, done prometheus.Counter
}

func newMetrics(reg *prometheus.Registry, s *Server) metrics {
	buckets := []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10}
	m := metrics{
		accepted: prometheus.NewCounter(prometheus.CounterOpts{Name: "lab_accepted_total", Help: "Connections admitted by the door into the queue."}),
		refused:  prometheus.NewCounter(prometheus.CounterOpts{Name: "lab_refused_total", Help: "Connections answered 503: refused by the door's admission policy, or dropped from the queue (POLICY=sojourn)."}),
		done:     prometheus.NewCounter(prometheus.CounterOpts{Name: "lab_done_total", Help: "Requests served to completion."}),
		bads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lab_bad_total", Help: "Accepted connections that never sent a complete request, by reason."},
			[]string{"reason"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "lab_queue_wait_seconds", Help: "Time from accept to a worker taking the connection.", Buckets: buckets}),
		service:   prometheus.NewHistogram(prometheus.HistogramOpts{Name: "lab_service_seconds", Help: "Time from a worker taking the connection to the answer.", Buckets: buckets}),
		spinCPU:   prometheus.NewCounter(prometheus.CounterOpts{Name: "lab_spin_cpu_seconds_total", Help: "Processor time spent spinning."}),
	}
	queued := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lab_queued", Help: "Connections waiting in the queue now."}, func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(s.queue.n)
	})
	inService := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lab_in_service", Help: "Connections held by a worker now."}, func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(s.inService)
	})
	workers := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lab_workers", Help: "WORKERS in force."}, func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(s.cfg.Workers)
	})
	for _, r := range []string{"timeout", "gone", "garbage"} {
		m.bads.WithLabelValues(r)
	}
	byClass := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help + " By class (X-Criticality: critical, default, sheddable)."}, []string{"class"})
	}
	accepted := byClass("lab_class_accepted_total", "Connections admitted by the door.")
	refused := byClass("lab_class_refused_total", "Connections answered 503: refused by the door's admission policy, or dropped from the queue.")
	dropped := byClass("lab_class_dropped_total", "Connections admitted, then dropped from the queue (POLICY=sojourn).")
	done := byClass("lab_class_done_total", "Requests served to completion.")
	for _, c := range admit.Classes() {
		n := className(c)
		m.classes[c] = classMetrics{accepted: accepted.WithLabelValues(n), refused: refused.WithLabelValues(n), dropped: dropped.WithLabelValues(n), done: done.WithLabelValues(n)}
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(m.accepted, m.refused, m.done, m.bads, m.queueWait, m.service, m.spinCPU, queued, inService, workers, accepted, refused, dropped, done)
	if err := s.policy.Register(reg); err != nil {
		panic(err) // a fresh registry holds nothing of the same name
	}
	return m
}

func (m metrics) observe(wait, service, cpu time.Duration) {
	m.done.Inc()
	m.queueWait.Observe(wait.Seconds())
	m.service.Observe(service.Seconds())
	m.spinCPU.Add(cpu.Seconds())
}

func (m metrics) bad(res outcome) {
	switch res {
	case reqTimeout:
		m.bads.WithLabelValues("timeout").Inc()
	case reqGone:
		m.bads.WithLabelValues("gone").Inc()
	default:
		m.bads.WithLabelValues("garbage").Inc()
	}
}

// controlHandler routes the control API (see the package doc).
func (s *Server) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /config", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, configReply(s.Config()))
	})
	mux.HandleFunc("POST /config", changeOnly(s.handleSetConfig))
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Stats())
	})
	mux.HandleFunc("POST /reset", changeOnly(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Reset())
	}))
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	return mux
}

// ownHostsOnly refuses (403) a control request whose Host is a name other
// than localhost (or a name under .localhost, which browsers keep on this
// machine) and names; an IP address, or no Host, passes. A web page at a
// name of the attacker's that it then points at this machine (DNS
// rebinding) is of the same origin as the control API under that name, so
// the cross-site guard (changeOnly) lets its changes through and its reads
// are its own to read; the Host it sends is that name, and is refused
// here. A page at an IP address is served by the machine at that address.
func ownHostsOnly(names []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
		_, ipErr := netip.ParseAddr(host)
		if host == "" || ipErr == nil || host == "localhost" || strings.HasSuffix(host, ".localhost") || slices.Contains(names, host) {
			next.ServeHTTP(w, r)
			return
		}
		allowed := "an IP address of this machine (such as 127.0.0.1) or localhost"
		if len(names) > 0 {
			allowed += ", or " + strings.Join(names, " or ")
		}
		writeJSON(w, http.StatusForbidden, ControlError{Error: fmt.Sprintf("the control API answers only to its own host names: Host %q is not one (a web page may have pointed that name at this machine); use %s", r.Host, allowed)})
	})
}

// changeOnly guards a change (POST /config, POST /reset): the control API
// listens on a fixed local port that any page a learner opens could post
// to, so a change from a page of another site (a foreign Origin, or
// Sec-Fetch-Site: cross-site) is refused with 403, and one without
// Content-Type: application/json with 415 (a browser asks before sending
// that type across sites, and nothing here answers yes).
func changeOnly(next http.HandlerFunc) http.HandlerFunc {
	cop := http.NewCrossOriginProtection()
	return func(w http.ResponseWriter, r *http.Request) {
		if err := cop.Check(r); err != nil {
			writeJSON(w, http.StatusForbidden, ControlError{Error: "changes from pages of other sites are refused: change the lab from a program or a terminal on this machine"})
			return
		}
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
			writeJSON(w, http.StatusUnsupportedMediaType, ControlError{Error: "a change must be sent with Content-Type: application/json"})
			return
		}
		next(w, r)
	}
}

// ConfigReply is the body of GET /config and of a POST /config that
// succeeded: the knobs in force, and the processors the lab runs on (its
// threads' affinity; absent where the system cannot say), which a load
// generator on the same machine keeps off (cmd/load does).
type ConfigReply struct {
	Config
	Processors []int `json:"processors,omitempty"`
}

func configReply(c Config) ConfigReply {
	cpus, _ := affinity.Allowed()
	return ConfigReply{Config: c, Processors: cpus}
}

// ControlError is the JSON body of a 400 from the control API.
type ControlError struct {
	Error string `json:"error"` // one line saying what is wrong and what is allowed
	// Errors says what is wrong with each bad knob, by its environment
	// variable: {"SPIN_MS": "abc is not allowed: want 0 to 1000"}, as the
	// server's own error bodies do for the fields of a sweep.
	Errors input.FieldErrors `json:"errors,omitempty"`
}

// patchKnobs are the knobs POST /config may change, by JSON name.
const patchKnobs = "workers (with ACCEPT=door), spin_ms, wait_ms, limit, stall_every, stall_ms, backlog, policy, dist, lock_ms, coherency_us"

func (s *Server) handleSetConfig(w http.ResponseWriter, r *http.Request) {
	var raw map[string]json.RawMessage
	err := input.DecodeJSON(http.MaxBytesReader(w, r.Body, maxControlBody), &raw)
	var je *input.JSONError
	trailing := errors.As(err, &je) && je.Problem == input.Trailing
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeJSON(w, http.StatusRequestEntityTooLarge, ControlError{Error: fmt.Sprintf("body too large: at most %d bytes, one JSON object such as {\"spin_ms\": 2}", maxControlBody)})
		return
	case trailing:
		writeJSON(w, http.StatusBadRequest, ControlError{Error: "body must be one JSON object and nothing after it, such as {\"spin_ms\": 2, \"wait_ms\": 18, \"limit\": 0}"})
		return
	case je != nil && (je.Problem == input.DuplicateField || je.Problem == input.BadText):
		writeJSON(w, http.StatusBadRequest, ControlError{Error: "body: " + je.Error()})
		return
	case err != nil || raw == nil:
		writeJSON(w, http.StatusBadRequest, ControlError{Error: "body is not a JSON object such as {\"spin_ms\": 2, \"wait_ms\": 18, \"limit\": 0}"})
		return
	}
	var p ConfigPatch
	errs := input.FieldErrors{}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		var dst **int
		var env string
		switch k {
		case "workers":
			dst, env = &p.Workers, "WORKERS"
		case "spin_ms":
			dst, env = &p.SpinMS, "SPIN_MS"
		case "wait_ms":
			dst, env = &p.WaitMS, "WAIT_MS"
		case "limit":
			dst, env = &p.Limit, "LIMIT"
		case "stall_every":
			dst, env = &p.StallEvery, "STALL_EVERY"
		case "stall_ms":
			dst, env = &p.StallMS, "STALL_MS"
		case "backlog":
			dst, env = &p.Backlog, "BACKLOG"
		case "lock_ms":
			dst, env = &p.LockMS, "LOCK_MS"
		case "coherency_us":
			dst, env = &p.CoherencyUS, "COHERENCY_US"
		case "policy":
			// A JSON string, as POLICY spells it.
			var text string
			if err := json.Unmarshal(raw[k], &text); err != nil {
				errs.Add("POLICY", input.NotAllowed(strings.TrimSpace(string(raw[k])), "a JSON string such as \"aimd,backoff=0.5\": "+admit.Allowed))
				continue
			}
			spec, err := admit.ParseSpec(text)
			var se *admit.SpecError
			if errors.As(err, &se) {
				errs.Add("POLICY", input.NotAllowed(se.Value, se.Allowed))
				continue
			}
			p.Policy = &spec
			continue
		case "dist":
			// A JSON string, as DIST spells it.
			var text string
			if err := json.Unmarshal(raw[k], &text); err != nil {
				errs.Add("DIST", input.NotAllowed(strings.TrimSpace(string(raw[k])), "a JSON string such as \"exponential\": "+dist.Allowed))
				continue
			}
			spec, err := dist.ParseSpec(text)
			var se *dist.SpecError
			if errors.As(err, &se) {
				errs.Add("DIST", input.NotAllowed(se.Value, se.Allowed))
				continue
			}
			p.Dist = &spec
			continue
		case "cpus", "accept":
			writeJSON(w, http.StatusBadRequest, ControlError{Error: fmt.Sprintf("%s cannot change while the lab runs: want only %s", strings.ToUpper(k), patchKnobs)})
			return
		default:
			writeJSON(w, http.StatusBadRequest, ControlError{Error: fmt.Sprintf("unknown knob %q: want only %s", k, patchKnobs)})
			return
		}
		// A JSON number, written as a whole number: "5" (a string) and
		// 2.5 are refused.
		text := strings.TrimSpace(string(raw[k]))
		v, err := strconv.Atoi(text)
		if err != nil {
			lo, hi := knobRange(env)
			errs.Add(env, input.NotAllowed(text, fmt.Sprintf("%d to %d", lo, hi)))
			continue
		}
		*dst = &v
	}
	if len(errs) == 0 {
		cfg, err := s.SetConfig(p)
		if err == nil {
			writeJSON(w, http.StatusOK, configReply(cfg))
			return
		}
		if !errors.As(err, &errs) {
			writeJSON(w, http.StatusBadRequest, ControlError{Error: err.Error()})
			return
		}
	} else {
		// Report the knobs that parsed but are out of range too.
		var more input.FieldErrors
		if errors.As(p.apply(s.Config()).Validate(), &more) {
			for k, msg := range more {
				errs.Add(k, msg)
			}
		}
	}
	writeJSON(w, http.StatusBadRequest, ControlError{Error: errs.Error(), Errors: errs})
}

func knobRange(env string) (int, int) {
	for _, k := range knobs() {
		if k.env == env {
			return k.lo, k.hi
		}
	}
	return 0, 0
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
