package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"capacitylab/result"
)

// A run's writes are fenced by its claim: WriteRun stores a window's
// records, row and events and the run's end in one transaction for the
// runner holding the run, refuses another runner and every write once the
// run has ended (a reaper failed it), storing nothing; a run has one
// terminal event, whoever tries a second; and an end sent again after it
// was stored (a commit whose answer was lost) is success.
func TestWriteRunFenced(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		now := time.Now().UTC()
		run := Run{ID: "r1", Learner: "l", Status: RunRunning, CreatedAt: now, StartedAt: now}
		if err := s.SaveRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		// The in-process queue's runs have no runner: "".
		if _, err := s.db.ExecContext(ctx, `UPDATE runs SET runner = ? WHERE id = ?`, "runner-a", "r1"); err != nil {
			t.Fatal(err)
		}
		ev := func(seq int, kind string) RunEvent {
			return RunEvent{Seq: seq, Kind: kind, JSON: fmt.Appendf(nil, `{"seq":%d,"kind":%q}`, seq, kind)}
		}
		row := result.Row{Window: 0, Offered: 10, Sent: 10, OK: 10}
		w := RunWrite{Records: testRecords(0, 3), Rows: []result.Row{row}, Events: []RunEvent{ev(1, "started"), ev(2, "progress"), ev(3, "row")}}
		if err := s.WriteRun(ctx, "r1", "runner-b", w); !errors.Is(err, ErrNotOwner) {
			t.Fatalf("another runner's write: %v, want ErrNotOwner", err)
		}
		if evs, _ := s.RunEvents(ctx, "r1", 0); len(evs) != 0 {
			t.Fatalf("a refused write stored %d events", len(evs))
		}
		if err := s.WriteRun(ctx, "r1", "runner-a", w); err != nil {
			t.Fatal(err)
		}
		// Sent again (its answer lost): the same rows, nothing doubled.
		if err := s.WriteRun(ctx, "r1", "runner-a", w); err != nil {
			t.Fatal(err)
		}
		got, err := s.Run(ctx, "r1")
		if err != nil || len(got.Rows) != 1 {
			t.Fatalf("rows %+v, %v", got.Rows, err)
		}
		if n, _ := s.CountRecords(ctx, "r1"); n != 3 {
			t.Fatalf("%d records stored, want 3", n)
		}
		// A reaper ends the run (its terminal event at 4).
		if _, err := s.db.ExecContext(ctx, `UPDATE runs SET status = ?, reason = ? WHERE id = ?`, RunFailed, "runner lost", "r1"); err != nil {
			t.Fatal(err)
		}
		if err := s.AddRunEvent(ctx, "r1", ev(4, "failed")); err != nil {
			t.Fatal(err)
		}
		// The runner, alive, goes on: refused, nothing stored.
		later := RunWrite{Events: []RunEvent{ev(4, "row"), ev(5, "done")}, End: &Run{ID: "r1", Learner: "l", Status: RunDone, StartedAt: now, EndedAt: now}}
		if err := s.WriteRun(ctx, "r1", "runner-a", later); !errors.Is(err, ErrNotOwner) {
			t.Fatalf("a write after the run ended: %v, want ErrNotOwner", err)
		}
		evs, _ := s.RunEvents(ctx, "r1", 0)
		if len(evs) != 4 || evs[3].Kind != "failed" {
			t.Fatalf("events %+v: want 1 to 3 and the reaper's failed", evs)
		}
		if got, _ := s.Run(ctx, "r1"); got.Status != RunFailed {
			t.Fatalf("status %s, want the reaper's failed kept", got.Status)
		}
		// One terminal event per run, whoever writes it.
		if err := s.AddRunEvent(ctx, "r1", ev(5, "done")); err == nil {
			t.Fatal("a second terminal event was stored")
		}

		// An end stored, then sent again: success, stored once.
		run2 := Run{ID: "r2", Learner: "l", Status: RunRunning, CreatedAt: now, StartedAt: now}
		if err := s.SaveRun(ctx, run2); err != nil {
			t.Fatal(err)
		}
		run2.Status, run2.EndedAt = RunDone, now
		end := RunWrite{Events: []RunEvent{ev(1, "done")}, End: &run2}
		for range 2 {
			if err := s.WriteRun(ctx, "r2", "", end); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := s.Run(ctx, "r2"); got.Status != RunDone {
			t.Fatalf("status %s, want done", got.Status)
		}
		if evs, _ := s.RunEvents(ctx, "r2", 0); len(evs) != 1 {
			t.Fatalf("%d events, want the one end", len(evs))
		}
	})
}
