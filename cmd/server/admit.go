package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"capacitylab/admit"
)

// defaultAdmit is the front door's policy unless --admit says otherwise:
// a fixed quota of requests inside (served, or waiting for one of the
// --admit-workers), refusing anonymous page loads once 24 are inside and
// everyone else at 32. A page takes a fraction of a millisecond of
// processor time, so 32 inside is a wait of a few milliseconds unless
// they wait for the store: the quota bounds those.
const defaultAdmit admit.Spec = "inflight,quota=32"

// defaultAdmitWorkers is how many requests the front door lets be served
// at once: a few per processor, so the processors stay busy while some
// requests wait for the store, and a burst holds no more than that many
// pages being made at once.
const defaultAdmitWorkers = 8

// defaultAdmitWait is the processors' line past which the front door
// refuses anonymous page loads and API reads (four times it, everyone
// else's but the critical). On this project's 2-core machine, up to the
// server's ceiling of widget plots (about 1 ms each) the 90th percentile
// of goroutines' waits for a processor stayed near a millisecond; offered
// twice the ceiling, with this bound it served 80 to 106% of it with p99
// 72 to 85 ms; a 10 ms bound refused so eagerly that the processor idled
// (docs/BENCHMARKS.md).
const defaultAdmitWait = 25 * time.Millisecond

// parseAdmitWait reads --admit-wait: off (0), or 1ms to 1s.
func parseAdmitWait(v string) (time.Duration, error) {
	if v == "off" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, err
	}
	if d < time.Millisecond || d > time.Second {
		return 0, errors.New("out of range")
	}
	return d, nil
}

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
	case errors.As(err, &se) && se.Allowed == admit.Allowed:
		return "", errors.New(admitAllowed) // not a policy's name: name the server's
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
