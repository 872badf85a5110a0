package model

import (
	"math"
	"strings"
	"testing"
)

// TestQuotaDemo holds the quota model to the demo, worked by hand:
// 5 a second held 1 s is N = 5 inside; 7 workers serve 7 a second at 1 s
// and 3.5 at 2 s; the quota holds the client to 5 ÷ 2 s = 2.5 a second
// (refusing the other 2.5), each answered in 2 s; without it 1.5 more a
// second arrive than leave, and a caller waits past its 2.5 s timeout
// from (2.5 − 2) × 3.5 ÷ 1.5 = 7/6 s after the release.
func TestQuotaDemo(t *testing.T) {
	q := QuotaRelease(5, 1000, 0, 2000, 7, 2500, "")
	for _, c := range []struct {
		name      string
		got, want Num
	}{
		{"quota", q.Quota, 5}, {"capacity before", q.CapacityBefore, 7}, {"capacity after", q.CapacityAfter, 3.5},
		{"quota rate", q.QuotaRate, 2.5}, {"with the quota before", q.WithQuotaBefore, 5}, {"with the quota after", q.WithQuotaAfter, 2.5},
		{"refused after", q.RefusedAfter, 2.5}, {"latency with the quota", q.QuotaLatencyMS, 2000},
		{"served without it", q.WithoutQuotaAfter, 3.5}, {"queue growth", q.QueueGrowth, 1.5}, {"late after", q.LateAfterS, 7.0 / 6},
	} {
		if math.Abs(float64(c.got-c.want)) > 1e-12 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if q.QuotaLate || !q.Defined {
		t.Errorf("late %v, defined %v: the quota's 2 s answers are within 2.5 s", q.QuotaLate, q.Defined)
	}
	// Scaled by a tenth in time, every rate is ten times and every time a
	// tenth: the same shape.
	s := QuotaRelease(50, 100, 0, 200, 7, 250, "quota")
	if float64(s.Quota) != 5 || float64(s.WithQuotaAfter) != 25 || float64(s.CapacityAfter) != 35 || math.Abs(float64(s.LateAfterS)-7.0/60) > 1e-12 {
		t.Errorf("scaled: N %v, with the quota %v, capacity %v, late after %v: want 5, 25, 35, 7/60", s.Quota, s.WithQuotaAfter, s.CapacityAfter, s.LateAfterS)
	}
}

// TestQuotaCases: the quota above the workers queues at the origin (N ÷
// c turns of R' each), no timeout means nobody is late, work alone past
// the timeout is late at once, and N = X × R is solved for X and R as
// Little's law does.
func TestQuotaCases(t *testing.T) {
	// 14 inside, 7 workers: the origin serves 35 a second, so 14 ÷ 35 s =
	// 400 ms each, past a 250 ms timeout.
	q := QuotaRelease(100, 100, 14, 200, 7, 250, "quota")
	if float64(q.Quota) != 10 {
		t.Fatalf("N = %v, want 100 × 0.1 = 10 (the given quota is implied)", q.Quota)
	}
	q = QuotaRelease(0, 100, 14, 200, 7, 250, QArrivals)
	if float64(q.Arrivals) != 140 || float64(q.WithQuotaAfter) != 35 || math.Abs(float64(q.QuotaLatencyMS)-400) > 1e-9 || !q.QuotaLate {
		t.Errorf("X %v, with the quota %v, latency %v, late %v: want 140, 35, 400 ms, late", q.Arrivals, q.WithQuotaAfter, q.QuotaLatencyMS, q.QuotaLate)
	}
	q = QuotaRelease(20, 0, 5, 200, 7, 0, QLatencyMS)
	if float64(q.LatencyMS) != 250 || !math.IsNaN(float64(q.LateAfterS)) || float64(q.QueueGrowth) != 0 {
		t.Errorf("R %v, late after %v, growth %v: want 250 ms, no value (no timeout), 0", q.LatencyMS, q.LateAfterS, q.QueueGrowth)
	}
	q = QuotaRelease(50, 100, 0, 300, 7, 250, "")
	if float64(q.LateAfterS) != 0 || !strings.Contains(q.Sentence, "every caller gives up") {
		t.Errorf("late after %v, %q: 300 ms of work passes a 250 ms timeout at once", q.LateAfterS, q.Sentence)
	}
	q = QuotaRelease(0, 100, 5, 200, 7, 250, QLatencyMS)
	if q.Defined || q.Message == "" || !math.IsNaN(float64(q.WithQuotaAfter)) {
		t.Errorf("defined %v, message %q, with the quota %v: R from N with no arrivals has no value", q.Defined, q.Message, q.WithQuotaAfter)
	}
}
