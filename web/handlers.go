package web

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"capacitylab/input"
	"capacitylab/lessons"
	"capacitylab/store"
)

// loadCourse returns the course or the author-facing validation error.
func (s *server) loadCourse() (*lessons.Course, error) {
	c, err := s.course()
	if err != nil {
		return nil, errorf(CodeContent, err.Error())
	}
	return c, nil
}

// sameOrigin refuses cross-origin writes (a form on another site posting
// here) using the browser's Sec-Fetch-Site and Origin headers.
func (s *server) sameOrigin(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	// A platform's page posts the LTI login and launch from its own site;
	// the launch's signed id_token and state protect them instead.
	cop.AddInsecureBypassPattern("POST " + ltiLoginPath)
	cop.AddInsecureBypassPattern("POST " + ltiLaunchPath)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := cop.Check(r); err != nil {
			s.fail(w, r, errorf(CodeForbidden, "Requests from other sites may not change anything here: open the page on this site and submit it from there."))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.store.Ping(r.Context()); err != nil {
		s.log.ErrorContext(r.Context(), "health check failed", "err", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "store unavailable")
		return
	}
	if since, err := s.store.WriteHealth(r.Context()); err != nil {
		s.log.WarnContext(r.Context(), "health check: the store cannot write", "since", since, "err", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "degraded: store writes failing since %s: the disk is full; pages are served, changes are refused\n", since.UTC().Format(time.RFC3339))
		return
	}
	fmt.Fprintln(w, "ok")
}

// favicon sends browsers that ask for /favicon.ico to the site icon. The
// redirect is temporary: the icon's hashed URL changes with the icon.
func (s *server) favicon(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, s.assets.URL("img/icon.svg"), http.StatusFound)
}

func (s *server) static(w http.ResponseWriter, r *http.Request) error {
	if !s.assets.serve(w, r, chi.URLParam(r, "*")) {
		return errorf(CodeNotFound, "There is no file at "+r.URL.Path+".")
	}
	return nil
}

// state returns the request learner's progress in one lesson ("" = all).
func (s *server) state(r *http.Request, lesson string) (store.LessonState, error) {
	id := learnerID(r)
	if id == "" {
		return (&store.Export{}).State(), nil
	}
	if lesson == "" {
		e, err := s.store.Export(r.Context(), id)
		if err != nil {
			return store.LessonState{}, err
		}
		return e.State(), nil
	}
	return s.store.LessonState(r.Context(), id, lesson)
}

func (s *server) index(w http.ResponseWriter, r *http.Request) error {
	c, err := s.loadCourse()
	if err != nil {
		return err
	}
	st, err := s.state(r, "")
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, indexPage(s.page(r, "Lessons"), groupCourse(c, st, false)))
	return nil
}

func (s *server) lessonsIndex(w http.ResponseWriter, r *http.Request) error {
	http.Redirect(w, r, "/", http.StatusMovedPermanently)
	return nil
}

func (s *server) lesson(w http.ResponseWriter, r *http.Request) error {
	c, err := s.loadCourse()
	if err != nil {
		return err
	}
	slug := chi.URLParam(r, "slug")
	i := findLesson(c, slug)
	if i < 0 {
		return errorf(CodeNotFound, fmt.Sprintf("There is no lesson called %q.", slug))
	}
	l := c.Lessons[i]
	// A newcomer's page depends only on the course: serve it from the
	// cache. Anything that varies per request must keep this false.
	newcomer := learnerID(r) == "" && r.URL.RawQuery == "" && recordDraftOf(r.Context()) == nil
	if r, err = s.withLesson(r, l); err != nil {
		return err
	}
	refs := refsKey(l, lessonCtxOf(r.Context()))
	if newcomer {
		if page, ok := s.newcomerPageOf(c, l.Slug, refs); ok {
			page.write(w, r)
			return nil
		}
	}
	plan, err := s.lessonPlan(c, i, s.menuFor(r))
	if err != nil {
		return err
	}
	if r, err = s.lessonWidgets(w, r, l); err != nil {
		return err
	}
	if r, err = s.withRecords(r, l, recordDraftOf(r.Context())); err != nil {
		return err
	}
	st, err := s.state(r, l.Slug)
	if err != nil {
		return err
	}
	buf := s.buffer()
	defer s.release(buf)
	if err := plan.write(r.Context(), buf, l, st); err != nil {
		s.renderFailed(w, r, err)
		return nil
	}
	if status := lessonStatus(r.Context()); newcomer && status == http.StatusOK {
		s.keepNewcomerPage(c, l.Slug, refs, buf.Bytes()).write(w, r)
	} else {
		s.writeHTML(w, r, status, buf.Bytes())
	}
	return nil
}

// lessonPlan returns the plan of c.Lessons[i]'s page (lessonplan.go) with
// the header's links m, building it on the first view of the lesson with
// them in this course value.
func (s *server) lessonPlan(c *lessons.Course, i int, m siteMenu) (*lessonPlan, error) {
	l := c.Lessons[i]
	key := fmt.Sprintf("%s/%t/%t", l.Slug, m.Teach, m.Join)
	if kept, ok := s.plans.get(key); ok && kept.course == c {
		return kept.plan, nil
	}
	prev, next := neighbours(c, i)
	var builds []lessonLink
	for _, b := range l.BuildsOn {
		if j := findLesson(c, b); j >= 0 {
			builds = append(builds, lessonLink{b, c.Lessons[j].Title})
		}
	}
	info := s.lessonPageInfo(l)
	info.Menu = m
	page := lessonPage(info, l, prev, next, builds, (&store.Export{}).State())
	// The background context: a plan must not depend on the request that
	// happened to build it.
	p, err := buildPlan(context.Background(), page, l, s.models)
	if err != nil {
		return nil, err
	}
	s.plans.put(key, keptPlan{course: c, plan: p})
	return p, nil
}

// question finds the lesson and question block a lesson action names.
func (s *server) question(r *http.Request, typ string) (*lessons.Lesson, *lessons.Question, error) {
	c, err := s.loadCourse()
	if err != nil {
		return nil, nil, err
	}
	slug, id := chi.URLParam(r, "slug"), chi.URLParam(r, "id")
	i := findLesson(c, slug)
	if i < 0 {
		return nil, nil, errorf(CodeNotFound, fmt.Sprintf("There is no lesson called %q.", slug))
	}
	q := findQuestion(c.Lessons[i], id, typ)
	if q == nil {
		return nil, nil, errorf(CodeNotFound, fmt.Sprintf("Lesson %q has no %s block called %q.", slug, typ, id))
	}
	return c.Lessons[i], q, nil
}

// parseForm parses a urlencoded or multipart form (fetch sends FormData
// as multipart) within the body limit, and checks its fields as JSON
// bodies are checked (input.FormErrors): each given once, but those named
// in repeatable, and each value text without control characters other
// than tab and line breaks.
func parseForm(r *http.Request, repeatable ...string) error {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var err error
	if ct == "multipart/form-data" {
		err = r.ParseMultipartForm(MaxBodyBytes)
	} else {
		err = r.ParseForm()
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return err
	case err != nil:
		return errorf(CodeInvalid, "The form could not be read: send it as application/x-www-form-urlencoded or multipart/form-data.")
	}
	if fe := input.FormErrors(r.PostForm, repeatable...); len(fe) > 0 {
		return &Error{Code: CodeInvalid, Fields: fe,
			Message: "The form could not be taken as sent: " + fe.Error() + "."}
	}
	return nil
}

// chosenOption reads and checks the "option" field of a question form.
func chosenOption(r *http.Request, q *lessons.Question, missing string) (*lessons.Option, error) {
	id := r.PostFormValue("option")
	if id == "" {
		return nil, errorf(CodeInvalid, missing)
	}
	o := findOption(q, id)
	if o == nil {
		return nil, errorf(CodeInvalid, fmt.Sprintf("%q is not an option of this question: choose one of %s.", id, optionIDs(q)))
	}
	return o, nil
}

// predict handles Lock in, Skip and Reveal on a predict block.
func (s *server) predict(w http.ResponseWriter, r *http.Request) error {
	l, q, err := s.question(r, "predict")
	if err != nil {
		return err
	}
	if err := parseForm(r); err != nil {
		return err
	}
	ctx := r.Context()
	var learner string
	switch action := r.PostFormValue("action"); action {
	case "lock":
		o, err := chosenOption(r, q, "Choose one of the options before locking in, or press Skip.")
		if err != nil {
			return err
		}
		learner = ensureLearner(w, r)
		p, err := s.store.Lock(ctx, learner, l.Slug, q.ID, o.ID)
		if errors.Is(err, store.ErrLocked) {
			return lockedError(q, p)
		}
		if err != nil {
			return err
		}
	case "skip":
		learner = ensureLearner(w, r)
		p, err := s.store.Skip(ctx, learner, l.Slug, q.ID)
		if errors.Is(err, store.ErrLocked) {
			return lockedError(q, p)
		}
		if err != nil {
			return err
		}
	case "open":
		learner = learnerID(r)
		if err := s.openResults(ctx, learner, q); err != nil {
			return err
		}
		_, tables := l.Settling(q)
		if len(tables) > 0 && !wantsJSON(r) {
			http.Redirect(w, r, lessonURL(l.Slug)+"#"+tables[0].ID, http.StatusSeeOther)
			return nil
		}
	case "reveal":
		learner = learnerID(r)
		if learner == "" {
			return errorf(CodeConflict, "Lock in a prediction (or skip it) before revealing the answer.")
		}
		st, err := s.store.LessonState(ctx, learner, l.Slug)
		if err != nil {
			return err
		}
		p, ok := st.Predictions[q.ID]
		if !ok {
			return errorf(CodeConflict, "Lock in a prediction (or skip it) before revealing the answer.")
		}
		lc, err := s.lessonCtx(ctx, learner, l)
		if err != nil {
			return err
		}
		if !p.Revealed() && !measured(lc, l, q, &p) {
			return revealRefused(l, q)
		}
		if _, err := s.store.Reveal(ctx, learner, q.ID); errors.Is(err, store.ErrNotLocked) {
			return errorf(CodeConflict, "Lock in a prediction (or skip it) before revealing the answer.")
		} else if err != nil {
			return err
		}
	default:
		return errorf(CodeInvalid, fmt.Sprintf("action %q is not allowed: want lock, skip, open or reveal.", action))
	}
	if r.PostFormValue("action") != "reveal" { // a reveal changes no score
		s.progressChanged(r, learner, l.Slug)
	}
	return s.blockDone(w, r, l, q, learner)
}

func lockedError(q *lessons.Question, p store.Prediction) error {
	what := "skipped"
	if !p.Skipped {
		what = fmt.Sprintf("locked in as %q", optionText(q, p.Option))
	}
	return errorf(CodeConflict, fmt.Sprintf("Your prediction was %s at %s and cannot be changed.", what, fmtTime(p.LockedAt)))
}

// check handles an answer to a check block.
func (s *server) check(w http.ResponseWriter, r *http.Request) error {
	l, q, err := s.question(r, "check")
	if err != nil {
		return err
	}
	if err := parseForm(r); err != nil {
		return err
	}
	o, err := chosenOption(r, q, "Choose one of the options, then press Check answer.")
	if err != nil {
		return err
	}
	learner := ensureLearner(w, r)
	if _, err := s.store.RecordAttempt(r.Context(), learner, l.Slug, q.ID, o.ID, o.Correct); err != nil {
		return err
	}
	s.progressChanged(r, learner, l.Slug)
	return s.blockDone(w, r, l, q, learner)
}

// blockResponse is the JSON answer to a lesson action: the block's new
// state and its re-rendered HTML, which lesson.js swaps into the page,
// and the other blocks the action changed (a Predict's measurement,
// unfolded by a lock or opened).
type blockResponse struct {
	Block      string            `json:"block"`
	Kind       string            `json:"kind"`
	Prediction *store.Prediction `json:"prediction,omitempty"`
	Check      *checkJSON        `json:"check,omitempty"`
	HTML       string            `json:"html"`
	Related    []relatedBlock    `json:"related,omitempty"`
}

// relatedBlock is another block of the page, re-rendered.
type relatedBlock struct {
	Block string `json:"block"`
	HTML  string `json:"html"`
}

type checkJSON struct {
	Correct  bool          `json:"correct"`  // the latest attempt
	Attempts int           `json:"attempts"` // how many so far
	First    store.Attempt `json:"first"`    // the one that counts
}

// blockDone ends a lesson action: a redirect to the block for a form post,
// or the block's state and HTML for a JSON request.
func (s *server) blockDone(w http.ResponseWriter, r *http.Request, l *lessons.Lesson, q *lessons.Question, learner string) error {
	if !wantsJSON(r) {
		http.Redirect(w, r, lessonURL(l.Slug)+"#"+q.ID, http.StatusSeeOther)
		return nil
	}
	st, err := s.store.LessonState(r.Context(), learner, l.Slug)
	if err != nil {
		return err
	}
	lc, err := s.lessonCtx(r.Context(), learner, l)
	if err != nil {
		return err
	}
	ctx := context.WithValue(r.Context(), lessonCtxKey{}, lc)
	html, err := renderString(ctx, blockView(l, q, st))
	if err != nil {
		return err
	}
	resp := blockResponse{Block: q.ID, Kind: q.Type, HTML: html, Prediction: predictionOf(st, q.ID)}
	if c := checkOf(st, q.ID); c != nil {
		resp.Check = &checkJSON{Correct: c.Last.Correct, Attempts: c.Count, First: c.First}
	}
	if q.Type == "predict" {
		// Every block the predict folds (Lesson.SettledBy): its
		// measurement, and a simulated preset's live twin with its table.
		for _, b := range l.Blocks() {
			if l.SettledBy(b.BlockID()) != q {
				continue
			}
			html, err := renderString(ctx, blockView(l, b, st))
			if err != nil {
				return err
			}
			resp.Related = append(resp.Related, relatedBlock{Block: b.BlockID(), HTML: html})
		}
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (s *server) progressPage(w http.ResponseWriter, r *http.Request) error {
	c, err := s.loadCourse()
	if err != nil {
		return err
	}
	e := &store.Export{}
	id := learnerID(r)
	if id != "" {
		if e, err = s.store.Export(r.Context(), id); err != nil {
			return err
		}
	}
	grades, err := s.learnerGrades(r)
	if err != nil {
		return err
	}
	v, err := s.progressDetails(r.Context(), c, e, id)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, progressPage(s.page(r, "Your progress"), groupCourse(c, e.State(), true), e, v, r.URL.Query().Get("reset") == "done", grades))
	return nil
}

// reset deletes the learner's progress after an explicit confirmation:
// the form field confirm=yes, or the JSON body {"confirm": true}.
func (s *server) reset(w http.ResponseWriter, r *http.Request) error {
	confirmed := false
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/json" {
		var body struct {
			Confirm bool `json:"confirm"`
		}
		if err := input.DecodeJSON(r.Body, &body); err != nil {
			var je *input.JSONError
			if !errors.As(err, &je) {
				return err // the body could not be read: over its limit
			}
			return errorf(CodeInvalid, `The body is not the JSON this takes (`+je.Error()+`): send {"confirm": true}.`)
		}
		confirmed = body.Confirm
	} else {
		if err := parseForm(r); err != nil {
			return err
		}
		confirmed = r.PostFormValue("confirm") == "yes"
	}
	if !confirmed {
		return errorf(CodeInvalid, `Resetting deletes all your progress, so it needs confirming: tick the box (form field confirm=yes, or JSON {"confirm": true}).`)
	}
	if id := learnerID(r); id != "" {
		if err := s.store.Reset(r.Context(), id); err != nil {
			return err
		}
		s.progressChanged(r, id, "")
	}
	// Forget the id too: the next answer starts a fresh anonymous learner.
	http.SetCookie(w, learnerCookie(r, "", -1))
	if wantsJSON(r) {
		writeJSON(w, http.StatusOK, map[string]bool{"reset": true})
		return nil
	}
	http.Redirect(w, r, "/progress?reset=done", http.StatusSeeOther)
	return nil
}

// lessonJSON is one lesson in GET /api/lessons.
type lessonJSON struct {
	Slug     string         `json:"slug"`
	Title    string         `json:"title"`
	Part     string         `json:"part"`
	Chapter  string         `json:"chapter"`
	Number   int            `json:"number"`
	Minutes  int            `json:"minutes"`
	URL      string         `json:"url"`
	BuildsOn []string       `json:"builds_on"`
	Blocks   map[string]int `json:"blocks"`
}

func (s *server) apiLessons(w http.ResponseWriter, r *http.Request) error {
	c, err := s.loadCourse()
	if err != nil {
		return err
	}
	out := struct {
		Lessons []lessonJSON `json:"lessons"`
	}{Lessons: make([]lessonJSON, 0, len(c.Lessons))}
	for _, l := range courseLessons(c) {
		builds := l.BuildsOn
		if builds == nil {
			builds = []string{}
		}
		out.Lessons = append(out.Lessons, lessonJSON{
			Slug: l.Slug, Title: l.Title, Part: l.Part, Chapter: l.Chapter, Number: l.Number,
			Minutes: l.Minutes, URL: lessonURL(l.Slug), BuildsOn: builds, Blocks: l.Counts(),
		})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// progressExport is GET /api/progress's body: everything stored about
// the learner, and their uploads to "Your service" (service.go) without
// their records, which stay downloadable at each upload's records_url.
type progressExport struct {
	*store.Export
	Uploads []uploadExport `json:"uploads"`
}

func (s *server) apiProgress(w http.ResponseWriter, r *http.Request) error {
	e := &store.Export{Predictions: []store.Prediction{}, Attempts: []store.Attempt{}, Goals: []store.Goal{}, Records: []store.Record{}}
	id := learnerID(r)
	if id != "" {
		var err error
		if e, err = s.store.Export(r.Context(), id); err != nil {
			return err
		}
	}
	ups, err := s.uploadsExport(r.Context(), id)
	if err != nil {
		return err
	}
	if r.URL.Query().Get("download") != "" {
		w.Header().Set("Content-Disposition", `attachment; filename="capacity-lab-progress.json"`)
	}
	writeJSON(w, http.StatusOK, progressExport{Export: e, Uploads: ups})
	return nil
}

func (s *server) notFound(w http.ResponseWriter, r *http.Request) error {
	return errorf(CodeNotFound, "There is no page at "+r.URL.Path+".")
}

func (s *server) methodNotAllowed(w http.ResponseWriter, r *http.Request) error {
	return errorf(CodeMethod, r.Method+" is not allowed on "+r.URL.Path+".")
}

// closeLessons lists lessons whose slug is near the last part of the
// request path, for the 404 page.
func (s *server) closeLessons(r *http.Request) []lessonLink {
	c, err := s.course()
	if err != nil {
		return nil
	}
	p := strings.Trim(r.URL.Path, "/")
	if i := strings.LastIndex(p, "/"); i >= 0 {
		p = p[i+1:]
	}
	if slug := chi.URLParam(r, "slug"); slug != "" {
		p = slug
	}
	return closeSlugs(c, p)
}
