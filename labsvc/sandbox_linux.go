package labsvc

import (
	"fmt"

	"golang.org/x/sys/unix"

	"capacitylab/affinity"
)

// pin sets the affinity of every thread of the process to the first n
// allowed processors.
func pin(n int) ([]int, error) {
	allowed, err := allowedCPUs()
	if err != nil {
		return nil, err
	}
	cpus := allowed[:min(len(allowed), n)]
	if err := affinity.PinTo(cpus); err != nil {
		return nil, err
	}
	return cpus, nil
}

// LabCPUs returns the processors a lab child started now with cfg would pin
// itself to: the first cfg.CPUs processors the calling thread may use (a
// child inherits its parent's affinity and ApplySandbox keeps the first
// CPUS of it). It returns fewer when fewer are allowed.
func LabCPUs(cfg Config) ([]int, error) {
	cpus, err := allowedCPUs()
	if err != nil {
		return nil, err
	}
	return cpus[:min(len(cpus), max(cfg.CPUs, 0))], nil
}

// allowedCPUs returns the processors the calling thread may use; in a lab,
// whose threads are all pinned alike, the lab's.
func allowedCPUs() ([]int, error) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return nil, fmt.Errorf("reading affinity: %w", err)
	}
	var cpus []int
	for cpu := 0; cpu < len(allowed)*64; cpu++ {
		if allowed.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus, nil
}
