package loadrun

import (
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

// connectStart creates a non-blocking TCP socket and issues connect(2) to
// ap. It returns the socket once the attempt is under way (or already
// done); a failure that connect reports at once (ECONNREFUSED,
// EADDRNOTAVAIL, EMFILE from socket(2)...) comes back as an error and no
// socket is left open.
func connectStart(ap netip.AddrPort) (int, error) {
	family := syscall.AF_INET
	var sa syscall.Sockaddr
	if a := ap.Addr().Unmap(); a.Is4() {
		sa = &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: a.As4()}
	} else {
		family = syscall.AF_INET6
		sa = &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, syscall.IPPROTO_TCP)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	// Receive timestamps from the start, so that the reply's bytes are
	// stamped when they arrive (arrivalReader), however late they are read.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	switch err := syscall.Connect(fd, sa); err {
	case nil, syscall.EINPROGRESS, syscall.EALREADY, syscall.EINTR:
		return fd, nil
	default:
		_ = syscall.Close(fd)
		return -1, os.NewSyscallError("connect", err)
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
	n, err := syscall.SendmsgN(fd, p, nil, nil, syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL)
	switch err {
	case nil:
		return max(n, 0), nil
	case syscall.EAGAIN, syscall.ENOTCONN, syscall.EINTR:
		return 0, nil
	}
	_ = syscall.Close(fd)
	return 0, os.NewSyscallError("connect", err)
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

// arrivalReader reads a direct socket with recvmsg(2) and keeps the
// kernel's receive time (SO_TIMESTAMPNS) of the last bytes it read. A
// reply's end is then when its last bytes reached this machine's socket,
// not when the request's goroutine got a processor to read them: a busy
// generator process (a class's watchers fanned out on the same processor)
// no longer stretches the latencies it measures.
type arrivalReader struct {
	rc   syscall.RawConn
	oob  [64]byte
	last time.Time // kernel receive time of the last bytes read; zero if none carried one
}

// newArrivalReader reads f, a socket connectStart made (with receive
// timestamps on); ok is false if f cannot be read that way (then read f as
// it is). A read that carries no stamp leaves the end to the caller.
func newArrivalReader(f *os.File) (*arrivalReader, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, false
	}
	return &arrivalReader{rc: rc}, true
}

func (a *arrivalReader) Read(p []byte) (int, error) {
	var n int
	var rerr error
	err := a.rc.Read(func(fd uintptr) bool {
		var oobn int
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), p, a.oob[:], unix.MSG_DONTWAIT)
		if rerr == unix.EAGAIN || rerr == unix.EINTR {
			return false // wait until readable (or the deadline)
		}
		if rerr == nil && n > 0 {
			a.stamp(a.oob[:oobn])
		}
		return true
	})
	switch {
	case err != nil:
		return 0, err // the deadline, or the file closed
	case rerr != nil:
		return 0, os.NewSyscallError("recvmsg", rerr)
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// stamp keeps the receive time carried in the control messages b.
func (a *arrivalReader) stamp(b []byte) {
	for len(b) > 0 {
		h, data, rest, err := unix.ParseOneSocketControlMessage(b)
		if err != nil {
			return
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SO_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&data[0]))
			a.last = time.Unix(ts.Unix())
		}
		b = rest
	}
}

// arrival is when the last bytes read arrived, or the zero time.
func (a *arrivalReader) arrival() time.Time { return a.last }
