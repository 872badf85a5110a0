package evidence

import (
	"fmt"

	"capacitylab/result"
)

// KeepUp is the share of its arrivals a window must answer ok, a second,
// to count as keeping up: below it the service has saturated (or is
// failing). Poisson arrivals of a 20-second window at 40 a second vary by
// about 3.5% from the offered rate, so the rule compares answers with the
// window's own arrivals, not with the rate asked for.
const KeepUp = 0.95

// Saturated says whether window i of rows has saturated, and why, in a
// phrase ("answered 371.2/s of 400.5/s arriving"). An open-loop window has
// saturated when it answered ok fewer than KeepUp of its arrivals a
// second; a closed-loop window (Clients > 0) when its goodput rose less
// than 1 − KeepUp over the window before it although clients were added.
// The knee search (cmd/load) and the analysis (Analyze) both use it, so
// the knee load stops at is the knee the page shows.
func Saturated(rows []result.Row, i int) (bool, string) {
	r := rows[i]
	if r.Clients > 0 {
		if i == 0 {
			return false, ""
		}
		p := rows[i-1]
		if r.Clients > p.Clients && r.OKPerSec < p.OKPerSec*(2-KeepUp) {
			return true, fmt.Sprintf("goodput %.1f/s with %d clients, %.1f/s with %d: more clients, no more answers", r.OKPerSec, r.Clients, p.OKPerSec, p.Clients)
		}
		return false, ""
	}
	if r.Seconds <= 0 || r.Arrivals == 0 {
		return false, ""
	}
	arriving := float64(r.Arrivals) / r.Seconds
	if r.OKPerSec < KeepUp*arriving {
		return true, fmt.Sprintf("answered %.1f/s of %.1f/s arriving", r.OKPerSec, arriving)
	}
	return false, ""
}
