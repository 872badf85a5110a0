package lessons

import (
	"strings"
	"testing"
	"testing/fstest"
)

// A lab block may give a retrying client (retry, package retry's spec,
// kept canonical) and the shares of arrivals sent as critical and
// sheddable; bad values are errors at their line naming the field and
// what it allows; the fingerprint covers them, and a preset without them
// is fingerprinted as before.
func TestLabRetryAndClasses(t *testing.T) {
	c, err := Load(labWith("0", "retry: \"backoff=jitter,retries=3\"\ncritical: 0.2\nsheddable: 0.3\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Lessons[0].Block("l")
	l := b.(*Lab)
	if l.Retry != "retries=3,backoff=jitter" || l.Critical != 0.2 || l.Sheddable != 0.3 {
		t.Errorf("retry %q, critical %g, sheddable %g: want the spec canonical and the shares as given", l.Retry, l.Critical, l.Sheddable)
	}
	closed := func(extra string) fstest.MapFS {
		body := head("a", 1) + "```lab id=l\nworkers: 4\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nclosed: 4\nseconds: 1\n" + extra + "```\n"
		return fstest.MapFS{"a.md": &fstest.MapFile{Data: []byte(body)}}
	}
	for _, tt := range []struct {
		name string
		fs   fstest.MapFS
		want string
	}{
		// A parameter the client does not have.
		{"unknown parameter", labWith("0", "retry: \"retries=3,speed=2\"\n"), `a.md:18: lab "l": retry's speed "2" is not allowed: want a parameter of parameters name=value`},
		// A value out of its range, on its own line.
		{"retries out of range", labWith("0", "critical: 0.1\nretry: retries=11\n"), `a.md:19: lab "l": retry's retries "11" is not allowed: want a whole number from 0 to 10`},
		// Not name=value at all.
		{"not a spec", labWith("0", "retry: three\n"), `a.md:18: lab "l": retry "three" is not allowed: want parameters name=value`},
		// A share above 1.
		{"critical above 1", labWith("0", "critical: 1.5\n"), `a.md:18: lab "l": critical 1.5 is not allowed: want a share of the arrivals from 0 to 1`},
		// A negative share.
		{"negative sheddable", labWith("0", "sheddable: -0.1\n"), `a.md:18: lab "l": sheddable -0.1 is not allowed`},
		// Shares above 1 together, named at sheddable's line.
		{"shares together", labWith("0", "critical: 0.6\nsheddable: 0.5\n"), `a.md:19: lab "l": critical 0.6 and sheddable 0.5 are not allowed: want shares of the arrivals together at most 1`},
		// A closed loop's clients do not retry, nor carry classes.
		{"retry closed", closed("retry: retries=2\n"), `a.md:18: lab "l": retry is for an open loop`},
		{"critical closed", closed("critical: 0.5\n"), `a.md:18: lab "l": critical is for an open loop`},
	} {
		if _, err := Load(tt.fs); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	base := goodLab
	cols, rows := []string{"offered", "ok"}, [][]string{{"10", "10"}}
	plain := Fingerprint(&base, cols, rows, "s")
	if c := canonicalPreset(&base); strings.Contains(c, "retry") || strings.Contains(c, "critical") || strings.Contains(c, "sheddable") {
		t.Errorf("canonical form %q names settings the preset does not give", c)
	}
	with := base
	with.Retry, with.Critical, with.Sheddable = "retries=3", 0.2, 0.3
	if c := canonicalPreset(&with); !strings.HasSuffix(c, " retry=retries=3 critical=0.2 sheddable=0.3") || Fingerprint(&with, cols, rows, "s") == plain {
		t.Errorf("canonical form %q: want retry, critical and sheddable covered", c)
	}
}
