package loadrun_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	"capacitylab/internal/physics"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/result"
)

// checkSamples holds a window's samples to what result.Sample promises:
// they follow one another from 0 to the window's end, one per interval
// and a last one for what is left, and their counts add up to the row's,
// so lost stays 0.
func checkSamples(t *testing.T, w result.WindowReport, every time.Duration) {
	t.Helper()
	row := w.Row
	var sum result.Sample
	at := 0.0
	for k, s := range w.Samples {
		if s.Window != row.Window || math.Abs(s.AtS-at) > 1e-6 {
			t.Errorf("window %d sample %d: window %d at %.6f s, want window %d at %.6f s", row.Window, k, s.Window, s.AtS, row.Window, at)
		}
		last := k == len(w.Samples)-1
		if !last && s.Seconds != every.Seconds() || last && (s.Seconds <= 0 || s.Seconds > every.Seconds()) {
			t.Errorf("window %d sample %d lasts %v s, want %v (the last one: what is left)", row.Window, k, s.Seconds, every.Seconds())
		}
		at += s.Seconds
		sum.OK += s.OK
		sum.Refused += s.Refused
		sum.GaveUp += s.GaveUp
		sum.Errors += s.Errors
		sum.ClientBusy += s.ClientBusy
		sum.NotSent += s.NotSent
		if s.OK == 0 && (s.P50MS != 0 || s.P99MS != 0) || s.OK > 0 && (s.P50MS <= 0 || s.P99MS < s.P50MS) {
			t.Errorf("window %d sample %d: %d ok, p50 %v, p99 %v ms", row.Window, k, s.OK, s.P50MS, s.P99MS)
		}
	}
	end := w.Progress.ElapsedMS / 1000
	if want := int(math.Ceil(end / every.Seconds())); len(w.Samples) != want {
		t.Errorf("window %d ended at %.3f s with %d samples, want %d (one per %v and the rest)", row.Window, end, len(w.Samples), want, every)
	}
	if math.Abs(at-end) > 0.002 {
		t.Errorf("window %d: its samples cover %.6f s, the window ended at %.6f s", row.Window, at, end)
	}
	if sum.OK != row.OK || sum.Refused != row.Refused || sum.GaveUp != row.Gaveup || sum.Errors != row.Error ||
		sum.ClientBusy != row.ClientBusy || sum.NotSent != row.NotSent || row.Lost != 0 {
		t.Errorf("window %d: samples add up to ok %d, refused %d, gaveup %d, errors %d, client_busy %d, not_sent %d; the row has %d, %d, %d, %d, %d, %d (lost %d)",
			row.Window, sum.OK, sum.Refused, sum.GaveUp, sum.Errors, sum.ClientBusy, sum.NotSent,
			row.OK, row.Refused, row.Gaveup, row.Error, row.ClientBusy, row.NotSent, row.Lost)
	}
}

// A run over time against a real lab on loopback whose door lets 3
// requests in at once (POLICY=inflight,quota=3), with WAIT_MS raised from
// 20 to 120 ms 1.2 s into each window: every window's samples add up to its
// row, one a second and the rest; each sample went out as an event, in
// order, before the window's row; the lab read at each interval's end
// says limit 3; and the median of the ok answers follows the change (an
// answer takes at least WAIT_MS).
func TestSweepOverTimeAgainstLab(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 8, SpinMS: 0, WaitMS: 20, CPUs: 1, Policy: "inflight,quota=3"})
	sw := sweepOf(t, l, time.Second)
	change, err := result.ParseKnobChange("1200ms:WAIT_MS=120")
	if err != nil {
		t.Fatal(err)
	}
	const every = time.Second
	sw.Rates, sw.Seconds, sw.SampleEvery, sw.Changes = []float64{30, 60}, 2.5, every, []result.KnobChange{change}
	rep, events, err := collect(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Windows) != 2 {
		t.Fatalf("%d windows, want 2", len(rep.Windows))
	}
	// The sample events, window by window, are the report's samples.
	var sent [][]result.Sample
	rows := 0
	for _, e := range events {
		switch e.Kind {
		case result.EventSample:
			if e.Sample == nil || e.Window != rows || e.Sample.Window != rows {
				t.Fatalf("a sample event %+v during window %d", e, rows)
			}
			for len(sent) <= rows {
				sent = append(sent, nil)
			}
			sent[rows] = append(sent[rows], *e.Sample)
		case result.EventRow:
			rows++
		}
	}
	for i, w := range rep.Windows {
		checkSamples(t, w, every)
		if i >= len(sent) || !reflect.DeepEqual(sent[i], w.Samples) {
			t.Errorf("window %d: the sample events are not the window's samples", i)
		}
		labRead := 0
		for k, s := range w.Samples {
			t.Logf("window %d at %.1f s: ok %d refused %d gaveup %d in flight %d, lab %v queued %d in service %d limit %d, p50 %.1f p99 %.1f ms",
				i, s.AtS, s.OK, s.Refused, s.GaveUp, s.InFlight, s.Lab, s.Queued, s.InService, s.Limit, s.P50MS, s.P99MS)
			if s.Lab {
				labRead++
				if s.Limit != 3 || s.InService > 3 {
					t.Errorf("window %d sample %d: the lab's limit read as %d with %d in service, want limit 3 and at most 3 in service", i, k, s.Limit, s.InService)
				}
			}
		}
		if labRead == 0 {
			t.Errorf("window %d: the lab was read for none of %d samples", i, len(w.Samples))
		}
		// A read that took longer than a second is skipped; with the lab
		// idle but for a few requests, most are not where the machine
		// lets them answer in time.
		t.Run(fmt.Sprintf("window %d lab read", i), func(t *testing.T) {
			physics.Require(t)
			if labRead < len(w.Samples)-1 {
				t.Errorf("window %d: the lab was read for %d of %d samples", i, labRead, len(w.Samples))
			}
		})
		// Before the change (0–1 s) answers take 20 ms of waiting; from
		// 2 s on every one sent after 1.2 s waits 120 ms.
		before, after := w.Samples[0], w.Samples[2]
		if before.OK == 0 || after.OK == 0 {
			t.Fatalf("window %d: %d ok before the change, %d after", i, before.OK, after.OK)
		}
		if after.P50MS < 120 {
			t.Errorf("window %d: the median after WAIT_MS=120 is %.1f ms, below the wait", i, after.P50MS)
		}
		if before.P50MS >= 120 {
			t.Errorf("window %d: the median before the change is %.1f ms, want well under 120 (WAIT_MS=20)", i, before.P50MS)
		}
	}
}

// A client of 2 workers against answers of 100 ms, sampled every 500 ms:
// the arrivals the workers could not take are counted in the samples'
// client_busy (and add up to the row's), and the generator never has more
// than 2 in flight at an interval's end.
func TestOpenSampledClientWorkers(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 8, SpinMS: 0, WaitMS: 100, CPUs: 1})
	sw := sweepOf(t, l, time.Second)
	const every = 500 * time.Millisecond
	sw.Rates, sw.Seconds, sw.SampleEvery, sw.ClientWorkers = []float64{50}, 1.6, every, 2
	rep, _, err := collect(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	checkSamples(t, w, every)
	if w.Row.ClientBusy == 0 {
		t.Errorf("no arrival found both workers busy: %+v", w.Row)
	}
	for k, s := range w.Samples {
		if s.InFlight > 2 {
			t.Errorf("sample %d: %d in flight, more than the client's 2 workers", k, s.InFlight)
		}
	}
}

// A closed loop is sampled too.
func TestClosedSampled(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 2, SpinMS: 0, WaitMS: 10, CPUs: 1})
	sw := sweepOf(t, l, time.Second)
	const every = 300 * time.Millisecond
	sw.Clients, sw.Seconds, sw.SampleEvery = []int{3}, 1, every
	rep, _, err := collect(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	checkSamples(t, rep.Windows[0], every)
}

// SampleRecords, by hand: each record counts in the interval it ended in
// (a record never sent: when it was due), the latencies are those of the
// ok answers that ended in the interval, in flight is counted at each
// interval's end, and the last interval lasts to the window's end.
func TestSampleRecords(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	recs := []result.Record{
		{Seq: 0, Intended: ms(0), Sent: ms(0), End: ms(50), Outcome: result.OK},    // [0,100): ok 50 ms
		{Seq: 1, Intended: ms(10), Sent: ms(10), End: ms(150), Outcome: result.OK}, // [100,200): ok 140 ms; in flight at 100
		{Seq: 2, Intended: ms(20), Sent: ms(20), End: ms(20), Outcome: result.NotSent, Reason: result.ReasonInFlightCap},
		{Seq: 3, Intended: ms(30), Sent: ms(30), End: ms(30), Outcome: result.NotSent, Reason: result.ReasonClientBusy},
		{Seq: 4, Intended: ms(90), Sent: ms(95), End: ms(310), Outcome: result.Gaveup},    // [300,...): in flight at 100, 200, 300
		{Seq: 5, Intended: ms(120), Sent: ms(120), End: ms(130), Outcome: result.Refused}, // [100,200)
		{Seq: 6, Intended: ms(199), Sent: ms(199), End: ms(200), Outcome: result.Error},   // [200,300): ended on the boundary
	}
	got := loadrun.SampleRecords(1, recs, ms(320), 100*time.Millisecond)
	want := []result.Sample{
		{Window: 1, AtS: 0, Seconds: 0.1, OK: 1, NotSent: 1, ClientBusy: 1, P50MS: 50, P99MS: 50, InFlight: 2, Attempts: 1},
		{Window: 1, AtS: 0.1, Seconds: 0.1, OK: 1, Refused: 1, P50MS: 140, P99MS: 140, InFlight: 1, Attempts: 2},
		{Window: 1, AtS: 0.2, Seconds: 0.1, Errors: 1, InFlight: 1, Attempts: 1},
		{Window: 1, AtS: 0.3, Seconds: 0.02, GaveUp: 1, Attempts: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("%d samples, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g := got[i]
		g.AtS, g.Seconds = math.Round(g.AtS*1e6)/1e6, math.Round(g.Seconds*1e6)/1e6
		if !reflect.DeepEqual(g, want[i]) {
			t.Errorf("sample %d:\n got %+v\nwant %+v", i, g, want[i])
		}
	}
}

// A sweep's sampling interval below MinSampleEvery is refused, saying
// what is allowed.
func TestSweepValidateSampleEvery(t *testing.T) {
	sw := loadrun.Sweep{Rates: []float64{10}, Seconds: 1, SampleEvery: 10 * time.Millisecond}
	err := sw.ValidatePlan()
	if err == nil || err.Error() != fmt.Sprintf("sampling interval 10ms is not allowed: want 0 (no samples) or at least %v", loadrun.MinSampleEvery) {
		t.Errorf("ValidatePlan: %v", err)
	}
}

// BenchmarkSendLagSampled measures what sampling costs the sender:
// pairs of 2 s Poisson windows at 2,000 a second against a lab in this
// process that answers at once, one window plain and one sampled every
// 100 ms (ten times as often as a run over time) with the lab's /stats
// read at each interval's end, the same schedule, in alternating order.
// It reports over b.N pairs the median send-lag p99 of each kind, the
// median of the pairs' differences and the worst of each:
//
//	plain_lag_p99_ms       median over the plain windows
//	sampled_lag_p99_ms     median over the sampled windows
//	diff_median_ms         median of (sampled − plain), pair by pair
//	plain_worst_ms, sampled_worst_ms
//
// Run with -benchtime=9x on a quiet machine; the goal is a difference
// within the machine's noise (the plain windows' own spread).
// LOADRUN_BENCH_SAMPLE_EVERY=1s samples as a run over time does.
func BenchmarkSendLagSampled(b *testing.B) {
	l := startLab(b, labsvc.Config{Workers: 64, SpinMS: 0, WaitMS: 0, CPUs: 1})
	target, err := loadrun.NewTarget(l.target, result.DefaultTimeout)
	if err != nil {
		b.Fatal(err)
	}
	ctl, err := loadrun.NewControl(l.control, nil)
	if err != nil {
		b.Fatal(err)
	}
	const rate, seconds = 2000, 2
	sampling := loadrun.Sampling{Every: sampleEveryBench(), Lab: ctl.Stats}
	run := func(seed uint64, s loadrun.Sampling) float64 {
		sched, err := loadrun.Schedule(loadrun.Poisson, rate, seconds, seed)
		if err != nil {
			b.Fatal(err)
		}
		res := loadrun.Open{Target: target, Schedule: sched, Sampling: s}.Run(context.Background(), nil)
		row := res.Metrics.Row(rate, seconds*time.Second)
		if row.Lost != 0 {
			b.Fatalf("lost %d", row.Lost)
		}
		if s.Every > 0 && len(res.Samples) < int(time.Duration(seconds)*time.Second/s.Every) {
			b.Fatalf("%d samples in %d s at every %v", len(res.Samples), seconds, s.Every)
		}
		return row.SendLagP99MS
	}
	var plain, sampled, diff []float64
	for i := 0; b.Loop(); i++ {
		seed := uint64(i + 1)
		var p, s float64
		if i%2 == 0 {
			p = run(seed, loadrun.Sampling{})
			s = run(seed, sampling)
		} else {
			s = run(seed, sampling)
			p = run(seed, loadrun.Sampling{})
		}
		plain, sampled, diff = append(plain, p), append(sampled, s), append(diff, s-p)
	}
	median := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		return v[len(v)/2]
	}
	b.ReportMetric(median(plain), "plain_lag_p99_ms")
	b.ReportMetric(median(sampled), "sampled_lag_p99_ms")
	b.ReportMetric(median(diff), "diff_median_ms")
	b.ReportMetric(slices.Max(plain), "plain_worst_ms")
	b.ReportMetric(slices.Max(sampled), "sampled_worst_ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkSampledAllocs counts the allocations of a whole 1 s window at
// 2,000 a second against an instant target in this process (generator and
// target together), plain and sampled every 100 ms, per request: what
// sampling adds per request is the difference (its own per-interval
// work, with no lab to read, spread over the requests).
func BenchmarkSampledAllocs(b *testing.B) {
	target, err := loadrun.NewTarget(loadrun.StartInstant(b), result.DefaultTimeout)
	if err != nil {
		b.Fatal(err)
	}
	sched, err := loadrun.Schedule(loadrun.Uniform, 2000, 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	allocs := func(s loadrun.Sampling) float64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res := loadrun.Open{Target: target, Schedule: sched, Sampling: s}.Run(context.Background(), nil)
		runtime.ReadMemStats(&after)
		if row := res.Metrics.Row(2000, time.Second); row.Lost != 0 || (s.Every > 0 && len(res.Samples) < 10) {
			b.Fatalf("lost %d, %d samples", row.Lost, len(res.Samples))
		}
		time.Sleep(100 * time.Millisecond) // let the target's handlers finish
		return float64(after.Mallocs-before.Mallocs) / float64(len(sched))
	}
	var plain, sampled []float64
	for b.Loop() {
		plain = append(plain, allocs(loadrun.Sampling{}))
		sampled = append(sampled, allocs(loadrun.Sampling{Every: 100 * time.Millisecond}))
	}
	b.ReportMetric(slices.Min(plain), "plain_allocs/request")
	b.ReportMetric(slices.Min(sampled), "sampled_allocs/request")
	b.ReportMetric(0, "ns/op")
}

// sampleEveryBench is BenchmarkSendLagSampled's interval: 100 ms (ten
// times as often as a run over time), or LOADRUN_BENCH_SAMPLE_EVERY.
func sampleEveryBench() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("LOADRUN_BENCH_SAMPLE_EVERY")); err == nil && d > 0 {
		return d
	}
	return 100 * time.Millisecond
}

// A retrying client's attempts: each attempt counts in the interval it
// ended in, each request once, by its last attempt, its latency from its
// first attempt's intended time; classes are counted by class.
func TestSampleRecordsRetries(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	recs := []result.Record{
		{Seq: 0, Intended: 0, Sent: 0, End: ms(100), Outcome: result.Gaveup, Class: result.Critical},
		{Seq: 1, Intended: ms(10), Sent: ms(10), End: ms(50), Outcome: result.OK},
		{Seq: 2, Intended: ms(60), Sent: ms(60), End: ms(60), Outcome: result.NotSent, Reason: result.ReasonBreakerOpen},
		{Seq: 3, Request: 0, Attempt: 1, Intended: ms(100), Sent: ms(101), End: ms(150), Outcome: result.OK, Class: result.Critical},
	}
	got := loadrun.SampleRecords(0, recs, ms(200), 100*time.Millisecond)
	want := []result.Sample{
		{Window: 0, AtS: 0, Seconds: 0.1, OK: 1, BreakerOpen: 1, P50MS: 40, P99MS: 40, InFlight: 1, Attempts: 1,
			ByClass: []result.ClassSample{{Class: result.Critical}, {Class: result.Default, OK: 1}, {Class: result.Sheddable}}},
		{Window: 0, AtS: 0.1, Seconds: 0.1, OK: 1, P50MS: 150, P99MS: 150, Attempts: 2,
			ByClass: []result.ClassSample{{Class: result.Critical, OK: 1}, {Class: result.Default}, {Class: result.Sheddable}}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d samples, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g := got[i]
		g.AtS, g.Seconds = math.Round(g.AtS*1e6)/1e6, math.Round(g.Seconds*1e6)/1e6
		if !reflect.DeepEqual(g, want[i]) {
			t.Errorf("sample %d:\n got %+v\nwant %+v", i, g, want[i])
		}
	}
	var m result.Metrics
	for _, r := range result.Logical(recs) {
		m.Add(r)
	}
	row := m.Row(15, 200*time.Millisecond)
	if row.Arrivals != 3 || row.Sent != 2 || row.OK != 2 || row.Attempts != 3 || row.Amplification != 1.5 || row.BreakerOpen != 1 || row.Lost != 0 || row.NotSent != 0 {
		t.Errorf("row %+v: want 3 arrivals, 2 sent and ok, 3 attempts (amplification 1.5), 1 breaker_open, lost 0", row)
	}
	if len(row.ByClass) != 3 || row.ByClass[0].OK != 1 || row.ByClass[0].P99MS != 150 {
		t.Errorf("by class %+v: want critical's one ok, 150 ms", row.ByClass)
	}
}
