package labsvc

import "syscall"

// childAttr puts a lab child in a process group of its own and has the
// kernel kill it if this process dies first.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
