package hedge

import (
	"strings"
	"testing"
	"time"
)

func TestParseRoundTrip(t *testing.T) {
	for _, s := range []string{
		"",
		"delay_ms=20",
		"delay_ms=5,max=2",
		"percentile=95",
		"percentile=99.5,window=200,warmup=50,max=3",
	} {
		sp, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if got := sp.String(); got != s {
			t.Errorf("Parse(%q).String() = %q", s, got)
		}
	}
}

func TestParseRefusesNamingTheField(t *testing.T) {
	for in, want := range map[string]string{
		"delay_ms=0":                        `hedge's delay_ms "0" is not allowed: want a whole number from 1 to 60000`,
		"percentile=40":                     `hedge's percentile "40" is not allowed: want 50 to 99.9`,
		"percentile=95,max=6":               `hedge's max "6" is not allowed: want a whole number from 1 to 5`,
		"percentile=95,window=5":            `hedge's window "5" is not allowed: want a whole number from 10 to 100000`,
		"percentile=95,warmup=2000":         `hedge's warmup "2000" is not allowed: want at most window (1000)`,
		"delay_ms=20,percentile=95":         `hedge "delay_ms=20,percentile=95" is not allowed: want one of delay_ms`,
		"max=2":                             `hedge "max=2" is not allowed: want one of delay_ms`,
		"delay_ms=20,window=100":            `hedge "delay_ms=20,window=100" is not allowed: want window and warmup only with percentile`,
		"delay":                             `hedge "delay" is not allowed: want parameters name=value`,
		"delay_ms=1,delay_ms=2":             `hedge's delay_ms "2" is not allowed: want each parameter once`,
		"percentile=95,colour=blue":         `hedge's colour "blue" is not allowed: want a parameter of`,
		"percentile=95,window=100.5":        `hedge's window "100.5" is not allowed: want a whole number`,
		"percentile=NaN":                    `hedge's percentile "NaN" is not allowed`,
		"percentile=95,warmup=0":            `hedge's warmup "0" is not allowed`,
		"percentile=95,window=1000000":      `hedge's window "1000000" is not allowed`,
		"percentile=95,max=0":               `hedge's max "0" is not allowed`,
		"percentile=95,warmup=11,window=10": `hedge's warmup "11" is not allowed: want at most window (10)`,
	} {
		_, err := Parse(in)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", in, err, want)
		}
	}
}

// A fixed delay is there from the first request; a percentile only after
// the warmup, then the nearest-rank percentile of the last window
// latencies, following them as they change.
func TestDelay(t *testing.T) {
	sp, _ := Parse("delay_ms=20")
	if d, ok := New(sp).Delay(); !ok || d != 20*time.Millisecond {
		t.Errorf("delay_ms=20: %v %v, want 20ms at once", d, ok)
	}
	sp, _ = Parse("percentile=95,window=100,warmup=20")
	c := New(sp)
	for i := range 19 {
		c.Observe(time.Duration(i+1) * time.Millisecond)
	}
	if _, ok := c.Delay(); ok {
		t.Error("hedging after 19 latencies with warmup=20: want no copy before the warmup")
	}
	for i := 19; i < 100; i++ {
		c.Observe(time.Duration(i+1) * time.Millisecond)
	}
	if d, ok := c.Delay(); !ok || d != 95*time.Millisecond {
		t.Errorf("p95 of 1..100 ms: %v %v, want 95ms", d, ok)
	}
	// A hundred latencies of 1 ms push the old ones out of the window.
	for range 100 {
		c.Observe(time.Millisecond)
	}
	if d, _ := c.Delay(); d != time.Millisecond {
		t.Errorf("after 100 latencies of 1 ms: %v, want 1ms", d)
	}
}
