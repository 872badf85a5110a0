package loadrun_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"capacitylab/loadrun"
	"capacitylab/result"
)

// ksExponential returns the Kolmogorov–Smirnov statistic of gaps (seconds)
// against the exponential distribution with the given rate:
// D = sup |F_n(x) − (1 − e^(−rate·x))|.
func ksExponential(gaps []float64, rate float64) float64 {
	xs := slices.Clone(gaps)
	slices.Sort(xs)
	n := float64(len(xs))
	d := 0.0
	for i, x := range xs {
		f := 1 - math.Exp(-rate*x)
		d = max(d, float64(i+1)/n-f, f-float64(i)/n)
	}
	return d
}

// ksCritical01 is the critical value of D at α = 0.01 for n samples
// (the asymptotic 1.628/√n, accurate for n above about 35).
func ksCritical01(n int) float64 { return 1.628 / math.Sqrt(float64(n)) }

func gapsOf(offsets []time.Duration) []float64 {
	gaps := make([]float64, len(offsets))
	prev := time.Duration(0)
	for i, o := range offsets {
		gaps[i] = (o - prev).Seconds()
		prev = o
	}
	return gaps
}

func TestPoissonGapsAreExponential(t *testing.T) {
	cases := []struct {
		name    string
		rate    float64
		seconds float64
		seed    uint64
	}{
		// The lessons' slowest rate over the lessons' window.
		{"40/s for 20 s, seed 1", 40, 20, 1},
		// A busy window, many samples: the test has a lot of power here.
		{"2000/s for 10 s, seed 7", 2000, 10, 7},
		// A different seed at a mid rate.
		{"100/s for 60 s, seed 12345", 100, 60, 12345},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := loadrun.Schedule(loadrun.Poisson, c.rate, c.seconds, c.seed)
			if err != nil {
				t.Fatal(err)
			}
			d, crit := ksExponential(gapsOf(s), c.rate), ksCritical01(len(s))
			t.Logf("n=%d D=%.4f critical(α=0.01)=%.4f", len(s), d, crit)
			if d > crit {
				t.Errorf("KS rejects exponential gaps: D=%.4f > %.4f (n=%d)", d, crit, len(s))
			}
			// The count is Poisson with mean rate×seconds: within 5 σ.
			mean := c.rate * c.seconds
			if dev := math.Abs(float64(len(s)) - mean); dev > 5*math.Sqrt(mean) {
				t.Errorf("%d arrivals, want about %.0f (±%.0f)", len(s), mean, 5*math.Sqrt(mean))
			}
		})
	}
}

// The KS check must be able to fail: evenly spaced gaps are not exponential.
func TestKSRejectsUniformGaps(t *testing.T) {
	s, err := loadrun.Schedule(loadrun.Uniform, 100, 20, 1)
	if err != nil {
		t.Fatal(err)
	}
	gaps := gapsOf(s)[1:] // the first gap is the random phase
	if d, crit := ksExponential(gaps, 100), ksCritical01(len(gaps)); d <= crit {
		t.Errorf("KS accepted evenly spaced gaps as exponential: D=%.4f ≤ %.4f", d, crit)
	}
}

func TestScheduleReplays(t *testing.T) {
	for _, kind := range []loadrun.ArrivalProcess{loadrun.Poisson, loadrun.Uniform} {
		a, _ := loadrun.Schedule(kind, 300, 5, 42)
		b, _ := loadrun.Schedule(kind, 300, 5, 42)
		c, _ := loadrun.Schedule(kind, 300, 5, 43)
		if !slices.Equal(a, b) {
			t.Errorf("%s: the same seed gave different schedules", kind)
		}
		if slices.Equal(a, c) {
			t.Errorf("%s: seeds 42 and 43 gave the same schedule", kind)
		}
		if !slices.IsSorted(a) || len(a) == 0 || a[0] < 0 || a[len(a)-1] >= 5*time.Second {
			t.Errorf("%s: schedule not increasing within [0, 5 s): first %v last %v", kind, a[0], a[len(a)-1])
		}
	}
	if loadrun.WindowSeed(1, 40, 0) == loadrun.WindowSeed(1, 48, 0) || loadrun.WindowSeed(1, 48, 0) == loadrun.WindowSeed(2, 40, 0) ||
		loadrun.WindowSeed(1, 40, 0) == loadrun.WindowSeed(1, 40.5, 0) || loadrun.WindowSeed(1, 40, 0) == loadrun.WindowSeed(1, 40, 1) {
		t.Error("window seeds collide")
	}
}

func TestUniformIsEvenlySpaced(t *testing.T) {
	s, err := loadrun.Schedule(loadrun.Uniform, 50, 2, 9)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 100 {
		t.Fatalf("%d arrivals, want exactly 100", len(s))
	}
	for i := 1; i < len(s); i++ {
		if g := s[i] - s[i-1]; g < 20*time.Millisecond-time.Microsecond || g > 20*time.Millisecond+time.Microsecond {
			t.Fatalf("gap %d is %v, want 20ms", i, g)
		}
	}
}

func TestScheduleRejectsBadInput(t *testing.T) {
	cases := []struct {
		name    string
		kind    loadrun.ArrivalProcess
		rate    float64
		seconds float64
		want    string
	}{
		// A rate of zero sends nothing: say so rather than return an empty window.
		{"zero rate", loadrun.Poisson, 0, 10, "rate 0 is not allowed"},
		// Negative seconds make no window.
		{"negative seconds", loadrun.Poisson, 10, -1, "seconds -1 is not allowed"},
		// The generator's own cap protects the machine.
		{"rate above cap", loadrun.Poisson, result.MaxRate + 1, 1, "above the cap"},
		// NaN sneaks through naive comparisons.
		{"NaN rate", loadrun.Poisson, math.NaN(), 1, "not allowed"},
		// Too many arrivals in one window would exhaust memory.
		{"too many arrivals", loadrun.Poisson, 5000, 600, "arrivals, above the cap"},
		// Only two processes are known.
		{"unknown kind", loadrun.ArrivalProcess("bursty"), 10, 1, `schedule "bursty" is not known`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadrun.Schedule(c.kind, c.rate, c.seconds, 1)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// The open loop's default in-flight cap is one caller timeout's arrivals,
// so a short stall of the target is waited out, not turned into arrivals
// not sent; it stays within the generator's bounds.
func TestDefaultInFlight(t *testing.T) {
	cases := []struct {
		name    string
		rate    float64
		timeout time.Duration
		want    int
	}{
		// The lessons' rates: the floor of 2,048.
		{"slow", 100, 2 * time.Second, result.DefaultMaxInFlight},
		// 5,000 a second for 2 s: 10,000 may be outstanding.
		{"fast", 5000, 2 * time.Second, 10000},
		// 10,000 a second for 10 s would be 100,000: the cap.
		{"capped", 10000, 10 * time.Second, result.MaxMaxInFlight},
	}
	for _, c := range cases {
		sched, err := loadrun.Schedule(loadrun.Uniform, c.rate, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := loadrun.DefaultInFlight(sched, c.timeout); got < c.want*99/100 || got > c.want*101/100 {
			t.Errorf("%s: %g a second, timeout %v: cap %d, want about %d", c.name, c.rate, c.timeout, got, c.want)
		}
	}
}

// Two sweeps with the same seed send the same arrivals at a rate both
// offer, wherever it stands in their lists, a rate repeated in one sweep
// draws afresh, and another seed draws other arrivals.
func TestSameSeedSameRateSameArrivals(t *testing.T) {
	a := loadrun.Sweep{Rates: []float64{40, 80}, Seconds: 5, Seed: 7}
	b := loadrun.Sweep{Rates: []float64{80, 120, 40, 40}, Seconds: 5, Seed: 7}
	if x, _ := b.WindowSchedule(2); true {
		if y, _ := b.WindowSchedule(3); slices.Equal(x, y) {
			t.Error("40 a second twice in one sweep drew the same arrivals twice")
		}
	}
	for _, w := range [][2]int{{0, 2}, {1, 0}} {
		x, err := a.WindowSchedule(w[0])
		if err != nil {
			t.Fatal(err)
		}
		y, err := b.WindowSchedule(w[1])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(x, y) {
			t.Errorf("rate %g: %d arrivals in one sweep, %d in the other; want the same schedule", a.Rates[w[0]], len(x), len(y))
		}
	}
	x, _ := a.WindowSchedule(0)
	c := loadrun.Sweep{Rates: []float64{40}, Seconds: 5, Seed: 8}
	if y, _ := c.WindowSchedule(0); slices.Equal(x, y) {
		t.Error("seeds 7 and 8 gave the same schedule at 40 a second")
	}
}
