package labsvc

import (
	"capacitylab/affinity"
)

// pin sets the affinity of every thread of the process to the first n
// allowed processors.
func pin(n int) ([]int, error) {
	allowed, err := affinity.Allowed()
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
	cpus, err := affinity.Allowed()
	if err != nil {
		return nil, err
	}
	return cpus[:min(len(cpus), max(cfg.CPUs, 0))], nil
}
