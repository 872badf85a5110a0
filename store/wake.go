package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Wake-ups: how one server learns at once that a run's events or a class
// session's votes were written, by itself or (on Postgres) by another
// server on the same database. See the package doc ("Wake-ups") for how a
// stream uses them.

// Wake is one wake-up of a Watch. Wake-ups are hints to read the store
// again, never the data itself: several that come before the reader takes
// them are merged into one (the highest Seq, Missed if any was).
type Wake struct {
	// Seq is, for a run, the highest sequence number of its events
	// written that this wake-up tells of (0 when it tells of none, as a
	// Missed one alone); for a class session, 0.
	Seq int
	// Missed says that wake-ups may have been lost: the store's listening
	// connection to Postgres was lost and is back (or was not yet
	// listening when the Watch began). Read the store again from the
	// position you last read; everything written is there.
	Missed bool
}

// Watch delivers wake-ups for one run or one class session until Close.
type Watch struct {
	c     chan Wake
	mu    sync.Mutex // orders deliveries (merge with the one waiting)
	hub   *wakeHub
	key   string
	close sync.Once
}

// C receives the wake-ups, in order; one waiting is merged with the next.
func (w *Watch) C() <-chan Wake { return w.c }

// Close stops the wake-ups: none is received after it, not even one
// that was waiting. The channel is not closed.
func (w *Watch) Close() {
	w.close.Do(func() {
		w.hub.remove(w) // no deliver runs on w after this
		select {
		case <-w.c:
		default:
		}
	})
}

// deliver merges wk into the wake-up waiting on w.c, if any, and puts the
// result there. It never blocks: only deliver fills w.c, under w.mu, and
// it has just emptied it.
func (w *Watch) deliver(wk Wake) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case old := <-w.c:
		wk.Seq = max(wk.Seq, old.Seq)
		wk.Missed = wk.Missed || old.Missed
	default:
	}
	w.c <- wk
}

// WatchRun starts delivering wake-ups for the events of run id: one after
// every write of its events (WriteRun, AddRunEvent) from now on, by this Store or, on
// Postgres, any Store on the same database (and schema).
func (s *Store) WatchRun(id string) *Watch { return s.wakes.add(wakeKey("run", id)) }

// WatchClass starts delivering wake-ups for the votes of class session
// code: one after every batch of its votes stored (SaveClassVotes).
func (s *Store) WatchClass(code string) *Watch { return s.wakes.add(wakeKey("class", code)) }

// WatchClassPresence starts delivering wake-ups for the presence of class
// session code's participants across servers: one after every change of
// it (SetClassPresence, ExpireClassPresence, ForgetClassPresence), apart
// from the session's other changes, so that a class connecting does not
// make every server read the whole session, nor a vote its presence.
func (s *Store) WatchClassPresence(code string) *Watch {
	return s.wakes.add(wakeKey("presence", code))
}

// wakeKey is a topic and id as the wake-up's payload names them: "run
// r-123", "class ABC234".
func wakeKey(topic, id string) string { return topic + " " + id }

// wakeHub is a Store's watches by key and, on Postgres, its listener.
type wakeHub struct {
	mu      sync.Mutex
	watches map[string]map[*Watch]struct{}
	// On Postgres (listen non-nil): whether the listener is listening
	// now, and the listener, started by the first Watch.
	listening bool
	listen    *pgListener
	started   bool
	closed    bool // the Store is closed: no Watch starts the listener
}

// close stops the listener, if a Watch started it, and waits for it.
func (h *wakeHub) close() {
	if h.listen == nil {
		return
	}
	h.mu.Lock()
	started := h.started
	h.closed = true
	h.mu.Unlock()
	h.listen.close(started)
}

func (h *wakeHub) add(key string) *Watch {
	w := &Watch{c: make(chan Wake, 1), hub: h, key: key}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watches == nil {
		h.watches = map[string]map[*Watch]struct{}{}
	}
	if h.watches[key] == nil {
		h.watches[key] = map[*Watch]struct{}{}
	}
	h.watches[key][w] = struct{}{}
	// On Postgres, what is written before the listener listens wakes
	// nobody: the Watch is told, with Missed, when it begins to.
	if h.listen != nil {
		if !h.started && !h.closed {
			h.started = true
			go h.listen.run(h)
		}
	}
	return w
}

func (h *wakeHub) remove(w *Watch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.watches[w.key], w)
	if len(h.watches[w.key]) == 0 {
		delete(h.watches, w.key)
	}
}

// wake delivers a wake-up to every Watch of key.
func (h *wakeHub) wake(key string, wk Wake) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watches[key] {
		w.deliver(wk)
	}
}

// setListening records whether the listener listens; when it begins to,
// every Watch is told that it may have missed wake-ups (those written
// while nobody listened, or before it first did).
func (h *wakeHub) setListening(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listening = on
	if !on {
		return
	}
	for _, ws := range h.watches {
		for w := range ws {
			w.deliver(Wake{Missed: true})
		}
	}
}

// parseWake reads a wake-up as Postgres carries it: "run
// <id> <seq>", "class <code>" or "presence <code>".
func parseWake(payload string) (key string, wk Wake, ok bool) {
	topic, rest, ok := strings.Cut(payload, " ")
	switch {
	case !ok:
		return "", Wake{}, false
	case topic == "class", topic == "presence":
		return wakeKey(topic, rest), Wake{}, true
	case topic == "run":
		i := strings.LastIndexByte(rest, ' ')
		if i < 0 {
			return "", Wake{}, false
		}
		seq, err := strconv.Atoi(rest[i+1:])
		if err != nil {
			return "", Wake{}, false
		}
		return wakeKey(topic, rest[:i]), Wake{Seq: seq}, true
	}
	return "", Wake{}, false
}

// wakeChannelPrefix and the schema's name are the Postgres notification channel of the store's schema:
// stores on different schemas of one database (the tests') do not wake
// each other.
const wakeChannelPrefix = "capacitylab_wake:"

// Listener timing.
const (
	// wakeCheckEvery is how long the listener waits for a notification
	// before it checks, with a round trip, that its connection is alive
	// (a dead peer behind a silent network sends nothing).
	wakeCheckEvery = 15 * time.Second
	// wakeCheckTimeout bounds that check.
	wakeCheckTimeout = 5 * time.Second
	// wakeRetryMin and wakeRetryMax bound the wait between attempts to
	// connect again, doubling from one to the other.
	wakeRetryMin = 50 * time.Millisecond
	wakeRetryMax = 5 * time.Second
)

// pgListener keeps one connection of its own to Postgres (not from the
// pool: LISTEN belongs to a session) listening on the schema's wake-up
// channel, and connects again, with back-off, whenever it is lost.
type pgListener struct {
	cfg   *pgx.ConnConfig
	ctx   context.Context // ends when the Store closes
	stop  context.CancelFunc
	done  chan struct{}
	errMu sync.Mutex
	err   error // why it is not listening, nil while it is
	// retryMin is the first wait before connecting again: wakeRetryMin
	// (a test makes it longer to write while nobody listens).
	retryMin time.Duration
}

func newPGListener(cfg *pgx.ConnConfig) *pgListener {
	cfg = cfg.Copy()
	cfg.RuntimeParams["application_name"] = "capacitylab-wake"
	ctx, stop := context.WithCancel(context.Background())
	return &pgListener{cfg: cfg, ctx: ctx, stop: stop, done: make(chan struct{}), err: errors.New("not connected yet"), retryMin: wakeRetryMin}
}

// close stops the listener, if it was started, and waits for it.
func (l *pgListener) close(started bool) {
	l.stop()
	if started {
		<-l.done
	}
}

func (l *pgListener) setErr(err error) {
	l.errMu.Lock()
	l.err = err
	l.errMu.Unlock()
}

// run connects, listens and hands notifications to h until the Store
// closes.
func (l *pgListener) run(h *wakeHub) {
	defer close(l.done)
	retry := l.retryMin
	for {
		err := l.session(h)
		l.setErr(err)
		h.setListening(false)
		if l.ctx.Err() != nil {
			return
		}
		if errors.Is(err, errWasListening) {
			retry = l.retryMin
		}
		select {
		case <-l.ctx.Done():
			return
		case <-time.After(retry):
		}
		retry = max(l.retryMin, min(retry*2, wakeRetryMax))
	}
}

// errWasListening wraps the error that ended a connection that had been
// listening: the next attempt waits only the shortest time.
var errWasListening = errors.New("the wake-up connection was lost")

// session is one connection: connect, LISTEN, then wait for
// notifications until the connection fails.
func (l *pgListener) session(h *wakeHub) error {
	conn, err := pgx.ConnectConfig(l.ctx, l.cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var schema string
	if err := conn.QueryRow(l.ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return err
	}
	if _, err := conn.Exec(l.ctx, "LISTEN "+pgx.Identifier{wakeChannelPrefix + schema}.Sanitize()); err != nil {
		return err
	}
	l.setErr(nil)
	h.setListening(true)
	for {
		wait, cancel := context.WithTimeout(l.ctx, wakeCheckEvery)
		n, err := conn.WaitForNotification(wait)
		cancel()
		switch {
		case err == nil:
			if key, wk, ok := parseWake(n.Payload); ok {
				h.wake(key, wk)
			}
		case l.ctx.Err() != nil:
			return l.ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			check, cancel := context.WithTimeout(l.ctx, wakeCheckTimeout)
			err := conn.Ping(check)
			cancel()
			if err != nil {
				return fmt.Errorf("%w: %s", errWasListening, oneLine(err))
			}
		default:
			return fmt.Errorf("%w: %s", errWasListening, oneLine(err))
		}
	}
}

// wakeSQL is the statement that sends a wake-up on Postgres: delivered
// when the transaction it runs in commits, to every server listening on
// the schema's channel, in commit order. Within one transaction
// identical payloads are delivered once.
const wakeSQL = `SELECT pg_notify('` + wakeChannelPrefix + `' || current_schema(), ?)`

// WakeErr is nil while wake-ups from other servers can arrive: always on
// SQLite (one process writes the file), on Postgres while the listener
// listens or before any Watch has started it. Otherwise it is why the
// listener is not listening (it is connecting again).
func (s *Store) WakeErr() error {
	h := s.wakes
	h.mu.Lock()
	started, listening := h.started, h.listening
	h.mu.Unlock()
	if h.listen == nil || !started || listening {
		return nil
	}
	h.listen.errMu.Lock()
	defer h.listen.errMu.Unlock()
	return h.listen.err
}
