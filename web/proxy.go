package web

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"capacitylab/forwarding"
)

// Behind a reverse proxy (a TLS terminator, a load balancer) every request
// comes from the proxy's address over plain HTTP. The proxy says who the
// client was and which scheme it used in Forwarded (RFC 7239) or
// X-Forwarded-For and X-Forwarded-Proto; anyone can send those headers,
// so they are believed only from a peer in Deps.TrustedProxies.
//
// The client's address: the peer's, unless the peer is trusted; then the
// forwarded list (Forwarded's for= values, else X-Forwarded-For's, each
// header's values in order, proxies appending to the right) is read from
// the right, skipping trusted proxies, and the first address that is not
// one is the client (all trusted: the leftmost). A value that is not an
// address (unknown, an obfuscated _name) ends the walk there: the last
// trusted hop is then taken as the client.
//
// The scheme: https over TLS; from a trusted peer, the proto= of the
// Forwarded element that named the client, else the first value of
// X-Forwarded-Proto (the edge proxy's); otherwise http.
//
// clientAddr and requestScheme are the one place each is decided; the
// forwarded middleware works both out once per request.

// trusts reports whether a is one of the trusted proxies.
func (s *server) trusts(a netip.Addr) bool { return forwarding.Trusted(s.proxies, a) }

// forwardedKey is the context key of a request's forwarded view.
type forwardedKey struct{}

// forwardedView is who sent a request and how, as the forwarded
// middleware worked it out.
type forwardedView struct {
	client netip.Addr // invalid when RemoteAddr is not an IP address
	https  bool
}

// forwarded works out the client's address and scheme once per request
// (see the top of this file) and sends Strict-Transport-Security on
// https.
func (s *server) forwarded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := s.forwardedOf(r)
		if v.https {
			w.Header().Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), forwardedKey{}, v)))
	})
}

func (s *server) forwardedOf(r *http.Request) forwardedView {
	v := forwardedView{https: r.TLS != nil}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return v
	}
	v.client = peer.Unmap()
	if !s.trusts(v.client) {
		return v
	}
	var hops []forwardedHop
	if fwd := r.Header.Values("Forwarded"); len(fwd) > 0 {
		hops = parseForwarded(fwd)
	} else {
		for _, h := range r.Header.Values("X-Forwarded-For") {
			for _, f := range strings.Split(h, ",") {
				hops = append(hops, forwardedHop{addr: strings.TrimSpace(f)})
			}
		}
		if p := r.Header.Get("X-Forwarded-Proto"); p != "" {
			first, _, _ := strings.Cut(p, ",")
			v.https = v.https || strings.EqualFold(strings.TrimSpace(first), "https")
		}
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := hopAddr(hops[i].addr)
		if !ok {
			break
		}
		v.client = a
		if hops[i].proto != "" {
			v.https = strings.EqualFold(hops[i].proto, "https")
		}
		if !s.trusts(a) {
			break
		}
	}
	return v
}

// forwardedHop is one element of a Forwarded header: its for= and proto=.
type forwardedHop struct{ addr, proto string }

// parseForwarded reads the elements of Forwarded headers (RFC 7239):
// comma-separated elements of semicolon-separated name=value pairs,
// values possibly quoted.
func parseForwarded(headers []string) []forwardedHop {
	var out []forwardedHop
	for _, h := range headers {
		for _, elem := range strings.Split(h, ",") {
			var hop forwardedHop
			for _, pair := range strings.Split(elem, ";") {
				name, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if !ok {
					continue
				}
				val = strings.Trim(strings.TrimSpace(val), `"`)
				switch strings.ToLower(name) {
				case "for":
					hop.addr = val
				case "proto":
					hop.proto = val
				}
			}
			out = append(out, hop)
		}
	}
	return out
}

// hopAddr reads a forwarded address: 192.0.2.1, 192.0.2.1:4711,
// [2001:db8::1], [2001:db8::1]:4711 or 2001:db8::1.
func hopAddr(v string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(v); err == nil {
		return ap.Addr().Unmap(), true
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(v, "["), "]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// viewOf is the request's forwarded view (worked out now when the
// middleware did not run, as in handler tests).
func viewOf(r *http.Request) forwardedView {
	if v, ok := r.Context().Value(forwardedKey{}).(forwardedView); ok {
		return v
	}
	return (&server{}).forwardedOf(r)
}

// clientAddr is the address limits and fair shares count a request
// against: the client's IP (see the top of this file). An IPv6 client is
// counted by its /64, the block one network (and so one guesser) is
// usually given, so that stepping through its own addresses does not buy
// anything.
func clientAddr(r *http.Request) string {
	a := viewOf(r).client
	if !a.IsValid() {
		return r.RemoteAddr
	}
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// requestScheme is "https" when the browser reached the site over TLS
// (directly or through a trusted proxy), else "http": for absolute links
// and Secure cookies.
func requestScheme(r *http.Request) string {
	if viewOf(r).https {
		return "https"
	}
	return "http"
}

// secureRequest reports whether cookies set in answer to r get Secure.
func secureRequest(r *http.Request) bool { return viewOf(r).https }
