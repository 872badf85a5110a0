package store

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"capacitylab/loadrun"
)

// testRecords returns n records of window w with every outcome and both
// present and absent lab headers.
func testRecords(w, n int) []loadrun.Record {
	outcomes := []loadrun.Outcome{loadrun.OK, loadrun.Refused, loadrun.Gaveup, loadrun.Error, loadrun.NotSent}
	recs := make([]loadrun.Record, n)
	for i := range recs {
		o := outcomes[i%len(outcomes)]
		r := loadrun.Record{Window: w, Seq: i, Intended: time.Duration(i) * 1234 * time.Microsecond, Outcome: o, QueueWaitMS: -1, ServiceMS: -1}
		r.Sent = r.Intended + 50*time.Microsecond
		r.End = r.Sent + time.Duration(i%7)*time.Millisecond
		switch o {
		case loadrun.OK:
			r.Status, r.QueueWaitMS, r.ServiceMS = 200, 0.042, 20.117
		case loadrun.Refused:
			r.Status = 503
		case loadrun.Gaveup:
			r.Reason = loadrun.ReasonReadTimeout
		case loadrun.Error:
			r.Reason = loadrun.ReasonReset
		case loadrun.NotSent:
			r.Sent, r.End, r.Reason = r.Intended, r.Intended, loadrun.ReasonInFlightCap
		}
		recs[i] = r
	}
	return recs
}

// A run, its rows and its records survive closing and reopening the file;
// runs left queued or running are marked interrupted; lists put the
// learner's own runs first.
func TestRunsPersistAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	t0 := time.Date(2026, 11, 30, 11, 0, 0, 123456789, time.UTC)
	req := json.RawMessage(`{"workers":1,"rates":[40,80],"seconds":2}`)
	runs := []Run{
		// alice's finished run, with rows and records.
		{ID: "r1", Learner: "alice", Lesson: "little", Block: "lab1", Request: req, Status: RunDone, CreatedAt: t0, StartedAt: t0.Add(time.Second), EndedAt: t0.Add(5 * time.Second)},
		// bob's run, still running when the server "crashes".
		{ID: "r2", Learner: "bob", Request: req, Status: RunRunning, CreatedAt: t0.Add(time.Minute), StartedAt: t0.Add(time.Minute)},
		// alice's run, still queued at the crash.
		{ID: "r3", Learner: "alice", Request: req, Status: RunQueued, CreatedAt: t0.Add(2 * time.Minute)},
		// carol's cancelled run, newest of all.
		{ID: "r4", Learner: "carol", Request: req, Status: RunCancelled, Reason: "You cancelled it.", CreatedAt: t0.Add(3 * time.Minute), EndedAt: t0.Add(3 * time.Minute)},
	}
	for _, r := range runs {
		if err := s.SaveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	rows := []loadrun.Row{{Window: 0, Offered: 40, Sent: 80, OK: 80, OKPerSec: 40, P50MS: 20.1, P99MS: 23.4, N: 80}, {Window: 1, Offered: 80, Sent: 160, OK: 150, Refused: 10, Note: "a note"}}
	for _, row := range rows {
		if err := s.AddRow(ctx, "r1", row); err != nil {
			t.Fatal(err)
		}
	}
	recs := append(testRecords(0, 1203), testRecords(1, 7)...) // more than one INSERT's worth, and a short tail
	if err := s.AddRecords(ctx, "r1", recs); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, err := s.InterruptRuns(ctx, "The server restarted while this run was waiting or running.")
	if err != nil || n != 2 {
		t.Fatalf("InterruptRuns = %d, %v; want the 2 queued or running", n, err)
	}
	got, err := s.Run(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != RunDone || got.Learner != "alice" || got.Lesson != "little" || got.Block != "lab1" || !got.CreatedAt.Equal(t0) || !got.EndedAt.Equal(t0.Add(5*time.Second)) || string(got.Request) != string(req) {
		t.Errorf("r1 after reopening: %+v", got)
	}
	if len(got.Rows) != 2 || got.Rows[0] != rows[0] || got.Rows[1] != rows[1] {
		t.Errorf("rows after reopening: %+v, want %+v", got.Rows, rows)
	}
	var back []loadrun.Record
	if err := s.EachRecord(ctx, "r1", func(r loadrun.Record) error { back = append(back, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(back) != len(recs) {
		t.Fatalf("read back %d records, stored %d", len(back), len(recs))
	}
	for i := range recs {
		if back[i] != recs[i] {
			t.Fatalf("record %d: read back %+v, stored %+v", i, back[i], recs[i])
		}
	}
	// One window alone: window 1's 7 records, in seq order.
	back = back[:0]
	if err := s.EachWindowRecord(ctx, "r1", 1, func(r loadrun.Record) error { back = append(back, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(back) != 7 || back[0] != recs[1203] || back[6] != recs[1209] {
		t.Errorf("window 1 read back %d records (first %+v), want its 7", len(back), back[:min(1, len(back))])
	}
	for _, id := range []string{"r2", "r3"} {
		r, err := s.Run(ctx, id)
		if err != nil || r.Status != RunInterrupted || r.Reason == "" || r.EndedAt.IsZero() {
			t.Errorf("%s after restart: %+v (%v), want interrupted with a reason and an end", id, r, err)
		}
	}
	if r, _ := s.Run(ctx, "r4"); r.Status != RunCancelled {
		t.Errorf("r4 (already finished) became %q", r.Status)
	}

	list, err := s.Runs(ctx, "alice", 10)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range list {
		order = append(order, r.ID)
	}
	if want := []string{"r3", "r1", "r4", "r2"}; !equal(order, want) {
		t.Errorf("alice's list %v, want her own newest first then the rest newest first: %v", order, want)
	}
	if _, err := s.Run(ctx, "nope"); !errors.Is(err, ErrNoRun) {
		t.Errorf("unknown run: %v, want ErrNoRun", err)
	}
	// The reference run of a block is its latest done run.
	if err := s.SaveRun(ctx, Run{ID: "r5", Learner: "dan", Block: "lab1", Request: req, Status: RunFailed, CreatedAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if ref, err := s.LatestRun(ctx, "lab1"); err != nil || ref.ID != "r1" || len(ref.Rows) != 2 {
		t.Errorf("LatestRun(lab1) = %s with %d rows (%v), want r1, the done one, not the newer failed r5", ref.ID, len(ref.Rows), err)
	}
	if _, err := s.LatestRun(ctx, "lab2"); !errors.Is(err, ErrNoRun) {
		t.Errorf("LatestRun of a block never run: %v, want ErrNoRun", err)
	}
	// The answers are kept, "none" included, until a run of the block is
	// saved: a run of lab2 finishing is seen at once, and so is a newer
	// done run of lab1.
	if err := s.SaveRun(ctx, Run{ID: "r6", Learner: "eve", Block: "lab2", Request: req, Status: RunQueued, CreatedAt: t0.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LatestRun(ctx, "lab2"); !errors.Is(err, ErrNoRun) {
		t.Errorf("LatestRun(lab2) with only a queued run: %v, want ErrNoRun", err)
	}
	if err := s.SaveRun(ctx, Run{ID: "r6", Learner: "eve", Block: "lab2", Request: req, Status: RunDone, CreatedAt: t0.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if ref, err := s.LatestRun(ctx, "lab2"); err != nil || ref.ID != "r6" {
		t.Errorf("LatestRun(lab2) after r6 is done = %q, %v; want r6", ref.ID, err)
	}
	if err := s.SaveRun(ctx, Run{ID: "r7", Learner: "eve", Block: "lab1", Request: req, Status: RunDone, CreatedAt: t0.Add(3 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if ref, err := s.LatestRun(ctx, "lab1"); err != nil || ref.ID != "r7" {
		t.Errorf("LatestRun(lab1) after r7 is done = %q, %v; want r7", ref.ID, err)
	}
}

// Saving a run again updates its status and times but never its request,
// learner or creation time.
func TestSaveRunUpdatesOnlyState(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	t0 := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	if err := s.SaveRun(ctx, Run{ID: "x", Learner: "a", Request: json.RawMessage(`{"a":1}`), Status: RunQueued, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRun(ctx, Run{ID: "x", Learner: "b", Request: json.RawMessage(`{"b":2}`), Status: RunFailed, Reason: "why", CreatedAt: t0.Add(time.Hour), StartedAt: t0, EndedAt: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if r.Learner != "a" || string(r.Request) != `{"a":1}` || !r.CreatedAt.Equal(t0) || r.Status != RunFailed || r.Reason != "why" || !r.StartedAt.Equal(t0) {
		t.Errorf("after update: %+v", r)
	}
	if err := s.SaveRun(ctx, Run{Learner: "a"}); err == nil {
		t.Error("SaveRun without an id succeeded")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkAddRecords measures saving one 30 s window at 2,000/s.
func BenchmarkAddRecords(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	recs := testRecords(0, 60000)
	b.ResetTimer()
	for i := range b.N {
		id := "run" + string(rune('a'+i%26)) + time.Now().Format("150405.000000000")
		if err := s.SaveRun(b.Context(), Run{ID: id, Learner: "a", Status: RunDone, CreatedAt: time.Now()}); err != nil {
			b.Fatal(err)
		}
		if err := s.AddRecords(b.Context(), id, recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(recs)*b.N)/b.Elapsed().Seconds(), "records/s")
}
