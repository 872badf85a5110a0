package runner

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"capacitylab/result"
	"capacitylab/store"
	"capacitylab/store/storetest"
)

// countingSaver is a store with the number of writes it was given.
type countingSaver struct {
	*store.Store
	mu     sync.Mutex
	writes int
}

func (c *countingSaver) WriteRun(ctx context.Context, id, owner string, w store.RunWrite) error {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.Store.WriteRun(ctx, id, owner, w)
}

// eachStore runs fn on a SQLite store and on a Postgres one (skipped,
// saying so, without CAPACITYLAB_TEST_POSTGRES).
func eachStore(tb testing.TB, run func(name string, fn func(tb testing.TB, st *store.Store)), fn func(tb testing.TB, st *store.Store)) {
	run("sqlite", func(tb testing.TB, _ *store.Store) {
		st, err := store.Open(filepath.Join(tb.TempDir(), "events.db"))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { st.Close() })
		fn(tb, st)
	})
	run("postgres", func(tb testing.TB, _ *store.Store) {
		st, err := store.OpenPostgres(context.Background(), storetest.PostgresURL(tb, "a run's events on Postgres"))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { st.Close() })
		fn(tb, st)
	})
}

// storedLog is a running run's log that stores its events in st, with
// at most batch in a write (0: every one waiting), as the Runner's own
// runs do (storeLog).
func storedLog(tb testing.TB, st Saver, id string, batch int) *eventLog {
	tb.Helper()
	now := time.Now()
	if err := st.SaveRun(context.Background(), store.Run{ID: id, Learner: "l", Status: store.RunRunning, CreatedAt: now, StartedAt: now}); err != nil {
		tb.Fatal(err)
	}
	r := &Runner{cfg: Config{Store: st, EventBatch: batch}, log: slog.New(slog.DiscardHandler), now: time.Now}
	ru := &run{id: id, learner: "l", req: Request{}, log: newEventLog(1024, time.Now, nil), status: store.RunRunning} // room for every event a test logs: no watcher is dropped
	r.storeLog(ru)
	return ru.log
}

// A run's events logged faster than the store commits go in far fewer
// writes than events, in order: the store holds seq 1 to N, each as it
// was handed out, a watcher gets them all in order, and one subscribing
// from a seq (as a resumed stream) gets exactly the rest.
func TestBatchedEventsInOrder(t *testing.T) {
	eachStore(t, func(name string, fn func(testing.TB, *store.Store)) {
		t.Run(name, func(t *testing.T) { fn(t, nil) })
	}, func(tb testing.TB, st *store.Store) {
		t := tb.(*testing.T)
		c := &countingSaver{Store: st}
		l := storedLog(t, c, "r1", 0)
		_, sub := l.subscribe(0)
		got := make(chan []Event)
		go func() {
			var seen []Event
			for range sub.Ready() {
				es, more := sub.Take()
				seen = append(seen, es...)
				if !more {
					break
				}
			}
			got <- seen
		}()
		const n = 600
		for i := range n - 1 {
			kind := KindRow // never coalesced for a watcher behind
			if i%2 == 0 {
				kind = KindSample
			}
			l.append(Event{Kind: kind, WindowProgress: result.WindowProgress{Window: i}})
		}
		end := l.append(Event{Kind: KindDone})
		if err := l.wait(end.Seq); err != nil {
			t.Fatal(err)
		}
		seen := <-got
		if sub.Dropped() {
			t.Fatal("the watcher was dropped")
		}
		stored, err := st.RunEvents(t.Context(), "r1", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != n || len(stored) != n {
			t.Fatalf("a watcher got %d events and the store holds %d: want %d", len(seen), len(stored), n)
		}
		for i := range n {
			if seen[i].Seq != i+1 || stored[i].Seq != i+1 || string(stored[i].JSON) != string(seen[i].JSON) || seen[i].Window != i && i < n-1 {
				t.Fatalf("event %d: the watcher's %d %s, the store's %d %s", i, seen[i].Seq, seen[i].JSON, stored[i].Seq, stored[i].JSON)
			}
		}
		replay, rest := l.subscribe(250)
		rest.Close()
		if len(replay) != n-250 || replay[0].Seq != 251 {
			t.Fatalf("subscribing from 250 replays %d events from %d: want the %d after it", len(replay), replay[0].Seq, n-250)
		}
		t.Logf("%d events in %d writes", n, c.writes)
		if c.writes > n/4 {
			t.Errorf("%d events took %d writes: want them batched (at most %d)", n, c.writes, n/4)
		}
	})
}

// BenchmarkEventWrites is a run's events through the runner's one write
// path (the log's writer and store.WriteRun), side by side: batch=1
// writes each event in a transaction of its own, as every event was
// before batching (one commit and one wake-up each); batch=all writes
// every event waiting in one. The events are logged as fast as they can
// be (a progress event's JSON, about 200 bytes), b.N of them, and the
// benchmark ends when the last is stored. It reports events/s and writes
// (transactions) per event, and checks the store holds seq 1 to b.N.
//
//	CAPACITYLAB_TEST_POSTGRES=postgres://... go test ./runner -run '^$' -bench EventWrites -benchtime 2000x -count 3
func BenchmarkEventWrites(b *testing.B) {
	eachStore(b, func(name string, fn func(testing.TB, *store.Store)) {
		b.Run(name, func(b *testing.B) { fn(b, nil) })
	}, func(tb testing.TB, st *store.Store) {
		b := tb.(*testing.B)
		for _, batch := range []int{1, 0} {
			label := "all"
			if batch > 0 {
				label = fmt.Sprint(batch)
			}
			b.Run("batch="+label, func(b *testing.B) {
				c := &countingSaver{Store: st}
				id := fmt.Sprintf("r-%s-%d", label, b.N)
				l := storedLog(b, c, id, batch)
				p := result.WindowProgress{Windows: 2, Rate: 40, Seconds: 1, ElapsedMS: 400.335, Sent: 17, Ended: 17}
				b.ResetTimer()
				var last Event
				for range b.N {
					last = l.append(Event{Kind: KindProgress, WindowProgress: p})
				}
				if err := l.wait(last.Seq); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64(c.writes)/float64(b.N), "writes/event")
				stored, err := st.RunEvents(context.Background(), id, 0)
				if err != nil {
					b.Fatal(err)
				}
				for i, e := range stored {
					if e.Seq != i+1 {
						b.Fatalf("stored event %d has seq %d", i, e.Seq)
					}
				}
				if len(stored) != b.N {
					b.Fatalf("%d events stored, %d logged", len(stored), b.N)
				}
			})
		}
	})
}
