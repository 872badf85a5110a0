package forwarding

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// The trusted-proxy list takes addresses and networks, and names what it
// cannot read.
func TestParseTrusted(t *testing.T) {
	got, err := ParseTrusted(" 10.0.0.1, 192.168.0.0/16 ::1 fd00::/8")
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32"), netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("fd00::/8")}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("ParseTrusted = %v, %v; want %v", got, err, want)
	}
	if _, err := ParseTrusted("10.0.0.1, proxy.example"); err == nil || !strings.Contains(err.Error(), `"proxy.example"`) {
		t.Errorf("a host name: %v, want an error naming it", err)
	}
}

// An address is trusted when a listed network holds it, an IPv4-mapped
// one as its IPv4 address.
func TestTrusted(t *testing.T) {
	list, err := ParseTrusted("10.0.0.0/8, ::1")
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{"10.1.2.3": true, "::ffff:10.1.2.3": true, "11.0.0.1": false, "::1": true, "::2": false} {
		if got := Trusted(list, netip.MustParseAddr(addr)); got != want {
			t.Errorf("Trusted(%s) = %v, want %v", addr, got, want)
		}
	}
	if Trusted(nil, netip.MustParseAddr("127.0.0.1")) {
		t.Error("an empty list trusts 127.0.0.1")
	}
}
