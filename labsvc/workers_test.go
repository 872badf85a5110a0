package labsvc_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"capacitylab/input"
	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
	"capacitylab/result"
)

// callers sends n callers at once in the background; wait returns their
// replies, failing the test on any connection error.
func callers(t *testing.T, addr string, n int) (wait func() []reply) {
	t.Helper()
	replies := make([]reply, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := call(addr, 10*time.Second)
			if err != nil {
				t.Errorf("caller %d: %v", i, err)
			}
			replies[i] = r
		})
	}
	return func() []reply {
		wg.Wait()
		return replies
	}
}

// until polls the lab's own stats (not the control API under test) until
// ok says they are as wanted, and returns them, or fails after 5 s.
func until(t *testing.T, l labtest.Lab, what string, ok func(labsvc.Stats) bool) labsvc.Stats {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		st := l.Server.Stats()
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lab never had %s: %+v", what, st)
		}
	}
}

// setWorkers posts {"workers": n} and checks the lab took it.
func setWorkers(t *testing.T, l labtest.Lab, n int) {
	t.Helper()
	var got labsvc.ConfigReply
	body := `{"workers": ` + strconv.Itoa(n) + `}`
	if code := doJSON(t, "POST", l.Control+"/config", body, &got); code != 200 || got.Workers != n {
		t.Fatalf("POST /config %s = %d %+v", body, code, got)
	}
}

// allOK checks that every caller was answered 200.
func allOK(t *testing.T, what string, replies []reply) {
	t.Helper()
	for i, r := range replies {
		if r.status != 200 {
			t.Errorf("%s: caller %d got %d, want every admitted request served", what, i, r.status)
		}
	}
}

// WORKERS changes while the lab runs (POST /config): more workers start
// at once and take the queued callers then and there; with fewer, the
// busy workers finish the request they hold (none is abandoned) and the
// surplus stop, free ones at once; GET /stats, GET /config, the queue
// policy's limit (WORKERS + LIMIT) and lab_workers follow, and a reset
// keeps the count in force. WAIT_MS 500, so that the checks made right
// after a change come long before any request ends; if the machine
// stalled the test that long, it skips saying so.
func TestWorkersChange(t *testing.T) {
	const wait = 500
	l := labtest.Serve(t, cfg(2, 0, wait, 20))
	// snapshot reads GET /stats right after a change; a request done by
	// then means the machine stalled the test for WAIT_MS.
	snapshot := func(t *testing.T, since time.Time) labsvc.Stats {
		t.Helper()
		st := stats(t, l.Control)
		if st.Done > 0 {
			t.Skipf("a request ended %v after the burst began, before the check right after the change could read the lab: the machine stalled the test for WAIT_MS (%d ms)", time.Since(since), wait)
		}
		return st
	}

	t.Run("grow", func(t *testing.T) {
		doJSON(t, "POST", l.Control+"/reset", "", nil)
		began := time.Now()
		done := callers(t, l.Addr, 10)
		until(t, l, "2 in service and 8 queued", func(st labsvc.Stats) bool { return st.InService == 2 && st.Queued == 8 })
		setWorkers(t, l, 8)
		// The six new workers took six of the queued callers at once.
		if st := snapshot(t, began); st.Workers != 8 || st.InService != 8 || st.Queued != 2 || st.PolicyLimit != 28 {
			t.Errorf("right after WORKERS 2 → 8: workers %d, in service %d, queued %d, policy_limit %d; want 8, 8, 2 and 8 + LIMIT 20",
				st.Workers, st.InService, st.Queued, st.PolicyLimit)
		}
		replies := done()
		allOK(t, "WORKERS 2 → 8", replies)
		// Of the eight queued, six waited only for the change, two for a
		// worker to finish (about WAIT_MS).
		short := 0
		for _, r := range replies {
			if r.queueWait < wait/2 {
				short++
			}
		}
		if short != 8 {
			t.Errorf("%d callers waited less than %d ms for a worker, want 8: 2 handed a worker at once, 6 taken by the new workers", short, wait/2)
		}
		if st := quiet(t, l.Control, 5*time.Second); st.Done != 10 || st.Unaccounted() != 0 {
			t.Errorf("after the burst: done %d, unaccounted %d; want 10 and 0", st.Done, st.Unaccounted())
		}
	})

	t.Run("shrink", func(t *testing.T) {
		doJSON(t, "POST", l.Control+"/reset", "", nil)
		began := time.Now()
		done := callers(t, l.Addr, 10)
		until(t, l, "8 in service and 2 queued", func(st labsvc.Stats) bool { return st.InService == 8 && st.Queued == 2 })
		setWorkers(t, l, 2)
		// Every busy worker keeps its request: none is abandoned.
		if st := snapshot(t, began); st.Workers != 2 || st.InService != 8 || st.Queued != 2 || st.PolicyLimit != 22 {
			t.Errorf("right after WORKERS 8 → 2: workers %d, in service %d, queued %d, policy_limit %d; want 2, still 8, 2 and 2 + LIMIT 20",
				st.Workers, st.InService, st.Queued, st.PolicyLimit)
		}
		// Back up to 4 before the busy ones finish: two of the six that
		// were to stop go on.
		setWorkers(t, l, 4)
		allOK(t, "WORKERS 8 → 2 → 4", done())
		if st := quiet(t, l.Control, 5*time.Second); st.Done != 10 || st.Unaccounted() != 0 || st.Bad != 0 {
			t.Errorf("after WORKERS 8 → 2 → 4: done %d, bad %d, unaccounted %d; want all 10 served", st.Done, st.Bad, st.Unaccounted())
		}
		// Four workers now serve at once, the rest wait (WAIT_MS 250
		// from here on: the checks read the lab the moment the last
		// caller is in).
		if code := doJSON(t, "POST", l.Control+"/config", `{"wait_ms": 250}`, nil); code != 200 {
			t.Fatalf("POST /config wait_ms = %d", code)
		}
		inAt := func(n, workers int) {
			t.Helper()
			doJSON(t, "POST", l.Control+"/reset", "", nil)
			began := time.Now()
			done := callers(t, l.Addr, n)
			st := until(t, l, strconv.Itoa(n)+" callers in", func(st labsvc.Stats) bool { return st.Accepted == int64(n) })
			if st.Done > 0 {
				t.Skipf("a request ended %v after the burst began, before all %d callers were in: the machine stalled the test for WAIT_MS (250 ms)", time.Since(began), n)
			}
			if st.InService != workers || st.Queued != n-workers {
				t.Errorf("%d callers with WORKERS %d: %d in service, %d queued; want %d and %d", n, workers, st.InService, st.Queued, workers, n-workers)
			}
			allOK(t, "WORKERS "+strconv.Itoa(workers), done())
			quiet(t, l.Control, 5*time.Second)
		}
		inAt(6, 4)
		// Down to 2 with every worker free: two stop at once.
		setWorkers(t, l, 2)
		inAt(4, 2)
	})

	// A reset keeps the workers in force, and the queue policy's limit
	// counts them; GET /config and lab_workers say so too.
	var reset labsvc.Stats
	doJSON(t, "POST", l.Control+"/reset", "", &reset)
	var c labsvc.ConfigReply
	doJSON(t, "GET", l.Control+"/config", "", &c)
	if st := stats(t, l.Control); st.Workers != 2 || st.PolicyLimit != 22 || c.Workers != 2 || metric(t, l.Control, "lab_workers") != 2 {
		t.Errorf("after a reset: stats workers %d policy_limit %d, config workers %d, lab_workers %v; want 2, 22, 2, 2",
			st.Workers, st.PolicyLimit, c.Workers, metric(t, l.Control, "lab_workers"))
	}
}

// New workers ask the policy as any worker taking from the queue does:
// with POLICY=sojourn,timeout_ms=250 and one worker serving 200 ms, two
// callers that waited 100 ms when WORKERS goes from 1 to 3 could no
// longer be answered in time, so the new workers drop them and they are
// refused with the door's 503 (counted in refused and dropped), and
// nothing is lost.
func TestWorkersAddedAskThePolicy(t *testing.T) {
	l := labtest.Serve(t, labsvc.Config{Workers: 1, WaitMS: 200, CPUs: 1, Policy: "sojourn,timeout_ms=250"})
	// One served request teaches the policy the service time (a reset
	// would make it forget).
	if r, err := call(l.Addr, 5*time.Second); err != nil || r.status != 200 {
		t.Fatalf("first request: %+v %v", r, err)
	}
	quiet(t, l.Control, 5*time.Second)
	began := time.Now()
	done := callers(t, l.Addr, 3)
	until(t, l, "1 in service and 2 queued", func(st labsvc.Stats) bool { return st.InService == 1 && st.Queued == 2 })
	time.Sleep(100 * time.Millisecond)
	setWorkers(t, l, 3)
	if st := stats(t, l.Control); st.Done > 1 {
		t.Skipf("the first request of the three ended %v after the burst began, before the change was read: the machine stalled the test for WAIT_MS (200 ms)", time.Since(began))
	} else if st.Dropped != 2 || st.Queued != 0 || st.InService != 1 {
		t.Errorf("right after WORKERS 1 → 3: dropped %d, queued %d, in service %d; want the 2 queued dropped by the new workers, 1 in service", st.Dropped, st.Queued, st.InService)
	}
	ok, refused := tally(t, done())
	if ok != 1 || refused != 2 {
		t.Errorf("%d ok, %d refused; want 1 and 2", ok, refused)
	}
	if st := quiet(t, l.Control, 5*time.Second); st.Refused != 2 || st.Unaccounted() != 0 || metric(t, l.Control, "lab_refused_total") != 2 {
		t.Errorf("refused %d, unaccounted %d, lab_refused_total %v; want 2, 0 and 2", st.Refused, st.Unaccounted(), metric(t, l.Control, "lab_refused_total"))
	}
}

// WORKERS is refused, naming it and what is allowed, when out of range or
// not a whole number, and with ACCEPT=workers whatever the value (but
// the one in force), by POST /config, Config.Set and CheckChanges alike;
// nothing changes.
func TestWorkersChangeRefused(t *testing.T) {
	door := labtest.Serve(t, cfg(2, 0, 10, 0))
	accepting := labsvc.Config{Workers: 2, WaitMS: 10, CPUs: 1, Accept: labsvc.AcceptWorkers}
	workers := labtest.Serve(t, accepting)
	const fixed = "want 2, as the lab started, with ACCEPT=workers (a free worker waits in the kernel's accept queue itself and cannot be stopped there without taking one more caller): WORKERS changes while the lab runs only with ACCEPT=door"
	for _, tt := range []struct {
		name  string
		lab   labtest.Lab
		cfg   labsvc.Config
		value string
		want  string // what WORKERS is told
	}{
		// none: a lab needs a worker
		{"zero", door, cfg(2, 0, 10, 0), "0", "0 is not allowed: want 1 to 1024"},
		// past the sandbox's cap
		{"too many", door, cfg(2, 0, 10, 0), "1025", "1025 is not allowed: want 1 to 1024"},
		// each worker accepts from the kernel's queue itself
		{"accept workers", workers, accepting, "4", "4 is not allowed: " + fixed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ce labsvc.ControlError
			if code := doJSON(t, "POST", tt.lab.Control+"/config", `{"workers": `+tt.value+`}`, &ce); code != 400 || ce.Errors["WORKERS"] != tt.want || ce.Error != "WORKERS: "+tt.want {
				t.Errorf("POST /config workers %s = %d %+v, want 400 with WORKERS: %s", tt.value, code, ce, tt.want)
			}
			if got := tt.lab.Server.Config(); got.Workers != 2 {
				t.Errorf("WORKERS %d after a refused change, want 2", got.Workers)
			}
			_, err := tt.cfg.Set("WORKERS", tt.value)
			if fe, ok := err.(input.FieldErrors); !ok || fe["WORKERS"] != tt.want {
				t.Errorf("Set(WORKERS, %s) = %v, want WORKERS: %s", tt.value, err, tt.want)
			}
			c, _ := result.ParseKnobChange("1s:WORKERS=" + tt.value)
			if err := tt.cfg.CheckChanges([]result.KnobChange{c}); err == nil || err.Error() != "knob change 1s:WORKERS="+tt.value+": "+tt.want {
				t.Errorf("CheckChanges(1s:WORKERS=%s) = %v, want the change named with %q", tt.value, err, tt.want)
			}
		})
	}
	// Not a whole number.
	var ce labsvc.ControlError
	if code := doJSON(t, "POST", door.Control+"/config", `{"workers": "8"}`, &ce); code != 400 || ce.Errors["WORKERS"] != `"8" is not allowed: want 1 to 1024` {
		t.Errorf(`POST /config {"workers": "8"} = %d %+v, want 400 naming WORKERS`, code, ce)
	}
	// The one in force is no change, even with ACCEPT=workers.
	if _, err := accepting.Set("WORKERS", "2"); err != nil {
		t.Errorf("Set(WORKERS, 2) with ACCEPT=workers and WORKERS 2: %v, want no change and no error", err)
	}
}
