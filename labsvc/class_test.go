package labsvc_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"capacitylab/admit"
	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
)

// The X-Criticality header gives a request its class, in any case and
// whatever the header name's case: critical, sheddable, and default for
// default, no header or a value the lab does not know. Each class is
// counted (GET /stats classes, lab_class_*_total) whether or not the
// policy sheds by class, with the door and with ACCEPT=workers, where the
// header is only counted.
func TestCriticalityHeader(t *testing.T) {
	sends := []struct{ header, class string }{
		{"X-Criticality: critical", "critical"},
		{"x-criticality: CRITICAL", "critical"},       // either case, name and value
		{"X-Criticality:   Sheddable  ", "sheddable"}, // spaces around the value
		{"X-Criticality: default", "default"},
		{"", "default"},                              // no header
		{"X-Criticality: urgent", "default"},         // a value the lab does not know
		{"X-Criticality:", "default"},                // an empty one
		{"X-Criticality-Level: critical", "default"}, // another header
	}
	for _, accept := range []labsvc.AcceptMode{labsvc.AcceptDoor, labsvc.AcceptWorkers} {
		t.Run("ACCEPT="+accept.String(), func(t *testing.T) {
			c := cfg(1, 0, 1, 0)
			c.Accept = accept
			l := labtest.Serve(t, c)
			want := map[string]int64{}
			for _, s := range sends {
				r, err := callWith(l.Addr, s.header, 5*time.Second)
				if err != nil || r.status != 200 {
					t.Fatalf("%q: %d, %v; want 200", s.header, r.status, err)
				}
				want[s.class]++
			}
			st := quiet(t, l.Control, 5*time.Second)
			got := map[string]labsvc.ClassCounts{"critical": st.Classes.Critical, "default": st.Classes.Default, "sheddable": st.Classes.Sheddable}
			for class, n := range want {
				if k := got[class]; k != (labsvc.ClassCounts{Accepted: n, Done: n}) {
					t.Errorf("classes.%s = %+v, want %d accepted and done", class, k, n)
				}
				if m := metric(t, l.Control, fmt.Sprintf("lab_class_done_total{class=%q}", class)); m != float64(n) {
					t.Errorf("lab_class_done_total{class=%q} = %v, want %d", class, m, n)
				}
			}
			if st.Accepted != int64(len(sends)) || st.Done != int64(len(sends)) || st.Unaccounted() != 0 {
				t.Errorf("stats %+v: want all %d accepted and done", st, len(sends))
			}
		})
	}
}

// classCall is one request of a class, sent at a time, and its answer.
type classCall struct {
	class string
	at    time.Duration // when to send it, from the start
	r     reply
	err   error
	ended time.Duration // when its answer was read, from the start
}

// sendAll sends each call at its time, each on its own connection, and
// waits for every answer; it returns when the last was sent, from start.
func sendAll(addr string, calls []classCall) (lastSent time.Duration) {
	start := time.Now()
	var wg sync.WaitGroup
	for i := range calls {
		if d := calls[i].at - time.Since(start); d > 0 {
			time.Sleep(d)
		}
		lastSent = time.Since(start)
		wg.Go(func() {
			c := &calls[i]
			c.r, c.err = callWith(addr, "X-Criticality: "+c.class, 10*time.Second)
			c.ended = time.Since(start)
		})
	}
	wg.Wait()
	return lastSent
}

// served counts the calls of each class and those answered 200, failing
// the test on any answer other than 200 or the door's 503.
func served(t *testing.T, calls []classCall) (sent, ok map[string]int) {
	t.Helper()
	sent, ok = map[string]int{}, map[string]int{}
	for i, c := range calls {
		sent[c.class]++
		switch {
		case c.err != nil:
			t.Errorf("call %d (%s): %v", i, c.class, c.err)
		case c.r.status == 200:
			ok[c.class]++
		case c.r.status != 503 || c.r.body != "queue full\n":
			t.Errorf("call %d (%s): %d %q, want 200 or the door's 503", i, c.class, c.r.status, c.r.body)
		}
	}
	return sent, ok
}

// At twice the lab's capacity (2 workers of 10 ms, 200 a second; 400 a
// second offered, Poisson, for 2 s), a fifth of the requests critical and
// the rest default and sheddable in equal parts, with LIMIT=6: the plain
// queue policy (one FIFO limit) serves each class about as often as any
// (about half), while queue,classes=on serves at least 95% of the
// critical requests, the refusals falling on sheddable requests first,
// then default ones. The lab's counts by class are what the callers saw.
func TestClassesAtTwiceCapacity(t *testing.T) {
	for _, policy := range []string{"queue", "queue,classes=on"} {
		t.Run(policy, func(t *testing.T) {
			c := cfg(2, 0, 10, 6)
			c.Policy = admit.Spec(policy)
			l := labtest.Serve(t, c)
			rng := rand.New(rand.NewPCG(34, 2))
			var calls []classCall
			for at := time.Duration(0); at < 2*time.Second; at += time.Duration(rng.ExpFloat64() * float64(time.Second/400)) {
				class := "default"
				switch u := rng.Float64(); {
				case u < 0.2:
					class = "critical"
				case u < 0.6:
					class = "sheddable"
				}
				calls = append(calls, classCall{class: class, at: at})
			}
			last := sendAll(l.Addr, calls)
			sent, ok := served(t, calls)
			if rate := float64(len(calls)) / last.Seconds(); rate < 350 {
				t.Skipf("sent %d requests in %v, %.0f a second: this machine could not offer twice the lab's capacity (400 a second)", len(calls), last, rate)
			}
			st := quiet(t, l.Control, 5*time.Second)
			share := func(class string) float64 { return float64(ok[class]) / float64(sent[class]) }
			all := float64(ok["critical"]+ok["default"]+ok["sheddable"]) / float64(len(calls))
			t.Logf("%s: %d sent in %v; served %.0f%% in all, critical %d of %d (%.1f%%), default %d of %d (%.1f%%), sheddable %d of %d (%.1f%%)",
				policy, len(calls), last.Round(time.Millisecond), 100*all, ok["critical"], sent["critical"], 100*share("critical"),
				ok["default"], sent["default"], 100*share("default"), ok["sheddable"], sent["sheddable"], 100*share("sheddable"))
			for class, k := range map[string]labsvc.ClassCounts{"critical": st.Classes.Critical, "default": st.Classes.Default, "sheddable": st.Classes.Sheddable} {
				if k.Done != int64(ok[class]) || k.Accepted != k.Done || k.Refused != int64(sent[class]-ok[class]) || k.Inside != 0 {
					t.Errorf("classes.%s = %+v; the callers saw %d served and %d refused", class, k, ok[class], sent[class]-ok[class])
				}
			}
			if all > 0.65 || all < 0.35 {
				t.Errorf("%.0f%% served in all, want about half: the lab serves 200 a second of 400", 100*all)
			}
			if policy == "queue" {
				// One FIFO limit: the class makes no difference.
				for _, class := range []string{"critical", "default", "sheddable"} {
					if d := share(class) - all; d > 0.15 || d < -0.15 {
						t.Errorf("%s served %.0f%%, want about the %.0f%% served in all (one FIFO limit for every class)", class, 100*share(class), 100*all)
					}
				}
				return
			}
			if share("critical") < 0.95 {
				t.Errorf("critical served %.1f%%, want at least 95%%", 100*share("critical"))
			}
			if share("sheddable") >= share("default") || share("default") >= share("critical") {
				t.Errorf("served: critical %.0f%%, default %.0f%%, sheddable %.0f%%; want sheddable refused first, then default", 100*share("critical"), 100*share("default"), 100*share("sheddable"))
			}
		})
	}
}

// The rules by class at the door, request by request: one worker busy for
// 250 ms, LIMIT=4, so the bound is 5 inside. A sheddable request is
// refused from 4 inside (all but a quarter), a default one when LIMIT
// wait, a critical one only from 10 inside (twice the bound); the queue
// is served critical first, then default, then sheddable, each class in
// the order it came.
func TestShedByClassAtTheDoor(t *testing.T) {
	c := cfg(1, 0, 250, 4)
	c.Policy = "queue,classes=on"
	l := labtest.Serve(t, c)
	calls := []classCall{
		{class: "default"},   // 1: the worker's (1 inside)
		{class: "default"},   // 2: queued (2)
		{class: "default"},   // 3: queued (3)
		{class: "sheddable"}, // 4: queued (4)
		{class: "sheddable"}, // 5: refused: 4 inside
		{class: "default"},   // 6: queued (5): 3 waited, fewer than LIMIT
		{class: "default"},   // 7: refused: LIMIT wait
		{class: "critical"},  // 8: queued (6): fewer than 10 inside
		{class: "critical"},  // 9: queued (7)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			c := &calls[i]
			c.r, c.err = callWith(l.Addr, "X-Criticality: "+c.class, 10*time.Second)
			c.ended = time.Since(start)
		})
		// The door decides on each before the next is sent.
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
			if st := stats(t, l.Control); st.Accepted+st.Refused == int64(i+1) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the door did not decide on request %d", i+1)
			}
		}
	}
	decided := time.Since(start)
	wg.Wait()
	if decided > 200*time.Millisecond {
		t.Skipf("sending the nine requests took %v, more than the first one's service (250 ms): the order below needs them all inside before it ends", decided)
	}
	var got []string
	for i, c := range calls {
		if c.err != nil {
			t.Fatalf("request %d: %v", i+1, c.err)
		}
		if c.r.status == 503 {
			got = append(got, fmt.Sprintf("%d refused", i+1))
		}
	}
	if want := []string{"5 refused", "7 refused"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%v, want %v", got, want)
	}
	// The order the answers came in: 250 ms apart.
	order := make([]int, 0, 7)
	for range 7 {
		best := -1
		for i, c := range calls {
			if c.r.status == 200 && !contains(order, i+1) && (best < 0 || c.ended < calls[best].ended) {
				best = i
			}
		}
		order = append(order, best+1)
	}
	if want := []int{1, 8, 9, 2, 3, 6, 4}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("served in the order %v, want %v: critical first, then default, then sheddable", order, want)
	}
	st := quiet(t, l.Control, 5*time.Second)
	want := labsvc.ClassStats{
		Critical:  labsvc.ClassCounts{Accepted: 2, Done: 2},
		Default:   labsvc.ClassCounts{Accepted: 4, Refused: 1, Done: 4},
		Sheddable: labsvc.ClassCounts{Accepted: 1, Refused: 1, Done: 1},
	}
	if st.Classes != want || st.QueuedMax != 6 || st.PolicyLimit != 5 {
		t.Errorf("classes %+v, queued_max %d, policy_limit %d; want %+v, 6 and 5", st.Classes, st.QueuedMax, st.PolicyLimit, want)
	}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// A caller that sends its request late holds up nobody: the door reads
// each connection on its own, so with one worker, five callers after it
// are served at once, and its own request, sent 600 ms after it
// connected, is then handed to the free worker (queue wait 0) and served
// in its 10 ms: its slowness is not its service.
func TestSlowCallerDoesNotStallTheDoor(t *testing.T) {
	l := labtest.Serve(t, cfg(1, 0, 10, 0))
	slow, err := net.Dial("tcp", l.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	began := time.Now()
	_ = slow.SetDeadline(began.Add(5 * time.Second))
	if _, err := io.WriteString(slow, "GET /slow HT"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		sent := time.Now()
		r, err := call(l.Addr, 5*time.Second)
		if took := time.Since(sent); err != nil || r.status != 200 || took > 400*time.Millisecond {
			t.Errorf("caller %d after the slow one: %d, %v after %v; want 200 within 400 ms (its service is 10 ms)", i+1, r.status, err, took)
		}
	}
	if st := stats(t, l.Control); st.Reading != 1 || st.Done != 5 {
		t.Errorf("reading %d, done %d; want the slow caller still being read, the five served", st.Reading, st.Done)
	}
	time.Sleep(time.Until(began.Add(600 * time.Millisecond)))
	if _, err := io.WriteString(slow, "TP/1.1\r\nHost: lab\r\nX-Criticality: critical\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(slow)
	if err != nil || !strings.HasPrefix(string(answer), "HTTP/1.1 200 OK") || !strings.Contains(string(answer), "X-Queue-Wait-Ms: 0.000\r\n") {
		t.Fatalf("the slow caller's answer %q, %v: want 200 handed to the free worker at once", answer, err)
	}
	var svc float64
	if _, err := fmt.Sscanf(string(answer[strings.Index(string(answer), "X-Service-Ms: "):]), "X-Service-Ms: %g", &svc); err != nil || svc < 10 || svc > 300 {
		t.Errorf("the slow caller's X-Service-Ms %v (%v), want its 10 ms, not the 600 ms it took to send", svc, err)
	}
	st := quiet(t, l.Control, 5*time.Second)
	if st.Done != 6 || st.Bad != 0 || st.Classes.Critical.Done != 1 || st.Unaccounted() != 0 {
		t.Errorf("stats %+v: want six served, the slow one critical, none bad", st)
	}
}

// A bad POLICY with classes is refused naming POLICY and what is allowed:
// classes is on or off, and ACCEPT=workers has no door to shed by class
// at; the control API refuses it so, and takes a good one.
func TestClassPolicyRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    labsvc.Config
		errMsg string
	}{
		// classes is on or off
		{"classes=1", labsvc.Config{Workers: 1, CPUs: 1, Policy: "queue,classes=1"},
			"POLICY: queue,classes=1 is not allowed: want classes on or off: on: the queue is served critical first"},
		// as a parameter of any policy
		{"inflight", labsvc.Config{Workers: 1, CPUs: 1, Policy: "inflight,quota=3,classes=yes"},
			"POLICY: inflight,quota=3,classes=yes is not allowed: want classes on or off"},
		// no door with ACCEPT=workers
		{"workers", labsvc.Config{Workers: 1, CPUs: 1, Accept: labsvc.AcceptWorkers, Policy: "queue,classes=on"},
			"POLICY: queue,classes=on is not allowed: want queue without classes with ACCEPT=workers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.errMsg) {
				t.Errorf("Validate: %v, want %q", err, tc.errMsg)
			}
		})
	}
	if _, err := labsvc.ParseConfig(nil, func(k string) string { return map[string]string{"POLICY": "queue,classes=true"}[k] }); err == nil ||
		!strings.Contains(err.Error(), "POLICY: queue,classes=true is not allowed: want classes on or off") {
		t.Errorf("POLICY=queue,classes=true from the environment: %v", err)
	}
	l := labtest.Serve(t, cfg(1, 0, 1, 0))
	var bad labsvc.ControlError
	if code := doJSON(t, "POST", l.Control+"/config", `{"policy": "queue,classes=yes"}`, &bad); code != 400 || !strings.Contains(bad.Errors["POLICY"], "want classes on or off") {
		t.Errorf("POST /config classes=yes: %d %+v, want 400 naming POLICY", code, bad)
	}
	var got labsvc.ConfigReply
	if code := doJSON(t, "POST", l.Control+"/config", `{"policy": "queue, classes=on", "limit": 3}`, &got); code != 200 || got.Policy != "queue,classes=on" || got.Limit != 3 {
		t.Errorf("POST /config queue,classes=on: %d %+v", code, got)
	}
	if body := metricsText(t, l.Control); !strings.Contains(body, `admit_policy_info{policy="queue",spec="queue,classes=on"} 1`) {
		t.Errorf("GET /metrics does not name the policy with classes")
	}
}
