package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"capacitylab/input"
	"capacitylab/runner"
	"capacitylab/store"
)

// sweepAccepted is the 202 answer to POST /api/sweeps.
type sweepAccepted struct {
	ID             string    `json:"id"`
	Position       int       `json:"position"`
	EstimatedStart time.Time `json:"estimated_start"`
	URL            string    `json:"url"`    // the run's page
	Stream         string    `json:"stream"` // its websocket
}

// submitSweep is POST /api/sweeps: validate, queue, and answer 202 with the
// run's id and place (or 303 to the run's page for a plain form).
func (s *server) submitSweep(w http.ResponseWriter, r *http.Request) error {
	q, fe, err := parseSweep(r)
	if err != nil {
		return err
	}
	if s.runner == nil {
		return errorf(CodeUnavailable, "This server does not run live sweeps. Run the lab on your own machine with the commands shown.")
	}
	q.Lesson = "" // derived from the block, never taken from the request
	if q.Block != "" {
		c, err := s.loadCourse()
		if err != nil {
			return err
		}
		if _, l, ok := c.Lab(q.Block); ok {
			q.Lesson = l.Slug
		} else {
			fe["block"] = fmt.Sprintf("%q is not a lab block of this course: leave it empty or name a lab block", q.Block)
		}
	}
	if len(fe) == 0 {
		if verr := s.runner.Validate(q); verr != nil {
			errors.As(verr, &fe)
		}
	}
	if len(fe) > 0 {
		return s.refuseSweep(w, r, fe)
	}
	learner := ensureLearner(w, r)
	tk, err := s.runner.SubmitFrom(r.Context(), learner, clientAddr(r), q)
	var full *runner.QueueFullError
	var mine *runner.AlreadyQueuedError
	var share *runner.ShareError
	switch {
	case errors.As(err, &fe):
		return s.refuseSweep(w, r, fe)
	case errors.As(err, &share):
		msg := fmt.Sprintf("There are already %d runs waiting or running from your address (everyone behind one address, such as a school's, shares it), "+
			"so the queue stays fair to others. Try again in %s, or watch one of those runs on the runs page.", share.Share, retryText(share.RetryAfter))
		return &Error{Code: CodeBusy, Message: msg, Title: "Your address has its share of runs", RetryAfter: share.RetryAfter}
	case errors.As(err, &full):
		secs := retrySeconds(full.RetryAfter)
		msg := fmt.Sprintf("The queue is full (%d runs queued or running). Try again in about %d s, or look at the runs others have recorded.", s.runner.Capacity(), secs)
		return &Error{Code: CodeBusy, Message: msg, Title: "The queue is full", RetryAfter: full.RetryAfter}
	case errors.As(err, &mine):
		msg := "You already have a run waiting or running. Watch it, or cancel it before starting another."
		return &Error{Code: CodeConflict, Message: msg, Title: "You already have a run", Run: mine.ID}
	case errors.Is(err, runner.ErrClosed):
		return &Error{Code: CodeUnavailable, Message: "The server is restarting. Try again in a minute.", RetryAfter: time.Minute}
	case err != nil:
		return err
	}
	if prefersHTML(r) {
		http.Redirect(w, r, runURL(tk.ID), http.StatusSeeOther)
		return nil
	}
	writeJSON(w, http.StatusAccepted, sweepAccepted{ID: tk.ID, Position: tk.Position, EstimatedStart: tk.EstimatedStart.UTC(),
		URL: runURL(tk.ID), Stream: "/ws/runs/" + tk.ID})
	return nil
}

// refuseSweep is the 400 for bad fields: one message per field, rendered
// by the error path as "errors" in JSON or a list on the page.
func (s *server) refuseSweep(w http.ResponseWriter, r *http.Request, fe input.FieldErrors) error {
	n := len(fe)
	msg := "The run was not queued: 1 field needs fixing."
	if n != 1 {
		msg = fmt.Sprintf("The run was not queued: %d fields need fixing.", n)
	}
	return &Error{Code: CodeInvalid, Message: msg, Title: "The run was not queued", Fields: fe}
}

func runURL(id string) string { return "/runs/" + id }

// cancelRun is POST /api/runs/{id}/cancel (JSON) and POST
// /runs/{id}/cancel (a form: 303 back to the run's page).
func (s *server) cancelRun(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if s.runner == nil {
		return errorf(CodeNotFound, "There is no live run "+id+" to cancel.")
	}
	err := s.runner.Cancel(id, learnerID(r))
	switch {
	case errors.Is(err, runner.ErrNoRun):
		return errorf(CodeNotFound, "There is no live run "+id+": it may have finished long ago.")
	case errors.Is(err, runner.ErrNotYours):
		return errorf(CodeForbidden, "Only the learner who started a run can cancel it.")
	case errors.Is(err, runner.ErrFinished):
		return errorf(CodeConflict, "The run has already finished; there is nothing to cancel.")
	case err != nil:
		return err
	}
	if !strings.HasPrefix(r.URL.Path, "/api/") && !wantsJSON(r) {
		// The lab block's Cancel sends its form's block: back to it.
		to := runURL(id)
		if block := r.PostFormValue("block"); block != "" {
			if c, err := s.course(); err == nil {
				if _, l, ok := c.Lab(block); ok {
					to = lessonURL(l.Slug) + "#" + block
				}
			}
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": id, "status": "cancelling"})
	return nil
}

// labReference is the answer of GET /api/labs/{block}/reference.
type labReference struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	Summary   string    `json:"summary"`
	URL       string    `json:"url"`
	Replay    string    `json:"replay"`  // websocket URL that replays it at its real pace
	Seconds   float64   `json:"seconds"` // how long the replay takes
}

// labReferenceRun is GET /api/labs/{block}/reference: the latest run of a
// lesson's lab block that measured every window, for the block to show at
// once (and to replay when the queue is long), or 404.
func (s *server) labReferenceRun(w http.ResponseWriter, r *http.Request) error {
	block := chi.URLParam(r, "block")
	ref, err := s.store.LatestRun(r.Context(), block)
	if errors.Is(err, store.ErrNoRun) {
		return errorf(CodeNotFound, "No run of the lab block "+block+" has been recorded yet.")
	}
	if err != nil {
		return err
	}
	var q runner.Request
	json.Unmarshal(ref.Request, &q)
	secs := 0.0
	for _, row := range ref.Rows {
		secs += row.Seconds
	}
	writeJSON(w, http.StatusOK, labReference{ID: ref.ID, CreatedAt: ref.CreatedAt, Summary: requestSummary(q), URL: runURL(ref.ID),
		Replay: "/ws/runs/" + ref.ID + "?pace=real", Seconds: secs})
	return nil
}
