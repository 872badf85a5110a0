package model

import "testing"

// The page recomputes on every slider move through /api/models or the JS
// twin; these show what one computation costs.

func BenchmarkComputeLittlesLaw(b *testing.B) {
	v := map[string]float64{"arrivals": 48, "latency_ms": 230}
	for b.Loop() {
		if _, err := Compute(KindLittlesLaw, v, ""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkComputeQueueCurveMM1(b *testing.B) {
	v := map[string]float64{"servers": 1, "service_ms": 20, "arrivals": 40}
	for b.Loop() {
		if _, err := Compute(KindQueueCurve, v, ""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkComputeQueueCurveMM256(b *testing.B) {
	v := map[string]float64{"servers": 256, "service_ms": 1000, "arrivals": 250}
	for b.Loop() {
		if _, err := Compute(KindQueueCurve, v, ""); err != nil {
			b.Fatal(err)
		}
	}
}
