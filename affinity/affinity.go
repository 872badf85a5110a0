package affinity

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Pinning is what PinAwayFrom did to the calling process. Call Restore when
// the lab it keeps away from has stopped.
type Pinning struct {
	Lab       []int // the lab's processors
	Generator []int // processors the calling process is now limited to; nil when nothing changed

	saved masks // what Restore puts back (affinity_linux.go)
}

// Pinned reports whether PinAwayFrom changed the process's affinity.
func (p *Pinning) Pinned() bool { return p != nil && p.Generator != nil }

// String says on one line what was done, for a log line.
func (p *Pinning) String() string {
	if !p.Pinned() {
		return fmt.Sprintf("generator not pinned: the lab's processor(s) %v are all this process may use, so the lab shares them with the generator", p.Lab)
	}
	return fmt.Sprintf("generator pinned to processor(s) %v, away from the lab's %v", p.Generator, p.Lab)
}

// ProcessCPUs returns every processor some thread of process pid may run
// on, ascending (the union of ThreadCPUs).
func ProcessCPUs(pid int) ([]int, error) {
	threads, err := ThreadCPUs(pid)
	if err != nil {
		return nil, err
	}
	var all []int
	for _, cpus := range threads {
		for _, c := range cpus {
			if !slices.Contains(all, c) {
				all = append(all, c)
			}
		}
	}
	slices.Sort(all)
	return all, nil
}

// Restore puts back every thread's affinity as it was before PinAwayFrom;
// threads started since get the mask the calling thread had. It does
// nothing when PinAwayFrom changed nothing.
func (p *Pinning) Restore() error {
	if !p.Pinned() {
		return nil
	}
	return p.restore()
}

// KeepFree keeps the last n processors the calling process may use free of
// it, for the load generators of the sweeps it runs, and returns them: it
// pins every thread of the process (PinAwayFrom) to the others, so a
// server's own work (pages, and the fan-out of a run's rows to every
// watching browser) never runs where a generator times its sends. The lab
// children it starts afterwards inherit the narrower mask and take their
// processors from it; a load child is pinned to the free ones explicitly
// (measure.Config.Generator). When the process may use n processors or
// fewer it keeps none free, changes nothing and returns nil. Restore on the
// returned Pinning puts the process back (for tests; a server keeps them
// free for as long as it lives).
func KeepFree(n int) (free []int, p *Pinning, err error) {
	allowed, err := Allowed()
	if err != nil {
		return nil, nil, err
	}
	if n < 1 || len(allowed) <= n {
		return nil, nil, nil
	}
	free = allowed[len(allowed)-n:]
	if p, err = PinAwayFrom(free); err != nil {
		return nil, nil, err
	}
	return free, p, nil
}

// ParseCPUList parses a Linux CPU list such as "0", "0-3" or "0,2-3,8"
// into ascending processor numbers.
func ParseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("CPU list %q is not allowed: want numbers and ranges such as 0,2-3", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("CPU list %q is not allowed: want numbers and ranges such as 0,2-3", s)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
