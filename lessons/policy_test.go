package lessons

import (
	"strings"
	"testing"
	"testing/fstest"
)

// labWith is a lesson whose lab block (fence on line 10) gives the lines
// extra after its knobs (the first of them on line 18).
func labWith(limit, extra string) fstest.MapFS {
	body := head("a", 1) + "```lab id=l\nworkers: 4\nspin_ms: 2\nwait_ms: 18\nlimit: " + limit + "\ncpus: 1\nrates: [10]\nseconds: 1\n" + extra + "```\n"
	return fstest.MapFS{"a.md": &fstest.MapFile{Data: []byte(body)}}
}

// A lab block may set the door's admission policy, as POLICY spells it;
// it is kept canonical (package recorder's TestPresetPolicy: and reaches
// the lab's Config).
func TestLabPolicy(t *testing.T) {
	c, err := Load(labWith("0", "policy: aimd, backoff=0.50\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Lessons[0].Block("l")
	l := b.(*Lab)
	if l.Policy != "aimd,backoff=0.5" {
		t.Errorf("policy %q, want aimd,backoff=0.5", l.Policy)
	}
	// "queue" is the default, written out.
	c, err = Load(labWith("3", "policy: queue\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = c.Lessons[0].Block("l")
	if l := b.(*Lab); l.Policy != "" || l.Limit != 3 {
		t.Errorf("policy: queue read as %q (limit %d), want the zero value", l.Policy, l.Limit)
	}
}

// The fingerprint covers the policy, and a preset without one (or with
// the queue policy written out) is fingerprinted as before policies
// existed, so every table recorded then still matches.
func TestFingerprintCoversPolicy(t *testing.T) {
	base := goodLab
	cols, rows := []string{"offered", "ok"}, [][]string{{"10", "10"}}
	want := Fingerprint(&base, cols, rows, "s")
	if c := canonicalPreset(&base); strings.Contains(c, "policy") {
		t.Errorf("canonical form %q names a policy the preset does not give", c)
	}
	withPolicy := base
	withPolicy.Policy = "inflight,quota=5"
	if Fingerprint(&withPolicy, cols, rows, "s") == want {
		t.Error("the policy does not change the fingerprint")
	}
	if c := canonicalPreset(&withPolicy); !strings.HasSuffix(c, " policy=inflight,quota=5") {
		t.Errorf("canonical form %q, want it to end with the policy", c)
	}
	queue := base
	_ = queue.Policy.UnmarshalText([]byte("queue"))
	if Fingerprint(&queue, cols, rows, "s") != want {
		t.Error("policy: queue changed the fingerprint of a preset without a policy")
	}
}
