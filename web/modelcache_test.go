package web

import (
	"math"
	"reflect"
	"testing"

	"capacitylab/model"
)

// TestModelCacheSameAsCompute checks that the memo answers exactly what
// model.Compute answers, including its errors, and that equal inputs share
// one entry while different ones do not.
func TestModelCacheSameAsCompute(t *testing.T) {
	tests := []struct {
		name   string
		kind   string
		values map[string]float64
		solve  string
	}{
		// Little's law, the lesson's first example (48/s, 230 ms).
		{"littles law", model.KindLittlesLaw, map[string]float64{"arrivals": 48, "latency_ms": 230}, ""},
		// The same law solved for the arrival rate.
		{"littles law solved for arrivals", model.KindLittlesLaw, map[string]float64{"inflight": 4, "latency_ms": 21}, "arrivals"},
		// A queue curve with defaults only: the expensive one.
		{"queue curve defaults", model.KindQueueCurve, map[string]float64{}, ""},
		// An out-of-range value: an error, never cached.
		{"bad value", model.KindLittlesLaw, map[string]float64{"arrivals": -5}, ""},
		// A solve the kind does not have: an error.
		{"bad solve", model.KindAdmissionLimit, map[string]float64{}, "inflight"},
	}
	mc := newModelCache()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, wantErr := model.Compute(tt.kind, tt.values, tt.solve)
			for round := range 2 { // a miss, then a hit
				got, err := mc.compute(tt.kind, tt.values, tt.solve)
				if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
					t.Fatalf("round %d: error %v, want %v", round, err, wantErr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("round %d: %+v, want %+v", round, got, want)
				}
			}
		})
	}
	if n := mc.len(); n != 3 {
		t.Errorf("cache holds %d results, want 3 (errors are not kept)", n)
	}
	// A value that differs in the last digit is a different input.
	a, _ := mc.compute(model.KindLittlesLaw, map[string]float64{"arrivals": 48, "latency_ms": 230}, "")
	b, _ := mc.compute(model.KindLittlesLaw, map[string]float64{"arrivals": math.Nextafter(48, 49), "latency_ms": 230}, "")
	if a.Quantities["inflight"] == b.Quantities["inflight"] {
		t.Error("48 and the next float up gave the same cached answer")
	}
}

// TestModelCacheBounded fills the memo past its cap and checks it stays
// at the cap and still answers correctly.
func TestModelCacheBounded(t *testing.T) {
	mc := newModelCache()
	for i := range modelCacheSize + 50 {
		v := map[string]float64{"arrivals": float64(i%5000) + 0.5, "latency_ms": 230}
		got, err := mc.compute(model.KindLittlesLaw, v, "")
		if err != nil {
			t.Fatal(err)
		}
		want, _ := model.Compute(model.KindLittlesLaw, v, "")
		if got.Quantities["inflight"] != want.Quantities["inflight"] {
			t.Fatalf("entry %d: inflight %v, want %v", i, got.Quantities["inflight"], want.Quantities["inflight"])
		}
	}
	if n := mc.len(); n != modelCacheSize {
		t.Errorf("cache holds %d results, want the cap %d", n, modelCacheSize)
	}
}

// TestModelKeyExact checks the cache key: the order values are given in
// does not matter, the kind, solve and every digit do.
func TestModelKeyExact(t *testing.T) {
	base := modelKey("littles-law", map[string]float64{"arrivals": 48, "latency_ms": 230}, "")
	tests := []struct {
		name string
		key  string
		same bool
	}{
		// The same values built in the other order.
		{"order", modelKey("littles-law", map[string]float64{"latency_ms": 230, "arrivals": 48}, ""), true},
		// Another solve.
		{"solve", modelKey("littles-law", map[string]float64{"arrivals": 48, "latency_ms": 230}, "arrivals"), false},
		// Another kind with the same numbers.
		{"kind", modelKey("queue-curve", map[string]float64{"arrivals": 48, "latency_ms": 230}, ""), false},
		// A value far down in its digits.
		{"digits", modelKey("littles-law", map[string]float64{"arrivals": 48.000000000001, "latency_ms": 230}, ""), false},
		// A value missing (Compute would take the default).
		{"missing", modelKey("littles-law", map[string]float64{"arrivals": 48}, ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.key == base) != tt.same {
				t.Errorf("%q vs %q: same %v, want %v", tt.key, base, tt.key == base, tt.same)
			}
		})
	}
}
