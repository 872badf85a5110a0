package result

import (
	"fmt"
	"strings"
	"time"
)

// KnobChange sets one of the lab's knobs through its control API (POST
// /config) at a given time into each window of a sweep: a bad release
// ("at 30 s WAIT_MS becomes 2000"), a policy switched mid-window. It is
// written, read and shown as "30s:WAIT_MS=2000" (the time as Go writes a
// duration, the knob as the lab's environment variable spells it, its
// value as that variable would hold it); that text is its JSON form too.
type KnobChange struct {
	At    time.Duration // from the window's start
	Knob  string        // the lab's knob as its environment variable spells it, e.g. WAIT_MS or POLICY
	Value string        // the value, as the variable would hold it: 2000, "aimd,backoff=0.5"

	bad error // why the text it was read from (UnmarshalText) is not a change
}

// KnobChangeSyntax is how a knob change is written, for messages.
const KnobChangeSyntax = "TIME:KNOB=VALUE, e.g. 30s:WAIT_MS=2000 (TIME from the window's start, such as 30s or 1.5s)"

// ParseKnobChange reads "30s:WAIT_MS=2000". It checks the form only: the
// knob and its value are the lab's to judge (package measure checks them
// against a preset's knobs before anything is sent), and the time
// against the window's length (loadrun.Sweep.ValidatePlan).
func ParseKnobChange(s string) (KnobChange, error) {
	at, set, ok := strings.Cut(strings.TrimSpace(s), ":")
	knob, value, ok2 := strings.Cut(set, "=")
	if !ok || !ok2 {
		return KnobChange{}, fmt.Errorf("knob change %q is not allowed: want %s", s, KnobChangeSyntax)
	}
	d, err := time.ParseDuration(strings.TrimSpace(at))
	if err != nil || d < 0 {
		return KnobChange{}, fmt.Errorf("knob change %q: the time %q is not allowed: want a time from the window's start such as 30s, 1.5s or 500ms", s, at)
	}
	knob, value = strings.TrimSpace(knob), strings.TrimSpace(value)
	if knob == "" || strings.IndexFunc(knob, func(r rune) bool { return (r < 'A' || r > 'Z') && r != '_' }) >= 0 {
		return KnobChange{}, fmt.Errorf("knob change %q: the knob %q is not allowed: want the lab's knob as its environment variable spells it, such as WAIT_MS or POLICY", s, knob)
	}
	if value == "" {
		return KnobChange{}, fmt.Errorf("knob change %q: the value is empty: want %s", s, KnobChangeSyntax)
	}
	return KnobChange{At: d, Knob: knob, Value: value}, nil
}

// String writes the change as ParseKnobChange reads it.
func (k KnobChange) String() string {
	if k.bad != nil {
		return k.Value
	}
	return k.At.String() + ":" + k.Knob + "=" + k.Value
}

// Err says why the text the change was read from (UnmarshalText) is not
// a change, or nil.
func (k KnobChange) Err() error { return k.bad }

// MarshalText writes the change as String does.
func (k KnobChange) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads the change as ParseKnobChange does. Text that is
// not a change is kept, with why, for validation to name (Err), so that a
// request with a bad change is refused naming it rather than as a body
// that is not JSON.
func (k *KnobChange) UnmarshalText(b []byte) error {
	c, err := ParseKnobChange(string(b))
	if err != nil {
		c = KnobChange{Value: string(b), bad: err}
	}
	*k = c
	return nil
}
