//go:build !linux

package labsvc

import (
	"errors"
	"runtime"
)

// errNoAffinity says why nothing is pinned on this operating system.
var errNoAffinity = errors.New("processor affinity is not set on " + runtime.GOOS + ": CPUS bounds only the lab's spins and its GOMAXPROCS, and the lab shares processors with the generator")

// affinity is empty: nothing is pinned here.
type affinity struct{}

// LabCPUs cannot say which processors a lab would use on this system.
func LabCPUs(Config) ([]int, error) { return nil, errNoAffinity }

// PinAwayFrom cannot pin on this system: it says so and changes nothing.
func PinAwayFrom([]int) (*Pinning, error) { return nil, errNoAffinity }

func (p *Pinning) restore() error { return nil }

// ThreadCPUs cannot read threads' processors on this system.
func ThreadCPUs(int) (map[int][]int, error) { return nil, errNoAffinity }
