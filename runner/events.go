package runner

import (
	"encoding/json"
	"sync"
	"time"

	"capacitylab/loadrun"
)

// Kind names an Event.
type Kind string

// The kinds of events in a run's log. The last event of every run is one of
// done, failed, cancelled or interrupted.
const (
	KindQueued      Kind = "queued"      // waiting: position and estimated start (again whenever they change)
	KindStarted     Kind = "started"     // the lab child is up and the first window begins
	KindProgress    Kind = "progress"    // a window is running: counts so far
	KindRow         Kind = "row"         // a window ended: its whole row
	KindDone        Kind = "done"        // every window ran
	KindFailed      Kind = "failed"      // the run stopped on a fault; Reason says what to do
	KindCancelled   Kind = "cancelled"   // the learner cancelled it
	KindInterrupted Kind = "interrupted" // the server stopped while it was queued or running
)

// Terminal reports whether an event of this kind ends a run's log.
func (k Kind) Terminal() bool {
	switch k {
	case KindDone, KindFailed, KindCancelled, KindInterrupted:
		return true
	}
	return false
}

// Event is one entry of a run's log; the package doc specifies its JSON.
type Event struct {
	Seq  int       `json:"seq"`
	Kind Kind      `json:"kind"`
	At   time.Time `json:"at"`

	Position       int          `json:"position,omitempty"`       // queued: 1 = next to start
	EstimatedStart time.Time    `json:"estimated_start,omitzero"` // queued
	EstimatedEnd   time.Time    `json:"estimated_end,omitzero"`   // started
	Windows        int          `json:"windows,omitempty"`        // queued, started, progress, row, done
	Window         int          `json:"window"`                   // progress, row: index from 0; done: windows finished
	Rate           float64      `json:"rate,omitempty"`           // progress, row (open loop)
	Clients        int          `json:"clients,omitempty"`        // progress, row (closed loop)
	Seconds        float64      `json:"seconds,omitempty"`        // window length
	ElapsedMS      float64      `json:"elapsed_ms,omitempty"`     // progress: since the window began
	Sent           int          `json:"sent,omitempty"`           // progress
	Ended          int          `json:"ended,omitempty"`          // progress
	NotSent        int          `json:"not_sent,omitempty"`       // progress
	Row            *loadrun.Row `json:"row,omitempty"`            // row
	Reason         string       `json:"reason,omitempty"`         // failed, cancelled, interrupted

	// JSON is the event's JSON encoding, made once when it was logged, so
	// a thousand watchers cost one encoding, not a thousand.
	JSON []byte `json:"-"`
}

// eventLog is a run's events in order. Appending never blocks: each
// subscriber has a bounded buffer and is dropped when it is full.
type eventLog struct {
	mu     sync.Mutex
	events []Event
	subs   map[*Subscription]struct{}
	closed bool // a terminal event was appended
	buffer int
	now    func() time.Time
	drop   func() // called (under mu) when a subscriber is dropped; may be nil
}

func newEventLog(buffer int, now func() time.Time, drop func()) *eventLog {
	return &eventLog{subs: map[*Subscription]struct{}{}, buffer: buffer, now: now, drop: drop}
}

// subscribers is how many subscriptions are live.
func (l *eventLog) subscribers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.subs)
}

// append numbers e (seq from 1), stamps it and hands it to every
// subscriber. After a terminal event the subscribers' channels are closed
// and further appends are ignored.
func (l *eventLog) append(e Event) Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return Event{}
	}
	e.Seq = len(l.events) + 1
	e.At = l.now().UTC()
	e.JSON, _ = json.Marshal(e) // cannot fail: no channels, funcs or cycles
	l.events = append(l.events, e)
	for s := range l.subs {
		select {
		case s.c <- e:
		default:
			s.dropped = true
			delete(l.subs, s)
			close(s.c)
			if l.drop != nil {
				l.drop()
			}
		}
	}
	if e.Kind.Terminal() {
		l.closed = true
		for s := range l.subs {
			delete(l.subs, s)
			close(s.c)
		}
	}
	return e
}

// last returns the last event, if any.
func (l *eventLog) last() (Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) == 0 {
		return Event{}, false
	}
	return l.events[len(l.events)-1], true
}

// subscribe returns the events after seq since and a subscription that
// receives every later one.
func (l *eventLog) subscribe(since int) ([]Event, *Subscription) {
	l.mu.Lock()
	defer l.mu.Unlock()
	since = max(since, 0)
	var replay []Event
	if since < len(l.events) {
		replay = append(replay, l.events[since:]...)
	}
	s := &Subscription{c: make(chan Event, l.buffer), log: l}
	if l.closed {
		close(s.c)
	} else {
		l.subs[s] = struct{}{}
	}
	return replay, s
}

// Subscription receives a run's live events. Its channel is closed after
// the run's terminal event, when Close is called, or when the subscriber
// fell so far behind that its buffer filled (Dropped then reports true).
type Subscription struct {
	c       chan Event
	log     *eventLog
	dropped bool // guarded by log.mu
}

// C returns the channel of live events.
func (s *Subscription) C() <-chan Event { return s.c }

// Dropped reports whether the subscription was ended because its reader
// was too slow. Call it after C is closed.
func (s *Subscription) Dropped() bool {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return s.dropped
}

// Close ends the subscription. It is safe to call more than once and after
// the channel was closed.
func (s *Subscription) Close() {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	if _, ok := s.log.subs[s]; ok {
		delete(s.log.subs, s)
		close(s.c)
	}
}
