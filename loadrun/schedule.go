package loadrun

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"capacitylab/result"
)

// ArrivalProcess names how a schedule spaces its arrivals.
type ArrivalProcess string

// The arrival processes a schedule can follow.
const (
	// Poisson arrivals: independent exponential gaps with mean 1/rate.
	Poisson ArrivalProcess = "poisson"
	// Uniform arrivals: evenly spaced, one every 1/rate, starting at a
	// random phase in the first gap (the phase comes from the seed).
	Uniform ArrivalProcess = "uniform"
)

// ParseArrivalProcess turns "poisson" or "uniform" into an ArrivalProcess.
func ParseArrivalProcess(s string) (ArrivalProcess, error) {
	switch ArrivalProcess(s) {
	case Poisson, Uniform:
		return ArrivalProcess(s), nil
	}
	return "", fmt.Errorf("schedule %q is not known: want poisson or uniform", s)
}

// CheckRate says what is wrong with a rate and a window length, or nil.
func CheckRate(rate, seconds float64) error {
	switch {
	case math.IsNaN(rate) || rate <= 0:
		return fmt.Errorf("rate %v is not allowed: want more than 0 and at most %d a second", rate, result.MaxRate)
	case rate > result.MaxRate:
		return fmt.Errorf("rate %v is above the cap: want at most %d a second", rate, result.MaxRate)
	case math.IsNaN(seconds) || seconds <= 0:
		return fmt.Errorf("seconds %v is not allowed: want more than 0 and at most %d", seconds, result.MaxSeconds)
	case seconds > result.MaxSeconds:
		return fmt.Errorf("seconds %v is above the cap: want at most %d", seconds, result.MaxSeconds)
	case rate*seconds > result.MaxArrivals:
		return fmt.Errorf("rate %v for %v s is %v arrivals, above the cap of %d in one window", rate, seconds, rate*seconds, int(result.MaxArrivals))
	}
	return nil
}

// Source names the random source a schedule draws from.
type Source string

// The random sources a schedule can draw from.
const (
	// PCG is math/rand/v2's PCG, seeded with (seed, "loadrun"): the
	// default.
	PCG Source = "pcg"
	// Python is CPython's random module (see PyRandom): the same seed gives
	// the same arrivals as a CPython script that calls random.seed(seed)
	// and draws random.expovariate(rate) for each gap (Poisson), or
	// random.random() × gap for the phase (uniform).
	Python Source = "python"
)

// ParseSource turns "pcg" or "python" into a Source.
func ParseSource(s string) (Source, error) {
	switch Source(s) {
	case PCG, Python:
		return Source(s), nil
	}
	return "", fmt.Errorf("random source %q is not known: want pcg or python", s)
}

// Schedule returns the intended send times of one window drawn from PCG,
// as offsets from the window's start, in increasing order, all before
// seconds. The same arguments always give the same schedule, so a window
// can be computed up front and replayed. It returns an error for a rate or
// length outside the caps (see CheckRate) or an unknown kind.
func Schedule(kind ArrivalProcess, rate, seconds float64, seed uint64) ([]time.Duration, error) {
	return PCG.Schedule(kind, rate, seconds, seed)
}

// Schedule is the package's Schedule drawn from src ("" means PCG).
// Poisson accumulates gaps in seconds, t += gap, while t < seconds;
// uniform puts arrival k at phase + k/rate. Each time is then rounded to
// the nanosecond.
func (src Source) Schedule(kind ArrivalProcess, rate, seconds float64, seed uint64) ([]time.Duration, error) {
	if err := CheckRate(rate, seconds); err != nil {
		return nil, err
	}
	if _, err := ParseArrivalProcess(string(kind)); err != nil {
		return nil, err
	}
	// exp draws an exponential gap of mean 1/rate, unit a float in [0, 1).
	var exp func() float64
	var unit func() float64
	switch src {
	case PCG, "":
		rng := rand.New(rand.NewPCG(seed, 0x6c6f616472756e)) // stream constant: "loadrun"
		exp = func() float64 { return rng.ExpFloat64() / rate }
		unit = rng.Float64
	case Python:
		py := NewPyRandom(seed)
		exp = func() float64 { return py.Expovariate(rate) }
		unit = py.Random
	default:
		_, err := ParseSource(string(src))
		return nil, err
	}
	end := seconds
	out := make([]time.Duration, 0, int(rate*seconds*1.1)+16)
	if kind == Poisson {
		t := 0.0
		for {
			t += exp()
			if t >= end {
				return out, nil
			}
			out = append(out, secondsToDuration(t))
		}
	}
	gap := 1 / rate
	phase := unit() * gap
	for k := 0; ; k++ {
		t := phase + float64(k)*gap
		if t >= end {
			return out, nil
		}
		out = append(out, secondsToDuration(t))
	}
}

// WindowSeed is the seed the again-th repeat of rate in a sweep with seed
// seed draws from (again 0 for the first window at that rate):
// WindowSeed(seed, rate, again) for PCG, and seed itself for Python, as a
// CPython script that calls random.seed(seed) before each rate does.
func (src Source) WindowSeed(seed uint64, rate float64, again int) uint64 {
	if src == Python {
		return seed
	}
	return WindowSeed(seed, rate, again)
}

// WindowSeed derives the seed of a window at rate (arrivals a second) from
// the sweep's seed and how many windows at that rate came before it in the
// sweep (again): every window of a sweep has its own schedule, a rate
// repeated in one sweep draws afresh each time, the sweep replays
// exactly, and two sweeps with the same seed send the same arrivals at the
// first window of each rate wherever it stands in their lists of rates.
func WindowSeed(seed uint64, rate float64, again int) uint64 {
	// splitmix64 finaliser over seed, the rate's bits and the repeat.
	z := seed + (math.Float64bits(rate)+1)*0x9e3779b97f4a7c15 + uint64(again)*0xd1b54a32d192ed03
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func secondsToDuration(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}
