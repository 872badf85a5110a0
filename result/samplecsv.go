package result

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// SampleColumns are a Sample's fields as CSV columns and recorded time
// tables name them (their JSON names), window and at_s first.
func SampleColumns() []string {
	return []string{"window", "at_s", "seconds", "ok", "refused", "gaveup", "errors", "client_busy", "not_sent",
		"p50_ms", "p99_ms", "in_flight", "lab", "queued", "in_service", "limit", "dropped", "attempts", "breaker_open", "breaker"}
}

// Cells writes s in SampleColumns' order.
func (s Sample) Cells() []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	i := strconv.Itoa
	return []string{i(s.Window), f(s.AtS), f(s.Seconds), i(s.OK), i(s.Refused), i(s.GaveUp), i(s.Errors), i(s.ClientBusy), i(s.NotSent),
		f(s.P50MS), f(s.P99MS), i(s.InFlight), strconv.FormatBool(s.Lab), i(s.Queued), i(s.InService), i(s.Limit), strconv.FormatInt(s.Dropped, 10),
		i(s.Attempts), i(s.BreakerOpen), s.Breaker}
}

// ParseSamples reads a time table's rows (columns named as SampleColumns
// names them, window and at_s first, the others in any order or left
// out) into samples. An empty cell or "—" is 0. Without a lab column, a
// sample has the lab's statistics when any of its queued, in_service or
// limit cells says a number. A cell that is not a number is an error
// naming its row and column; a column that is not a Sample's is ignored.
func ParseSamples(columns []string, rows [][]string) ([]Sample, error) {
	if len(columns) < 2 || columns[0] != "window" || columns[1] != "at_s" {
		return nil, fmt.Errorf("a time table's columns begin with window, at_s: these begin %s", strings.Join(columns[:min(2, len(columns))], ", "))
	}
	hasLab := slices.Contains(columns, "lab")
	out := make([]Sample, 0, len(rows))
	for r, row := range rows {
		var s Sample
		for c, name := range columns {
			if c >= len(row) {
				break
			}
			cell := strings.TrimSpace(row[c])
			if cell == "" || cell == "—" {
				continue
			}
			if name == "lab" {
				b, err := strconv.ParseBool(cell)
				if err != nil {
					return nil, fmt.Errorf("row %d, column lab: %q is not allowed: want true or false", r+1, cell)
				}
				s.Lab = b
				continue
			}
			if name == "breaker" {
				if cell != "closed" && cell != "open" && cell != "half_open" {
					return nil, fmt.Errorf("row %d, column breaker: %q is not allowed: want closed, open or half_open, or empty", r+1, cell)
				}
				s.Breaker = cell
				continue
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil {
				return nil, fmt.Errorf("row %d, column %s: %q is not a number", r+1, name, cell)
			}
			if !hasLab && (name == "queued" || name == "in_service" || name == "limit") {
				s.Lab = true
			}
			n := int(v)
			switch name {
			case "window":
				s.Window = n
			case "at_s":
				s.AtS = v
			case "seconds":
				s.Seconds = v
			case "ok":
				s.OK = n
			case "refused":
				s.Refused = n
			case "gaveup":
				s.GaveUp = n
			case "errors":
				s.Errors = n
			case "client_busy":
				s.ClientBusy = n
			case "not_sent":
				s.NotSent = n
			case "p50_ms":
				s.P50MS = v
			case "p99_ms":
				s.P99MS = v
			case "in_flight":
				s.InFlight = n
			case "queued":
				s.Queued = n
			case "in_service":
				s.InService = n
			case "limit":
				s.Limit = n
			case "dropped":
				s.Dropped = int64(v)
			case "attempts":
				s.Attempts = n
			case "breaker_open":
				s.BreakerOpen = n
			case "critical_ok", "default_ok", "sheddable_ok":
				var k Class
				_ = k.UnmarshalText([]byte(strings.TrimSuffix(name, "_ok")))
				if s.ByClass == nil {
					s.ByClass = []ClassSample{{Class: Critical}, {Class: Default}, {Class: Sheddable}}
				}
				for i := range s.ByClass {
					if s.ByClass[i].Class == k {
						s.ByClass[i].OK = n
					}
				}
			}
		}
		out = append(out, s)
	}
	// Without a seconds column, each sample lasts until the next one of
	// its window starts (the last a second).
	if !slices.Contains(columns, "seconds") {
		for i := range out {
			out[i].Seconds = 1
			if i+1 < len(out) && out[i+1].Window == out[i].Window {
				out[i].Seconds = out[i+1].AtS - out[i].AtS
			}
		}
	}
	return out, nil
}
