package model

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Num is a model quantity. It is an ordinary float64 in Go; in JSON a value
// that is not finite (an infinite ceiling, an undefined implied value) is
// written as null, because JSON has no NaN or Infinity. A result that holds
// such a value always carries a message saying why.
type Num float64

// MarshalJSON writes a finite Num as a JSON number and anything else as null.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// UnmarshalJSON reads a JSON number, or null as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// Finite reports whether n is neither NaN nor infinite.
func (n Num) Finite() bool {
	f := float64(n)
	return !math.IsNaN(f) && !math.IsInf(f, 0)
}

// shown rounds v the way Format shows it and returns the rounded value and
// the number of decimals. The arithmetic (multiply by a power of ten built by
// repeated multiplication, add one half, floor, divide) is exactly what
// static/js/model.js does, so both print the same digits.
func shown(v float64) (float64, int) {
	a := math.Abs(v)
	d := 0
	switch {
	case a >= 100:
		d = 0
	case a >= 1:
		d = 2
	default:
		d = 2
		for t := a; t > 0 && t < 1 && d < 12; t *= 10 {
			d++
		}
	}
	p := 1.0
	for i := 0; i < d; i++ {
		p *= 10
	}
	r := math.Floor(a*p+0.5) / p
	if v < 0 {
		r = -r
	}
	return r, d
}

// Format writes a quantity for a learner: whole numbers from 100 up, at
// most two decimals from 1 to 100, three significant digits below 1, with
// trailing zeros dropped (11.04, 190, 9.95, 0.0042). Infinity is written "∞"
// and NaN "undefined". Sentences and steps use it, so Go and JavaScript
// render the same text.
func Format(v float64) string {
	switch {
	case math.IsNaN(v):
		return "undefined"
	case math.IsInf(v, 1):
		return "∞"
	case math.IsInf(v, -1):
		return "-∞"
	}
	r, d := shown(v)
	s := strconv.FormatFloat(r, 'f', d, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// about returns "about " when Format(v) is not v exactly, so a sentence
// says "about 190" for 190.48 and "11.04" for 11.04.
func about(v float64) string {
	r, _ := shown(v)
	if math.Abs(r-v) > 1e-9*math.Max(1, math.Abs(v)) {
		return "about "
	}
	return ""
}

// plural returns one when the number as shown is exactly "1", else many.
func plural(shownNum, one, many string) string {
	if shownNum == "1" {
		return one
	}
	return many
}
