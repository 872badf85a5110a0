package labsvc_test

import (
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
)

// burst sends n callers at once and returns their replies, failing the
// test on any connection error: a refused caller must read a whole 503.
func burst(t *testing.T, addr string, n int) []reply {
	t.Helper()
	start := make(chan struct{})
	replies := make([]reply, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			r, err := call(addr, 10*time.Second)
			if err != nil {
				t.Errorf("caller %d: %v (a refused caller must read a whole 503, not an error)", i, err)
			}
			replies[i] = r
		})
	}
	close(start)
	wg.Wait()
	return replies
}

// tally counts the replies by status and checks that every 503 is the
// door's refusal, word for word.
func tally(t *testing.T, replies []reply) (ok, refused int) {
	t.Helper()
	for i, r := range replies {
		switch r.status {
		case 200:
			ok++
		case 503:
			refused++
			if r.retryAfter != labsvc.RetryAfter || !r.close || r.body != "queue full\n" {
				t.Errorf("caller %d: 503 with Retry-After %q, Connection: close %v, body %q; want the door's refusal", i, r.retryAfter, r.close, r.body)
			}
		default:
			t.Errorf("caller %d: status %d", i, r.status)
		}
	}
	return ok, refused
}

// An in-flight quota at the door: with two workers busy for 300 ms and a
// quota of 3, of six callers at once three are let in (two served at once,
// one queued) and three are refused, whatever the free workers; the stats,
// the metrics and the identity say so.
func TestInFlightQuotaAtTheDoor(t *testing.T) {
	c := cfg(2, 0, 300, 0)
	c.Policy = "inflight,quota=3"
	l := labtest.Serve(t, c)
	ok, refused := tally(t, burst(t, l.Addr, 6))
	st := quiet(t, l.Control, 5*time.Second)
	if ok != 3 || refused != 3 {
		t.Errorf("%d ok and %d refused, want 3 and 3", ok, refused)
	}
	if st.Accepted != 3 || st.Refused != 3 || st.Dropped != 0 || st.QueuedMax != 1 || st.PolicyLimit != 3 || st.Unaccounted() != 0 {
		t.Errorf("stats %+v: want accepted 3, refused 3, dropped 0, queued_max 1, policy_limit 3, nothing unaccounted", st)
	}
	for name, want := range map[string]float64{"admit_limit": 3, "admit_inflight": 0, "admit_refused_total": 3, "admit_dropped_total": 0, "lab_refused_total": 3, "admit_queue_seconds_count": 3} {
		if got := metric(t, l.Control, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// Sojourn at the door: one worker, 20 ms a request, a burst of callers. The
// first is handed the worker at once (it waited 0, so the first interval
// is not overloaded); the second, taken 20 ms later, ends that interval
// and is served; the third, taken after 40 ms, ends the next interval,
// whose least wait (the second's, 20 ms) was above the target of 5 ms:
// the queue is overloaded, and it and every caller after it that waited
// more than 10 ms is dropped, refused by the worker as the door refuses.
// Every dropped caller was admitted (accepted), so the identity counts
// them.
func TestSojournDropsAtTheDoor(t *testing.T) {
	c := cfg(1, 0, 20, 0)
	c.Policy = "sojourn,target_ms=5,interval_ms=20"
	l := labtest.Serve(t, c)
	const callers = 12
	replies := burst(t, l.Addr, callers)
	ok, refused := tally(t, replies)
	st := quiet(t, l.Control, 5*time.Second)
	t.Logf("%d ok, %d refused; stats accepted %d refused %d dropped %d queued_max %d", ok, refused, st.Accepted, st.Refused, st.Dropped, st.QueuedMax)
	if ok < 2 || refused < 1 || ok+refused != callers {
		t.Errorf("%d ok and %d refused of %d; want the first two served and some dropped", ok, refused, callers)
	}
	if st.Accepted != callers || st.Dropped != int64(refused) || st.Refused != st.Dropped || st.PolicyLimit != 0 || st.Unaccounted() != 0 {
		t.Errorf("stats %+v: want every caller accepted, the 503s all dropped from the queue, policy_limit 0, nothing unaccounted", st)
	}
	if got := metric(t, l.Control, "admit_dropped_total"); got != float64(refused) {
		t.Errorf("admit_dropped_total = %v, want %d", got, refused)
	}
	if got := metric(t, l.Control, "admit_refused_total"); got != 0 {
		t.Errorf("admit_refused_total = %v, want 0: sojourn refuses nobody at arrival", got)
	}
}

// AIMD at the door learns from latency: with one worker at 50 ms and
// latency_ms=60, of four callers at once the second is answered after
// about 100 ms, an overload signal that halves the limit from 4 to 2 (the
// others were admitted before the cut and are ignored). Then of four more
// at once two are refused. A reset starts the policy again from 4.
func TestAIMDAtTheDoor(t *testing.T) {
	c := cfg(1, 0, 50, 0)
	c.Policy = "aimd,start=4,min=1,backoff=0.5,latency_ms=60"
	l := labtest.Serve(t, c)
	if st := stats(t, l.Control); st.PolicyLimit != 4 {
		t.Fatalf("policy_limit %d at the start, want 4", st.PolicyLimit)
	}
	ok, refused := tally(t, burst(t, l.Addr, 4))
	st := quiet(t, l.Control, 5*time.Second)
	if ok != 4 || refused != 0 || st.PolicyLimit != 2 {
		t.Fatalf("first burst: %d ok, %d refused, policy_limit %d; want 4, 0 and 2", ok, refused, st.PolicyLimit)
	}
	ok, refused = tally(t, burst(t, l.Addr, 4))
	if ok != 2 || refused != 2 {
		t.Errorf("second burst with a limit of 2: %d ok, %d refused; want 2 and 2", ok, refused)
	}
	quiet(t, l.Control, 5*time.Second)
	var closed labsvc.Stats
	doJSON(t, "POST", l.Control+"/reset", "", &closed)
	if st := stats(t, l.Control); st.PolicyLimit != 4 || closed.Unaccounted() != 0 {
		t.Errorf("after a reset policy_limit %d (closed window unaccounted %d), want 4 and 0", st.PolicyLimit, closed.Unaccounted())
	}
}

// The policy changes while the lab runs: a gradient limit of 5 refuses
// the sixth caller inside; back to the queue policy with LIMIT=0 nobody is
// refused. GET /config and /metrics name the policy in force.
func TestPolicyChangesWhileRunning(t *testing.T) {
	l := labtest.Serve(t, cfg(8, 0, 200, 0))
	var got labsvc.ConfigReply
	if code := doJSON(t, "POST", l.Control+"/config", `{"policy": "gradient,start=5"}`, &got); code != 200 || got.Policy != "gradient,start=5" {
		t.Fatalf("POST /config policy = %d %+v", code, got)
	}
	ok, refused := tally(t, burst(t, l.Addr, 8))
	if ok != 5 || refused != 3 {
		t.Errorf("gradient,start=5 with 8 workers: %d ok, %d refused; want 5 and 3", ok, refused)
	}
	quiet(t, l.Control, 5*time.Second)
	body := metricsText(t, l.Control)
	if want := `admit_policy_info{policy="gradient",spec="gradient,start=5,min=1,max=1000,smoothing=0.2,tolerance=1.5,headroom=4,interval_ms=100,samples=10,long=600"} 1`; !strings.Contains(body, want) {
		t.Errorf("GET /metrics lacks %s", want)
	}
	if code := doJSON(t, "POST", l.Control+"/config", `{"policy": "queue"}`, &got); code != 200 || got.Policy != "" {
		t.Fatalf("POST /config policy queue = %d %+v", code, got)
	}
	ok, refused = tally(t, burst(t, l.Addr, 10))
	if ok != 10 || refused != 0 {
		t.Errorf("queue with LIMIT=0: %d ok, %d refused; want 10 and 0", ok, refused)
	}
	if st := quiet(t, l.Control, 5*time.Second); st.QueuedMax != 2 || st.PolicyLimit != 0 {
		t.Errorf("queue with LIMIT=0: queued_max %d policy_limit %d; want 2 behind 8 workers, and no limit", st.QueuedMax, st.PolicyLimit)
	}
}

// metricsText is a lab's GET /metrics.
func metricsText(t *testing.T, control string) string {
	t.Helper()
	resp, err := controlClient.Get(control + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}
