package affinity

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// masks are the processor masks PinAwayFrom replaced.
type masks struct {
	prev   unix.CPUSet         // the calling thread's mask before; for threads started since
	before map[int]unix.CPUSet // each thread's mask before
}

func cpuList(set unix.CPUSet) []int {
	var cpus []int
	for cpu := 0; cpu < len(set)*64; cpu++ {
		if set.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}

// PinAwayFrom limits every thread of the calling process to the processors
// it may use now minus lab, such as a running lab child's own (ProcessCPUs
// of its pid), so the load generator and anything else in this process
// keep off the lab's processors. Threads the Go runtime starts later
// inherit the mask from the thread that creates them, and every existing
// thread is pinned (passes over /proc/self/task until no new thread
// appears), so the whole process stays off.
//
// Call it after starting the lab child and call Restore before starting
// another: a child inherits its parent's affinity when it starts, so a child
// started while the parent is pinned away would pin itself to the
// generator's processors. For the same reason it is for one lab at a time.
//
// When lab holds every processor the process may use (a 1-core host)
// PinAwayFrom changes nothing and returns a Pinning whose Pinned is false;
// its String says so. On error the process's affinity is put back as it
// was.
func PinAwayFrom(lab []int) (*Pinning, error) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return nil, fmt.Errorf("reading affinity: %w", err)
	}
	rest := allowed
	for _, c := range lab {
		rest.Clear(c)
	}
	p := &Pinning{Lab: slices.Clone(lab), saved: masks{prev: allowed, before: map[int]unix.CPUSet{}}}
	if rest.Count() == 0 {
		return p, nil
	}
	// Only the threads that existed before any was pinned have a mask of
	// their own to put back. A thread the runtime starts while this goes
	// round is born with its creator's mask, which may already be the
	// pinned one: recording that as its "before" would make Restore pin
	// it for good (and every thread it starts later). Such threads get
	// the calling thread's mask from before, as threads started later do.
	existing, err := threadIDs()
	if err != nil {
		return nil, err
	}
	if err := setAll(func(tid int) (unix.CPUSet, error) {
		if !slices.Contains(existing, tid) {
			return rest, nil
		}
		var old unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &old); err != nil {
			return rest, err
		}
		p.saved.before[tid] = old
		return rest, nil
	}); err != nil {
		rerr := p.restore()
		return nil, errors.Join(err, rerr)
	}
	p.Generator = cpuList(rest)
	return p, nil
}

func (p *Pinning) restore() error {
	return setAll(func(tid int) (unix.CPUSet, error) {
		if old, ok := p.saved.before[tid]; ok {
			return old, nil
		}
		return p.saved.prev, nil
	})
}

// setAll sets the affinity of every thread of the process to what mask
// says for it, passing over /proc/self/task until a pass finds no thread it
// has not set (threads may be created while it goes round; a new thread
// takes its creator's mask, so once every thread is set no new one escapes).
// Threads that exit meanwhile (ESRCH) are skipped.
func setAll(mask func(tid int) (unix.CPUSet, error)) error {
	return eachThread(func(tid int) error {
		set, err := mask(tid)
		if err != nil {
			return fmt.Errorf("reading affinity of thread %d: %w", tid, err)
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return fmt.Errorf("setting affinity of thread %d: %w", tid, err)
		}
		return nil
	})
}

// eachThread calls set for every thread of the calling process, passing
// over /proc/self/task until a pass finds no thread it has not seen:
// threads may be started while it goes round, and each takes its
// creator's affinity, so once every thread is set no new one escapes.
// Threads that exit meanwhile (set's error wraps unix.ESRCH) are skipped;
// set's first other error is returned. PinTo, PinAwayFrom and Restore set
// affinity with it.
func eachThread(set func(tid int) error) error {
	const maxPasses = 1000
	done := map[int]bool{}
	// A pass can find threads started during the one before, so a process
	// starting threads one after another needs a pass for each (the tests
	// start 16 while pinning: CI under -race needed more than 10 passes).
	// The bound only stops a process that never stops starting threads.
	for pass := 0; pass < maxPasses; pass++ {
		tids, err := threadIDs()
		if err != nil {
			return err
		}
		fresh := 0
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			fresh++
			done[tid] = true
			if err := set(tid); err != nil && !errors.Is(err, unix.ESRCH) {
				return err
			}
		}
		if fresh == 0 {
			return nil
		}
	}
	return fmt.Errorf("threads kept appearing after %d passes over them", maxPasses)
}

// Allowed returns the processors the calling thread may use, ascending; in
// a process whose threads are all pinned alike (a lab child, a load child,
// a server that keeps processors free with KeepFree), the process's.
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("reading affinity: %w", err)
	}
	return cpuList(set), nil
}

// PinTo limits every thread of the calling process to cpus, as a lab child
// pins itself to its CPUS processors; threads started later inherit it.
func PinTo(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return setAll(func(int) (unix.CPUSet, error) { return set, nil })
}

// ThreadCPUs reads the processors each thread of process pid may run on,
// from /proc/<pid>/task/<tid>/status (Cpus_allowed_list), keyed by thread
// id. Threads that exit while it reads are left out. It is how tests and
// operators check where a lab and its generator run.
func ThreadCPUs(pid int) (map[int][]int, error) {
	tids, err := threadsOf(pid)
	if err != nil {
		return nil, err
	}
	out := make(map[int][]int, len(tids))
	for _, tid := range tids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
				continue
			}
			return nil, err
		}
		found := false
		for _, line := range strings.Split(string(b), "\n") {
			v, ok := strings.CutPrefix(line, "Cpus_allowed_list:")
			if !ok {
				continue
			}
			cpus, err := ParseCPUList(strings.TrimSpace(v))
			if err != nil {
				return nil, fmt.Errorf("thread %d of %d: %w", tid, pid, err)
			}
			out[tid], found = cpus, true
			break
		}
		if !found {
			return nil, fmt.Errorf("thread %d of %d: no Cpus_allowed_list in its status", tid, pid)
		}
	}
	return out, nil
}

// threadIDs lists the ids of the calling process's threads, from
// /proc/self/task.
func threadIDs() ([]int, error) { return threadsOf(os.Getpid()) }

// threadsOf lists the ids of process pid's threads, from /proc/<pid>/task.
func threadsOf(pid int) ([]int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, fmt.Errorf("listing threads of %d: %w", pid, err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
