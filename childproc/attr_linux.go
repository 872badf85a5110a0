package childproc

import "syscall"

// Attr puts a child in a process group of its own and has the kernel kill
// it if this process dies first. (The parent-death signal fires when the
// parent *thread* that started the child exits; the Go runtime ends a
// thread only when a goroutine exits while locked to it, which the code
// that starts children never does.)
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
