package web

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"capacitylab/runner"
	"capacitylab/wsconn"
)

// liveStream is the stream of a run the runner holds: its logged events
// after since, then the live ones, each row and the last event followed by
// a panel message (withPanel). It returns nil when the runner does not
// hold the run.
func (s *server) liveStream(ctx context.Context, id string, since int) (streamOpener, error) {
	if s.runner == nil {
		return nil, nil
	}
	replay, sub, err := s.runner.Subscribe(id, since)
	if errors.Is(err, runner.ErrNoRun) || (err == nil && sub == nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return func() (wsconn.Source, func()) {
		src := newRunSource(replay, sub, since, s.withPanel(ctx, id))
		src.liveChart = func() bool { return s.runner.Watchers(id) <= liveChartWatchers }
		return src, sub.Close
	}, nil
}

// runSource is a run stream's wsconn.Source: the replayed events, then the
// subscription's live ones (nil: replay only), each event's JSON as it
// was logged. Its close frame is 1000 after the run's last event, or
// wsconn.CloseTooSlow naming the last seq sent when the subscription was
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
	// holding: the events wait with the pending panel (a row's, 150 ms).
	// A sample's panel waits seconds, so events go on meanwhile and the
	// panel goes with the first of them after it is due (progress comes
	// four times a second while a window is measured).
	holding bool
	// liveChart says whether a sample may schedule a panel now (few
	// enough watchers: liveChartWatchers); nil: always.
	liveChart func() bool
}

// panelDelay is how long a row's panel message waits behind the row: the
// rows go out to every watcher first, then the panels, which are twenty
// times their size. A class of a thousand gets its rows in some tens of
// milliseconds (BENCHMARKS); the panels follow.
const panelDelay = 150 * time.Millisecond

// samplePanelEvery is how long a run over time's panel message (its time
// chart alone) waits behind a sample: samples come every second, and each
// message (some 10 to 30 KB, growing with the window) goes to every
// watcher while the window is being measured, so a class's watchers get
// the time chart redrawn every five to six seconds, not every second. Not
// tuned by measurement: the machine was never quiet enough (see the i17
// notes); the events go on meanwhile (holding is false).
const samplePanelEvery = 5 * time.Second

// liveChartWatchers is the most watchers a run over time may have for its
// time chart to be redrawn while a window is measured. A learner's own run
// has one or two; a class has tens to a thousand, and a thousand copies of
// a 10 to 30 KB chart every few seconds is work for the server's threads,
// which run beside the lab (the server keeps off the generator's
// processor) and may take the lab's processor mid-window
// (BenchmarkWatchers with CAPACITYLAB_BENCH_OVER_TIME=1: window p99 18.6 →
// 72.5 ms watched by 1,000 at load 2 to 4, against 24.5 → 22.8 ms for a
// plain sweep). Above it the sample events still reach every watcher as
// they come (a few hundred bytes each: the page writes the second's
// figures in its status line) and the chart is redrawn with each row,
// between windows, as every other panel is.
const liveChartWatchers = 8

// schedule makes e's panel due after d; hold keeps the events back until
// it is sent.
func (s *runSource) schedule(e *runner.Event, d time.Duration, hold bool) {
	s.pending, s.holding = e, hold
	wake := make(chan struct{})
	s.wake = wake
	s.timer = time.AfterFunc(d, func() { close(wake) })
}

// newRunSource streams replay, then sub's events (sub nil: replay only).
// With panel set, row events, a run over time's sample events (at most
// one panel every samplePanelEvery) and the last event are followed by a
// panel message (after the last replayed one, at once).
func newRunSource(replay []runner.Event, sub *runner.Subscription, since int, panel func(runner.Event) []byte) *runSource {
	s := &runSource{sub: sub, last: since, now: make(chan struct{}), panel: panel}
	close(s.now)
	// The panel after the replay is the whole panel if a row or the last
	// event was replayed, the time chart alone if only samples were (each
	// is rendered as the run stands now).
	var drawn, sampled *runner.Event
	for i, e := range replay {
		s.replay = append(s.replay, eventJSON(e))
		s.last = e.Seq
		switch {
		case e.Kind == runner.KindRow || e.Kind.Terminal():
			drawn = &replay[i]
		case e.Kind == runner.KindSample:
			sampled = &replay[i]
		}
	}
	if drawn == nil {
		drawn = sampled
	}
	if drawn != nil && panel != nil {
		s.replay = append(s.replay, panel(*drawn))
	}
	return s
}

// withPanel makes a live run's panel messages: {"kind": "panel", "seq": S,
// "panel": HTML}, the run's panel (GET /runs/{id}/panel) as the server
// renders it after event S (after a sample, its time chart alone), so a page redraws its chart and rows from the
// stream instead of each watcher asking for them (a class of a thousand
// would ask at once, as the next window starts). It is made once per
// event and kept for every watcher. A failure is logged and sends a panel
// message without the panel, after which runs.js asks for it.
func (s *server) withPanel(ctx context.Context, id string) func(runner.Event) []byte {
	return func(e runner.Event) []byte {
		b, err := s.panels.getOrMake(id+"/event/"+strconv.Itoa(e.Seq), func() ([]byte, bool, error) {
			v, err := s.runView(ctx, id, "", false)
			if err != nil {
				return nil, false, err
			}
			// A sample changes the time chart alone: its panel message is
			// that part of the panel, a third of it or less.
			part := runPanel(v)
			if e.Kind == runner.KindSample && v.overTime() {
				part = runTimeChart(v)
			}
			html, err := renderString(ctx, part)
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

// Ready implements wsconn.Source. While a row's panel waits, it is ready
// when the panel is due (events that come meanwhile go out with it); while
// a sample's waits, it is ready as events come, the panel going with the
// first after it is due.
func (s *runSource) Ready() <-chan struct{} {
	if s.replay != nil || s.sub == nil {
		return s.now
	}
	if s.pending != nil && s.holding {
		return s.wake
	}
	return s.sub.Ready()
}

// Take implements wsconn.Source.
func (s *runSource) Take() ([][]byte, bool, wsconn.End) {
	endOfRun := wsconn.End{Code: wsconn.CloseEnd, Text: "end of run"}
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
		if e.Seq <= s.last {
			// A followed run's reader may be behind the client, which
			// resumed with a since it saw on another server: the events
			// up to it come to the subscription, and are not sent again.
			continue
		}
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
			s.schedule(&es[i], panelDelay, true)
		case e.Kind == runner.KindSample && s.pending == nil && (s.liveChart == nil || s.liveChart()):
			// A run over time's panel follows its samples at most once
			// every samplePanelEvery; a panel already waiting will show
			// this sample too.
			s.schedule(&es[i], samplePanelEvery, false)
		}
	}
	if !more && s.sub.Dropped() {
		return msgs, true, wsconn.End{Code: wsconn.CloseTooSlow, Text: "too slow: reconnect with since=" + strconv.Itoa(s.last)}
	}
	return msgs, !more, endOfRun
}
