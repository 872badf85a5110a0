package main

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"capacitylab/affinity"
	"capacitylab/internal/physics"
	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
	"capacitylab/loadrun"
	"capacitylab/result"
)

const msec = time.Millisecond

// Seconds count as result.Sample counts: answers by the second they
// ended in, arrivals not sent by the second they were due in; the time in
// flight is spread over the seconds it spans.
func TestPerSecond(t *testing.T) {
	recs := []result.Record{
		{Seq: 0, Intended: 500 * msec, Sent: 500 * msec, End: 1200 * msec, Outcome: result.OK, Status: 200},
		{Seq: 1, Intended: 700 * msec, Sent: 700 * msec, End: 700 * msec, Outcome: result.NotSent, Reason: result.ReasonClientBusy},
		{Seq: 2, Intended: 1500 * msec, Sent: 1500 * msec, End: 1502 * msec, Outcome: result.Refused, Status: 503},
		{Seq: 3, Intended: 2100 * msec, Sent: 2100 * msec, End: 2350 * msec, Outcome: result.Gaveup, Reason: result.ReasonReadTimeout},
		{Seq: 4, Intended: 2900 * msec, Sent: 2900 * msec, End: 2900 * msec, Outcome: result.NotSent, Reason: result.ReasonInFlightCap},
		{Seq: 5, Intended: 1900 * msec, Sent: 1900 * msec, End: 2000 * msec, Outcome: result.OK, Status: 200},
	}
	secs := perSecond(recs)
	want := []second{
		{At: 0, Busy: 1, InFlight: 0.5},
		{At: 1, OK: 1, Refused: 1, P99MS: 700, InFlight: 0.2 + 0.002 + 0.1},
		{At: 2, OK: 1, GaveUp: 1, NotSt: 1, P99MS: 100, InFlight: 0.25},
	}
	if len(secs) != len(want) {
		t.Fatalf("%d seconds, want %d: %+v", len(secs), len(want), secs)
	}
	for i := range want {
		got := secs[i]
		if math.Abs(got.InFlight-want[i].InFlight) > 1e-9 {
			t.Errorf("second %d in flight %.4f, want %.4f", i, got.InFlight, want[i].InFlight)
		}
		got.InFlight = want[i].InFlight
		if got != want[i] {
			t.Errorf("second %d: %+v, want %+v", i, got, want[i])
		}
	}
	sp := spanOf(recs, secs, 1, 3)
	if sp.OK != 1 || sp.Refused != 0.5 || sp.GaveUp != 0.5 || sp.Errors != 0.5 || sp.P99MS != 700 {
		t.Errorf("seconds 1 and 2: %+v, want 1 ok, 0.5 refused, gave up and not sent a second, p99 700", sp)
	}
}

// Convergence: from the first second whose rest of the window averages
// the goal, with no 3-second dip deeper than chance at the goal allows.
func TestConverged(t *testing.T) {
	mk := func(oks ...int) []second {
		s := make([]second, len(oks))
		for i, ok := range oks {
			s[i] = second{At: i, OK: ok}
		}
		return s
	}
	for _, c := range []struct {
		name string
		secs []second
		want int
	}{
		{"settles two seconds after the release", mk(50, 50, 50, 50, 50, 10, 20, 33, 32, 33, 31, 34, 32, 33, 30, 3), 7},
		{"a dip deeper than chance comes later", mk(50, 50, 50, 50, 50, 40, 40, 40, 40, 40, 40, 40, 12, 12, 12, 40, 40, 40, 40, 40, 3), 14},
		{"never at the goal", mk(50, 50, 50, 50, 50, 30, 30, 30, 30, 30, 30, 30, 30, 30, 3), -1},
	} {
		if got := converged(c.secs, 5, len(c.secs)-1, 3, 31.5); got != c.want {
			t.Errorf("%s: converged at %d, want %d", c.name, got, c.want)
		}
	}
}

// The bad release on a real lab served in process over loopback, short:
// 7 workers whose 100 ms of work becomes 200 ms 4 s into a 13 s window
// (capacity 70 a second, then 35), a client of 10 workers sending 50 a
// second (Poisson), each caller waiting 250 ms; "after" is the seconds
// from 6 to 13. It holds the experiments' shapes, not their tight figures
// (those are bench/release.sh's, in docs/BENCHMARKS.md): 1 the queue
// drowns, 2 twenty workers answer in time what the client sends, 3 a
// quota of 5 holds the client near N ÷ R' = 25 a second and never above
// it, 4 sojourn with the callers' timeout delivers more than the quota.
// Bounds on counts leave room for the arrivals' chance over 7 s (a count
// of 21.8 a second, what Erlang's B says the quota carries, varies by
// ±1.8 a second there). A physics check (it takes about a minute of a
// live lab and a generator on time). What depends most on the machine's
// timing (how many give up in the 50 ms a 200 ms service leaves under a
// 250 ms timeout, how long the quota's places take to turn over) is held
// only when threads woke on time during the runs; otherwise the test skips
// saying what it measured: at load average 11 to 14 here, wake-ups 1 to
// 3 ms late nine times in ten and up to 280 ms, the quota carried 16.9 a
// second and the queue's gave-up was 1.9 times its ok.
func TestBadReleaseOnTheLab(t *testing.T) {
	physics.Require(t)
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	stop := make(chan struct{})
	probe, perr := affinity.WakeLate(cpus, 5*msec, stop)
	const release, from, to = 4, 6, 13
	type outcome struct {
		before, after span
		svcMS         float64
	}
	run := func(workers int, policy string) outcome {
		t.Helper()
		cfg := labsvc.Config{Workers: workers, WaitMS: 100, CPUs: 1}
		cfg, err := cfg.Set("POLICY", policy)
		if err != nil {
			t.Fatal(err)
		}
		l := labtest.Serve(t, cfg)
		target, control := l.Target, l.Control
		tg, err := loadrun.NewTarget(target, 250*msec)
		if err != nil {
			t.Fatal(err)
		}
		ctl, err := loadrun.NewControl(control, nil)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := result.ParseKnobChange(fmt.Sprintf("%ds:WAIT_MS=200", release))
		if err != nil {
			t.Fatal(err)
		}
		sw := loadrun.Sweep{Target: tg, Control: &ctl, Rates: []float64{50}, Seconds: to, Seed: 17,
			ClientWorkers: 10, Changes: []result.KnobChange{ch}}
		rep, err := sw.Run(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if row := rep.Rows()[0]; row.Lost != 0 {
			t.Fatalf("%s: lost %d, want 0", policy, row.Lost)
		}
		recs := rep.Records()
		secs := perSecond(recs)
		var svc []float64
		for _, r := range recs {
			if r.Outcome == result.OK && r.End >= from*time.Second && r.ServiceMS >= 0 {
				svc = append(svc, r.ServiceMS)
			}
		}
		res := outcome{spanOf(recs, secs, 1, release), spanOf(recs, secs, from, to), quantile(svc, 0.5)}
		t.Logf("WORKERS=%d POLICY=%s: before %+v; after %+v; the lab's median service after %.1f ms", workers, policy, res.before, res.after, res.svcMS)
		return res
	}
	drowned := run(7, "queue")
	up := run(20, "queue")
	quota := run(7, "inflight,quota=5")
	sojourn := run(7, "sojourn,target_ms=24,timeout_ms=245")
	close(stop)
	quiet, floor := false, "the wake-up floor was not measured"
	if perr != nil {
		floor += ": " + perr.Error()
	} else if late := <-probe; len(late) > 0 {
		slices.Sort(late)
		// A 200 ms service under a 250 ms timeout leaves 50 ms: one stall
		// of the machine longer than that (in a nap's lateness) can turn a
		// request that should be answered into a give-up, so a quiet
		// machine is one whose threads woke within 1 ms nine times in ten
		// and never past half that slack.
		p90, worst := late[len(late)*9/10], late[len(late)-1]
		quiet = p90 <= time.Millisecond && worst <= 25*time.Millisecond
		floor = fmt.Sprintf("a thread woke %v late nine times in ten, at most %v (%d naps)", p90, worst, len(late))
	}
	if raceEnabled {
		// The detector slows the generator's reading and the lab several
		// times over, beside the rest of go test -race ./...: CI's run
		// had 23.0 giving up a second against 11.7 answered (1.97 times;
		// 2.3 to 2.6 alone, with or without it).
		quiet, floor = false, "built with the race detector, "+floor
	}

	// What holds on a machine that is not overloaded. 1: before the release the lab answers
	// nearly every request sent in time; after it more of those sent give
	// up than are answered, while the lab serves callers who left.
	if b, a := drowned.before, drowned.after; b.OK < 0.95*(b.OK+b.GaveUp+b.Refused) || a.GaveUp <= a.OK {
		t.Errorf("1, queue: before %.1f ok and %.1f gave up a second, after %.1f and %.1f: want 95%% answered before, and more giving up than answered after", b.OK, b.GaveUp, a.OK, a.GaveUp)
	}
	// 2: twenty workers refuse nobody and answer in time at least 90% of
	// what the client sends (the client's own ten workers turn some
	// arrivals away first: Erlang's B of 10 servers at 10 erlangs, 21%).
	if a := up.after; a.Refused != 0 || a.OK < 0.9*(a.OK+a.GaveUp) {
		t.Errorf("2, 20 workers: after the release %.1f ok, %.1f refused, %.1f gave up a second: want none refused and 90%% of those sent answered in time", a.OK, a.Refused, a.GaveUp)
	}
	// 3: a quota of 5 inside holds the client to at most N ÷ R' = 25 a
	// second (26 allows for the requests inside at the span's edges).
	if a := quota.after; a.OK > 26 {
		t.Errorf("3, quota 5: after the release %.1f ok a second: want at most 26 (N ÷ R' = 25)", a.OK)
	}
	// 4: the best adaptive policy here delivers more than the quota.
	if sojourn.after.OK < quota.after.OK+3 {
		t.Errorf("4: sojourn with the callers' timeout delivered %.1f ok a second after the release, the quota %.1f: want at least 3 more", sojourn.after.OK, quota.after.OK)
	}
	if !quiet {
		physics.Skip(t, "the queue drowning with two in three giving up, nobody giving up with 20 workers or under the quota, the quota carrying at least 70%% of N ÷ R', and its own throughput, ok ÷ (mean in flight ÷ R'), within 10%% of 1: %s; the check needs nine naps in ten within 1 ms and none later than 25 ms (the four shapes above were checked)", floor)
	}
	// What holds where threads wake on time (a late generator holds its
	// client's workers longer, and its callers' 250 ms run out sooner).
	if a := drowned.after; a.GaveUp < 2*a.OK {
		t.Errorf("1, queue: after the release %.1f ok and %.1f gave up a second on a quiet machine (%s): want at least twice as many giving up", a.OK, a.GaveUp, floor)
	}
	if up.after.GaveUp > 0.5 || quota.after.GaveUp > 0.5 {
		t.Errorf("%.1f gave up a second with 20 workers and %.1f under the quota after the release on a quiet machine (%s): want none", up.after.GaveUp, quota.after.GaveUp, floor)
	}
	// The quota carries at least 70% of N ÷ R' (Erlang's B: 87%, its
	// places standing empty until the next arrival), and what it carries
	// is what it holds over the service time: ok = in flight ÷ R'
	// (Little's law; in flight as the generator sees it, a little more
	// than the lab's).
	if a := quota.after; a.OK < 0.7*25 {
		t.Errorf("3, quota 5: after the release %.1f ok a second on a quiet machine (%s): want at least 17.5 (70%% of N ÷ R' = 25)", a.OK, floor)
	}
	if r := quota.after.OK / (quota.after.InFlight / (quota.svcMS / 1000)); math.Abs(r-1) > 0.1 {
		t.Errorf("3, quota 5: %.1f ok a second with %.2f in flight and a %.0f ms service: ok ÷ (in flight ÷ R') = %.2f, want within 10%% of 1 (%s)", quota.after.OK, quota.after.InFlight, quota.svcMS, r, floor)
	}
}
