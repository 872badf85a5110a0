package loadrun

import (
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dispatcher is the thread the Go sender (goSender) sends an open-loop
// window from: where there is no thread sender (a build without cgo) or
// the target is a host name. Held (Open.Run
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
// The thread is raised only while it sleeps: raisedSleep, three raw system
// calls in a function Go can neither preempt nor grow the stack of, raises
// it, sleeps and steps it down as it wakes, and no Go code runs raised.
// Under the real-time policies it keeps the processor it took as it woke,
// through its send, since a thread of equal real-time priority does not
// preempt a running one (until the running one's 100 ms round-robin turn
// is spent); under the normal policy the readers may take it back sooner.
// Go code must not run raised: where the runtime waits for another thread
// by spinning or yielding, a raised thread on the same processor waits for
// ever under a real-time policy, since a lower priority never runs beside
// it. Three such waits were found here: a goroutine coming back from a
// system call made through the scheduler while the collector or the
// system monitor holds it (so every call the dispatcher makes is raw); a
// collector's assist, which an allocation can make the dispatcher run,
// waiting for a running goroutine to stop; and the dispatcher stopping
// itself for the collector while the collector, preempted by the
// dispatcher's wake-up as it marked the dispatcher's goroutine, still
// holds that goroutine's status (runtime.casGToPreemptScan spun at 93% of
// the processor for minutes, in a benchmark window at 8,000 a second, and
// SIGTERM could not stop the process). At the common priority such a spin
// ends when the dispatcher's round-robin turn does.
// TestHeldDispatcherUnderRealTime hangs the first two ways with the sleeps
// through the scheduler, or with the thread raised for the whole window;
// TestHoldDispatcher checks that the thread is back at the process's
// priority as soon as it wakes.
//
// Nor may a held thread make a system call through the scheduler: back
// from it, a goroutine whose Go processor was taken meanwhile waits for
// another thread to hand one back, and at the common priority that thread
// and it queue behind whichever of the others is running, for as long as
// 59 ms measured.
//
// What is left: Go's system monitor preempts a goroutine that has run
// 10 ms without passing through the scheduler, and a raw sleep does not
// pass through it; the collector stops it to scan its stack. A preempted
// locked goroutine waits for another thread to hand it a Go processor
// back, at the common priority; mostly for tens of microseconds, but for
// up to 33 ms when the generator's processor is busy (measured with the
// execution tracer, docs/BENCHMARKS.md). The thread sender has none of
// this, and is what sends wherever it is built.
type dispatcher struct {
	held         bool
	base, raised unix.SchedAttr // the thread's own, and one step above
}

// holdDispatcher holds the calling goroutine's thread as the dispatcher
// (see dispatcher) when GOMAXPROCS is at least 2, and returns it with the
// function that lets it go, unlocking the thread (whose own priority is
// back after every sleep). With
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
	// priority. Under the race detector it is never raised, for caution:
	// the detector's runtime takes locks that wait by yielding, and
	// TestHeldDispatcherUnderRealTime hung under -race while the thread
	// stayed raised from its wake to its send.
	if raceEnabled || schedSetattr(&d.raised) != nil || schedSetattr(&d.base) != nil {
		d.raised = d.base
	}
	return d, runtime.UnlockOSThread
}

// sleep sleeps for dur: held, in a raw nanosleep(2), keeping its Go
// processor, raised where it may be (raisedSleep); otherwise in
// preciseSleep. EINTR (a signal) ends it early: the caller loops.
func (d *dispatcher) sleep(dur time.Duration) {
	if !d.held {
		preciseSleep(dur)
		return
	}
	ts := syscall.NsecToTimespec(int64(dur))
	if d.raised == d.base {
		syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
		return
	}
	raisedSleep(&ts, &d.raised, &d.base)
}

// raisedSleep raises the calling thread to raised, sleeps for ts and steps
// the thread down to base as it wakes. It is nosplit and makes only raw
// system calls, so nothing of Go's runs in it: the runtime neither
// preempts it (a nosplit function is no safe point) nor grows its stack.
//
//go:nosplit
//go:norace
func raisedSleep(ts *syscall.Timespec, raised, base *unix.SchedAttr) {
	syscall.RawSyscall(unix.SYS_SCHED_SETATTR, 0, uintptr(unsafe.Pointer(raised)), 0)
	syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(ts)), 0, 0)
	syscall.RawSyscall(unix.SYS_SCHED_SETATTR, 0, uintptr(unsafe.Pointer(base)), 0)
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
