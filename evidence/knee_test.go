package evidence

import (
	"strings"
	"testing"

	"capacitylab/result"
)

func TestSaturated(t *testing.T) {
	open := []result.Row{
		{Arrivals: 800, Seconds: 20, OKPerSec: 39.9},  // keeping up
		{Arrivals: 1600, Seconds: 20, OKPerSec: 76.1}, // 95.1%: keeping up
		{Arrivals: 1600, Seconds: 20, OKPerSec: 75.9}, // 94.9%: saturated
		{Arrivals: 0, Seconds: 20},                    // nothing arrived: nothing to say
	}
	for i, want := range []bool{false, false, true, false} {
		got, why := Saturated(open, i)
		if got != want || got != (why != "") {
			t.Errorf("open window %d: Saturated = %v %q, want %v with a reason when saturated", i, got, why, want)
		}
	}
	if _, why := Saturated(open, 2); !strings.Contains(why, "75.9/s of 80.0/s") {
		t.Errorf("reason %q: want the answers and the arrivals a second", why)
	}
	closed := []result.Row{
		{Clients: 1, OKPerSec: 40},
		{Clients: 4, OKPerSec: 150},
		{Clients: 16, OKPerSec: 155}, // under 5% more: saturated
		{Clients: 16, OKPerSec: 150}, // no more clients: no verdict
	}
	for i, want := range []bool{false, false, true, false} {
		if got, _ := Saturated(closed, i); got != want {
			t.Errorf("closed window %d: Saturated = %v, want %v", i, got, want)
		}
	}
}
