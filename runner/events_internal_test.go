package runner

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"capacitylab/result"
)

// A subscriber that does not take its events is dropped once more than its
// buffer of them wait; appending never waits for it, and a subscriber that
// keeps up gets every event in order.
func TestSlowSubscriberDropped(t *testing.T) {
	dropped := 0
	l := newEventLog(4, time.Now, func() { dropped++ })
	_, slow := l.subscribe(0)
	_, fast := l.subscribe(0)
	got := make(chan []Event)
	ack := make(chan struct{}, 1)
	go func() {
		var es []Event
		for range fast.Ready() {
			taken, more := fast.Take()
			for range taken {
				ack <- struct{}{}
			}
			es = append(es, taken...)
			if !more {
				break
			}
		}
		got <- es
	}()
	const n = 50
	done := make(chan struct{})
	go func() {
		for i := range n - 1 {
			// Rows, not progress: progress would be coalesced (see
			// TestProgressCoalesced).
			l.append(Event{Kind: KindRow, WindowProgress: result.WindowProgress{Window: i}})
			// The fast reader keeps up, as a live watcher does: the next
			// event comes once it has taken this one.
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
	// The slow one was dropped at the fifth event; what waited is gone.
	if taken, more := slow.Take(); !slow.Dropped() || more || len(taken) != 0 {
		t.Errorf("slow subscriber: dropped %v, more %v, %d events waiting; want dropped with none", slow.Dropped(), more, len(taken))
	}
	if fast.Dropped() || dropped != 1 {
		t.Errorf("fast subscriber dropped %v; %d drops counted, want 1", fast.Dropped(), dropped)
	}
	// Subscribing after the end replays everything and ends at once.
	replay, late := l.subscribe(0)
	<-late.Ready()
	if taken, more := late.Take(); more || len(taken) != 0 || len(replay) != n {
		t.Errorf("late subscriber: %d replayed, %d live, more %v", len(replay), len(taken), more)
	}
	late.Close()
	slow.Close()
	if e := l.append(Event{Kind: KindProgress}); e.Seq != 0 {
		t.Errorf("append after the terminal event was kept: %+v", e)
	}
}

// A subscriber that is behind gets the newest progress, not every one: a
// waiting progress is replaced by a newer progress (its seq then jumps),
// never by anything else, and other events are never skipped. Progress
// alone never fills the buffer, however long the subscriber waits.
func TestProgressCoalesced(t *testing.T) {
	dropped := 0
	l := newEventLog(4, time.Now, func() { dropped++ })
	_, sub := l.subscribe(0)
	kinds := []Kind{KindStarted}
	for range 100 {
		kinds = append(kinds, KindProgress)
	}
	kinds = append(kinds, KindRow, KindProgress, KindProgress)
	for _, k := range kinds {
		l.append(Event{Kind: k})
	}
	taken, more := sub.Take()
	got := make([][2]any, len(taken))
	for i, e := range taken {
		got[i] = [2]any{e.Seq, e.Kind}
	}
	// started (1), the newest of the window's hundred progress (101), the
	// row (102), the newest progress after it (104).
	want := [][2]any{{1, KindStarted}, {101, KindProgress}, {102, KindRow}, {104, KindProgress}}
	if !more || sub.Dropped() || dropped != 0 || len(got) != len(want) {
		t.Fatalf("took %v (more %v, dropped %v), want %v", got, more, sub.Dropped(), want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("took %v, want %v", got, want)
		}
	}
	// The buffer (here 2) counts the events waiting: a row and a progress
	// fit, a newer progress replaces the waiting one, a second row does
	// not fit.
	sub.Close()
	l2 := newEventLog(2, time.Now, func() { dropped++ })
	_, sub2 := l2.subscribe(0)
	l2.append(Event{Kind: KindRow})
	l2.append(Event{Kind: KindProgress})
	l2.append(Event{Kind: KindProgress})
	if sub2.Dropped() {
		t.Fatal("dropped with two events waiting and a buffer of two")
	}
	l2.append(Event{Kind: KindRow})
	if !sub2.Dropped() || dropped != 1 {
		t.Fatalf("not dropped with a third event waiting (dropped %v, %d counted)", sub2.Dropped(), dropped)
	}
}

// Appends from several goroutines at once (queue changes and a running
// window's events do come from different goroutines) while subscribers are
// dropped, close and join: nothing deadlocks, every subscriber that keeps
// up sees seq rise one by one, and the log has every event.
func TestConcurrentAppends(t *testing.T) {
	drops := 0
	var dropMu sync.Mutex
	l := newEventLog(256, time.Now, func() { dropMu.Lock(); drops++; dropMu.Unlock() })
	var slow []*Subscription
	for range 3 {
		_, s := l.subscribe(0) // never takes: dropped at the 257th event
		slow = append(slow, s)
	}
	_, keeper := l.subscribe(0)
	got := make(chan []Event)
	// The writers wait while the keeper is more than half the log behind,
	// so that it keeps up however the goroutines are scheduled (on one
	// busy processor the writers could otherwise run 256 ahead of it).
	var appended, took atomic.Int64
	go func() {
		var es []Event
		for range keeper.Ready() {
			taken, more := keeper.Take()
			took.Add(int64(len(taken)))
			es = append(es, taken...)
			if !more {
				break
			}
		}
		got <- es
	}()
	const writers, each = 4, 200
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				for range each {
					_, brief := l.subscribe(0) // joins and leaves
					l.append(Event{Kind: KindRow})
					appended.Add(1)
					brief.Close()
					for appended.Load()-took.Load() > 128 && !keeper.Dropped() {
						time.Sleep(100 * time.Microsecond)
					}
				}
			})
		}
		wg.Wait()
		l.append(Event{Kind: KindDone})
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("appending from several goroutines deadlocked")
	}
	es := <-got
	if keeper.Dropped() {
		t.Fatal("the reader that keeps up was dropped")
	}
	for _, s := range slow {
		if !s.Dropped() {
			t.Error("a subscriber that never takes was not dropped")
		}
	}
	if drops != len(slow) {
		t.Errorf("%d drops counted, want %d", drops, len(slow))
	}
	for i, e := range es {
		if e.Seq != i+1 {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	if len(es) != writers*each+1 {
		t.Fatalf("got %d events, want %d", len(es), writers*each+1)
	}
}
