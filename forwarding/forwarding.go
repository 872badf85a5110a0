// Package forwarding reads the list of reverse proxies whose forwarding
// headers (Forwarded, X-Forwarded-For, X-Forwarded-Proto,
// X-Forwarded-Host) are believed, and tells whether an address is one of
// them: the server's --trusted-proxies (package web reads the client and
// scheme from the headers) and the proxy's TRUSTED_PROXIES (cmd/proxy
// keeps the chain it was sent). Anyone can send those headers, so they
// mean something only from a peer on this list.
package forwarding

import (
	"fmt"
	"net/netip"
	"strings"
)

// ParseTrusted reads a list of addresses and networks in CIDR notation
// separated by commas or spaces ("10.0.0.1, 192.168.0.0/16 fd00::/8");
// an address is a network of one. An empty list trusts nobody.
func ParseTrusted(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an IP address nor a network such as 10.0.0.0/8", f)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// Trusted reports whether a (an IPv4-mapped IPv6 address counting as its
// IPv4 one) is in one of the networks of trusted.
func Trusted(trusted []netip.Prefix, a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
