package labsvc

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// waiter sleeps one worker's WAIT_MS. On Linux it is a timerfd read
// through Go's poller: the kernel wakes the poller when the timer expires,
// to the microsecond and without timer slack, where a Go timer waits in
// the poller's whole milliseconds (it sleeps the whole milliseconds left,
// then one more for the rest: up to a millisecond late, half on average).
// The goroutine, not its thread, waits.
//
// Waking still takes time: the poller's thread sees the timerfd, then the
// goroutine is scheduled, about 0.1 to 0.15 ms on the build machine
// (WAIT_MS=18 measured 18.14 ms at rest). So the waiter sets its timer
// early by the delay of its fastest recent wake-ups, and a worker's wait
// ends just after its deadline instead of a tenth of a millisecond after.
type waiter struct {
	f     *os.File // the timerfd, registered with the poller; nil: use a Go timer
	buf   [8]byte
	early time.Duration // how far before the deadline the timer is set
}

// maxEarly bounds the waiter's correction: a wake-up later than this is the
// machine being busy, not the poller's usual delay.
const maxEarly = time.Millisecond

func newWaiter() *waiter {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &waiter{}
	}
	return &waiter{f: os.NewFile(uintptr(fd), "timerfd")}
}

// wait returns at deadline or when ctx ends, whichever is first.
func (w *waiter) wait(ctx context.Context, deadline time.Time) {
	target := deadline.Add(-w.early)
	d := time.Until(target)
	if d <= 0 {
		return
	}
	if w.f == nil {
		waitTimer(ctx, d)
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	rc, err := w.f.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) { err = unix.TimerfdSettime(int(fd), 0, &spec, nil) })
		err = errors.Join(err, cerr)
	}
	if err != nil {
		waitTimer(ctx, d)
		return
	}
	stop := context.AfterFunc(ctx, func() { _ = w.f.SetReadDeadline(time.Unix(1, 0)) })
	_, _ = w.f.Read(w.buf[:])
	if !stop() {
		_ = w.f.SetReadDeadline(time.Time{})
		return
	}
	// The correction follows the fastest wake-ups: down at once to a
	// faster one, up by 1/64 of the difference after a slower one, so a
	// busy moment's slow wake-ups barely move it and a wait rarely ends
	// before its deadline.
	late := min(time.Since(target), maxEarly)
	if late < w.early {
		w.early = late
	} else {
		w.early += (late - w.early) / 64
	}
}

func (w *waiter) close() {
	if w.f != nil {
		_ = w.f.Close()
	}
}
