package retry

import (
	"strings"
	"testing"
	"time"

	"capacitylab/result"
)

func TestParseRoundTrip(t *testing.T) {
	for _, s := range []string{
		"",
		"retries=3",
		"retries=3,backoff=jitter,base_ms=50,cap_ms=1000",
		"retries=2,on=timeout+refused,backoff=fixed,retry_after=on,budget=0.1,burst=5",
		"retries=0,breaker=0.5,breaker_min=10,window_ms=500,open_ms=3000,probes=2",
	} {
		sp, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if got := sp.String(); got != s {
			t.Errorf("Parse(%q).String() = %q", s, got)
		}
	}
	if sp, err := Parse(" Retries = 3 , backoff= jitter"); err != nil || sp.String() != "retries=3,backoff=jitter" {
		t.Errorf("spaces around the commas and = signs, a name in capitals: %q, %v; want retries=3,backoff=jitter", sp.String(), err)
	}
	if sp, _ := Parse("retries=0"); !sp.IsZero() {
		t.Errorf("retries=0 without a breaker: %+v, want the zero spec", sp)
	}
}

func TestParseRefusesNamingTheField(t *testing.T) {
	for in, want := range map[string]string{
		"retries=11":             `retry's retries "11" is not allowed: want a whole number from 0 to 10`,
		"retries=3,backoff=slow": `retry's backoff "slow" is not allowed: want none, fixed, exp or jitter`,
		"retries=3,on=timeouts":  `retry's on "timeouts" is not allowed: want timeout, refused and error joined by +`,
		"retries=3,budget=2":     `retry's budget "2" is not allowed: want 0 to 1`,
		"retries=3,cap_ms=10":    `retry's cap_ms "10" is not allowed: want at least base_ms (100)`,
		"retries=3,colour=blue":  `retry's colour "blue" is not allowed: want a parameter of`,
		"retries":                `retry "retries" is not allowed: want parameters name=value`,
		"retries=1,retries=2":    `retry's retries "2" is not allowed: want each parameter once`,
		"retries=1,breaker=-0.1": `retry's breaker "-0.1" is not allowed: want 0 to 1`,
	} {
		_, err := Parse(in)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", in, err, want)
		}
	}
}

func failed(o result.Outcome) result.Record { return result.Record{Outcome: o} }

func TestRetryWhatAndWhen(t *testing.T) {
	sp, _ := Parse("retries=2,on=timeout,backoff=exp,base_ms=100,cap_ms=150")
	c := New(sp, 1)
	if ok, at := c.Retry(time.Second, 0, failed(result.Gaveup), 0); !ok || at != time.Second+100*time.Millisecond {
		t.Errorf("first retry: %v at %v, want yes at 1.1 s", ok, at)
	}
	if ok, at := c.Retry(time.Second, 1, failed(result.Gaveup), 0); !ok || at != time.Second+150*time.Millisecond {
		t.Errorf("second retry: %v at %v, want yes at 1.15 s (capped)", ok, at)
	}
	if ok, _ := c.Retry(time.Second, 2, failed(result.Gaveup), 0); ok {
		t.Error("a third retry of retries=2")
	}
	if ok, _ := c.Retry(time.Second, 0, failed(result.Refused), 0); ok {
		t.Error("retried a refusal with on=timeout")
	}
	if ok, _ := c.Retry(time.Second, 0, failed(result.OK), 0); ok {
		t.Error("retried an ok answer")
	}
	ra, _ := Parse("retries=1,retry_after=on")
	if ok, at := New(ra, 1).Retry(0, 0, result.Record{Outcome: result.Error, Status: 429}, time.Second); !ok || at != time.Second {
		t.Errorf("429 with Retry-After 1 s: %v at %v, want a retry at 1 s", ok, at)
	}
}

func TestJitterIsUniformUnderTheCap(t *testing.T) {
	sp, _ := Parse("retries=1,backoff=jitter,base_ms=100,cap_ms=100")
	c := New(sp, 7)
	var sum time.Duration
	const n = 20000
	for range n {
		_, at := c.Retry(0, 0, failed(result.Gaveup), 0)
		if at < 0 || at >= 100*time.Millisecond {
			t.Fatalf("jitter %v outside [0, 100 ms)", at)
		}
		sum += at
	}
	if mean := sum / n; mean < 48*time.Millisecond || mean > 52*time.Millisecond {
		t.Errorf("mean jitter %v, want 50 ms ± 2", mean)
	}
	// The same seed draws the same waits.
	a, b := New(sp, 3), New(sp, 3)
	for range 10 {
		_, x := a.Retry(0, 0, failed(result.Gaveup), 0)
		_, y := b.Retry(0, 0, failed(result.Gaveup), 0)
		if x != y {
			t.Fatal("two clients with one seed drew different waits")
		}
	}
}

// With every attempt failing, a budget of 0.1 lets retries be a tenth of
// first attempts, plus the burst.
func TestBudgetIsAShareOfFirstAttempts(t *testing.T) {
	sp, _ := Parse("retries=3,budget=0.1,burst=10")
	c := New(sp, 1)
	retries := 0
	for i := range 1000 {
		now := time.Duration(i) * time.Millisecond
		if !c.Send(now, true) {
			t.Fatal("no breaker, yet an attempt was stopped")
		}
		for n := 0; ; n++ {
			ok, _ := c.Retry(now, n, failed(result.Gaveup), 0)
			if !ok {
				break
			}
			retries++
		}
	}
	if retries < 100 || retries > 110 {
		t.Errorf("%d retries of 1000 failing requests with budget 0.1, burst 10: want 100 to 110", retries)
	}
}

func TestBreakerOpensProbesAndCloses(t *testing.T) {
	sp, _ := Parse("retries=0,breaker=0.5,breaker_min=10,window_ms=1000,open_ms=500,probes=2")
	c := New(sp, 1)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for i := range 10 {
		if !c.Send(ms(i), true) {
			t.Fatalf("closed breaker stopped attempt %d", i)
		}
		o := result.OK
		if i%2 == 0 {
			o = result.Refused
		}
		c.Retry(ms(i), 0, failed(o), 0)
	}
	if s := c.State(ms(10)); s != Opened {
		t.Fatalf("after 5 of 10 failed: %s, want open", s)
	}
	if c.Send(ms(100), true) {
		t.Error("an open breaker let an attempt through")
	}
	if s := c.State(ms(509)); s != HalfOpen {
		t.Fatalf("open_ms after opening: %s, want half_open", s)
	}
	if !c.Send(ms(510), true) || !c.Send(ms(511), true) || c.Send(ms(512), true) {
		t.Fatal("half open should let exactly 2 probes through")
	}
	c.Retry(ms(520), 0, failed(result.OK), 0)
	c.Retry(ms(521), 0, failed(result.OK), 0)
	if s := c.State(ms(522)); s != Closed {
		t.Errorf("after 2 ok probes: %s, want closed", s)
	}
	// A failed probe opens it again.
	for i := range 10 {
		c.Send(ms(600+i), true)
		c.Retry(ms(600+i), 0, failed(result.Gaveup), 0)
	}
	c.Send(ms(1200), true)
	c.Retry(ms(1201), 0, failed(result.Gaveup), 0)
	if s := c.State(ms(1202)); s != Opened {
		t.Errorf("after a failed probe: %s, want open", s)
	}
}

func TestWords(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "",
		"retries=3":            "Callers retry up to 3 times, on a timeout or a 503 or 429 or another error, at once.",
		"retries=1,on=timeout": "Callers retry up to 1 time, on a timeout, at once.",
		"retries=3,budget=0.1": "Callers retry up to 3 times, on a timeout or a 503 or 429 or another error, at once, within a retry budget of 10% of their requests.",
		"retries=3,backoff=jitter,base_ms=100,cap_ms=2000": "Callers retry up to 3 times, on a timeout or a 503 or 429 or another error, after a random wait up to 100 ms, doubling each time up to 2000 ms (full jitter).",
		"retries=0,breaker=0.5":                            "Callers do not retry; a circuit breaker stops them sending for 2000 ms when 50% of the attempts in 1000 ms fail.",
	} {
		sp, err := Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := sp.Words(); got != want {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}
