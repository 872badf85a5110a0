package web

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"capacitylab/admit"
	"capacitylab/lti"
)

// The site's front door: with Deps.Gate, every request but the critical
// ones enters the gate (package admit) before anything else is done for
// it, and one the gate's policy refuses is answered at once with 503,
// Retry-After and a short page (refuse), so that past its capacity the
// site serves what it can quickly instead of everything slowly.
//
// Who is refused first is requestClass, the one table of it:
//
//	critical   never refused, not counted inside: GET /healthz and /metrics
//	           (the operator's view of an overload); websocket upgrades
//	           under /ws/ (a class's live socket, which carries its votes,
//	           and a running run's stream: long-lived, so never counted as
//	           requests inside); an LTI launch in progress (/lti/login,
//	           /lti/launch, /lti/deep-link: a platform's redirect that
//	           fails cannot be retried by the learner) and the tool's keys
//	           (/lti/jwks.json: a platform fetches them to check the token
//	           requests that carry grades back, and a refusal there loses
//	           the grade's first post); the site's assets
//	           (/static/, /favicon.ico: kept in memory, precompressed, so
//	           serving one costs about what refusing it would, and they
//	           complete a page already let in, or the refusal page itself,
//	           which would otherwise show unstyled)
//	normal     refused at the policy's bound: a write (any method but GET
//	           and HEAD: a Predict, a join, a run); a request carrying the
//	           learner cookie, an LTI session, a class participant's
//	           cookie or a teach pass (someone at work)
//	sheddable  refused first, once all but a quarter of the bound is
//	           inside: page loads and API reads by anonymous visitors (a
//	           crowd opening a link at once, a crawler)
//
// The gate should have workers (admit.NewGate's), a few per processor,
// so that a burst holds no more than that many pages being made at once
// (a learner's page gzipped, a plot drawn) and those admitted beyond them
// wait, counted, in the gate's first-come-first-served queue; and a bound
// on the processors' line (admit.Gate.BoundWait): past the processors'
// ceiling, requests wait to be read, before the door, where only that
// line shows them.
//
// A cookie is only looked at, not checked against the store: checking
// would cost the store a read per request at the door. Forging one buys
// a client the normal class, which is still bounded.

// requestClass is r's class at the front door (the table above).
func requestClass(r *http.Request) admit.Class {
	p := r.URL.Path
	switch {
	case p == "/healthz" || p == "/metrics":
		return admit.Critical
	case strings.HasPrefix(p, "/ws/") && websocket.IsWebSocketUpgrade(r):
		return admit.Critical
	case p == ltiLoginPath || p == ltiLaunchPath || p == ltiDeepLinkPath || p == ltiJWKSPath:
		return admit.Critical
	case (strings.HasPrefix(p, "/static/") || p == "/favicon.ico") && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		return admit.Critical
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		return admit.Normal
	case knownVisitor(r):
		return admit.Normal
	}
	return admit.Sheddable
}

// knownVisitor reports whether r carries a cookie the site gives someone
// at work: the learner cookie (well formed), an LTI session, a class
// participant's cookie or a teach pass.
func knownVisitor(r *http.Request) bool {
	for _, c := range r.CookiesNamed(LearnerCookie) {
		if validLearnerID(c.Value) {
			return true
		}
	}
	for _, c := range r.Cookies() {
		if c.Name == lti.SessionCookie || c.Name == teachPassCookie || strings.HasPrefix(c.Name, participantCookiePrefix) {
			return true
		}
	}
	return false
}

// admission is the front door's middleware (see above); without a gate it
// lets everything through. What the policy learns of an admitted request
// is its latency from arrival to the end of the answer, and its outcome:
// overloaded for a 5xx (the store unreachable, a failure), timed out when
// the caller went away first, served otherwise.
func (s *server) admission(next http.Handler) http.Handler {
	if s.gate == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := requestClass(r)
		t, err := s.gate.Enter(r.Context(), c)
		switch {
		case errors.Is(err, admit.ErrRefused):
			s.refuse(w, r)
			return
		case err != nil:
			return // the caller went away while it waited for a worker
		case c == admit.Critical:
			next.ServeHTTP(w, r) // let by, uncounted: nothing to learn
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			o := admit.Served
			switch {
			case sw.status >= 500:
				o = admit.Overloaded
			case r.Context().Err() != nil:
				o = admit.TimedOut
			}
			s.gate.Leave(t, o)
		}()
		next.ServeHTTP(sw, r)
	})
}

// refusedError is what a refused request is told: the page's words, and
// when to try again (admit.RetryAfter's one second).
func refusedError() *Error {
	return &Error{Code: CodeUnavailable, Title: "Busy for a moment",
		Message:    "Many people are opening pages at once, so the server is turning some away to keep the rest quick. Nothing is lost: reload this page in a moment.",
		RetryAfter: time.Second}
}

// refuse answers a request the gate refused: 503 with Retry-After, and
// the error page in the site's style (or the JSON error body where
// wantsJSON), with the security headers every page gets. It renders
// nothing per request: the page is rendered and compressed once (with the header's
// default links, as no LTI session is read at the door) and kept, so a
// refusal costs far less than the cheapest page it stands in for. It is
// not logged: admit_requests_total counts refusals by class.
func (s *server) refuse(w http.ResponseWriter, r *http.Request) {
	s.securityHeaders(w, r)
	e := refusedError()
	secs := retrySeconds(e.RetryAfter)
	w.Header().Set("Retry-After", itoa(secs))
	if wantsJSON(r) {
		writeJSON(w, http.StatusServiceUnavailable, e.body(secs))
		return
	}
	page, err := s.refusals.getOrMake("refused", func() (*encoded, bool, error) {
		buf := s.buffer()
		defer s.release(buf)
		if err := errorPage(s.pageAt("", e.Title), http.StatusServiceUnavailable, e, "", nil).Render(r.Context(), buf); err != nil {
			return nil, false, err
		}
		return newEncoded(bytes.Clone(buf.Bytes()), ""), true, nil
	})
	if err != nil {
		s.renderFailed(w, r, err)
		return
	}
	htmlHeaders(w)
	page.serve(w, r, http.StatusServiceUnavailable)
}
