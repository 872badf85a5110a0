//go:build !linux

package labsvc

// pin cannot set processor affinity on this system; CPUS still bounds
// GOMAXPROCS.
func pin(int) ([]int, error) { return nil, errNoAffinity }
