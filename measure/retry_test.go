package measure_test

import (
	"math"
	"testing"

	"capacitylab/labsvc"
	"capacitylab/measure"
	"capacitylab/result"
)

// A preset's retrying client and classes reach the load child's sweep: at
// a lab of one worker with room for one more (ceiling 50 a second, the
// rest refused) at 100 a second, a client retrying refusals twice makes
// more attempts than requests, and the requests carry the classes asked
// for, in about the shares asked for (the draw is the window's seed's, so
// the counts are the same on every run).
func TestMeasureRetryAndClasses(t *testing.T) {
	p := measure.Preset{Config: labsvc.Config{Workers: 1, SpinMS: 0, WaitMS: 20, Limit: 1, CPUs: 1}, Rates: []float64{100}, Seconds: 1, Seed: 5,
		Retry: "retries=2,on=refused", Critical: 0.3, Sheddable: 0.2}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if sw := p.Sweep(); sw.Retry.Retries != 2 || sw.Critical != 0.3 || sw.Sheddable != 0.2 {
		t.Fatalf("the preset's sweep has retry %q, critical %g, sheddable %g", sw.Retry, sw.Critical, sw.Sheddable)
	}
	var rec recording
	if _, err := measure.Measure(t.Context(), children(t, "1"), p, rec.handle); err != nil {
		t.Fatal(err)
	}
	if len(rec.windows) != 1 {
		t.Fatalf("%d windows handed over, want 1", len(rec.windows))
	}
	w := rec.windows[0]
	if w.Row.Lost != 0 || w.Row.Refused == 0 {
		t.Fatalf("row %+v: want refusals at twice the lab's ceiling and nothing lost", w.Row)
	}
	if w.Row.Attempts <= w.Row.Sent || w.Row.Amplification <= 1 {
		t.Errorf("%d attempts for %d requests sent (amplification %g): want the refusals retried", w.Row.Attempts, w.Row.Sent, w.Row.Amplification)
	}
	n := map[result.Class]int{}
	first := 0
	for _, r := range w.Records {
		if r.Attempt == 0 {
			n[r.Class]++
			first++
		}
	}
	for _, c := range []struct {
		class result.Class
		share float64
	}{{result.Critical, 0.3}, {result.Sheddable, 0.2}, {result.Default, 0.5}} {
		if got := float64(n[c.class]) / float64(first); math.Abs(got-c.share) > 0.15 {
			t.Errorf("%s: %d of %d requests (%.2f), want about %g", c.class, n[c.class], first, got, c.share)
		}
	}
	if len(w.Row.ByClass) == 0 {
		t.Errorf("row has no by_class: want each class's requests counted")
	}
}
