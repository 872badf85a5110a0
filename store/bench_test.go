package store

import (
	"context"
	"testing"
)

// BenchmarkLessonState reads one learner's state in one lesson, as every
// lesson page view by a returning learner does.
func BenchmarkLessonState(b *testing.B) {
	s, err := Open(b.TempDir() + "/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	s.Lock(ctx, "L", "les", "p1", "a")
	s.RecordAttempt(ctx, "L", "les", "c1", "a", true)
	s.RecordGoal(ctx, "L", "les", "m1", map[string]float64{"x": 1})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.LessonState(ctx, "L", "les"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLessonStateParallel is the same with readers on every core.
func BenchmarkLessonStateParallel(b *testing.B) {
	s, err := Open(b.TempDir() + "/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	s.Lock(ctx, "L", "les", "p1", "a")
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.LessonState(ctx, "L", "les"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
