package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrReadOnly is what Open fails with, wrapped, when the SQLite file or
// its directory cannot be written by this process (a read-only file
// system, or permissions): SQLite itself says only "unable to open
// database file" or "attempt to write a readonly database".
var ErrReadOnly = errors.New("read-only")

// SQLite's primary result codes SQLITE_READONLY and SQLITE_CANTOPEN.
const (
	sqliteReadOnly = 8
	sqliteCantOpen = 14
)

// mayBeReadOnly reports whether err is an SQLite error that a file or
// directory this process cannot write gives.
func mayBeReadOnly(err error) bool {
	var coded interface{ Code() int }
	if !errors.As(err, &coded) {
		return false
	}
	c := coded.Code() & 0xff
	return c == sqliteReadOnly || c == sqliteCantOpen
}

// notWritable says, wrapping ErrReadOnly, why SQLite cannot write the file
// at path: its directory (where SQLite makes the file and its -wal and
// -shm files) or the file is read-only for this process. It tries: a
// file made and removed in the directory, the file opened for writing if
// it exists. nil when both can be written, or when what failed was not
// a refusal to write.
func notWritable(path string) error {
	dir := filepath.Dir(path)
	probe, err := os.CreateTemp(dir, ".capacitylab-write-probe-*")
	if err == nil {
		probe.Close()
		os.Remove(probe.Name())
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil {
			f.Close()
			return nil
		}
		if !writeRefused(err) {
			return nil
		}
		return fmt.Errorf("the file %s is %w for this server (user %d: %v): SQLite must write it; make it writable by this user, or open a file elsewhere",
			path, ErrReadOnly, os.Geteuid(), errors.Unwrap(err))
	}
	if !writeRefused(err) {
		return nil
	}
	return fmt.Errorf("the directory %s is %w for this server (user %d: %v): SQLite must create and write %s and its -wal and -shm files there; make the directory writable by this user, or open a file elsewhere",
		dir, ErrReadOnly, os.Geteuid(), errors.Unwrap(err), filepath.Base(path))
}

// writeRefused reports whether err refuses a write for lack of permission
// or a read-only file system.
func writeRefused(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}
