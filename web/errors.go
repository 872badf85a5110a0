package web

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/gorilla/websocket"

	"capacitylab/input"
	"capacitylab/store"
)

// Error codes. Each maps to one HTTP status in statusOf.
const (
	CodeInvalid     = "invalid"     // the request is malformed or a value is not allowed
	CodeNotFound    = "not_found"   // no such page, lesson or block
	CodeConflict    = "conflict"    // the change is not allowed in the current state (a locked prediction)
	CodeTooLarge    = "too_large"   // the request body is over the limit
	CodeForbidden   = "forbidden"   // a cross-origin write was refused
	CodeMethod      = "method"      // the method is not allowed on this URL
	CodeBusy        = "busy"        // too many requests for now (a full run queue, join-code guessing); see RetryAfter
	CodeContent     = "content"     // the lesson files do not validate (author mode)
	CodeUnavailable = "unavailable" // this server does not offer the service now (no runner, shutting down)
	CodeInternal    = "internal"    // something failed on our side; details are only logged
)

// Error is the one error type handlers return to a learner: a code from the
// list above and a message that is safe to show. Any other error reaching
// the error path is logged and shown as CodeInternal with a generic message.
type Error struct {
	Code    string
	Message string
	// Fields holds one message per bad field of what was sent: a sweep's
	// form fields (POST /api/sweeps), a widget's parameters (the model
	// widgets, /api/models). The JSON body carries them at the top level
	// as "errors" ({field: message}) and in the error as "params" (a list
	// of {param, message} sorted by field); the HTML page as a list.
	Fields input.FieldErrors

	// Title, if set, heads the HTML error page instead of the status's name.
	Title string
	// Run is the learner's own run that stands in the way (409 from POST
	// /api/sweeps); the JSON body carries it at the top level as "run".
	Run string
	// RetryAfter, if positive, says when to try again: the response gets a
	// Retry-After header and "retry_after" in the JSON body, both in whole
	// seconds rounded up.
	RetryAfter time.Duration
	// Log, if set, is why the request was refused in the operator's terms
	// (an LTI launch's failed check, with the values compared): the error
	// path logs it with the request and never shows it.
	Log string
	// Links are the next steps the HTML page offers ("Choose two runs");
	// JSON leaves them out.
	Links []errorLink
}

// errorLink is a next step an error page offers.
type errorLink struct{ Label, URL string }

// Error returns the code and message.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

func errorf(code, msg string) *Error { return &Error{Code: code, Message: msg} }

// statusOf maps an error code to its HTTP status.
func statusOf(code string) int {
	switch code {
	case CodeInvalid:
		return http.StatusBadRequest
	case CodeNotFound:
		return http.StatusNotFound
	case CodeConflict:
		return http.StatusConflict
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeForbidden:
		return http.StatusForbidden
	case CodeMethod:
		return http.StatusMethodNotAllowed
	case CodeBusy:
		return http.StatusTooManyRequests
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// errorBody is the JSON form of an error response. Errors (the *Error's
// Fields), Run and RetryAfter are left out when empty.
type errorBody struct {
	Error      *errorJSON        `json:"error"`
	Errors     input.FieldErrors `json:"errors,omitempty"`
	Run        string            `json:"run,omitempty"`
	RetryAfter int               `json:"retry_after,omitempty"` // seconds
}

// errorJSON is an *Error as the JSON body's "error".
type errorJSON struct {
	Code    string      `json:"code"`
	Message string      `json:"message"`
	Params  []paramJSON `json:"params,omitempty"`
}

// paramJSON is one bad field in "params".
type paramJSON struct {
	Param   string `json:"param"`
	Message string `json:"message"`
}

// MarshalJSON writes e as a JSON body's "error" (errorJSON).
func (e *Error) MarshalJSON() ([]byte, error) { return json.Marshal(e.body(0).Error) }

// body is e as a JSON response's body.
func (e *Error) body(retrySecs int) errorBody {
	ej := &errorJSON{Code: e.Code, Message: e.Message}
	for _, name := range e.Fields.Names() {
		ej.Params = append(ej.Params, paramJSON{name, e.Fields[name]})
	}
	return errorBody{Error: ej, Errors: e.Fields, Run: e.Run, RetryAfter: retrySecs}
}

// retrySeconds is d in whole seconds, rounded up; 0 when d is not positive.
func retrySeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(math.Ceil(d.Seconds()))
}

// wantsJSON reports whether the response should be JSON: websocket URLs
// and API URLs always, except POST /api/sweeps from a plain browser form
// (the lab block's Run form works without script, prefersHTML); other
// URLs when the client asks for JSON before HTML (lesson.js does).
func wantsJSON(r *http.Request) bool {
	if strings.HasPrefix(r.URL.Path, "/ws/") || websocket.IsWebSocketUpgrade(r) {
		return true
	}
	if strings.HasPrefix(r.URL.Path, "/api/") {
		return r.URL.Path != "/api/sweeps" || !prefersHTML(r)
	}
	accept := r.Header.Get("Accept")
	j := strings.Index(accept, "application/json")
	if j < 0 {
		return false
	}
	h := strings.Index(accept, "text/html")
	return h < 0 || j < h
}

// fail is the one error path: it turns err into a status and renders it as
// JSON or as an HTML page. Only *Error messages reach the client; anything
// else is logged with the request and replaced by a generic message.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var e *Error
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &e):
	case errors.As(err, &tooBig):
		e = errorf(CodeTooLarge, "The request is too large: the limit is "+byteSize(tooBig.Limit)+".")
	case store.IsFull(err):
		// The disk has no room: nothing of this request was stored, and
		// nothing stored before is lost. Worth a retry later.
		s.log.ErrorContext(r.Context(), "request failed: the disk is full", "method", r.Method, "path", r.URL.Path, "err", err)
		e = &Error{Code: CodeUnavailable, Title: "The server's disk is full", RetryAfter: time.Minute,
			Message: "This could not be saved: the server's disk is full. Nothing you saved before is lost, and reading pages works. Try again in a few minutes; if it keeps happening, tell whoever runs this server."}
	case store.IsUnreachable(err):
		// The database is down or restarting: nothing of this request was
		// done that is not stored, and nothing stored is lost.
		s.log.ErrorContext(r.Context(), "request failed: the database cannot be reached", "method", r.Method, "path", r.URL.Path, "err", err)
		e = &Error{Code: CodeUnavailable, Title: "The database cannot be reached", RetryAfter: 10 * time.Second,
			Message: "The server cannot reach its database just now (it may be restarting). Nothing you saved before is lost. Try again in a few seconds."}
	default:
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		e = errorf(CodeInternal, "Something went wrong on our side. It has been logged; please try again.")
	}
	status := statusOf(e.Code)
	if status >= 500 && e.Code != CodeInternal && !store.IsFull(err) && !store.IsUnreachable(err) {
		s.log.WarnContext(r.Context(), "request error", "method", r.Method, "path", r.URL.Path, "code", e.Code)
	}
	if e.Log != "" {
		s.log.WarnContext(r.Context(), "request refused", "method", r.Method, "path", r.URL.Path, "code", e.Code, "why", e.Log)
	}
	secs := retrySeconds(e.RetryAfter)
	if secs == 0 && e.Code == CodeBusy {
		secs = 1 // a busy answer always says when to try again
	}
	if secs > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	if wantsJSON(r) {
		writeJSON(w, status, e.body(secs))
		return
	}
	var near []lessonLink
	if e.Code == CodeNotFound {
		near = s.closeLessons(r)
	}
	back := backLink(r)
	title := e.Title
	if title == "" {
		title = titleFor(status)
	}
	s.render(w, r, status, errorPage(s.page(r, title), status, e, back, near))
}

// backLink returns the lesson a failed lesson action came from, or "".
func backLink(r *http.Request) string {
	slug := chi.URLParam(r, "slug")
	id := chi.URLParam(r, "id")
	if slug == "" || r.Method == http.MethodGet {
		return ""
	}
	u := "/lessons/" + slug
	if id != "" {
		u += "#" + id
	}
	return u
}

// titleFor heads an error page whose *Error has no Title of its own: in
// words a learner reads, never the status's name.
func titleFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "That did not work"
	case http.StatusForbidden:
		return "Not allowed from here"
	case http.StatusNotFound:
		return "Page not found"
	case http.StatusMethodNotAllowed:
		return "That cannot be done on this page"
	case http.StatusConflict:
		return "That cannot be done now"
	case http.StatusRequestEntityTooLarge:
		return "Too much to send at once"
	case http.StatusTooManyRequests:
		return "Please wait a little"
	case http.StatusServiceUnavailable:
		return "Not available here"
	default:
		return "Something went wrong"
	}
}

func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return itoa(int(n>>20)) + " MiB"
	}
	if n >= 1<<10 && n%(1<<10) == 0 {
		return itoa(int(n>>10)) + " KiB"
	}
	return itoa(int(n)) + " bytes"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// retryText says a wait in words for the error page ("about 40 s", "about 3 min").
func retryText(d time.Duration) string {
	secs := retrySeconds(d)
	if secs < 120 {
		return "about " + itoa(secs) + " s"
	}
	return "about " + itoa((secs+59)/60) + " min"
}
