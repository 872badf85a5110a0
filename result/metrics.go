package result

import (
	"math"
	"slices"
	"time"
)

// LateAfter is how far behind its intended time a send may leave before it
// is counted as late.
const LateAfter = time.Millisecond

// Row is the summary of one window, with the lessons' columns. JSON field
// names are the column names. The package doc defines every field.
type Row struct {
	Offered      float64 `json:"offered"`
	Sent         int     `json:"sent"`
	OK           int     `json:"ok"`
	Refused      int     `json:"refused"`
	Gaveup       int     `json:"gaveup"`
	Error        int     `json:"error"`
	OKPerSec     float64 `json:"ok_per_sec"`
	P50MS        float64 `json:"p50_ms"`
	P99MS        float64 `json:"p99_ms"`
	Done         int     `json:"done"`
	Lost         int     `json:"lost"`
	Queued       int     `json:"queued"`
	Backlogged   int     `json:"backlogged"`
	NotSent      int     `json:"not_sent"`
	ClientBusy   int     `json:"client_busy"`
	Late         int     `json:"late"`
	SendLagP99MS float64 `json:"send_lag_p99_ms"`
	MeanMS       float64 `json:"mean_ms"`
	P95MS        float64 `json:"p95_ms"`
	MaxMS        float64 `json:"max_ms"`
	N            int     `json:"n"`

	// Beyond the lessons' columns.
	Window       int     `json:"window"`
	Arrivals     int     `json:"arrivals"`
	Seconds      float64 `json:"seconds"`
	SendLagMaxMS float64 `json:"send_lag_max_ms"`
	Clients      int     `json:"clients,omitempty"`
	LabServiceMS float64 `json:"lab_service_ms"`
	LabCPUMS     float64 `json:"lab_cpu_ms"`
	// LabWaitMS is the mean wait in the lab's queue of the requests it
	// served in the window, and LabServiceSCV the squared coefficient of
	// variation of their service times (variance ÷ mean², the cs² of
	// queueing formulas), both the lab's own (its stats); -1 when not read.
	LabWaitMS     float64 `json:"lab_wait_ms"`
	LabServiceSCV float64 `json:"lab_service_scv"`
	Note          string  `json:"note,omitempty"`

	// A retrying client's (package retry) and classes' columns. Every
	// column above counts logical requests (a request's outcome is its
	// last attempt's; its latency runs from its first attempt's intended
	// time to its last attempt's end); these count attempts.
	Attempts       int        `json:"attempts"`
	AttemptsPerSec float64    `json:"attempts_per_sec"`
	Amplification  float64    `json:"amplification"`
	BreakerOpen    int        `json:"breaker_open"`
	ByClass        []ClassRow `json:"by_class,omitempty"`

	// A fanned-out window's sub-requests (loadrun.Open.Fanout) and a
	// hedging client's copies (package hedge). Without fan-out every
	// request is its one sub-request: sub_requests is sent and the
	// percentiles are p50 and p99.
	SubRequests int     `json:"sub_requests"`
	SubP50MS    float64 `json:"sub_p50_ms"`
	SubP99MS    float64 `json:"sub_p99_ms"`
	OverSubP99  float64 `json:"over_sub_p99"`
	Hedges      int     `json:"hedges"`
}

// ClassRow is one class's part of a window's row, in a window whose
// requests carried classes (Record.Class other than Default).
type ClassRow struct {
	Class    Class   `json:"class"`
	Arrivals int     `json:"arrivals"`
	OK       int     `json:"ok"`
	Refused  int     `json:"refused"`
	Gaveup   int     `json:"gaveup"`
	Error    int     `json:"error"`
	NotSent  int     `json:"not_sent"` // not_sent, client_busy and breaker_open together
	OKShare  float64 `json:"ok_share"` // ok ÷ arrivals
	P99MS    float64 `json:"p99_ms"`
}

// Metrics folds records into a window's statistics one at a time, so a
// summary can be taken at any moment. The zero value is ready to use. It is
// not safe for concurrent use; callers that add from several goroutines
// hold a lock.
type Metrics struct {
	arrivals, sent                     int
	ok, refused, gaveup, errs, notSent int
	clientBusy, breakerOpen            int
	attempts, hedges                   int
	subSent                            int             // sub-requests sent (AddSub)
	subLat                             []time.Duration // their ok latencies
	late                               int
	classed                            bool
	byClass                            [3]classCounts
	lagMax                             time.Duration
	okSum                              time.Duration
	okLastEnd                          time.Duration
	okLat                              []time.Duration
	lags                               []time.Duration
}

// classCounts is one class's outcomes, for ClassRow.
type classCounts struct {
	arrivals, ok, refused, gaveup, errs, notSent int
	okLat                                        []time.Duration
}

// AddSub folds one sub-request of a fanned-out window in (one of Fold's
// subs); its logical request is added with Add.
func (m *Metrics) AddSub(s Record) {
	if s.Outcome == NotSent {
		return
	}
	m.subSent++
	if s.Outcome == OK {
		m.subLat = append(m.subLat, s.Latency())
	}
}

// Add folds one finished logical request in: a record of a client that
// does not retry, fan out or hedge, or one of Logical's. Its sent
// attempts (every attempt and copy of every sub-request) are Attempt + 1,
// its hedges' copies Copy.
func (m *Metrics) Add(r Record) {
	m.arrivals++
	if r.Class != Default {
		m.classed = true
	}
	c := &m.byClass[min(int(r.Class), len(m.byClass)-1)]
	c.arrivals++
	switch r.Outcome {
	case NotSent:
		switch r.Reason {
		case ReasonClientBusy:
			m.clientBusy++
		case ReasonBreakerOpen:
			m.breakerOpen++
		default:
			m.notSent++
		}
		c.notSent++
		return
	case OK:
		m.ok++
		lat := r.Latency()
		m.okSum += lat
		m.okLat = append(m.okLat, lat)
		m.okLastEnd = max(m.okLastEnd, r.End)
		c.ok++
		c.okLat = append(c.okLat, lat)
	case Refused:
		m.refused++
		c.refused++
	case Gaveup:
		m.gaveup++
		c.gaveup++
	case Error:
		m.errs++
		c.errs++
	}
	// Every other record was sent, including an Unfinished one, which
	// therefore shows up in lost.
	m.sent++
	m.attempts += r.Attempt + 1
	m.hedges += r.Copy
	lag := r.Lag()
	m.lags = append(m.lags, lag)
	if lag > LateAfter {
		m.late++
	}
	m.lagMax = max(m.lagMax, lag)
}

// Grow makes room for n more records, so adding them allocates nothing.
func (m *Metrics) Grow(n int) {
	m.okLat = slices.Grow(m.okLat, n)
	m.lags = slices.Grow(m.lags, n)
}

// GrowSub makes room for n more sub-requests (AddSub).
func (m *Metrics) GrowSub(n int) { m.subLat = slices.Grow(m.subLat, n) }

// Arrivals is how many records have been added.
func (m *Metrics) Arrivals() int { return m.arrivals }

// Row summarises what has been added so far. offered is the window's
// offered rate (arrivals a second) and window its scheduled length. Done,
// Queued and Backlogged are -1 here: they come from the lab (see Sweep).
//
// OKPerSec is ok ÷ max(window, end of the last ok answer), in seconds: the
// rate at which answers were actually delivered. Dividing by the window alone
// would credit a saturated service with answers it delivered after the window
// closed (up to one timeout later), and overstate its capacity.
func (m *Metrics) Row(offered float64, window time.Duration) Row {
	r := Row{
		Offered:      offered,
		Arrivals:     m.arrivals,
		Sent:         m.sent,
		OK:           m.ok,
		Refused:      m.refused,
		Gaveup:       m.gaveup,
		Error:        m.errs,
		NotSent:      m.notSent,
		ClientBusy:   m.clientBusy,
		Late:         m.late,
		N:            len(m.okLat),
		Done:         -1,
		Queued:       -1,
		Backlogged:   -1,
		LabServiceMS: -1,
		LabCPUMS:     -1,
		LabWaitMS:    -1,
		Seconds:      window.Seconds(),

		LabServiceSCV: -1,
	}
	r.Lost = r.Sent - r.OK - r.Refused - r.Gaveup - r.Error
	r.Attempts, r.BreakerOpen = m.attempts, m.breakerOpen
	r.Hedges, r.SubRequests = m.hedges, m.sent
	if m.subSent > 0 {
		r.SubRequests = m.subSent
	}
	r.Amplification = 1
	if r.SubRequests > 0 {
		r.Amplification = Round(float64(m.attempts)/float64(r.SubRequests), 1000)
	}
	if window > 0 {
		r.AttemptsPerSec = Round(float64(m.attempts)/window.Seconds(), 100)
	}
	if m.classed {
		for _, k := range Classes() {
			c := m.byClass[k]
			cr := ClassRow{Class: k, Arrivals: c.arrivals, OK: c.ok, Refused: c.refused, Gaveup: c.gaveup, Error: c.errs, NotSent: c.notSent}
			if c.arrivals > 0 {
				cr.OKShare = Round(float64(c.ok)/float64(c.arrivals), 1000)
			}
			if len(c.okLat) > 0 {
				lat := slices.Clone(c.okLat)
				slices.Sort(lat)
				cr.P99MS = MS(NearestRank(lat, 99))
			}
			r.ByClass = append(r.ByClass, cr)
		}
	}
	if span := max(window, m.okLastEnd); span > 0 {
		r.OKPerSec = Round(float64(m.ok)/span.Seconds(), 100)
	}
	if n := len(m.okLat); n > 0 {
		lat := slices.Clone(m.okLat)
		slices.Sort(lat)
		r.P50MS = MS(NearestRank(lat, 50))
		r.P95MS = MS(NearestRank(lat, 95))
		r.P99MS = MS(NearestRank(lat, 99))
		r.MaxMS = MS(lat[n-1])
		r.MeanMS = MS(m.okSum / time.Duration(n))
		r.SubP50MS, r.SubP99MS = r.P50MS, r.P99MS
		sub := NearestRank(lat, 99)
		if len(m.subLat) > 0 {
			s := slices.Clone(m.subLat)
			slices.Sort(s)
			sub = NearestRank(s, 99)
			r.SubP50MS, r.SubP99MS = MS(NearestRank(s, 50)), MS(sub)
		}
		// Latencies are whole microseconds: the first slower than sub.
		over, _ := slices.BinarySearch(lat, sub+time.Microsecond)
		r.OverSubP99 = Round(float64(n-over)/float64(n), 1000)
	} else if len(m.subLat) > 0 {
		s := slices.Clone(m.subLat)
		slices.Sort(s)
		r.SubP50MS, r.SubP99MS = MS(NearestRank(s, 50)), MS(NearestRank(s, 99))
	}
	if len(m.lags) > 0 {
		lags := slices.Clone(m.lags)
		slices.Sort(lags)
		r.SendLagP99MS = MS(max(0, NearestRank(lags, 99)))
		r.SendLagMaxMS = MS(max(0, m.lagMax))
	}
	return r
}

// NearestRank returns the p-th percentile (0 < p ≤ 100) of sorted by the
// nearest-rank rule: the value at rank ⌈p/100 × n⌉, counting from 1. It
// returns 0 for an empty slice.
func NearestRank(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p * float64(n) / 100))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// MS is d in milliseconds rounded to the microsecond, as rows, samples
// and events carry times.
func MS(d time.Duration) float64 { return Round(float64(d)/float64(time.Millisecond), 1000) }

// Round is v rounded to the nearest 1/scale (scale 100: two decimals).
func Round(v, scale float64) float64 { return math.Round(v*scale) / scale }
