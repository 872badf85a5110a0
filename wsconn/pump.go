package wsconn

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Timing of every websocket connection of the server, run streams and
// class sessions alike (DefaultConfig).
const (
	// WriteWait bounds every write (and the upgrade's handshake): a client
	// that cannot take a message in this time is dropped, without a close
	// frame.
	WriteWait = 10 * time.Second
	// PongWait is how long the server waits for any frame from a client (a
	// pong at least) before it drops the connection.
	PongWait = 60 * time.Second
	// PingPeriod is how often the server pings: under PongWait, so that a
	// live client's pong always comes in time.
	PingPeriod = PongWait * 9 / 10
	// CloseGrace is how long a client has to answer the server's close
	// frame before its socket is closed.
	CloseGrace = time.Second
)

// Close codes the server sends. Each protocol (package web's run streams,
// package classroom's sessions) says which it uses and what the reason
// text holds.
const (
	// CloseEnd: the stream is over (websocket's normal closure, 1000).
	CloseEnd = websocket.CloseNormalClosure
	// CloseGoingAway: the server stops (1001).
	CloseGoingAway = websocket.CloseGoingAway
	// ClosePolicy: the connection is refused by a rule, which the reason
	// names (1008).
	ClosePolicy = websocket.ClosePolicyViolation
	// CloseTooBig: the client sent a message over the read limit (1009).
	CloseTooBig = websocket.CloseMessageTooBig
	// CloseTooSlow: the client was dropped because too many messages
	// waited for it; it may reconnect and resume from the last message it
	// saw (4000, in the range for applications).
	CloseTooSlow = 4000
)

// Config is the timing of a connection: DefaultConfig for every connection
// of the server; tests shorten it.
type Config struct {
	WriteWait  time.Duration // bounds every write: a client that cannot take a message in this time is dropped
	PongWait   time.Duration // how long a connection may send nothing (not even a pong) before it is dropped
	PingPeriod time.Duration // how often to ping; under PongWait
}

// DefaultConfig is the timing of every websocket connection of the server.
func DefaultConfig() Config {
	return Config{WriteWait: WriteWait, PongWait: PongWait, PingPeriod: PingPeriod}
}

// Upgrade upgrades r to a websocket connection within cfg.WriteWait,
// allowing the request when checkOrigin does. On failure it has answered
// the client already.
func Upgrade(w http.ResponseWriter, r *http.Request, checkOrigin func(*http.Request) bool, cfg Config) (*websocket.Conn, error) {
	up := websocket.Upgrader{CheckOrigin: checkOrigin, HandshakeTimeout: cfg.WriteWait}
	return up.Upgrade(w, r, nil)
}

// Refuse closes a connection the server will not serve with a close
// frame of code and text (written within cfg.WriteWait).
func Refuse(ws *websocket.Conn, code int, text string, cfg Config) {
	ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(cfg.WriteWait))
	ws.Close()
}

// Discard reads and discards what the client sends, for a connection
// that only writes: frames of at most limit bytes, each (a pong at least)
// within cfg.PongWait of the last, so pongs and close frames are seen. It
// returns when the connection fails or closes.
func Discard(ws *websocket.Conn, limit int64, cfg Config) {
	ws.SetReadLimit(limit)
	ws.SetReadDeadline(time.Now().Add(cfg.PongWait))
	ws.SetPongHandler(func(string) error { return ws.SetReadDeadline(time.Now().Add(cfg.PongWait)) })
	for {
		if _, _, err := ws.NextReader(); err != nil {
			return
		}
	}
}

// End is how a connection ends: the close frame's code and reason.
type End struct {
	Code int
	Text string
}

// Source is what a Pump writes.
type Source interface {
	// Ready receives when messages wait or the source ended.
	Ready() <-chan struct{}
	// Take returns the messages waiting, in order, and, once the source
	// ended, true and how to close (after writing these).
	Take() (msgs [][]byte, ended bool, end End)
}

// Pump writes what src hands it to ws, in order, and pings every
// cfg.PingPeriod, until src ends (it then writes the close frame src
// names), ctx is done (close 1001 "server stopping"), gone is closed (the
// client went away: no close frame) or a write fails. It reports whether
// it ended with a close frame; if not, the caller should close ws. Pump is
// the connection's only writer of data frames (gorilla/websocket allows
// one).
func Pump(ctx context.Context, ws *websocket.Conn, src Source, cfg Config, gone <-chan struct{}) bool {
	ping := time.NewTicker(cfg.PingPeriod)
	defer ping.Stop()
	closeWith := func(e End) bool {
		msg := websocket.FormatCloseMessage(e.Code, e.Text)
		return ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(cfg.WriteWait)) == nil
	}
	for {
		select {
		case <-src.Ready():
			msgs, ended, end := src.Take()
			// One deadline for the batch: WriteWait bounds how long the
			// client may take to accept what was waiting for it.
			ws.SetWriteDeadline(time.Now().Add(cfg.WriteWait))
			for _, m := range msgs {
				if ws.WriteMessage(websocket.TextMessage, m) != nil {
					return false
				}
			}
			if ended {
				return closeWith(end)
			}
		case <-ping.C:
			if ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(cfg.WriteWait)) != nil {
				return false
			}
		case <-gone:
			return false
		case <-ctx.Done():
			return closeWith(End{Code: CloseGoingAway, Text: "server stopping"})
		}
	}
}

// Queue is a Source of text messages with a limit on how many may wait.
// Send, End and Kick never block, so they may be called under a lock.
type Queue struct {
	limit int
	ready chan struct{}

	mu    sync.Mutex
	msgs  [][]byte
	ended bool
	end   End
}

// NewQueue returns an empty queue that lets at most limit messages wait.
func NewQueue(limit int) *Queue {
	return &Queue{limit: max(limit, 1), ready: make(chan struct{}, 1)}
}

func (q *Queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Send queues msg. When limit messages wait already, the client is too
// slow: the queue is emptied and ends with CloseTooSlow and text. It
// reports whether msg was queued.
func (q *Queue) Send(msg []byte, text string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ended {
		return false
	}
	if len(q.msgs) >= q.limit {
		q.msgs, q.ended, q.end = nil, true, End{Code: CloseTooSlow, Text: text}
		q.signal()
		return false
	}
	q.msgs = append(q.msgs, msg)
	q.signal()
	return true
}

// Room reports how many more messages may wait before the client is too
// slow.
func (q *Queue) Room() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.limit - len(q.msgs)
}

// End ends the queue after the messages waiting, with a close frame of
// code and text. Only the first End or Kick counts.
func (q *Queue) End(code int, text string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.ended {
		q.ended, q.end = true, End{Code: code, Text: text}
		q.signal()
	}
}

// Kick ends the queue at once: the messages waiting are dropped and the
// connection is closed with code and text. Only the first End or Kick
// counts.
func (q *Queue) Kick(code int, text string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.ended {
		q.msgs, q.ended, q.end = nil, true, End{Code: code, Text: text}
		q.signal()
	}
}

// Ended reports whether End or Kick was called or the client was too
// slow.
func (q *Queue) Ended() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ended
}

// Ready implements Source.
func (q *Queue) Ready() <-chan struct{} { return q.ready }

// Take implements Source.
func (q *Queue) Take() ([][]byte, bool, End) {
	q.mu.Lock()
	defer q.mu.Unlock()
	msgs := q.msgs
	q.msgs = nil
	return msgs, q.ended, q.end
}
