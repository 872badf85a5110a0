package labsvc

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MemoryLimit is the memory cap of a lab process, applied with
// debug.SetMemoryLimit. It is a soft cap: the garbage collector works harder
// as the heap nears it. A hard RLIMIT_AS is not used because the Go runtime
// reserves far more address space than it uses, so an address-space limit
// small enough to matter makes the runtime fail at random (thread creation,
// heap growth) instead of at the lab's own allocations.
const MemoryLimit = 256 << 20

// Sandbox describes what ApplySandbox did, for the start line.
type Sandbox struct {
	GOMAXPROCS  int    // parallelism set
	CPUs        []int  // processors the process is pinned to; nil if pinning was refused
	AffinityErr string // why pinning was refused or limited, if it was
	MemoryLimit int64  // bytes
}

// String renders s on one line, e.g. "GOMAXPROCS=1 cpus=[0] memory=256MiB".
func (s Sandbox) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "GOMAXPROCS=%d", s.GOMAXPROCS)
	if s.CPUs != nil {
		fmt.Fprintf(&b, " cpus=%v", s.CPUs)
	}
	if s.AffinityErr != "" {
		fmt.Fprintf(&b, " (affinity: %s)", s.AffinityErr)
	}
	fmt.Fprintf(&b, " memory=%dMiB", s.MemoryLimit>>20)
	return b.String()
}

// ApplySandbox limits the calling process to cfg.CPUs: GOMAXPROCS, and CPU
// affinity pinning every thread to the first cfg.CPUs processors it is
// allowed (threads started later inherit it). If the OS refuses pinning, the
// process goes on with GOMAXPROCS alone and the Sandbox says why. It also
// sets the MemoryLimit. It changes process-wide state, so only a lab process
// (cmd/lab, or a child started by StartChild) calls it.
func ApplySandbox(cfg Config) Sandbox {
	sb := Sandbox{GOMAXPROCS: cfg.CPUs, MemoryLimit: MemoryLimit}
	runtime.GOMAXPROCS(cfg.CPUs)
	debug.SetMemoryLimit(MemoryLimit)
	cpus, err := pin(cfg.CPUs)
	if err != nil {
		sb.AffinityErr = err.Error()
	}
	sb.CPUs = cpus
	if cpus != nil && len(cpus) < cfg.CPUs {
		sb.AffinityErr = fmt.Sprintf("only %d processors allowed", len(cpus))
	}
	return sb
}

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
