// Package params reads the client options written as parameters
// name=value joined by commas (package retry's and package hedge's
// specs), and says what is wrong with one in the same words for each:
// which spec, which parameter, what was given and what is allowed.
package params

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Error is a spec that cannot be read: Spec names the option ("retry",
// "hedge"), Field the parameter ("" for the spec as a whole), Value what
// was given and Want what is allowed.
type Error struct {
	Spec, Field, Value, Want string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s %q is not allowed: want %s", e.Spec, e.Value, e.Want)
	}
	return fmt.Sprintf("%s's %s %q is not allowed: want %s", e.Spec, e.Field, e.Value, e.Want)
}

// Param is one parameter as given: its name in lower case, its value
// without the spaces around it.
type Param struct {
	Name, Value string
}

// Split reads text, the spec of option spec, as parameters name=value
// joined by commas, spaces around the commas and = signs allowed, each
// name at most once. A part that is not name=value is refused with
// allowed, what the spec may hold.
func Split(spec, text, allowed string) ([]Param, error) {
	var ps []Param
	seen := map[string]bool{}
	for _, part := range strings.Split(text, ",") {
		name, v, ok := strings.Cut(part, "=")
		name, v = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(v)
		if !ok || name == "" || v == "" {
			return nil, &Error{Spec: spec, Value: text, Want: allowed}
		}
		if seen[name] {
			return nil, &Error{Spec: spec, Field: name, Value: v, Want: "each parameter once"}
		}
		seen[name] = true
		ps = append(ps, Param{Name: name, Value: v})
	}
	return ps, nil
}

// Number reads p, a parameter of option spec, as a decimal from lo to
// hi, a whole number when whole is set.
func Number(spec string, p Param, lo, hi float64, whole bool) (float64, error) {
	f, err := strconv.ParseFloat(p.Value, 64)
	want := fmt.Sprintf("%g to %g", lo, hi)
	if whole {
		want = fmt.Sprintf("a whole number from %g to %g", lo, hi)
	}
	if err != nil || math.IsNaN(f) || f < lo || f > hi || (whole && f != math.Trunc(f)) {
		return 0, &Error{Spec: spec, Field: p.Name, Value: p.Value, Want: want}
	}
	return f, nil
}
