package store

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkClassVotes stores class votes as package classroom's writer
// does (SaveClassVotes, one transaction per batch of waiting votes, each
// vote replacing the participant's earlier one, and on Postgres the
// batch's wake-up in the same transaction), on SQLite and Postgres:
//
//   - batch=1: one vote a transaction, as when votes trickle in;
//   - batch=300: a whole class's burst in one transaction;
//   - batch=1/sessions=8: eight sessions' writers at once, one vote a
//     transaction each, as eight classes (or eight replicas' writers)
//     voting together.
//
// It reports votes/s and this process's processor time per vote
// (cpu-us/vote; the database's own processes are not in it).
//
//	CAPACITYLAB_TEST_POSTGRES=postgres://... go test ./store -run '^$' -bench ClassVotes -benchtime 2s
func BenchmarkClassVotes(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, s *Store) {
		ctx := b.Context()
		t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		const participants = 300
		session := func(code string) {
			if err := s.CreateClassSession(ctx, ClassSession{Code: code, Lesson: "queues", HostHash: "h", CreatedAt: t0, ActiveAt: t0}); err != nil {
				b.Fatal(err)
			}
			if err := s.SaveClassRound(ctx, code, ClassRound{Question: "p1", Round: 1, Status: RoundOpen, OpenedAt: t0}); err != nil {
				b.Fatal(err)
			}
			for id := 1; id <= participants; id++ {
				if err := s.AddClassParticipant(ctx, code, ClassParticipant{ID: id, TokenHash: fmt.Sprint("t", id), JoinedAt: t0}); err != nil {
					b.Fatal(err)
				}
			}
		}
		vote := func(i int) ClassVote {
			return ClassVote{Question: "p1", Round: 1, Participant: i%participants + 1, Option: string(rune('a' + i%4)), At: t0}
		}
		report := func(b *testing.B, votes int, cpu0 time.Duration) {
			b.ReportMetric(float64(votes)/b.Elapsed().Seconds(), "votes/s")
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(votes), "cpu-us/vote")
		}
		session("BENCH1")
		for _, batch := range []int{1, participants} {
			b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
				votes := make([]ClassVote, batch)
				cpu0 := processCPU()
				b.ResetTimer()
				for i := range b.N {
					for j := range votes {
						votes[j] = vote(i*batch + j)
					}
					if err := s.SaveClassVotes(ctx, "BENCH1", votes); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				report(b, b.N*batch, cpu0)
			})
		}
		const sessions = 8
		for k := range sessions {
			session(fmt.Sprintf("BENCP%d", k))
		}
		b.Run(fmt.Sprintf("batch=1/sessions=%d", sessions), func(b *testing.B) {
			cpu0 := processCPU()
			b.ResetTimer()
			inParallel(b, sessions, func(k, i int) error {
				return s.SaveClassVote(ctx, fmt.Sprintf("BENCP%d", k), vote(i))
			})
			b.StopTimer()
			report(b, b.N, cpu0)
		})
	})
}
