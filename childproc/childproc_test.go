package childproc_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"capacitylab/childproc"
)

func TestTailLastLines(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		n      int
		want   string
	}{
		// Nothing written: the report says so.
		{"nothing", nil, 3, "(none)"},
		// Blank lines alone are nothing either.
		{"blank", []string{"\n\n"}, 3, "(none)"},
		// Lines split across writes are joined, the last n kept.
		{"last lines", []string{"one\ntw", "o\nthree\nfour\n"}, 2, "three | four"},
		// Fewer lines than n: all of them.
		{"fewer", []string{"only\n"}, 3, "only"},
	}
	for _, tt := range tests {
		var tl childproc.Tail
		for _, w := range tt.writes {
			fmt.Fprint(&tl, w)
		}
		if got := tl.LastLines(tt.n); got != tt.want {
			t.Errorf("%s: LastLines(%d) = %q, want %q", tt.name, tt.n, got, tt.want)
		}
	}
}

// The tail keeps the last TailBytes only, however much a child writes.
func TestTailBounded(t *testing.T) {
	var tl childproc.Tail
	for i := range 10000 {
		fmt.Fprintf(&tl, "line %d\n", i)
	}
	got := tl.LastLines(1000)
	if len(got) > childproc.TailBytes+1000*len(" | ") || !strings.HasSuffix(got, "line 9999") {
		t.Errorf("LastLines after 10,000 lines is %d bytes ending %q", len(got), got[max(0, len(got)-20):])
	}
}

func TestExitError(t *testing.T) {
	cause := errors.New("exit status 3")
	e := &childproc.ExitError{Name: "load child", Pid: 42, Err: cause, LastWords: "out of memory"}
	if got, want := e.Error(), "load child (pid 42) exited unexpectedly: exit status 3; last words: out of memory"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, cause) {
		t.Error("an ExitError does not unwrap to how the child ended")
	}
}
