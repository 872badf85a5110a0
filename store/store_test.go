package store

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestOpenSetsWAL(t *testing.T) {
	s := sqliteDB(t).open(t)
	ctx := context.Background()
	var mode string
	if err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
	var timeout int
	if err := s.db.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&timeout); err != nil {
		t.Fatal(err)
	}
	if timeout != 5000 {
		t.Errorf("busy_timeout = %d, want 5000", timeout)
	}
}

// Open applies every migration and keeps the version; opening again
// applies nothing; a database whose schema is newer than the program's is
// refused with one line saying so.
func TestSchemaVersion(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		v, err := s.SchemaVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		names, _ := fs.Glob(migrations, "migrations/*.sql")
		last := names[len(names)-1]
		want, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(last, "migrations/"), "_", 2)[0])
		if v != want || want < 1 {
			t.Errorf("schema version = %d, want %d (from %s)", v, want, last)
		}
		s.Close()
		for range 2 {
			s2 := d.open(t)
			if v2, _ := s2.SchemaVersion(ctx); v2 != want {
				t.Errorf("reopened version = %d, want %d", v2, want)
			}
			s2.Close()
		}
		// A newer server migrated the database: this one refuses to start.
		s3 := d.open(t)
		if _, err := s3.db.ExecContext(ctx, `UPDATE schema_version SET version = ?`, want+1); err != nil {
			t.Fatal(err)
		}
		s3.Close()
		_, err = d.openErr()
		var se *SchemaError
		if !errors.As(err, &se) || se.Database != want+1 || se.Program != want || strings.Contains(err.Error(), "\n") {
			t.Fatalf("opening a database of schema %d: %v, want one line saying it is newer than %d", want+1, err, want)
		}
		t.Logf("a newer schema: %v", err)
	})
}

func TestPredictionLockRules(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		tests := []struct {
			name    string
			steps   func(s *Store) (Prediction, error)
			wantErr error
			want    Prediction
		}{
			{
				// The first lock is stored with the chosen option.
				name:  "first lock",
				steps: func(s *Store) (Prediction, error) { return s.Lock(ctx, "L", "les", "p1", "b") },
				want:  Prediction{Lesson: "les", Block: "p1", Option: "b"},
			},
			{
				// Pressing Lock again with the same option is harmless (a double submit).
				name: "same option again",
				steps: func(s *Store) (Prediction, error) {
					s.Lock(ctx, "L", "les", "p1", "b")
					return s.Lock(ctx, "L", "les", "p1", "b")
				},
				want: Prediction{Lesson: "les", Block: "p1", Option: "b"},
			},
			{
				// A locked prediction cannot be changed to another option.
				name: "change refused",
				steps: func(s *Store) (Prediction, error) {
					s.Lock(ctx, "L", "les", "p1", "b")
					return s.Lock(ctx, "L", "les", "p1", "a")
				},
				wantErr: ErrLocked,
				want:    Prediction{Lesson: "les", Block: "p1", Option: "b"},
			},
			{
				// A skip is recorded as a skip.
				name:  "skip",
				steps: func(s *Store) (Prediction, error) { return s.Skip(ctx, "L", "les", "p1") },
				want:  Prediction{Lesson: "les", Block: "p1", Skipped: true},
			},
			{
				// Locking after skipping is refused: the skip was the answer.
				name: "lock after skip",
				steps: func(s *Store) (Prediction, error) {
					s.Skip(ctx, "L", "les", "p1")
					return s.Lock(ctx, "L", "les", "p1", "a")
				},
				wantErr: ErrLocked,
				want:    Prediction{Lesson: "les", Block: "p1", Skipped: true},
			},
			{
				// Skipping after locking is refused too.
				name: "skip after lock",
				steps: func(s *Store) (Prediction, error) {
					s.Lock(ctx, "L", "les", "p1", "c")
					return s.Skip(ctx, "L", "les", "p1")
				},
				wantErr: ErrLocked,
				want:    Prediction{Lesson: "les", Block: "p1", Option: "c"},
			},
			{
				// Another learner's lock is independent.
				name: "other learner",
				steps: func(s *Store) (Prediction, error) {
					s.Lock(ctx, "L", "les", "p1", "c")
					return s.Lock(ctx, "M", "les", "p1", "a")
				},
				want: Prediction{Lesson: "les", Block: "p1", Option: "a"},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := d.fresh(t).open(t)
				got, err := tt.steps(s)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if got.LockedAt.IsZero() {
					t.Error("LockedAt is zero")
				}
				got.LockedAt = tt.want.LockedAt
				if got != tt.want {
					t.Errorf("got %+v, want %+v", got, tt.want)
				}
			})
		}
	})
}

func TestConcurrentLocksOneWins(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		options := []string{"a", "b", "c", "d", "a", "b", "c", "d"}
		var wg sync.WaitGroup
		errs := make([]error, len(options))
		for i, o := range options {
			wg.Go(func() { _, errs[i] = s.Lock(ctx, "L", "les", "p1", o) })
		}
		wg.Wait()
		p, err := s.prediction(ctx, "L", "p1")
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range options {
			switch {
			case o == p.Option && errs[i] != nil:
				t.Errorf("lock %d with the winning option %s: %v", i, o, errs[i])
			case o != p.Option && !errors.Is(errs[i], ErrLocked):
				t.Errorf("lock %d with %s after %s won: err = %v, want ErrLocked", i, o, p.Option, errs[i])
			}
		}
	})
}

func TestReveal(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		if _, err := s.Reveal(ctx, "L", "p1"); !errors.Is(err, ErrNotLocked) {
			t.Fatalf("reveal before lock: err = %v, want ErrNotLocked", err)
		}
		s.Lock(ctx, "L", "les", "p1", "a")
		p, err := s.Reveal(ctx, "L", "p1")
		if err != nil {
			t.Fatal(err)
		}
		if !p.Revealed() || p.RevealedAt.Before(p.LockedAt) {
			t.Fatalf("after reveal: %+v", p)
		}
		again, err := s.Reveal(ctx, "L", "p1")
		if err != nil {
			t.Fatal(err)
		}
		if !again.RevealedAt.Equal(p.RevealedAt) {
			t.Errorf("second reveal moved revealed_at from %v to %v", p.RevealedAt, again.RevealedAt)
		}
	})
}

// OpenResults needs a lock or skip first, keeps the first time only, and
// the opening shows in the lesson state and the export (opened_at).
func TestOpenResults(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		if _, err := s.OpenResults(ctx, "L", "p1"); !errors.Is(err, ErrNotLocked) {
			t.Fatalf("open before lock: err = %v, want ErrNotLocked", err)
		}
		if _, err := s.Skip(ctx, "L", "les", "p1"); err != nil {
			t.Fatal(err)
		}
		st, err := s.LessonState(ctx, "L", "les")
		if err != nil {
			t.Fatal(err)
		}
		if st.Predictions["p1"].Opened() {
			t.Fatalf("opened before OpenResults: %+v", st.Predictions["p1"])
		}
		p, err := s.OpenResults(ctx, "L", "p1")
		if err != nil {
			t.Fatal(err)
		}
		if !p.Opened() || p.OpenedAt.Before(p.LockedAt) || p.Revealed() {
			t.Fatalf("after open: %+v", p)
		}
		again, err := s.OpenResults(ctx, "L", "p1")
		if err != nil || !again.OpenedAt.Equal(p.OpenedAt) {
			t.Errorf("second open: %+v, %v; want opened_at kept at %v", again, err, p.OpenedAt)
		}
		// The cached lesson state was dropped by the write.
		st, err = s.LessonState(ctx, "L", "les")
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Predictions["p1"]; !got.OpenedAt.Equal(p.OpenedAt) || !got.Skipped {
			t.Errorf("lesson state after open: %+v", got)
		}
		e, err := s.Export(ctx, "L")
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(e.Predictions[0])
		if !strings.Contains(string(js), `"opened_at":"`) {
			t.Errorf("export %s has no opened_at", js)
		}
	})
}

func TestFirstAttemptCounts(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		if _, err := s.RecordAttempt(ctx, "L", "les", "c1", "a", false); err != nil {
			t.Fatal(err)
		}
		st, err := s.RecordAttempt(ctx, "L", "les", "c1", "b", true)
		if err != nil {
			t.Fatal(err)
		}
		if st.Count != 2 || st.First.Option != "a" || st.First.Correct || st.Last.Option != "b" || !st.Last.Correct {
			t.Errorf("state = %+v, want first a (wrong), last b (right), 2 attempts", st)
		}
		e, err := s.Export(ctx, "L")
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Attempts) != 2 || !e.Attempts[0].First || e.Attempts[1].First {
			t.Errorf("export attempts = %+v, want two with only the first marked first", e.Attempts)
		}
	})
}

func TestRecordGoalKeepsFirst(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		g1, err := s.RecordGoal(ctx, "L", "les", "m1", map[string]float64{"arrivals": 48})
		if err != nil {
			t.Fatal(err)
		}
		g2, err := s.RecordGoal(ctx, "L", "les", "m1", map[string]float64{"arrivals": 50})
		if err != nil {
			t.Fatal(err)
		}
		if g2.Values["arrivals"] != 48 || !g2.ReachedAt.Equal(g1.ReachedAt) {
			t.Errorf("second goal = %+v, want the first kept (%+v)", g2, g1)
		}
	})
}

func TestProgressSurvivesReopen(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		s.Lock(ctx, "L", "les", "p1", "b")
		s.RecordAttempt(ctx, "L", "les", "c1", "a", true)
		s.RecordGoal(ctx, "L", "les", "m1", map[string]float64{"inflight": 11})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s2, err := d.openErr()
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		st, err := s2.LessonState(ctx, "L", "les")
		if err != nil {
			t.Fatal(err)
		}
		if st.Predictions["p1"].Option != "b" || st.Checks["c1"].Count != 1 || st.Goals["m1"].Values["inflight"] != 11 {
			t.Errorf("after reopen: %+v", st)
		}
		// The lock still holds after a restart.
		if _, err := s2.Lock(ctx, "L", "les", "p1", "a"); !errors.Is(err, ErrLocked) {
			t.Errorf("change after reopen: err = %v, want ErrLocked", err)
		}
	})
}

func TestResetDeletesOnlyThatLearner(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		s.Lock(ctx, "L", "les", "p1", "b")
		s.RecordAttempt(ctx, "L", "les", "c1", "a", true)
		s.Lock(ctx, "M", "les", "p1", "a")
		if err := s.Reset(ctx, "L"); err != nil {
			t.Fatal(err)
		}
		e, err := s.Export(ctx, "L")
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Predictions)+len(e.Attempts)+len(e.Goals) != 0 {
			t.Errorf("after reset: %+v", e)
		}
		m, _ := s.Export(ctx, "M")
		if len(m.Predictions) != 1 {
			t.Errorf("other learner lost data: %+v", m)
		}
		// After a reset the learner may predict afresh.
		if _, err := s.Lock(ctx, "L", "les", "p1", "a"); err != nil {
			t.Errorf("lock after reset: %v", err)
		}
	})
}

func TestExportJSONShape(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		e, err := s.Export(ctx, "nobody")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(e)
		var m map[string]json.RawMessage
		json.Unmarshal(b, &m)
		for _, k := range []string{"predictions", "check_attempts", "model_goals", "records"} {
			if string(m[k]) != "[]" {
				t.Errorf("%s = %s, want []", k, m[k])
			}
		}
		s.Lock(ctx, "L", "les", "p1", "b")
		e, _ = s.Export(ctx, "L")
		b, _ = json.Marshal(e.Predictions[0])
		var p map[string]any
		json.Unmarshal(b, &p)
		if _, ok := p["revealed_at"]; ok {
			t.Errorf("unrevealed prediction has revealed_at: %s", b)
		}
	})
}
