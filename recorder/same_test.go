package recorder

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"capacitylab/internal/physics"
	"capacitylab/lessons"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
)

// sameLesson is a lesson whose preset runs well below saturation: 4
// workers of 1 ms spin + 9 ms wait (ceilings 400 and 1,000 a second)
// offered 50 and then 100 a second, so no request waits long, none is
// refused and none gives up.
const sameLesson = "---\nslug: s\npart: P\nchapter: C\nnumber: 1\ntitle: T\nminutes: 5\nas_of: 2026-11-30\n---\n" +
	"```lab id=s-lab\nworkers: 4\nspin_ms: 1\nwait_ms: 9\nlimit: 0\ncpus: 1\nrates: [50, 100]\nseconds: 2\nseed: 5\n```\n"

// The runner and the recorder measure one way: the same preset and seed,
// recorded as a lesson's table and run as a learner's run on the same
// machine, give the same rows. The counts are equal exactly (the same
// arrivals, sent at the same intended times, below saturation: every one
// answered ok), whatever the machine is doing. The latencies, which no two
// runs share to the microsecond, must agree to within a millisecond at the
// median and in the mean (the requests take about 10 ms): a physics check,
// held when the machine is quiet, a one-minute load average at most
// lessons.QuietLoadAverage at the start (the level above which the
// recorder itself warns, as sim.TestFidelityAgainstRecordedTables holds
// its latencies). On a busy machine two measurements one after the other
// differ by several milliseconds at the median whatever measures them
// (12 ms at a load average of 14 here), so the check then skips saying so.
func TestRunnerAndRecorderMeasureTheSame(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two measurements of 2 × 2 s with real children")
	}
	loadAvg := readLoadAvg()
	quiet := false
	if f := strings.Fields(loadAvg); len(f) > 0 {
		if one, err := strconv.ParseFloat(f[0], 64); err == nil {
			quiet = one <= lessons.QuietLoadAverage
		}
	}
	dir := writeDir(t, map[string]string{"s.md": sameLesson})
	var log bytes.Buffer
	cfg := testConfig(t, dir, &log)
	recs, err := recordOrSkip(t, cfg)
	if err != nil {
		t.Fatalf("Record: %v\nlog:\n%s", err, log.String())
	}
	recorded := recs[0].Rows

	c, err := lessons.LoadWith(os.DirFS(dir), LoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	lab, _, ok := c.Lab("s-lab")
	if !ok {
		t.Fatal("no s-lab")
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	children := testChildren(t)
	r, err := runner.New(runner.Config{Lab: children.Lab, Load: children.Load, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tk, err := r.Submit(t.Context(), "learner", runner.Request{Preset: Preset(lab), Block: lab.ID})
	if err != nil {
		t.Fatal(err)
	}
	var run runner.Snapshot
	for end := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		s, _ := r.Get(tk.ID)
		if s.Status != store.RunQueued && s.Status != store.RunRunning {
			run = s
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the run is still %s after a minute", s.Status)
		}
	}
	if run.Status != store.RunDone || len(run.Rows) != len(recorded) {
		t.Fatalf("the run ended %s (%s) with %d rows; the recording has %d", run.Status, run.Reason, len(run.Rows), len(recorded))
	}
	for i, a := range recorded {
		b := run.Rows[i]
		t.Logf("window %d: recorded sent %d ok %d p50 %.2f mean %.2f p99 %.2f ms; run sent %d ok %d p50 %.2f mean %.2f p99 %.2f ms",
			i, a.Sent, a.OK, a.P50MS, a.MeanMS, a.P99MS, b.Sent, b.OK, b.P50MS, b.MeanMS, b.P99MS)
		counts := func(r result.Row) [10]float64 {
			return [10]float64{r.Offered, float64(r.Arrivals), float64(r.Sent), float64(r.OK), float64(r.Refused), float64(r.Gaveup),
				float64(r.Error), float64(r.NotSent), float64(r.Lost), float64(r.Done)}
		}
		if counts(a) != counts(b) {
			t.Errorf("window %d: offered, arrivals, sent, ok, refused, gaveup, error, not_sent, lost, done: recorded %v, run %v", i, counts(a), counts(b))
		}
		if a.OK != a.Sent || a.Lost != 0 {
			t.Errorf("window %d: recorded %d ok of %d sent, %d lost: the preset is meant to be below saturation", i, a.OK, a.Sent, a.Lost)
		}
	}
	t.Run("latencies within 1 ms", func(t *testing.T) {
		physics.Require(t)
		if !quiet {
			physics.Skip(t, "the one-minute load average at the start was %q; the check needs at most %.1f", loadAvg, lessons.QuietLoadAverage)
		}
		for i, a := range recorded {
			b := run.Rows[i]
			if d := math.Abs(a.P50MS - b.P50MS); d > 1 {
				t.Errorf("window %d: p50 %.2f ms recorded, %.2f ms run: %.2f ms apart, want at most 1", i, a.P50MS, b.P50MS, d)
			}
			if d := math.Abs(a.MeanMS - b.MeanMS); d > 1 {
				t.Errorf("window %d: mean %.2f ms recorded, %.2f ms run: %.2f ms apart, want at most 1", i, a.MeanMS, b.MeanMS, d)
			}
		}
	})
}

// recordOrSkip records with cfg, and skips the test, saying why, when the
// machine was too busy to measure on (every attempt's sends stayed late,
// ErrLate): a lab measured then would tell nothing about the lab.
func recordOrSkip(t *testing.T, cfg Config) ([]Recorded, error) {
	t.Helper()
	recs, err := Record(context.Background(), cfg)
	if errors.Is(err, ErrLate) {
		t.Skipf("the machine was too busy to measure on: %v", err)
	}
	return recs, err
}
