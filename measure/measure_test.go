package measure_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"capacitylab/affinity"
	"capacitylab/childproc"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/measure"
	"capacitylab/result"
)

// The children are this test binary re-executed: a lab child with
// labEnv=1, a load child with loadEnv=1, and a load child that breaks the
// pipe protocol in one way with loadEnv set to that way (see
// misbehave): the real RunLoadChild, its stdout passed through a filter.
const (
	labEnv  = "MEASURE_TEST_LAB_CHILD"
	loadEnv = "MEASURE_TEST_LOAD_CHILD"
)

func TestMain(m *testing.M) {
	labsvc.ChildMain(labEnv)
	measure.ChildMain(loadEnv)
	if way := os.Getenv(loadEnv); way != "" {
		misbehave(way)
	}
	goleak.VerifyTestMain(m)
}

// misbehave runs a load child whose stdout breaks the protocol:
//
//	malformed  a line that is not JSON after window 0's row
//	exit       exits with status 4, saying why on stderr, after window 0's row
//	drop       leaves out the last record of window 0
//	vnext      says hello in the protocol version after this one
//	nosample   leaves out window 0's first sample (a run over time)
//	oversample counts one ok too many in window 0's first sample
func misbehave(way string) {
	out := &filter{w: os.Stdout, way: way}
	err := measure.RunLoadChild(context.Background(), os.Stdin, out, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// filter passes a load child's lines on, breaking the protocol as way says.
type filter struct {
	w       io.Writer
	way     string
	buf     []byte
	rows    int
	sampled bool // the first sample was dealt with
}

func (f *filter) Write(p []byte) (int, error) {
	f.buf = append(f.buf, p...)
	for {
		i := bytes.IndexByte(f.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := f.buf[:i+1]
		f.buf = f.buf[i+1:]
		var l map[string]any
		if err := json.Unmarshal(line, &l); err != nil {
			return 0, err
		}
		switch {
		case f.way == "vnext" && l["kind"] == "hello":
			l["version"] = measure.ProtocolVersion + 1
			line, _ = json.Marshal(l)
			line = append(line, '\n')
		case f.way == "nosample" && l["kind"] == "sample" && f.rows == 0 && !f.sampled:
			f.sampled = true
			continue
		case f.way == "oversample" && l["kind"] == "sample" && f.rows == 0 && !f.sampled:
			f.sampled = true
			smp := l["sample"].(map[string]any)
			smp["ok"] = smp["ok"].(float64) + 1
			line, _ = json.Marshal(l)
			line = append(line, '\n')
		case f.way == "drop" && l["kind"] == "records" && f.rows == 0:
			recs := l["records"].([]any)
			l["records"] = recs[:len(recs)-1]
			line, _ = json.Marshal(l)
			line = append(line, '\n')
		}
		if _, err := f.w.Write(line); err != nil {
			return 0, err
		}
		if l["kind"] == "row" {
			f.rows++
			switch f.way {
			case "malformed":
				io.WriteString(f.w, "this line is not JSON\n")
			case "exit":
				fmt.Fprintln(os.Stderr, "load child: simulated crash after the first row")
				os.Exit(4)
			}
		}
	}
}

// children starts this binary as the lab child and as a load child that
// behaves as way says ("1": as it should).
func children(t testing.TB, way string) measure.Config {
	t.Helper()
	lab, err := labsvc.SelfCommand(labEnv)
	if err != nil {
		t.Fatal(err)
	}
	load := labsvc.ChildCommand{Path: lab.Path, Env: []string{loadEnv + "=" + way}}
	return measure.Config{Lab: lab, Load: load}
}

// preset is a sweep a lab of 4 workers (ceiling 400 a second) serves
// easily: windows of a second at the given rates.
func preset(rates ...float64) measure.Preset {
	return measure.Preset{Config: labsvc.Config{Workers: 4, SpinMS: 1, WaitMS: 4, CPUs: 1}, Rates: rates, Seconds: 1, Seed: 3}
}

// recording keeps what a measurement hands over.
type recording struct {
	started  measure.Event
	progress []measure.Event
	windows  []measure.Event
}

func (r *recording) handle(e measure.Event) error {
	switch e.Kind {
	case measure.EventStarted:
		r.started = e
	case measure.EventProgress:
		r.progress = append(r.progress, e)
	case measure.EventWindow:
		r.windows = append(r.windows, e)
	}
	return nil
}

// checkWindows fails unless every window handed over accounts for each of
// its arrivals: one record each, in seq order, and lost 0.
func checkWindows(t *testing.T, ws []measure.Event) {
	t.Helper()
	for i, w := range ws {
		row := w.Row
		if w.Window != i || row.Window != i {
			t.Errorf("window event %d is window %d (row %d)", i, w.Window, row.Window)
		}
		if row.Lost != 0 || row.Sent != row.OK+row.Refused+row.Gaveup+row.Error || len(w.Records) != row.Arrivals || row.Arrivals == 0 {
			t.Errorf("window %d: %d records for %d arrivals, sent %d, ok %d, lost %d: want every request accounted for", i, len(w.Records), row.Arrivals, row.Sent, row.OK, row.Lost)
		}
		for j, rec := range w.Records {
			if rec.Seq != j || rec.Window != i || rec.Outcome == result.Unfinished {
				t.Errorf("window %d record %d: seq %d window %d outcome %s", i, j, rec.Seq, rec.Window, rec.Outcome)
				break
			}
		}
	}
}

// A measurement: the lab child on its processor, the load child on the
// others (pinned, with GOMAXPROCS at most their number), every
// window handed over
// in order with every record, each arrival at its scheduled time (the
// records' intended times are the preset's schedule), and both children
// gone afterwards.
func TestMeasure(t *testing.T) {
	p := preset(40, 80)
	var rec recording
	var apart error
	checked := false
	res, err := measure.Measure(t.Context(), children(t, "1"), p, func(e measure.Event) error {
		if e.Kind == measure.EventProgress && e.Window == 1 && !checked {
			checked, apart = true, childrenApart(rec.started)
		}
		return rec.handle(e)
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Windows != 2 || len(rec.windows) != 2 {
		t.Fatalf("%d windows ran to their end, %d handed over; want 2", res.Windows, len(rec.windows))
	}
	checkWindows(t, rec.windows)
	if !checked || apart != nil {
		t.Errorf("the children's processors were checked during window 1: %v (%v)", checked, apart)
	}
	t.Logf("lab %+v; load %+v", res.Lab, res.Load)
	if res.Load.Pid == 0 || res.Load.GoMaxProcs < 1 || res.Load.Note == "" || res.Lab.Pid == 0 {
		t.Errorf("children %+v %+v: want both pids, the load child's GOMAXPROCS and its pinning", res.Lab, res.Load)
	}
	if len(res.Load.CPUs) > 0 && res.Load.GoMaxProcs > len(res.Load.CPUs) {
		t.Errorf("the load child is pinned to %v with GOMAXPROCS %d: want at most one Go processor a processor (the runtime's default for them)",
			res.Load.CPUs, res.Load.GoMaxProcs)
	}
	for i, w := range rec.windows {
		want, err := p.Sweep().WindowSchedule(i)
		if err != nil {
			t.Fatal(err)
		}
		for j, r := range w.Records {
			if r.Intended != want[j] {
				t.Fatalf("window %d record %d intended %v, the schedule says %v", i, j, r.Intended, want[j])
			}
		}
	}
	if len(rec.progress) < 2 {
		t.Errorf("%d progress events in two windows of a second, want some", len(rec.progress))
	}
	for _, pid := range []int{res.Lab.Pid, res.Load.Pid} {
		if !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			t.Errorf("child %d still exists after Measure returned", pid)
		}
	}
}

// A server that keeps processors free for its generators
// (affinity.KeepFree) starts its lab children on the processors it kept
// and pins each load child to the free ones (Config.Generator), though the
// child inherits the server's narrower mask: every thread of the load
// child on exactly the free processors, the lab child on none of them, and
// the load child's hello saying so.
func TestMeasureGeneratorKeptFree(t *testing.T) {
	allowed, err := affinity.Allowed()
	if err != nil {
		t.Skipf("no processor affinity here: %v", err)
	}
	if len(allowed) < 2 {
		t.Skipf("this process may use %d processor(s) %v: none can be kept free beside one for the server and its lab", len(allowed), allowed)
	}
	free, pin, err := affinity.KeepFree(1)
	if err != nil || free == nil {
		t.Fatalf("KeepFree(1) with %v allowed: %v, %v", allowed, free, err)
	}
	defer func() {
		if err := pin.Restore(); err != nil {
			t.Error(err)
		}
	}()
	cfg := children(t, "1")
	cfg.Generator = free
	var lab, load map[int][]int
	res, err := measure.Measure(t.Context(), cfg, preset(40), func(e measure.Event) error {
		if e.Kind == measure.EventStarted {
			var err error
			if lab, err = affinity.ThreadCPUs(e.Lab.Pid); err != nil {
				return err
			}
			if load, err = affinity.ThreadCPUs(e.Load.Pid); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("free %v; lab %+v; load %+v", free, res.Lab, res.Load)
	if !slices.Equal(res.Load.CPUs, free) {
		t.Errorf("the load child says it is pinned to %v (%s), want the free processors %v", res.Load.CPUs, res.Load.Note, free)
	}
	if len(load) == 0 || len(lab) == 0 {
		t.Fatalf("threads read: %d of the load child, %d of the lab child; want some of each", len(load), len(lab))
	}
	for tid, cpus := range load {
		if !slices.Equal(cpus, free) {
			t.Errorf("thread %d of the load child may use %v, want the free processors %v", tid, cpus, free)
		}
	}
	for tid, cpus := range lab {
		for _, c := range cpus {
			if slices.Contains(free, c) {
				t.Errorf("thread %d of the lab child may use processor %d, which was kept free for the generator", tid, c)
			}
		}
	}
}

// childrenApart says whether the load child's threads all keep off the lab
// child's processors (nil), when there is another processor to keep to.
func childrenApart(started measure.Event) error {
	lab, err := affinity.ProcessCPUs(started.Lab.Pid)
	if err != nil {
		return nil // no affinity here: nothing to check
	}
	self, _ := affinity.ProcessCPUs(os.Getpid())
	if len(self) < 2 {
		return nil
	}
	load, err := affinity.ThreadCPUs(started.Load.Pid)
	if err != nil {
		return err
	}
	for tid, cpus := range load {
		for _, c := range cpus {
			if slices.Contains(lab, c) {
				return fmt.Errorf("thread %d of the load child may use processor %d, which the lab child (%v) uses", tid, c, lab)
			}
		}
	}
	return nil
}

// The pipe protocol held to: each way a load child can break it ends the
// measurement with the reason (the line, or the child's exit and last
// words), and the windows handed over before it stay handed over, each
// accounting for every request.
func TestPipeProtocolBroken(t *testing.T) {
	tests := []struct {
		name    string
		way     string
		windows int    // handed over before the break
		want    string // in the error
		check   func(error) bool
	}{
		// A line that is not JSON, after window 0's row: a protocol error
		// naming its line (hello, progress, records and the row came first).
		{"malformed line", "malformed", 1, "not a JSON line", func(err error) bool {
			var pe *measure.ProtocolError
			return errors.As(err, &pe) && pe.Line > 3
		}},
		// The child exits after window 0's row: its exit status and last
		// words, as a lab child's death is reported.
		{"early exit", "exit", 1, "exit status 4", func(err error) bool {
			var ee *childproc.ExitError
			return errors.As(err, &ee) && ee.Name == "load child" && strings.Contains(ee.LastWords, "simulated crash after the first row")
		}},
		// Window 0's records miss one: its row is not handed over.
		{"a record missing", "drop", 0, "window 0's row counts", func(err error) bool {
			var pe *measure.ProtocolError
			return errors.As(err, &pe)
		}},
		// Another protocol version: nothing is measured.
		{"another version", "vnext", 0, fmt.Sprintf("speaks protocol version %d", measure.ProtocolVersion+1), func(err error) bool {
			var se *measure.StartError
			return errors.As(err, &se) && se.Child == "load child"
		}},
		// A run over time whose window 0 lacks its first sample: the
		// second does not begin where the samples so far end.
		{"a sample missing", "nosample", 0, "not window 0's next sample", func(err error) bool {
			var pe *measure.ProtocolError
			return errors.As(err, &pe)
		}},
		// A sample that counts an answer too many: the row is refused.
		{"a sample miscounted", "oversample", 0, "window 0's samples do not add up to its row", func(err error) bool {
			var pe *measure.ProtocolError
			return errors.As(err, &pe)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recording
			p := preset(40, 40, 40)
			if strings.HasSuffix(tt.way, "sample") {
				// The ways that break a run over time: windows of 2 s have
				// two samples or more.
				p.OverTime, p.Seconds = true, 2
			}
			res, err := measure.Measure(t.Context(), children(t, tt.way), p, rec.handle)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !tt.check(err) {
				t.Fatalf("Measure = %v (%T), want an error saying %q", err, err, tt.want)
			}
			t.Log(err)
			if len(rec.windows) != tt.windows || res.Windows != tt.windows {
				t.Errorf("%d windows handed over, %d counted, want %d", len(rec.windows), res.Windows, tt.windows)
			}
			checkWindows(t, rec.windows)
		})
	}
}

// A load child killed in the middle of a window: the measurement ends with
// its fate (signal: killed) and its last words, the windows before it are
// kept, each accounting for every request, and the lab child is stopped.
func TestLoadChildKilledMidWindow(t *testing.T) {
	var rec recording
	killed := false
	res, err := measure.Measure(t.Context(), children(t, "1"), preset(40, 40, 40), func(e measure.Event) error {
		if e.Kind == measure.EventProgress && e.Window == 1 && e.ElapsedMS > 200 && !killed {
			killed = true
			if err := syscall.Kill(rec.started.Load.Pid, syscall.SIGKILL); err != nil {
				t.Error(err)
			}
		}
		return rec.handle(e)
	})
	var ee *childproc.ExitError
	if !errors.As(err, &ee) || ee.Name != "load child" || !strings.Contains(ee.Error(), "signal: killed") {
		t.Fatalf("Measure = %v, want the load child's death by signal", err)
	}
	if !killed || len(rec.windows) != 1 || res.Windows != 1 {
		t.Fatalf("killed %v; %d windows handed over, %d counted; want window 0 only", killed, len(rec.windows), res.Windows)
	}
	checkWindows(t, rec.windows)
	if !errors.Is(syscall.Kill(res.Lab.Pid, 0), syscall.ESRCH) {
		t.Errorf("lab child %d still exists", res.Lab.Pid)
	}
}

// Cancelling a measurement mid-window: the window is cut short but still
// handed over, every arrival accounted for (those not yet due as not
// sent), Cut saying why; Measure returns the cancel's cause, counting only
// the windows that ran to their end.
func TestMeasureCancelled(t *testing.T) {
	why := errors.New("the learner cancelled")
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	var rec recording
	res, err := measure.Measure(ctx, children(t, "1"), preset(40, 40, 40), func(e measure.Event) error {
		if e.Kind == measure.EventProgress && e.Window == 1 && e.ElapsedMS > 200 {
			cancel(why)
		}
		return rec.handle(e)
	})
	if !errors.Is(err, why) {
		t.Fatalf("Measure = %v, want the cancel's cause", err)
	}
	if len(rec.windows) != 2 || res.Windows != 1 {
		t.Fatalf("%d windows handed over, %d ran to their end; want 2 and 1", len(rec.windows), res.Windows)
	}
	checkWindows(t, rec.windows)
	cut := rec.windows[1]
	if !errors.Is(cut.Cut, why) || !strings.Contains(cut.Row.Note, "cancelled before the window ended") || cut.Row.NotSent == 0 {
		t.Errorf("the cut window: cut %v, note %q, %d not sent; want the cause, the note and arrivals not sent", cut.Cut, cut.Row.Note, cut.Row.NotSent)
	}
}

// An error from the caller's handling of a window (its records could not
// be saved) stops the measurement before the next window and is returned.
func TestHandlerErrorStops(t *testing.T) {
	full := errors.New("disk full")
	var rec recording
	res, err := measure.Measure(t.Context(), children(t, "1"), preset(40, 40, 40), func(e measure.Event) error {
		rec.handle(e)
		if e.Kind == measure.EventWindow {
			return full
		}
		return nil
	})
	if !errors.Is(err, full) || len(rec.windows) != 1 || res.Windows != 1 {
		t.Fatalf("Measure = %v after %d windows (%d counted), want the handler's error after window 0", err, len(rec.windows), res.Windows)
	}
}

// A lab child that cannot start: nothing is measured, and the error says
// which child.
func TestLabDoesNotStart(t *testing.T) {
	cfg := children(t, "1")
	cfg.Lab = labsvc.ChildCommand{Path: "/bin/false"}
	_, err := measure.Measure(t.Context(), cfg, preset(40), func(measure.Event) error {
		t.Error("an event from a measurement whose lab did not start")
		return nil
	})
	var se *measure.StartError
	if !errors.As(err, &se) || se.Child != "lab child" {
		t.Fatalf("Measure = %v, want a StartError of the lab child", err)
	}
}

// A preset the lab or the generator would refuse is refused before any
// child starts.
func TestPresetValidate(t *testing.T) {
	tests := []struct {
		name string
		p    measure.Preset
		want string
	}{
		// A knob out of the lab's range.
		{"knob", measure.Preset{Config: labsvc.Config{Workers: 0, CPUs: 1}, Rates: []float64{10}, Seconds: 1}, "WORKERS: 0 is not allowed"},
		// Clients in an open loop.
		{"clients in open loop", measure.Preset{Config: labsvc.DefaultConfig(), Rates: []float64{10}, Clients: []int{2}, Seconds: 1}, "client counts are for a closed loop"},
		// An unknown mode.
		{"mode", measure.Preset{Config: labsvc.DefaultConfig(), Rates: []float64{10}, Seconds: 1, Mode: "half"}, `mode "half" is not known`},
		// No windows.
		{"no windows", measure.Preset{Config: labsvc.DefaultConfig(), Seconds: 1}, "give one of rates"},
		// An unknown random source.
		{"rng", measure.Preset{Config: labsvc.DefaultConfig(), Rates: []float64{10}, Seconds: 1, RNG: "mt"}, `random source "mt" is not known`},
		// A timeout past the generator's cap.
		{"timeout", measure.Preset{Config: labsvc.DefaultConfig(), Rates: []float64{10}, Seconds: 1, TimeoutMS: 61000}, "timeout 1m1s is not allowed"},
		// A retry spec with a parameter out of range, named.
		{"retry", measure.Preset{Config: labsvc.DefaultConfig(), Rates: []float64{10}, Seconds: 1, Retry: "retries=2,backoff=linear"}, `retry's backoff "linear" is not allowed: want none, fixed, exp or jitter`},
		// Retries in a closed loop.
		{"retry closed", measure.Preset{Config: labsvc.DefaultConfig(), Clients: []int{2}, Mode: measure.ModeClosed, Seconds: 1, Retry: "retries=2"}, "retry is for an open loop"},
		// Shares of the arrivals above 1 together.
		{"classes", measure.Preset{Config: labsvc.DefaultConfig(), Rates: []float64{10}, Seconds: 1, Critical: 0.7, Sheddable: 0.6}, "critical 0.7 and sheddable 0.6 are not allowed"},
	}
	for _, tt := range tests {
		if err := tt.p.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate = %v, want an error containing %q", tt.name, err, tt.want)
		}
		if _, err := measure.Measure(t.Context(), children(t, "1"), tt.p, func(measure.Event) error { return nil }); err == nil {
			t.Errorf("%s: Measure ran a preset that does not validate", tt.name)
		}
	}
	closed := measure.Preset{Config: labsvc.DefaultConfig(), Clients: []int{2, 4}, Seconds: 1, Mode: measure.ModeClosed}
	if err := closed.Validate(); err != nil || closed.Windows() != 2 || len(closed.Sweep().Clients) != 2 {
		t.Errorf("a closed loop of two windows: %v, %d windows", err, closed.Windows())
	}
}

// Generate in this process, against a lab that serves here: windows
// handed over in order with their records, the next one only after the
// handler returns, and a handler's error stopping the sweep.
func TestGenerate(t *testing.T) {
	lab, err := labsvc.SelfCommand(labEnv)
	if err != nil {
		t.Fatal(err)
	}
	child, err := labsvc.StartChild(t.Context(), lab, labsvc.Config{Workers: 4, SpinMS: 1, WaitMS: 4, CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer child.Stop()
	target, err := loadrun.NewTarget(child.Target(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	control, err := loadrun.NewControl(child.Control(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sw := loadrun.Sweep{Target: target, Control: &control, Rates: []float64{40, 40, 40}, Seconds: 0.5, Seed: 1}
	stop := errors.New("stop here")
	var ws []measure.Event
	var handled time.Time
	err = measure.Generate(t.Context(), sw, func(e measure.Event) error {
		switch e.Kind {
		case measure.EventProgress:
			if len(ws) > 0 && e.Window <= ws[len(ws)-1].Window {
				t.Errorf("progress of window %d after its window event", e.Window)
			}
		case measure.EventWindow:
			// The next window begins a pause after the last was
			// handled, and ends no sooner than its last arrival.
			if n := len(e.Records); len(ws) > 0 && n > 0 {
				if least := measure.WindowPause + e.Records[n-1].Intended; time.Since(handled) < least {
					t.Errorf("window %d ended %v after the last was handled, less than the pause and its last arrival (%v)", e.Window, time.Since(handled), least)
				}
			}
			ws = append(ws, e)
			time.Sleep(100 * time.Millisecond) // the next window waits for this
			handled = time.Now()
			if len(ws) == 2 {
				return stop
			}
		}
		return nil
	})
	if !errors.Is(err, stop) || len(ws) != 2 {
		t.Fatalf("Generate = %v after %d windows, want the handler's error after 2", err, len(ws))
	}
	checkWindows(t, ws)
}
