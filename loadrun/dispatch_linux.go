package loadrun

import (
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dispatcher is the thread an open-loop window sends from. Held (Open.Run
// holds it for a window when GOMAXPROCS is at least 2; see GoMaxProcs),
// the dispatching goroutine is locked to its thread, its sleeps and sends
// are raw system calls, so that it keeps its Go processor throughout, and
// it sleeps one step above the process's other threads, so that when it
// wakes it preempts them at once. So, at 10,000 arrivals a second, the
// dispatcher neither waits in the kernel's run queue behind the threads
// reading replies nor, back from a sleep, for Go's scheduler to give it a
// processor those threads hold (both measured: BenchmarkLagSources,
// docs/BENCHMARKS.md).
//
// The step: one real-time priority higher under the real-time policies
// (the load child's threads run at real-time priority 1; measure), the
// highest niceness, -20, under the normal policy. Either takes root or
// CAP_SYS_NICE; without, the thread sleeps at the process's priority.
// Threads the Go runtime starts meanwhile do not inherit the step: a locked
// thread never starts threads itself (the runtime asks its template thread).
//
// The thread is raised from each sleep until its send has left (Open.Run
// calls lower before its go statement): while raised it runs no Go code
// that allocates or could wait for another thread by yielding. A raised thread that waits for a thread of lower priority on the
// same processor by yielding it waits for ever under a real-time policy,
// since such a yield never lets a lower priority run; and the Go runtime
// waits so in places: a goroutine coming back from a system call while
// the collector or the system monitor holds it (which is why every call
// the dispatcher makes is raw), and a collector's assist, which an
// allocation can make the dispatcher run, waiting for a running goroutine
// to stop so that it can scan its stack. TestHeldDispatcherUnderRealTime
// hangs both ways: with the sleeps through the scheduler, and with the
// thread raised for the whole window, go statements included (under the
// parallel load of the whole suite).
//
// Nor may a held thread step down to make a system call through the
// scheduler: back from it, a goroutine whose Go processor was taken
// meanwhile waits for another thread to hand one back, and at the common
// priority that thread and it queue behind whichever of the others is
// running, for as long as 59 ms measured.
//
// What is left: Go's system monitor preempts a goroutine that has run
// 10 ms without passing through the scheduler, and a raw sleep does not
// pass through it. A preempted locked goroutine waits for another thread
// to hand it a Go processor back, at the common priority; mostly for tens
// of microseconds, but for up to 30 ms when the thread reading replies
// is busy (measured with the execution tracer, docs/BENCHMARKS.md).
type dispatcher struct {
	held         bool
	up           bool           // the thread is raised now
	base, raised unix.SchedAttr // the thread's own, and one step above
}

// holdDispatcher holds the calling goroutine's thread as the dispatcher
// (see dispatcher) when GOMAXPROCS is at least 2, and returns it with the
// function that lets it go: the thread's own priority back, unlocked. With
// one Go processor it holds nothing: a dispatcher keeping the only one
// through its sleeps would leave none to read the replies.
func holdDispatcher() (*dispatcher, func()) {
	d := new(dispatcher)
	if runtime.GOMAXPROCS(0) < 2 {
		return d, func() {}
	}
	runtime.LockOSThread()
	d.held = true
	if err := schedGetattr(&d.base); err != nil {
		return d, runtime.UnlockOSThread
	}
	d.raised = d.base
	switch d.base.Policy {
	case unix.SCHED_RR, unix.SCHED_FIFO:
		d.raised.Priority = min(d.base.Priority+1, 99)
	default:
		d.raised.Nice = -20
	}
	// A trial: a thread that may not be raised sleeps at the process's
	// priority. Under the race detector it is never raised: every memory
	// access of the dispatcher's Go code goes through the detector's
	// runtime, whose locks wait by yielding (TestHeldDispatcherUnderRealTime
	// hung so under -race).
	if raceEnabled || schedSetattr(&d.raised) != nil || schedSetattr(&d.base) != nil {
		d.raised = d.base
	}
	return d, func() {
		d.lower()
		runtime.UnlockOSThread()
	}
}

// lower steps a raised dispatcher down to the process's priority. Open.Run
// calls it once a send has left, before the go statement (an allocation
// can make the thread run a collector's assist, which may wait for
// another goroutine by yielding) and before it records an arrival it does
// not send.
func (d *dispatcher) lower() {
	if d.up {
		syscall.RawSyscall(unix.SYS_SCHED_SETATTR, 0, uintptr(unsafe.Pointer(&d.base)), 0)
		d.up = false
	}
}

// sleep sleeps for dur: held, raised, in a raw nanosleep(2), keeping its
// Go processor (it stays raised until lower); otherwise in preciseSleep.
func (d *dispatcher) sleep(dur time.Duration) {
	if !d.held {
		preciseSleep(dur)
		return
	}
	if !d.up && d.raised != d.base {
		syscall.RawSyscall(unix.SYS_SCHED_SETATTR, 0, uintptr(unsafe.Pointer(&d.raised)), 0)
		d.up = true
	}
	ts := syscall.NsecToTimespec(int64(dur))
	syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0) // EINTR (a signal): the caller loops
}

// schedGetattr and schedSetattr read and set the calling thread's
// scheduling attributes with raw system calls (x/sys/unix's go through
// the scheduler).
func schedGetattr(a *unix.SchedAttr) error {
	if _, _, e := syscall.RawSyscall6(unix.SYS_SCHED_GETATTR, 0, uintptr(unsafe.Pointer(a)), unix.SizeofSchedAttr, 0, 0, 0); e != 0 {
		return e
	}
	a.Size = unix.SizeofSchedAttr
	return nil
}

func schedSetattr(a *unix.SchedAttr) error {
	if _, _, e := syscall.RawSyscall(unix.SYS_SCHED_SETATTR, 0, uintptr(unsafe.Pointer(a)), 0); e != 0 {
		return e
	}
	return nil
}
