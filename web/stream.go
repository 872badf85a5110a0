package web

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"capacitylab/runner"
	"capacitylab/wsconn"
)

// runStreamReadLimit caps a frame from a run stream's client, which sends
// only control frames. The stream's timing and close codes are package
// wsconn's (wsconn.DefaultConfig), as every websocket's of the server.
const runStreamReadLimit = 512

// sameHost is the websocket Origin check: a browser's Origin must name the
// host the request was sent to. Clients that send no Origin (not browsers)
// are allowed.
func sameHost(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

// hijacker lets gorilla/websocket reach the connection through the
// middleware's response writer wrappers (http.ResponseController follows
// their Unwrap methods).
type hijacker struct {
	http.ResponseWriter
}

func (h hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(h.ResponseWriter).Hijack()
}

// streamRun is GET /ws/runs/{id}?since=N: the run's events after seq N as
// JSON text messages, then the live ones, then a close frame (1000 after
// the run's last event; wsconn.CloseTooSlow for a watcher that fell
// behind; 1001 when the server stops). One goroutine reads (and discards)
// what the client sends, so pongs and close frames are seen; this one
// writes (wsconn.Pump, with the stream's source).
//
// The events come from one of three sources, chosen before the upgrade so
// that a run that does not exist is a plain 404: the runner's log of a run
// it holds (liveStream), the store's of one it no longer holds
// (storedStream), or, with pace=real, a finished run replayed at the pace
// it ran (replayStream), for learners who would rather not wait in the
// queue.
func (s *server) streamRun(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	since := 0
	if v := r.URL.Query().Get("since"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errorf(CodeInvalid, "since="+v+" is not allowed: want the last sequence number you saw, a whole number of 0 or more.")
		}
		since = n
	}
	if !sameHost(r) {
		return errorf(CodeForbidden, "Run streams may only be opened from pages of this site.")
	}
	var open streamOpener
	var err error
	switch pace := r.URL.Query().Get("pace"); pace {
	case "":
		open, err = s.liveStream(r.Context(), id, since)
		if open == nil && err == nil {
			open, err = s.storedStream(r.Context(), id, learnerID(r), since)
		}
	case "real":
		open, err = s.replayStream(r.Context(), id, learnerID(r), since)
	default:
		return errorf(CodeInvalid, "pace="+pace+" is not allowed: want real (a recorded run replayed at the pace it ran), or leave it out.")
	}
	if err != nil {
		return err
	}
	s.serveStream(w, r, id, open)
	return nil
}

// streamOpener starts a run stream's source once the websocket is up;
// done releases what it holds when the stream ends.
type streamOpener func() (src wsconn.Source, done func())

// serveStream upgrades the request to a websocket and pumps the stream
// open starts into it until it ends or the client goes.
func (s *server) serveStream(w http.ResponseWriter, r *http.Request, id string, open streamOpener) {
	cfg := wsconn.DefaultConfig()
	src, done := open()
	defer done()
	conn, err := wsconn.Upgrade(hijacker{w}, r, sameHost, cfg)
	if err != nil {
		// Upgrade has answered the client already.
		s.log.InfoContext(r.Context(), "websocket upgrade failed", "run", id, "err", err)
		return
	}
	defer conn.Close()
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		wsconn.Discard(conn, runStreamReadLimit, cfg)
	}()
	defer func() {
		conn.Close()
		<-readerDone
	}()
	wsconn.Pump(r.Context(), conn, src, cfg, readerDone)
}

// eventJSON is e's JSON: as logged, or encoded now for events rebuilt from
// the store.
func eventJSON(e runner.Event) []byte {
	if e.JSON != nil {
		return e.JSON
	}
	b, _ := json.Marshal(e) // cannot fail: no channels, funcs or cycles
	return b
}
