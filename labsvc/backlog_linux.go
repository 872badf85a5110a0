package labsvc

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// rawListener is a listener whose socket can be reached.
type rawListener interface {
	SyscallConn() (syscall.RawConn, error)
}

// setBacklog sets the listen backlog of ln's socket to n (0: the system's
// maximum; the kernel caps any value at net.core.somaxconn). Linux allows
// listen(2) again on a listening socket to change it.
func setBacklog(ln net.Listener, n int) error {
	rl, ok := ln.(rawListener)
	if !ok {
		return errors.New("the request listener is not a socket")
	}
	if n == 0 {
		n = MaxBacklog
	}
	rc, err := rl.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = unix.Listen(int(fd), n) }); err != nil {
		return err
	}
	return lerr
}

// acceptQueue reads the kernel's accept queue of ln's socket (TCP_INFO of
// a listening socket): how many connections wait in it now, and the most
// it holds, the backlog in force. ok is false when it cannot be read.
func acceptQueue(ln net.Listener) (depth, limit int, ok bool) {
	rl, isRaw := ln.(rawListener)
	if !isRaw {
		return 0, 0, false
	}
	rc, err := rl.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
		return 0, 0, false
	}
	// For a listening socket Linux reports the queue's length in
	// tcpi_unacked and its limit in tcpi_sacked.
	return int(info.Unacked), int(info.Sacked), true
}
