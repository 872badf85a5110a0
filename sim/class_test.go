package sim_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"capacitylab/admit"
	"capacitylab/labsvc"
	"capacitylab/result"
	"capacitylab/sim"
)

// classesOf gives arrival i the class classes[i].
func classesOf(classes []admit.Class) func(int) admit.Class {
	return func(i int) admit.Class { return classes[i] }
}

// The simulated door sheds by class as the lab's does (labsvc's
// TestShedByClassAtTheDoor sends the same trace to a real lab): one
// worker busy for 250 ms, LIMIT=4, nine requests 1 ms apart. With
// queue,classes=on the second sheddable is refused (4 inside: all but a
// quarter of the bound of 5), the fourth default too (LIMIT wait), and the
// two critical ones are let in beyond the bound and served first, the
// sheddable one last. With the plain queue policy the last four are
// refused, critical ones with the rest.
func TestClassesSimulated(t *testing.T) {
	d, s, c := admit.Normal, admit.Sheddable, admit.Critical
	classes := []admit.Class{d, d, d, s, s, d, d, c, c}
	var arrivals []time.Duration
	for i := range classes {
		arrivals = append(arrivals, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		policy admit.Spec
		want   string
		ends   map[int]time.Duration // ms, by request (1-based)
		counts result.LabClasses
	}{
		{"queue,classes=on", "oooororoo",
			map[int]time.Duration{1: 250, 8: 500, 9: 750, 2: 1000, 3: 1250, 6: 1500, 4: 1750},
			result.LabClasses{
				Critical:  result.LabClass{Accepted: 2, Done: 2},
				Default:   result.LabClass{Accepted: 4, Refused: 1, Done: 4},
				Sheddable: result.LabClass{Accepted: 1, Refused: 1, Done: 1},
			}},
		{"queue", "ooooorrrr",
			map[int]time.Duration{1: 250, 2: 500, 3: 750, 4: 1000, 5: 1250},
			result.LabClasses{
				Critical:  result.LabClass{Refused: 2},
				Default:   result.LabClass{Accepted: 3, Refused: 2, Done: 3},
				Sheddable: result.LabClass{Accepted: 2, Done: 2},
			}},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			m := sim.WithClasses(sim.Model{Lab: labsvc.Config{Workers: 1, WaitMS: 250, Limit: 4, CPUs: 1, Policy: tc.policy}}, classesOf(classes))
			res, lab, err := m.RunWindow(context.Background(), result.Window{Schedule: arrivals})
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomes(res.Records); got != tc.want {
				t.Errorf("outcomes %s, want %s", got, tc.want)
			}
			for i, end := range tc.ends {
				if r := res.Records[i-1]; r.Outcome != result.OK || r.End != end*time.Millisecond {
					t.Errorf("request %d: %s at %v, want ok at %v ms", i, r.Outcome, r.End, end)
				}
			}
			if lab.Classes != tc.counts {
				t.Errorf("classes %+v, want %+v", lab.Classes, tc.counts)
			}
		})
	}
}

// At twice the simulated lab's capacity (2 workers of 10 ms, 200 a
// second; 400 a second offered, Poisson, for 10 s), a fifth of the
// requests critical and the rest default and sheddable in equal parts,
// with LIMIT=6: the plain queue policy serves each class about as often
// as any, about half; with classes=on at least 95% of the critical
// requests are served, and sheddable requests are refused first. The
// shapes labsvc's TestClassesAtTwiceCapacity measures on a real lab.
func TestClassesAtTwiceCapacitySimulated(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 2))
	var arrivals []time.Duration
	var classes []admit.Class
	for at := time.Duration(0); at < 10*time.Second; at += time.Duration(rng.ExpFloat64() * float64(time.Second/400)) {
		arrivals = append(arrivals, at)
		c := admit.Normal
		switch u := rng.Float64(); {
		case u < 0.2:
			c = admit.Critical
		case u < 0.6:
			c = admit.Sheddable
		}
		classes = append(classes, c)
	}
	for _, policy := range []admit.Spec{"queue", "queue,classes=on"} {
		t.Run(policy.String(), func(t *testing.T) {
			m := sim.WithClasses(sim.Model{Lab: labsvc.Config{Workers: 2, WaitMS: 10, Limit: 6, CPUs: 1, Policy: policy}}, classesOf(classes))
			res, lab, err := m.RunWindow(context.Background(), result.Window{Schedule: arrivals})
			if err != nil {
				t.Fatal(err)
			}
			sent, ok := map[admit.Class]int{}, map[admit.Class]int{}
			for i, r := range res.Records {
				sent[classes[i]]++
				switch r.Outcome {
				case result.OK:
					ok[classes[i]]++
				case result.Refused:
				default:
					t.Fatalf("request %d: %s, want ok or refused", i, r.Outcome)
				}
			}
			share := func(c admit.Class) float64 { return float64(ok[c]) / float64(sent[c]) }
			all := float64(ok[admit.Critical]+ok[admit.Normal]+ok[admit.Sheddable]) / float64(len(arrivals))
			t.Logf("%s: served %.1f%% in all, critical %.1f%%, default %.1f%%, sheddable %.1f%% (%d requests)",
				policy, 100*all, 100*share(admit.Critical), 100*share(admit.Normal), 100*share(admit.Sheddable), len(arrivals))
			for c, k := range map[admit.Class]result.LabClass{admit.Critical: lab.Classes.Critical, admit.Normal: lab.Classes.Default, admit.Sheddable: lab.Classes.Sheddable} {
				if k.Done != int64(ok[c]) || k.Refused != int64(sent[c]-ok[c]) || k.Accepted != k.Done+k.Dropped+int64(k.Inside) {
					t.Errorf("classes.%s = %+v; the callers saw %d served, %d refused", c, k, ok[c], sent[c]-ok[c])
				}
			}
			if all < 0.45 || all > 0.55 {
				t.Errorf("%.1f%% served in all, want about half", 100*all)
			}
			if policy == "queue" {
				for _, c := range admit.Classes() {
					if d := share(c) - all; d > 0.05 || d < -0.05 {
						t.Errorf("%s served %.1f%%, want the %.1f%% served in all, within 5 points", c, 100*share(c), 100*all)
					}
				}
				return
			}
			if share(admit.Critical) < 0.95 || share(admit.Sheddable) >= share(admit.Normal) {
				t.Errorf("served: critical %.1f%%, default %.1f%%, sheddable %.1f%%; want critical at least 95%%, sheddable refused first", 100*share(admit.Critical), 100*share(admit.Normal), 100*share(admit.Sheddable))
			}
		})
	}
}
