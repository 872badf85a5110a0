//go:build unix

package store

import "syscall"

// freeBytes is the room the file system of dir has for an unprivileged
// writer, and whether it could be read.
func freeBytes(dir string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
