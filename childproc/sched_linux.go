package childproc

import (
	"capacitylab/affinity"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// SetNice gives every thread of the calling process the niceness nice
// (-20, the highest scheduling weight, to 19, the lowest). On Linux a
// niceness belongs to a thread, and a thread the Go runtime starts later
// takes the niceness of the thread that creates it; SetNice passes over
// /proc/self/task until a pass finds no thread it has not set, so no
// thread is left at the old niceness, now or later.
//
// A niceness below the current one needs CAP_SYS_NICE (root) or an
// RLIMIT_NICE that allows it; without, the first thread refuses, nothing
// is changed and the error says so (it wraps unix.EACCES or unix.EPERM).
func SetNice(nice int) error {
	return affinity.EachThread(func(tid int) error {
		err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice)
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return fmt.Errorf("niceness %d not permitted (it takes root or CAP_SYS_NICE): %w", nice, err)
		}
		if err != nil {
			return fmt.Errorf("setting the niceness of thread %d to %d: %w", tid, nice, err)
		}
		return nil
	})
}

// MayRoundRobin says whether a thread of the calling process may take the
// real-time round-robin policy at priority: nil, or the error SetRoundRobin
// would return. It tries on the calling goroutine's own thread, locked
// meanwhile, and puts that thread back as it was.
func MayRoundRobin(priority int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	was, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return fmt.Errorf("reading this thread's scheduling: %w", err)
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: uint32(priority)}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return fmt.Errorf("real-time priority %d not permitted (it takes root or CAP_SYS_NICE): %w", priority, err)
		}
		return fmt.Errorf("real-time priority %d: %w", priority, err)
	}
	was.Size = unix.SizeofSchedAttr
	if err := unix.SchedSetAttr(0, was, 0); err != nil {
		// The thread stays real-time: a thread the runtime may hand any
		// goroutine to; it should never happen, and it is said.
		return fmt.Errorf("putting this thread back after trying real-time priority %d: %w", priority, err)
	}
	return nil
}

// SetRoundRobin puts every thread of the calling process under the
// real-time round-robin policy (SCHED_RR) at priority (1 to 99): such a
// thread runs as soon as it is ready, ahead of every thread of the normal
// policy on its processor, whatever their niceness. Threads started later
// inherit the policy, and SetRoundRobin passes over the threads as SetNice
// does. The kernel keeps real-time threads to 95% of each second
// (sched_rt_runtime_us), so a runaway one cannot take a processor whole.
//
// It needs CAP_SYS_NICE (root) or an RLIMIT_RTPRIO of priority; without,
// the first thread refuses, nothing is changed and the error says so.
func SetRoundRobin(priority int) error {
	return affinity.EachThread(func(tid int) error {
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: uint32(priority)}
		err := unix.SchedSetAttr(tid, &attr, 0)
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return fmt.Errorf("real-time priority %d not permitted (it takes root or CAP_SYS_NICE): %w", priority, err)
		}
		if err != nil {
			return fmt.Errorf("setting thread %d to real-time priority %d: %w", tid, priority, err)
		}
		return nil
	})
}

// Sched is how the kernel schedules one thread.
type Sched struct {
	Nice       int    // -20 to 19 (kept, unused, under a real-time policy)
	Policy     string // "normal", "fifo", "round-robin", "batch", "idle" or "deadline"
	RTPriority int    // 1 to 99 under fifo and round-robin; 0 otherwise
}

// policyName names the kernel's scheduling policy number p.
func policyName(p int) string {
	switch p {
	case 0:
		return "normal"
	case 1:
		return "fifo"
	case 2:
		return "round-robin"
	case 3:
		return "batch"
	case 5:
		return "idle"
	case 6:
		return "deadline"
	}
	return "policy " + strconv.Itoa(p)
}

// ThreadScheds reads how each thread of process pid is scheduled, from
// /proc/<pid>/task/<tid>/stat, keyed by thread id. Threads that exit
// while it reads are left out. It is how tests and operators check what
// SetNice and SetRoundRobin did.
func ThreadScheds(pid int) (map[int]Sched, error) {
	tids, err := affinity.ThreadsOf(pid)
	if err != nil {
		return nil, err
	}
	out := make(map[int]Sched, len(tids))
	for _, tid := range tids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", strconv.Itoa(tid), "stat"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
				continue
			}
			return nil, err
		}
		s, err := parseStat(string(b))
		if err != nil {
			return nil, fmt.Errorf("thread %d of %d: %w", tid, pid, err)
		}
		out[tid] = s
	}
	return out, nil
}

// parseStat reads the niceness (field 19), real-time priority (40) and
// policy (41) from a stat line: pid (comm) state ppid .... The command may
// hold spaces and parentheses, so fields count from the last ")": field 3
// is the first after it.
func parseStat(line string) (Sched, error) {
	i := strings.LastIndex(line, ")")
	if i < 0 {
		return Sched{}, fmt.Errorf("a stat line without its command: %.100q", line)
	}
	f := strings.Fields(line[i+1:])
	if len(f) < 39 {
		return Sched{}, fmt.Errorf("a stat line of %d fields, want 41 or more: %.100q", len(f)+2, line)
	}
	var n [3]int
	for k, field := range []int{19, 40, 41} {
		v, err := strconv.Atoi(f[field-3])
		if err != nil {
			return Sched{}, fmt.Errorf("stat field %d: %w", field, err)
		}
		n[k] = v
	}
	return Sched{Nice: n[0], RTPriority: n[1], Policy: policyName(n[2])}, nil
}
