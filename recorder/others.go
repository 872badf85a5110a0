package recorder

import (
	"os"
	"slices"
	"strconv"
	"strings"
)

// newOthersMeter returns a meter of the processor time that programs
// other than this process and its children pids (a preset's lab and load
// children) take, from /proc (Linux): the busy time of every processor
// (/proc/stat) less this process's and the children's (/proc/PID/stat), as
// a share of all processor time since the first call with the same pids,
// times the processors. The first call with new pids starts counting and
// says it cannot know yet; so does every call elsewhere, or once a child's
// figures cannot be read.
func newOthersMeter() func(pids []int) (float64, bool) {
	type sample struct {
		pids                     []int
		busy, total, self, child int64
		cpus                     int
		ok                       bool
	}
	var first sample
	return func(pids []int) (float64, bool) {
		busy, total, cpus, ok := procStat()
		self, okSelf := procTicks("/proc/self/stat")
		var child int64
		for _, pid := range pids {
			t, okChild := procTicks("/proc/" + strconv.Itoa(pid) + "/stat")
			child += t
			ok = ok && okChild
		}
		s := sample{slices.Clone(pids), busy, total, self, child, cpus, ok && okSelf}
		if !slices.Equal(first.pids, pids) || first.pids == nil {
			first = s
			return 0, false
		}
		if !s.ok || !first.ok || s.total <= first.total {
			return 0, false
		}
		others := (s.busy - first.busy) - (s.self - first.self) - (s.child - first.child)
		return float64(max(others, 0)) / float64(s.total-first.total) * float64(s.cpus), true
	}
}

// procStat reads the busy and total clock ticks of all processors from
// /proc/stat, and how many processors it lists.
func procStat() (busy, total int64, cpus int, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 8 && f[0] == "cpu":
			// user nice system idle iowait irq softirq steal ...
			var v [8]int64
			for i := range v {
				v[i], err = strconv.ParseInt(f[i+1], 10, 64)
				if err != nil {
					return 0, 0, 0, false
				}
			}
			busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
			total = busy + v[3] + v[4]
			ok = true
		case len(f) > 0 && strings.HasPrefix(f[0], "cpu") && f[0] != "cpu":
			cpus++
		}
	}
	return busy, total, cpus, ok && cpus > 0
}

// procTicks reads the user and system clock ticks of a process (all its
// threads) from its /proc/PID/stat.
func procTicks(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	// After the command: state ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime stime (fields 3 to 15 of the line).
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	return u + st, err1 == nil && err2 == nil
}
