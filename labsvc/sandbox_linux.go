package labsvc

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pin sets the affinity of every thread of the process to the first n
// allowed processors.
func pin(n int) ([]int, error) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return nil, fmt.Errorf("reading affinity: %w", err)
	}
	var set unix.CPUSet
	var cpus []int
	for cpu := 0; cpu < len(allowed)*64 && len(cpus) < n; cpu++ {
		if allowed.IsSet(cpu) {
			set.Set(cpu)
			cpus = append(cpus, cpu)
		}
	}
	// Threads may be created while we go round; pass until one finds no new
	// thread.
	done := map[int]bool{}
	for pass := 0; pass < 5; pass++ {
		tids, err := threadIDs()
		if err != nil {
			return nil, err
		}
		fresh := 0
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			fresh++
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return nil, fmt.Errorf("setting affinity: %w", err)
			}
			done[tid] = true
		}
		if fresh == 0 {
			break
		}
	}
	return cpus, nil
}

func threadIDs() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("listing threads: %w", err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
