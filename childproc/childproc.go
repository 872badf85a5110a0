package childproc

import (
	"fmt"
	"strings"
	"sync"
)

// Limits of what a child's stderr keeps and reports.
const (
	// TailBytes is how much of a child's stderr Tail keeps.
	TailBytes = 4 << 10
	// LastLines is how many stderr lines an unexpected exit reports.
	LastLines = 10
)

// ExitError is how a child that exited unexpectedly is reported: which
// child, its pid, how it ended and its last lines on stderr.
type ExitError struct {
	Name      string // what the child is, e.g. "lab child" or "load child"
	Pid       int
	Err       error  // from waiting for it: "exit status 3", "signal: killed"
	LastWords string // its last stderr lines, joined by " | ", or "(none)"
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s (pid %d) exited unexpectedly: %v; last words: %s", e.Name, e.Pid, e.Err, e.LastWords)
}

// Unwrap returns how the child ended.
func (e *ExitError) Unwrap() error { return e.Err }

// Tail is an io.Writer that keeps the last TailBytes written to it: a
// child's stderr. It is safe for concurrent use.
type Tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > TailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-TailBytes:]...)
	}
	return len(p), nil
}

// LastLines returns up to n last lines, joined by " | ", or "(none)".
func (t *Tail) LastLines(n int) string {
	t.mu.Lock()
	text := strings.TrimSpace(string(t.buf))
	t.mu.Unlock()
	if text == "" {
		return "(none)"
	}
	lines := strings.Split(text, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
