package loadrun

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"capacitylab/result"
)

// MinSampleEvery is the shortest interval a run over time may sample
// (Sweep.SampleEvery): ten samples a second at most.
const MinSampleEvery = 100 * time.Millisecond

// Sampling is how a window samples itself over time (Open.Sampling,
// Closed.Sampling): a Sample every Every from the window's start, and a
// last one when its last request has ended. The zero value samples
// nothing.
type Sampling struct {
	Every time.Duration
	// Lab, when not nil, reads the lab's statistics at the end of each
	// interval (Control.Stats). It runs on the sampler's goroutine, never
	// the sending one, and is given at most Every: a read that takes
	// longer is abandoned and its sample says Lab false.
	Lab func(context.Context) (result.LabStats, error)
	// Send, when not nil, is called with each sample as it is taken, in
	// order, one call at a time (from the sampler's goroutine, and for the
	// last samples from the goroutine running the window).
	Send func(result.Sample)
}

// interval is one interval of a window being folded: its counts and the
// latencies of its ok answers.
type interval struct {
	s   result.Sample
	lat []time.Duration
	cls [3]result.ClassSample // by result.Class, when the sampler is classed
}

// at returns the open interval k, opening those before it as needed.
func (s *sampler) at(k int) *interval {
	for k >= s.first+len(s.open) {
		var lat []time.Duration
		if n := len(s.spare); n > 0 {
			lat, s.spare = s.spare[n-1], s.spare[:n-1]
		}
		s.open = append(s.open, interval{lat: lat})
	}
	return &s.open[k-s.first]
}

// foldAttempt counts an attempt (a retry, a sub-request, a copy or a
// request itself) in the interval it ended in, when it was sent.
func (s *sampler) foldAttempt(r result.Record) {
	if r.Outcome != result.NotSent {
		s.at(max(int(r.End/s.every), s.first)).s.Attempts++
	}
}

// sampler folds a window's records into intervals of every, by the time
// each ended (a record never sent: when it was due, which is its End). Its
// fold and pop are called under the window's lock; the intervals from
// first on are open. A record whose interval has already been sent (its
// end was stamped a moment before a boundary, but it finished after that
// interval's sample was taken) counts in the first open interval, so every
// record is counted exactly once.
type sampler struct {
	every  time.Duration
	window int
	first  int        // the index of open[0]
	open   []interval // intervals first, first+1, … not yet sent
	spare  [][]time.Duration
	// inFlight, when not nil, counts from the records themselves the
	// requests in flight at each interval's end (a driven window, which
	// has no live counters): inFlight[k] at the end of interval k.
	inFlight map[int]int
	sent     int  // samples taken
	classed  bool // the window's requests carry classes: samples count them by class
}

func newSampler(window int, every time.Duration) *sampler {
	return &sampler{every: every, window: window}
}

// fold counts one finished logical request (a record, or Logical's for a
// retrying, fanned-out or hedging client) in the interval it ended in;
// its attempts are counted by foldAttempt.
func (s *sampler) fold(r result.Record) {
	iv := s.at(max(int(r.End/s.every), s.first))
	c := &iv.cls[min(int(r.Class), len(iv.cls)-1)]
	switch r.Outcome {
	case result.OK:
		iv.s.OK++
		c.OK++
		iv.lat = append(iv.lat, r.Latency())
	case result.Refused:
		iv.s.Refused++
		c.Refused++
	case result.Gaveup:
		iv.s.GaveUp++
		c.Gaveup++
	case result.Error:
		iv.s.Errors++
	case result.Unfinished:
		// A bug, which the row shows in lost; the samples leave it out
		// as the row's outcomes do, so they still add up to the row.
	case result.NotSent:
		switch r.Reason {
		case result.ReasonClientBusy:
			iv.s.ClientBusy++
		case result.ReasonBreakerOpen:
			iv.s.BreakerOpen++
		default:
			iv.s.NotSent++
		}
	}
	if s.inFlight != nil && r.Outcome != result.NotSent {
		// In flight at the end of interval j when Sent ≤ (j+1)·every < End.
		for j := max(int(r.Sent/s.every), 0); time.Duration(j+1)*s.every < r.End; j++ {
			if time.Duration(j+1)*s.every >= r.Sent {
				s.inFlight[j]++
			}
		}
	}
}

// pop takes the first open interval (index s.first) out: its counts, and
// its latencies, which the caller summarises outside the lock and hands
// back with recycle.
func (s *sampler) pop() (result.Sample, []time.Duration) {
	var iv interval
	if len(s.open) > 0 {
		iv = s.open[0]
		n := copy(s.open, s.open[1:])
		s.open[n] = interval{}
		s.open = s.open[:n]
	}
	if s.classed {
		for _, k := range result.Classes() {
			c := iv.cls[k]
			c.Class = k
			iv.s.ByClass = append(iv.s.ByClass, c)
		}
	}
	iv.s.Window = s.window
	iv.s.AtS = (time.Duration(s.first) * s.every).Seconds()
	iv.s.Seconds = s.every.Seconds()
	if s.inFlight != nil {
		iv.s.InFlight = s.inFlight[s.first]
	}
	s.first++
	s.sent++
	return iv.s, iv.lat
}

// recycle keeps a popped interval's latencies' storage for a later one.
func (s *sampler) recycle(lat []time.Duration) {
	if cap(lat) > 0 {
		s.spare = append(s.spare, lat[:0])
	}
}

// summarise sets p50 and p99 from an interval's ok latencies, sorting them
// in place.
func summarise(smp *result.Sample, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	smp.P50MS = result.MS(result.NearestRank(lat, 50))
	smp.P99MS = result.MS(result.NearestRank(lat, 99))
}

// setLab fills in a sample's lab fields from st.
func setLab(smp *result.Sample, st result.LabStats) {
	smp.Lab = true
	smp.Queued, smp.InService, smp.Limit, smp.Dropped = st.Queued, st.InService, st.PolicyLimit, st.Dropped
}

// last returns the samples left once every record of a window has been
// folded and it ended elapsed after its start: the open intervals up to
// the one elapsed falls in, the last one only as long as what is left of
// it. lab, when not nil, is the lab as it was then, for the last sample
// only (an interval whose boundary the sampler never got to says Lab
// false).
func (s *sampler) last(elapsed time.Duration, lab *result.LabStats) []result.Sample {
	end := max(int((elapsed-1)/s.every), s.first) // the interval elapsed ends in
	var out []result.Sample
	for k := s.first; k <= end; k++ {
		// A record stamped at elapsed itself belongs to the last interval.
		if k == end && len(s.open) > 1 {
			for _, iv := range s.open[1:] {
				s.open[0].s.OK += iv.s.OK
				s.open[0].s.Refused += iv.s.Refused
				s.open[0].s.GaveUp += iv.s.GaveUp
				s.open[0].s.Errors += iv.s.Errors
				s.open[0].s.ClientBusy += iv.s.ClientBusy
				s.open[0].s.NotSent += iv.s.NotSent
				s.open[0].s.BreakerOpen += iv.s.BreakerOpen
				s.open[0].s.Attempts += iv.s.Attempts
				for c := range iv.cls {
					s.open[0].cls[c].OK += iv.cls[c].OK
					s.open[0].cls[c].Refused += iv.cls[c].Refused
					s.open[0].cls[c].Gaveup += iv.cls[c].Gaveup
				}
				s.open[0].lat = append(s.open[0].lat, iv.lat...)
			}
			s.open = s.open[:1]
		}
		smp, lat := s.pop()
		summarise(&smp, lat)
		s.recycle(lat)
		if k == end {
			smp.Seconds = result.Round((elapsed - time.Duration(k)*s.every).Seconds(), 1e6)
			if lab != nil {
				setLab(&smp, *lab)
			}
		}
		out = append(out, smp)
	}
	return out
}

// SampleRecords returns the samples of a window of records that ended
// elapsed after its start, taken every apart, as a live window would have
// taken them but without the lab's side (Lab false): in flight at each
// interval's end is counted from the records' send and end times. A
// driven window (package sim) is sampled this way, and its lab's side
// filled in from what the driver read (Result.Lab). The records may come
// in any order; a retrying, fanned-out or hedging client's are its
// attempts (each request counted once, result.Logical), in flight
// counting logical requests.
func SampleRecords(window int, records []result.Record, elapsed, every time.Duration) []result.Sample {
	s := newSampler(window, every)
	s.inFlight = map[int]int{}
	for _, r := range records {
		if r.Class != result.Default {
			s.classed = true
			break
		}
	}
	for _, r := range result.Logical(records) {
		s.fold(r)
	}
	for _, r := range records {
		s.foldAttempt(r)
	}
	return s.last(elapsed, nil)
}

// sampling is a live window's sampler: the goroutine that takes a sample
// at every boundary while the window runs.
type sampling struct {
	cfg     Sampling
	w       *live
	s       *sampler
	samples []result.Sample
	done    chan struct{}
	wg      sync.WaitGroup
}

// start begins sampling window w (its records folded by w.finish) and
// returns what the window must call when its last request has ended.
func (cfg Sampling) start(ctx context.Context, w *live, window int, classed bool) *sampling {
	if cfg.Every <= 0 {
		return nil
	}
	sp := &sampling{cfg: cfg, w: w, s: newSampler(window, cfg.Every), done: make(chan struct{})}
	sp.s.classed = classed
	w.s = sp.s
	sp.wg.Add(1)
	go sp.run(ctx)
	return sp
}

func (sp *sampling) run(ctx context.Context) {
	defer sp.wg.Done()
	for k := 1; ; k++ {
		t := time.NewTimer(time.Until(sp.w.start.Add(time.Duration(k) * sp.cfg.Every)))
		select {
		case <-sp.done:
			t.Stop()
			return
		case <-t.C:
		}
		p := sp.w.progress()
		var st *result.LabStats
		if sp.cfg.Lab != nil {
			st = sp.readLab(ctx)
		}
		// The interval is popped after the lab was read: a request
		// stamped just before the boundary has had that long to finish.
		sp.w.mu.Lock()
		smp, lat := sp.s.pop()
		smp.Breaker = sp.w.breaker(time.Duration(k) * sp.cfg.Every)
		sp.w.mu.Unlock()
		summarise(&smp, lat)
		sp.w.mu.Lock()
		sp.s.recycle(lat)
		sp.w.mu.Unlock()
		smp.InFlight = p.InFlight
		if st != nil {
			setLab(&smp, *st)
		}
		sp.send(smp)
	}
}

// readLab reads the lab, giving it at most one interval; nil when it did
// not answer in time.
func (sp *sampling) readLab(ctx context.Context) *result.LabStats {
	rctx, cancel := context.WithTimeout(ctx, sp.cfg.Every)
	defer cancel()
	st, err := sp.cfg.Lab(rctx)
	if err != nil {
		return nil
	}
	return &st
}

func (sp *sampling) send(smp result.Sample) {
	sp.samples = append(sp.samples, smp)
	if sp.cfg.Send != nil {
		sp.cfg.Send(smp)
	}
}

// stop stops the sampler's goroutine once every record of the window has
// been folded: no sample is taken after it returns.
func (sp *sampling) stop() {
	if sp == nil {
		return
	}
	close(sp.done)
	sp.wg.Wait()
}

// last sends the window's last samples, after stop; elapsed is the
// window's end, measured after stop. It returns every sample of the window.
func (sp *sampling) last(ctx context.Context, elapsed time.Duration) []result.Sample {
	if sp == nil {
		return nil
	}
	var st *result.LabStats
	if sp.cfg.Lab != nil {
		st = sp.readLab(ctx)
	}
	for _, smp := range sp.s.last(elapsed, st) {
		smp.Breaker = sp.w.breaker(min(elapsed, secondsToDuration(smp.AtS+smp.Seconds)))
		sp.send(smp)
	}
	return sp.samples
}

// checkSampleEvery says what is wrong with a sweep's sampling interval.
func checkSampleEvery(every time.Duration) error {
	if every != 0 && every < MinSampleEvery {
		return fmt.Errorf("sampling interval %v is not allowed: want 0 (no samples) or at least %v", every, MinSampleEvery)
	}
	return nil
}
