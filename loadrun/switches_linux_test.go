package loadrun

import (
	"testing"

	"golang.org/x/sys/unix"
)

// voluntarySwitches is how many times the calling thread has given up its
// processor of its own accord (getrusage(2)'s ru_nvcsw for the thread):
// once for each nanosleep, and once more each time the Go runtime parks it
// in a futex (a thread whose goroutine woke with no Go processor free).
// Being preempted by the kernel is not counted here.
func voluntarySwitches(b *testing.B) int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return ru.Nvcsw
}
