package runner

import (
	"cmp"
	"encoding/json"
	"runtime"
	"slices"
	"sync"
	"time"

	"capacitylab/result"
	"capacitylab/store"
)

// Kind names an Event.
type Kind string

// The kinds of events in a run's log. The last event of every run is one of
// done, failed, cancelled or interrupted.
const (
	KindQueued      Kind = "queued"      // waiting: position and estimated start (again whenever they change)
	KindStarted     Kind = "started"     // the lab and load children are up and the first window begins
	KindProgress    Kind = "progress"    // a window is running: counts so far
	KindKnob        Kind = "knob"        // a knob change was made: Change, at elapsed_ms into the window
	KindSample      Kind = "sample"      // a run over time: one second of a window (Sample)
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

	Position       int       `json:"position,omitempty"`       // queued: 1 = next to start
	EstimatedStart time.Time `json:"estimated_start,omitzero"` // queued
	EstimatedEnd   time.Time `json:"estimated_end,omitzero"`   // started

	// WindowProgress is where the sweep is: windows (queued, started,
	// progress, row, done), window (progress, row: from 0; done: windows
	// finished), rate or clients and seconds, and the counts so far
	// (progress, row), as the load child reported them.
	result.WindowProgress

	Row    *result.Row    `json:"row,omitempty"`    // row
	Sample *result.Sample `json:"sample,omitempty"` // sample
	Change string         `json:"change,omitempty"` // knob: the change made, as result.KnobChange writes it ("30s:WAIT_MS=2000")
	Reason string         `json:"reason,omitempty"` // failed, cancelled, interrupted

	// JSON is the event's JSON encoding, made once when it was logged, so
	// a thousand watchers cost one encoding, not a thousand.
	JSON []byte `json:"-"`
}

// StoreEvent is e numbered seq and stamped at, as the store keeps it: for
// the events a process other than the run's runner appends to its stored
// log (package fleet: a queued run's position, a cancel before it
// started, "runner lost").
func StoreEvent(e Event, seq int, at time.Time) store.RunEvent {
	e.Seq, e.At = seq, at.UTC()
	js, _ := json.Marshal(e) // cannot fail: no channels, funcs or cycles
	return store.RunEvent{Seq: seq, Kind: string(e.Kind), JSON: js}
}

// QueuedEvent is a queued run's event: its position (1 = next to start)
// and estimated start.
func QueuedEvent(q Request, position int, start time.Time) Event {
	return Event{Kind: KindQueued, Position: position, EstimatedStart: start, WindowProgress: q.at()}
}

// fanoutChunk is how many subscribers append wakes before it lets the
// goroutines it woke run (runtime.Gosched). Waking a thousand watchers'
// writers at once would queue them all ahead of whatever else the server
// runs (the load generator is in a process of its own since package
// measure); in chunks, a goroutine waits behind at most about this many
// writes.
const fanoutChunk = 32

// eventLog is a run's events in order. Appending never blocks: each
// subscriber has a bounded queue and is dropped when it is full.
//
// With a store (write set), an appended event is numbered at once and
// handed to watchers only once it is stored: a writer goroutine takes
// every event waiting (at most batch of them) and stores them in one
// write with whatever rides with them (a window's records and row, the
// run's end), then hands them out in order; events appended meanwhile
// wait for the next write. So the store holds every seq a watcher can
// have seen, and a run's events cost one commit per write, not one each.
// When a write fails for good, the log ends: the events waiting are
// dropped, and watchers get a failed event in their place (seq the first
// not stored) that says storing failed (failEvent).
type eventLog struct {
	mu      sync.Mutex
	written *sync.Cond // on mu: broadcast when a write ends
	events  []Event    // handed out, in seq order
	seq     int        // the last seq numbered: a run claimed from the store (RunClaimed) continues its stored log
	subs    map[*Subscription]struct{}
	closing bool // a terminal event was numbered: nothing more is appended
	closed  bool // a terminal event was handed out
	buffer  int
	now     func() time.Time
	drop    func() // called when a subscriber is dropped; may be nil

	// write stores a batch of events, in order, with what rides with
	// them, in one write; nil: nothing is stored.
	write   func([]pending) error
	batch   int                                // most events one write carries; 0: every one waiting
	failed  func(err error, first Event) Event // the event that ends the log when a write fails (its kind failed)
	pending []pending                          // numbered, waiting for the writer
	writing bool                               // the writer goroutine runs
	stored  int                                // the last seq stored
	err     error                              // why the log ended unstored; nil while writes succeed

	fanout  sync.Mutex
	targets []*Subscription // reused by append, under fanout
}

// pending is an event numbered and waiting to be stored, with what is
// stored in the same write.
type pending struct {
	e       Event
	records []result.Record // a finished window's, with its row event
	row     *result.Row     // the same
	end     *store.Run      // the run's final state, with its terminal event
}

func newEventLog(buffer int, now func() time.Time, drop func()) *eventLog {
	l := &eventLog{subs: map[*Subscription]struct{}{}, buffer: buffer, now: now, drop: drop}
	l.written = sync.NewCond(&l.mu)
	return l
}

// subscribers is how many subscriptions are live.
func (l *eventLog) subscribers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.subs)
}

// append numbers e (seq from 1), stamps it and, once it is stored (at
// once without a store), hands it to every subscriber, in chunks of
// fanoutChunk (see there). After a terminal event every subscription ends
// once its queue is taken, and further appends are ignored (the Event
// returned is then the zero Event).
func (l *eventLog) append(e Event) Event { return l.add(pending{e: e}) }

// add is append with what is stored with the event.
func (l *eventLog) add(p pending) Event {
	l.mu.Lock()
	if l.closing || l.closed {
		l.mu.Unlock()
		return Event{}
	}
	l.seq++
	e := p.e
	e.Seq = l.seq
	e.At = l.now().UTC()
	e.JSON, _ = json.Marshal(e) // cannot fail: no channels, funcs or cycles
	l.closing = e.Kind.Terminal()
	if l.write == nil {
		l.publish(e)
		return e
	}
	p.e = e
	l.pending = append(l.pending, p)
	if !l.writing {
		l.writing = true
		go l.writer()
	}
	l.mu.Unlock()
	return e
}

// writer stores the waiting events, a batch at a time, and hands each
// batch out once it is stored, until none waits.
func (l *eventLog) writer() {
	l.mu.Lock()
	for len(l.pending) > 0 {
		n := len(l.pending)
		if l.batch > 0 {
			n = min(n, l.batch)
		}
		batch := l.pending[:n:n]
		l.mu.Unlock()
		err := l.write(batch)
		l.mu.Lock()
		if err != nil {
			l.err, l.pending, l.closing = err, nil, true
			end := l.failed(err, batch[0].e)
			end.Seq, end.At = batch[0].e.Seq, l.now().UTC()
			end.JSON, _ = json.Marshal(end)
			l.publish(end)
			l.mu.Lock()
			break
		}
		l.pending = l.pending[n:]
		for _, p := range batch {
			l.publish(p.e)
			l.mu.Lock()
		}
		l.stored = batch[n-1].e.Seq
		l.written.Broadcast()
	}
	l.writing = false
	l.written.Broadcast()
	l.mu.Unlock()
}

// wait returns once event seq is stored (nil) or the log ended because
// a write failed (that write's error).
func (l *eventLog) wait(seq int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.write != nil && l.stored < seq && l.err == nil {
		l.written.Wait()
	}
	return l.err
}

// failure is why the log ended unstored (nil while writes succeed).
func (l *eventLog) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// publish keeps e, numbered already, and hands it to every subscriber
// (see append). It is called with l.mu held and releases it.
// Subscribers are handed events in seq order: the log's lock is held
// until the hand-out lock is taken, and the hand-out happens outside the
// log's lock so subscribing and closing never wait for it.
func (l *eventLog) publish(e Event) {
	l.events = append(l.events, e)
	terminal := e.Kind.Terminal()
	if terminal {
		l.closed = true
	}
	l.fanout.Lock()
	targets := l.targets[:0]
	for s := range l.subs {
		// A subscription dropped by an earlier hand-out leaves here:
		// the hand-out itself may not take l.mu (lock order: l.mu, then
		// fanout).
		if terminal || s.hasEnded() {
			delete(l.subs, s)
		}
		targets = append(targets, s)
	}
	l.mu.Unlock()
	defer l.fanout.Unlock()

	for i, s := range targets {
		if i > 0 && i%fanoutChunk == 0 {
			runtime.Gosched()
		}
		if s.push(e, l.buffer, terminal) == pushDropped && l.drop != nil {
			l.drop()
		}
	}
	clear(targets)
	l.targets = targets
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
	// The first event after since: events are in seq order (a Relay's
	// may start after 1 or skip one the store lacks).
	i, _ := slices.BinarySearchFunc(l.events, since, func(e Event, seq int) int { return cmp.Compare(e.Seq, seq+1) })
	var replay []Event
	if i < len(l.events) {
		replay = append(replay, l.events[i:]...)
	}
	s := &Subscription{ready: make(chan struct{}, 1), log: l}
	if l.closed {
		s.ended = true
		s.ready <- struct{}{}
	} else {
		l.subs[s] = struct{}{}
	}
	return replay, s
}

// Subscription receives a run's live events, in order. The events wait in
// a queue until taken (Take); a progress event still waiting when a newer
// progress arrives is replaced by it, so a subscriber that is behind gets
// the newest progress rather than every one, and its seq then jumps: only
// progress is ever skipped. The subscription ends after the run's terminal
// event, when Close is called, or when more than the buffer's worth of
// other events wait untaken (Dropped then reports true).
type Subscription struct {
	log   *eventLog
	ready chan struct{} // holds a value when events wait or the subscription ended

	mu      sync.Mutex
	queue   []Event
	ended   bool
	dropped bool
}

// What push did.
const (
	pushQueued  = iota // queued, or replaced a waiting progress
	pushDropped        // the subscription is dropped: too much waited
	pushEnded          // the subscription had ended already
)

// push queues e (replacing a waiting progress with a newer one), and ends
// the subscription after a terminal event or when more than limit events
// would wait.
func (s *Subscription) push(e Event, limit int, terminal bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return pushEnded
	}
	result := pushQueued
	n := len(s.queue)
	switch {
	case n > 0 && e.Kind == KindProgress && s.queue[n-1].Kind == KindProgress:
		s.queue[n-1] = e
	case n >= limit:
		s.dropped, s.ended, s.queue = true, true, nil
		result = pushDropped
	default:
		s.queue = append(s.queue, e)
		s.ended = terminal
	}
	select {
	case s.ready <- struct{}{}:
	default:
	}
	return result
}

// hasEnded reports whether the subscription ended (dropped, closed, or
// after the terminal event).
func (s *Subscription) hasEnded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// Ready returns a channel that receives when events wait to be taken or
// the subscription ended: then call Take.
func (s *Subscription) Ready() <-chan struct{} { return s.ready }

// Take returns the events waiting, in order, and whether more may come:
// false means these are the last (the subscription ended).
func (s *Subscription) Take() ([]Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	es := s.queue
	s.queue = nil
	return es, !s.ended
}

// Dropped reports whether the subscription was ended because its reader
// was too slow; a dropped subscription's waiting events are discarded.
func (s *Subscription) Dropped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Close ends the subscription. It is safe to call more than once and after
// the subscription ended.
func (s *Subscription) Close() {
	s.log.mu.Lock()
	delete(s.log.subs, s)
	s.log.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.ended, s.queue = true, nil
		select {
		case s.ready <- struct{}{}:
		default:
		}
	}
}
