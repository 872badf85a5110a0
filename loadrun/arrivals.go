package loadrun

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"capacitylab/result"
)

// maxArrivalLine bounds one line of an arrivals file.
const maxArrivalLine = 256

// ReadArrivals reads an arrival trace: intended send times in seconds from
// the window's start, one a line, in increasing order (equal times are
// allowed: callers arriving together). Blank lines and surrounding spaces
// are ignored. An empty trace, a line that is not a plain decimal number
// of seconds (0 or more), a time earlier than the line before it, or more
// than MaxArrivals times is an error naming the line. Each time is rounded
// to the nanosecond, as schedules are.
func ReadArrivals(r io.Reader) ([]time.Duration, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, maxArrivalLine), maxArrivalLine)
	var out []time.Duration
	var prev float64
	prevLine, line := 0, 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		v, err := strconv.ParseFloat(text, 64)
		if err != nil || !plainDecimal(text) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("line %d: %q is not a time: want seconds since the window's start, 0 or more, such as 0.125, one a line", line, text)
		}
		if prevLine > 0 && v < prev {
			return nil, fmt.Errorf("line %d: %s s comes before line %d's %s s: want the times in increasing order", line, text, prevLine, strconv.FormatFloat(prev, 'f', -1, 64))
		}
		if len(out) == result.MaxArrivals {
			return nil, fmt.Errorf("line %d: more than %d arrival times: want at most %d in one window", line, int(result.MaxArrivals), int(result.MaxArrivals))
		}
		out = append(out, secondsToDuration(v))
		prev, prevLine = v, line
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d characters: want one time in seconds a line", line+1, maxArrivalLine)
		}
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no arrival times: want one time in seconds since the window's start a line, such as 0.125")
	}
	return out, nil
}

// plainDecimal reports whether s is written as digits with an optional
// point (and sign), not as Go's other spellings of a float (1e3, 0x1p4,
// 1_000, Inf, NaN).
func plainDecimal(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "+"), "-")
	digits := 0
	point := false
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !point:
			point = true
		default:
			return false
		}
	}
	return digits > 0
}

// checkArrivals says what is wrong with an arrival trace for a window of
// seconds, or nil.
func checkArrivals(arr []time.Duration, seconds float64) error {
	if math.IsNaN(seconds) || seconds <= 0 || seconds > result.MaxSeconds {
		return fmt.Errorf("seconds %v is not allowed: want more than 0 and at most %d", seconds, result.MaxSeconds)
	}
	if len(arr) > result.MaxArrivals {
		return fmt.Errorf("%d arrival times is above the cap of %d in one window", len(arr), int(result.MaxArrivals))
	}
	end := secondsToDuration(seconds)
	for i, a := range arr {
		switch {
		case a < 0:
			return fmt.Errorf("arrival %d at %v is before the window's start: want times from 0", i+1, a)
		case i > 0 && a < arr[i-1]:
			return fmt.Errorf("arrival %d at %v comes before arrival %d at %v: want the times in increasing order", i+1, a, i, arr[i-1])
		case a >= end:
			return fmt.Errorf("arrival %d at %v is not before the window's end at %v s: want every time below the window's length", i+1, a, strconv.FormatFloat(seconds, 'f', -1, 64))
		}
	}
	if rate := float64(len(arr)) / seconds; rate > result.MaxRate {
		return fmt.Errorf("%d arrivals in %v s is %v a second on average, above the cap of %d a second", len(arr), seconds, rate, result.MaxRate)
	}
	return nil
}
