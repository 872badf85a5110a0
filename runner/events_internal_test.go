package runner

import (
	"testing"
	"time"
)

// A subscriber that does not read is dropped once its buffer is full;
// appending never waits for it, and a subscriber that keeps up gets every
// event in order.
func TestSlowSubscriberDropped(t *testing.T) {
	dropped := 0
	l := newEventLog(4, time.Now, func() { dropped++ })
	_, slow := l.subscribe(0)
	_, fast := l.subscribe(0)
	got := make(chan []Event)
	ack := make(chan struct{}, 1)
	go func() {
		var es []Event
		for e := range fast.C() {
			es = append(es, e)
			ack <- struct{}{}
		}
		got <- es
	}()
	const n = 50
	done := make(chan struct{})
	go func() {
		for i := range n - 1 {
			l.append(Event{Kind: KindProgress, Window: i})
			// The fast reader keeps up, as a live watcher does: the next
			// event comes once it has read this one.
			<-ack
		}
		l.append(Event{Kind: KindDone})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("appending blocked on a subscriber that does not read")
	}
	es := <-got
	if len(es) != n || es[0].Seq != 1 || es[n-1].Seq != n || es[n-1].Kind != KindDone {
		t.Errorf("fast subscriber got %d events (first %+v, last %+v), want all %d", len(es), es[0], es[len(es)-1], n)
	}
	for i, e := range es {
		if e.Seq != i+1 {
			t.Fatalf("fast subscriber: event %d has seq %d", i, e.Seq)
		}
	}
	// The slow one has its four buffered events, then a closed channel.
	var slowGot int
	for range slow.C() {
		slowGot++
	}
	if !slow.Dropped() || slowGot != 4 {
		t.Errorf("slow subscriber: dropped %v after %d events, want dropped after 4", slow.Dropped(), slowGot)
	}
	if fast.Dropped() || dropped != 1 {
		t.Errorf("fast subscriber dropped %v; %d drops counted, want 1", fast.Dropped(), dropped)
	}
	// Subscribing after the end replays everything and closes at once.
	replay, late := l.subscribe(0)
	if _, ok := <-late.C(); ok || len(replay) != n {
		t.Errorf("late subscriber: %d replayed, channel open %v", len(replay), ok)
	}
	late.Close()
	slow.Close()
	if e := l.append(Event{Kind: KindProgress}); e.Seq != 0 {
		t.Errorf("append after the terminal event was kept: %+v", e)
	}
}
