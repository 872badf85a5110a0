package admit

import (
	"math"
	"runtime/metrics"
	"time"
)

// The processors' line. A Go service reads a request only when its
// connection's goroutine gets a processor, so when the processors are
// saturated the line of requests forms before any door: in the sockets and
// among the goroutines ready to run, where the count of requests inside
// never sees it. What does see it is how long the runtime's goroutines
// wait, ready, for a processor (runtime/metrics /sched/latencies:seconds):
// near zero while a processor is free, and the length of the line when
// none is. A Gate with a processor bound (Gate.BoundWait) reads that
// histogram at most every waitInterval, as requests arrive, and takes the
// 90th percentile of the waits since its last reading.

// schedLatencies is the runtime's histogram of how long goroutines waited,
// ready, for a processor.
const schedLatencies = "/sched/latencies:seconds"

// waitInterval is the least time between two readings of the histogram:
// the line's measure is of the waits over the last interval or more.
const waitInterval = 50 * time.Millisecond

// staleAfter is how old a reading may be for the next one to measure the
// waits since it: past it, the next reading starts afresh (a measure of
// 0), so a line that was gone long before the next request does not turn
// it away.
const staleAfter = 2 * waitInterval

// waitQuantile is the share of the interval's waits at or under the
// measure: most of them, so that a line is seen as soon as most requests
// wait in it, while a few long waits (a collection's pause) are not.
const waitQuantile = 0.9

// processorWait measures the processors' line (see above). Its methods
// are called with the Gate's lock held.
type processorWait struct {
	sample []metrics.Sample // the histogram, read into the same memory each time
	prev   []uint64         // its counts at the last reading
	read   time.Time        // when it was read
	wait   time.Duration    // the measure then
}

func newProcessorWait() *processorWait {
	w := &processorWait{sample: []metrics.Sample{{Name: schedLatencies}}}
	metrics.Read(w.sample)
	w.read = time.Now()
	if w.sample[0].Value.Kind() == metrics.KindFloat64Histogram {
		w.prev = append(w.prev, w.sample[0].Value.Float64Histogram().Counts...)
	}
	return w
}

// at returns the line's measure as of now: the waitQuantile of the waits
// since the last reading, read again if waitInterval has passed.
func (w *processorWait) at(now time.Time) time.Duration {
	if now.Sub(w.read) < waitInterval {
		return w.wait
	}
	metrics.Read(w.sample)
	if w.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0 // not measured by this runtime
	}
	h := w.sample[0].Value.Float64Histogram()
	if now.Sub(w.read) > staleAfter {
		// No request came for a while: the waits since the last reading
		// are mostly of a line long gone. Start afresh.
		w.wait = 0
	} else {
		w.wait = quantileSince(h, w.prev, waitQuantile)
	}
	w.read = now
	w.prev = append(w.prev[:0], h.Counts...)
	return w.wait
}

// quantileSince is the q-quantile of the observations h holds beyond prev
// (its counts at an earlier reading): the upper bound of the bucket it
// falls in, or 0 when there were none.
func quantileSince(h *metrics.Float64Histogram, prev []uint64, q float64) time.Duration {
	var total uint64
	for i, c := range h.Counts {
		if i < len(prev) {
			c -= prev[i]
		}
		total += c
	}
	if total == 0 {
		return 0
	}
	want := uint64(q * float64(total))
	var seen uint64
	for i, c := range h.Counts {
		if i < len(prev) {
			c -= prev[i]
		}
		seen += c
		if seen > want || seen == total {
			upper := h.Buckets[i+1]
			if math.IsInf(upper, 1) { // the last bucket is unbounded above
				upper = h.Buckets[i]
			}
			return time.Duration(upper * float64(time.Second))
		}
	}
	return 0
}
