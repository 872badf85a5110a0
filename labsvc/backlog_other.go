//go:build !linux

package labsvc

import (
	"errors"
	"net"
	"runtime"
)

// kernelQueue cannot reach the kernel's accept queue on this system.
type kernelQueue struct{}

func newKernelQueue(net.Listener) *kernelQueue { return &kernelQueue{} }

// setBacklog cannot change a listening socket's backlog on this system.
func (q *kernelQueue) setBacklog(n int) error {
	if n == 0 {
		return nil
	}
	return errors.New("BACKLOG is not applied on " + runtime.GOOS + ": the listener keeps the system's")
}

// depth cannot read the kernel's accept queue on this system.
func (q *kernelQueue) depth() (waiting, limit int, ok bool) { return 0, 0, false }

func (q *kernelQueue) close() {}
