package labsvc_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"capacitylab/input"
	"capacitylab/internal/physics"
	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
)

func TestControlConfig(t *testing.T) {
	l := labtest.Serve(t, labsvc.DefaultConfig())
	var got labsvc.Config
	if code := doJSON(t, "GET", l.Control+"/config", "", &got); code != 200 || got != labsvc.DefaultConfig() {
		t.Fatalf("GET /config = %d %+v, want the defaults", code, got)
	}
	tests := []struct {
		name      string
		body      string
		status    int
		want      labsvc.Config // config in force afterwards
		errSubstr string        // for 400s, in the one-line error
	}{
		// a partial change touches only the knobs it names
		{"change spin", `{"spin_ms": 5}`, 200, labsvc.Config{Workers: 1, SpinMS: 5, WaitMS: 18, CPUs: 1}, ""},
		// several knobs at once, including a simulated bad release
		{"change all three", `{"spin_ms": 2, "wait_ms": 40, "limit": 10}`, 200, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1}, ""},
		// out of range, validated like start-up: nothing changes
		{"negative spin", `{"spin_ms": -1}`, 400, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1}, "SPIN_MS: -1 is not allowed: want 0 to 1000"},
		// every bad knob is named, in the order of their names, on one line
		{"two bad", `{"limit": "many", "wait_ms": 10001}`, 400, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1},
			`LIMIT: "many" is not allowed: want 0 to 100000; WAIT_MS: 10001 is not allowed: want 0 to 10000`},
		// a fraction is not a whole number of milliseconds
		{"fraction", `{"wait_ms": 2.5}`, 400, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1}, "WAIT_MS: 2.5 is not allowed"},
		// CPUS is fixed for the life of the lab (WORKERS is not:
		// TestWorkersChange)
		{"cpus", `{"cpus": 2}`, 400, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1}, "CPUS cannot change while the lab runs"},
		// the stall knobs change like the others, and are checked like them
		{"bad stall", `{"stall_every": 5, "stall_ms": 10001}`, 400, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1}, "STALL_MS: 10001 is not allowed: want 0 to 10000"},
		{"stall", `{"stall_every": 5, "stall_ms": 100}`, 200, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1, StallEvery: 5, StallMS: 100}, ""},
		{"stall off", `{"stall_every": 0, "stall_ms": 0}`, 200, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1}, ""},
		// the contention knobs change like the others, and are checked like them
		{"bad contention", `{"lock_ms": 1001, "coherency_us": -5}`, 400, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1},
			"COHERENCY_US: -5 is not allowed: want 0 to 100000; LOCK_MS: 1001 is not allowed: want 0 to 1000"},
		{"lock as a string", `{"lock_ms": "5"}`, 400, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1},
			`LOCK_MS: "5" is not allowed: want 0 to 1000`},
		{"contention", `{"lock_ms": 5, "coherency_us": 100}`, 200, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1, LockMS: 5, CoherencyUS: 100}, ""},
		{"contention off", `{"lock_ms": 0, "coherency_us": 0}`, 200, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1}, ""},
		// another policy needs LIMIT 0: its bounds are its own parameters
		{"policy with limit", `{"policy": "inflight,quota=2"}`, 400, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1},
			"LIMIT: 10 is not allowed: want 0 with POLICY=inflight"},
		// the policy, as POLICY spells it, in a JSON string; kept canonical
		{"policy", `{"policy": "inflight, quota=2", "limit": 0}`, 200, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, CPUs: 1, Policy: "inflight,quota=2"}, ""},
		{"bad policy", `{"policy": "aimd,backoff=2"}`, 400, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, CPUs: 1, Policy: "inflight,quota=2"},
			"POLICY: aimd,backoff=2 is not allowed: want backoff from 0.5 to 0.99"},
		{"unknown policy", `{"policy": "lifo"}`, 400, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, CPUs: 1, Policy: "inflight,quota=2"},
			"POLICY: lifo is not allowed: want queue, inflight, aimd, gradient or sojourn"},
		{"policy not a string", `{"policy": 5}`, 400, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, CPUs: 1, Policy: "inflight,quota=2"},
			"POLICY: 5 is not allowed: want a JSON string"},
		{"policy back", `{"policy": "queue", "limit": 10}`, 200, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1}, ""},
		// a misspelt knob is named
		{"unknown", `{"spin": 4}`, 400, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1}, `unknown knob "spin"`},
		// not JSON at all
		{"not json", `spin_ms=4`, 400, labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 40, Limit: 10, CPUs: 1}, "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.status == 200 {
				var c labsvc.Config
				if code := doJSON(t, "POST", l.Control+"/config", tc.body, &c); code != 200 || c != tc.want {
					t.Errorf("POST /config %s = %d %+v, want 200 %+v", tc.body, code, c, tc.want)
				}
			} else {
				var ce labsvc.ControlError
				code := doJSON(t, "POST", l.Control+"/config", tc.body, &ce)
				if code != tc.status || !strings.Contains(ce.Error, tc.errSubstr) || strings.Contains(ce.Error, "\n") {
					t.Errorf("POST /config %s = %d %q, want %d with %q on one line", tc.body, code, ce.Error, tc.status, tc.errSubstr)
				}
				// A bad knob's value is named in errors too, by the
				// knob's environment variable, and the line is the
				// same problems.
				if strings.Contains(tc.errSubstr, " is not allowed") && (len(ce.Errors) == 0 || ce.Errors.Error() != ce.Error) {
					t.Errorf("POST /config %s: errors %v, want the knobs of %q", tc.body, ce.Errors, ce.Error)
				}
			}
			if got := l.Server.Config(); got != tc.want {
				t.Errorf("config in force %+v, want %+v", got, tc.want)
			}
		})
	}
	// Each change takes effect on the next request (one worker throughout).
	effects := []struct {
		name  string
		patch string
		calls int // callers at once
		check func(t *testing.T, replies []reply, st labsvc.Stats)
	}{
		// WAIT_MS and SPIN_MS to 0: a 200 with no spin, and (a physics
		// check, as a busy machine can stall any answer) a fast one
		{"no work", `{"wait_ms": 0, "spin_ms": 0, "limit": 0}`, 1, func(t *testing.T, rs []reply, st labsvc.Stats) {
			if rs[0].status != 200 || st.SpinCPUMS != 0 {
				t.Errorf("reply %+v, spin_cpu_ms %.3f; want a 200 with no spin", rs[0], st.SpinCPUMS)
			}
			t.Run("fast", func(t *testing.T) {
				physics.Require(t)
				if rs[0].serviceMS > 10 {
					t.Errorf("service %.3f ms with no work, want at most 10", rs[0].serviceMS)
				}
			})
		}},
		// a bad release: SPIN_MS=30 costs 30 ms of processor per request
		// (at most 35, a physics check: a thread's clock is charged for
		// the interrupts handled while it runs)
		{"slow release", `{"spin_ms": 30}`, 1, func(t *testing.T, rs []reply, st labsvc.Stats) {
			if rs[0].status != 200 || rs[0].serviceMS < 30 || st.SpinCPUMS < 30 {
				t.Errorf("reply %+v, spin_cpu_ms %.3f; want a 200 after 30 ms of processor", rs[0], st.SpinCPUMS)
			}
			t.Run("near 30 ms of processor", func(t *testing.T) {
				physics.Require(t)
				if st.SpinCPUMS > 35 {
					t.Errorf("spin_cpu_ms %.3f for SPIN_MS=30, want at most 35", st.SpinCPUMS)
				}
			})
		}},
		// LIMIT=1 while running: of three callers at once one is served at
		// once, one queues and one is refused. (If the worker has not yet
		// come back from the previous case's answer, which the stats no
		// longer count as in service, the first queues and two are refused:
		// the limit has taken effect either way.)
		{"limit", `{"spin_ms": 0, "wait_ms": 300, "limit": 1}`, 3, func(t *testing.T, rs []reply, st labsvc.Stats) {
			codes := map[int]int{}
			for _, r := range rs {
				codes[r.status]++
			}
			if codes[503] < 1 || codes[200] < 1 || codes[200]+codes[503] != 3 || st.Refused != int64(codes[503]) || st.QueuedMax != 1 {
				t.Errorf("statuses %v, stats refused %d queued_max %d; want 200s and 503s, one queued at most", codes, st.Refused, st.QueuedMax)
			}
		}},
		// LIMIT back to 0: nobody is refused, two or three queue
		{"no limit", `{"wait_ms": 200, "limit": 0}`, 3, func(t *testing.T, rs []reply, st labsvc.Stats) {
			for _, r := range rs {
				if r.status != 200 {
					t.Errorf("status %d with LIMIT=0, want every caller served", r.status)
				}
			}
			if st.QueuedMax < 2 || st.Refused != 0 {
				t.Errorf("queued_max %d refused %d, want at least 2 queued behind the one worker and none refused", st.QueuedMax, st.Refused)
			}
		}},
	}
	for _, tc := range effects {
		t.Run("effect/"+tc.name, func(t *testing.T) {
			if code := doJSON(t, "POST", l.Control+"/config", tc.patch, nil); code != 200 {
				t.Fatalf("POST /config %s = %d", tc.patch, code)
			}
			doJSON(t, "POST", l.Control+"/reset", "", nil)
			replies := make([]reply, tc.calls)
			var wg sync.WaitGroup
			for i := range replies {
				wg.Go(func() {
					r, err := call(l.Addr, 5*time.Second)
					if err != nil {
						t.Error(err)
					}
					replies[i] = r
				})
			}
			wg.Wait()
			tc.check(t, replies, quiet(t, l.Control, 2*time.Second))
		})
	}
}

func TestControlStatsResetMetrics(t *testing.T) {
	l := labtest.Serve(t, cfg(1, 0, 0, 0))
	for range 3 {
		if _, err := call(l.Addr, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if st := stats(t, l.Control); st.Done != 3 || st.ServiceMS.N != 3 || st.QueueWaitMS.N != 3 {
		t.Errorf("stats after 3 requests: %+v", st)
	}
	var closed, fresh labsvc.Stats
	doJSON(t, "POST", l.Control+"/reset", "", &closed)
	fresh = stats(t, l.Control)
	if closed.Done != 3 || fresh.Done != 0 || fresh.Accepted != 0 || fresh.ServiceMS.N != 0 || !fresh.Since.After(closed.Since) {
		t.Errorf("reset returned %+v and left %+v, want the closed window of 3 and an empty new one", closed, fresh)
	}
	resp, err := controlClient.Get(l.Control + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// Prometheus counters are cumulative: the reset does not touch them.
	for _, want := range []string{"lab_done_total 3", "lab_accepted_total 3", "lab_service_seconds_count 3", `lab_bad_total{reason="timeout"} 0`, "lab_workers 1"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("GET /metrics lacks %q", want)
		}
	}
	// The control API is never queued behind the workers.
	slow := labtest.Serve(t, cfg(1, 0, 2000, 0))
	go func() { _, _ = call(slow.Addr, 5*time.Second) }()
	// Once the worker holds the request (read off the server itself, not
	// through the control API under test).
	for deadline := time.Now().Add(5 * time.Second); slow.Server.Stats().InService != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow request never reached the worker")
		}
	}
	start := time.Now()
	st := stats(t, slow.Control)
	if el := time.Since(start); el > time.Second || st.InService != 1 {
		t.Errorf("GET /stats took %v with a worker busy (in_service=%d), want an immediate answer", el, st.InService)
	}
	// Wrong method: the mux says which are allowed.
	resp, err = controlClient.Post(l.Control+"/stats", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /stats = %d, want 405", resp.StatusCode)
	}
}

func TestServeRejectsBadConfig(t *testing.T) {
	// Serve reports an invalid config (NewServer cannot fail).
	srv := labsvc.NewServer(labsvc.Config{Workers: 0, CPUs: 1}, nil)
	a, _ := netListen(t)
	b, _ := netListen(t)
	err := srv.Serve(t.Context(), a, b)
	var fe input.FieldErrors
	if !errors.As(err, &fe) || fe["WORKERS"] == "" {
		t.Errorf("Serve with WORKERS=0 = %v, want FieldErrors naming WORKERS", err)
	}
}

// Config.Set changes a knob as POST /config does: for every knob in
// ChangeableKnobs the lab takes the change and reports the config Set
// gives; the knobs fixed for the life of the lab, or that do not exist,
// are refused by both.
func TestConfigSetAgreesWithTheLab(t *testing.T) {
	l := labtest.Serve(t, labsvc.DefaultConfig())
	values := map[string]string{"WORKERS": "3", "SPIN_MS": "3", "WAIT_MS": "40", "LIMIT": "0", "STALL_EVERY": "7", "STALL_MS": "9", "BACKLOG": "64", "POLICY": "aimd,backoff=0.5", "DIST": "bimodal,p=0.1,x=10", "LOCK_MS": "5", "COHERENCY_US": "100"}
	want := labsvc.DefaultConfig()
	for knob := range strings.SplitSeq(labsvc.ChangeableKnobs, ", ") {
		v, ok := values[knob]
		if !ok {
			t.Fatalf("%s is changeable but has no test value", knob)
		}
		next, err := want.Set(knob, v)
		if err != nil {
			t.Fatalf("Set(%s, %s): %v", knob, v, err)
		}
		want = next
		body := `{"` + strings.ToLower(knob) + `": ` + v + `}`
		if knob == "POLICY" || knob == "DIST" {
			body = `{"` + strings.ToLower(knob) + `": "` + v + `"}`
		}
		var got labsvc.Config
		if code := doJSON(t, "POST", l.Control+"/config", body, &got); code != 200 || got != want {
			t.Errorf("POST /config %s = %d %+v; Set gives %+v", body, code, got, want)
		}
	}
	for _, knob := range []string{"CPUS", "ACCEPT", "SPEED"} {
		if _, err := want.Set(knob, "2"); err == nil {
			t.Errorf("Set(%s) succeeded, want it refused", knob)
		}
		if code := doJSON(t, "POST", l.Control+"/config", `{"`+strings.ToLower(knob)+`": 2}`, nil); code != 400 {
			t.Errorf("POST /config %s = %d, want 400", knob, code)
		}
	}
	if _, err := want.Set("WAIT_MS", "10001"); err == nil || err.Error() != "WAIT_MS: 10001 is not allowed: want 0 to 10000" {
		t.Errorf("Set(WAIT_MS, 10001) = %v", err)
	}
	if _, err := want.Set("LOCK_MS", "1001"); err == nil || err.Error() != "LOCK_MS: 1001 is not allowed: want 0 to 1000" {
		t.Errorf("Set(LOCK_MS, 1001) = %v", err)
	}
	if _, err := want.Set("COHERENCY_US", "lots"); err == nil || err.Error() != "COHERENCY_US: lots is not allowed: want 0 to 100000" {
		t.Errorf("Set(COHERENCY_US, lots) = %v", err)
	}
}
