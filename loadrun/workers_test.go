package loadrun_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"capacitylab/internal/physics"
	"capacitylab/labsvc"
	"capacitylab/result"
)

// okBetween counts a window's ok answers that ended in [from, to) and the
// arrivals intended then.
func okBetween(recs []result.Record, from, to time.Duration) (ok, arrivals int) {
	for _, r := range recs {
		if r.Outcome == result.OK && r.End >= from && r.End < to {
			ok++
		}
		if r.Intended >= from && r.Intended < to {
			arrivals++
		}
	}
	return ok, arrivals
}

// workersRun runs one window at rate against a lab of cfg (in this
// process) with WORKERS changed at 1 s, sampled every second, and checks
// what holds on any machine: the lab took the change (a knob event),
// every request was served (ok = sent = the lab's done, none lost), the
// samples add up to the row, and the lab has its own WORKERS again after
// the window, in GET /config and GET /stats.
func workersRun(t *testing.T, cfg labsvc.Config, rate, seconds float64, change string) result.WindowReport {
	t.Helper()
	l := startLab(t, cfg)
	sw := sweepOf(t, l, 5*time.Second)
	c, err := result.ParseKnobChange(change)
	if err != nil {
		t.Fatal(err)
	}
	sw.Rates, sw.Seconds, sw.SampleEvery, sw.Changes = []float64{rate}, seconds, time.Second, []result.KnobChange{c}
	rep, events, err := collect(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	knobs := 0
	for _, e := range events {
		if e.Kind == result.EventKnob && e.Change == change {
			knobs++
		}
	}
	w := rep.Windows[0]
	checkSamples(t, w, time.Second)
	if row := w.Row; knobs != 1 || row.Lost != 0 || row.OK != row.Sent || row.Done != row.Sent || row.Note != "" {
		t.Errorf("%d knob events; row sent %d ok %d done %d lost %d, note %q; want the change made once and every request served", knobs, row.Sent, row.OK, row.Done, row.Lost, row.Note)
	}
	var got labsvc.ConfigReply
	if err := sw.Control.Config(t.Context(), &got); err != nil || got.Workers != cfg.Workers {
		t.Errorf("after the window GET /config says WORKERS %d (%v), want the lab's own %d back", got.Workers, err, cfg.Workers)
	}
	// GET /stats as the lab serves it (loadrun reads only some of it).
	var st labsvc.Stats
	if err := sw.Control.Config(t.Context(), &got); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(l.control + "/stats"); err != nil {
		t.Fatal(err)
	} else {
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil || st.Workers != cfg.Workers || st.InService != 0 || st.Queued != 0 {
			t.Errorf("after the window GET /stats says workers %d, %d queued, %d in service (%v); want %d and an empty lab", st.Workers, st.Queued, st.InService, err, cfg.Workers)
		}
	}
	for k, s := range w.Samples {
		ok, arrivals := okBetween(w.Records, time.Duration(k)*time.Second, time.Duration(k+1)*time.Second)
		t.Logf("%.0f s: %d arrivals, %d ok; lab read %v: queued %d in service %d", s.AtS, arrivals, ok, s.Lab, s.Queued, s.InService)
	}
	return w
}

// Capacity that lands mid-window, against a real lab: WAIT_MS 50, 2
// workers (40 a second) offered 100 a second, WORKERS 8 (160 a second) at
// 1 s. Before the change goodput is 2 workers' capacity and a queue
// builds; after it the new workers take the queue at once and it drains
// within the second (at up to 160 − 100 a second: goodput then is well
// above the offered rate), and from 2 s goodput is the offered rate, with
// answers taking about WAIT_MS. Every request is
// served; the window's end sets WORKERS back to 2.
func TestSweepWorkersGrow(t *testing.T) {
	w := workersRun(t, labsvc.Config{Workers: 2, WaitMS: 50, CPUs: 1}, 100, 3, "1s:WORKERS=8")
	t.Run("goodput", func(t *testing.T) {
		physics.Require(t)
		before, _ := okBetween(w.Records, 0, time.Second)
		draining, offered := okBetween(w.Records, time.Second, 2*time.Second)
		after, arrivals := okBetween(w.Records, 2*time.Second, 3*time.Second)
		// 2 workers end at most 20 requests a second each.
		if before > 40 || before < 30 {
			t.Errorf("%d ok in the first second, want 2 workers' capacity: 30 to 40", before)
		}
		// The queue at the change, read at 1 s, drains within the second
		// after it: 8 workers end up to 160 a second, so goodput then is
		// the arrivals and most of the queue, twice what 2 workers could.
		q0, q1 := w.Samples[0], w.Samples[1]
		if !q0.Lab || !q1.Lab {
			physics.Skip(t, "the lab's statistics were not read within a second at 1 s and 2 s (read %v, %v)", q0.Lab, q1.Lab)
		}
		if q0.Queued < 20 || q1.Queued > 5 || draining < offered+q0.Queued/2 || draining < 2*40 {
			t.Errorf("queued %d at the change and %d a second later; %d ok in that second for %d arrivals; want a queue that drained, goodput above the arrivals by half the queue and twice 2 workers' 40",
				q0.Queued, q1.Queued, draining, offered)
		}
		if float64(after) < 0.8*float64(arrivals) || float64(after) > 1.2*float64(arrivals) {
			t.Errorf("%d ok in the third second for %d arrivals, want goodput at the offered rate", after, arrivals)
		}
		if p50 := w.Samples[2].P50MS; p50 > 100 {
			t.Errorf("median %.1f ms in the third second, want about WAIT_MS (50): the queue drained", p50)
		}
	})
}

// Capacity taken away mid-window, against a real lab: WAIT_MS 100, 8
// workers (80 a second) offered 50 a second, WORKERS 2 (20 a second) at
// 1 s, with about 5 requests in service then. The busy workers finish what
// they hold: every request is served and none lost, and after the
// change goodput falls to 2 workers' capacity while a queue builds. The
// window's end sets WORKERS back to 8.
func TestSweepWorkersShrink(t *testing.T) {
	w := workersRun(t, labsvc.Config{Workers: 8, WaitMS: 100, CPUs: 1}, 50, 2, "1s:WORKERS=2")
	t.Run("goodput", func(t *testing.T) {
		physics.Require(t)
		// Those in service at the change (at most 8), then 20 a second.
		if after, _ := okBetween(w.Records, time.Second, 2*time.Second); after > 8+20 {
			t.Errorf("%d ok in the second after WORKERS 8 → 2, want at most the 8 in service then and 2 workers' 20", after)
		}
		if s := w.Samples[1]; s.Lab && s.Queued < 15 {
			t.Errorf("%d queued at 2 s, want a queue building at about 50 − 20 = 30 a second", s.Queued)
		}
	})
}
