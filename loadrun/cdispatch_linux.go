//go:build linux && cgo

package loadrun

/*
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// One arrival as the sending thread left it. Written before the arrival is
// published (cl_disp.published), read by Go after.
typedef struct {
	int64_t sent;  // CLOCK_MONOTONIC ns of the send; 0 when not sent
	int32_t fd;    // the socket, connecting or connected; -1 for none
	int32_t err;   // errno of a send that failed at once; 0 for none
	int32_t wrote; // bytes of the request already written
	int32_t verdict; // 1 sent, 2 not sent: cancelled, 3 not sent: in-flight cap
} cl_slot;

typedef struct {
	// Set by Go before the thread starts; read only after.
	const int64_t *due;  // CLOCK_MONOTONIC ns of each arrival, increasing
	int64_t n;
	unsigned char sa[28];
	uint32_t salen;
	int family;
	const char *req;
	int64_t reqlen;
	int64_t limit;      // in-flight cap
	int64_t chunk;      // longest sleep, ns: how soon a cancel is seen
	int efd;            // eventfd written after each publish
	cl_slot *slots;
	pthread_t thread;
	int rtprio;         // the real-time priority to take in a normal-policy process
	int port_lo, port_hi, port_next; // the local ports it binds, in turn (0: the kernel's choice)
	int dry;            // sleep through the schedule, send nothing: the floor
	// Shared, atomic.
	int64_t *inflight;  // sent and not yet ended: pinned Go memory (Go decrements)
	int32_t *cancel;    // set by Go: stop sending (pinned Go memory)
	int64_t published;  // slots [0, published) are final
} cl_disp;

static int64_t cl_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// cl_bind binds fd to the next free local port of d's range, in turn, so
// that connect(2) need not search for one: the kernel's search steps over
// every port in use, and with thousands of requests in flight each
// connect cost a millisecond and more, which a saturated processor could
// not give (measured: docs/BENCHMARKS.md). A port in use is passed over;
// after 64 such it leaves the choice to the kernel.
static void cl_bind(cl_disp *d, int fd) {
	if (d->port_lo <= 0)
		return;
	struct sockaddr_storage a;
	memset(&a, 0, sizeof a);
	socklen_t n;
	for (int i = 0; i < 64; i++) {
		int p = d->port_next++;
		if (d->port_next > d->port_hi)
			d->port_next = d->port_lo;
		if (d->family == AF_INET6) {
			struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&a;
			a6->sin6_family = AF_INET6;
			a6->sin6_port = htons((uint16_t)p);
			n = sizeof *a6;
		} else {
			struct sockaddr_in *a4 = (struct sockaddr_in *)&a;
			a4->sin_family = AF_INET;
			a4->sin_port = htons((uint16_t)p);
			n = sizeof *a4;
		}
		if (bind(fd, (struct sockaddr *)&a, n) == 0 || errno != EADDRINUSE)
			return;
	}
}

static void cl_send(cl_disp *d, cl_slot *s) {
	s->fd = -1;
	s->sent = cl_now();
	__atomic_add_fetch(d->inflight, 1, __ATOMIC_SEQ_CST);
	int fd = socket(d->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		s->err = errno;
		return;
	}
	int on = 1;
	setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
	cl_bind(d, fd);
	if (connect(fd, (struct sockaddr *)d->sa, d->salen) != 0 && errno != EINPROGRESS && errno != EALREADY && errno != EINTR) {
		s->err = errno;
		close(fd);
		return;
	}
	ssize_t n = send(fd, d->req, (size_t)d->reqlen, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0) {
		if (errno != EAGAIN && errno != ENOTCONN && errno != EINTR) {
			s->err = errno;
			close(fd);
			return;
		}
		n = 0;
	}
	s->fd = fd;
	s->wrote = (int32_t)n;
}

// cl_raise raises the calling thread above the process's other threads:
// one real-time priority higher under a real-time policy, real-time
// round-robin priority rtprio under the normal one (the generator's other
// threads stay normal: see threadSender), or failing that niceness -20. It
// returns 1 if the thread was raised. Without the privilege (root or
// CAP_SYS_NICE) it stays as it is.
static int cl_raise(int rtprio) {
	struct sched_param sp;
	int pol = sched_getscheduler(0);
	if (pol == SCHED_RR || pol == SCHED_FIFO) {
		if (sched_getparam(0, &sp) != 0 || sp.sched_priority >= 99)
			return 0;
		sp.sched_priority++;
		return sched_setscheduler(0, pol, &sp) == 0;
	}
	sp.sched_priority = rtprio;
	if (sched_setscheduler(0, SCHED_RR, &sp) == 0)
		return 1;
	return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -20) == 0;
}

static void *cl_run(void *arg) {
	cl_disp *d = arg;
	cl_raise(d->rtprio); // raised or not, it sends: a test reads its priority
	uint64_t one = 1;
	for (int64_t i = 0; i < d->n; i++) {
		cl_slot *s = &d->slots[i];
		for (;;) {
			if (__atomic_load_n(d->cancel, __ATOMIC_SEQ_CST))
				break;
			int64_t now = cl_now(), due = d->due[i];
			if (now >= due)
				break;
			int64_t wake = due - now > d->chunk ? now + d->chunk : due;
			struct timespec ts = {wake / 1000000000, wake % 1000000000};
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
		if (__atomic_load_n(d->cancel, __ATOMIC_SEQ_CST)) {
			s->verdict = 2;
		} else if (__atomic_load_n(d->inflight, __ATOMIC_SEQ_CST) >= d->limit) {
			s->verdict = 3;
		} else if (d->dry) {
			s->sent = cl_now();
			s->fd = -1;
			s->verdict = 1;
		} else {
			cl_send(d, s);
			s->verdict = 1;
		}
		__atomic_store_n(&d->published, i + 1, __ATOMIC_RELEASE);
		ssize_t w = write(d->efd, &one, sizeof one);
		(void)w;
	}
	return NULL;
}

// cl_start starts d's thread with every signal blocked (the Go runtime's
// handlers are for its own threads; the new thread inherits the caller's
// scheduling policy, priority and processors). It returns 0 or an errno.
static int cl_start(cl_disp *d) {
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&d->thread, NULL, cl_run, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return e;
}

static void cl_join(cl_disp *d) { pthread_join(d->thread, NULL); }
*/
import "C"

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"capacitylab/result"
)

// ThreadSender says whether open-loop windows send from a thread of their
// own (threadSender) when the target is given as an IP address: on Linux,
// in a build with cgo.
const ThreadSender = true

// threadSender sends an open-loop window's arrivals from a thread the Go
// runtime does not know: a C thread that sleeps to each arrival's time
// with clock_nanosleep(2), and connects and writes the request with plain
// system calls. Go's scheduler can neither preempt it nor make it wait for
// a Go processor, and the collector never stops it: the ways the Go
// sender's dispatcher was measured late or stuck (see dispatcher). Go
// picks up each arrival after it has been sent, woken through an eventfd
// the thread writes, and a goroutine completes the request as Go's own
// sends are completed.
//
// The thread runs above the process's other threads (cl_raise): under the
// normal policy, at real-time round-robin priority SenderRTPriority, so
// that it sends on time whatever else runs on its processor. Only it: a
// generator whose every thread is real-time (as the load child was before
// this sender) is throttled on a saturated processor, since the kernel
// gives real-time threads at most 95% of each second
// (sched_rt_runtime_us), and at 10,000 arrivals a second every thread of
// the generator, this one too, then stopped for some 45 ms once a second
// (measured: docs/BENCHMARKS.md). The thread alone uses a third of its
// processor at that rate, and never spins: it waits for nothing of Go's.
//
// Every signal is blocked in the thread: the Go runtime's handlers are
// for its own threads, and a process-directed signal goes to another.
type threadSender struct {
	d         *C.cl_disp
	efd       *os.File
	monoStart int64 // CLOCK_MONOTONIC ns at the window's start
	start     time.Time
	pin       runtime.Pinner
	cancel    *atomic.Int32 // the thread's cancel flag, Go's: a late store after close is harmless
	stopCtx   func() bool
	buf       [8]byte
}

// startThreadSender starts sending sched (offsets from start) to t, at
// most limit in flight (counted in inFlight, which the caller decrements
// as requests end). With dry it sends nothing and only wakes at each
// arrival: the floor under its send lag. ctx's end stops the sending
// within sleepChunk; the arrivals left are not sent.
func startThreadSender(ctx context.Context, t Target, start time.Time, sched []time.Duration, limit int64, inFlight *atomic.Int64, dry bool) (*threadSender, error) {
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	n := len(sched)
	d := (*C.cl_disp)(C.calloc(1, C.size_t(unsafe.Sizeof(C.cl_disp{}))))
	c := &threadSender{d: d, start: start, efd: os.NewFile(uintptr(efd), "eventfd")}
	c.monoStart = monoAt(start)
	d.due = (*C.int64_t)(C.malloc(C.size_t(max(n, 1) * 8)))
	for i, off := range sched {
		*(*C.int64_t)(unsafe.Add(unsafe.Pointer(d.due), i*8)) = C.int64_t(c.monoStart + int64(off))
	}
	d.n = C.int64_t(n)
	// Written through here, so that every page is this process's before
	// the thread starts: its first write to a fresh page would fault, and
	// a fault waits for the process's memory map, which the Go runtime
	// may hold.
	size := C.size_t(max(n, 1)) * C.size_t(unsafe.Sizeof(C.cl_slot{}))
	d.slots = (*C.cl_slot)(C.malloc(size))
	C.memset(unsafe.Pointer(d.slots), 0, size)
	if t.sa != nil && t.sa.n > 0 {
		C.memcpy(unsafe.Pointer(&d.sa[0]), unsafe.Pointer(&t.sa.b[0]), C.size_t(len(t.sa.b)))
		d.salen = C.uint32_t(t.sa.n)
	}
	d.family = C.AF_INET
	if d.salen == syscall.SizeofSockaddrInet6 {
		d.family = C.AF_INET6
	}
	d.req = (*C.char)(C.CBytes(t.request))
	d.reqlen = C.int64_t(len(t.request))
	d.limit = C.int64_t(limit)
	d.chunk = C.int64_t(sleepChunk)
	d.rtprio = C.int(SenderRTPriority)
	if lo, hi, ok := localPorts(); ok {
		d.port_lo, d.port_hi = C.int(lo), C.int(hi)
		d.port_next = C.int(lo + int(uint64(time.Now().UnixNano())%uint64(hi-lo+1)))
	}
	d.efd = C.int(efd)
	if dry {
		d.dry = 1
	}
	c.cancel = new(atomic.Int32)
	c.pin.Pin(inFlight)
	c.pin.Pin(c.cancel)
	d.inflight = (*C.int64_t)(unsafe.Pointer(inFlight))
	d.cancel = (*C.int32_t)(unsafe.Pointer(c.cancel))
	cancel := c.cancel
	c.stopCtx = context.AfterFunc(ctx, func() { cancel.Store(1) })
	if e := C.cl_start(d); e != 0 {
		c.free()
		return nil, fmt.Errorf("starting the sending thread: %w", syscall.Errno(e))
	}
	return c, nil
}

// newSender is the thread sender for a target given as an IP address
// (unless sendFromGo), and the Go sender otherwise or if the thread cannot
// be started.
func newSender(ctx context.Context, t Target, start time.Time, sched []time.Duration, limit int64, inFlight *atomic.Int64, sendFromGo bool) sender {
	if directConnect && t.addrPort.IsValid() && !sendFromGo {
		if s, err := startThreadSender(ctx, t, start, sched, limit, inFlight, false); err == nil {
			return s
		}
	}
	return newGoSender(t, start, limit, inFlight)
}

// floorSender is a thread sender that sends nothing: it wakes at each
// arrival of sched as the thread sender would, at its priority, and next
// returns the time it woke as the send's. Its lateness is the floor under
// the thread sender's send lag (the fidelity benchmarks pair each window
// with it).
func floorSender(ctx context.Context, start time.Time, sched []time.Duration) (sender, error) {
	var inFlight atomic.Int64
	return startThreadSender(ctx, Target{}, start, sched, 1<<62, &inFlight, true)
}

// localPorts is the system's range of local ports for connections
// (net.ipv4.ip_local_port_range), which the thread binds in turn.
func localPorts() (lo, hi int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	if n, err := fmt.Sscan(string(b), &lo, &hi); n != 2 || err != nil || lo < 1 || hi > 65535 || hi <= lo {
		return 0, 0, false
	}
	return lo, hi, true
}

// monoAt is start on the clock the thread reads (CLOCK_MONOTONIC, ns):
// the clock read between two readings of Go's, in the closest pair of
// five, so that it is off by at most half their distance (a few tens of
// nanoseconds unless a pair was interrupted).
func monoAt(start time.Time) int64 {
	best, at := int64(-1), int64(0)
	for range 5 {
		var ts unix.Timespec
		before := time.Since(start)
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		after := time.Since(start)
		if gap := int64(after - before); best < 0 || gap < best {
			best, at = gap, ts.Nano()-int64(before+after)/2
		}
	}
	return at
}

// next waits until arrival i (they come in order) is decided, and returns
// its send, or why it was not sent. A send's time goes into r.Sent and
// onSent is called, as Target.begin does.
func (c *threadSender) next(_ context.Context, i int, _ time.Time, r *result.Record, onSent func()) (send, verdict) {
	for atomic.LoadInt64((*int64)(unsafe.Pointer(&c.d.published))) <= int64(i) {
		if _, err := c.efd.Read(c.buf[:]); err != nil {
			// The eventfd is this sender's own and open until close.
			panic(fmt.Sprintf("loadrun: reading the sending thread's eventfd: %v", err))
		}
	}
	sl := (*C.cl_slot)(unsafe.Add(unsafe.Pointer(c.d.slots), uintptr(i)*unsafe.Sizeof(C.cl_slot{})))
	switch sl.verdict {
	case 2:
		return send{}, verdictCanceled
	case 3:
		return send{}, verdictFull
	}
	// Never later than now, which the clocks' mapping (monoAt) could make
	// it by a hair: the request's end is taken after this.
	at := min(time.Duration(int64(sl.sent)-c.monoStart), time.Since(c.start))
	s := send{taken: true, at: c.start.Add(at), fd: int(sl.fd), wrote: int(sl.wrote)}
	if sl.err != 0 {
		s.err = syscall.Errno(sl.err)
	}
	r.Sent = s.at.Sub(c.start)
	if onSent != nil {
		onSent()
	}
	return s, verdictSent
}

// close waits for the sending thread to end, which it does after
// publishing the last arrival (call it after next has returned the last),
// and frees what the thread used.
func (c *threadSender) close() {
	C.cl_join(c.d)
	c.free()
}

func (c *threadSender) free() {
	c.stopCtx()
	c.pin.Unpin()
	_ = c.efd.Close()
	C.free(unsafe.Pointer(c.d.due))
	C.free(unsafe.Pointer(c.d.slots))
	C.free(unsafe.Pointer(c.d.req))
	C.free(unsafe.Pointer(c.d))
}
