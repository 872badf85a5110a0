package loadrun

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// directConnect says whether begin connects sockets itself (connectStart)
// for targets given as IP addresses.
const directConnect = true

// sockaddr is an IP target's address as connect(2) takes it, built once
// by NewTarget.
type sockaddr struct {
	b [syscall.SizeofSockaddrInet6]byte // a RawSockaddrInet4 or RawSockaddrInet6
	n uintptr                           // its length; 0 for none
}

func newSockaddr(ap netip.AddrPort) sockaddr {
	var sa sockaddr
	if !ap.IsValid() {
		return sa
	}
	if a := ap.Addr().Unmap(); a.Is4() {
		r := (*syscall.RawSockaddrInet4)(unsafe.Pointer(&sa.b))
		r.Family, r.Addr = syscall.AF_INET, a.As4()
		sa.n = syscall.SizeofSockaddrInet4
	} else {
		r := (*syscall.RawSockaddrInet6)(unsafe.Pointer(&sa.b))
		r.Family, r.Addr = syscall.AF_INET6, a.As16()
		sa.n = syscall.SizeofSockaddrInet6
	}
	// Both put the port, in network order, right after the family.
	sa.b[2], sa.b[3] = byte(ap.Port()>>8), byte(ap.Port())
	return sa
}

// connectStart creates a non-blocking TCP socket and issues connect(2) to
// sa. It returns the socket once the attempt is under way (or already
// done); a failure that connect reports at once (ECONNREFUSED,
// EADDRNOTAVAIL, EMFILE from socket(2)...) comes back as an error and no
// socket is left open.
//
// Its system calls are raw: none of them blocks (the socket is
// non-blocking), so the runtime need not be told of them, and the
// sending goroutine (Open.Run) neither hands its Go processor away nor
// waits to get one back. An error is the bare Errno (classify reads it):
// a failed send allocates nothing on the sending goroutine's path.
func connectStart(sa *sockaddr) (int, error) {
	family := uintptr(syscall.AF_INET)
	if sa.n == syscall.SizeofSockaddrInet6 {
		family = syscall.AF_INET6
	}
	fd, _, e := syscall.RawSyscall(syscall.SYS_SOCKET, family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, syscall.IPPROTO_TCP)
	if e != 0 {
		return -1, e // a bare Errno: see above
	}
	// Receive timestamps from the start, so that the reply's bytes are
	// stamped when they arrive (arrivalReader), however late they are read.
	on := int32(1)
	syscall.RawSyscall6(syscall.SYS_SETSOCKOPT, fd, syscall.SOL_SOCKET, unix.SO_TIMESTAMPNS, uintptr(unsafe.Pointer(&on)), unsafe.Sizeof(on), 0)
	switch _, _, e := syscall.RawSyscall(syscall.SYS_CONNECT, fd, uintptr(unsafe.Pointer(&sa.b)), sa.n); e {
	case 0, syscall.EINPROGRESS, syscall.EALREADY, syscall.EINTR:
		return int(fd), nil
	default:
		syscall.RawSyscall(syscall.SYS_CLOSE, fd, 0, 0)
		return -1, e
	}
}

// connectWait waits until the connect connectStart issued on f's socket
// has finished, or f's deadline passes (os.ErrDeadlineExceeded). A failed
// connect returns its errno (ECONNREFUSED, ETIMEDOUT...).
func connectWait(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var connErr error
	err = rc.Write(func(fd uintptr) bool {
		// The same test net's own dialer makes: a pending error first,
		// then whether the socket has a peer yet.
		v, err := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_ERROR)
		switch {
		case err != nil:
			connErr = os.NewSyscallError("getsockopt", err)
			return true
		case v != 0:
			connErr = os.NewSyscallError("connect", syscall.Errno(v))
			return true
		}
		switch _, err := syscall.Getpeername(int(fd)); err {
		case nil:
			return true
		case syscall.ENOTCONN:
			return false // still connecting: wait until it is writable
		default:
			connErr = os.NewSyscallError("getpeername", err)
			return true
		}
	})
	if err != nil {
		return err
	}
	return connErr
}

// writeEarly tries to write p on the socket connectStart returned, without
// waiting: on loopback the handshake has finished by the time connect
// returns, and the request can then leave with the connection attempt. It
// returns how many bytes went out: 0 when the socket is not connected yet
// or cannot take them now (complete writes the rest). An error is the
// connect's own failure (ECONNREFUSED...), which the write collected from
// the socket, so the caller must report it: connectWait would no longer
// find it; the socket is then closed.
func writeEarly(fd int, p []byte) (int, error) {
	// Raw, as connectStart's calls: MSG_DONTWAIT never blocks.
	n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)),
		syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL, 0, 0)
	switch e {
	case 0:
		return int(n), nil
	case syscall.EAGAIN, syscall.ENOTCONN, syscall.EINTR:
		return 0, nil
	}
	syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(fd), 0, 0)
	return 0, e
}

// holdArrivalStamps keeps the kernel's receive stamps switched on until
// release is called. Linux switches them on for the whole machine when the
// first socket asks, in a deferred step: until that step has run, a
// socket's bytes are stamped when they are read, not when they arrived,
// and a reply then ends when it was read (measured: about one run in seven
// of TestReplyEndIsArrival in a fresh process). When the last stamping
// socket closes they go off again, so without a holder every moment in
// which a sweep has no connection open (the pause between windows) would
// start it over. The holder is an unbound UDP socket asking for stamps.
func holdArrivalStamps() (release func()) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return func() {}
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) != nil {
		_ = unix.Close(fd)
		return func() {}
	}
	return func() { _ = unix.Close(fd) }
}

// arrivalReader reads a socket begin connected, with recvmsg(2), and keeps
// the kernel's receive time (SO_TIMESTAMPNS) of the last bytes it read. A
// reply's end is then when its last bytes reached this machine's socket,
// not when the request's goroutine got a processor to read them: a busy
// generator process (a class's watchers fanned out on the same processor)
// no longer stretches the latencies it measures.
//
// It reads bytes already waiting without Go's poller, and registers the
// socket with it (os.NewFile: a file, a finalizer, epoll_ctl in and out)
// only when a read must wait. Under load, when replies wait for their
// goroutines, most requests then cost no registration at all, so a
// generator that falls behind gets cheaper per request and catches up
// (measured: docs/BENCHMARKS.md, "Issue 16: replies read late"). For the
// same reason the deadline is the caller's give-up time, not this
// goroutine's: when the poller's deadline has passed, bytes that are
// already in the socket are still read, and complete judges the reply by
// when it arrived (late).
type arrivalReader struct {
	ctx      context.Context
	fd       int
	deadline time.Time
	f        *os.File // the socket with Go's poller, once a read had to wait (or file was called); nil before
	rc       syscall.RawConn
	stop     func() bool // undoes the cancel hook registered with f
	expired  bool        // f's deadline passed: read only what is already there
	oob      [64]byte
	last     time.Time // the kernel's receive stamp of the last bytes read, on the monotonic clock (arrivalAt); zero if none carried one
	lastRead time.Time // when the last bytes were read
}

// newArrivalReader reads fd, a socket connectStart made (with receive
// timestamps on), until deadline; cancelling ctx ends a read that waits.
// The reader owns fd: Close closes it.
func newArrivalReader(ctx context.Context, fd int, deadline time.Time) *arrivalReader {
	return &arrivalReader{ctx: ctx, fd: fd, deadline: deadline}
}

// file registers the socket with Go's poller, with the deadline and the
// cancel hook, and returns it (for connectWait and the rest of a request
// that could not be written early).
func (a *arrivalReader) file() (*os.File, error) {
	if a.f != nil {
		return a.f, nil
	}
	f := os.NewFile(uintptr(a.fd), "tcp")
	rc, err := f.SyscallConn()
	if err == nil {
		err = f.SetDeadline(a.deadline)
	}
	if err != nil {
		_ = f.Close()
		a.fd = -1
		return nil, err
	}
	a.f, a.rc = f, rc
	// Cancelling the run unblocks this request at once; the record says so.
	a.stop = context.AfterFunc(a.ctx, func() { _ = f.SetDeadline(time.Unix(1, 0)) })
	return f, nil
}

func (a *arrivalReader) Read(p []byte) (int, error) {
	for {
		if err := a.ctx.Err(); err != nil {
			return 0, err
		}
		if a.f == nil || a.expired {
			n, err := a.recv(a.fd, p)
			if err != syscall.EAGAIN {
				return n, err
			}
			if a.expired {
				return 0, os.ErrDeadlineExceeded // nothing came in time
			}
			if _, err := a.file(); err != nil {
				return 0, err
			}
		}
		var n int
		var rerr error
		err := a.rc.Read(func(fd uintptr) bool {
			n, rerr = a.recv(int(fd), p)
			return rerr != syscall.EAGAIN // else wait until readable (or the deadline)
		})
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded) && a.ctx.Err() == nil:
			// The give-up time has passed, though this goroutine may only
			// now have got a processor: what is already in the socket is
			// read, and complete judges it by its stamp.
			a.expired = true
			continue
		case err != nil:
			return 0, err // the file closed, or the run cancelled
		}
		return n, rerr
	}
}

// recv reads fd once without waiting: the bytes, io.EOF, EAGAIN (bare) when
// there is nothing yet, or the error.
func (a *arrivalReader) recv(fd int, p []byte) (int, error) {
	for {
		n, oobn, _, _, err := unix.Recvmsg(fd, p, a.oob[:], unix.MSG_DONTWAIT)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, syscall.EAGAIN
		case err != nil:
			return 0, os.NewSyscallError("recvmsg", err)
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		now := time.Now()
		a.lastRead = now
		if wall, ok := stampOf(a.oob[:oobn]); ok {
			a.last = arrivalAt(now, now.Round(0), wall)
		}
		return n, nil
	}
}

// Close closes the socket.
func (a *arrivalReader) Close() error {
	if a.stop != nil {
		a.stop()
	}
	switch {
	case a.f != nil:
		return a.f.Close()
	case a.fd >= 0:
		fd := a.fd
		a.fd = -1
		return unix.Close(fd)
	}
	return nil
}

// stampOf returns the kernel's receive time (wall clock) carried in the
// control messages b, if there is one.
func stampOf(b []byte) (time.Time, bool) {
	var at time.Time
	for len(b) > 0 {
		h, data, rest, err := unix.ParseOneSocketControlMessage(b)
		if err != nil {
			break
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SO_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&data[0]))
			at = time.Unix(ts.Unix())
		}
		b = rest
	}
	return at, !at.IsZero()
}

// arrivalAt is the arrival the kernel stamped (stamp, wall clock) on the
// monotonic clock of now, the time of the read, whose wall reading is
// nowWall: now less the stamp's age, the two wall readings' difference. A
// step of the wall clock (a clock set by hand or by a time service) before
// the bytes arrived then moves neither the request's end nor its give-up,
// which are on the monotonic clock; measured from the window's start in
// wall time, a step of 50 ms would make every reply 50 ms late or early. A
// stamp after nowWall (a step back in between) is an arrival now.
func arrivalAt(now, nowWall, stamp time.Time) time.Time {
	return now.Add(-max(0, nowWall.Sub(stamp)))
}

// arrival is when the last bytes read arrived (the kernel's stamp), or
// the zero time.
func (a *arrivalReader) arrival() time.Time { return a.last }

// late says whether the last bytes read came after the deadline: by
// their stamp, or, without one, by when they were read.
func (a *arrivalReader) late() bool {
	at := a.last
	if at.IsZero() {
		at = a.lastRead
	}
	return at.After(a.deadline)
}
