package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"capacitylab/lessons"
	"capacitylab/lti"
	"capacitylab/store"
)

// The tool's LTI URLs (routes.go lists them with the rest).
const (
	ltiLoginPath    = "/lti/login"
	ltiLaunchPath   = "/lti/launch"
	ltiJWKSPath     = "/lti/jwks.json"
	ltiDeepLinkPath = "/lti/deep-link"
)

// ltiCtxKey keys the request's LTI session in its context.
type ltiCtxKey struct{}

// ltiSessionOf returns the request's LTI launch session, if it has one.
func ltiSessionOf(ctx context.Context) (lti.Session, bool) {
	s, ok := ctx.Value(ltiCtxKey{}).(lti.Session)
	return s, ok
}

// ltiSession puts the request's LTI session (its cookie, package lti) in
// the request's context, where learnerID finds it: inside a platform's
// page the learner is the platform's user, not an anonymous cookie.
func (s *server) ltiSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.lti != nil {
			if _, err := r.Cookie(lti.SessionCookie); err == nil {
				if sess, ok := s.lti.Session(r.Context(), r); ok {
					r = r.WithContext(context.WithValue(r.Context(), ltiCtxKey{}, sess))
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// ltiInstructor reports whether the request comes from an LTI launch
// whose roles make the user an instructor of their course: such a user
// may start class sessions without the instructor key.
func (s *server) ltiInstructor(r *http.Request) bool {
	sess, ok := ltiSessionOf(r.Context())
	return ok && sess.Instructor
}

// progressChanged tells package lti that the request's learner's progress
// in lesson ("" = every lesson) changed, so their scores in graded
// placements are posted again. Only a request with an LTI session can
// change an LTI learner's progress (their learner id comes only from it).
func (s *server) progressChanged(r *http.Request, learner, lesson string) {
	if _, ok := ltiSessionOf(r.Context()); ok && s.lti != nil {
		s.lti.ProgressChanged(r.Context(), learner, lesson)
	}
}

// ltiOn returns the answer for a server that takes no LTI launches.
func (s *server) ltiOn() error {
	if s.lti == nil {
		return errorf(CodeNotFound, "This server does not take LTI launches.")
	}
	return nil
}

// toolBase is the tool's origin as platforms and browsers reach it:
// Deps.PublicURL's, or else the request's.
func (s *server) toolBase(r *http.Request) string {
	if s.publicURL != "" {
		return s.publicURL
	}
	return absURL(r, "")
}

// refused turns an LTI refusal into the one error path's *Error: a page
// saying what happened and who can fix it, and a log line saying which
// check failed and why.
func refused(err error, title string) error {
	var r *lti.Refusal
	if !errors.As(err, &r) {
		return err
	}
	return &Error{Code: CodeForbidden, Title: title, Message: r.Message, Log: "lti " + r.Reason + ": " + r.Detail}
}

// ltiURLs are the URLs a platform's administrator enters.
type ltiURLs struct {
	Login, Launch, JWKS, DeepLink, Target string
}

// ltiConfig is GET /lti: what to enter in a platform to add this tool.
func (s *server) ltiConfig(w http.ResponseWriter, r *http.Request) error {
	if err := s.ltiOn(); err != nil {
		return err
	}
	plats, err := s.lti.Platforms(r.Context())
	if err != nil {
		return err
	}
	base := s.toolBase(r)
	u := ltiURLs{Login: base + ltiLoginPath, Launch: base + ltiLaunchPath, JWKS: base + ltiJWKSPath,
		DeepLink: base + ltiLaunchPath, Target: base + "/"}
	s.render(w, r, http.StatusOK, ltiConfigPage(s.page(r, "Add Capacity Lab to a learning platform"), u, len(plats)))
	return nil
}

// ltiJWKS is GET /lti/jwks.json: the tool's public keys.
func (s *server) ltiJWKS(w http.ResponseWriter, r *http.Request) error {
	if err := s.ltiOn(); err != nil {
		return err
	}
	b, err := s.lti.JWKS(r.Context())
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", int(lti.JWKSMaxAge.Seconds())))
	w.Write(b)
	return nil
}

// ltiLogin is the OIDC third-party login initiation (GET or POST): 302 to
// the platform's authorization endpoint, with the state's cookie. Each
// login stores a row until it expires (lti.Tool.Login), so logins are
// limited per client address as joins are (a lecture hall launching at
// once from behind one address: Deps.JoinsPerMinute), and in all by
// lti.Config.MaxLogins; past either, 429 with Retry-After.
func (s *server) ltiLogin(w http.ResponseWriter, r *http.Request) error {
	if err := s.ltiOn(); err != nil {
		return err
	}
	if err := parseForm(r); err != nil {
		return err
	}
	// Counted before it is done, so logins sent at once cannot all pass
	// the check before any is counted.
	if wait := s.ltiLogins.Allow(clientAddr(r), time.Now()); wait > 0 {
		return &Error{Code: CodeBusy, Title: "Too many launches", RetryAfter: wait,
			Message: "Too many launches of this tool started from your address in the last minute (a whole building can share one). Open the link in the course again in " + retryText(wait) + "."}
	}
	lg, err := s.lti.Login(r.Context(), lti.LoginRequestOf(r.Form), s.toolBase(r)+ltiLaunchPath)
	if errors.Is(err, store.ErrLTILoginsFull) {
		return &Error{Code: CodeBusy, Title: "Too many launches", RetryAfter: time.Minute,
			Message: "Too many launches of this tool are waiting for their platforms just now. Open the link in the course again in a minute."}
	}
	if err != nil {
		return refused(err, "This launch could not start")
	}
	http.SetCookie(w, lg.Cookie)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, lg.RedirectURL, http.StatusFound)
	return nil
}

// ltiLaunch takes the platform's id_token: a resource link opens its
// page (303) in the learner's session; a deep linking request shows the
// picker.
func (s *server) ltiLaunch(w http.ResponseWriter, r *http.Request) error {
	if err := s.ltiOn(); err != nil {
		return err
	}
	if err := parseForm(r); err != nil {
		return err
	}
	ctx := r.Context()
	l, err := s.lti.Launch(ctx, r, s.toolBase(r))
	if err != nil {
		return refused(err, "This launch was refused")
	}
	forgetStateCookie(w, r)
	lesson, target := "", "/"
	if l.MessageType == lti.MessageResourceLink {
		u, _ := url.Parse(l.TargetLinkURI) // checked by Launch
		target = u.EscapedPath()
		if target == "" {
			target = "/"
		}
		if u.RawQuery != "" {
			target += "?" + u.RawQuery
		}
		if u.Fragment != "" {
			target += "#" + u.EscapedFragment()
		}
		lesson = s.lessonAt(u.Path)
	}
	sess, cookie, err := s.lti.Begin(ctx, l, lesson)
	if err != nil {
		return err
	}
	http.SetCookie(w, cookie)
	s.log.InfoContext(ctx, "lti launch", "type", l.MessageType, "issuer", l.Platform.Issuer, "context", l.ContextID,
		"learner", sess.Learner, "instructor", sess.Instructor, "lesson", lesson, "graded", l.LineItem != "" && lesson != "")
	if l.MessageType == lti.MessageDeepLinking {
		id, err := s.lti.BeginDeepLink(ctx, l)
		if err != nil {
			return err
		}
		c, err := s.loadCourse()
		if err != nil {
			return err
		}
		multiple := l.DeepLinking.Multiple == nil || *l.DeepLinking.Multiple
		where := "your course"
		if l.ContextTitle != "" {
			where = l.ContextTitle
		}
		s.render(w, r, http.StatusOK, ltiPickerPage(s.page(r, "Choose what to add"), id, multiple, pickChoices(r.Context(), c), where))
		return nil
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
	return nil
}

// forgetStateCookie deletes the login's state cookie once the launch has
// used it.
func forgetStateCookie(w http.ResponseWriter, r *http.Request) {
	for _, c := range r.Cookies() {
		if strings.HasPrefix(c.Name, "cl_lti_state_") {
			http.SetCookie(w, &http.Cookie{Name: c.Name, Value: "", Path: "/lti/", MaxAge: -1, HttpOnly: true, Secure: true,
				SameSite: http.SameSiteNoneMode, Partitioned: true})
		}
	}
}

// lessonAt is the slug of the lesson whose page is at path, or "".
func (s *server) lessonAt(path string) string {
	slug, ok := strings.CutPrefix(path, "/lessons/")
	if !ok || strings.Contains(slug, "/") {
		return ""
	}
	c, err := s.course()
	if err != nil {
		return ""
	}
	if _, ok := c.Lesson(slug); !ok {
		return ""
	}
	return slug
}

// pickChoice is one thing the deep linking picker offers.
type pickChoice struct {
	Value  string // the form value: lesson:SLUG, predict:SLUG:ID, model:SLUG:ID or lab:SLUG:ID
	Kind   string // "lesson", "predict", "model", "lab"
	Label  string // in the picker, under its lesson's title, in words (never a block's id)
	Title  string // the content item's title, for the platform
	Text   string
	Path   string // the page the link opens
	Points int    // a lesson's points when graded
}

// pickGroup is a lesson and the widgets and labs in it.
type pickGroup struct {
	Lesson pickChoice
	Parts  []pickChoice
}

// pickChoices lists every course lesson with its Predicts (opening the
// lesson at the question), model widgets (their presets, as "open on its
// own" links them) and lab blocks, in page order, each named in words:
// "Predict: " and its prompt, "The widget: Little's law", "The lab: " and
// its preset (labWords), never a block's id.
func pickChoices(ctx context.Context, c *lessons.Course) []pickGroup {
	var out []pickGroup
	for _, l := range courseLessons(c) {
		g := pickGroup{Lesson: pickChoice{Value: "lesson:" + l.Slug, Kind: "lesson", Label: "The lesson", Title: l.Title, Path: lessonURL(l.Slug),
			Text: fmt.Sprintf("%s · %s · about %d minutes", l.Part, l.Chapter, l.Minutes), Points: gradeLesson(l, emptyState(), nil).Max()}}
		for _, b := range l.Blocks() {
			switch b := b.(type) {
			case *lessons.Question:
				if b.Type != "predict" {
					continue
				}
				prompt := promptText(b)
				g.Parts = append(g.Parts, pickChoice{Value: "predict:" + l.Slug + ":" + b.ID, Kind: "predict", Label: "Predict: " + prompt,
					Title: itemTitle("Predict: "+prompt, l), Text: counted(len(b.Options), "option", "options") + "; the lesson opens at the question",
					Path: lessonURL(l.Slug) + "#" + b.ID})
			case *lessons.Model:
				v, err := lessonWidgetView(ctx, l, b, emptyState())
				if err != nil {
					continue
				}
				g.Parts = append(g.Parts, pickChoice{Value: "model:" + l.Slug + ":" + b.ID, Kind: "model", Label: "The widget: " + v.Spec.Title,
					Title: itemTitle("Widget: "+v.Spec.Title, l), Text: b.Goal.Text, Path: v.ShareURL})
			case *lessons.Lab:
				words := labWords(l, b)
				text := labPresetWords(b) + " " + labSummary(b)
				if b.Simulated {
					text = "Simulated, not measured. " + text
				}
				g.Parts = append(g.Parts, pickChoice{Value: "lab:" + l.Slug + ":" + b.ID, Kind: "lab", Label: "The lab: " + words,
					Title: itemTitle("Lab: "+words, l), Text: text, Path: lessonURL(l.Slug) + "#" + b.ID})
			}
		}
		out = append(out, g)
	}
	return out
}

// promptText is a Predict's prompt as plain text, on one line.
func promptText(q *lessons.Question) string {
	return strings.Join(strings.Fields(htmlText(string(q.Prompt))), " ")
}

// labWords names a lab block in words: its preset (presetWords), and
// when another lab of the lesson has the same words, what tells them
// apart among whether it is simulated, its admission policy, its
// callers' timeout, retries and classes, its service time's distribution,
// its lock and its coherency cost.
func labWords(l *lessons.Lesson, b *lessons.Lab) string {
	words := presetWords(labPreset(b))
	details := func(x *lessons.Lab) []string {
		kind := "measured"
		if x.Simulated {
			kind = "simulated"
		}
		policy := "policy queue" // the lab's default
		if x.Policy != "" {
			// Its parameters after a space each, so the name wraps.
			policy = "policy " + strings.ReplaceAll(string(x.Policy), ",", ", ")
		}
		client := "no retries"
		if x.Retry != "" {
			// Its parameters after a space each, so the name wraps.
			client = "retry " + strings.ReplaceAll(x.Retry, ",", ", ")
		}
		classes := "no classes"
		if x.Classed() {
			classes = fmtNum(x.Critical*100) + "% critical, " + fmtNum(x.Sheddable*100) + "% sheddable"
		}
		service := "service time constant"
		if x.Dist != "" {
			service = "service time " + strings.ReplaceAll(x.Dist.String(), ",", ", ")
		}
		contention := "no lock"
		if x.LockMS > 0 {
			contention = "a " + strconv.Itoa(x.LockMS) + " ms lock"
		}
		coherency := "no coherency cost"
		if x.CoherencyUS > 0 {
			coherency = "coherency " + strconv.Itoa(x.CoherencyUS) + " µs"
		}
		fanout := "no fan-out"
		if x.Fanout > 1 {
			fanout = "fan-out " + strconv.Itoa(x.Fanout)
		}
		hedging := "no hedging"
		if x.Hedge != "" {
			hedging = "hedge " + strings.ReplaceAll(x.Hedge, ",", ", ")
		}
		return []string{kind, policy, "callers give up after " + fmtNum(labPreset(x).Timeout().Seconds()) + " s", client, classes, service, contention, coherency, fanout, hedging}
	}
	var twins []*lessons.Lab
	for _, o := range l.Blocks() {
		if x, ok := o.(*lessons.Lab); ok && x != b && presetWords(labPreset(x)) == words {
			twins = append(twins, x)
		}
	}
	if len(twins) == 0 {
		return words
	}
	mine := details(b)
	var differ []string
	for i, d := range mine {
		for _, x := range twins {
			if details(x)[i] != d {
				differ = append(differ, d)
				break
			}
		}
	}
	if len(differ) == 0 {
		return words
	}
	return words + ", " + strings.Join(differ, ", ")
}

// itemTitle is the title a platform shows for a part of lesson l: what
// it is, cut to about 160 characters at a word, then the lesson's title.
func itemTitle(what string, l *lessons.Lesson) string {
	const most = 160
	if r := []rune(what); len(r) > most {
		cut := string(r[:most])
		if i := strings.LastIndexByte(cut, ' '); i > 0 {
			cut = cut[:i]
		}
		what = strings.TrimRight(cut, " ,.;:") + "…"
	}
	return what + " (" + l.Title + ")"
}

// emptyState is a learner's state with nothing stored.
func emptyState() store.LessonState { return (&store.Export{}).State() }

// ltiDeepLink is POST /lti/deep-link, the picker's form: the signed deep
// linking response, on a page that posts it to the platform.
func (s *server) ltiDeepLink(w http.ResponseWriter, r *http.Request) error {
	if err := s.ltiOn(); err != nil {
		return err
	}
	if err := parseForm(r, "item"); err != nil { // the items chosen
		return err
	}
	id := r.PostFormValue("request")
	if _, err := s.lti.DeepLinkRequest(r.Context(), id); err != nil {
		return refused(err, "This choice could not be sent")
	}
	c, err := s.loadCourse()
	if err != nil {
		return err
	}
	graded := r.PostFormValue("graded") == "yes"
	var items []lti.ContentItem
	byValue := map[string]pickChoice{}
	for _, g := range pickChoices(r.Context(), c) {
		byValue[g.Lesson.Value] = g.Lesson
		for _, p := range g.Parts {
			byValue[p.Value] = p
		}
	}
	base := s.toolBase(r)
	for _, v := range r.PostForm["item"] {
		p, ok := byValue[v]
		if !ok {
			return errorf(CodeInvalid, fmt.Sprintf("%q is not something this tool offers: choose from the list.", v))
		}
		it := lti.ContentItem{Type: "ltiResourceLink", Title: p.Title, Text: p.Text, URL: base + p.Path}
		if p.Kind == "lesson" && graded {
			slug := strings.TrimPrefix(p.Value, "lesson:")
			it.LineItem = &lti.LineItem{ScoreMaximum: float64(p.Points), Label: p.Title, ResourceID: slug, Tag: "capacitylab"}
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return errorf(CodeInvalid, "Choose at least one lesson, widget or lab to add, then press Add.")
	}
	ret, token, err := s.lti.DeepLinkResponse(r.Context(), id, items, fmt.Sprintf("Added %s from Capacity Lab.", counted(len(items), "item", "items")))
	if err != nil {
		return refused(err, "This choice could not be sent")
	}
	origin := ret
	if u, err := url.Parse(ret); err == nil {
		origin = u.Scheme + "://" + u.Host
	}
	// The page's form posts to the platform: allow that one origin.
	w.Header().Set("Content-Security-Policy", strings.Replace(w.Header().Get("Content-Security-Policy"),
		"form-action 'self'", "form-action 'self' "+origin, 1))
	p := s.page(r, "Sending your choice")
	p.JS = s.assets.URL("js/lti.js")
	s.render(w, r, http.StatusOK, ltiReturnPage(p, ret, token, items))
	return nil
}

// ltiGrades is GET /lti/grades: an LTI instructor's list of their course's
// grades and how posting each stands.
func (s *server) ltiGrades(w http.ResponseWriter, r *http.Request) error {
	sess, err := s.ltiInstructorSession(r)
	if err != nil {
		return err
	}
	gs, err := s.lti.CourseGrades(r.Context(), sess)
	if err != nil {
		return err
	}
	rows, err := s.gradeRows(r.Context(), gs)
	if err != nil {
		return err
	}
	retried := ""
	if n, err := strconv.Atoi(r.URL.Query().Get("retried")); err == nil {
		retried = counted(n, "failed grade is", "failed grades are") + " being sent again."
	}
	s.render(w, r, http.StatusOK, ltiGradesPage(s.page(r, "Grades of your course"), sess.ContextTitle, rows, retried))
	return nil
}

// ltiRetry is POST /lti/grades/retry: the course's failed grades are
// posted again.
func (s *server) ltiRetry(w http.ResponseWriter, r *http.Request) error {
	sess, err := s.ltiInstructorSession(r)
	if err != nil {
		return err
	}
	n, err := s.lti.RetryCourse(r.Context(), sess)
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/lti/grades?retried="+itoa(n), http.StatusSeeOther)
	return nil
}

func (s *server) ltiInstructorSession(r *http.Request) (lti.Session, error) {
	if err := s.ltiOn(); err != nil {
		return lti.Session{}, err
	}
	sess, ok := ltiSessionOf(r.Context())
	if !ok || !sess.Instructor {
		return sess, errorf(CodeForbidden, "The grade list is for instructors: open this tool from your course in the learning platform, as its instructor.")
	}
	return sess, nil
}

// learnerGrades is the progress page's view of an LTI learner's graded
// placements; nil for a request without an LTI session.
type learnerGrades struct {
	Course     string
	Instructor bool
	Rows       []gradeRow
}

func (s *server) learnerGrades(r *http.Request) (*learnerGrades, error) {
	sess, ok := ltiSessionOf(r.Context())
	if !ok || s.lti == nil {
		return nil, nil
	}
	gs, err := s.lti.LearnerGrades(r.Context(), sess.Learner)
	if err != nil {
		return nil, err
	}
	rows, err := s.gradeRows(r.Context(), gs)
	if err != nil {
		return nil, err
	}
	return &learnerGrades{Course: sess.ContextTitle, Instructor: sess.Instructor, Rows: rows}, nil
}

// framePolicies are the policies whose frame-ancestors add the registered
// platforms' origins (package lti) to the configured sources, kept by
// those origins.
type framePolicies struct{ page, widget string }

// frameCacheSize bounds the policies kept: the registered platforms change
// rarely, so one set of origins is in use at a time.
const frameCacheSize = 4

// policy is the Content-Security-Policy of a page (widget: a standalone
// widget's): the configured frame-ancestors plus the registered LTI
// platforms' origins, so a platform can frame what it launches without
// the operator opening the site to every other site ('none' and * are
// left as configured).
func (s *server) policy(ctx context.Context, widget bool) string {
	if s.lti == nil {
		return s.pickPolicy(widget, s.csp, s.widgetCSP)
	}
	origins := s.lti.FrameAncestors(ctx)
	if origins == "" {
		return s.pickPolicy(widget, s.csp, s.widgetCSP)
	}
	p, _ := s.frames.getOrMake(origins, func() (framePolicies, bool, error) {
		return framePolicies{page: contentPolicy(withOrigins(s.frameAncestors, origins)), widget: contentPolicy(withOrigins(s.widgetAncestors, origins))}, true, nil
	})
	return s.pickPolicy(widget, p.page, p.widget)
}

func (s *server) pickPolicy(widget bool, page, w string) string {
	if widget {
		return w
	}
	return page
}

func withOrigins(sources, origins string) string {
	if sources == "'none'" || sources == "*" {
		return sources
	}
	return sources + " " + origins
}
