package result

import "math"

// Stretch is what a run over time's samples say about a stretch of one
// window: the samples that lie wholly inside the seconds [From, To) from
// the window's start. Counts are totals over those samples, to be read a
// second (Rate); what was inside is averaged over them; the percentiles of
// the ok answers are kept as the lowest and the highest second's, since a
// percentile of seconds is not the percentile of their answers.
type Stretch struct {
	Window   int
	From, To float64 // the stretch asked for, seconds from the window's start
	Seconds  float64 // the length of the samples inside it
	Samples  int     // how many samples lie inside it

	OK, Refused, GaveUp, Errors, ClientBusy int

	InFlight float64 // mean over the samples
	// LabSamples is how many of the samples read the lab; Queued,
	// InService and Limit are means over those.
	LabSamples               int
	Queued, InService, Limit float64
	// OKSamples is how many of the samples had an ok answer; the
	// percentiles range over those (NaN when there are none).
	OKSamples    int
	P50Lo, P50Hi float64
	P99Lo, P99Hi float64
}

// StretchColumns are the time table columns (lessons.TimeColumns) a
// Stretch reads: counts (ok, refused, gaveup, client_busy) a second, what
// was inside (in_flight, queued, in_service, limit) as a mean, and the ok
// answers' percentiles (p50_ms, p99_ms) as the lowest and highest second's.
func StretchColumns() []string {
	return []string{"ok", "refused", "gaveup", "client_busy", "in_flight", "queued", "in_service", "limit", "p50_ms", "p99_ms"}
}

// StretchCounts are the StretchColumns read a second.
func StretchCounts() []string { return []string{"ok", "refused", "gaveup", "client_busy"} }

// StretchSpans are the StretchColumns read as the lowest and highest
// second's.
func StretchSpans() []string { return []string{"p50_ms", "p99_ms"} }

// stretchSlack absorbs the rounding of recorded at_s and seconds (to a
// millisecond) when a sample's bounds are compared with a stretch's.
const stretchSlack = 0.0005

// ReadStretch reads window's samples over [from, to) seconds from its
// start: a sample counts when it starts at or after from and ends at or
// before to. Samples of other windows are skipped.
func ReadStretch(samples []Sample, window int, from, to float64) Stretch {
	st := Stretch{Window: window, From: from, To: to,
		P50Lo: math.NaN(), P50Hi: math.NaN(), P99Lo: math.NaN(), P99Hi: math.NaN()}
	var inflight, queued, inService, limit float64
	for _, s := range samples {
		if s.Window != window || s.AtS < from-stretchSlack || s.AtS+s.Seconds > to+stretchSlack {
			continue
		}
		st.Samples++
		st.Seconds += s.Seconds
		st.OK += s.OK
		st.Refused += s.Refused
		st.GaveUp += s.GaveUp
		st.Errors += s.Errors
		st.ClientBusy += s.ClientBusy
		inflight += float64(s.InFlight)
		if s.Lab {
			st.LabSamples++
			queued += float64(s.Queued)
			inService += float64(s.InService)
			limit += float64(s.Limit)
		}
		if s.OK > 0 {
			st.OKSamples++
			st.P50Lo, st.P50Hi = minNaN(st.P50Lo, s.P50MS), maxNaN(st.P50Hi, s.P50MS)
			st.P99Lo, st.P99Hi = minNaN(st.P99Lo, s.P99MS), maxNaN(st.P99Hi, s.P99MS)
		}
	}
	st.InFlight = meanOf(inflight, st.Samples)
	st.Queued, st.InService, st.Limit = meanOf(queued, st.LabSamples), meanOf(inService, st.LabSamples), meanOf(limit, st.LabSamples)
	return st
}

// Column reads one of StretchColumns: a count a second, a mean, or a
// percentile's lowest and highest second (lo == hi for the others). ok is
// false for a name that is not one of StretchColumns, and lo and hi are NaN
// when the stretch has nothing to say (no samples, no lab read, no ok
// answer).
func (st Stretch) Column(name string) (lo, hi float64, ok bool) {
	one := func(v float64) (float64, float64, bool) { return v, v, true }
	switch name {
	case "ok":
		return one(st.Rate(st.OK))
	case "refused":
		return one(st.Rate(st.Refused))
	case "gaveup":
		return one(st.Rate(st.GaveUp))
	case "client_busy":
		return one(st.Rate(st.ClientBusy))
	case "in_flight":
		return one(st.InFlight)
	case "queued":
		return one(st.Queued)
	case "in_service":
		return one(st.InService)
	case "limit":
		return one(st.Limit)
	case "p50_ms":
		return st.P50Lo, st.P50Hi, true
	case "p99_ms":
		return st.P99Lo, st.P99Hi, true
	}
	return math.NaN(), math.NaN(), false
}

// Rate is n a second over the stretch's samples (NaN with none).
func (st Stretch) Rate(n int) float64 {
	if st.Seconds <= 0 {
		return math.NaN()
	}
	return float64(n) / st.Seconds
}

func meanOf(sum float64, n int) float64 {
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

func minNaN(a, b float64) float64 {
	if math.IsNaN(a) {
		return b
	}
	return math.Min(a, b)
}

func maxNaN(a, b float64) float64 {
	if math.IsNaN(a) {
		return b
	}
	return math.Max(a, b)
}
