package loadrun_test

import (
	"strings"
	"testing"
	"time"

	"capacitylab/loadrun"
)

func TestReadArrivals(t *testing.T) {
	// A trace with a blank line, spaces, equal times and a whole second.
	got, err := loadrun.ReadArrivals(strings.NewReader("0\n0.010\n\n  0.010  \n1.5\n2\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{0, 10 * time.Millisecond, 10 * time.Millisecond, 1500 * time.Millisecond, 2 * time.Second}
	if len(got) != len(want) {
		t.Fatalf("ReadArrivals = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ReadArrivals = %v, want %v", got, want)
		}
	}
}

func TestReadArrivalsErrors(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		// Nothing at all.
		{"empty", "", "no arrival times: want one time in seconds"},
		// Only blank lines count as nothing too.
		{"blank lines", "\n  \n\n", "no arrival times"},
		// A word where a time should be, named by its line (blank lines count).
		{"bad line", "0.1\n\n0.2\nsoon\n", `line 4: "soon" is not a time: want seconds since the window's start`},
		// Go's other float spellings are not plain decimals.
		{"exponent", "1e-3\n", `line 1: "1e-3" is not a time`},
		{"infinity", "Inf\n", `line 1: "Inf" is not a time`},
		// A negative time is before the window.
		{"negative", "0\n-0.5\n", `line 2: "-0.5" is not a time: want seconds since the window's start, 0 or more`},
		// Out of order, naming both lines.
		{"unsorted", "0.1\n0.3\n\n0.2\n", "line 4: 0.2 s comes before line 2's 0.3 s: want the times in increasing order"},
		// A time with a unit.
		{"unit", "0.1s\n", `line 1: "0.1s" is not a time`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadrun.ReadArrivals(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("ReadArrivals(%q) = %v, want an error containing %q", c.in, err, c.want)
			}
		})
	}
}
