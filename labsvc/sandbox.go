package labsvc

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// MemoryLimit is the memory cap of a lab process, applied with
// debug.SetMemoryLimit. It is a soft cap: the garbage collector works harder
// as the heap nears it. A hard RLIMIT_AS is not used because the Go runtime
// reserves far more address space than it uses, so an address-space limit
// small enough to matter makes the runtime fail at random (thread creation,
// heap growth) instead of at the lab's own allocations.
const MemoryLimit = 256 << 20

// GoMaxProcs is the GOMAXPROCS of a lab with cfg: one more than CPUS. The
// spins take turns on CPUS processor tokens (at most CPUS spin at once), so
// the extra P keeps the door, the workers' reads and writes and the control
// API from ever waiting in Go's run queue behind a spinning worker: under
// any load /stats answers within milliseconds and the door accepts at once.
// The kernel, not Go, shares the lab's CPUS processors among them.
func GoMaxProcs(cfg Config) int { return cfg.CPUs + 1 }

// Sandbox describes what ApplySandbox did, for the start line.
type Sandbox struct {
	GOMAXPROCS  int    // Go's parallelism set (GoMaxProcs)
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

// ApplySandbox limits the calling process to cfg.CPUs: CPU affinity
// pinning every thread to the first cfg.CPUs processors it is allowed
// (threads started later inherit it), and GOMAXPROCS set to GoMaxProcs. If the OS refuses pinning, the
// process goes on with GOMAXPROCS alone and the Sandbox says why. It also
// sets the MemoryLimit. It changes process-wide state, so only a lab process
// (cmd/lab, or a child started by StartChild) calls it.
func ApplySandbox(cfg Config) Sandbox {
	sb := Sandbox{GOMAXPROCS: GoMaxProcs(cfg), MemoryLimit: MemoryLimit}
	runtime.GOMAXPROCS(sb.GOMAXPROCS)
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
