package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// LearnerRuns lists only the learner's own runs, newest first, up to the
// limit, whatever other learners ran in between.
func TestLearnerRuns(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
		for i, r := range []Run{
			{ID: "a1", Learner: "A"}, {ID: "b1", Learner: "B"}, {ID: "a2", Learner: "A"},
			{ID: "b2", Learner: "B"}, {ID: "a3", Learner: "A"}, {ID: "a4", Learner: "A"},
		} {
			r.Status, r.CreatedAt = RunDone, t0.Add(time.Duration(i)*time.Minute)
			if err := s.SaveRun(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		ids := func(rs []Run) []string {
			var out []string
			for _, r := range rs {
				out = append(out, r.ID)
			}
			return out
		}
		for _, c := range []struct {
			name    string // what the case shows
			learner string
			limit   int
			want    []string
		}{
			{"the limit keeps the newest of A's own runs", "A", 3, []string{"a4", "a3", "a2"}},
			{"all of B's runs, none of A's", "B", 50, []string{"b2", "b1"}},
			{"a learner with no runs gets an empty list", "C", 50, nil},
		} {
			got, err := s.LearnerRuns(ctx, c.learner, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), c.want) {
				t.Errorf("%s: LearnerRuns(%s, %d) = %v, want %v", c.name, c.learner, c.limit, ids(got), c.want)
			}
			for _, r := range got {
				if r.Learner != c.learner || r.Status != RunDone || r.CreatedAt.IsZero() {
					t.Errorf("%s: run %+v not read back whole", c.name, r)
				}
			}
		}
	})
}

// Records come back with the answers in the one state query: in lesson
// and block order in an export whatever order they were saved in, with
// their fields, run and times, and only the lesson's own in LessonState.
func TestRecordsReadWithState(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		if _, err := s.Lock(ctx, "L", "les-b", "p1", "a"); err != nil {
			t.Fatal(err)
		}
		for _, r := range []Record{
			{Lesson: "les-b", Block: "r2", Fields: map[string]string{"number": "2"}, Run: "run-9"},
			{Lesson: "les-b", Block: "r1", Fields: map[string]string{"number": "1"}},
			{Lesson: "les-a", Block: "r3", Fields: map[string]string{"number": "3"}},
		} {
			if _, err := s.SaveRecord(ctx, "L", r); err != nil {
				t.Fatal(err)
			}
		}
		e, err := s.Export(ctx, "L")
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, r := range e.Records {
			order = append(order, r.Lesson+"/"+r.Block+"="+r.Fields["number"])
			if r.CreatedAt.IsZero() || r.UpdatedAt.Before(r.CreatedAt) {
				t.Errorf("record %s: times %v, %v", r.Block, r.CreatedAt, r.UpdatedAt)
			}
		}
		if want := []string{"les-a/r3=3", "les-b/r1=1", "les-b/r2=2"}; !slices.Equal(order, want) {
			t.Errorf("export records %v, want %v", order, want)
		}
		st, err := s.LessonState(ctx, "L", "les-b")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Records) != 2 || st.Records["r2"].Run != "run-9" || st.Records["r1"].Fields["number"] != "1" || len(st.Predictions) != 1 {
			t.Errorf("LessonState(les-b) = %+v, want records r1 and r2 (r2 with run-9) and prediction p1", st)
		}
	})
}

// A kept run list follows every change: a new run of the learner's, a
// status change, and runs interrupted at start-up; another learner's new
// run leaves it as it was.
func TestLearnerRunsKeptListFollowsWrites(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
		list := func() string {
			t.Helper()
			rs, err := s.LearnerRuns(ctx, "A", 10)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, r := range rs {
				out = append(out, r.ID+":"+string(r.Status))
			}
			return strings.Join(out, ",")
		}
		for _, c := range []struct {
			name  string // the write
			write func() error
			want  string
		}{
			{"A's first run, queued", func() error {
				return s.SaveRun(ctx, Run{ID: "a1", Learner: "A", Status: RunQueued, CreatedAt: t0})
			}, "a1:queued"},
			{"the run starts", func() error {
				return s.SaveRun(ctx, Run{ID: "a1", Learner: "A", Status: RunRunning, CreatedAt: t0, StartedAt: t0})
			}, "a1:running"},
			{"B's run", func() error {
				return s.SaveRun(ctx, Run{ID: "b1", Learner: "B", Status: RunDone, CreatedAt: t0.Add(time.Minute)})
			}, "a1:running"},
			{"runs interrupted by a restart", func() error { _, err := s.InterruptRuns(ctx, "restart"); return err }, "a1:interrupted"},
			{"A's second run", func() error {
				return s.SaveRun(ctx, Run{ID: "a2", Learner: "A", Status: RunDone, CreatedAt: t0.Add(2 * time.Minute)})
			}, "a2:done,a1:interrupted"},
		} {
			list() // the list before the write is kept
			if err := c.write(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got := list(); got != c.want {
				t.Errorf("after %s: runs %s, want %s", c.name, got, c.want)
			}
		}
	})
}
