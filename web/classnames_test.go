package web

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"capacitylab/store"
)

// templ writes this class for a class expression of a type it does not
// take (a named string type such as store.RunStatus), instead of the class.
const templUnknownClass = "--templ-css-class-unknown-type"

// TestRunStatusClasses: the runs list gives each run's status its class,
// run-status s-{status}, which runs.css colours (a failed or interrupted
// run in the error colour, a queued or running one in the accent); no page
// here carries templ's class for a type it does not take.
func TestRunStatusClasses(t *testing.T) {
	site := newSite(t)
	req, _ := json.Marshal(testPreset)
	at := time.Date(2026, 3, 3, 14, 5, 0, 0, time.UTC)
	statuses := []store.RunStatus{store.RunDone, store.RunFailed, store.RunCancelled, store.RunInterrupted}
	for i, st := range statuses {
		run := store.Run{ID: "r-" + string(st), Learner: "alice", Lesson: "littles-law", Block: "littles-sweep", Request: req, Status: st,
			CreatedAt: at.Add(time.Duration(i) * time.Minute), StartedAt: at, EndedAt: at.Add(time.Hour)}
		if err := site.store.SaveRun(t.Context(), run); err != nil {
			t.Fatal(err)
		}
	}
	c := site.client()
	r := site.get(c, "/runs")
	if r.StatusCode != 200 {
		t.Fatalf("/runs: %d", r.StatusCode)
	}
	doc := parse(t, r.body)
	seen := 0
	for _, row := range find(doc, func(n nodeT) bool { _, ok := attr(n, "data-run"); return ok && n.Data == "tr" }) {
		status := must(attr(row, "data-status"))
		spans := find(row, func(n nodeT) bool { return n.Data == "span" && strings.Contains(must(attr(n, "class")), "run-status") })
		if len(spans) != 1 {
			t.Errorf("run %s: %d status spans", must(attr(row, "data-run")), len(spans))
			continue
		}
		if got, want := must(attr(spans[0], "class")), "run-status s-"+status; got != want {
			t.Errorf("run %s: class %q, want %q", must(attr(row, "data-run")), got, want)
		}
		seen++
	}
	if seen != len(statuses) {
		t.Errorf("the list shows %d runs, want %d", seen, len(statuses))
	}
	for _, p := range []string{"/runs", "/runs/r-done", "/runs/r-failed", "/progress", "/", "/lessons/littles-law", "/lessons/sample", "/lessons/cap-inside"} {
		if body := site.get(c, p).body; strings.Contains(body, templUnknownClass) {
			t.Errorf("%s carries %s", p, templUnknownClass)
		}
	}
}
