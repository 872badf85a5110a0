package store

import (
	"context"
	"fmt"
	"sync"
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

// BenchmarkAddRunEvent stores events of runs' logs one at a time, as the
// runner did for every event before it batched them (package runner's
// BenchmarkEventWrites measures its write path now; a progress event's
// JSON is about 250 bytes), on SQLite and Postgres (where the statement
// also sends the run's wake-up). Each event is its own transaction,
// committed before the run's next: runs=1 is one run writing; runs=8 is eight runs writing at
// once (as eight runners' runs would), b.N events in all. It reports
// events/s and this process's processor time per event (cpu-ns/event;
// the database's own processes are not in it), since the machine is
// shared.
//
//	CAPACITYLAB_TEST_POSTGRES=postgres://... go test ./store -run '^$' -bench AddRunEvent -benchtime 2000x
func BenchmarkAddRunEvent(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, s *Store) {
		ctx := b.Context()
		js := []byte(`{"seq":0,"kind":"progress","at":"2026-12-01T16:05:15.17883775Z","windows":2,"window":0,"rate":40,"seconds":1,"elapsed_ms":400.335,"sent":17,"ended":17}`)
		for _, runs := range []int{1, 8} {
			b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
				for k := range runs {
					if err := s.SaveRun(ctx, Run{ID: fmt.Sprintf("r%d-%d", runs, k), Learner: "l", Status: RunRunning, CreatedAt: time.Now()}); err != nil {
						b.Fatal(err)
					}
				}
				cpu0 := processCPU()
				b.ResetTimer()
				inParallel(b, runs, func(k, i int) error {
					return s.AddRunEvent(ctx, fmt.Sprintf("r%d-%d", runs, k), RunEvent{Seq: i + 1, Kind: "progress", JSON: js})
				})
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/event")
			})
		}
	})
}

// inParallel runs op for i from 0 to b.N-1 on n goroutines, goroutine k
// taking k, k+n, ..., and fails the benchmark with the first error.
func inParallel(b *testing.B, n int, op func(k, i int) error) {
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() {
			for i := k; i < b.N; i += n {
				if err := op(k, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// processCPU is this process's processor time so far (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
