package runner

import (
	"encoding/json"
	"time"
)

// Relay is a run's event log as another process logs it, filled from
// the store by its reader (package web follows a run that a runner of
// another process holds): the same log, subscriptions and hand-out as a
// run the Runner holds, so one reader per run fans its events out to
// every watcher. Add keeps each event's seq, time and JSON as they were
// logged.
type Relay struct {
	log *eventLog
}

// NewRelay returns an empty relay whose subscribers may fall buffer
// events behind before they are dropped (DefaultSubscriberBuffer when 0
// or less).
func NewRelay(buffer int) *Relay {
	if buffer <= 0 {
		buffer = DefaultSubscriberBuffer
	}
	return &Relay{log: newEventLog(buffer, time.Now, nil)}
}

// Add hands on events read from the store, in seq order: each event with
// a seq after the last one added is kept and handed to every subscriber;
// the others (read again) are ignored, as is everything after a terminal
// event. It returns the seq of the last event kept so far and whether
// the log ended (a terminal event was added).
func (r *Relay) Add(es []Event) (last int, ended bool) {
	l := r.log
	for _, e := range es {
		l.mu.Lock()
		n := len(l.events)
		if l.closed || (n > 0 && e.Seq <= l.events[n-1].Seq) {
			l.mu.Unlock()
			continue
		}
		if e.JSON == nil {
			e.JSON, _ = json.Marshal(e) // cannot fail: no channels, funcs or cycles
		}
		l.publish(e) // releases l.mu
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.events); n > 0 {
		last = l.events[n-1].Seq
	}
	return last, l.closed
}

// Subscribe returns the events after seq since and a subscription to the
// ones added later, as Runner.Subscribe does for a run it holds.
func (r *Relay) Subscribe(since int) ([]Event, *Subscription) { return r.log.subscribe(since) }

// Watchers returns how many subscriptions are live.
func (r *Relay) Watchers() int { return r.log.subscribers() }
