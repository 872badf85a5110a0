package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"

	"capacitylab/lessons"
	"capacitylab/recorder"
)

// diskCourse serves lessons from a directory for authors: on each request
// it compares the directory's fingerprint (names, sizes and modification
// times of the files at its top) with the last one and reloads when it
// changed. A reload that fails keeps the error, which the web server shows
// to the author, until the files are fixed. Tables still to be recorded
// (pending: true) are allowed here, as drafts, and never in the embedded
// course.
type diskCourse struct {
	dir string
	log *slog.Logger

	mu     sync.Mutex
	stamp  string
	course *lessons.Course
	err    error
}

// newDiskCourse loads dir once and fails if it does not validate, so a
// broken course never starts serving.
func newDiskCourse(dir string, log *slog.Logger) (*diskCourse, error) {
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return nil, usageError{fmt.Sprintf("--content %q is not a directory: want the directory holding the lesson *.md files", dir)}
	}
	d := &diskCourse{dir: dir, log: log}
	if _, err := d.get(); err != nil {
		return nil, fmt.Errorf("lessons in %s do not validate:\n%w", dir, err)
	}
	return d, nil
}

// get returns the course, reloading it first if any file changed.
func (d *diskCourse) get() (*lessons.Course, error) {
	stamp, err := fingerprint(d.dir)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", d.dir, err)
	}
	if stamp == d.stamp {
		return d.course, d.err
	}
	opts := recorder.LoadOptions()
	opts.Pending = true
	d.course, d.err = lessons.LoadWith(os.DirFS(d.dir), opts)
	d.stamp = stamp
	if d.err != nil {
		d.log.Warn("lessons do not validate", "dir", d.dir, "err", d.err)
	} else {
		d.log.Info("lessons reloaded", "dir", d.dir, "lessons", len(d.course.Lessons))
	}
	return d.course, d.err
}

func fingerprint(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	lines := make([]string, 0, len(entries))
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue // removed while reading; the next request sees it
		}
		lines = append(lines, fmt.Sprintf("%s %d %d %v", e.Name(), info.Size(), info.ModTime().UnixNano(), e.IsDir()))
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
