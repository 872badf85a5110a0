package store

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkLessonState reads one learner's state in one lesson, as every
// lesson page view by a returning learner does: from memory after the
// first read on SQLite, from the database every time on Postgres.
func BenchmarkLessonState(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, s *Store) {
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
	})
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

// BenchmarkAddRunEvent stores one event of a run's log, as the runner
// does for every event before it sends it (a progress event's JSON is
// about 250 bytes). It reports processor time per event beside wall time,
// since the machine is shared.
//
//	go test ./store -run '^$' -bench AddRunEvent -benchtime 5000x
func BenchmarkAddRunEvent(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "events.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := b.Context()
	if err := s.SaveRun(ctx, Run{ID: "r", Learner: "l", Status: RunRunning, CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	js := []byte(`{"seq":0,"kind":"progress","at":"2026-12-01T16:05:15.17883775Z","windows":2,"window":0,"rate":40,"seconds":1,"elapsed_ms":400.335,"sent":17,"ended":17}`)
	cpu0 := processCPU()
	b.ResetTimer()
	for i := range b.N {
		if err := s.AddRunEvent(ctx, "r", RunEvent{Seq: i + 1, Kind: "progress", JSON: js}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/event")
}

// processCPU is this process's processor time so far (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
