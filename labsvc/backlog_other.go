//go:build !linux

package labsvc

import (
	"errors"
	"net"
	"runtime"
)

// setBacklog cannot change a listening socket's backlog on this system.
func setBacklog(_ net.Listener, n int) error {
	if n == 0 {
		return nil
	}
	return errors.New("BACKLOG is not applied on " + runtime.GOOS + ": the listener keeps the system's")
}

// acceptQueue cannot read the kernel's accept queue on this system.
func acceptQueue(net.Listener) (depth, limit int, ok bool) { return 0, 0, false }
