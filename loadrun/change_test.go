package loadrun_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"capacitylab/loadrun"
	"capacitylab/result"
)

// A knob change is written and read as "30s:WAIT_MS=2000", in JSON too;
// text that is not one is refused naming the form, and, read from JSON,
// kept with why for validation to name.
func TestKnobChangeText(t *testing.T) {
	for _, tt := range []struct {
		in, out string
		at      time.Duration
		knob    string
		value   string
	}{
		{"30s:WAIT_MS=2000", "30s:WAIT_MS=2000", 30 * time.Second, "WAIT_MS", "2000"},
		{" 1.5s : POLICY = aimd,backoff=0.5 ", "1.5s:POLICY=aimd,backoff=0.5", 1500 * time.Millisecond, "POLICY", "aimd,backoff=0.5"},
		{"0s:LIMIT=0", "0s:LIMIT=0", 0, "LIMIT", "0"},
	} {
		c, err := result.ParseKnobChange(tt.in)
		if err != nil || c.At != tt.at || c.Knob != tt.knob || c.Value != tt.value || c.String() != tt.out {
			t.Errorf("ParseKnobChange(%q) = %+v, %v; want %v %s %s written %q", tt.in, c, err, tt.at, tt.knob, tt.value, tt.out)
		}
		b, _ := json.Marshal([]result.KnobChange{c})
		var back []result.KnobChange
		if err := json.Unmarshal(b, &back); err != nil || len(back) != 1 || back[0].String() != tt.out || back[0].Err() != nil {
			t.Errorf("%s: JSON %s read back as %v, %v", tt.in, b, back, err)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"WAIT_MS=2000", "want TIME:KNOB=VALUE"},
		{"30:WAIT_MS=2000", `the time "30" is not allowed: want a time from the window's start such as 30s`},
		{"-1s:WAIT_MS=2000", `the time "-1s" is not allowed`},
		{"1s:wait_ms=2000", `the knob "wait_ms" is not allowed: want the lab's knob as its environment variable spells it`},
		{"1s:WAIT_MS=", "the value is empty"},
	} {
		if _, err := result.ParseKnobChange(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseKnobChange(%q) = %v, want an error containing %q", tt.in, err, tt.want)
		}
		var c result.KnobChange
		if err := json.Unmarshal([]byte(`"`+tt.in+`"`), &c); err != nil || c.Err() == nil || !strings.Contains(c.Err().Error(), tt.want) {
			t.Errorf("JSON %q: %v, kept error %v; want it kept, naming %q", tt.in, err, c.Err(), tt.want)
		}
	}
}

// A sweep's knob changes must fall inside the window and need a lab's
// control API or a Driver to make them. A fixed pool of client workers is
// for an open loop, within the generator's cap.
func TestSweepValidateChangesAndWorkers(t *testing.T) {
	target, err := loadrun.NewTarget("http://127.0.0.1:9", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := loadrun.NewControl("http://127.0.0.1:9", nil)
	if err != nil {
		t.Fatal(err)
	}
	change := func(s string) []result.KnobChange {
		c, err := result.ParseKnobChange(s)
		if err != nil {
			t.Fatal(err)
		}
		return []result.KnobChange{c}
	}
	ok := loadrun.Sweep{Target: target, Control: &ctl, Rates: []float64{10}, Seconds: 2, Changes: change("1999ms:WAIT_MS=5"), ClientWorkers: 10}
	if err := ok.Validate(); err != nil {
		t.Errorf("a change at 1.999 s of a 2 s window, 10 client workers: %v", err)
	}
	for _, tt := range []struct {
		name string
		edit func(*loadrun.Sweep)
		want string
	}{
		{"at the end", func(s *loadrun.Sweep) { s.Changes = change("2s:WAIT_MS=5") }, "knob change 2s:WAIT_MS=5 is past the end of the window: want a time from 0 to less than the window's 2s"},
		{"no control", func(s *loadrun.Sweep) { s.Control = nil }, "knob changes are made through the lab's control API"},
		{"workers in closed loop", func(s *loadrun.Sweep) { s.Rates, s.Clients, s.Changes = nil, []int{2}, nil }, "client workers are for an open loop"},
		{"too many workers", func(s *loadrun.Sweep) { s.ClientWorkers = result.MaxMaxInFlight + 1 }, "client workers 16385 is not allowed: want 0 (no fixed pool) to 16384"},
	} {
		s := ok
		tt.edit(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}
