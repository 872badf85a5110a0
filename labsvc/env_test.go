package labsvc_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	"capacitylab/input"
	"capacitylab/labsvc"
)

func netListen(t *testing.T) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln, ln.Addr().String()
}

func TestParseSettings(t *testing.T) {
	def := labsvc.DefaultConfig()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    labsvc.Settings
		wantErr string // exact one-line message, or "" for success
		usage   bool   // the error is a usage error (ErrUsage)
	}{
		// nothing given: the lessons' defaults on loopback
		{"defaults", nil, nil, labsvc.Settings{Config: def, Addr: "127.0.0.1:8000", Control: "127.0.0.1:8001"}, "", false},
		// the environment sets knobs and addresses
		{"env", nil, map[string]string{"WORKERS": "16", "SPIN_MS": "0", "LIMIT": "5", "CPUS": "2", "ADDR": "0.0.0.0:9000"},
			labsvc.Settings{Config: labsvc.Config{Workers: 16, SpinMS: 0, WaitMS: 18, Limit: 5, CPUs: 2}, Addr: "0.0.0.0:9000", Control: "127.0.0.1:8001"}, "", false},
		// the lab's control address is CONTROL_ADDR; CONTROL (cmd/load's URL of it) is not read
		{"control addr", nil, map[string]string{"CONTROL_ADDR": "127.0.0.1:9001", "CONTROL": "http://127.0.0.1:8001"},
			labsvc.Settings{Config: def, Addr: "127.0.0.1:8000", Control: "127.0.0.1:9001"}, "", false},
		// a flag wins over its environment variable
		{"flag wins", []string{"--workers=3", "-wait-ms", "0", "--control", "127.0.0.1:0"}, map[string]string{"WORKERS": "16"},
			labsvc.Settings{Config: labsvc.Config{Workers: 3, SpinMS: 2, WaitMS: 0, CPUs: 1}, Addr: "127.0.0.1:8000", Control: "127.0.0.1:0"}, "", false},
		// not a number
		{"non-numeric env", nil, map[string]string{"SPIN_MS": "two"}, labsvc.Settings{}, "SPIN_MS: two is not allowed: want 0 to 1000", false},
		// a flag's bad value is named by its variable too
		{"non-numeric flag", []string{"--limit=lots"}, nil, labsvc.Settings{}, "LIMIT: lots is not allowed: want 0 to 100000", false},
		// no workers at all
		{"zero workers", nil, map[string]string{"WORKERS": "0"}, labsvc.Settings{}, "WORKERS: 0 is not allowed: want 1 to 1024", false},
		// negative
		{"negative wait", []string{"--wait-ms=-5"}, nil, labsvc.Settings{}, "WAIT_MS: -5 is not allowed: want 0 to 10000", false},
		// beyond the sandbox caps
		{"too many workers", nil, map[string]string{"WORKERS": "5000"}, labsvc.Settings{}, "WORKERS: 5000 is not allowed: want 1 to 1024", false},
		// every bad knob on one line, in knob order
		{"two bad", nil, map[string]string{"CPUS": "0", "WORKERS": "x"}, labsvc.Settings{},
			"CPUS: 0 is not allowed: want 1 to 64; WORKERS: x is not allowed: want 1 to 1024", false},
		// a flag given empty (--workers=$UNSET) is a mistake, not the default
		{"empty flag", []string{"--workers="}, map[string]string{"WORKERS": "4"}, labsvc.Settings{}, "WORKERS: an empty value is not allowed: want 1 to 1024", false},
		// an empty environment variable is unset
		{"empty env", nil, map[string]string{"WORKERS": " "}, labsvc.Settings{Config: def, Addr: "127.0.0.1:8000", Control: "127.0.0.1:8001"}, "", false},
		// the stall knobs, from the environment and a flag
		{"stall", []string{"--stall-ms=500"}, map[string]string{"STALL_EVERY": "200"},
			labsvc.Settings{Config: labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1, StallEvery: 200, StallMS: 500}, Addr: "127.0.0.1:8000", Control: "127.0.0.1:8001"}, "", false},
		// a stall longer than the cap, and a negative period
		{"bad stall", []string{"--stall-every=-1"}, map[string]string{"STALL_MS": "20000"}, labsvc.Settings{},
			"STALL_EVERY: -1 is not allowed: want 0 to 1000000; STALL_MS: 20000 is not allowed: want 0 to 10000", false},
		// the contention knobs, from the environment and a flag
		{"contention", []string{"--coherency-us=100"}, map[string]string{"LOCK_MS": "5", "WORKERS": "16"},
			labsvc.Settings{Config: labsvc.Config{Workers: 16, SpinMS: 2, WaitMS: 18, CPUs: 1, LockMS: 5, CoherencyUS: 100}, Addr: "127.0.0.1:8000", Control: "127.0.0.1:8001"}, "", false},
		// each named with its range: a lock held past a second, a negative coherency, a fraction
		{"bad contention", []string{"--lock-ms=1001"}, map[string]string{"COHERENCY_US": "-1"}, labsvc.Settings{},
			"COHERENCY_US: -1 is not allowed: want 0 to 100000; LOCK_MS: 1001 is not allowed: want 0 to 1000", false},
		{"coherency too big", nil, map[string]string{"COHERENCY_US": "100001", "LOCK_MS": "0.5"}, labsvc.Settings{},
			"COHERENCY_US: 100001 is not allowed: want 0 to 100000; LOCK_MS: 0.5 is not allowed: want 0 to 1000", false},
		// workers that accept for themselves, with a small backlog
		{"accept workers", []string{"--backlog=64"}, map[string]string{"ACCEPT": "workers", "WORKERS": "64"},
			labsvc.Settings{Config: labsvc.Config{Workers: 64, SpinMS: 2, WaitMS: 18, CPUs: 1, Backlog: 64, Accept: labsvc.AcceptWorkers}, Addr: "127.0.0.1:8000", Control: "127.0.0.1:8001"}, "", false},
		// ACCEPT=door is the default, spelt out
		{"accept door", []string{"--accept", "door"}, map[string]string{"ACCEPT": "workers"}, labsvc.Settings{Config: def, Addr: "127.0.0.1:8000", Control: "127.0.0.1:8001"}, "", false},
		// only two doors exist
		{"unknown accept", nil, map[string]string{"ACCEPT": "kernel"}, labsvc.Settings{}, "ACCEPT: kernel is not allowed: want door or workers", false},
		// the kernel's backlog is at most 65535
		{"backlog too big", []string{"--backlog=70000"}, nil, labsvc.Settings{}, "BACKLOG: 70000 is not allowed: want 0 to 65535", false},
		// workers that accept for themselves keep no queue, so LIMIT cannot bound one
		{"limit with workers accepting", nil, map[string]string{"ACCEPT": "workers", "LIMIT": "10"}, labsvc.Settings{},
			"LIMIT: 10 is not allowed: want 0 with ACCEPT=workers (the workers take callers straight from the kernel's accept queue; BACKLOG bounds that)", false},
		// an admission policy from the environment, and from a flag (written canonically)
		{"policy env", nil, map[string]string{"POLICY": "inflight,quota=5", "WORKERS": "4"},
			labsvc.Settings{Config: labsvc.Config{Workers: 4, SpinMS: 2, WaitMS: 18, CPUs: 1, Policy: "inflight,quota=5"}, Addr: "127.0.0.1:8000", Control: "127.0.0.1:8001"}, "", false},
		{"policy flag", []string{"--policy", "aimd, backoff=0.50"}, map[string]string{"POLICY": "fifo"},
			labsvc.Settings{Config: labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1, Policy: "aimd,backoff=0.5"}, Addr: "127.0.0.1:8000", Control: "127.0.0.1:8001"}, "", false},
		// POLICY=queue is the default, spelt out
		{"policy queue", nil, map[string]string{"POLICY": "queue", "LIMIT": "4"},
			labsvc.Settings{Config: labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, Limit: 4, CPUs: 1}, Addr: "127.0.0.1:8000", Control: "127.0.0.1:8001"}, "", false},
		// an unknown policy lists those there are
		{"unknown policy", nil, map[string]string{"POLICY": "fifo"}, labsvc.Settings{},
			"POLICY: fifo is not allowed: want queue, inflight, aimd, gradient or sojourn, then the policy's parameters as name=value, separated by commas (inflight,quota=5)", false},
		// a parameter out of range names it, its range and what it means
		{"policy parameter", []string{"--policy=aimd,backoff=2"}, nil, labsvc.Settings{},
			"POLICY: aimd,backoff=2 is not allowed: want backoff from 0.5 to 0.99: the fraction of the limit an overload signal leaves", false},
		// a policy's flag given empty is a mistake
		{"empty policy flag", []string{"--policy="}, nil, labsvc.Settings{},
			"POLICY: an empty value is not allowed: want queue, inflight, aimd, gradient or sojourn, then the policy's parameters as name=value, separated by commas (inflight,quota=5)", false},
		// LIMIT is the queue policy's: another policy's bounds are in POLICY
		{"limit with policy", nil, map[string]string{"POLICY": "inflight,quota=5", "LIMIT": "3"}, labsvc.Settings{},
			"LIMIT: 3 is not allowed: want 0 with POLICY=inflight (LIMIT bounds the queue policy's waiting callers; inflight's own parameters are in POLICY)", false},
		// with workers accepting for themselves there is no door for a policy
		{"policy with workers accepting", nil, map[string]string{"POLICY": "sojourn", "ACCEPT": "workers"}, labsvc.Settings{},
			"POLICY: sojourn is not allowed: want queue with ACCEPT=workers (the workers take callers straight from the kernel's accept queue: there is no door to admit or refuse them at; BACKLOG bounds that queue)", false},
		// a misspelt flag: the message lists the flags there are
		{"unknown flag", []string{"--worker=2"}, nil, labsvc.Settings{}, "usage: flag provided but not defined: -worker; want only the flags --accept, --addr, --backlog, --coherency-us, --control, --cpus, --dist, --limit, --lock-ms, --policy, --spin-ms, --stall-every, --stall-ms, --wait-ms, --workers (-h explains them)", true},
		// a stray argument
		{"stray arg", []string{"serve"}, nil, labsvc.Settings{}, `usage: unexpected argument "serve"; want only the flags --accept, --addr, --backlog, --coherency-us, --control, --cpus, --dist, --limit, --lock-ms, --policy, --spin-ms, --stall-every, --stall-ms, --wait-ms, --workers (-h explains them)`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			got, err := labsvc.ParseSettings("lab", tc.args, getenv, nil)
			if tc.wantErr == "" {
				if err != nil || got != tc.want {
					t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			var fe input.FieldErrors
			if tc.usage != errors.Is(err, labsvc.ErrUsage) || tc.usage == errors.As(err, &fe) {
				t.Errorf("error %v: usage=%v, want usage=%v (and FieldErrors otherwise)", err, errors.Is(err, labsvc.ErrUsage), tc.usage)
			}
		})
	}
}

func TestConfigArgsRoundTrip(t *testing.T) {
	// What StartChild passes a child is read back as the same knobs.
	for _, c := range []labsvc.Config{
		{Workers: 7, SpinMS: 3, WaitMS: 0, Limit: 12, CPUs: 2},
		{Workers: 64, SpinMS: 2, WaitMS: 0, CPUs: 1, Backlog: 128, Accept: labsvc.AcceptWorkers},
		{Workers: 8, SpinMS: 2, WaitMS: 18, CPUs: 1, Policy: "gradient,tolerance=2,long=100"},
	} {
		got, err := labsvc.ParseConfig(c.Args(), func(k string) string {
			if k == "ACCEPT" {
				return "neither"
			}
			return "999"
		})
		if err != nil || got != c {
			t.Errorf("ParseConfig(%q) = %+v, %v; want %+v", c.Args(), got, err, c)
		}
	}
	// The knobs a lesson sets only now and then are written out only when set.
	c := labsvc.Config{Workers: 7, SpinMS: 3, WaitMS: 0, Limit: 12, CPUs: 2}
	if s := c.String(); s != "WORKERS=7 SPIN_MS=3 WAIT_MS=0 LIMIT=12 CPUS=2" || strings.Contains(s, "\n") {
		t.Errorf("String() = %q", s)
	}
	w := labsvc.Config{Workers: 64, SpinMS: 2, WaitMS: 0, CPUs: 1, Backlog: 128, Accept: labsvc.AcceptWorkers}
	if s := w.String(); s != "WORKERS=64 SPIN_MS=2 WAIT_MS=0 LIMIT=0 CPUS=1 BACKLOG=128 ACCEPT=workers" {
		t.Errorf("String() = %q", s)
	}
	p := labsvc.Config{Workers: 64, SpinMS: 2, WaitMS: 18, CPUs: 1, Policy: "inflight,quota=10"}
	if s := p.String(); s != "WORKERS=64 SPIN_MS=2 WAIT_MS=18 LIMIT=0 CPUS=1 POLICY=inflight,quota=10" {
		t.Errorf("String() = %q", s)
	}
	// So do the contention knobs, written out when set.
	k := labsvc.Config{Workers: 64, SpinMS: 1, WaitMS: 9, CPUs: 1, LockMS: 5, CoherencyUS: 100}
	if got, err := labsvc.ParseConfig(k.Args(), func(string) string { return "999" }); err != nil || got != k {
		t.Errorf("ParseConfig(%q) = %+v, %v; want %+v", k.Args(), got, err, k)
	}
	if s := k.String(); s != "WORKERS=64 SPIN_MS=1 WAIT_MS=9 LIMIT=0 CPUS=1 LOCK_MS=5 COHERENCY_US=100" {
		t.Errorf("String() = %q", s)
	}
	k.LockMS = 0
	if s := k.String(); s != "WORKERS=64 SPIN_MS=1 WAIT_MS=9 LIMIT=0 CPUS=1 COHERENCY_US=100" {
		t.Errorf("String() = %q", s)
	}
	// With a stall the stall knobs travel too, and are written out.
	c.StallEvery, c.StallMS = 200, 500
	got, err := labsvc.ParseConfig(c.Args(), func(string) string { return "999" })
	if err != nil || got != c {
		t.Errorf("ParseConfig(%q) = %+v, %v; want %+v", c.Args(), got, err, c)
	}
	if s := c.String(); s != "WORKERS=7 SPIN_MS=3 WAIT_MS=0 LIMIT=12 CPUS=2 STALL_EVERY=200 STALL_MS=500" {
		t.Errorf("String() = %q", s)
	}
}
