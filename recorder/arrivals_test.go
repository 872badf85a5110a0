package recorder

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"capacitylab/lessons"
)

// The lessons say two presets faced "the same arrivals" wherever they share
// a seed: every pair of the course's open-loop presets with the same seed,
// random source and window length sends the same schedule at every rate
// both offer, wherever the rate stands in their lists, and their recorded
// tables' sent counts at that rate are equal.
func TestPresetsWithTheSameSeedShareArrivals(t *testing.T) {
	c, err := lessons.LoadWith(lessons.Content(), LoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	type preset struct {
		lab  *lessons.Lab
		sent map[float64]string // the recorded table's sent, by offered rate
	}
	var presets []preset
	for _, l := range c.Lessons {
		tables := map[string]*lessons.Table{}
		for _, b := range l.Blocks() {
			if tb, ok := b.(*lessons.Table); ok && tb.Preset != "" {
				tables[tb.Preset] = tb
			}
		}
		for _, b := range l.Blocks() {
			lab, ok := b.(*lessons.Lab)
			if !ok || lab.Closed > 0 || lab.Simulated {
				continue
			}
			p := preset{lab: lab, sent: map[float64]string{}}
			if tb := tables[lab.ID]; tb != nil {
				offered, sent := slices.Index(tb.Columns, "offered"), slices.Index(tb.Columns, "sent")
				for _, row := range tb.Rows {
					if offered < 0 || sent < 0 {
						break
					}
					if r, err := strconv.ParseFloat(row[offered], 64); err == nil {
						p.sent[r] = row[sent]
					}
				}
			}
			presets = append(presets, p)
		}
	}
	pairs := 0
	for i, a := range presets {
		for _, b := range presets[i+1:] {
			if a.lab.Seed != b.lab.Seed || a.lab.RNG != b.lab.RNG || a.lab.Seconds != b.lab.Seconds {
				continue
			}
			sa, sb := Preset(a.lab).Sweep(), Preset(b.lab).Sweep()
			for wa, rate := range a.lab.Rates {
				wb := slices.Index(b.lab.Rates, rate)
				if wb < 0 {
					continue
				}
				pairs++
				name := fmt.Sprintf("%s and %s at %g a second", a.lab.ID, b.lab.ID, rate)
				x, err := sa.WindowSchedule(wa)
				if err != nil {
					t.Fatal(err)
				}
				y, err := sb.WindowSchedule(wb)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(x, y) {
					t.Errorf("%s: different arrivals (%d and %d)", name, len(x), len(y))
				}
				if s, ok := a.sent[rate]; ok {
					if u, ok := b.sent[rate]; ok && s != u {
						t.Errorf("%s: the recorded tables sent %s and %s", name, s, u)
					}
				}
			}
		}
	}
	if pairs == 0 {
		t.Fatal("no two presets share a seed and a rate: nothing was checked")
	}
	t.Logf("%d pairs of windows checked", pairs)
}
