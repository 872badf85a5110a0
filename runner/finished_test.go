package runner_test

import (
	"testing"
	"time"

	"capacitylab/runner"
	"capacitylab/store"
)

// TestFinishedIsToldOfEachRun: Config.Finished hears of a run once it has
// ended, with its learner, lesson, block and status, after the run's final
// state is saved.
func TestFinishedIsToldOfEachRun(t *testing.T) {
	type told struct {
		learner, lesson, block string
		status                 store.RunStatus
	}
	got := make(chan told, 4)
	var st *store.Store // set by newRunner below, before any run ends
	saved := make(chan store.RunStatus, 4)
	r, st := newRunner(t, runner.Config{Finished: func(learner, lesson, block string, status store.RunStatus) {
		got <- told{learner, lesson, block, status}
		// The final state is in the store by now.
		runs, err := st.LearnerRuns(t.Context(), learner, 1)
		if err != nil || len(runs) != 1 {
			saved <- "no saved run"
			return
		}
		saved <- runs[0].Status
	}})
	q := small(40)
	q.Lesson, q.Block = "littles-law", "littles-sweep"
	if _, err := r.Submit(t.Context(), "bob", q); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-got:
		if g != (told{"bob", "littles-law", "littles-sweep", store.RunDone}) {
			t.Errorf("Finished was told %+v", g)
		}
		if s := <-saved; s != store.RunDone {
			t.Errorf("when Finished was told, the store had %q", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Finished was not called within 30 s")
	}
}
