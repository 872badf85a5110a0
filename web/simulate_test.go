package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"capacitylab/labsvc"
	"capacitylab/lessons"
	"capacitylab/measure"
	"capacitylab/recorder"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/sim"

	"golang.org/x/net/html"
)

// sampleSim is the sample lesson's lab block as its Run form sends it.
func sampleSim() url.Values {
	return url.Values{"block": {"sample-lab"}, "workers": {"1"}, "spin_ms": {"2"}, "wait_ms": {"18"}, "limit": {"0"}, "cpus": {"1"},
		"mode": {"open"}, "rates": {"10, 20"}, "seconds": {"1"}, "seed": {"7"}}
}

// TestSimulateFoldedUntilPredicted: Simulate on a lab block that a
// Predict settles is refused until the learner has locked in or skipped
// it (a simulation would answer it), and the lesson page offers no
// Simulate while the block is folded; after a skip it answers.
func TestSimulateFoldedUntilPredicted(t *testing.T) {
	s := newSite(t)
	c := s.client()
	page := s.get(c, "/lessons/sample").body
	if hasTestID(t, page, "lab-simulate") {
		t.Error("a folded lab block offers Simulate")
	}
	res := s.postJSON(c, "/api/simulate", sampleSim())
	var body errorBody
	json.Unmarshal([]byte(res.body), &body)
	if res.StatusCode != 409 || body.Error == nil || !strings.Contains(body.Error.Message, "Lock in or skip the prediction") {
		t.Fatalf("simulate before predicting: %d %s", res.StatusCode, res.body)
	}
	s.post(c, samplePredict, url.Values{"action": {"skip"}})
	if page := s.get(c, "/lessons/sample").body; !hasTestID(t, page, "lab-simulate") || !hasTestID(t, page, "lab-sim-slot") {
		t.Error("after the skip the lab block offers no Simulate")
	}
	res = s.postJSON(c, "/api/simulate", sampleSim())
	if res.StatusCode != 200 {
		t.Fatalf("simulate after skipping: %d %s", res.StatusCode, res.body)
	}
}

// TestSimulateAnswersTheSimulator: the JSON answer is package sim's rows
// for the request, marked simulated, with the model beside them; the
// panel is labelled a simulation and holds those rows; and nothing is
// stored as the learner's run.
func TestSimulateAnswersTheSimulator(t *testing.T) {
	s := newSite(t)
	c := s.client()
	s.post(c, samplePredict, url.Values{"action": {"skip"}})
	res := s.postJSON(c, "/api/simulate", sampleSim())
	var got simView
	if err := json.Unmarshal([]byte(res.body), &got); err != nil || res.StatusCode != 200 {
		t.Fatalf("simulate: %d %s (%v)", res.StatusCode, res.body, err)
	}
	q := runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1}, Mode: runner.ModeOpen, Rates: []float64{10, 20}, Seconds: 1, Seed: 7}}
	sw := q.Sweep()
	sw.Driver = sim.Model{Lab: q.Config, Timeout: q.Timeout()}
	rep, err := sw.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := rep.Rows()
	if !got.Simulated || len(got.Rows) != 2 || len(got.Model) != 2 || got.Request.Lesson != "sample" {
		t.Fatalf("answer = %+v, want 2 simulated rows of the sample lesson and the model at each", got)
	}
	for i := range want {
		g, w := got.Rows[i], want[i]
		if g.Sent != w.Sent || g.OK != w.OK || g.P50MS != w.P50MS || g.P99MS != w.P99MS || g.Lost != 0 {
			t.Errorf("row %d: sent %d ok %d p50 %v p99 %v lost %d; the simulation gives sent %d ok %d p50 %v p99 %v", i+1, g.Sent, g.OK, g.P50MS, g.P99MS, g.Lost, w.Sent, w.OK, w.P50MS, w.P99MS)
		}
	}
	if got.Requests != want[0].Arrivals+want[1].Arrivals {
		t.Errorf("requests = %d, want %d", got.Requests, want[0].Arrivals+want[1].Arrivals)
	}

	panel := s.do(c, "POST", "/api/simulate?panel=1", sampleSim(), map[string]string{"Accept": "application/json"})
	if panel.StatusCode != 200 || !strings.HasPrefix(panel.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("panel: %d %s", panel.StatusCode, panel.Header.Get("Content-Type"))
	}
	if label := testIDText(t, panel.body, "sim-label"); !strings.HasPrefix(label, "Simulation Computed by the simulator") || !strings.Contains(label, "It is not a run") {
		t.Errorf("the panel's label says %q", label)
	}
	doc := parse(t, panel.body)
	rows := find(doc, byTestID("sim-rows"))
	if len(rows) != 1 {
		t.Fatalf("the panel has %d sim-rows tables", len(rows))
	}
	trs := find(rows[0], func(n *html.Node) bool { return n.Data == "tr" })
	if len(trs) != 3 {
		t.Fatalf("the table has %d rows, want a head and 2", len(trs))
	}
	// The first columns are the block's show: offered, ok_per_sec, p50_ms
	// after the window.
	cells := find(trs[1], func(n *html.Node) bool { return n.Data == "td" })
	rec := recorder.RowCells(want[0], lessons.AllColumns())
	cols := lessons.AllColumns()
	if text(cells[0]) != "1" || text(cells[1]) != rec[slices.Index(cols, "offered")] || text(cells[2]) != rec[slices.Index(cols, "ok_per_sec")] || text(cells[3]) != rec[slices.Index(cols, "p50_ms")] {
		t.Errorf("first row %q %q %q %q, want window 1 and the simulated offered, ok_per_sec, p50_ms", text(cells[0]), text(cells[1]), text(cells[2]), text(cells[3]))
	}
	if chartHTML := renderNode(find(doc, byTestID("sim-chart"))[0]); !strings.Contains(chartHTML, "ok/s, simulated") || !strings.Contains(chartHTML, "model") {
		t.Error("the chart does not draw the simulation beside the model")
	}
	runs, err := s.store.LearnerRuns(t.Context(), learnerOf(t, s, c), 10)
	if err != nil || len(runs) != 0 {
		t.Errorf("after simulating the learner has %d runs (%v), want none", len(runs), err)
	}
}

// TestSimulateRefusesAsARunDoes: bad fields get the same 400 and messages
// as POST /api/sweeps, and the simulator's own refusals say what is wrong.
func TestSimulateRefusesAsARunDoes(t *testing.T) {
	s := newSite(t)
	c := s.client()
	bad := url.Values{"workers": {"0"}, "rates": {"40"}, "seconds": {"1"}}
	res := s.postJSON(c, "/api/simulate", bad)
	var got errorBody
	json.Unmarshal([]byte(res.body), &got)
	// What a run's validation (the runner's limits, here this machine's
	// defaults, as a server without a runner uses) says of the same request.
	q := runner.Request{Preset: measure.Preset{Config: labsvc.DefaultConfig(), Mode: runner.ModeOpen, Rates: []float64{40}, Seconds: 1}}
	q.Workers = 0
	var want runner.FieldErrors
	errors.As(runner.DefaultLimits(runtime.NumCPU()).Validate(q), &want)
	if res.StatusCode != 400 || got.Error == nil || got.Error.Message != "Nothing was simulated: 1 field needs fixing." || got.Errors["workers"] == "" || got.Errors["workers"] != want["workers"] {
		t.Fatalf("bad workers: %d %s; a run's validation says %q", res.StatusCode, res.body, want["workers"])
	}
	accept := url.Values{"workers": {"2"}, "accept": {"workers"}, "rates": {"40"}, "seconds": {"1"}}
	res = s.postJSON(c, "/api/simulate", accept)
	if res.StatusCode != 400 || !strings.Contains(res.body, "ACCEPT") {
		t.Errorf("ACCEPT=workers: %d %s, want a 400 saying the simulator models the door only", res.StatusCode, res.body)
	}
}

// TestSimulatedPresetOffersNoRun: a lab block whose preset is simulated
// (its table comes from the simulator) offers Simulate and no Run; its
// live twin beside it is where a run is measured. A Predict settled by the
// simulated preset folds the twin too: before it is answered, simulating
// the twin (the same sweep) is refused.
func TestSimulatedPresetOffersNoRun(t *testing.T) {
	dir := t.TempDir()
	lesson := "---\nslug: s\npart: P\nchapter: C\nnumber: 1\ntitle: T\nminutes: 1\nas_of: 2026-12-01\n---\n\nText.\n\n" +
		"```predict id=s-p\nprompt: Q?\noptions:\n  - text: A\n    correct: true\n    explain: Yes.\n  - text: B\n    explain: No.\nsettled_by: s-sim\n```\n\n" +
		"```lab id=s-sim\nworkers: 1\nspin_ms: 0\nwait_ms: 10\nlimit: 0\ncpus: 1\nrates: [50]\nseconds: 1\nsimulated: true\n```\n\n" +
		"```lab id=s-live\nworkers: 1\nspin_ms: 0\nwait_ms: 10\nlimit: 0\ncpus: 1\nrates: [50]\nseconds: 1\n```\n"
	if err := os.WriteFile(filepath.Join(dir, "s.md"), []byte(lesson), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := lessons.LoadWith(os.DirFS(dir), lessons.LoadOptions{Pending: true})
	if err != nil {
		t.Fatal(err)
	}
	s := newSiteAt(t, filepath.Join(t.TempDir(), "p.db"), func(d *Deps) { d.Course = func() (*lessons.Course, error) { return c, nil } })
	cl := s.client()
	twin := url.Values{"block": {"s-live"}, "workers": {"1"}, "spin_ms": {"0"}, "wait_ms": {"10"}, "cpus": {"1"}, "rates": {"50"}, "seconds": {"1"}}
	if res := s.postJSON(cl, "/api/simulate", twin); res.StatusCode != 409 {
		t.Errorf("simulating the folded twin before predicting: %d %s, want 409", res.StatusCode, res.body)
	}
	s.post(cl, "/lessons/s/predict/s-p", url.Values{"action": {"skip"}})
	if res := s.postJSON(cl, "/api/simulate", twin); res.StatusCode != 200 {
		t.Errorf("simulating the twin after the skip: %d %s", res.StatusCode, res.body)
	}
	doc := parse(t, s.get(cl, "/lessons/s").body)
	for id, wantRun := range map[string]bool{"s-sim": false, "s-live": true} {
		blocks := find(doc, byTestID("lab-"+id))
		if len(blocks) != 1 {
			t.Fatalf("no lab block %s", id)
		}
		if got := len(find(blocks[0], byTestID("lab-run"))) == 1; got != wantRun {
			t.Errorf("%s offers Run: %v, want %v", id, got, wantRun)
		}
		if len(find(blocks[0], byTestID("lab-simulate"))) != 1 {
			t.Errorf("%s offers no Simulate", id)
		}
	}
}

// TestSimulateMakesKnobChanges: Simulate takes a run's knob changes (at)
// and answers package sim's rows with the changes made; the panel's
// caption names them; a change the lab would refuse gets a run's own
// message, and one the simulator does not model (BACKLOG) a 400 saying so.
func TestSimulateMakesKnobChanges(t *testing.T) {
	s := newSite(t)
	c := s.client()
	s.post(c, samplePredict, url.Values{"action": {"skip"}})
	form := sampleSim()
	form.Set("at", "500ms:WAIT_MS=200")
	res := s.postJSON(c, "/api/simulate", form)
	var got simView
	if err := json.Unmarshal([]byte(res.body), &got); err != nil || res.StatusCode != 200 {
		t.Fatalf("simulate: %d %s (%v)", res.StatusCode, res.body, err)
	}
	q := runner.Request{Preset: measure.Preset{Config: labsvc.Config{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1}, Mode: runner.ModeOpen, Rates: []float64{10, 20}, Seconds: 1, Seed: 7}}
	sw := q.Sweep()
	sw.Driver = sim.Model{Lab: q.Config, Timeout: q.Timeout()}
	plain, err := sw.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	change, _ := result.ParseKnobChange("500ms:WAIT_MS=200")
	q.At = []result.KnobChange{change}
	sw = q.Sweep()
	sw.Driver = sim.Model{Lab: q.Config, Timeout: q.Timeout()}
	rep, err := sw.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range rep.Rows() {
		g := got.Rows[i]
		if g.Sent != w.Sent || g.OK != w.OK || g.P99MS != w.P99MS || g.Lost != 0 {
			t.Errorf("row %d: sent %d ok %d p99 %v lost %d; the simulation with the change gives sent %d ok %d p99 %v", i+1, g.Sent, g.OK, g.P99MS, g.Lost, w.Sent, w.OK, w.P99MS)
		}
		if p := plain.Rows()[i]; g.P99MS <= p.P99MS {
			t.Errorf("row %d: p99 %v ms with WAIT_MS 200 from 500 ms, %v without: want the change to show", i+1, g.P99MS, p.P99MS)
		}
	}
	panel := s.do(c, "POST", "/api/simulate?panel=1", form, map[string]string{"Accept": "application/json"})
	if panel.StatusCode != 200 || !strings.Contains(panel.body, "at 500ms:WAIT_MS=200 in every window") {
		t.Errorf("panel: %d; want its caption to name the knob change", panel.StatusCode)
	}
	// The model's dashed lines are one lab's: the page says they leave
	// the change out, where a sighted learner reads it.
	if !strings.Contains(panel.body, "dashed lines are the model. The model is for the knobs each window starts with: the knob changes (500ms:WAIT_MS=200) are not in its lines.") {
		t.Errorf("panel: want it to say the model's lines leave out the knob change")
	}

	for _, tt := range []struct{ at, want string }{
		{"500ms:CPUS=2", ""}, // the run's own message
		{"5s:WAIT_MS=20", ""},
		{"500ms:BACKLOG=16", "knob change 500ms:BACKLOG=16 is not simulated"},
	} {
		form.Set("at", tt.at)
		res := s.postJSON(c, "/api/simulate", form)
		var body errorBody
		json.Unmarshal([]byte(res.body), &body)
		want := tt.want
		if want == "" {
			bad := q
			bad.At = nil
			var c result.KnobChange
			_ = c.UnmarshalText([]byte(tt.at))
			bad.At = append(bad.At, c)
			var fe runner.FieldErrors
			errors.As(runner.DefaultLimits(runtime.NumCPU()).Validate(bad), &fe)
			want = fe["at"]
		}
		if res.StatusCode != 400 || want == "" || !strings.Contains(body.Errors["at"], want) {
			t.Errorf("at %s: %d %s; want a 400 whose at says %q", tt.at, res.StatusCode, res.body, want)
		}
	}
}
