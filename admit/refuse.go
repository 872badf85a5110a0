package admit

import (
	"io"
	"net/http"
	"strconv"
)

// A refusal, whichever policy refuses and wherever (at arrival or
// dropped from the queue), is the lab door's answer: 503 with Retry-After
// and the body RefusalBody, and the connection closed.
const (
	// RetryAfter is the Retry-After header (whole seconds) a refused
	// caller is given.
	RetryAfter = "1"
	// RefusalBody is the body of a refusal.
	RefusalBody = "queue full\n"
)

// Refuse writes the refusal on an HTTP handler's w: what the lab's door
// writes on the wire itself (package labsvc), through net/http.
func Refuse(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Connection", "close")
	h.Set("Retry-After", RetryAfter)
	h.Set("Content-Length", strconv.Itoa(len(RefusalBody)))
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, RefusalBody)
}
