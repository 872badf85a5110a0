package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"capacitylab/admit"
)

// defaultAdmit is the front door's policy unless --admit says otherwise: a
// fixed quota of requests inside (being served) at once. On the 2-core
// machine of docs/BENCHMARKS.md the server's lesson pages take about a
// third of a millisecond of processor each, so a few requests inside
// already keep its core busy; a quota of 32 leaves room for slower pages
// and the store's waits, and past it a refusal costs a few microseconds
// instead of a place in an ever longer line (measured there: at twice the
// ceiling, goodput held where without a bound it fell to a seventh).
const defaultAdmit admit.Spec = "inflight,quota=32"

// admitAllowed is what --admit allows, for -h, the README and errors.
const admitAllowed = "inflight,quota=N, aimd or gradient (with parameters after commas, as package admit spells them), or queue (no bound: every request let in)"

// parseAdmit reads --admit. The server's gate has no workers of its own
// (a request let in is served at once), so sojourn, which bounds a wait
// for a worker, has nothing to bound and is refused, as is the queue
// policy's LIMIT, which bounds the same wait.
func parseAdmit(v string) (admit.Spec, error) {
	spec, err := admit.ParseSpec(v)
	var se *admit.SpecError
	switch {
	case errors.As(err, &se):
		return "", errors.New(se.Allowed)
	case err != nil:
		return "", err
	case spec.Kind() == admit.Sojourn:
		return "", errors.New(admitAllowed + ": sojourn bounds the wait for a worker, and the server has no queue of its own (a request let in is served at once)")
	}
	return spec, nil
}

// defaultMemoryLimit is the runtime's soft memory limit unless
// --memory-limit (or GOMEMLIMIT) says otherwise. The server rests near
// 40 MB; the limit is far above what it uses at its ceiling behind the
// front door, so it costs nothing then, and it makes the runtime give
// memory back to the system after a burst (docs/BENCHMARKS.md).
const defaultMemoryLimit = "512MiB"

// minMemoryLimit is the least --memory-limit allowed: below it the
// runtime would collect all the time at the server's resting size.
const (
	minMemoryLimit     = 64 << 20
	minMemoryLimitText = "64MiB"
)

// parseSize reads a memory limit as GOMEMLIMIT spells it: off, or a whole
// number of bytes with an optional unit B, KiB, MiB, GiB or TiB.
func parseSize(v string) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "off" {
		return math.MaxInt64, nil
	}
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}
	shift := uint(0)
	for _, u := range units {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			v, shift = num, u.shift
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil || n < 0:
		return 0, fmt.Errorf("%q is not a whole number with a unit B, KiB, MiB, GiB or TiB", v)
	case n > math.MaxInt64>>shift:
		return 0, errors.New("too large")
	case n<<shift < minMemoryLimit:
		return 0, errors.New("too small: the server rests near 40 MB")
	}
	return n << shift, nil
}
