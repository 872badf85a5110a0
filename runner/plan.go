package runner

import "time"

// Planned is one run waiting or running, as the queue's estimates see it.
type Planned struct {
	Addr     string        // the client address that asked ("" for none)
	Running  bool          // started (else waiting)
	Started  time.Time     // when it started, for a running run
	Estimate time.Duration // Estimate of its request
}

// Plan is a queue as its estimates see it: the running runs, then the
// waiting ones oldest first, with Slots run at once, at Now. The
// in-process Runner and package fleet's queue across processes both
// estimate with it, so their Retry-After and start estimates agree.
type Plan struct {
	Runs  []Planned
	Slots int
	Now   time.Time
}

func (p Plan) remaining(a Planned) time.Duration { return max(0, a.Estimate-p.Now.Sub(a.Started)) }

// RunningRuns is how many of Runs are running.
func (p Plan) RunningRuns() int {
	n := 0
	for _, a := range p.Runs {
		if a.Running {
			n++
		}
	}
	return n
}

// StartAt estimates when the waiting run at index i of Runs starts: the
// running runs' remaining time plus the estimates of the waiting runs
// ahead of it, shared over the slots; now when a slot is free for it.
func (p Plan) StartAt(i int) time.Time {
	slots := max(p.Slots, 1)
	var total time.Duration
	ahead := 0
	for _, a := range p.Runs[:i] {
		if a.Running {
			total += p.remaining(a)
		} else {
			total += a.Estimate
			ahead++
		}
	}
	if slots-p.RunningRuns() > ahead {
		return p.Now
	}
	return p.Now.Add(total / time.Duration(slots))
}

// UntilFree estimates when a place in a full queue frees up: when the
// first running run ends, at least a second.
func (p Plan) UntilFree() time.Duration {
	first := time.Duration(-1)
	for _, a := range p.Runs {
		if a.Running {
			if d := p.remaining(a); first < 0 || d < first {
				first = d
			}
		}
	}
	return max(time.Second, first)
}

// AddressRuns counts addr's runs waiting or running and estimates when the
// first of them ends (at least a second).
func (p Plan) AddressRuns(addr string) (int, time.Duration) {
	n, first := 0, time.Duration(-1)
	for i, a := range p.Runs {
		if a.Addr != addr {
			continue
		}
		n++
		d := p.remaining(a)
		if !a.Running {
			d = p.StartAt(i).Sub(p.Now) + a.Estimate
		}
		if first < 0 || d < first {
			first = d
		}
	}
	return n, max(time.Second, first)
}
