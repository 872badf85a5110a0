//go:build unix && !linux

package labsvc

import "syscall"

// childAttr puts a lab child in a process group of its own. There is no
// parent-death signal here: a lab child outlives a server that is killed
// outright (a normal stop still stops it).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
