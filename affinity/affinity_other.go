//go:build !linux

package affinity

import (
	"errors"
	"runtime"
	"time"
)

// errNoAffinity says why nothing is pinned on this operating system.
var errNoAffinity = errors.New("processor affinity is not set on " + runtime.GOOS + ": the lab shares processors with the generator")

// masks is empty: nothing is pinned here.
type masks struct{}

// PinAwayFrom cannot pin on this system: it says so and changes nothing.
func PinAwayFrom([]int) (*Pinning, error) { return nil, errNoAffinity }

func (p *Pinning) restore() error { return nil }

// ThreadCPUs cannot read threads' processors on this system.
func ThreadCPUs(int) (map[int][]int, error) { return nil, errNoAffinity }

// Allowed cannot say which processors this process may use on this system.
func Allowed() ([]int, error) { return nil, errNoAffinity }

// PinTo cannot pin on this system: it says so and changes nothing.
func PinTo([]int) error { return errNoAffinity }

// WakeLate is measured on Linux only.
func WakeLate([]int, time.Duration, <-chan struct{}) (<-chan []time.Duration, error) {
	return nil, errNoAffinity
}
