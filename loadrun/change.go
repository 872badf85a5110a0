package loadrun

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
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
// against the window's length (Sweep.ValidatePlan).
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

// CheckChangeTimes says what is wrong with a sweep's knob changes, or
// nil: each must have been read as a change (Err) and fall inside a
// window of seconds (0 ≤ At < seconds). What knob and value is the
// lab's to judge (package measure's CheckChanges).
func CheckChangeTimes(changes []KnobChange, seconds float64) error {
	if len(changes) == 0 {
		return nil
	}
	length := secondsToDuration(seconds)
	for _, c := range changes {
		if c.bad != nil {
			return c.bad
		}
		if c.At < 0 || c.At >= length {
			return fmt.Errorf("knob change %s is past the end of the window: want a time from 0 to less than the window's %v", c, length)
		}
	}
	return nil
}

// body is the change as POST /config takes it: {"wait_ms":2000}, a
// whole number as a JSON number and anything else (a policy) as a JSON
// string.
func (k KnobChange) body() ([]byte, error) {
	var v any = k.Value
	if n, err := strconv.Atoi(k.Value); err == nil {
		v = n
	}
	return json.Marshal(map[string]any{strings.ToLower(k.Knob): v})
}

// changer applies a window's knob changes at their times.
type changer struct {
	ctl     *Control
	changes []KnobChange // in time order
	emit    func(Event)
	base    WindowProgress
}

// applied is what became of one change in a window.
type applied struct {
	change  KnobChange
	elapsed time.Duration // when the lab took it, from the window's start
	err     error         // the control API refused it or failed
	skipped bool          // the window ended before its time
}

// run applies the changes at start + At each, until ended is closed (the
// window's last request ended) or ctx is done, emitting a knob event for
// each one the lab took. It returns what became of each.
func (c changer) run(ctx context.Context, start time.Time, ended <-chan struct{}) []applied {
	out := make([]applied, 0, len(c.changes))
	for i, k := range c.changes {
		t := time.NewTimer(time.Until(start.Add(k.At)))
		select {
		case <-t.C:
		case <-ended:
			t.Stop()
			for _, k := range c.changes[i:] {
				out = append(out, applied{change: k, skipped: true})
			}
			return out
		case <-ctx.Done():
			t.Stop()
			for _, k := range c.changes[i:] {
				out = append(out, applied{change: k, skipped: true})
			}
			return out
		}
		err := c.ctl.Set(ctx, k)
		a := applied{change: k, elapsed: time.Since(start), err: err}
		out = append(out, a)
		if err != nil {
			for _, k := range c.changes[i+1:] {
				out = append(out, applied{change: k, skipped: true})
			}
			return out
		}
		e := Event{Kind: EventKnob, WindowProgress: c.base, Change: k.String()}
		e.ElapsedMS = ms(a.elapsed)
		c.emit(e)
	}
	return out
}

// sortedChanges returns the changes in time order (a stable sort: two at
// the same time are applied in the order given).
func sortedChanges(changes []KnobChange) []KnobChange {
	s := slices.Clone(changes)
	slices.SortStableFunc(s, func(a, b KnobChange) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	return s
}

// changeNotes are a window's notes about its knob changes: those the window
// ended before.
func changeNotes(as []applied) []string {
	var notes []string
	for _, a := range as {
		if a.skipped {
			notes = append(notes, fmt.Sprintf("knob change %s not made: the window ended first", a.change))
		}
	}
	return notes
}
