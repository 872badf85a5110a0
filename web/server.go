package web

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"capacitylab/admit"
	"capacitylab/classroom"
	"capacitylab/evidence"
	"capacitylab/lessons"
	"capacitylab/lti"
	"capacitylab/runner"
	"capacitylab/store"
)

// Limits on requests.
const (
	// MaxBodyBytes caps every request body but an upload's (POST
	// /service, capped by Deps.UploadLimits); forms here are a few hundred bytes.
	MaxBodyBytes = 64 << 10
)

// CourseFunc returns the course to serve. With embedded content it returns
// the same validated course every time; in author mode (--content DIR) it
// re-reads changed files and returns their validation errors, which the
// server shows to the author instead of crashing.
type CourseFunc func() (*lessons.Course, error)

// Deps is everything the web server needs. Course, Store and Assets are
// required; Logger defaults to a discarding logger and Registry to a new
// registry owned by this server.
type Deps struct {
	Course         CourseFunc
	Store          *store.Store
	Assets         *Assets
	Logger         *slog.Logger
	FrameAncestors string // CSP frame-ancestors sources; default "'self'"
	// WidgetFrameAncestors is the CSP frame-ancestors sources of the
	// standalone widgets (/widgets/{kind}), which change nothing and so
	// may be framed by any course page; default "*".
	WidgetFrameAncestors string
	Registry             *prometheus.Registry // where the HTTP metrics are registered, served at /metrics
	Runner               Queue                // the queue of live sweeps; nil: POST /api/sweeps answers 503
	Classes              *classroom.Manager   // class sessions; nil: the session pages answer 404
	InstructorKey        string               // if set, starting a class session needs it
	// LTI is the tool side of LTI 1.3 (launches from learning platforms,
	// deep linking, grades); nil: the /lti/ URLs answer 404.
	LTI *lti.Tool
	// PublicURL is the site's origin as platforms and browsers reach it
	// (https://lab.example.org), for the LTI URLs; "": the request's.
	PublicURL string
	// TrustedProxies are the addresses and networks of the reverse
	// proxies in front of the server (forwarding.ParseTrusted): only from
	// them are Forwarded, X-Forwarded-For and X-Forwarded-Proto believed
	// (proxy.go). Empty: forwarding headers are ignored.
	TrustedProxies []netip.Prefix
	// JoinsPerMinute is how many times one client address may join class
	// sessions a minute, and start LTI launches (DefaultJoinsPerMinute
	// when 0); SessionsPerHour
	// how many class sessions it may start an hour when the server has no
	// instructor key (DefaultSessionsPerHour when 0).
	JoinsPerMinute, SessionsPerHour int
	// Gate is the site's front door (admission.go): every request but
	// the critical ones enters it, and those its policy refuses get 503
	// with Retry-After. NewServer registers it on Registry. nil: every
	// request is let in.
	Gate *admit.Gate
	// SharedRuns says that runs are run by other processes sharing the
	// store (a web replica beside runner processes): a run stored queued
	// or running that Runner does not hold is live elsewhere, and its
	// page, API and stream follow the store (streamfollow.go). Without
	// it (one server) such a run is over and shown interrupted.
	SharedRuns bool
	// RequestLog is which requests get a log line (RequestLog);
	// "": RequestLogSampled.
	RequestLog RequestLog
	// UploadLimits bound the results files learners upload to "Your
	// service" (service.go); a zero field is evidence.DefaultLimits'.
	UploadLimits evidence.Limits
	// UploadsPerHour is how many uploads one client address may store an
	// hour (DefaultUploadsPerHour when 0): each may be 100 MiB of the
	// server's disk.
	UploadsPerHour int
}

// Queue is the queue of live sweeps as the handlers use it: the
// in-process *runner.Runner (--role all), or package fleet's distributed
// queue (--role web), which holds no run in memory (Get reports none,
// Subscribe runner.ErrNoRun, Watchers 0), so every run is then served
// from the store.
type Queue interface {
	Limits() runner.Limits
	Capacity() int
	Validate(q runner.Request) error
	SubmitFrom(ctx context.Context, learner, addr string, q runner.Request) (runner.Ticket, error)
	Cancel(id, learner string) error
	Get(id string) (runner.Snapshot, bool)
	Subscribe(id string, since int) ([]runner.Event, *runner.Subscription, error)
	Watchers(id string) int
}

// Defaults of Deps.JoinsPerMinute and Deps.SessionsPerHour: a lecture hall
// behind one address (a school's NAT) joins at once, hundreds in a minute,
// and one or two instructors start sessions there.
const (
	DefaultJoinsPerMinute  = 600
	DefaultSessionsPerHour = 20
	// DefaultUploadsPerHour is Deps.UploadsPerHour's default: a class
	// behind one address uploading its projects at the end of a lesson.
	DefaultUploadsPerHour = 60
)

// server holds the dependencies of the handlers. Its own mutable state is
// its metrics, a pool of render buffers and its caches (cache.go), each of
// which keeps what is costly to make and the same for many requests.
type server struct {
	course    CourseFunc
	store     *store.Store
	runner    Queue
	assets    *Assets
	log       *slog.Logger
	csp       string // Content-Security-Policy of every page
	widgetCSP string // the standalone widgets' (frame-ancestors differs)
	reg       *prometheus.Registry
	metrics   *httpMetrics
	// requestLog decides which requests get a log line (middleware.go).
	requestLog *logSampler
	bufs       sync.Pool   // *bytes.Buffer for rendering pages
	gzips      gzipWriters // pages gzipped whole per request (encoded.go)

	pages     *cache[newcomerPage]  // lesson pages as a newcomer sees them, by slug (handlers.go)
	plans     *cache[keptPlan]      // lesson pages with the learner's blocks cut out, by slug and header links (lessonplan.go)
	models    *modelCache           // widget results and plots by kind, solve and values (modelcache.go)
	charts    *cache[chartEntry]    // predictions and charts of recent runs, by run and rows (runview.go)
	panels    *cache[[]byte]        // rendered run panels and the run events that carry them (runpanel.go, streamlive.go)
	runLabels *cache[string]        // names of learners' runs in record forms, by run and status (records.go)
	frames    *cache[framePolicies] // policies with the LTI platforms' origins added, by origins (lti.go)
	// cheapestKept is each judge block's cheapest passing choice, by block
	// and preset (judge.go): the same for every learner.
	cheapestKept *cache[cheapestChoice]

	classes       *classroom.Manager // class sessions (sessions.go); may be nil
	instructorKey string             // if set, starting a class session needs it

	lti             *lti.Tool // LTI launches, deep linking, grades (lti.go); may be nil
	publicURL       string    // the site's origin for LTI URLs; "": the request's
	frameAncestors  string    // configured frame-ancestors of pages
	widgetAncestors string    // and of the standalone widgets

	proxies []netip.Prefix // whose forwarding headers are believed (proxy.go)

	joins, sessions *classroom.Limiter // per client address (sessions.go)
	// keyTries counts instructor keys tried per client address, limited
	// as join-code misses are (sessions.go).
	keyTries *classroom.Limiter
	// ltiLogins counts LTI login initiations per client address (lti.go),
	// each of which stores a row until it expires.
	ltiLogins *classroom.Limiter

	gate     *admit.Gate      // the front door (admission.go); nil: none
	refusals *cache[*encoded] // the front door's refusal page, rendered once (admission.go)

	sharedRuns bool     // Deps.SharedRuns
	follows    *follows // the runs followed from the store (streamfollow.go)

	uploadLimits evidence.Limits    // Deps.UploadLimits, or evidence's defaults
	uploads      *classroom.Limiter // uploads stored per client address (Deps.UploadsPerHour)
}

// NewServer builds the site's handler: its router, middleware and metrics.
func NewServer(d Deps) http.Handler {
	s := &server{course: d.Course, store: d.Store, assets: d.Assets, log: d.Logger, reg: d.Registry, runner: d.Runner,
		classes: d.Classes, instructorKey: d.InstructorKey, lti: d.LTI, publicURL: strings.TrimSuffix(d.PublicURL, "/"),
		proxies:   d.TrustedProxies,
		joins:     classroom.NewLimiter(cmp.Or(d.JoinsPerMinute, DefaultJoinsPerMinute), time.Minute),
		sessions:  classroom.NewLimiter(cmp.Or(d.SessionsPerHour, DefaultSessionsPerHour), time.Hour),
		keyTries:  classroom.NewLimiter(classroom.MissLimit, classroom.MissWindow),
		ltiLogins: classroom.NewLimiter(cmp.Or(d.JoinsPerMinute, DefaultJoinsPerMinute), time.Minute)}
	s.makeCaches()
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
		s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	fa := d.FrameAncestors
	if fa == "" {
		fa = "'self'"
	}
	wfa := d.WidgetFrameAncestors
	if wfa == "" {
		wfa = "*"
	}
	s.csp, s.widgetCSP = contentPolicy(fa), contentPolicy(wfa)
	s.frameAncestors, s.widgetAncestors = fa, wfa
	s.metrics = newHTTPMetrics(s.reg)
	s.requestLog = &logSampler{mode: cmp.Or(d.RequestLog, RequestLogSampled)}
	if s.gate = d.Gate; s.gate != nil {
		if err := s.gate.Register(s.reg); err != nil {
			panic(err) // as MustRegister: a gate registered twice is a mistake in the caller
		}
	}
	s.sharedRuns = d.SharedRuns
	s.uploads = classroom.NewLimiter(cmp.Or(d.UploadsPerHour, DefaultUploadsPerHour), time.Hour)
	s.uploadLimits = evidence.DefaultLimits()
	if d.UploadLimits.MaxBytes > 0 {
		s.uploadLimits.MaxBytes = d.UploadLimits.MaxBytes
	}
	if d.UploadLimits.MaxRecords > 0 {
		s.uploadLimits.MaxRecords = d.UploadLimits.MaxRecords
	}
	s.follows = newFollows(s.store, s.log, s.storedLog, s.reg)
	return s.routes()
}

// makeCaches makes the server's caches, each bounded (cache.go).
func (s *server) makeCaches() {
	s.pages, s.plans, s.models = newCache[newcomerPage](lessonCacheSize), newCache[keptPlan](lessonCacheSize), newModelCache()
	s.charts, s.panels = newCache[chartEntry](chartCacheSize), newCache[[]byte](panelCacheSize)
	s.runLabels, s.frames = newCache[string](runLabelCacheSize), newCache[framePolicies](frameCacheSize)
	s.cheapestKept = newCache[cheapestChoice](lessonCacheSize)
	s.refusals = newCache[*encoded](1)
}

// contentPolicy is the site's Content-Security-Policy with the given
// frame-ancestors sources.
func contentPolicy(frameAncestors string) string {
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"frame-ancestors " + frameAncestors + "; base-uri 'none'; form-action 'self'; object-src 'none'"
}

// page is what the layout needs besides the page body.
type pageInfo struct {
	Title string
	Icon  string
	CSS   string
	JS    string
	Path  string
	HasJS bool
	// Styles and Scripts are further stylesheets and module scripts the
	// page's blocks need (the widgets', runs.js), linked once each in the
	// head by their content-hashed URLs.
	Styles  []string
	Scripts []string
	Course  *lessons.Course
	// SiteJS is site.js, on every page: local times, the lesson contents.
	SiteJS string
	// Menu is which of the header's links that depend on the reader the
	// page shows (siteMenu).
	Menu siteMenu
	// Wide lets the page's main column grow past the reading measure
	// (run pages, with their charts and tables); its prose stays narrow.
	Wide bool
}

func (s *server) page(r *http.Request, title string) pageInfo {
	p := s.pageAt(r.URL.Path, title)
	p.Menu = s.menuFor(r)
	return p
}

// siteMenu is which of the header's links that depend on the reader a
// page shows: Teach (/teach) and Join (/join).
type siteMenu struct{ Teach, Join bool }

// menuFor is the header's links for the reader of r. A server with class
// sessions links Teach and Join; inside a learning platform's frame (the
// request carries an LTI launch's session, whose cookie is partitioned to
// the platform's page) a learner gets neither, since what they can use
// there is the course's lessons, runs and their progress, and an
// instructor gets Teach (their launch lets them start a class without the
// instructor key) but not Join.
func (s *server) menuFor(r *http.Request) siteMenu {
	m := s.defaultMenu()
	if sess, ok := ltiSessionOf(r.Context()); ok {
		m.Join = false
		m.Teach = m.Teach && sess.Instructor
	}
	return m
}

// defaultMenu is the header's links outside a learning platform.
func (s *server) defaultMenu() siteMenu {
	return siteMenu{Teach: s.classes != nil, Join: s.classes != nil}
}

// pageAt is the page frame of the page at path. The run pages, the runs
// list, compare, the progress page and Your service add runs.css to the site's
// stylesheet.
func (s *server) pageAt(path, title string) pageInfo {
	p := pageInfo{Title: title, Icon: s.assets.URL("img/icon.svg"), CSS: s.assets.URL("css/app.css"), JS: s.assets.URL("js/lesson.js"),
		SiteJS: s.assets.URL("js/site.js"), Path: path, Menu: s.defaultMenu()}
	if path == "/runs" || strings.HasPrefix(path, "/runs/") || path == "/progress" || path == "/service" {
		p.Styles = append(p.Styles, s.assets.URL("css/runs.css"))
	}
	return p
}

// render writes a component as a complete HTML response. It renders into
// a buffer first so a failure can still become a proper error page.
func (s *server) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	s.renderThen(w, r, status, c, nil)
}

// renderThen is render that also hands the finished page to keep (which
// must copy it) before writing it.
func (s *server) renderThen(w http.ResponseWriter, r *http.Request, status int, c templ.Component, keep func([]byte)) {
	buf := s.buffer()
	defer s.release(buf)
	if err := c.Render(r.Context(), buf); err != nil {
		s.renderFailed(w, r, err)
		return
	}
	if keep != nil {
		keep(buf.Bytes())
	}
	s.writeHTML(w, r, status, buf.Bytes())
}

// buffer takes a render buffer from the pool; release gives it back.
func (s *server) buffer() *bytes.Buffer {
	buf, _ := s.bufs.Get().(*bytes.Buffer)
	if buf == nil {
		buf = bytes.NewBuffer(make([]byte, 0, 64<<10))
	}
	return buf
}

func (s *server) release(buf *bytes.Buffer) {
	if buf.Cap() <= 1<<20 {
		buf.Reset()
		s.bufs.Put(buf)
	}
}

// renderFailed logs a page that failed to render and answers 500 without
// showing why.
func (s *server) renderFailed(w http.ResponseWriter, r *http.Request, err error) {
	s.log.ErrorContext(r.Context(), "render failed", "path", r.URL.Path, "err", err)
	http.Error(w, "Something went wrong on our side. It has been logged.", http.StatusInternalServerError)
}

// writeHTML writes a page rendered for this request: gzipped quickly
// (gzipWriters) when the client accepts it, and a 200 with an ETag over its bytes, so
// that a browser revalidating a page it has (Cache-Control: no-cache)
// gets 304 without the body when nothing on it changed.
func (s *server) writeHTML(w http.ResponseWriter, r *http.Request, status int, page []byte) {
	htmlHeaders(w)
	coding := ""
	if len(page) >= minCompressed {
		w.Header().Add("Vary", "Accept-Encoding")
		if pickEncoding(r, false, true) == "gzip" {
			coding = "gzip"
		}
	}
	etag := ""
	if status == http.StatusOK {
		etag = entityTag(bodyTag(page), coding)
		if noneMatch(r, etag) {
			writeRepresentation(w, r, status, etag, coding, nil)
			return
		}
	}
	body := page
	if coding != "" {
		buf := s.buffer()
		defer s.release(buf)
		body = s.gzips.compress(buf, page)
	}
	writeRepresentation(w, r, status, etag, coding, body)
}

// htmlHeaders are the headers of every HTML page.
func htmlHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-cache")
	}
	h.Add("Vary", "Cookie") // a page shows the learner's own answers
}

// lessonCacheSize bounds the lesson pages and plans kept: one of each per
// lesson of any course this server is likely to serve.
const lessonCacheSize = 256

// newcomerPage is a lesson page as a newcomer sees it (no learner cookie,
// no query string): it depends only on the course, so it is rendered and
// compressed once per course value (newEncoded) and served as stored, with
// its ETag. It is kept by slug with the course value and the recorded runs
// it shows (refsKey), so a new course value (author mode reloads) or a
// newer recorded run replaces it.
type newcomerPage struct {
	course *lessons.Course
	refs   string
	page   *encoded
}

// newcomerPageOf returns the kept page of slug, if it was rendered from c
// with the recorded runs refs.
func (s *server) newcomerPageOf(c *lessons.Course, slug, refs string) (newcomerPage, bool) {
	p, ok := s.pages.get(slug)
	return p, ok && p.course == c && p.refs == refs
}

// keepNewcomerPage keeps a copy of page as slug's page for newcomers.
func (s *server) keepNewcomerPage(c *lessons.Course, slug, refs string, page []byte) newcomerPage {
	p := newcomerPage{course: c, refs: refs, page: newEncoded(bytes.Clone(page), "")}
	s.pages.put(slug, p)
	return p
}

// write sends the page as stored, in the encoding the client accepts.
func (p newcomerPage) write(w http.ResponseWriter, r *http.Request) {
	htmlHeaders(w)
	p.page.serve(w, r, http.StatusOK)
}

// renderString renders a component to a string (for JSON fragments).
func renderString(ctx context.Context, c templ.Component) (string, error) {
	var buf bytes.Buffer
	err := c.Render(ctx, &buf)
	return buf.String(), err
}

// handlerFunc is a handler that returns its error to the one error path.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.fail(w, r, err)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// plainNumber parses a number as people type it: an optional sign, digits
// with at most one decimal point, and an optional exponent (2.5, -1, 1e3).
// Go's other spellings (0x1p4, 1_000, Inf, NaN) are refused, so a value
// that is not what it looks like gets an error instead of a surprise.
func plainNumber(s string) (float64, error) {
	for _, r := range s {
		if (r < '0' || r > '9') && r != '.' && r != '-' && r != '+' && r != 'e' && r != 'E' {
			return 0, fmt.Errorf("%q is not a plain decimal number", s)
		}
	}
	return strconv.ParseFloat(s, 64)
}

// counted is n with the noun that agrees with it: "1 goal", "2 goals".
func counted(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func fmtTime(t time.Time) string { return t.UTC().Format("15:04 UTC, 2 Jan 2006") }

func isoTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
