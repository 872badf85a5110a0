package labsvc

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// threadCPU returns the processor time the calling OS thread has used. It
// uses a raw system call: clock_gettime does not block, and going through
// the runtime's syscall path would let the scheduler hand this goroutine's
// processor to another thread whenever the kernel delays the call, which
// with GOMAXPROCS=1 costs a pair of thread switches each time.
func threadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	_, _, errno := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
