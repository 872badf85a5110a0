package store

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
)

// Every kind of write shows in the next LessonState although the state
// before it was kept in memory, and a write by one learner leaves
// another's kept state alone.
func TestLessonStateCacheSeesEveryWrite(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		state := func() LessonState {
			t.Helper()
			st, err := s.LessonState(ctx, "L", "les")
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		for _, c := range []struct {
			name  string // the write
			write func() error
			shows func(LessonState) bool
		}{
			{"a lock", func() error { _, err := s.Lock(ctx, "L", "les", "p1", "a"); return err },
				func(st LessonState) bool { return st.Predictions["p1"].Option == "a" }},
			{"a skip", func() error { _, err := s.Skip(ctx, "L", "les", "p2"); return err },
				func(st LessonState) bool { return st.Predictions["p2"].Skipped }},
			{"a reveal", func() error { _, err := s.Reveal(ctx, "L", "p1"); return err },
				func(st LessonState) bool { return st.Predictions["p1"].Revealed() }},
			{"a first check answer", func() error { _, err := s.RecordAttempt(ctx, "L", "les", "c1", "a", false); return err },
				func(st LessonState) bool { return st.Checks["c1"].Count == 1 }},
			{"a second check answer", func() error { _, err := s.RecordAttempt(ctx, "L", "les", "c1", "b", true); return err },
				func(st LessonState) bool { return st.Checks["c1"].Count == 2 && st.Checks["c1"].Last.Option == "b" }},
			{"a goal", func() error { _, err := s.RecordGoal(ctx, "L", "les", "m1", map[string]float64{"x": 1}); return err },
				func(st LessonState) bool { _, ok := st.Goals["m1"]; return ok }},
			{"a record", func() error {
				_, err := s.SaveRecord(ctx, "L", Record{Lesson: "les", Block: "r1", Fields: map[string]string{"number": "1"}})
				return err
			}, func(st LessonState) bool { return st.Records["r1"].Fields["number"] == "1" }},
			{"a record saved again", func() error {
				_, err := s.SaveRecord(ctx, "L", Record{Lesson: "les", Block: "r1", Fields: map[string]string{"number": "2"}})
				return err
			}, func(st LessonState) bool { return st.Records["r1"].Fields["number"] == "2" }},
			{"another learner's lock (L's state is unchanged)", func() error { _, err := s.Lock(ctx, "M", "les", "p3", "a"); return err },
				func(st LessonState) bool { _, ok := st.Predictions["p3"]; return !ok && len(st.Predictions) == 2 }},
			{"a reset", func() error { return s.Reset(ctx, "L") },
				func(st LessonState) bool {
					return len(st.Predictions)+len(st.Checks)+len(st.Goals)+len(st.Records) == 0
				}},
		} {
			state() // the state before the write is kept
			if err := c.write(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if st := state(); !c.shows(st) {
				t.Errorf("after %s, LessonState = %+v", c.name, st)
			}
		}
	})
}

// Readers racing writers never leave a stale state kept: once the writes
// end, the kept state equals what the database holds.
func TestLessonStateCacheRace(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := s.LessonState(ctx, "L", "les"); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		for i := range 60 {
			if _, err := s.RecordAttempt(ctx, "L", "les", fmt.Sprintf("c%d", i%7), "a", i%2 == 0); err != nil {
				t.Fatal(err)
			}
		}
		close(stop)
		wg.Wait()
		kept, err := s.LessonState(ctx, "L", "les")
		if err != nil {
			t.Fatal(err)
		}
		e, err := s.load(ctx, "L", "les")
		if err != nil {
			t.Fatal(err)
		}
		if fresh := e.State(); !reflect.DeepEqual(kept, fresh) {
			t.Errorf("kept state differs from the database:\nkept  %+v\nfresh %+v", kept, fresh)
		}
		if n := kept.Checks["c0"].Count; n != 9 {
			t.Errorf("c0 has %d attempts, want 9", n)
		}
	})
}
