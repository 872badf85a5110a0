package labsvc

import (
	"errors"
	"net"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelQueue reads and sets the kernel's accept queue of the lab's request
// listener through a duplicate of its socket, which the lab owns until
// close, so reading it never races the listener's own close.
type kernelQueue struct {
	f  *os.File // the duplicate; nil when the listener is not a socket
	fd int
}

func newKernelQueue(ln net.Listener) *kernelQueue {
	fl, ok := ln.(interface{ File() (*os.File, error) })
	if !ok {
		return &kernelQueue{}
	}
	f, err := fl.File()
	if err != nil {
		return &kernelQueue{}
	}
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return &kernelQueue{}
	}
	q := &kernelQueue{f: f, fd: -1}
	if err := rc.Control(func(fd uintptr) { q.fd = int(fd) }); err != nil || q.fd < 0 {
		_ = f.Close()
		return &kernelQueue{}
	}
	return q
}

// setBacklog sets the socket's listen backlog to n (0: the system's
// maximum; the kernel caps any value at net.core.somaxconn). Linux allows
// listen(2) again on a listening socket to change it.
func (q *kernelQueue) setBacklog(n int) error {
	if q == nil || q.f == nil {
		return errors.New("the request listener is not a socket")
	}
	if n == 0 {
		n = MaxBacklog
	}
	return unix.Listen(q.fd, n)
}

// depth reads the socket's TCP_INFO: how many connections wait in the
// accept queue now, and the most it holds (the backlog in force). ok is
// false when it cannot be read. It allocates nothing: it runs before every
// accept.
func (q *kernelQueue) depth() (waiting, limit int, ok bool) {
	if q == nil || q.f == nil {
		return 0, 0, false
	}
	var info unix.TCPInfo
	n := uint32(unix.SizeofTCPInfo)
	_, _, errno := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(q.fd), unix.IPPROTO_TCP, unix.TCP_INFO,
		uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&n)), 0)
	if errno != 0 {
		return 0, 0, false
	}
	// For a listening socket Linux reports the queue's length in
	// tcpi_unacked and its limit in tcpi_sacked.
	return int(info.Unacked), int(info.Sacked), true
}

func (q *kernelQueue) close() {
	if q != nil && q.f != nil {
		_ = q.f.Close()
	}
}
