package labsvc

import (
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"capacitylab/admit"
)

// processCPU returns the user + system time the process has used.
func processCPU() (time.Duration, bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// MaxSamples is how many queue-wait and service-time samples a window keeps
// for its summaries; later requests are still counted but not sampled, and
// the summaries say how many samples they are over (n).
const MaxSamples = 1 << 20

// Summary describes a set of samples in milliseconds. Percentiles are
// nearest-rank over the N retained samples; all fields are 0 when N is 0.
type Summary struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	// SCV is the samples' squared coefficient of variation: their
	// variance (over N) divided by their mean squared; 0 when the mean
	// is 0. For service times it is what queueing formulas call cs².
	SCV float64 `json:"scv"`
}

// BadCounts breaks down the callers that were accepted but never sent a
// complete request.
type BadCounts struct {
	Timeout int64 `json:"timeout"` // sent nothing, or not enough, within ReadTimeout
	Gone    int64 `json:"gone"`    // closed the connection before a complete request
	Garbage int64 `json:"garbage"` // sent something that is not an HTTP/1.x request (answered 400)
}

// ClassCounts is one class's part of a window's counts (its requests'
// X-Criticality). At every instant accepted = done + dropped + inside.
type ClassCounts struct {
	Accepted int64 `json:"accepted"` // admitted by the door (plus those carried)
	Refused  int64 `json:"refused"`  // answered 503: refused at the door, or dropped
	Dropped  int64 `json:"dropped"`  // admitted, then dropped from the queue (in refused too)
	Done     int64 `json:"done"`     // served to completion
	Inside   int   `json:"inside"`   // queued or in service now
}

// ClassStats is a window's counts by class. Every admitted request is of
// one class, so the classes' accepted add up to accepted less bad (a
// caller that never sent a complete request has no class), and their
// refused, dropped and done to the totals.
type ClassStats struct {
	Critical  ClassCounts `json:"critical"`
	Default   ClassCounts `json:"default"`
	Sheddable ClassCounts `json:"sheddable"`
}

// Of returns class c's counts.
func (cs ClassStats) Of(c admit.Class) ClassCounts {
	switch c {
	case admit.Critical:
		return cs.Critical
	case admit.Sheddable:
		return cs.Sheddable
	}
	return cs.Default
}

// Stats is the lab's window of counters since the last reset, as served by
// GET /stats. At every instant
//
//	accepted = done + queued + in_service + bad + dropped
//
// holds (see Unaccounted), and for each class (Classes) accepted = done +
// dropped + inside.
type Stats struct {
	Since     time.Time `json:"since"`      // when the window began (start or last reset)
	Workers   int       `json:"workers"`    // WORKERS in force now
	Accepted  int64     `json:"accepted"`   // admitted by the door into the queue (plus Carried)
	Refused   int64     `json:"refused"`    // answered 503: refused at the door (never queued), or Dropped
	Done      int64     `json:"done"`       // served to completion, whether or not the caller still listened
	Queued    int       `json:"queued"`     // waiting in the queue now
	QueuedMax int       `json:"queued_max"` // most that waited at once in this window
	InService int       `json:"in_service"` // held by a worker now; more than Workers while workers WORKERS dropped finish theirs
	Bad       int64     `json:"bad"`        // accepted but no complete request (sum of BadBy)
	BadBy     BadCounts `json:"bad_by"`
	// Dropped is how many were admitted, then taken from the queue and
	// refused (503) because they had waited too long (POLICY=sojourn);
	// they are counted in Refused too, so Refused is every 503 the lab
	// answered.
	Dropped int64 `json:"dropped"`
	// PolicyLimit is the admission policy's bound on requests inside
	// (queued + in service) now: the quota, an adaptive policy's current
	// limit, WORKERS + LIMIT for the queue policy with a LIMIT; 0 when it
	// has none.
	PolicyLimit int `json:"policy_limit"`
	// Reading is how many connections the lab has accepted and is
	// reading the request of now: in none of the counts above until it
	// has been read (or found bad).
	Reading int `json:"reading"`
	// Classes counts the requests by class, as their X-Criticality says,
	// whether or not the policy sheds by class.
	Classes ClassStats `json:"classes"`
	// Carried is how many were queued or in service when the window began;
	// they are included in Accepted so the identity holds within a window.
	Carried int64 `json:"carried"`
	// BusyMS is worker-time spent holding connections (served or bad), ms.
	BusyMS float64 `json:"busy_ms"`
	// SpinCPUMS is the processor time the spins measured on their threads,
	// ms. With SPIN_MS=s it is about s × done however long the spins took in
	// wall time.
	SpinCPUMS float64 `json:"spin_cpu_ms"`
	// ProcessCPUMS is the processor time (user + system) the whole process
	// used since the window began, ms: spins, the door, the workers' I/O,
	// the runtime. In a lab child it is the lab's; in process it includes
	// the caller's. ProcessCPUMS / (elapsed × CPUS) is the lab's utilisation.
	ProcessCPUMS float64 `json:"process_cpu_ms"`
	// QueueWaitMS summarises, over served requests, the time from accept to a
	// worker taking the connection (the X-Queue-Wait-Ms header).
	QueueWaitMS Summary `json:"queue_wait_ms"`
	// ServiceMS summarises, over served requests, the time from a worker
	// taking the connection to the answer (the X-Service-Ms header).
	ServiceMS Summary `json:"service_ms"`

	// Backlogged is how many connections wait now in the kernel's accept
	// queue, accepted by nobody yet and so in none of the counts above;
	// BackloggedMax the most any accept found waiting in this window (the
	// door's or a worker's, read just before it accepts), and Backlog the
	// most the kernel holds (BACKLOG as the kernel applies it). All three
	// are -1 where the system does not say (off Linux).
	Backlogged    int `json:"backlogged"`
	BackloggedMax int `json:"backlogged_max"`
	Backlog       int `json:"backlog"`
}

// Unaccounted returns accepted − done − queued − in_service − bad −
// dropped, which is always 0 unless the lab has a bug.
func (s Stats) Unaccounted() int64 {
	return s.Accepted - s.Done - int64(s.Queued) - int64(s.InService) - s.Bad - s.Dropped
}

// window holds the counters of one stats window; the Server guards it.
type window struct {
	since                   time.Time
	accepted, refused, done int64
	dropped                 int64 // admitted, then dropped from the queue (in refused too)
	carried                 int64
	admitted                int64 // admitted by the door in this window, carried ones not counted: the stall count
	bad                     BadCounts
	queuedMax               int
	busy, spinCPU           time.Duration
	processCPU              time.Duration // process CPU time at the start
	backlogMax              int           // most found in the kernel's accept queue
	waitSamples, svcSamples []float64
	classes                 [3]classWindow // by admit.Class
}

// classWindow is one class's counters in a window.
type classWindow struct {
	accepted, refused, dropped, done int64
}

// reset begins a window at now with queued and inService connections
// carried into it, inside of them of each class.
func (w *window) reset(now time.Time, queued, inService int, inside [3]int) {
	w.since = now
	w.carried = int64(queued + inService)
	w.accepted = w.carried
	for c := range w.classes {
		w.classes[c] = classWindow{accepted: int64(inside[c])}
	}
	w.refused, w.done, w.admitted, w.dropped = 0, 0, 0, 0
	w.bad = BadCounts{}
	w.queuedMax = queued
	w.busy, w.spinCPU = 0, 0
	w.processCPU, _ = processCPU()
	w.waitSamples = w.waitSamples[:0]
	w.svcSamples = w.svcSamples[:0]
}

// classStats is the window's counts by class, with inside of each class
// queued or in service now.
func (w *window) classStats(inside [3]int) ClassStats {
	of := func(c admit.Class) ClassCounts {
		k := w.classes[c]
		return ClassCounts{Accepted: k.accepted, Refused: k.refused, Dropped: k.dropped, Done: k.done, Inside: inside[c]}
	}
	return ClassStats{Critical: of(admit.Critical), Default: of(admit.Normal), Sheddable: of(admit.Sheddable)}
}

func (w *window) sample(wait, svc time.Duration) {
	if len(w.waitSamples) < MaxSamples {
		w.waitSamples = append(w.waitSamples, ms(wait))
		w.svcSamples = append(w.svcSamples, ms(svc))
	}
}

// summarize sorts xs in place and summarises it.
func summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	slices.Sort(xs)
	var sum float64
	for _, x := range xs {
		sum += x
	}
	n := float64(len(xs))
	mean := sum / n
	var dev float64
	for _, x := range xs {
		dev += (x - mean) * (x - mean)
	}
	var scv float64
	if mean > 0 {
		scv = dev / n / (mean * mean)
	}
	return Summary{
		N:    len(xs),
		Mean: mean,
		P50:  nearestRank(xs, 50),
		P99:  nearestRank(xs, 99),
		Max:  xs[len(xs)-1],
		SCV:  scv,
	}
}

// nearestRank returns the p-th percentile of sorted xs: the smallest value
// with at least p% of the samples at or below it.
func nearestRank(sorted []float64, p int) float64 {
	n := len(sorted)
	rank := (n*p + 99) / 100
	rank = max(1, min(rank, n))
	return sorted[rank-1]
}
