//go:build !linux

package labsvc

import (
	"errors"
	"runtime"
)

// errNoAffinity says why nothing is pinned on this operating system.
var errNoAffinity = errors.New("processor affinity is not set on " + runtime.GOOS + ": CPUS bounds only the lab's spins and its GOMAXPROCS, and the lab shares processors with the generator")

// pin cannot set processor affinity on this system; CPUS still bounds the
// spins and GOMAXPROCS.
func pin(int) ([]int, error) { return nil, errNoAffinity }

// LabCPUs cannot say which processors a lab would use on this system.
func LabCPUs(Config) ([]int, error) { return nil, errNoAffinity }
