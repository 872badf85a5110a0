package model

import (
	"math"
	"testing"
)

// TestAIMDHandWorked is the saw-tooth worked by hand: C1 = 14, C2 = 7 at
// 6 s, a = 1, b = 0.75, floor 1, 1 s intervals for 16 s, the limit
// starting at C1.
//
//	t  C   L                rule
//	0  14  14               ≤ 14 (at it): +1
//	1  14  15               > 14: × 0.75
//	2  14  11.25            +1
//	3  14  12.25            +1
//	4  14  13.25            +1
//	5  14  14.25            > 14: × 0.75
//	6   7  10.6875          > 7: × 0.75       (the step)
//	7   7   8.015625        > 7: × 0.75
//	8   7   6.01171875      ≤ 7, just cut against 7: settled, 8 − 6 = 2 s
//	9   7   7.01171875      > 7: × 0.75
//	10  7   5.2587890625
//	11  7   6.2587890625                       (the last half after the step: 11 to 16 s)
//	12  7   7.2587890625
//	13  7   5.444091796875
//	14  7   6.444091796875
//	15  7   7.444091796875
//
// From the step on the limit runs from 5.2587890625 to 10.6875. Over
// 11–15 s its mean is 32.849853515625 ÷ 5 = 6.569970703125; within
// capacity (min(L, 7)) it lets in 32.14697265625 ÷ 5 = 6.42939453125,
// 91.848…% of 7.
func TestAIMDHandWorked(t *testing.T) {
	r := AIMDLimit(14, 7, 6, 1, 0.75, 1000, 1, 16)
	want := []float64{14, 15, 11.25, 12.25, 13.25, 14.25, 10.6875, 8.015625, 6.01171875, 7.01171875, 5.2587890625, 6.2587890625, 7.2587890625,
		5.444091796875, 6.444091796875, 7.444091796875}
	if len(r.Limit) != len(want) {
		t.Fatalf("%d intervals, want %d", len(r.Limit), len(want))
	}
	for k, w := range want {
		c := 14.0
		if k >= 6 {
			c = 7
		}
		if float64(r.Limit[k]) != w || float64(r.Capacity[k]) != c || float64(r.TimeS[k]) != float64(k) {
			t.Errorf("interval %d: t %v, C %v, L %v; want %d, %v, %v", k, r.TimeS[k], r.Capacity[k], r.Limit[k], k, c, w)
		}
	}
	for _, c := range []struct {
		name      string
		got, want Num
	}{
		{"settle", r.SettleS, 2}, {"min after", r.MinAfter, 5.2587890625}, {"max after", r.MaxAfter, 10.6875},
		{"tail from", r.TailFromS, 11}, {"mean", r.MeanLimit, 6.569970703125}, {"delivered", r.DeliveredPct, 100 * 6.42939453125 / 7},
	} {
		if math.Abs(float64(c.got-c.want)) > 1e-12 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if !r.Stepped || r.Floored {
		t.Errorf("stepped %v, floored %v: want a step and no collapse", r.Stepped, r.Floored)
	}
}

// TestAIMDCapacityUp: when capacity rises the limit climbs by a an
// interval until it passes C2 and is cut under it: settled then.
func TestAIMDCapacityUp(t *testing.T) {
	// Starting at C1 = 8: 8 (at it, +1), 9 (over, × 0.75) → 6.75
	// at 2 s, 7.75 at 3 s, 8.75 at 4 s (the step to 12), 9.75, 10.75,
	// 11.75, 12.75 at 8 s (over 12), cut to 9.5625 at 9 s: settled 5 s
	// after the step, its highest 12.75.
	r := AIMDLimit(8, 12, 4, 1, 0.75, 1000, 1, 14)
	if math.Abs(float64(r.SettleS)-5) > 1e-12 || float64(r.MaxAfter) != 12.75 || float64(r.MinAfter) != 8.75 {
		t.Errorf("settle %v s, min %v, max %v: want 5 s, 8.75 and 12.75; limit %v", r.SettleS, r.MinAfter, r.MaxAfter, r.Limit)
	}
}

// TestAIMDBackoffTradeOff: a gentler cut keeps the saw-tooth nearer the
// capacity, so it lets in more of it (the widget's lesson).
func TestAIMDBackoffTradeOff(t *testing.T) {
	harsh := AIMDLimit(17.5, 8.75, 5, 1, 0.5, 100, 1, 15)
	gentle := AIMDLimit(17.5, 8.75, 5, 1, 0.9, 100, 1, 15)
	if !(float64(gentle.DeliveredPct) > float64(harsh.DeliveredPct)) {
		t.Errorf("backoff 0.9 lets in %v%%, 0.5 %v%%: the gentler cut should let in more", gentle.DeliveredPct, harsh.DeliveredPct)
	}
	t.Logf("C 17.5 → 8.75, a = 1 per 100 ms: backoff 0.5 lets in %.1f%%, 0.9 %.1f%%", float64(harsh.DeliveredPct), float64(gentle.DeliveredPct))
}
