package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"
	"golang.org/x/net/html"

	"capacitylab/classroom"
	"capacitylab/input"
	"capacitylab/lessons"
	"capacitylab/runner"
	"capacitylab/wsconn"
)

// participantCookiePrefix + join code names the cookie holding a
// participant's token for one class session.
const participantCookiePrefix = "cl_class_"

// participantCookieAge is how long a participant cookie lives: a class
// day.
const participantCookieAge = 24 * time.Hour

// ClassLessons adapts the course to what class sessions need to know
// about a lesson: its Predict and Check questions and its lab blocks.
func ClassLessons(course CourseFunc) classroom.LessonFunc {
	return func(slug string) (classroom.Lesson, error) {
		c, err := course()
		if err != nil {
			return classroom.Lesson{}, err
		}
		l, ok := c.Lesson(slug)
		if !ok {
			return classroom.Lesson{}, fmt.Errorf("there is no lesson called %q", slug)
		}
		return classLesson(l), nil
	}
}

func classLesson(l *lessons.Lesson) classroom.Lesson {
	out := classroom.Lesson{Slug: l.Slug, Title: l.Title}
	for _, p := range l.Body {
		switch b := p.Block.(type) {
		case *lessons.Question:
			q := classroom.Question{ID: b.ID, Type: b.Type, Text: plainText(string(b.Prompt)), Explain: map[string]string{}, OptionText: map[string]string{},
				Order: func(code string) []string {
					var ids []string
					for _, o := range classOptions(code, b) {
						ids = append(ids, o.ID)
					}
					return ids
				}}
			for _, o := range b.Options {
				q.Options = append(q.Options, o.ID)
				q.Explain[o.ID] = strings.TrimSpace(string(o.Explain))
				q.OptionText[o.ID] = o.Text
				if o.Correct {
					q.Correct = o.ID
				}
			}
			out.Questions = append(out.Questions, q)
		case *lessons.Lab:
			out.Labs = append(out.Labs, b.ID)
		}
	}
	return out
}

// plainText is the text of an HTML fragment (a lesson's rendered
// prompt), with its white space collapsed: how messages name a question.
func plainText(fragment string) string {
	z := html.NewTokenizer(strings.NewReader(fragment))
	var b strings.Builder
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.Join(strings.Fields(b.String()), " ")
		case html.TextToken:
			b.Write(z.Text())
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			b.WriteByte(' ')
		}
	}
}

// classOptions returns a question's options in the order a class session
// shows them: one order for the whole session (code), on every screen,
// since the class talks about "the second option". Every class page
// renders options through this, and session.js draws the bars in the
// page's order. It is lessons.Question.Order keyed by the join code: a
// shuffle, as a learner's lesson page has, but one for the whole class.
// Answers and CSVs name options by id, never by place.
func classOptions(code string, q *lessons.Question) []lessons.Option {
	return q.Order(code)
}

// ClassRuns starts a class's run of a lesson's lab preset on the runner,
// the same queue and event stream every learner's run uses. The class is
// the run's learner (classLearner), so a class has one run at a time, and
// the run counts against the address of the host who started it, so that
// one client cannot hold the queue through class sessions (each address
// has the queue's per-address share, class runs and its learners' runs
// together). Its errors are sentences for the instructor.
func ClassRuns(course CourseFunc, rn Queue) classroom.RunFunc {
	return func(ctx context.Context, code, lesson, lab, addr string, k *classroom.Knobs) (string, error) {
		if rn == nil {
			return "", classroom.Refuse(classroom.ErrCodeConflict, "This server runs no live sweeps; run the lab on your own machine with the commands shown.")
		}
		c, err := course()
		if err != nil {
			return "", classroom.Refuse(classroom.ErrCodeConflict, "The lesson files do not validate right now, so the lab cannot be read.")
		}
		l, les, ok := c.Lab(lab)
		if !ok || les.Slug != lesson {
			return "", classroom.Refuse(classroom.ErrCodeInvalid, fmt.Sprintf("This lesson has no lab %q.", lab))
		}
		q := withKnobs(labPreset(l), k)
		q.Lesson = lesson
		tk, err := rn.SubmitFrom(ctx, classLearner(code), addr, q)
		var full *runner.QueueFullError
		var share *runner.ShareError
		var mine *runner.AlreadyQueuedError
		var fe runner.FieldErrors
		switch {
		case errors.As(err, &full):
			return "", classroom.Refuse(classroom.ErrCodeConflict, fmt.Sprintf("The queue of runs is full; try again in about %d s.", int(math.Ceil(full.RetryAfter.Seconds()))))
		case errors.As(err, &share):
			return "", classroom.Refuse(classroom.ErrCodeConflict, fmt.Sprintf(
				"Your address already has %d runs waiting or running, as many as one address may (class runs count against the address of the host who starts them). "+
					"Cancel one, or end a session you no longer need, or try again in about %d s.", share.Share, int(math.Ceil(share.RetryAfter.Seconds()))))
		case errors.As(err, &mine):
			return "", classroom.Refuse(classroom.ErrCodeConflict, "The class's last run is still waiting or running; it must finish before another starts.")
		case errors.As(err, &fe):
			return "", classroom.Refuse(classroom.ErrCodeInvalid, fmt.Sprintf("This server does not allow these settings: %s.", fe.Error()))
		case errors.Is(err, runner.ErrClosed):
			return "", classroom.Refuse(classroom.ErrCodeConflict, "The server is restarting; try again in a minute.")
		case err != nil:
			return "", fmt.Errorf("queueing the class run: %w", err) // logged by the session, which tells the host so
		}
		return tk.ID, nil
	}
}

// CancelClassRuns cancels a class's run on the runner: the host's cancel,
// and the end of a session whose run still waits or runs. A run already
// over (or no longer known) is classroom.ErrRunOver.
func CancelClassRuns(rn Queue) classroom.CancelFunc {
	return func(ctx context.Context, code, id string) error {
		if rn == nil {
			return classroom.ErrRunOver // no runner, so no run is waiting or running
		}
		err := rn.Cancel(id, classLearner(code))
		if errors.Is(err, runner.ErrFinished) || errors.Is(err, runner.ErrNoRun) {
			return classroom.ErrRunOver
		}
		return err
	}
}

// classLearner is the learner a class session's runs are queued for.
func classLearner(code string) string { return "class-" + code }

// withKnobs applies a host's changes to a lab preset.
func withKnobs(q runner.Request, k *classroom.Knobs) runner.Request {
	if k == nil {
		return q
	}
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	set(&q.Workers, k.Workers)
	set(&q.SpinMS, k.SpinMS)
	set(&q.WaitMS, k.WaitMS)
	set(&q.Limit, k.Limit)
	set(&q.CPUs, k.CPUs)
	set(&q.StallEvery, k.StallEvery)
	set(&q.StallMS, k.StallMS)
	if k.Seconds != nil {
		q.Seconds = *k.Seconds
	}
	if len(k.Rates) > 0 && q.Mode != runner.ModeClosed {
		q.Rates = k.Rates
	}
	return q
}

// classView is what the session pages show.
type classView struct {
	Role         string // "participant", "host" or "projector"
	Code         string
	Token        string // host: the host token; projector: the projector token; for the websocket
	Lesson       *lessons.Lesson
	Name         string // participant: display name
	PID          int    // participant: id
	Ended        bool
	JoinURL      string // absolute, with the join key: for the QR code and to share
	JoinHost     string // host/join without the scheme: what the presenter view tells the room to type
	HostURL      string
	ProjectorURL string
	QRURL        string // host and projector: the QR code, with the projector token (see memberSession)
	Runs         bool   // host: the server runs labs for the class (a Next step may start one)
	// Answered holds the questions whose answer the host has shown: a
	// participant's page leaves out what follows a Predict's gate until
	// then (hides).
	Answered map[string]bool
}

// hides reports whether a participant's page leaves part i of the lesson
// out: it follows the gate of a Predict whose answer the host has not
// shown (lessons.Lesson.GatedBy). Questions and labs are always there,
// for session.js to draw; the rest comes from /sessions/{code}/parts
// once the answer is shown.
func (v classView) hides(i int) bool {
	if v.Role != "participant" {
		return false
	}
	switch v.Lesson.Body[i].Block.(type) {
	case *lessons.Question, *lessons.Lab:
		return false
	}
	for _, q := range v.Lesson.GatedBy(i) {
		if !v.Answered[q.ID] {
			return true
		}
	}
	return false
}

// gateNote returns the Predict whose gate part i is and whose answer the
// host has not shown, for the participant's note there (nil: none), and
// whether an earlier gate is still closed: then that one's note is the
// one shown, and this one waits hidden (classgates.js shows it later).
func (v classView) gateNote(i int) (q *lessons.Question, later bool) {
	if v.Role != "participant" {
		return nil, false
	}
	for _, g := range v.Lesson.GatesAfter(i) {
		if !v.Answered[g.ID] {
			q = g
			break
		}
	}
	if q == nil {
		return nil, false
	}
	for _, g := range v.Lesson.GatedBy(i) {
		if !v.Answered[g.ID] {
			return q, true
		}
	}
	return q, false
}

// gatedIDs lists, space-separated, the Predicts whose answers a
// participant's page waits for before showing part i.
func gatedIDs(l *lessons.Lesson, i int) string {
	var ids []string
	for _, q := range l.GatedBy(i) {
		ids = append(ids, q.ID)
	}
	return strings.Join(ids, " ")
}

// classPart is one part of a lesson on a participant's page, sent once
// the answers it waits for are shown.
type classPart struct {
	Part int    `json:"part"`
	HTML string `json:"html"`
}

// sessionParts is GET /sessions/{code}/parts, for a participant: every
// part of the lesson their page left out (hides) that the host's shown
// answers now open, rendered as the page renders it.
func (s *server) sessionParts(w http.ResponseWriter, r *http.Request) error {
	sess, ok, err := s.lookupSession(w, r, chi.URLParam(r, "code"))
	if !ok {
		return err
	}
	if _, _, ok := sess.Participant(participantToken(r, sess.Code())); !ok {
		return errorf(CodeForbidden, "Only a participant of this class reads its lesson's parts: join with the class code first.")
	}
	v, err := s.view(r, sess, "participant", "")
	if err != nil {
		return err
	}
	out := []classPart{}
	for i, part := range v.Lesson.Body {
		if len(v.Lesson.GatedBy(i)) == 0 || v.hides(i) {
			continue
		}
		var c templ.Component = templ.Raw(string(part.HTML))
		if part.Block != nil {
			switch part.Block.(type) {
			case *lessons.Question, *lessons.Lab:
				continue // always on the page
			}
			c = classBlock(v, i, part.Block)
		}
		html, err := renderString(r.Context(), c)
		if err != nil {
			return err
		}
		out = append(out, classPart{Part: i, HTML: html})
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string][]classPart{"parts": out})
	return nil
}

// sessionCreated is the JSON answer to POST /api/sessions.
type sessionCreated struct {
	Code         string `json:"code"`
	Lesson       string `json:"lesson"`
	JoinURL      string `json:"join_url"`
	HostURL      string `json:"host_url"`
	ProjectorURL string `json:"projector_url"`
	QRURL        string `json:"qr_url"`
	ResultsURL   string `json:"results_url"`
	AnswersURL   string `json:"answers_url"`
	Stream       string `json:"stream"`
}

func sessionURL(code string) string { return "/sessions/" + code }

func hostURL(code, token string) string {
	return sessionURL(code) + "/host?token=" + url.QueryEscape(token)
}

// qrURL is the QR code's address for the host and projector views: with
// the projector token, so that it loads even while their address is held
// by the join-code limit.
func qrURL(sess *classroom.Session) string {
	return sessionURL(sess.Code()) + "/qr.svg?token=" + url.QueryEscape(sess.ProjectorToken())
}

// joinLink is the session's join link, with its join key, so whoever
// follows it (or scans its QR code) is not held by the join-code limit of
// an address a class shares (see memberSession).
func joinLink(sess *classroom.Session) string {
	return "/join/" + sess.Code() + "?key=" + url.QueryEscape(sess.JoinKey())
}

// projectorURL is the projector view's address. It is shown to the class,
// so it carries the projector token, never the host token.
func projectorURL(sess *classroom.Session) string {
	return sessionURL(sess.Code()) + "/projector?token=" + url.QueryEscape(sess.ProjectorToken())
}

// absURL makes a path absolute on the host the request came to.
func absURL(r *http.Request, path string) string {
	return requestScheme(r) + "://" + r.Host + path
}

// classesOn returns the session manager or the answer for a server
// without one.
func (s *server) classesOn() error {
	if s.classes == nil {
		return errorf(CodeNotFound, "This server does not run class sessions.")
	}
	return nil
}

// createSession is POST /api/sessions (JSON {"lesson","key"} or a form)
// and POST /sessions (a Teach button on /teach): it starts a session and
// answers 201 with its links, or 303 to the host view for a form. A form
// without a key uses the browser's teach pass (see teachPass); a form
// with the right key sets one. A wrong key on the form comes back on
// /teach, beside the key field.
func (s *server) createSession(w http.ResponseWriter, r *http.Request) error {
	if err := s.classesOn(); err != nil {
		return err
	}
	var in struct {
		Lesson string `json:"lesson"`
		Key    string `json:"key"`
	}
	form := !strings.HasPrefix(r.URL.Path, "/api/")
	ct := r.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/json") {
		if err := input.DecodeJSON(r.Body, &in); err != nil {
			var je *input.JSONError
			if !errors.As(err, &je) {
				return err // the body could not be read: over its limit
			}
			what := "The body is not the JSON this takes (" + je.Error() + ")"
			if je.Problem == input.UnknownField {
				what = fmt.Sprintf("The body has a field %q that this does not take", je.Field)
				if je.Want != "" {
					what += fmt.Sprintf(" (field names are exact: %q)", je.Want)
				}
			}
			return errorf(CodeInvalid, what+`: send {"lesson": "a lesson slug", "key": "the instructor key, if the server has one"}.`)
		}
	} else {
		if err := parseForm(r); err != nil {
			return err
		}
		in.Lesson, in.Key = r.PostFormValue("lesson"), r.PostFormValue("key")
	}
	if in.Lesson == "" {
		return errorf(CodeInvalid, "Say which lesson to teach: the field \"lesson\" takes a lesson's slug, as in /lessons/{slug}.")
	}
	c, err := s.loadCourse()
	if err != nil {
		return err
	}
	if _, ok := c.Lesson(in.Lesson); !ok {
		return errorf(CodeNotFound, fmt.Sprintf("There is no lesson called %q to teach.", in.Lesson))
	}
	held := form && in.Key == "" && s.holdsTeachPass(r, time.Now())
	if s.instructorKey != "" && !held && !s.ltiInstructor(r) {
		if err := s.checkInstructorKey(r, in.Key); err != nil {
			if form {
				v := s.teachView(r, c, teachOnly(c, in.Lesson))
				v.NeedKey, v.Held, v.KeyError = true, false, err.Message
				if err.RetryAfter > 0 {
					w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(err.RetryAfter)))
				}
				s.render(w, r, statusOf(err.Code), classTeachPage(s.classPage(r, "Teach a class"), v))
				return nil
			}
			return err
		}
	}
	// Anyone may start sessions on a server without an instructor key:
	// then each address may start DefaultSessionsPerHour (or as set).
	open := s.instructorKey == ""
	if open {
		if wait := s.sessions.Wait(clientAddr(r), time.Now()); wait > 0 {
			return &Error{Code: CodeBusy, Title: "Too many class sessions", RetryAfter: wait,
				Message: "Too many class sessions were started from your address in the last hour (a whole building can share one). Try again in " + retryText(wait) + ", or run the class you started already."}
		}
	}
	sess, token, err := s.classes.Create(r.Context(), in.Lesson)
	if err != nil {
		return err
	}
	if open {
		s.sessions.Take(clientAddr(r), time.Now())
	}
	code := sess.Code()
	s.log.InfoContext(r.Context(), "class session started", "session", code, "lesson", in.Lesson)
	if form {
		if s.instructorKey != "" && !held {
			setTeachPass(w, r, s.instructorKey, time.Now())
		}
		http.Redirect(w, r, hostURL(code, token), http.StatusSeeOther)
		return nil
	}
	tq := "?token=" + url.QueryEscape(token)
	writeJSON(w, http.StatusCreated, sessionCreated{
		Code: code, Lesson: in.Lesson,
		JoinURL:      absURL(r, joinLink(sess)),
		HostURL:      absURL(r, hostURL(code, token)),
		ProjectorURL: absURL(r, projectorURL(sess)),
		QRURL:        absURL(r, qrURL(sess)),
		ResultsURL:   absURL(r, sessionURL(code)+"/results.csv"+tq),
		AnswersURL:   absURL(r, sessionURL(code)+"/answers.csv"+tq),
		Stream:       "/ws/sessions/" + code + tq,
	})
	return nil
}

// checkInstructorKey checks a typed instructor key against the server's,
// limiting the keys tried per client address as join-code misses are
// (classroom.MissLimit per classroom.MissWindow): an address over its
// allowance is refused even the right key until it has waited, so the
// key cannot be guessed faster than that. Each key tried is counted
// before it is compared, right or wrong, so guesses sent at once cannot
// all pass the check before any is counted; an instructor needs few (the
// teach pass stands for the key on /teach). A missing key is not a guess
// and is not counted.
func (s *server) checkInstructorKey(r *http.Request, key string) *Error {
	if key == "" {
		return errorf(CodeForbidden, "Starting a class session needs the instructor key this server was configured with.")
	}
	if wait := s.keyTries.Allow(clientAddr(r), time.Now()); wait > 0 {
		return &Error{Code: CodeBusy, Title: "Too many instructor keys tried", RetryAfter: wait,
			Message: fmt.Sprintf("Too many instructor keys were tried from your address. Wait %s, then type the key carefully; a browser that used the key before keeps its teach pass and needs no key.", retryText(wait))}
	}
	if subtle.ConstantTimeCompare([]byte(key), []byte(s.instructorKey)) != 1 {
		return errorf(CodeForbidden, "That instructor key is not this server's; check it and try again.")
	}
	return nil
}

// lookupSession finds the session a request names, with the join-code
// rate limit. The *Error it returns is ready for the error path (a 429
// with RetryAfter after too many wrong codes). A request that proves it
// belongs to the session is not held by the limit (see memberSession).
func (s *server) lookupSession(w http.ResponseWriter, r *http.Request, typed string) (*classroom.Session, bool, error) {
	if err := s.classesOn(); err != nil {
		return nil, false, err
	}
	if sess := s.memberSession(r, typed); sess != nil {
		return sess, true, nil
	}
	sess, err := s.classes.Lookup(r.Context(), clientAddr(r), typed)
	var tm *classroom.TooManyMissesError
	switch {
	case errors.As(err, &tm):
		return nil, false, tooManyMisses(tm.RetryAfter)
	case errors.Is(err, classroom.ErrBadCode):
		return nil, false, errorf(CodeInvalid, fmt.Sprintf("%q is not a join code: %s.", typed, classroom.ErrBadCode.Error()))
	case errors.Is(err, classroom.ErrNoSession):
		return nil, false, errorf(CodeNotFound, fmt.Sprintf("There is no class session with the code %q. Check the code on the screen at the front.", typed))
	case err != nil:
		return nil, false, err
	}
	return sess, true, nil
}

// memberSession returns the session named by typed if the request proves
// it belongs there: the host or projector token in ?token=, the participant
// cookie for that code, or the join key of the session's link (key=, in
// the query or the join form). The join-code limit counts misses per
// address, and a class behind one address (a school's NAT) shares it: a
// few learners mistyping the code must not lock out the instructor's
// pages and downloads, or the sockets of those who have joined when they
// reconnect. Proof needs the code and a token of that session, so it is
// no way round the limit for a guesser; without it this returns nil and
// the caller looks the code up under the limit.
func (s *server) memberSession(r *http.Request, typed string) *classroom.Session {
	code, ok := classroom.NormalizeCode(typed)
	if !ok {
		return nil
	}
	tok, cookie, key := r.URL.Query().Get("token"), participantToken(r, code), r.FormValue("key")
	if tok == "" && cookie == "" && key == "" {
		return nil
	}
	sess, err := s.classes.Get(r.Context(), code)
	if err != nil {
		return nil
	}
	if sess.IsHost(tok) || sess.IsProjector(tok) || sess.IsJoinKey(key) {
		return sess
	}
	if _, _, ok := sess.Participant(cookie); ok {
		return sess
	}
	return nil
}

// tooManyMisses is the 429 for an address that guessed too many join
// codes; the error path adds Retry-After.
func tooManyMisses(wait time.Duration) *Error {
	return &Error{Code: CodeBusy, Title: "Too many wrong codes", RetryAfter: wait,
		Message: fmt.Sprintf("Too many wrong join codes came from your address (a whole building can share one). Scan the QR code on the screen, or use the join link your instructor shares: those always work. Or wait %s, then type the code carefully.", retryText(wait))}
}

// joinPage is GET /join: a form for the code and a display name.
func (s *server) joinPage(w http.ResponseWriter, r *http.Request) error {
	if err := s.classesOn(); err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, classJoinPage(s.classPage(r, "Join a class"), "", "", "", ""))
	return nil
}

// joinCode is GET /join/{code}, the join link: back to the session for a
// participant who joined already, else the name form.
func (s *server) joinCode(w http.ResponseWriter, r *http.Request) error {
	typed := chi.URLParam(r, "code")
	sess, ok, err := s.lookupSession(w, r, typed)
	if !ok {
		return err
	}
	if _, _, ok := sess.Participant(participantToken(r, sess.Code())); ok {
		http.Redirect(w, r, sessionURL(sess.Code()), http.StatusSeeOther)
		return nil
	}
	if sess.Ended() {
		return errorf(CodeConflict, "This class session has ended. Ask your instructor for the new code.")
	}
	s.render(w, r, http.StatusOK, classJoinPage(s.classPage(r, "Join the class"), sess.Code(), validKey(sess, r.FormValue("key")), sess.Info().Title, ""))
	return nil
}

// join is POST /join (code, name): it adds the participant, sets their
// cookie and sends them to the session (303).
func (s *server) join(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(r); err != nil {
		return err
	}
	typed := r.PostFormValue("code")
	if strings.TrimSpace(typed) == "" {
		s.render(w, r, http.StatusBadRequest, classJoinPage(s.classPage(r, "Join a class"), "", "", "", "Type the code shown at the front of the room."))
		return nil
	}
	sess, ok, err := s.lookupSession(w, r, typed)
	if !ok {
		return err
	}
	code := sess.Code()
	if _, _, ok := sess.Participant(participantToken(r, code)); ok {
		http.Redirect(w, r, sessionURL(code), http.StatusSeeOther)
		return nil
	}
	// Joins are limited per address (DefaultJoinsPerMinute, sized for a
	// lecture hall behind one address); only joins that happen count.
	if wait := s.joins.Wait(clientAddr(r), time.Now()); wait > 0 {
		return &Error{Code: CodeBusy, Title: "Too many joins", RetryAfter: wait,
			Message: "Too many joins came from your address in the last minute (a whole building can share one). Try again in " + retryText(wait) + "."}
	}
	_, token, err := sess.Join(r.Context(), r.PostFormValue("name"))
	if err == nil {
		s.joins.Take(clientAddr(r), time.Now())
	}
	var ne *classroom.NameError
	switch {
	case errors.As(err, &ne):
		s.render(w, r, http.StatusBadRequest, classJoinPage(s.classPage(r, "Join the class"), code, validKey(sess, r.FormValue("key")), sess.Info().Title, "Your "+ne.Error()+"."))
		return nil
	case errors.Is(err, classroom.ErrEnded):
		return errorf(CodeConflict, "This class session has ended. Ask your instructor for the new code.")
	case errors.Is(err, classroom.ErrFull):
		return errorf(CodeConflict, fmt.Sprintf("This class session is full (%d participants).", classroom.MaxParticipants))
	case err != nil:
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: participantCookiePrefix + code, Value: token, Path: "/",
		MaxAge: int(participantCookieAge / time.Second), HttpOnly: true, Secure: secureRequest(r), SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, sessionURL(code), http.StatusSeeOther)
	return nil
}

// validKey is key if it is the session's join key, else "": the join form
// carries it on only when it would let the post past the limit.
func validKey(sess *classroom.Session, key string) string {
	if sess.IsJoinKey(key) {
		return key
	}
	return ""
}

func participantToken(r *http.Request, code string) string {
	c, err := r.Cookie(participantCookiePrefix + code)
	if err != nil {
		return ""
	}
	return c.Value
}

// classPage is the page frame for session pages: session.js instead of
// lesson.js, and class.css (the vote bars, the answer, the presenter view).
func (s *server) classPage(r *http.Request, title string) pageInfo {
	p := s.page(r, title)
	p.JS = s.assets.URL("js/session.js")
	p.Styles = append(p.Styles, s.assets.URL("css/class.css"))
	p.Scripts = append(p.Scripts, s.assets.URL("js/runs.js")) // the class run's panel
	return p
}

// view builds what a session page needs.
func (s *server) view(r *http.Request, sess *classroom.Session, role, token string) (classView, error) {
	c, err := s.loadCourse()
	if err != nil {
		return classView{}, err
	}
	l, ok := c.Lesson(sess.Lesson())
	if !ok {
		return classView{}, errorf(CodeNotFound, fmt.Sprintf("The lesson %q of this session is no longer in the course.", sess.Lesson()))
	}
	code := sess.Code()
	v := classView{Role: role, Code: code, Token: token, Lesson: l, Ended: sess.Ended(), JoinURL: absURL(r, joinLink(sess)), JoinHost: r.Host + "/join",
		Runs: s.runner != nil, Answered: map[string]bool{}}
	if role == "participant" { // only a participant's page leaves parts out (hides)
		for _, q := range sess.State().Questions {
			if q.Answered {
				v.Answered[q.ID] = true
			}
		}
	}
	if role == "host" {
		v.HostURL = hostURL(code, token)
		v.ProjectorURL = projectorURL(sess)
	}
	if role != "participant" {
		v.QRURL = qrURL(sess)
	}
	return v, nil
}

// sessionPage is GET /sessions/{code}: the participant's view.
func (s *server) sessionPage(w http.ResponseWriter, r *http.Request) error {
	sess, ok, err := s.lookupSession(w, r, chi.URLParam(r, "code"))
	if !ok {
		return err
	}
	id, name, ok := sess.Participant(participantToken(r, sess.Code()))
	if !ok {
		http.Redirect(w, r, "/join/"+sess.Code(), http.StatusSeeOther)
		return nil
	}
	v, err := s.view(r, sess, "participant", "")
	if err != nil {
		return err
	}
	v.PID, v.Name = id, classroom.ParticipantName(id, name)
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, http.StatusOK, classSessionPage(s.classPage(r, v.Lesson.Title+" · class "+v.Code), v))
	return nil
}

// hostSession finds the session and checks the host token in ?token=.
func (s *server) hostSession(w http.ResponseWriter, r *http.Request) (*classroom.Session, string, bool, error) {
	sess, ok, err := s.lookupSession(w, r, chi.URLParam(r, "code"))
	if !ok {
		return nil, "", false, err
	}
	token := r.URL.Query().Get("token")
	if !sess.IsHost(token) {
		return nil, "", false, errorf(CodeForbidden, "This page needs the host link the session was started with (it carries the host token).")
	}
	return sess, token, true, nil
}

// hostPage is GET /sessions/{code}/host?token=: the instructor's view.
func (s *server) hostPage(w http.ResponseWriter, r *http.Request) error {
	sess, token, ok, err := s.hostSession(w, r)
	if !ok {
		return err
	}
	return s.renderClass(w, r, sess, "host", token, "Host · ")
}

// projectorPage is GET /sessions/{code}/projector?token=: what the class
// sees on the big screen. Its token is the projector token; the host
// token (in an older link) is answered with a redirect to the projector
// token's address, so the screen's address bar never shows the host
// token.
func (s *server) projectorPage(w http.ResponseWriter, r *http.Request) error {
	sess, ok, err := s.lookupSession(w, r, chi.URLParam(r, "code"))
	if !ok {
		return err
	}
	token := r.URL.Query().Get("token")
	switch {
	case sess.IsHost(token):
		http.Redirect(w, r, projectorURL(sess), http.StatusSeeOther)
		return nil
	case !sess.IsProjector(token):
		return errorf(CodeForbidden, "This page needs the projector link shown on the host view (it carries the projector token).")
	}
	return s.renderClass(w, r, sess, "projector", token, "")
}

// renderClass renders the host or projector view.
func (s *server) renderClass(w http.ResponseWriter, r *http.Request, sess *classroom.Session, role, token, titlePrefix string) error {
	v, err := s.view(r, sess, role, token)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	title := titlePrefix + v.Lesson.Title
	if role == "projector" {
		title = v.Lesson.Title + " · join with " + v.Code
	}
	s.render(w, r, http.StatusOK, classSessionPage(s.classPage(r, title), v))
	return nil
}

// sessionQR is GET /sessions/{code}/qr.svg: the join link as a QR code
// (?token=, optional, lets it through the join-code limit).
func (s *server) sessionQR(w http.ResponseWriter, r *http.Request) error {
	sess, ok, err := s.lookupSession(w, r, chi.URLParam(r, "code"))
	if !ok {
		return err
	}
	svg, err := classroom.QRSVG(absURL(r, joinLink(sess)))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "private, max-age=3600")
	w.Write([]byte(svg))
	return nil
}

// recordedView is what a class sees when its run of a lab preset did not
// finish: the lesson's recorded tables of the preset (their ids
// prefixed, since a participant's page holds the same tables in the
// lesson's text), or, for a preset the lesson recorded none of, a
// simulation of it.
type recordedView struct {
	Tables []*lessons.Table
	Sim    *simView
}

// sessionRecorded is GET /sessions/{code}/recorded/{lab}: the class's
// fallback for its run of lab (recordedView), an HTML fragment that
// session.js puts under the run that did not finish. It is the same for
// every screen, so it is made once per course and lab.
func (s *server) sessionRecorded(w http.ResponseWriter, r *http.Request) error {
	sess, ok, err := s.lookupSession(w, r, chi.URLParam(r, "code"))
	if !ok {
		return err
	}
	c, err := s.loadCourse()
	if err != nil {
		return err
	}
	id := chi.URLParam(r, "lab")
	lab, les, ok := c.Lab(id)
	if !ok || les.Slug != sess.Lesson() {
		return errorf(CodeNotFound, fmt.Sprintf("The lesson of this class has no lab %q.", id))
	}
	out, err := s.panels.getOrMake(fmt.Sprintf("class-recorded/%p/%s", c, lab.ID), func() ([]byte, bool, error) {
		var v recordedView
		for _, p := range les.Body {
			if t, ok := p.Block.(*lessons.Table); ok && t.Preset == lab.ID {
				// Its own ids and caption: the participant's page holds
				// the lesson's table too, and two regions of one name
				// could not be told apart.
				shown := *t
				shown.ID = "recorded-" + t.ID
				shown.Caption = strings.TrimRight(t.Caption, ". ") + " (shown in place of the class run)."
				v.Tables = append(v.Tables, &shown)
			}
		}
		if len(v.Tables) == 0 {
			v.Sim = &simView{Request: labPreset(lab), Simulated: true}
			if err := simulate(r.Context(), v.Sim, lab.Show); err != nil {
				return nil, false, err
			}
		}
		html, err := renderString(r.Context(), classRecorded(v))
		return []byte(html), err == nil, err
	})
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	s.writeHTML(w, r, http.StatusOK, out)
	return nil
}

// sessionCSV is GET /sessions/{code}/results.csv and answers.csv?token=.
func (s *server) sessionCSV(w http.ResponseWriter, r *http.Request) error {
	sess, _, ok, err := s.hostSession(w, r)
	if !ok {
		return err
	}
	res := sess.Results()
	file := chi.URLParam(r, "file")
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="class-%s-%s-%s.csv"`, res.Lesson, res.Code, file))
	if file == "answers" {
		return res.WriteAnswersCSV(w)
	}
	return res.WriteCountsCSV(w)
}

// sessionStream is GET /ws/sessions/{code}?token=|cookie&since=&epoch=
// (token: the host's or the projector's; else the participant cookie):
// the session's websocket (protocol in package classroom).
func (s *server) sessionStream(w http.ResponseWriter, r *http.Request) error {
	if !sameHost(r) {
		return errorf(CodeForbidden, "Class sessions may only be opened from pages of this site.")
	}
	sess, ok, err := s.lookupSession(w, r, chi.URLParam(r, "code"))
	if !ok {
		return err
	}
	q := r.URL.Query()
	who, err := sess.Holder(q.Get("token"), participantToken(r, sess.Code()))
	switch {
	case errors.Is(err, classroom.ErrBadToken):
		return errorf(CodeForbidden, "That token is neither this session's host token nor its projector token.")
	case err != nil:
		return errorf(CodeForbidden, "Join the session first at /join/"+sess.Code()+".")
	}
	who.Addr = clientAddr(r) // a host's class runs count against it
	since := 0
	if v := q.Get("since"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errorf(CodeInvalid, "since="+v+" is not allowed: want the last sequence number you saw, a whole number of 0 or more.")
		}
		since = n
	}
	conn, err := wsconn.Upgrade(hijacker{w}, r, sameHost, wsconn.DefaultConfig())
	if err != nil {
		s.log.InfoContext(r.Context(), "websocket upgrade failed", "session", sess.Code(), "err", err)
		return nil
	}
	sess.Serve(conn, who, since, q.Get("epoch"))
	return nil
}

// teachView is what /teach shows.
type teachView struct {
	Lessons  []*lessons.Lesson
	One      bool   // one lesson, named by ?lesson= (a fixture, not in the course list)
	NeedKey  bool   // the server has an instructor key this browser does not hold
	Held     bool   // this browser holds a teach pass
	KeyError string // what was wrong with the key typed, shown beside its field
}

// teachOnly is the lesson ?lesson= names if it is not in the course list
// (a fixture, which /teach does not list), else "": the whole list.
func teachOnly(c *lessons.Course, slug string) string {
	if l, ok := c.Lesson(slug); ok && isFixture(l) {
		return slug
	}
	return ""
}

func (s *server) teachView(r *http.Request, c *lessons.Course, only string) teachView {
	v := teachView{Lessons: courseLessons(c)}
	if l, ok := c.Lesson(only); ok && only != "" {
		v.Lessons, v.One = []*lessons.Lesson{l}, isFixture(l)
	}
	if s.instructorKey != "" {
		v.Held = s.holdsTeachPass(r, time.Now())
		// A learning platform's instructor needs no key (package lti).
		v.NeedKey = !v.Held && !s.ltiInstructor(r)
	}
	return v
}

// teachPage is GET /teach: every course lesson with a Teach button, in
// one form with the instructor key's field when the server has a key this
// browser does not hold yet. ?lesson= shows that lesson alone (a fixture
// lesson too, which the list leaves out).
func (s *server) teachPage(w http.ResponseWriter, r *http.Request) error {
	if err := s.classesOn(); err != nil {
		return err
	}
	c, err := s.loadCourse()
	if err != nil {
		return err
	}
	only := r.URL.Query().Get("lesson")
	if _, ok := c.Lesson(only); only != "" && !ok {
		return errorf(CodeNotFound, fmt.Sprintf("There is no lesson called %q to teach; /teach lists every lesson.", only))
	}
	s.render(w, r, http.StatusOK, classTeachPage(s.classPage(r, "Teach a class"), s.teachView(r, c, only)))
	return nil
}

// forgetTeachPass is POST /teach/forget: the browser's teach pass is
// deleted (on a shared computer) and /teach asks for the key again.
func (s *server) forgetTeachPass(w http.ResponseWriter, r *http.Request) error {
	if err := s.classesOn(); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: teachPassCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: secureRequest(r), SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/teach", http.StatusSeeOther)
	return nil
}

// The teach pass: after an instructor types the key once on /teach, the
// browser holds a cookie that stands for it for teachPassHours, so each
// lesson's Teach button works without it. The cookie is the pass's end
// (Unix seconds) and an HMAC-SHA256 of it keyed with the instructor key:
// it proves the key was typed, cannot be made without it, tells nothing
// of it, and stops working when the key changes. SameSite=Strict keeps
// other sites' forms from starting sessions with it.
const (
	teachPassCookie = "cl_teach"
	teachPassHours  = 8
)

// teachPass is the cookie value of a pass made at now.
func teachPass(key string, now time.Time) string {
	end := strconv.FormatInt(now.Add(teachPassHours*time.Hour).Unix(), 10)
	return end + "." + teachPassMAC(key, end)
}

func teachPassMAC(key, end string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("capacitylab teach pass\x00" + end))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// validTeachPass reports whether v is a pass made with key that has not
// ended at now.
func validTeachPass(key, v string, now time.Time) bool {
	end, mac, ok := strings.Cut(v, ".")
	if key == "" || !ok {
		return false
	}
	secs, err := strconv.ParseInt(end, 10, 64)
	if err != nil || now.Unix() >= secs {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(teachPassMAC(key, end)))
}

func (s *server) holdsTeachPass(r *http.Request, now time.Time) bool {
	c, err := r.Cookie(teachPassCookie)
	return err == nil && validTeachPass(s.instructorKey, c.Value, now)
}

func setTeachPass(w http.ResponseWriter, r *http.Request, key string, now time.Time) {
	http.SetCookie(w, &http.Cookie{Name: teachPassCookie, Value: teachPass(key, now), Path: "/",
		MaxAge: teachPassHours * 3600, HttpOnly: true, Secure: secureRequest(r), SameSite: http.SameSiteStrictMode})
}
