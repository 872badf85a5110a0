package lessons

import (
	"strings"
	"testing"
)

// A lab block may give a client of a fixed number of workers
// (max_inflight, open loop only) and knob changes (at); the fingerprint
// covers both, and a preset without them is fingerprinted as before.
func TestLabAtAndMaxInFlight(t *testing.T) {
	c, err := Load(labWith("0", "max_inflight: 10\nat: [\"500ms:WAIT_MS=100\", \"700ms:POLICY=aimd,backoff=0.5\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Lessons[0].Block("l")
	l := b.(*Lab)
	if l.MaxInFlight != 10 || len(l.At) != 2 || l.At[1] != "700ms:POLICY=aimd,backoff=0.5" {
		t.Errorf("max_inflight %d, at %q", l.MaxInFlight, l.At)
	}
	for _, tt := range []struct{ extra, want string }{
		{"max_inflight: -1\n", `a.md:18: lab "l": max_inflight -1 is not allowed: want 0 (no fixed pool of client workers) to 256`},
		{"at: [\"\"]\n", `a.md:18: lab "l": at[0] is empty: want a knob change such as 30s:WAIT_MS=2000`},
		{"at: [a, b, c, d, e, f, g, h, i]\n", `a.md:18: lab "l": at has 9 knob changes: want at most 8`},
	} {
		if _, err := Load(labWith("0", tt.extra)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.extra, err, tt.want)
		}
	}
	base := goodLab
	cols, rows := []string{"offered", "ok"}, [][]string{{"10", "10"}}
	plain := Fingerprint(&base, cols, rows, "s")
	if c := canonicalPreset(&base); strings.Contains(c, "at=") || strings.Contains(c, "max_inflight") {
		t.Errorf("canonical form %q names settings the preset does not give", c)
	}
	with := base
	with.MaxInFlight, with.At = 10, []string{"1s:WAIT_MS=100"}
	if c := canonicalPreset(&with); !strings.HasSuffix(c, " max_inflight=10 at=1s:WAIT_MS=100") || Fingerprint(&with, cols, rows, "s") == plain {
		t.Errorf("canonical form %q: want max_inflight and at covered", c)
	}
}
