package store

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"capacitylab/result"
)

// An upload is stored whole (run, rows, records) and private: Runs lists
// it to its learner and to no one else; only its learner deletes it, with
// its rows and records; Reset deletes the learner's uploads and leaves
// their runs of the lab.
func TestUploadsPrivateDeletedWithProgress(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := t.Context()
		t0 := time.Date(2026, 12, 6, 23, 0, 0, 0, time.UTC)
		req := json.RawMessage(`{"rates":[50,100],"seconds":10,"upload":{"budget_ms":200}}`)
		if err := s.SaveRun(ctx, Run{ID: "lab1", Learner: "alice", Request: json.RawMessage(`{"rates":[40]}`), Status: RunDone, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		rows := []result.Row{{Window: 0, Offered: 50, N: 3}, {Window: 1, Offered: 100, N: 4}}
		recs := append(testRecords(0, 3), testRecords(1, 4)...)
		up := Run{ID: "u1", Learner: "alice", Request: req, Status: RunDone, CreatedAt: t0.Add(time.Minute), EndedAt: t0.Add(time.Minute)}
		if err := s.SaveUpload(ctx, up, rows, recs); err != nil {
			t.Fatal(err)
		}
		got, err := s.Run(ctx, "u1")
		if err != nil {
			t.Fatal(err)
		}
		if !got.Upload || got.Learner != "alice" || len(got.Rows) != 2 || got.Rows[1].N != 4 {
			t.Fatalf("stored upload = %+v", got)
		}
		if n, err := s.CountRecords(ctx, "u1"); err != nil || n != 7 {
			t.Fatalf("records = %d, %v; want 7", n, err)
		}
		ids := func(learner string) []string {
			runs, err := s.Runs(ctx, learner, 10)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, r := range runs {
				out = append(out, r.ID)
			}
			return out
		}
		if got := ids("alice"); len(got) != 2 || got[0] != "u1" {
			t.Errorf("alice's list = %v, want her upload u1 then lab1", got)
		}
		if got := ids("bob"); len(got) != 1 || got[0] != "lab1" {
			t.Errorf("bob's list = %v, want lab1 alone (alice's upload is private)", got)
		}
		if got, err := s.Uploads(ctx, "alice"); err != nil || len(got) != 1 || got[0].ID != "u1" {
			t.Errorf("Uploads(alice) = %v, %v", got, err)
		}
		if err := s.DeleteUpload(ctx, "u1", "bob"); !errors.Is(err, ErrNoRun) {
			t.Errorf("bob deleting alice's upload: %v, want ErrNoRun", err)
		}
		if err := s.DeleteUpload(ctx, "lab1", "alice"); !errors.Is(err, ErrNoRun) {
			t.Errorf("deleting a lab run as an upload: %v, want ErrNoRun", err)
		}
		if err := s.DeleteUpload(ctx, "u1", "alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Run(ctx, "u1"); !errors.Is(err, ErrNoRun) {
			t.Errorf("deleted upload still there: %v", err)
		}
		if n, _ := s.CountRecords(ctx, "u1"); n != 0 {
			t.Errorf("%d records of the deleted upload left", n)
		}

		if err := s.SaveUpload(ctx, Run{ID: "u2", Learner: "alice", Request: req, Status: RunDone, CreatedAt: t0}, rows, recs); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveUpload(ctx, Run{ID: "u2", Learner: "alice", Request: req, Status: RunDone, CreatedAt: t0}, rows, recs); err == nil {
			t.Error("a second upload with the same id was stored")
		}
		if err := s.Reset(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Run(ctx, "u2"); !errors.Is(err, ErrNoRun) {
			t.Errorf("upload left after Reset: %v", err)
		}
		if n, _ := s.CountRecords(ctx, "u2"); n != 0 {
			t.Errorf("%d records of the upload left after Reset", n)
		}
		if _, err := s.Run(ctx, "lab1"); err != nil {
			t.Errorf("Reset deleted a run of the lab: %v", err)
		}
	})
}
