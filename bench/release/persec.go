package main

import (
	"math"
	"sort"
	"time"

	"capacitylab/loadrun"
	"capacitylab/result"
)

// second is one second of a window, counted as result.Sample counts:
// answers by the second they ended in, arrivals never sent by the second
// they were due in.
type second struct {
	At                                       int // seconds from the window's start
	OK, Refused, GaveUp, Errors, Busy, NotSt int
	P99MS                                    float64 // of the ok answers that ended in it; 0 with none
	InFlight                                 float64 // the generator's requests sent and not ended, averaged over the second
}

// perSecond cuts one window's records into seconds, up to the end of its
// last request: loadrun.SampleRecords counts them, as a run over time's
// samples are counted; what it adds is the generator's in flight averaged
// over each second (a sample has it at the second's end).
func perSecond(recs []result.Record) []second {
	var end time.Duration
	for _, r := range recs {
		end = max(end, r.End, r.Intended)
	}
	samples := loadrun.SampleRecords(0, recs, end, time.Second)
	secs := make([]second, len(samples))
	for i, s := range samples {
		secs[i] = second{At: i, OK: s.OK, Refused: s.Refused, GaveUp: s.GaveUp, Errors: s.Errors, Busy: s.ClientBusy, NotSt: s.NotSent, P99MS: s.P99MS}
	}
	for _, r := range recs {
		if r.Outcome == result.NotSent {
			continue
		}
		// The time this request was in flight, spread over the seconds
		// it spans.
		for a := r.Sent; a < r.End; {
			j := min(int(a/time.Second), len(secs)-1)
			b := min(r.End, time.Duration(j+1)*time.Second)
			if b <= a {
				b = r.End
			}
			secs[j].InFlight += (b - a).Seconds()
			a = b
		}
	}
	return secs
}

// span is what a stretch of seconds [From, To) delivered, a second.
type span struct {
	From, To                          int
	OK, Refused, GaveUp, Busy, Errors float64
	InFlight                          float64
	P99MS                             float64 // of every ok answer that ended in the span
}

func spanOf(recs []result.Record, secs []second, from, to int) span {
	sp := span{From: from, To: min(to, len(secs))}
	n := float64(sp.To - sp.From)
	if n <= 0 {
		return sp
	}
	for _, s := range secs[sp.From:sp.To] {
		sp.OK += float64(s.OK) / n
		sp.Refused += float64(s.Refused) / n
		sp.GaveUp += float64(s.GaveUp) / n
		sp.Busy += float64(s.Busy) / n
		sp.Errors += float64(s.Errors+s.NotSt) / n
		sp.InFlight += s.InFlight / n
	}
	var lat []float64
	lo, hi := time.Duration(sp.From)*time.Second, time.Duration(sp.To)*time.Second
	for _, r := range recs {
		if r.Outcome == result.OK && r.End >= lo && r.End < hi {
			lat = append(lat, ms(r.Latency()))
		}
	}
	sp.P99MS = quantile(lat, 0.99)
	return sp
}

// converged is the first second c at or after release from which the
// service delivers the goal: the ok answers of the seconds from c to last
// average at least goal a second, and no stretch of hold seconds in them
// averages less than goal − 2·√(goal ÷ hold), two standard deviations of
// a Poisson count at the goal over hold seconds. A rule on every single
// second cannot tell settling from chance (a second of Poisson answers at
// 35 varies by ±6); this one asks the goal of the rest of the window and
// forgives a later dip only as deep as chance makes one. It leaves at
// least 2×hold seconds after c, and returns -1 when no such second exists.
func converged(secs []second, release, last, hold int, goal float64) int {
	last = min(last, len(secs))
	floor := goal - 2*math.Sqrt(goal/float64(hold))
	for c := release; c+2*hold <= last; c++ {
		sum := 0
		for _, s := range secs[c:last] {
			sum += s.OK
		}
		ok := float64(sum) >= goal*float64(last-c)
		for a := c; a+hold <= last && ok; a++ {
			n := 0
			for _, s := range secs[a : a+hold] {
				n += s.OK
			}
			ok = float64(n) >= floor*float64(hold)
		}
		if ok {
			return c
		}
	}
	return -1
}

// quantile is the q-quantile of xs by the nearest rank; 0 for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, i)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
