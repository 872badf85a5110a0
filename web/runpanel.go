package web

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
)

// panelID is the prefix of element ids inside a run's panel.
func panelID(v runView) string {
	if v.ID == "" {
		return "preview-" + v.Request.Block
	}
	return v.ID
}

// statusReplaying is the status a panel shows while a recorded run is
// replayed (never stored).
const statusReplaying = "replaying"

// statusLine says where a run stands, in words: queued with its place and
// wait, running with its window (counted from 1), done, failed or
// cancelled with the reason. static/js/runs.js writes the same sentences
// as events arrive.
func statusLine(v runView) string {
	n := v.Request.Windows()
	switch v.Status {
	case "":
		return "Not run yet. The dashed lines are what the model predicts for these knobs."
	case store.RunQueued:
		return fmt.Sprintf("Queued: number %d in line, starting %s.", v.Position, startsIn(time.Until(v.EstimatedStart)))
	case store.RunRunning:
		if v.Starting {
			return "Starting the lab: the first window begins as soon as it is up."
		}
		return fmt.Sprintf("Running: window %d of %d.", min(len(v.Rows)+1, n), n)
	case store.RunDone:
		return fmt.Sprintf("Done: all %d %s measured.", len(v.Rows), plural(len(v.Rows), "window", "windows"))
	case store.RunFailed:
		return "Failed: " + reasonText(v.Reason)
	case store.RunCancelled:
		return "Cancelled: " + reasonText(v.Reason)
	case store.RunInterrupted:
		return "Interrupted: " + reasonText(v.Reason)
	case statusReplaying:
		return fmt.Sprintf("Replaying a recorded run at its real pace: %d of %d windows so far.", len(v.Rows), n)
	}
	return string(v.Status)
}

// startsIn says when a queued run is expected to start.
func startsIn(d time.Duration) string {
	secs := int(math.Ceil(d.Seconds()))
	switch {
	case secs <= 1:
		return "in a moment"
	case secs < 90:
		return fmt.Sprintf("in about %d s", secs)
	}
	return fmt.Sprintf("in about %d min", int(math.Round(d.Minutes())))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// reasonText is a run's end reason as a sentence.
func reasonText(reason string) string {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return "no reason was given."
	}
	if !strings.HasSuffix(reason, ".") {
		reason += "."
	}
	return reason
}

func windowFraction(v runView) string {
	if v.Status == store.RunRunning {
		return "0"
	}
	if len(v.Rows) > 0 {
		return "1"
	}
	return "0"
}

func runFraction(v runView) string {
	n := v.Request.Windows()
	if n == 0 {
		return "0"
	}
	return strconv.FormatFloat(float64(len(v.Rows))/float64(n), 'f', 3, 64)
}

// runPanelFragment is GET /runs/{id}/panel: the run's panel alone, which
// runs.js puts into a lesson's lab block after pressing Run.
//
// With ?rows=N (a replay) it shows the finished run as it stood after N
// windows: the first N rows, their chart, and a replaying status.
func (s *server) runPanelFragment(w http.ResponseWriter, r *http.Request) error {
	id, rowsQ := chi.URLParam(r, "id"), r.URL.Query().Get("rows")
	if isUploadID(id) {
		// An upload's panel is its learner's alone: checked before the
		// renderings kept for everyone.
		if _, err := s.loadRun(r, id, false); err != nil {
			return err
		}
	}
	// A class's pages fetch a run's panel at once (when its run starts):
	// the rendering is kept per run state, so they cost one render, not
	// one each. The panel is the same for every learner. A live run's state
	// is its last event; a finished one's is final.
	key := id + "/stored/" + rowsQ
	held := false
	if s.runner != nil {
		if snap, live := s.runner.Get(id); live {
			key = id + "/" + strconv.Itoa(snap.LastSeq) + "/" + string(snap.Status) + "/" + rowsQ
			held = true
		}
	}
	if !held && s.sharedRuns {
		// Perhaps live on another process: its state is its last stored
		// event until that is the last of all.
		last, kind, err := s.store.LastRunEvent(r.Context(), id)
		if err != nil {
			return err
		}
		if !runner.Kind(kind).Terminal() {
			key = id + "/" + strconv.Itoa(last) + "/followed/" + rowsQ
		}
	}
	out, err := s.panels.getOrMake(key, func() ([]byte, bool, error) {
		v, err := s.loadRun(r, id, false)
		if err != nil {
			return nil, false, err
		}
		if q := r.URL.Query().Get("rows"); q != "" {
			n, err := strconv.Atoi(q)
			if err != nil || n < 0 {
				return nil, false, errorf(CodeInvalid, "rows="+q+" is not allowed: want how many windows of the replay to show, 0 or more.")
			}
			if v.Live() {
				return nil, false, errorf(CodeConflict, "The run is still live: watch it live rather than replayed.")
			}
			if n < len(v.Rows) {
				v.Rows = v.Rows[:n]
				v.Status, v.Reason = statusReplaying, ""
				v.chart = s.chartOf(v)
				v.Prediction = v.chart.preds
				// A run over time's samples, of the windows replayed so far.
				v.Samples = slices.DeleteFunc(slices.Clone(v.Samples), func(smp result.Sample) bool { return smp.Window >= n })
				if v.overTime() {
					v.timeChart = s.timeChartOf(v)
				}
			}
		}
		html, err := renderString(r.Context(), runPanel(v))
		if err != nil {
			return nil, false, err
		}
		// Kept only when rendered from the state the key names: the
		// runner's run may have moved on between the key and loadRun.
		keep := key == id+"/stored/"+rowsQ || key == id+"/"+strconv.Itoa(v.LastSeq)+"/"+string(v.Status)+"/"+rowsQ
		return []byte(html), keep, nil
	})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(out)
	return nil
}

// panelCacheSize bounds the rendered run panels kept: a few states of the
// runs being watched now.
const panelCacheSize = 64
