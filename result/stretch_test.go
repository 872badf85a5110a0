package result

import (
	"math"
	"testing"
)

// ReadStretch reads the samples wholly inside [from, to) of one window:
// counts a second, what was inside as means (the lab's over the seconds
// it was read), percentiles as the lowest and highest second's among the
// seconds with an ok answer.
func TestReadStretch(t *testing.T) {
	samples := []Sample{
		{Window: 0, AtS: 0, Seconds: 1, OK: 50},
		{Window: 0, AtS: 1, Seconds: 1, OK: 30, GaveUp: 2, InFlight: 4, Lab: true, Queued: 1, InService: 7, Limit: 8, P50MS: 200, P99MS: 240},
		{Window: 0, AtS: 2, Seconds: 1, OK: 0, GaveUp: 6, InFlight: 6},
		{Window: 0, AtS: 3, Seconds: 1, OK: 33, ClientBusy: 3, InFlight: 8, Lab: true, Queued: 3, InService: 7, Limit: 10, P50MS: 210, P99MS: 230},
		{Window: 0, AtS: 4, Seconds: 0.25, OK: 4}, // the moment past the window's end
		{Window: 1, AtS: 1, Seconds: 1, OK: 99},
	}
	st := ReadStretch(samples, 0, 1, 4)
	if st.Samples != 3 || st.Seconds != 3 || st.OK != 63 || st.GaveUp != 8 || st.ClientBusy != 3 {
		t.Fatalf("stretch = %+v, want the three seconds from 1 s to 4 s of window 0", st)
	}
	for _, c := range []struct {
		col    string
		lo, hi float64
	}{
		{"ok", 21, 21},               // 63 in 3 s
		{"gaveup", 8.0 / 3, 8.0 / 3}, // a second
		{"client_busy", 1, 1},        // 3 in 3 s
		{"in_flight", 6, 6},          // (4 + 6 + 8) ÷ 3
		{"queued", 2, 2},             // over the two seconds the lab was read
		{"limit", 9, 9},              // likewise
		{"p99_ms", 230, 240},         // the seconds with ok answers
		{"p50_ms", 200, 210},         // likewise
	} {
		lo, hi, ok := st.Column(c.col)
		if !ok || math.Abs(lo-c.lo) > 1e-9 || math.Abs(hi-c.hi) > 1e-9 {
			t.Errorf("%s = %g..%g (%v), want %g..%g", c.col, lo, hi, ok, c.lo, c.hi)
		}
	}
	if _, _, ok := st.Column("ok_per_sec"); ok {
		t.Error("ok_per_sec is a window's column, not a stretch's: want ok false")
	}
	empty := ReadStretch(samples, 0, 5, 9)
	if lo, _, _ := empty.Column("ok"); !math.IsNaN(lo) {
		t.Errorf("a stretch with no samples reads ok %g, want NaN", lo)
	}
}
