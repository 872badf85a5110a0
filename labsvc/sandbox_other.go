//go:build !linux

package labsvc

// pin cannot set processor affinity on this system; CPUS still bounds the
// spins and GOMAXPROCS.
func pin(int) ([]int, error) { return nil, errNoAffinity }

// idleMonitor does nothing on this system.
func idleMonitor() (int, error) { return 0, errNoAffinity }
