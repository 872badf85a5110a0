package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"capacitylab/chart"
	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
)

// runView is one run as the pages and GET /api/runs/{id} show it: the
// stored run, overlaid with the runner's live state when it holds the run
// (or, for a run live on another process, with the live state the store
// has: followedState).
type runView struct {
	ID             string          `json:"id"`
	Status         store.RunStatus `json:"status"`
	Reason         string          `json:"reason,omitempty"`
	Request        runner.Request  `json:"request"`
	Lesson         string          `json:"lesson,omitempty"`
	Block          string          `json:"block,omitempty"`
	Mine           bool            `json:"mine"`
	Position       int             `json:"position,omitempty"`
	EstimatedStart time.Time       `json:"estimated_start,omitzero"`
	CreatedAt      time.Time       `json:"created_at"`
	StartedAt      time.Time       `json:"started_at,omitzero"`
	EndedAt        time.Time       `json:"ended_at,omitzero"`
	Rows           []result.Row    `json:"rows"`
	Records        int             `json:"records"`
	LastSeq        int             `json:"last_seq"`
	// Starting: running, but its lab and load children are not up yet.
	Starting   bool         `json:"starting,omitempty"`
	Prediction []prediction `json:"prediction"`
	// Samples are a run over time's seconds (result.Sample), in order;
	// none for other runs.
	Samples   []result.Sample `json:"samples,omitempty"`
	chart     chartEntry      // the chart of Rows with Prediction
	timeChart chartEntry      // the chart of Samples (when there are any)
	show      []string        // the columns its lab block shows first (lessons.Lab.Show)
}

// Live reports whether the run is still queued or running.
func (v runView) Live() bool { return v.Status == store.RunQueued || v.Status == store.RunRunning }

// loadRun builds a run's view, or a not_found error. A run the runner
// holds (queued, running or recently finished) is read from memory, so
// the many watchers of a class refreshing after each row cost no database
// reads; others come from the store. withRecords also counts the stored
// records (a database read) for finished runs.
func (s *server) loadRun(r *http.Request, id string, withRecords bool) (runView, error) {
	return s.runView(r.Context(), id, learnerID(r), withRecords)
}

// runView is loadRun for a learner ("" for nobody's view, as the run
// panel is).
func (s *server) runView(ctx context.Context, id, learner string, withRecords bool) (runView, error) {
	var v runView
	var snap runner.Snapshot
	live := false
	if s.runner != nil {
		snap, live = s.runner.Get(id)
	}
	if live {
		v = runView{ID: id, Status: snap.Status, Reason: snap.Reason, Request: snap.Request, Lesson: snap.Request.Lesson, Block: snap.Request.Block,
			Mine: learner != "" && snap.Learner == learner, Position: snap.Position, EstimatedStart: snap.EstimatedStart,
			CreatedAt: snap.CreatedAt, StartedAt: snap.StartedAt, EndedAt: snap.EndedAt, Rows: snap.Rows, LastSeq: snap.LastSeq,
			Samples: snap.Samples, Starting: snap.Starting}
	} else {
		stored, err := s.store.Run(ctx, id)
		if errors.Is(err, store.ErrNoRun) || err == nil && hiddenFrom(stored, learner) {
			return v, noSuchRun(id)
		} else if err != nil {
			return v, err
		}
		followed := s.followed(stored)
		if !followed {
			stored = settled(stored)
		}
		v = runView{ID: id, Status: stored.Status, Reason: stored.Reason, Lesson: stored.Lesson, Block: stored.Block,
			Mine: learner != "" && stored.Learner == learner, CreatedAt: stored.CreatedAt, StartedAt: stored.StartedAt, EndedAt: stored.EndedAt, Rows: stored.Rows}
		if err := json.Unmarshal(stored.Request, &v.Request); err != nil {
			return v, fmt.Errorf("run %s: stored request: %w", id, err)
		}
		if v.Request.OverTime {
			if v.Samples, err = s.storedSamples(ctx, id); err != nil {
				return v, err
			}
		}
		if followed {
			if err := s.followedState(ctx, &v); err != nil {
				return v, err
			}
		} else {
			// The seq of its last stored event, as for a followed run: a
			// watcher resuming after it gets what the stored stream adds
			// (the terminal event of a run stored without one).
			if v.LastSeq, _, err = s.store.LastRunEvent(ctx, id); err != nil {
				return v, err
			}
		}
	}
	if v.Rows == nil {
		v.Rows = []result.Row{}
	}
	if withRecords && !v.Live() {
		var err error
		if v.Records, err = s.store.CountRecords(ctx, id); err != nil {
			return v, err
		}
	}
	v.chart = s.chartOf(v)
	v.Prediction = v.chart.preds
	if v.overTime() {
		v.timeChart = s.timeChartOf(v)
	}
	if v.Block != "" {
		if course, err := s.course(); err == nil {
			if lab, _, ok := course.Lab(v.Block); ok {
				v.show = lab.Show
			}
		}
	}
	return v, nil
}

// noSuchRun is the answer for a run that does not exist, and for another
// learner's upload, which must not be told apart from one that does not.
func noSuchRun(id string) *Error {
	return &Error{Code: CodeNotFound, Title: "No such run", Message: "There is no run " + id + ": the link may be mistyped.",
		Links: []errorLink{{"All runs", "/runs"}}}
}

// hiddenFrom reports whether the stored run is an upload learner may not
// see: every upload is private to the learner who made it.
func hiddenFrom(r store.Run, learner string) bool {
	return r.Upload && (learner == "" || r.Learner != learner)
}

// settled is a stored run the runner does not hold as it stands: one
// stored queued or running is over (the runner holds every live run), and
// is shown interrupted, as the server marks it at start when it can.
// With Deps.SharedRuns such a run is live on another process instead
// (followed).
func settled(r store.Run) store.Run {
	if r.Status == store.RunQueued || r.Status == store.RunRunning {
		r.Status, r.Reason = store.RunInterrupted, runner.UnsavedEndReason
	}
	return r
}

// chartCacheSize bounds the run charts kept.
const chartCacheSize = 256

// chartEntry is a run's prediction and chart, and the chart rendered for
// a page.
type chartEntry struct {
	preds []prediction
	chart chart.Chart
	html  string
}

// chartOf is the model's prediction and the chart of v's rows, kept per
// run and number of rows, so they are computed once per row rather than
// once per watcher (model.QueueCurve takes a millisecond or two).
func (s *server) chartOf(v runView) chartEntry {
	key := v.ID + "/" + strconv.Itoa(len(v.Rows))
	if v.ID == "" {
		key = "preset/" + v.Request.Block
	}
	e, _ := s.charts.getOrMake(key, func() (chartEntry, bool, error) {
		var e chartEntry
		if v.Request.Upload != nil {
			// No prediction: the course has no model of a learner's own service.
			e.chart = uploadChart(v.Request.Upload.Analysis, "chart-"+panelID(v))
		} else {
			e.preds = predict(v.Request, v.Rows)
			e.chart = runChart(v.Request, v.Rows, e.preds, "chart-"+panelID(v))
			if scalable(v.Request, v.Rows) {
				e.chart, _ = scalabilityChart(v.Request, v.Rows, "chart-"+panelID(v))
			}
		}
		e.html = renderChart(e.chart)
		return e, true, nil
	})
	return e
}

// requestSummary says in words what a run measures.
func requestSummary(q runner.Request) string {
	if q.Upload != nil {
		return uploadWords(q)
	}
	knobs := q.Config.String()
	if q.Mode == runner.ModeClosed {
		return fmt.Sprintf("%s · closed loop, %s clients · %s s a window", knobs, joinInts(q.Clients), fmtNum(q.Seconds)) + changesSummary(q)
	}
	seed := fmt.Sprintf("seed %d", q.Seed)
	if q.RNG != "" && q.RNG != string(loadrun.PCG) {
		seed += " (" + q.RNG + ")"
	}
	return fmt.Sprintf("%s · %s a second · %s s a window · %s", knobs, joinFloats(q.Rates), fmtNum(q.Seconds), seed) + changesSummary(q)
}

// changesSummary is " · at 10s:WAIT_MS=200 in every window" for a run
// with knob changes, "" for one without.
func changesSummary(q runner.Request) string {
	if len(q.At) == 0 {
		return ""
	}
	return " · at " + joinChanges(q.At) + " in every window"
}

func joinFloats(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmtNum(v)
	}
	return strings.Join(s, ", ")
}

func joinInts(vs []int) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}

func boolText(b bool) string { return strconv.FormatBool(b) }

func u64(v uint64) string { return strconv.FormatUint(v, 10) }

// followedState fills in what the store says of a run live on another
// process beyond its row (status, rows and samples so far): the seq of
// its last stored event and, while it is queued, its position and
// estimated start from its latest queued event.
func (s *server) followedState(ctx context.Context, v *runView) error {
	if v.Status != store.RunQueued {
		last, kind, err := s.store.LastRunEvent(ctx, v.ID)
		v.LastSeq = last
		// Running with nothing logged since it was queued: its children
		// are starting.
		v.Starting = v.Status == store.RunRunning && (kind == "" || runner.Kind(kind) == runner.KindQueued)
		return err
	}
	events, err := s.store.RunEvents(ctx, v.ID, 0)
	if err != nil {
		return err
	}
	for _, e := range events {
		v.LastSeq = e.Seq
		if runner.Kind(e.Kind) != runner.KindQueued {
			continue
		}
		var q runner.Event
		if err := json.Unmarshal(e.JSON, &q); err != nil {
			return fmt.Errorf("run %s: stored event %d: %w", v.ID, e.Seq, err)
		}
		v.Position, v.EstimatedStart = q.Position, q.EstimatedStart
	}
	return nil
}
