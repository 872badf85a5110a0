//go:build unix && !linux

package childproc

import "syscall"

// Attr puts a child in a process group of its own. There is no
// parent-death signal here: a child outlives a server that is killed
// outright (a normal stop still stops it).
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
