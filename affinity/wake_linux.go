package affinity

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// WakeLate measures how late the kernel wakes a thread on cpus while the
// caller does something else: an OS thread of its own, pinned to cpus,
// sleeps nap at a time in the kernel (nanosleep, not a Go timer) until stop
// is closed, then sends how much later than asked each sleep ended. That is
// the floor under anything that waits for one of those processors: a lab's
// own workers and whatever else the machine runs there are in it, Go's
// scheduler is not. Tests that time a lab use it to tell a slow lab from a
// busy machine in the same run.
func WakeLate(cpus []int, nap time.Duration, stop <-chan struct{}) (<-chan []time.Duration, error) {
	out := make(chan []time.Duration, 1)
	ready := make(chan error, 1)
	go func() {
		// The thread is given back as it was found, its mask restored,
		// rather than ended with the goroutine (as a goroutine that exits
		// locked would end it): a child process started from this thread
		// earlier, with Pdeathsig set as the lab's children are, would be
		// killed when its thread ended.
		runtime.LockOSThread()
		var prev, set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &prev); err != nil {
			runtime.UnlockOSThread()
			ready <- err
			return
		}
		for _, c := range cpus {
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			runtime.UnlockOSThread()
			ready <- err
			return
		}
		defer func() {
			if unix.SchedSetaffinity(0, &prev) == nil {
				runtime.UnlockOSThread()
			} // else the goroutine exits locked and the thread ends with it
		}()
		ready <- nil
		var late []time.Duration
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
