package measure_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/measure"
)

// The bad release through the one measurement path: a lab child and a
// load child, WAIT_MS 10 until a knob change at 1 s sets it to 60. The
// lab takes the change about 1 s into each window (a knob event says
// when), the service times of the requests sent before it are those of
// WAIT_MS 10 and of those sent after it those of WAIT_MS 60, and the
// second window starts again from WAIT_MS 10 (the knobs are set back as
// each window ends).
func TestMeasureKnobChange(t *testing.T) {
	change, err := loadrun.ParseKnobChange("1s:WAIT_MS=60")
	if err != nil {
		t.Fatal(err)
	}
	p := measure.Preset{Config: labsvc.Config{Workers: 8, SpinMS: 0, WaitMS: 10, CPUs: 1}, Rates: []float64{40, 40}, Seconds: 2, Seed: 5,
		At: []loadrun.KnobChange{change}}
	var rec recording
	var knobs []measure.Event
	_, err = measure.Measure(t.Context(), children(t, "1"), p, func(e measure.Event) error {
		if e.Kind == measure.EventKnob {
			knobs = append(knobs, e)
			if len(rec.windows) != e.Window {
				t.Errorf("a knob event of window %d came after %d window events", e.Window, len(rec.windows))
			}
		}
		return rec.handle(e)
	})
	if err != nil {
		t.Fatal(err)
	}
	checkWindows(t, rec.windows)
	if len(knobs) != 2 {
		t.Fatalf("%d knob events, want one a window: %+v", len(knobs), knobs)
	}
	for i, k := range knobs {
		// The change is made at 1 s; its POST /config takes a moment.
		if k.Window != i || k.Change != "1s:WAIT_MS=60" || k.ElapsedMS < 1000 || k.ElapsedMS > 1250 {
			t.Errorf("knob event %d: window %d, change %q at %.3f ms; want window %d, 1s:WAIT_MS=60 at 1000 to 1250 ms", i, k.Window, k.Change, k.ElapsedMS, i)
		}
	}
	for i, w := range rec.windows {
		at := time.Duration(knobs[i].ElapsedMS * float64(time.Millisecond))
		var before, after []float64
		for _, r := range w.Records {
			switch {
			case r.Outcome != loadrun.OK || r.ServiceMS < 0:
			case r.Sent < at-50*time.Millisecond:
				before = append(before, r.ServiceMS)
			case r.Sent > at+5*time.Millisecond:
				after = append(after, r.ServiceMS)
			}
		}
		if len(before) < 20 || len(after) < 20 {
			t.Fatalf("window %d: %d ok answers sent before the change and %d after: want at least 20 of each (40 a second for about 1 s)", i, len(before), len(after))
		}
		slices.Sort(before)
		slices.Sort(after)
		mb, ma := before[len(before)/2], after[len(after)/2]
		t.Logf("window %d: change at %v; service time median %.3f ms before (n=%d), %.3f ms after (n=%d)", i, at, mb, len(before), ma, len(after))
		// Every service time after the change is at least the new
		// WAIT_MS, less the at most 1 ms the lab's waiter may end a wait
		// early (labsvc's wait_linux.go sets its timer early by its recent
		// wake-up delay), and the medians are within 5 ms of what was set
		// (the lab aims for 1%).
		if after[0] < 59 {
			t.Errorf("window %d: a request sent after the change was served in %.3f ms, more than 1 ms under the WAIT_MS of 60 it set", i, after[0])
		}
		if mb < 10 || mb > 15 || ma < 60 || ma > 65 {
			t.Errorf("window %d: service time median %.3f ms before the change and %.3f ms after; want 10 to 15 ms (WAIT_MS=10), then 60 to 65 ms (WAIT_MS=60)", i, mb, ma)
		}
	}
}

// Knob changes the lab would refuse, or that fall past the window, are
// refused before any child starts, naming the change and what is allowed.
func TestPresetValidateChanges(t *testing.T) {
	base := measure.Preset{Config: labsvc.DefaultConfig(), Rates: []float64{10}, Seconds: 2}
	tests := []struct{ name, at, want string }{
		{"past the window", "2s:WAIT_MS=100", "knob change 2s:WAIT_MS=100 is past the end of the window: want a time from 0 to less than the window's 2s"},
		{"unknown knob", "1s:SPEED=3", `knob change 1s:SPEED=3: unknown knob "SPEED": want one of ` + labsvc.ChangeableKnobs},
		{"fixed knob", "1s:WORKERS=4", "knob change 1s:WORKERS=4: WORKERS cannot change while the lab runs"},
		{"bad value", "1s:WAIT_MS=20000", "knob change 1s:WAIT_MS=20000: 20000 is not allowed: want 0 to 10000"},
		{"bad policy", "1s:POLICY=fifo", "knob change 1s:POLICY=fifo: fifo is not allowed"},
	}
	for _, tt := range tests {
		c, err := loadrun.ParseKnobChange(tt.at)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		p := base
		p.At = []loadrun.KnobChange{c}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate = %v, want an error containing %q", tt.name, err, tt.want)
		}
		if _, err := measure.Measure(t.Context(), children(t, "1"), p, func(measure.Event) error {
			t.Errorf("%s: a measurement started", tt.name)
			return nil
		}); err == nil {
			t.Errorf("%s: Measure ran a preset that does not validate", tt.name)
		}
	}
	// The knobs in force when a change is made are those before it, in
	// time order: a policy but queue needs LIMIT 0 first.
	p := base
	p.Limit = 5
	for _, s := range []string{"1500ms:POLICY=inflight,quota=5", "500ms:LIMIT=0"} {
		c, _ := loadrun.ParseKnobChange(s)
		p.At = append(p.At, c)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("LIMIT 0 at 0.5 s, then POLICY inflight at 1.5 s: %v", err)
	}
	p.At[1].At = 1600 * time.Millisecond
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "knob change 1.5s:POLICY=inflight,quota=5: LIMIT: 5 is not allowed: want 0 with POLICY=inflight") {
		t.Errorf("POLICY inflight at 1.5 s while LIMIT is 5 until 1.6 s: Validate = %v, want LIMIT named", err)
	}
	// Text that is not a change, read from JSON, is named too.
	var bad loadrun.KnobChange
	if err := bad.UnmarshalText([]byte("WAIT_MS=3")); err != nil {
		t.Fatal(err)
	}
	p.At = []loadrun.KnobChange{bad}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), `knob change "WAIT_MS=3" is not allowed: want TIME:KNOB=VALUE`) {
		t.Errorf("a change without a time: Validate = %v", err)
	}
}
