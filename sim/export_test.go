package sim

import (
	"time"

	"capacitylab/admit"
)

// WithQuantum returns m with the processors' time slice set to q instead
// of the lab's (labsvc.SpinQuantum), for tests that compare the round robin
// with first come, first served (a quantum longer than any spin) and with
// processor sharing (its limit as the quantum shrinks).
func WithQuantum(m Model, q time.Duration) Model {
	m.quantum = q
	return m
}

// WithClasses returns m with each arrival's class given by class (by its
// Seq), as a generator sending X-Criticality would give them.
func WithClasses(m Model, class func(seq int) admit.Class) Model {
	m.classOf = class
	return m
}
