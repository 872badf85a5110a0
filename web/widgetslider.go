package web

import (
	"math"
	"strconv"

	"capacitylab/chart"
	"capacitylab/model"
)

// sliderPixels is the narrowest a widget's range input is laid out, in
// CSS pixels (a row of its own at 320 px). A goal's slider spans at most
// 2 × tol × sliderPixels, so no pixel steps over the goal's window.
const sliderPixels = 250

// slider is a range input's limits and step.
type slider struct {
	Min, Max, Step float64
}

// sliderMax is the top of a parameter's range input with no goal: a
// round number at least twice the larger of its value and its default
// (and at least ten steps), capped at the parameter's maximum. The number
// input beside it takes the parameter's whole range.
func sliderMax(p model.Param, v float64) float64 {
	base := math.Max(math.Max(v, p.Default), p.Step*10)
	return math.Min(p.Max, math.Max(p.Min+p.Step, chart.NiceCeil(2*base)))
}

// sliderFor lays out a parameter's range input for value v and the goal's
// target on it (nil: none). Without a target it is min to sliderMax by the
// parameter's step. With one, the step is goalStep; the top covers the
// goal too; and when that range is wider than 2 × tol × sliderPixels it
// narrows to a window of that width around the goal, so a drag can land
// in the goal's tolerance (the number input still takes any value).
// static/js/widgettext.js has the same rule (web/testdata/widget-vectors.json).
func sliderFor(p model.Param, v float64, t *model.Target) slider {
	if t == nil {
		return slider{Min: p.Min, Max: sliderMax(p, v), Step: p.Step}
	}
	step := goalStep(p, *t)
	base := math.Max(math.Max(v, p.Default), math.Max(step*10, t.Value+t.Tol))
	s := slider{Min: p.Min, Max: math.Min(p.Max, math.Max(p.Min+step, chart.NiceCeil(2*base))), Step: step}
	span := math.Floor(2*t.Tol*sliderPixels/step) * step
	if s.Max-s.Min > span {
		lo := math.Max(p.Min, p.Min+math.Floor((t.Value-span/2-p.Min)/step)*step)
		hi := math.Min(p.Max, lo+span)
		if hi-lo < span {
			lo = math.Max(p.Min, p.Min+math.Ceil((hi-span-p.Min)/step)*step)
		}
		s.Min, s.Max = lo, hi
	}
	s.Min, s.Max, s.Step = round12(s.Min), round12(s.Max), round12(s.Step)
	return s
}

// goalStep is the step of a slider with a goal on it, as coarse as the
// tolerance allows, so the arrow keys and − and + get there in few
// presses: the largest 1, 2 or 5 × 10^k at or below tol when it is no
// finer than the parameter's own step and its grid (min + k × step) has
// the goal on it; else the parameter's step when its grid comes within
// tol of the goal; else that 1, 2 or 5 × 10^k, whose grid always comes
// within half a step.
func goalStep(p model.Param, t model.Target) float64 {
	on := func(step, within float64) bool {
		near := p.Min + math.Round((t.Value-p.Min)/step)*step
		return math.Abs(near-t.Value) <= within+1e-9*math.Max(1, math.Abs(t.Value))
	}
	nice := chart.NiceFloor(t.Tol)
	switch {
	case nice >= p.Step && on(nice, 0):
		return nice
	case on(p.Step, t.Tol):
		return p.Step
	}
	return nice
}

// round12 rounds to 12 significant digits, dropping floating-point noise
// (0.1 + 19 × 0.1).
func round12(x float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 12, 64), 64)
	if err != nil {
		return x
	}
	return r
}

// rangePos snaps v to a range input's grid min + k × step (the nearer
// step, a half going up) within [min, max], rounded to 12 significant
// digits, as a browser snaps it.
func rangePos(s slider, v float64) float64 {
	x := s.Min + math.Floor((v-s.Min)/s.Step+0.5)*s.Step
	return round12(math.Min(s.Max, math.Max(s.Min, x)))
}

// targetOn returns the target on parameter name that its slider is laid
// out for, or nil: none, or a value the learner is to find (Find), whose
// slider must not sit centred on it.
func targetOn(ts []model.Target, name string) *model.Target {
	for i := range ts {
		if ts[i].Param == name && !ts[i].Find {
			return &ts[i]
		}
	}
	return nil
}

// layoutSliders sets each input's range (sliderFor, with the goal's
// target on it) and where its thumb sits.
func (v *widgetView) layoutSliders() {
	for i := range v.Inputs {
		in := &v.Inputs[i]
		x := in.Value
		if math.IsNaN(x) {
			x = in.P.Default
		}
		in.Target = targetOn(v.Targets, in.P.Name)
		in.Slider = sliderFor(in.P, x, in.Target)
		in.RangePos = rangePos(in.Slider, x)
	}
}

// nudged applies a nudge (a − or + button: one slider step down or up) to
// values, within the parameter's range.
func nudged(spec model.Spec, values map[string]float64, n nudge, targets []model.Target) {
	for _, p := range spec.Params {
		if p.Name != n.Param {
			continue
		}
		x, ok := values[p.Name]
		if !ok {
			x = p.Default
		}
		step := sliderFor(p, x, targetOn(targets, p.Name)).Step
		values[p.Name] = round12(math.Min(p.Max, math.Max(p.Min, x+float64(n.Dir)*step)))
	}
}
