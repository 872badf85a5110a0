package loadrun

import (
	"syscall"
	"time"
)

// preciseSleep blocks the calling thread in nanosleep(2), which wakes within
// tens of microseconds; the Go runtime hands the thread's processor to other
// goroutines meanwhile.
func preciseSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil) // EINTR: the caller loops until its time
}
