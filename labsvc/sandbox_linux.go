package labsvc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

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

// idleMonitor gives the Go runtime's monitor thread (sysmon) the SCHED_IDLE
// policy, so that it runs only when the lab's processor has nothing else to
// do. While a goroutine runs, sysmon wakes every 20 µs at first (backing
// off to 10 ms): at normal priority each wake-up preempted the spinning
// worker on the lab's processor, about 9 times in a 2 ms spin, which
// stretched the spin's wall time by 0.1 to 0.15 ms at rest (measured with
// the thread's schedstat). sysmon is the first thread the runtime starts
// after the main one (runtime.main does it before anything else), so it is
// the thread whose id follows the process id most closely. It returns that
// thread's id.
func idleMonitor() (int, error) {
	tids, err := affinity.ThreadIDs()
	if err != nil {
		return 0, err
	}
	pid := os.Getpid()
	pidMax := 1 << 22
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			pidMax = n
		}
	}
	mon, best := 0, pidMax
	for _, tid := range tids {
		if d := ((tid-pid)%pidMax + pidMax) % pidMax; d > 0 && d < best {
			mon, best = tid, d
		}
	}
	if mon == 0 {
		return 0, errors.New("no thread besides the main one")
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
	if err := unix.SchedSetAttr(mon, &attr, 0); err != nil {
		return 0, fmt.Errorf("thread %d: %w", mon, err)
	}
	return mon, nil
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
