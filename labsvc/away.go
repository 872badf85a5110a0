package labsvc

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Pinning is what PinAway did to the calling process. Call Restore when the
// lab child it keeps away from has stopped.
type Pinning struct {
	Lab       []int // processors a lab child with the config pins itself to
	Generator []int // processors the calling process is now limited to; nil when nothing changed

	saved affinity // what Restore puts back (away_linux.go)
}

// Pinned reports whether PinAway changed the process's affinity.
func (p *Pinning) Pinned() bool { return p != nil && p.Generator != nil }

// String says on one line what was done, for a log line.
func (p *Pinning) String() string {
	if !p.Pinned() {
		return fmt.Sprintf("generator not pinned: the lab's processor(s) %v are all this process may use, so the lab shares them with the generator", p.Lab)
	}
	return fmt.Sprintf("generator pinned to processor(s) %v, away from the lab's %v", p.Generator, p.Lab)
}

// PinAway limits every thread of the calling process to the processors it
// may use now minus LabCPUs(cfg), so the load generator, the web server and
// anything else in this process keep off the lab's processors. Threads the
// Go runtime starts later inherit the mask from the thread that creates
// them, and every existing thread is pinned (passes over /proc/self/task
// until no new thread appears), so the whole process stays off.
//
// Call it after starting the lab child and call Restore before starting
// another: a child inherits its parent's affinity when it starts, so a child
// started while the parent is pinned away would pin itself to the
// generator's processors. For the same reason it is for one lab at a time.
//
// When the lab would take every processor the process may use (a 1-core
// host, or CPUS ≥ the processors allowed) PinAway changes nothing and
// returns a Pinning whose Pinned is false; its String says so. On error the
// process's affinity is put back as it was.
func PinAway(cfg Config) (*Pinning, error) {
	lab, err := LabCPUs(cfg)
	if err != nil {
		return nil, err
	}
	return PinAwayFrom(lab)
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

// Restore puts back every thread's affinity as it was before PinAway;
// threads started since get the mask the calling thread had. It does
// nothing when PinAway changed nothing.
func (p *Pinning) Restore() error {
	if !p.Pinned() {
		return nil
	}
	return p.restore()
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
