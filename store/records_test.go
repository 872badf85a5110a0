package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRecordSaveUpdateReopenReset(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		s.now = func() time.Time { return clock }

		// Nothing saved yet: Record says so.
		if _, err := s.Record(ctx, "L", "limit-record"); !errors.Is(err, ErrNoRecord) {
			t.Fatalf("Record before saving: err = %v, want ErrNoRecord", err)
		}
		first, err := s.SaveRecord(ctx, "L", Record{Lesson: "admission-limit", Block: "limit-record",
			Fields: map[string]string{"number": "10", "criterion": "p99 ≤ 230 ms"}, Run: "r-1"})
		if err != nil {
			t.Fatal(err)
		}
		if first.Fields["number"] != "10" || first.Run != "r-1" || !first.CreatedAt.Equal(clock) || !first.UpdatedAt.Equal(clock) {
			t.Errorf("first save = %+v", first)
		}

		// Saving again replaces the fields and run, keeps created_at, moves updated_at.
		clock = clock.Add(time.Minute)
		second, err := s.SaveRecord(ctx, "L", Record{Lesson: "admission-limit", Block: "limit-record",
			Fields: map[string]string{"number": "9", "criterion": "hard budget"}})
		if err != nil {
			t.Fatal(err)
		}
		if second.Fields["number"] != "9" || second.Run != "" {
			t.Errorf("second save = %+v, want number 9 and no run", second)
		}
		if !second.CreatedAt.Equal(first.CreatedAt) || !second.UpdatedAt.Equal(clock) {
			t.Errorf("times after update: created %v updated %v, want %v and %v", second.CreatedAt, second.UpdatedAt, first.CreatedAt, clock)
		}
		// Another learner's record is separate.
		if _, err := s.SaveRecord(ctx, "M", Record{Lesson: "admission-limit", Block: "limit-record", Fields: map[string]string{"number": "3"}}); err != nil {
			t.Fatal(err)
		}

		// Closing and opening the file again keeps the latest version, and it
		// appears in the lesson state and the export.
		s.Close()
		s2, err := d.openErr()
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		got, err := s2.Record(ctx, "L", "limit-record")
		if err != nil || got.Fields["number"] != "9" || got.Fields["criterion"] != "hard budget" {
			t.Fatalf("after reopen: %+v, %v", got, err)
		}
		st, err := s2.LessonState(ctx, "L", "admission-limit")
		if err != nil || st.Records["limit-record"].Fields["number"] != "9" {
			t.Errorf("LessonState records = %+v, %v", st.Records, err)
		}
		if st, _ := s2.LessonState(ctx, "L", "other-lesson"); len(st.Records) != 0 {
			t.Errorf("records of another lesson leaked into its state: %+v", st.Records)
		}
		e, err := s2.Export(ctx, "L")
		if err != nil || len(e.Records) != 1 || e.Records[0].Block != "limit-record" {
			t.Errorf("Export records = %+v, %v", e.Records, err)
		}

		// Reset removes L's record and leaves M's.
		if err := s2.Reset(ctx, "L"); err != nil {
			t.Fatal(err)
		}
		if _, err := s2.Record(ctx, "L", "limit-record"); !errors.Is(err, ErrNoRecord) {
			t.Errorf("after reset: err = %v, want ErrNoRecord", err)
		}
		if m, err := s2.Record(ctx, "M", "limit-record"); err != nil || m.Fields["number"] != "3" {
			t.Errorf("other learner after reset: %+v, %v", m, err)
		}
	})
}

// BenchmarkRecordQuery is the query LessonState adds for record blocks:
// one learner's records in one lesson, with one record saved.
func BenchmarkRecordQuery(b *testing.B) {
	s, err := Open(b.TempDir() + "/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.SaveRecord(ctx, "L", Record{Lesson: "les", Block: "r1", Fields: map[string]string{"number": "10", "criterion": "p99 ≤ 230 ms"}}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if rs, err := s.records(ctx, "L", "les"); err != nil || len(rs) != 1 {
			b.Fatal(rs, err)
		}
	}
}

// BenchmarkSaveRecord saves (updates) one learner's record.
func BenchmarkSaveRecord(b *testing.B) {
	s, err := Open(b.TempDir() + "/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	r := Record{Lesson: "les", Block: "r1", Fields: map[string]string{"number": "10", "criterion": "p99 ≤ 230 ms"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.SaveRecord(ctx, "L", r); err != nil {
			b.Fatal(err)
		}
	}
}
