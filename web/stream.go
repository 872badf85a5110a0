package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/gorilla/websocket"

	"capacitylab/loadrun"
	"capacitylab/runner"
	"capacitylab/store"
	"capacitylab/wsconn"
)

// Websocket limits for GET /ws/runs/{id}.
const (
	// wsWriteWait bounds every write: a watcher that cannot take a message
	// in this time is dropped.
	wsWriteWait = 10 * time.Second
	// wsPongWait is how long the server waits for any frame (a pong at
	// least) before it drops the connection.
	wsPongWait = 60 * time.Second
	// wsPingPeriod is how often the server pings; under wsPongWait.
	wsPingPeriod = wsPongWait * 9 / 10
	// wsReadLimit caps a frame from the browser, which sends only control
	// frames.
	wsReadLimit = 512
	// wsCloseTooSlow is the close code sent to a watcher dropped because
	// it fell too far behind; it may reconnect with since = its last seq.
	wsCloseTooSlow = wsconn.CloseTooSlow
)

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
// the run's last event; wsCloseTooSlow for a watcher that fell behind;
// 1001 when the server stops). One goroutine reads (and discards) what the
// client sends, so pongs and close frames are seen; this one writes
// (wsconn.Pump, with the run's subscription as its source).
//
// With pace=real a finished run is replayed at the pace it ran (see
// pacedEvents), for learners who would rather not wait in the queue.
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
	var replay []runner.Event
	var sub *runner.Subscription
	var paced []pacedEvent
	switch pace := r.URL.Query().Get("pace"); pace {
	case "":
	case "real":
		if s.runner != nil {
			if snap, ok := s.runner.Get(id); ok && (snap.Status == store.RunQueued || snap.Status == store.RunRunning) {
				return errorf(CodeConflict, "The run is still live: watch it live rather than replayed.")
			}
		}
		stored, err := s.store.Run(r.Context(), id)
		if errors.Is(err, store.ErrNoRun) {
			return errorf(CodeNotFound, "There is no run "+id+".")
		}
		if err != nil {
			return err
		}
		paced = pacedEvents(stored)
		if since < len(paced) {
			paced = paced[since:]
		} else {
			paced = nil
		}
	default:
		return errorf(CodeInvalid, "pace="+pace+" is not allowed: want real (a recorded run replayed at the pace it ran), or leave it out.")
	}
	if paced != nil {
		// Replayed below, after the upgrade.
	} else if s.runner != nil {
		var err error
		replay, sub, err = s.runner.Subscribe(id, since)
		if err != nil && !errors.Is(err, runner.ErrNoRun) {
			return err
		}
	}
	if sub == nil && paced == nil {
		stored, err := s.store.Run(r.Context(), id)
		if errors.Is(err, store.ErrNoRun) {
			return errorf(CodeNotFound, "There is no run "+id+".")
		}
		if err != nil {
			return err
		}
		if replay, err = s.storedLog(r.Context(), settled(stored), since); err != nil {
			return err
		}
	} else if sub != nil {
		defer sub.Close()
	}

	up := websocket.Upgrader{CheckOrigin: sameHost, HandshakeTimeout: wsWriteWait}
	conn, err := up.Upgrade(hijacker{w}, r, nil)
	if err != nil {
		// Upgrade has answered the client already.
		s.log.InfoContext(r.Context(), "websocket upgrade failed", "run", id, "err", err)
		return nil
	}
	defer conn.Close()

	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		conn.SetReadLimit(wsReadLimit)
		conn.SetReadDeadline(time.Now().Add(wsPongWait))
		conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(wsPongWait)) })
		for {
			if _, _, err := conn.NextReader(); err != nil {
				return
			}
		}
	}()
	defer func() {
		conn.Close()
		<-readerDone
	}()

	var src wsconn.Source
	if paced != nil {
		q, stop := pace(paced)
		defer stop()
		src = q
	} else {
		var panel func(runner.Event) []byte
		if sub != nil {
			panel = s.withPanel(r.Context(), id)
		}
		src = newRunSource(replay, sub, since, panel)
	}
	wsconn.Pump(r.Context(), conn, src, wsconn.Config{WriteWait: wsWriteWait, PingPeriod: wsPingPeriod}, readerDone)
	return nil
}

// runSource is a run stream's wsconn.Source: the replayed events, then the
// subscription's live ones (nil: replay only), each event's JSON as it
// was logged. Its close frame is 1000 after the run's last event, or
// wsCloseTooSlow naming the last seq sent when the subscription was
// dropped.
type runSource struct {
	replay [][]byte
	sub    *runner.Subscription
	last   int           // the seq of the last event taken
	now    chan struct{} // closed: ready while replay waits or there is no subscription

	// panel makes the panel message for an event (nil: no panels; see
	// withPanel). A row's panel waits panelDelay behind it (pending, due
	// when wake closes).
	panel   func(runner.Event) []byte
	pending *runner.Event
	wake    chan struct{}
	timer   *time.Timer // closes wake
}

// panelDelay is how long a row's panel message waits behind the row: the
// rows go out to every watcher first, then the panels, which are twenty
// times their size. A class of a thousand gets its rows in some tens of
// milliseconds (BENCHMARKS); the panels follow.
const panelDelay = 150 * time.Millisecond

// newRunSource streams replay, then sub's events (sub nil: replay only).
// With panel set, row events and the last event are followed by a panel
// message (after the last replayed one, at once).
func newRunSource(replay []runner.Event, sub *runner.Subscription, since int, panel func(runner.Event) []byte) *runSource {
	s := &runSource{sub: sub, last: since, now: make(chan struct{}), panel: panel}
	close(s.now)
	var drawn *runner.Event
	for i, e := range replay {
		s.replay = append(s.replay, eventJSON(e))
		s.last = e.Seq
		if e.Kind == runner.KindRow || e.Kind.Terminal() {
			drawn = &replay[i]
		}
	}
	if drawn != nil && panel != nil {
		s.replay = append(s.replay, panel(*drawn))
	}
	return s
}

// withPanel makes a live run's panel messages: {"kind": "panel", "seq": S,
// "panel": HTML}, the run's panel (GET /runs/{id}/panel) as the server
// renders it after event S, so a page redraws its chart and rows from the
// stream instead of each watcher asking for them (a class of a thousand
// would ask at once, as the next window starts). It is made once per
// event and kept for every watcher. A failure is logged and sends a panel
// message without the panel, after which runs.js asks for it.
func (s *server) withPanel(ctx context.Context, id string) func(runner.Event) []byte {
	return func(e runner.Event) []byte {
		b, err := s.keptPanel(id+"/event/"+strconv.Itoa(e.Seq), func() ([]byte, bool, error) {
			v, err := s.runView(ctx, id, "", false)
			if err != nil {
				return nil, false, err
			}
			html, err := renderString(ctx, runPanel(v))
			if err != nil {
				return nil, false, err
			}
			b, err := json.Marshal(panelMessage{Kind: "panel", Seq: e.Seq, Panel: html})
			return b, err == nil, err
		})
		if err != nil {
			s.log.WarnContext(ctx, "run panel not sent", "run", id, "seq", e.Seq, "err", err)
			b, _ = json.Marshal(panelMessage{Kind: "panel", Seq: e.Seq})
		}
		return b
	}
}

// panelMessage is a run stream's panel message (see withPanel).
type panelMessage struct {
	Kind  string `json:"kind"`
	Seq   int    `json:"seq"`
	Panel string `json:"panel,omitempty"`
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

// Ready implements wsconn.Source. While a row's panel waits, it is ready
// when the panel is due (events that come meanwhile go out with it).
func (s *runSource) Ready() <-chan struct{} {
	if s.replay != nil || s.sub == nil {
		return s.now
	}
	if s.pending != nil {
		return s.wake
	}
	return s.sub.Ready()
}

// Take implements wsconn.Source.
func (s *runSource) Take() ([][]byte, bool, wsconn.End) {
	endOfRun := wsconn.End{Code: websocket.CloseNormalClosure, Text: "end of run"}
	if s.replay != nil || s.sub == nil {
		msgs := s.replay
		s.replay = nil
		return msgs, s.sub == nil, endOfRun
	}
	var msgs [][]byte
	if s.pending != nil {
		select {
		case <-s.wake:
			msgs = append(msgs, s.panel(*s.pending))
			s.pending = nil
		default:
		}
	}
	es, more := s.sub.Take()
	for i, e := range es {
		msgs = append(msgs, eventJSON(e))
		s.last = e.Seq
		switch {
		case s.panel == nil:
		case e.Kind.Terminal():
			// The last event: its panel goes at once, before the close.
			if s.pending != nil {
				s.timer.Stop()
				s.pending = nil
			}
			msgs = append(msgs, s.panel(e))
		case e.Kind == runner.KindRow:
			if s.pending != nil {
				s.timer.Stop() // this row's panel shows the earlier rows too
			}
			s.pending = &es[i]
			wake := make(chan struct{})
			s.wake = wake
			s.timer = time.AfterFunc(panelDelay, func() { close(wake) })
		}
	}
	if !more && s.sub.Dropped() {
		return msgs, true, wsconn.End{Code: wsCloseTooSlow, Text: "too slow: reconnect with since=" + strconv.Itoa(s.last)}
	}
	return msgs, !more, endOfRun
}

// storedLog is the events after since of a run the runner no longer holds
// in memory, as the store kept them: every event as it was logged and
// sent, with its seq. A run whose end was never logged (the server
// stopped, or was killed, while it was queued or running) ends with the
// terminal event the store's status says (interrupted unless it ended),
// numbered after the last stored event, which is after any event a
// watcher can have seen, since each is stored before it is sent.
func (s *server) storedLog(ctx context.Context, r store.Run, since int) ([]runner.Event, error) {
	last, kind, err := s.store.LastRunEvent(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	if last == 0 {
		// Saved before events were stored.
		replay := storedEvents(r)
		if since < len(replay) {
			return replay[since:], nil
		}
		return nil, nil
	}
	stored, err := s.store.RunEvents(ctx, r.ID, since)
	if err != nil {
		return nil, err
	}
	out := make([]runner.Event, 0, len(stored)+1)
	for _, e := range stored {
		out = append(out, runner.Event{Seq: e.Seq, Kind: runner.Kind(e.Kind), JSON: e.JSON})
	}
	if !runner.Kind(kind).Terminal() && last+1 > since {
		end := runner.Kind(r.Status)
		if !end.Terminal() {
			end = runner.KindInterrupted
		}
		var q runner.Request
		json.Unmarshal(r.Request, &q) // the runner wrote it; a run without one has no windows
		e := runner.Event{Seq: last + 1, Kind: end, At: r.EndedAt, WindowProgress: loadrun.WindowProgress{Window: len(r.Rows), Windows: q.Windows()}, Reason: r.Reason}
		e.JSON = eventJSON(e)
		out = append(out, e)
	}
	return out, nil
}

// storedEvents rebuilds the events of a run saved before events were
// stored (run_events) from its rows: a row event per window, then the
// terminal event. Sequence numbers count these events, from 1.
func storedEvents(r store.Run) []runner.Event {
	n := len(r.Rows)
	out := make([]runner.Event, 0, n+1)
	for i := range r.Rows {
		row := r.Rows[i]
		out = append(out, runner.Event{Seq: i + 1, Kind: runner.KindRow, At: r.EndedAt, WindowProgress: rowProgress(row, n), Row: &row})
	}
	kind := runner.Kind(r.Status)
	if !kind.Terminal() {
		kind = runner.KindInterrupted
	}
	out = append(out, runner.Event{Seq: n + 1, Kind: kind, At: r.EndedAt, WindowProgress: loadrun.WindowProgress{Window: n, Windows: n}, Reason: r.Reason})
	return out
}

// rowProgress is where a stored run's window stood when its row came: the
// row event's WindowProgress, without the elapsed time (not stored).
func rowProgress(row loadrun.Row, windows int) loadrun.WindowProgress {
	return loadrun.WindowProgress{Window: row.Window, Windows: windows, Rate: row.Offered, Clients: row.Clients, Seconds: row.Seconds}
}

// pacedEvent is an event of a replay and when to send it, from the
// replay's start.
type pacedEvent struct {
	at time.Duration
	e  runner.Event
}

// pacedEvents rebuilds a finished run as it unfolded: started, then for
// each window progress every loadrun.ProgressEvery (its counts interpolated
// evenly from the row: a replay shows pace, not the original arrivals)
// and its row when the window's seconds have passed, then the terminal
// event. Windows follow each other with runner.WindowOverhead between.
func pacedEvents(r store.Run) []pacedEvent {
	n := len(r.Rows)
	var out []pacedEvent
	add := func(at time.Duration, e runner.Event) {
		e.Seq = len(out) + 1
		e.At = r.StartedAt.Add(at)
		e.Windows = n
		out = append(out, pacedEvent{at: at, e: e})
	}
	seconds := 0.0
	if n > 0 {
		seconds = r.Rows[0].Seconds
	}
	add(0, runner.Event{Kind: runner.KindStarted, WindowProgress: loadrun.WindowProgress{Seconds: seconds}})
	var t time.Duration
	for i := range r.Rows {
		row := r.Rows[i]
		length := time.Duration(row.Seconds * float64(time.Second))
		for el := loadrun.ProgressEvery; el < length; el += loadrun.ProgressEvery {
			frac := float64(el) / float64(length)
			sent := int(math.Round(frac * float64(row.Sent)))
			at := rowProgress(row, n)
			at.ElapsedMS, at.Sent, at.Ended = float64(el.Milliseconds()), sent, sent
			add(t+el, runner.Event{Kind: runner.KindProgress, WindowProgress: at})
		}
		t += length
		add(t, runner.Event{Kind: runner.KindRow, WindowProgress: rowProgress(row, n), Row: &row})
		t += runner.WindowOverhead
	}
	kind := runner.Kind(r.Status)
	if !kind.Terminal() {
		kind = runner.KindInterrupted
	}
	add(t, runner.Event{Kind: kind, WindowProgress: loadrun.WindowProgress{Window: n}, Reason: r.Reason})
	return out
}

// pace hands a replay's events to a queue at their times, from a
// goroutine of its own, and ends the queue after the last; stop ends the
// goroutine early (the client went away or the server stops).
func pace(events []pacedEvent) (q *wsconn.Queue, stop func()) {
	q = wsconn.NewQueue(len(events) + 1)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		timer := time.NewTimer(0)
		defer timer.Stop()
		var start time.Time
		if len(events) > 0 {
			start = time.Now().Add(-events[0].at)
		}
		for _, pe := range events {
			timer.Reset(time.Until(start.Add(pe.at)))
			select {
			case <-timer.C:
			case <-done:
				return
			}
			q.Send(eventJSON(pe.e), "")
		}
		q.End(websocket.CloseNormalClosure, "end of run")
	}()
	return q, func() {
		close(done)
		<-finished
	}
}
