package wsconn

import (
	"context"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// CloseTooSlow is the close code for a client dropped because too many
// messages waited for it; it may reconnect and resume from the last
// message it saw.
const CloseTooSlow = 4000

// Config is the timing of a connection's writes.
type Config struct {
	WriteWait  time.Duration // bounds every write: a client that cannot take a message in this time is dropped
	PingPeriod time.Duration // how often to ping; under the reader's pong wait
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
			return closeWith(End{Code: websocket.CloseGoingAway, Text: "server stopping"})
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
