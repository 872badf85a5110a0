package loadrun

import (
	"net/netip"
	"os"
	"syscall"
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
