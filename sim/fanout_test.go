package sim_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"capacitylab/dist"
	"capacitylab/hedge"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/sim"
)

// bimodalModel is a lab of WAIT_MS=20 whose requests are a share p x = 20
// times as long as the rest (10.3 and 205 ms at p = 0.05), with workers
// enough never to queue.
func bimodalModel(t *testing.T, p string) sim.Model {
	t.Helper()
	spec, err := dist.ParseSpec("bimodal,p=" + p + ",x=20,seed=35")
	if err != nil {
		t.Fatal(err)
	}
	return sim.Model{Lab: labsvc.Config{Workers: 400, WaitMS: 20, CPUs: 1, Dist: spec}}
}

func mustHedge(t *testing.T, s string) hedge.Spec {
	t.Helper()
	sp, err := hedge.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// slowShare is the share of ok records slower than 60 ms, between the
// bimodal lab's modes.
func slowShare(rs []result.Record) float64 {
	slow, ok := 0, 0
	for _, r := range rs {
		if r.Outcome == result.OK {
			ok++
			if r.Latency() > 60*time.Millisecond {
				slow++
			}
		}
	}
	return float64(slow) / float64(max(ok, 1))
}

// Fan-out simulated: every arrival's k sub-requests are records in Seq
// order (sub-request 0 numbered with the arrivals, the others after
// them), all sent at its intended time; each request ends with its last
// sub-request; the lab served every sub-request; and the share of slow
// requests is within 2 points of 1 − (1 − p)^k for the share p of slow
// sub-requests.
func TestFanoutSimulated(t *testing.T) {
	for _, k := range []int{1, 10, 50} {
		sw := loadrun.Sweep{Rates: []float64{20}, Seconds: 60, Seed: 35, Fanout: k}
		rep, err := simulate(context.Background(), bimodalModel(t, "0.05"), sw, nil)
		if err != nil {
			t.Fatal(err)
		}
		w := rep.Windows[0]
		n := w.Row.Arrivals
		for i, r := range w.Records {
			if r.Seq != i || r.Outcome != result.OK || r.Copy != 0 {
				t.Fatalf("record %d: %+v; want Seq order, ok, no copies", i, r)
			}
			if r.Sub > 0 && (r.Seq != n+r.Request*(k-1)+r.Sub-1 || r.Intended != w.Records[r.Request].Intended) {
				t.Fatalf("sub-request %+v: want numbered after the arrivals and sent with its request", r)
			}
		}
		logical, subs := result.Fold(w.Records)
		if k == 1 {
			subs = logical
		}
		for i, l := range logical {
			last := time.Duration(0)
			for _, s := range subs[i*k : i*k+k] {
				last = max(last, s.End)
			}
			if l.End != last {
				t.Fatalf("request %d ended at %v, its last sub-request at %v", l.Seq, l.End, last)
			}
		}
		row := w.Row
		if row.SubRequests != n*k || row.Done != n*k || row.Attempts != n*k || row.Lost != 0 || row.OK != n {
			t.Errorf("fan-out %d: sub_requests %d, done %d, attempts %d, lost %d, ok %d of %d: want %d sub-requests sent and served", k, row.SubRequests, row.Done, row.Attempts, row.Lost, row.OK, n, n*k)
		}
		p, got := slowShare(subs), slowShare(logical)
		want := 1 - math.Pow(1-p, float64(k))
		t.Logf("fan-out %d: p %.4f, slow requests %.4f, 1 − (1 − p)^k %.4f; p50 %v, sub p99 %v, over_sub_p99 %v (1 − 0.99^k %.3f)", k, p, got, want, row.P50MS, row.SubP99MS, row.OverSubP99, 1-math.Pow(0.99, float64(k)))
		if math.Abs(got-want) > 0.02 {
			t.Errorf("fan-out %d: %.4f of requests slow, want within 2 points of %.4f", k, got, want)
		}
	}
}

// Hedging simulated, a fixed 30 ms: a request that has not answered by
// then gets one copy due exactly then; the first ok answer is taken and
// the other copy cancelled, the lab still serving it (done = attempts);
// the slow mode's 205 ms are cut to about 30 + 10.3 ms.
func TestHedgeSimulated(t *testing.T) {
	sw := loadrun.Sweep{Rates: []float64{100}, Seconds: 20, Seed: 35, Hedge: mustHedge(t, "delay_ms=30")}
	rep, err := simulate(context.Background(), bimodalModel(t, "0.05"), sw, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Windows[0]
	n := w.Row.Arrivals
	cancelled := 0
	for i, r := range w.Records {
		if r.Seq != i {
			t.Fatalf("record %d has Seq %d: want Seq order", i, r.Seq)
		}
		switch {
		case r.Copy == 0 && i >= n, r.Copy > 0 && (i < n || r.Copy != 1 || r.Intended != w.Records[r.Request].Intended+30*time.Millisecond):
			t.Fatalf("record %+v: want the arrivals first, then one copy each due 30 ms after its request", r)
		}
		if r.Outcome == result.Cancelled {
			cancelled++
		}
	}
	row := w.Row
	t.Logf("hedged at 30 ms: p99 %v ms, hedges %d of %d, %d cancelled, amplification %v", row.P99MS, row.Hedges, n, cancelled, row.Amplification)
	if row.Hedges == 0 || cancelled != row.Hedges || row.Done != row.Attempts || row.Attempts != n+row.Hedges || row.OK != n || row.Lost != 0 {
		t.Errorf("row %+v, %d cancelled: want copies sent, as many cancelled, every attempt served, every request ok", row, cancelled)
	}
	if row.P99MS < 40 || row.P99MS > 42 {
		t.Errorf("p99 %v ms: want the slow requests answered by their copy at 30 + 10.3 ms", row.P99MS)
	}
}

// Issue 35's hedging goal, simulated: at the p95 of recent latencies
// against a lab whose requests are 3% slow, the p99 at most half of the
// unhedged one, for at most 10% extra load; with each sub-request of a
// fan-out of 10 hedged on its own likewise.
func TestHedgeP95Simulated(t *testing.T) {
	for _, k := range []int{1, 10} {
		run := func(spec string) result.Row {
			sw := loadrun.Sweep{Rates: []float64{100 / float64(k)}, Seconds: 30, Seed: 35, Fanout: k, Hedge: mustHedge(t, spec)}
			rep, err := simulate(context.Background(), bimodalModel(t, "0.03"), sw, nil)
			if err != nil {
				t.Fatal(err)
			}
			return rep.Windows[0].Row
		}
		plain, hedged := run(""), run("percentile=95")
		t.Logf("fan-out %d: p99 %v → %v ms, sub p99 %v → %v ms, amplification %v, %d hedges", k, plain.P99MS, hedged.P99MS, plain.SubP99MS, hedged.SubP99MS, hedged.Amplification, hedged.Hedges)
		if hedged.P99MS*2 > plain.P99MS || hedged.Amplification > 1.1 || hedged.Hedges == 0 {
			t.Errorf("fan-out %d at the p95: p99 %v ms (unhedged %v), amplification %v: want at most half, for at most 1.1", k, hedged.P99MS, plain.P99MS, hedged.Amplification)
		}
	}
}

// Bad fan-out and hedging are refused naming what is allowed.
func TestFanoutHedgeRefused(t *testing.T) {
	m := bimodalModel(t, "0.05")
	for _, c := range []struct {
		w    result.Window
		want string
	}{
		{result.Window{Schedule: []time.Duration{0}, Fanout: 101}, "fan-out 101 is not allowed: want 1"},
		{result.Window{Clients: 2, Length: time.Second, Fanout: 2}, "fan-out and hedging are for an open loop only"},
		{result.Window{Schedule: []time.Duration{0}, Hedge: "delay_ms=0"}, `hedge's delay_ms "0" is not allowed`},
		{result.Window{Schedule: []time.Duration{0}, Hedge: "delay_ms=5", Retry: "retries=1"}, "does not go with fan-out or hedging"},
	} {
		if _, _, err := m.RunWindow(context.Background(), c.w); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("window %+v: %v, want %q", c.w, err, c.want)
		}
	}
}
