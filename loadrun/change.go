package loadrun

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"capacitylab/result"
)

// CheckChangeTimes says what is wrong with a sweep's knob changes, or
// nil: each must have been read as a change (Err) and fall inside a
// window of seconds (0 ≤ At < seconds). What knob and value is the
// lab's to judge (labsvc.Config.CheckChanges).
func CheckChangeTimes(changes []result.KnobChange, seconds float64) error {
	if len(changes) == 0 {
		return nil
	}
	length := secondsToDuration(seconds)
	for _, c := range changes {
		if err := c.Err(); err != nil {
			return err
		}
		if c.At < 0 || c.At >= length {
			return fmt.Errorf("knob change %s is past the end of the window: want a time from 0 to less than the window's %v", c, length)
		}
	}
	return nil
}

// changeBody is change k as POST /config takes it: {"wait_ms":2000}, a
// whole number as a JSON number and anything else (a policy) as a JSON
// string.
func changeBody(k result.KnobChange) ([]byte, error) {
	var v any = k.Value
	if n, err := strconv.Atoi(k.Value); err == nil {
		v = n
	}
	return json.Marshal(map[string]any{strings.ToLower(k.Knob): v})
}

// changer applies a window's knob changes at their times.
type changer struct {
	ctl     *Control
	changes []result.KnobChange // in time order
	emit    func(result.Event)
	base    result.WindowProgress
}

// applied is what became of one change in a window.
type applied struct {
	change  result.KnobChange
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
		e := result.Event{Kind: result.EventKnob, WindowProgress: c.base, Change: k.String()}
		e.ElapsedMS = result.MS(a.elapsed)
		c.emit(e)
	}
	return out
}

// sortedChanges returns the changes in time order (a stable sort: two at
// the same time are applied in the order given).
func sortedChanges(changes []result.KnobChange) []result.KnobChange {
	s := slices.Clone(changes)
	slices.SortStableFunc(s, func(a, b result.KnobChange) int {
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
