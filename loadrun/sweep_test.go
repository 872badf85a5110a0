package loadrun_test

import (
	"context"
	"encoding/json"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/result"
)

func TestSweepAgainstLab(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 4, SpinMS: 0, WaitMS: 5, CPUs: 1})
	s := sweepOf(t, l, time.Second)
	s.Rates = []float64{50, 150}
	s.Seconds = 1
	rep, evs, err := collect(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	rows := rep.Rows()
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	for i, r := range rows {
		// Far below the lab's ceiling of 800/s: every request is answered,
		// and the lab served exactly what we were answered.
		if r.Lost != 0 || r.OK != r.Sent || r.OK != r.Done || r.N != r.OK || r.Arrivals != len(rep.Windows[i].Records) {
			t.Errorf("row %d: %+v: want lost 0, ok = sent = done = n, one record per arrival", i, r)
		}
		if r.Offered != s.Rates[i] || r.Window != i || r.Queued < 0 || r.Backlogged < 0 || r.P50MS < 5 || r.P99MS < r.P50MS {
			t.Errorf("row %d: %+v: want offered %v, window %d, queued and backlogged read from the lab, p50 ≥ 5 ms", i, r, s.Rates[i], i)
		}
	}

	// The event stream: progress at least four times a second per window,
	// one row per window in order, done last.
	progress := map[int]int{}
	var rowEvents []result.Event
	for i, e := range evs {
		switch e.Kind {
		case result.EventProgress:
			progress[e.Window]++
			if e.Rate != s.Rates[e.Window] || e.Windows != 2 {
				t.Errorf("progress event %+v: wrong rate or window count", e)
			}
		case result.EventRow:
			rowEvents = append(rowEvents, e)
			if e.Row == nil || !reflect.DeepEqual(*e.Row, rows[e.Window]) {
				t.Errorf("row event %d does not carry the report's row", e.Window)
			}
		case result.EventDone:
			if i != len(evs)-1 || e.Error != "" || e.Window != 2 {
				t.Errorf("done event %+v at %d of %d: want last, no error, 2 windows", e, i, len(evs))
			}
		}
	}
	if len(rowEvents) != 2 || rowEvents[0].Window != 0 || rowEvents[1].Window != 1 {
		t.Errorf("row events %+v, want windows 0 and 1", rowEvents)
	}
	for w := range 2 {
		if progress[w] < 4 {
			t.Errorf("window %d: %d progress events in a 1 s window, want at least 4", w, progress[w])
		}
	}
	// Events are JSON with the documented field names.
	b, err := json.Marshal(rowEvents[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{`"kind":"row"`, `"ok_per_sec":`, `"p99_ms":`, `"send_lag_p99_ms":`, `"not_sent":`, `"queued":`, `"backlogged":`} {
		if !strings.Contains(string(b), name) {
			t.Errorf("row event JSON %s lacks %s", b, name)
		}
	}
}

func TestSweepClosedLoop(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 2, SpinMS: 0, WaitMS: 10, CPUs: 1})
	s := sweepOf(t, l, time.Second)
	s.Clients = []int{2}
	s.Seconds = 1
	rep, _, err := collect(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Rows()[0]
	// Two clients, each waiting for its answer (~10 ms) before the next:
	// about 2 × 1 s ÷ 10 ms = 200 requests, never more than 2 in the lab.
	if r.Clients != 2 || r.Lost != 0 || r.OK != r.Sent || r.OK < 100 || r.OK > 210 || r.Queued > 2 || r.Done != r.OK {
		t.Errorf("closed-loop row %+v: want 2 clients, 100 to 210 ok, queue ≤ 2, done = ok", r)
	}
	if r.Offered != float64(r.Sent) {
		t.Errorf("offered %v, want sent ÷ seconds = %d", r.Offered, r.Sent)
	}
}

// A lab that cannot drain before the next window is reported, not hidden.
func TestSweepNotesUndrainedLab(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 1, SpinMS: 0, WaitMS: 50, CPUs: 1})
	s := sweepOf(t, l, 100*time.Millisecond)
	s.Rates = []float64{100, 10}
	s.Seconds = 0.5
	s.DrainWait = 100 * time.Millisecond
	rep, _, err := collect(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	rows := rep.Rows()
	// Window 0 leaves ~40 requests queued (50 arrivals, 20/s served) that
	// take ~2 s to serve: the second window starts with a busy lab.
	if !strings.Contains(rows[1].Note, "had not drained") {
		t.Errorf("window 1 note %q, want it to say the lab had not drained", rows[1].Note)
	}
	if rows[0].Gaveup == 0 || rows[0].Lost != 0 || rows[1].Lost != 0 {
		t.Errorf("rows %+v: want gaveups in window 0 and lost 0", rows)
	}
}

func TestSweepCancel(t *testing.T) {
	l := startLab(t, labsvc.Config{Workers: 2, SpinMS: 0, WaitMS: 10, CPUs: 1})
	s := sweepOf(t, l, time.Second)
	s.Rates = []float64{100, 100, 100}
	s.Seconds = 1
	// WindowDone sees every window, the cancelled one too, before its row
	// event goes out: rowsSeen is how many row events the receiver had at
	// each call.
	var mu sync.Mutex
	var handed []result.WindowReport
	var rowsAtCall []int
	rowsSeen := 0
	s.WindowDone = func(w result.WindowReport) {
		mu.Lock()
		defer mu.Unlock()
		handed = append(handed, w)
		rowsAtCall = append(rowsAtCall, rowsSeen)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var evs []result.Event
	rep, err := s.Run(ctx, func(e result.Event) {
		if e.Kind == result.EventRow {
			mu.Lock()
			if len(handed) <= e.Window {
				t.Errorf("row event of window %d came before WindowDone was called for it", e.Window)
			}
			rowsSeen++
			mu.Unlock()
		}
		evs = append(evs, e)
	})
	if err == nil {
		t.Fatal("cancelled sweep returned no error")
	}
	mu.Lock()
	if len(handed) != len(rep.Windows) {
		t.Errorf("WindowDone called %d times for %d windows", len(handed), len(rep.Windows))
	}
	for i := range min(len(handed), len(rep.Windows)) {
		if !reflect.DeepEqual(handed[i].Row, rep.Windows[i].Row) || len(handed[i].Records) != len(rep.Windows[i].Records) || len(handed[i].Records) == 0 {
			t.Errorf("WindowDone %d got row %+v with %d records; the report has %+v with %d", i, handed[i].Row, len(handed[i].Records), rep.Windows[i].Row, len(rep.Windows[i].Records))
		}
		if rowsAtCall[i] > i {
			t.Errorf("WindowDone %d was called after %d row events, want at most %d (its own row event comes after it)", i, rowsAtCall[i], i)
		}
	}
	mu.Unlock()
	rows := rep.Rows()
	if len(rows) != 2 || !strings.Contains(rows[1].Note, "cancelled") {
		t.Fatalf("rows %+v: want the finished window and the cancelled one, noted", rows)
	}
	r := rows[1]
	if r.Lost != 0 || r.NotSent == 0 || r.Sent+r.NotSent != r.Arrivals || r.Arrivals != len(rep.Windows[1].Records) {
		t.Errorf("cancelled row %+v: want lost 0, the rest not_sent, every arrival recorded", r)
	}
	last := evs[len(evs)-1]
	if last.Kind != result.EventDone || last.Error == "" {
		t.Errorf("last event %+v, want done with an error", last)
	}
}

// A control API that does not answer stops the sweep before anything is sent.
func TestSweepControlDown(t *testing.T) {
	fake := startFake(t, instant)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downURL := "http://" + ln.Addr().String()
	ln.Close()
	target, _ := loadrun.NewTarget(fake.URL, time.Second)
	ctl, _ := loadrun.NewControl(downURL, nil)
	s := loadrun.Sweep{Target: target, Control: &ctl, Rates: []float64{10}, Seconds: 1}
	_, evs, err := collect(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "/stats") {
		t.Errorf("err = %v, want a control API failure naming /stats", err)
	}
	if n := fake.conns.Load(); n != 0 {
		t.Errorf("%d connections reached the target, want none", n)
	}
	if len(evs) != 1 || evs[0].Kind != result.EventDone || evs[0].Error == "" {
		t.Errorf("events %+v, want one done event with the error", evs)
	}
}

func TestSweepValidate(t *testing.T) {
	target, _ := loadrun.NewTarget("http://127.0.0.1:1/", time.Second)
	cases := []struct {
		name string
		s    loadrun.Sweep
		want string
	}{
		// Open and closed loop at once is ambiguous.
		{"rates and clients", loadrun.Sweep{Target: target, Rates: []float64{1}, Clients: []int{1}, Seconds: 1}, "not more"},
		// Nothing to run.
		{"neither", loadrun.Sweep{Target: target, Seconds: 1}, "not none"},
		// A zero-length window.
		{"zero seconds", loadrun.Sweep{Target: target, Rates: []float64{1}}, "seconds 0 is not allowed"},
		// One rate over the cap spoils the sweep.
		{"rate over cap", loadrun.Sweep{Target: target, Rates: []float64{10, 1e6}, Seconds: 1}, "above the cap"},
		// Zero clients send nothing.
		{"zero clients", loadrun.Sweep{Target: target, Clients: []int{0}, Seconds: 1}, "clients 0 is not allowed"},
		// The zero Target has nowhere to send.
		{"no target", loadrun.Sweep{Rates: []float64{1}, Seconds: 1}, "target is missing"},
		// An unknown arrival process.
		{"bad kind", loadrun.Sweep{Target: target, Rates: []float64{1}, Seconds: 1, Process: "bursty"}, "not known"},
		// An unknown random source.
		{"bad rng", loadrun.Sweep{Target: target, Rates: []float64{1}, Seconds: 1, RNG: "lcg"}, "random source \"lcg\" is not known: want pcg or python"},
		// A trace and rates at once is ambiguous.
		{"arrivals and rates", loadrun.Sweep{Target: target, Rates: []float64{1}, Arrivals: []time.Duration{0}, Seconds: 1}, "not more"},
		// A trace time at or past the window's end would never be sent.
		{"arrival past the end", loadrun.Sweep{Target: target, Arrivals: []time.Duration{0, time.Second}, Seconds: 1}, "arrival 2 at 1s is not before the window's end at 1 s"},
		// A trace out of order.
		{"arrivals unsorted", loadrun.Sweep{Target: target, Arrivals: []time.Duration{2 * time.Millisecond, time.Millisecond}, Seconds: 1}, "arrival 2 at 1ms comes before arrival 1 at 2ms"},
		// A trace whose average rate is above the generator's cap.
		{"arrivals over the cap", loadrun.Sweep{Target: target, Arrivals: make([]time.Duration, 12000), Seconds: 1}, "12000 arrivals in 1 s is 12000 a second on average, above the cap"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.s.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate() = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// The same seed replays the same arrivals, window by window; another seed
// does not. No lab control API is needed for that.
func TestSweepReplays(t *testing.T) {
	target, err := loadrun.NewTarget(startFake(t, instant).URL, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	intended := func(seed uint64) [][]time.Duration {
		s := loadrun.Sweep{Target: target, Rates: []float64{200, 300}, Seconds: 0.2, Seed: seed}
		rep, _, err := collect(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		var out [][]time.Duration
		for _, w := range rep.Windows {
			var offs []time.Duration
			for _, r := range w.Records {
				offs = append(offs, r.Intended)
			}
			out = append(out, offs)
			if w.Row.Done != -1 || w.Row.Queued != -1 || w.Row.Backlogged != -1 {
				t.Errorf("without a control API done, queued and backlogged are %d/%d/%d, want -1", w.Row.Done, w.Row.Queued, w.Row.Backlogged)
			}
		}
		return out
	}
	a, b, c := intended(7), intended(7), intended(8)
	for w := range a {
		if !slices.Equal(a[w], b[w]) {
			t.Errorf("window %d: seed 7 twice gave different arrivals", w)
		}
		if slices.Equal(a[w], c[w]) {
			t.Errorf("window %d: seeds 7 and 8 gave the same arrivals", w)
		}
	}
	if slices.Equal(a[0], a[1][:min(len(a[0]), len(a[1]))]) {
		t.Error("windows 0 and 1 share a schedule")
	}
}

// A sweep's Pause comes between windows, never before the first: two
// windows of 0.1 s with a 0.4 s pause take more than the pause (without it
// they take about 0.2 s), and one window with a 2 s pause ends long
// before 2 s.
func TestSweepPause(t *testing.T) {
	target, err := loadrun.NewTarget(startFake(t, instant).URL, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	timed := func(rates []float64, pause time.Duration) time.Duration {
		start := time.Now()
		rep, _, err := collect(context.Background(), loadrun.Sweep{Target: target, Rates: rates, Seconds: 0.1, Seed: 1, Pause: pause})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Windows) != len(rates) {
			t.Fatalf("%d windows, want %d", len(rep.Windows), len(rates))
		}
		return time.Since(start)
	}
	if d := timed([]float64{50, 50}, 400*time.Millisecond); d < 400*time.Millisecond {
		t.Errorf("two 0.1 s windows with a 0.4 s pause took %v, want more than the pause", d)
	}
	if d := timed([]float64{50}, 2*time.Second); d >= 2*time.Second {
		t.Errorf("one window with a 2 s pause took %v: the pause came before the first window", d)
	}
}
