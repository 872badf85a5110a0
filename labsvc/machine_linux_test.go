package labsvc_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// wakeLate measures how late the kernel wakes a thread on cpus while the
// test runs: an OS thread of its own, pinned to cpus, sleeps 5 ms at a time
// in the kernel (not on a Go timer) until stop is closed, and sends how much
// later than asked each sleep ended. That is the floor under anything that
// waits for one of those processors: the lab's own spinning workers and
// whatever else the machine runs there are in it, Go's scheduler is not.
func wakeLate(cpus []int, stop <-chan struct{}) (<-chan []time.Duration, error) {
	out := make(chan []time.Duration, 1)
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine: its mask goes with it
		var set unix.CPUSet
		for _, c := range cpus {
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			ready <- err
			return
		}
		ready <- nil
		var late []time.Duration
		const nap = 5 * time.Millisecond
		ts := unix.NsecToTimespec(int64(nap))
		for {
			select {
			case <-stop:
				out <- late
				return
			default:
			}
			start := time.Now()
			_ = unix.Nanosleep(&ts, nil)
			late = append(late, time.Since(start)-nap)
		}
	}()
	return out, <-ready
}

// interruptTime is the processor time all processors have spent so far
// handling interrupts, hard and soft, from /proc/stat, in its 10 ms
// ticks. Without CONFIG_IRQ_TIME_ACCOUNTING (this machine's kernel, 6.18,
// is built without it) a thread's processor clock is charged for the
// interrupts handled while it runs, the loopback packets of other
// programs included, so a spin that reads its own clock computes a little
// less than it counts when the machine is busy with the network. Time the
// hypervisor takes (steal) is not charged (CONFIG_PARAVIRT_TIME_ACCOUNTING)
// and not counted here.
func interruptTime() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat begins %.60q, want the cpu line", line)
	}
	var ticks int64
	for _, i := range []int{6, 7} { // irq, softirq
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat cpu field %d: %w", i, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
