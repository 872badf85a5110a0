package loadrun

import (
	"syscall"
	"time"
	"unsafe"
)

// preciseSleep blocks the calling thread in nanosleep(2), which wakes within
// tens of microseconds; the Go runtime hands the thread's processor to other
// goroutines meanwhile.
func preciseSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil) // EINTR: the caller loops until its time
}

// heldSleep blocks the calling thread in nanosleep(2) without telling the
// Go runtime: the goroutine keeps its Go processor (P) while it sleeps, so
// on waking it runs at once instead of asking the scheduler for a P, which
// another thread may hold by then. No other goroutine can use that P
// meanwhile, and a garbage collection's stop waits for the sleep to end, so
// it is only for short sleeps (holdLast) in a process with another P.
func heldSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	// EINTR (the runtime's preemption signal among others): the caller
	// loops until its time.
	_, _, _ = syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}
