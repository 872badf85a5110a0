package lessons

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// A lab block may give the lab's DIST, LOCK_MS and COHERENCY_US (dist
// kept canonical; the lab's own checks, CheckLab, refuse a bad one), and
// a closed loop a window per client count (clients: [1, 2, 4]): its table
// begins with clients, a mark names its rows by their client counts, and
// the fingerprint covers all of them while a preset without them is
// fingerprinted as before. A list next to closed or rates, or a count out
// of range, is an error at its line.
func TestLabVariabilityAndClients(t *testing.T) {
	closedWith := func(extra string) fstest.MapFS {
		body := head("a", 1) + "```lab id=l\nworkers: 64\nspin_ms: 1\nwait_ms: 9\nlimit: 0\ncpus: 1\nseconds: 1\n" + extra + "```\n"
		return fstest.MapFS{"a.md": &fstest.MapFile{Data: []byte(body)}}
	}
	c, err := Load(closedWith("clients: [1, 4, 16]\ndist: \"bimodal, x=10, p=0.1\"\nlock_ms: 2\ncoherency_us: 100\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Lessons[0].Block("l")
	l := b.(*Lab)
	if !reflect.DeepEqual(l.Clients, []int{1, 4, 16}) || l.Closed != 1 || l.Dist != "bimodal,p=0.1,x=10" || l.LockMS != 2 || l.CoherencyUS != 100 {
		t.Errorf("clients %v closed %d dist %q lock %d coherency %d: want [1 4 16], 1, the spec canonical, 2 and 100", l.Clients, l.Closed, l.Dist, l.LockMS, l.CoherencyUS)
	}
	cols := l.Columns()
	if cols[0] != "clients" || !slices.Contains(cols, "lab_wait_ms") || !slices.Contains(cols, "lab_service_scv") {
		t.Errorf("columns %v: want clients first and the varied service's columns", cols)
	}
	if v := knobValue(l, "windows"); v != 3 {
		t.Errorf("windows = %v, want 3", v)
	}
	idx, err := rowIndexes(nil, l, refNode{name: "l", rows: []string{"16", "#1"}})
	if err != nil || !reflect.DeepEqual(idx, []int{2, 0}) {
		t.Errorf("rows [16] and [#1] = %v, %v; want 2 and 0", idx, err)
	}
	if _, err := rowIndexes(nil, l, refNode{name: "l", rows: []string{"8"}}); err == nil || !strings.Contains(err.Error(), "no row with 8 clients: want one of 1, 4, 16") {
		t.Errorf("row [8] = %v, want an error naming the client counts", err)
	}
	one, err := Load(closedWith("closed: 4\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = one.Lessons[0].Block("l")
	if l1 := b.(*Lab); !reflect.DeepEqual(l1.Clients, []int{4}) || l1.Columns()[0] == "clients" || l1.Varied() {
		t.Errorf("closed: 4 gives clients %v and columns %v: want [4], no clients column, not varied", l1.Clients, l1.Columns())
	}
	constant, err := Load(closedWith("closed: 4\ndist: constant\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = constant.Lessons[0].Block("l")
	if l2 := b.(*Lab); l2.Dist != "" || !l2.Varied() || !slices.Contains(l2.Columns(), "lab_wait_ms") {
		t.Errorf("dist: constant gives dist %q, varied %v, columns %v: want \"\" (canonical), the block varied, and the wait's column", l2.Dist, l2.Varied(), l2.Columns())
	}
	for _, tt := range []struct {
		name, extra, want string
	}{
		{"clients and closed", "closed: 4\nclients: [1, 2]\n", `a.md:18: lab "l": clients and closed exclude each other`},
		{"client count out of range", "clients: [1, 0]\n", `a.md:17: lab "l": clients[1] 0 is not allowed: want 1 to 1024 clients`},
		{"too many windows", "clients: [1, 2, 3, 4, 5, 6, 7, 8, 9]\n", `a.md:17: lab "l": clients has 9 entries: want 1 to 8 client counts`},
		{"clients and rates", "clients: [1, 2]\nrates: [10]\n", `rates is not allowed with closed`},
	} {
		if _, err := Load(closedWith(tt.extra)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	base := goodLab
	tcols, rows := []string{"offered", "ok"}, [][]string{{"10", "10"}}
	plain := Fingerprint(&base, tcols, rows, "s")
	if c := canonicalPreset(&base); strings.Contains(c, "dist") || strings.Contains(c, "lock_ms") || strings.Contains(c, "clients") {
		t.Errorf("canonical form %q names settings the preset does not give", c)
	}
	with := base
	with.Clients, with.Dist, with.LockMS, with.CoherencyUS = []int{1, 2}, "exponential", 3, 50
	if c := canonicalPreset(&with); !strings.HasSuffix(c, " clients=1,2 dist=exponential lock_ms=3 coherency_us=50") || Fingerprint(&with, tcols, rows, "s") == plain {
		t.Errorf("canonical form %q: want clients, dist, lock_ms and coherency_us covered", c)
	}
}

// A lab block may fan out (fanout: k) and hedge (hedge: a spec, kept
// canonical), in an open loop without retries; its table adds the
// sub-requests' and copies' columns; the fingerprint covers both; a bad
// value is an error at its line naming what is allowed.
func TestLabFanoutAndHedge(t *testing.T) {
	c, err := Load(labWith("0", "fanout: 10\nhedge: \"percentile = 95\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Lessons[0].Block("l")
	l := b.(*Lab)
	if l.Fanout != 10 || l.Hedge != "percentile=95" {
		t.Errorf("fanout %d hedge %q: want 10 and the spec canonical", l.Fanout, l.Hedge)
	}
	cols := l.Columns()
	for _, want := range []string{"sub_requests", "sub_p99_ms", "over_sub_p99", "hedges", "amplification"} {
		if !slices.Contains(cols, want) {
			t.Errorf("columns %v lack %s", cols, want)
		}
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
		{"fanout out of range", labWith("0", "fanout: 101\n"), `a.md:18: lab "l": fanout 101 is not allowed: want 1 (each arrival one request) to 100`},
		{"fanout closed", closed("fanout: 4\n"), `lab "l": fanout is for an open loop`},
		{"fanout with retry", labWith("0", "retry: retries=1\nfanout: 4\n"), `a.md:19: lab "l": fanout does not go with retry`},
		{"bad hedge", labWith("0", "hedge: percentile=100\n"), `a.md:18: lab "l": hedge`},
		{"hedge closed", closed("hedge: delay_ms=20\n"), `lab "l": hedge is for an open loop`},
	} {
		if _, err := Load(tt.fs); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	with := goodLab
	with.Fanout, with.Hedge = 10, "delay_ms=20"
	if c := canonicalPreset(&with); !strings.HasSuffix(c, " fanout=10 hedge=delay_ms=20") {
		t.Errorf("canonical form %q: want fanout and hedge covered", c)
	}
}
