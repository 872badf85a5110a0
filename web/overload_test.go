package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"capacitylab/admit"
	"capacitylab/classroom"
)

// overloadPage is the i-th page the crowd opens: a widget's plot for
// values nobody asked for before (the site keeps plots by their values),
// which the server computes and draws for each request, so that each
// costs it far more than it costs the test's own client to ask.
func overloadPage(i int) string {
	return fmt.Sprintf("/widgets/queue-curve/plot.svg?service_ms=%d.%03d", 5+i/1000, i%1000)
}

// The acceptance test of the front door (issue 36): a server in process,
// on real TCP, overloaded by a bounded open-loop crowd of anonymous
// visitors at several times what it served to a few steady clients,
// while a class votes over its websockets. It checks the shape, not
// timings a busy machine could miss:
//
//   - goodput held: the server serves at least half of what it served
//     before the crowd came (without the door, the crowd's requests pile
//     up and most callers give up);
//   - every refusal is a 503 with Retry-After, and admit_requests_total
//     counts exactly the refusals the crowd saw (how quickly they are
//     answered is a figure of the benchmark, not asserted here: a refusal
//     waits for a processor like any request not yet read, behind the
//     crowd, so on a saturated machine it takes about as long as a page);
//   - the critical requests are all served: every health check, every
//     vote's round trip, a websocket opened in the middle of it;
//   - recovery: once the crowd is gone nothing is inside and anonymous
//     pages are served again.
//
// It skips, saying what it measured, when the machine could not send the
// crowd's requests fast enough or got busier during the crowd.
func TestFrontDoorOverload(t *testing.T) {
	if testing.Short() {
		t.Skip("overloads an in-process server for about 3 s")
	}
	gate, err := admit.NewGate("inflight,quota=8", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	gate.BoundWait(25 * time.Millisecond) // the server's default (cmd/server --admit-wait)
	reg := prometheus.NewRegistry()
	var m *classroom.Manager
	site := newSiteAt(t, filepath.Join(t.TempDir(), "overload.db"), func(d *Deps) {
		d.Gate, d.Registry = gate, reg
		m, err = classroom.New(classroom.Config{Store: d.Store, Lessons: ClassLessons(d.Course)})
		if err != nil {
			t.Fatal(err)
		}
		d.Classes = m
	})
	t.Cleanup(func() { m.Close() })
	s := &classSite{testSite: site, m: m}

	// The class: a host and a participant on their sockets, a question open.
	st, created, body := s.create("sample", "")
	if st != http.StatusCreated {
		t.Fatalf("create a class: %d %s", st, body)
	}
	host := s.host(created.Code, hostToken(t, created))
	host.expect(classroom.KindState)
	ada := s.joinAs(created.Code, "Ada")
	pa := s.participant("Ada", created.Code, ada)
	pa.expect(classroom.KindState)
	host.send(classroom.In{Kind: classroom.KindOpen, Question: "sample-predict"})
	host.expect(classroom.KindRound, classroom.KindPresence)
	pa.expect(classroom.KindRound)

	tr := &http.Transport{MaxIdleConns: 2048, MaxIdleConnsPerHost: 2048, MaxConnsPerHost: 0}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 3 * time.Second}
	get := func(ctx context.Context, path string) (int, string, time.Duration, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", site.srv.URL+path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		start := time.Now()
		res, err := client.Do(req)
		if err != nil {
			return 0, "", time.Since(start), err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode, res.Header.Get("Retry-After"), time.Since(start), nil
	}

	// Before: three steady clients, one page after another, for a second.
	// Three is under the sheddable bound (all but a quarter of 8): nobody
	// is refused.
	var base []time.Duration
	var baseMu sync.Mutex
	var wg sync.WaitGroup
	baseCPU := cpuTime(t)
	stop := time.Now().Add(time.Second)
	for c := range 3 {
		wg.Go(func() {
			for i := c; time.Now().Before(stop); i += 3 {
				code, _, d, err := get(context.Background(), overloadPage(1_000_000+i))
				if err != nil || code != http.StatusOK {
					t.Errorf("a steady client before the crowd: %d %v", code, err)
					return
				}
				baseMu.Lock()
				base = append(base, d)
				baseMu.Unlock()
			}
		})
	}
	wg.Wait()
	baseShare := processorShare(t, baseCPU, time.Second)
	if t.Failed() {
		return
	}
	ceiling := float64(len(base)) // served in that second
	// One and a half times: the crowd's own client runs in this process,
	// on the same two processors, and each refusal costs it and the
	// server about what the server's cheapest request costs (a refusal
	// must be read before it can be refused); at twice the ceiling that
	// overhead alone took half the processors in two runs of five on the
	// quiet machine. The benchmark (docs/BENCHMARKS.md) measures twice,
	// with the server and its generator on a processor each.
	rate := 1.5 * ceiling
	const crowdFor = 2 * time.Second
	planned := int(rate * crowdFor.Seconds())
	t.Logf("before the crowd: %d pages in 1 s by 3 clients, median %v; the crowd: %.0f a second for %v (%d requests)",
		len(base), median(base), rate, crowdFor, planned)

	refusedBefore := metricValue(t, reg, "admit_requests_total", `{class="sheddable",decision="refused"}`)

	// The crowd: an open loop, each request sent on schedule whatever
	// became of the earlier ones, each caller giving up after 3 s.
	type answer struct {
		code  int
		retry string
		took  time.Duration
		err   error
	}
	answers := make([]answer, planned)
	var lastSend time.Time // when the generator sent the last request
	crowdCtx, crowdDone := context.WithCancel(context.Background())
	var crowd sync.WaitGroup
	crowdCPU := cpuTime(t)
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	go func() {
		defer crowdDone()
		for i := range planned {
			due := start.Add(time.Duration(i) * interval)
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
			lastSend = time.Now()
			crowd.Go(func() {
				code, retry, took, err := get(context.Background(), overloadPage(i))
				answers[i] = answer{code, retry, took, err}
			})
		}
	}()

	// Meanwhile the critical ones: health checks, votes on the class's
	// socket, and a new socket half way.
	var health []int
	var healthErrs []error
	votes := 0
	for option := "a"; crowdCtx.Err() == nil; option = map[string]string{"a": "b", "b": "a"}[option] {
		code, _, _, err := get(context.Background(), "/healthz")
		if err != nil {
			healthErrs = append(healthErrs, err)
		}
		health = append(health, code)
		pa.send(classroom.In{Kind: classroom.KindVote, Question: "sample-predict", Option: option})
		pa.expect(classroom.KindVoted, classroom.KindPresence, classroom.KindTally)
		votes++
		if votes == 5 {
			bob := s.joinAs(created.Code, "Bob")
			pb := s.participant("Bob", created.Code, bob)
			pb.expect(classroom.KindState)
		}
		time.Sleep(50 * time.Millisecond)
	}
	crowd.Wait()
	sent := time.Since(start)
	share := processorShare(t, crowdCPU, sent)
	// Goodput is compared with what was served before the crowd: that
	// says something only if the machine, shared with other work, gave
	// this process about as much processor time in both.
	if share < baseShare/2 {
		t.Skipf("the machine got busier during the crowd: this process had %.0f%% of its %d processors, against %.0f%% before it; goodput cannot be compared", 100*share, runtime.GOMAXPROCS(0), 100*baseShare)
	}
	// The generator shares the processors with the server: on a busy
	// machine it falls behind its schedule. What it offered is what it
	// sent over the time it took to send it; under 1.3 times what the server
	// served before, there was no overload to show anything with.
	offered := float64(planned) / lastSend.Sub(start).Seconds()
	if offered < 1.3*ceiling {
		t.Skipf("the machine could not generate the overload: the crowd's %d requests went out at %.0f a second, under 1.3 times the %.0f a second served before it (planned %.0f, 1.5 times)", planned, offered, ceiling, rate)
	}

	var served, refused, gaveUp []time.Duration
	for _, a := range answers {
		switch {
		case a.err != nil:
			gaveUp = append(gaveUp, a.took)
		case a.code == http.StatusOK:
			served = append(served, a.took)
		case a.code == http.StatusServiceUnavailable:
			refused = append(refused, a.took)
			if a.retry != admit.RetryAfter {
				t.Errorf("a refusal with Retry-After %q, want %s", a.retry, admit.RetryAfter)
			}
		default:
			t.Errorf("a crowd request answered %d", a.code)
		}
	}
	goodput := float64(len(served)) / sent.Seconds()
	t.Logf("processors used: %.0f%% before the crowd, %.0f%% during it", 100*baseShare, 100*share)
	t.Logf("the crowd: %d sent at %.0f a second, all answered in %v: %d served (%.0f a second, median %v), %d refused (median %v), %d gave up; %d health checks, %d votes",
		planned, offered, sent.Round(time.Millisecond), len(served), goodput, median(served), len(refused), median(refused), len(gaveUp), len(health), votes)

	if len(refused) == 0 {
		t.Fatalf("nobody was refused at %.0f a second, over 1.3 times what 3 steady clients were served", offered)
	}
	if goodput < ceiling/2 {
		t.Errorf("goodput fell to %.0f a second under the crowd, under half of the %.0f served before it", goodput, ceiling)
	}
	counted := metricValue(t, reg, "admit_requests_total", `{class="sheddable",decision="refused"}`) - refusedBefore
	if counted < float64(len(refused)) || counted > float64(len(refused)+len(gaveUp)) {
		t.Errorf("admit_requests_total counted %v sheddable refusals; the crowd saw %d (and %d gave up)", counted, len(refused), len(gaveUp))
	}
	for _, err := range healthErrs {
		t.Errorf("a health check during the crowd: %v", err)
	}
	for i, code := range health {
		if code != http.StatusOK {
			t.Errorf("health check %d of %d during the crowd: %d, want 200", i+1, len(health), code)
		}
	}
	if votes < 2 {
		t.Errorf("only %d votes were made during the crowd", votes)
	}

	// After: nothing left inside, and a visitor's pages served again
	// once the door's measure of the processors' line is of the time
	// after the crowd (it reads the line every 50 ms or more, and starts
	// afresh after 100 ms without a request).
	waitInside(t, reg, 0)
	time.Sleep(150 * time.Millisecond)
	for i := range 20 {
		if code, _, _, err := get(context.Background(), overloadPage(2_000_000+i)); err != nil || code != http.StatusOK {
			t.Fatalf("page %d after the crowd: %d %v, want 200", i+1, code, err)
		}
	}
}

// cpuTime is the processor time this process has used so far.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processorShare is the share of GOMAXPROCS processors this process used
// over wall since it had used since.
func processorShare(t *testing.T, since, wall time.Duration) float64 {
	return (cpuTime(t) - since).Seconds() / wall.Seconds() / float64(runtime.GOMAXPROCS(0))
}

// median is the middle of ds (nearest rank), 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
