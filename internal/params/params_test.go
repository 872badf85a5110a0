package params_test

import (
	"errors"
	"slices"
	"testing"

	"capacitylab/internal/params"
)

// Split takes spaces around the commas and = signs and any case of the
// names; it refuses a part that is not name=value, naming what the spec
// may hold, and a parameter given twice, naming it.
func TestSplit(t *testing.T) {
	ps, err := params.Split("hedge", " Delay_ms = 20 , max=2", "the allowed")
	if err != nil {
		t.Fatal(err)
	}
	if want := []params.Param{{"delay_ms", "20"}, {"max", "2"}}; !slices.Equal(ps, want) {
		t.Errorf("%v, want %v", ps, want)
	}
	for _, c := range []struct{ text, want string }{
		{"delay_ms", `hedge "delay_ms" is not allowed: want the allowed`},
		{"delay_ms=20,", `hedge "delay_ms=20," is not allowed: want the allowed`},
		{"=3", `hedge "=3" is not allowed: want the allowed`},
		{"max=1, MAX=2", `hedge's max "2" is not allowed: want each parameter once`},
	} {
		_, err := params.Split("hedge", c.text, "the allowed")
		var pe *params.Error
		if !errors.As(err, &pe) || err.Error() != c.want {
			t.Errorf("%q: %v, want %s", c.text, err, c.want)
		}
	}
}

// Number holds a value to its range, and to a whole number when asked,
// saying which.
func TestNumber(t *testing.T) {
	if f, err := params.Number("retry", params.Param{Name: "budget", Value: "0.25"}, 0, 1, false); err != nil || f != 0.25 {
		t.Errorf("0.25: %v, %v", f, err)
	}
	for _, c := range []struct {
		v     string
		whole bool
		want  string
	}{
		{"1.5", true, `retry's n "1.5" is not allowed: want a whole number from 0 to 10`},
		{"11", true, `retry's n "11" is not allowed: want a whole number from 0 to 10`},
		{"NaN", false, `retry's n "NaN" is not allowed: want 0 to 10`},
		{"x", false, `retry's n "x" is not allowed: want 0 to 10`},
	} {
		if _, err := params.Number("retry", params.Param{Name: "n", Value: c.v}, 0, 10, c.whole); err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %s", c.v, err, c.want)
		}
	}
}
