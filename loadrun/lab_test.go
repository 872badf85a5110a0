package loadrun_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"capacitylab/affinity"
	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
	"capacitylab/loadrun"
	"capacitylab/result"
)

// The acceptance tests run the lab as a child process, as the server does,
// so that its CPUS knob is real: with LOADRUN_TEST_LAB_CHILD=1, this test
// binary is that child (labsvc.ChildMain) instead of the tests.
const labChildEnv = "LOADRUN_TEST_LAB_CHILD"

func TestMain(m *testing.M) {
	labsvc.ChildMain(labChildEnv)
	goleak.VerifyTestMain(m)
}

// lab is a running lab: where its door and control API are.
type lab struct {
	target  string // http://host:port/
	control string // http://host:port
	stop    func() // ends a lab child early (nil for an in-process lab)
}

// startLab serves cfg in this process until the test ends.
func startLab(t testing.TB, cfg labsvc.Config) lab {
	t.Helper()
	l := labtest.Serve(t, cfg)
	return lab{target: l.Target + "/", control: l.Control}
}

// startChildLab starts cfg as a lab child process (GOMAXPROCS and affinity
// = cfg.CPUs) and pins this process to the other processors meanwhile
// (affinity.PinAwayFrom; nothing changes on a host with no other processor,
// and the log says so). Both end when the test ends or when the returned
// lab's stop is called, whichever is first: a test starting several
// children one after another stops each before the next, since a child
// started while this process is pinned away would inherit the generator's
// processors.
func startChildLab(t testing.TB, cfg labsvc.Config) lab {
	t.Helper()
	cc, err := labsvc.SelfCommand(labChildEnv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	child, err := labsvc.StartChild(ctx, cc, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var p *affinity.Pinning
	stop := sync.OnceFunc(func() {
		if err := p.Restore(); err != nil {
			t.Errorf("restoring affinity: %v", err)
		}
		_ = child.Stop()
		cancel()
		select {
		case <-child.Done():
		case <-time.After(5 * time.Second):
			t.Errorf("lab child %d did not exit", child.Pid())
		}
	})
	t.Cleanup(stop)
	cpus, err := affinity.ProcessCPUs(child.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if p, err = affinity.PinAwayFrom(cpus); err != nil {
		t.Fatal(err)
	}
	t.Log(p)
	return lab{target: child.Target(), control: child.Control(), stop: stop}
}

// sweepOf builds a sweep against l.
func sweepOf(t testing.TB, l lab, timeout time.Duration) loadrun.Sweep {
	t.Helper()
	target, err := loadrun.NewTarget(l.target, timeout)
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := loadrun.NewControl(l.control, nil)
	if err != nil {
		t.Fatal(err)
	}
	return loadrun.Sweep{Target: target, Control: &ctl, Seed: 1}
}

// collect runs s, gathering every event, and returns them with the report.
func collect(ctx context.Context, s loadrun.Sweep) (result.Report, []result.Event, error) {
	var evs []result.Event
	rep, err := s.Run(ctx, func(e result.Event) { evs = append(evs, e) })
	return rep, evs, err
}

// A client of 2 workers (Open.ClientWorkers) against a lab whose answers
// take at least 200 ms, arrivals every 20 ms: never more than 2 requests
// are out at once; every arrival that found both workers busy is recorded
// not_sent with reason client_busy and counted in the row's client_busy,
// not in not_sent; sent + client_busy = arrivals and lost is 0.
func TestOpenClientWorkers(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 8, SpinMS: 0, WaitMS: 200, CPUs: 1})
	target, err := loadrun.NewTarget(l.target, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := loadrun.Schedule(loadrun.Uniform, 50, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	res := loadrun.Open{Target: target, Schedule: sched, ClientWorkers: 2}.Run(t.Context(), nil)
	row := res.Metrics.Row(50, time.Second)
	if row.Lost != 0 || row.NotSent != 0 || row.Sent+row.ClientBusy != row.Arrivals || row.Arrivals != len(sched) {
		t.Errorf("arrivals %d, sent %d, client_busy %d, not_sent %d, lost %d: want sent + client_busy = arrivals (%d), not_sent 0 and lost 0",
			row.Arrivals, row.Sent, row.ClientBusy, row.NotSent, row.Lost, len(sched))
	}
	// At most 2 out at once: 1 s of 200 ms answers is about 10 sent.
	if row.Sent < 6 || row.Sent > 12 || row.OK != row.Sent {
		t.Errorf("sent %d, ok %d: want every one of about 10 (two workers, 200 ms each, for 1 s) answered", row.Sent, row.OK)
	}
	type edge struct {
		at time.Duration
		d  int
	}
	var edges []edge
	busy := 0
	for _, r := range res.Records {
		switch {
		case r.Outcome == result.NotSent:
			if r.Reason != result.ReasonClientBusy {
				t.Errorf("record %d: not sent for %q, want client_busy", r.Seq, r.Reason)
			}
			busy++
		default:
			edges = append(edges, edge{r.Sent, 1}, edge{r.End, -1})
		}
	}
	if busy != row.ClientBusy {
		t.Errorf("%d records client_busy, the row counts %d", busy, row.ClientBusy)
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.d - b.d // an end before a send at the same instant
	})
	out, most := 0, 0
	for _, e := range edges {
		out += e.d
		most = max(most, out)
	}
	if most > 2 {
		t.Errorf("%d requests were out at once, more than the client's 2 workers", most)
	}
}

// A knob change through the lab's control API: the sweep's knob event
// says when the lab took it, and a sweep cancelled after it leaves the
// lab with its own knobs.
func TestSweepKnobChangeCancelled(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 4, SpinMS: 0, WaitMS: 5, CPUs: 1})
	target, err := loadrun.NewTarget(l.target, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := loadrun.NewControl(l.control, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := result.ParseKnobChange("200ms:WAIT_MS=30")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sw := loadrun.Sweep{Target: target, Control: &ctl, Rates: []float64{20}, Seconds: 2, Seed: 1, Changes: []result.KnobChange{c}}
	var knob *result.Event
	_, _ = sw.Run(ctx, func(e result.Event) {
		if e.Kind == result.EventKnob {
			knob = &e
			var cfg labsvc.Config
			if err := ctl.Config(t.Context(), &cfg); err != nil || cfg.WaitMS != 30 {
				t.Errorf("after the knob event the lab has WAIT_MS %d (%v), want 30", cfg.WaitMS, err)
			}
			cancel()
		}
	})
	if knob == nil || knob.Change != "200ms:WAIT_MS=30" || knob.ElapsedMS < 200 || knob.ElapsedMS > 400 {
		t.Fatalf("knob event %+v, want 200ms:WAIT_MS=30 at 200 to 400 ms", knob)
	}
	var cfg labsvc.Config
	if err := ctl.Config(t.Context(), &cfg); err != nil || cfg.WaitMS != 5 {
		t.Errorf("after the cancelled sweep the lab has WAIT_MS %d (%v), want its own 5", cfg.WaitMS, err)
	}
}

// A lab that stops during a window, after which its statistics cannot be
// read, costs the sweep nothing it measured: the window is handed over
// (WindowDone) cut short, with every arrival's record and a note saying
// why the lab's side is missing, and the sweep stops with the error
// rather than dropping the window. (Before, the failed GET /stats ended
// the sweep and the window's records were lost: the runner's
// TestChildKilledMidRun found it on a loaded machine, when the kill came
// after the window's last request.)
func TestSweepLabGoneAfterWindow(t *testing.T) {
	l := startChildLab(t, labsvc.Config{Workers: 4, SpinMS: 0, WaitMS: 5, CPUs: 1})
	s := sweepOf(t, l, time.Second)
	s.Rates, s.Seconds = []float64{40, 40}, 1
	var done []result.WindowReport
	s.WindowDone = func(wr result.WindowReport) { done = append(done, wr) }
	stopped := false
	_, err := s.Run(t.Context(), func(e result.Event) {
		if !stopped && e.Kind == result.EventProgress && e.Window == 0 && e.ElapsedMS >= 200 {
			l.stop() // the lab child ends; the window goes on sending into nothing
			stopped = true
		}
	})
	if !stopped {
		t.Fatal("the sweep ended before a progress event of its first window")
	}
	if err == nil {
		t.Fatal("the sweep ended without an error against a lab that had stopped")
	}
	if len(done) != 1 {
		t.Fatalf("%d windows handed over, want the first one (cut) and no other", len(done))
	}
	wr := done[0]
	t.Logf("sweep error: %v; row note %q; %d arrivals, %d ok, %d errors", err, wr.Row.Note, wr.Row.Arrivals, wr.Row.OK, wr.Row.Error)
	if wr.Cut == nil || !strings.Contains(wr.Row.Note, "the lab's statistics could not be read after the window") {
		t.Errorf("window 1: cut %v, note %q; want it cut, saying the lab's statistics could not be read", wr.Cut, wr.Row.Note)
	}
	if wr.Row.Arrivals == 0 || len(wr.Records) != wr.Row.Arrivals || wr.Row.Lost != 0 {
		t.Errorf("window 1: %d records for %d arrivals, lost %d; want one record per arrival and none lost", len(wr.Records), wr.Row.Arrivals, wr.Row.Lost)
	}
}
