package result_test

import (
	"math"
	"testing"
	"time"

	"capacitylab/result"
)

// summary is a LabSummary of xs as the lab makes one: n, mean, max and
// the population SCV (variance ÷ mean²).
func summary(xs []float64) result.LabSummary {
	s := result.LabSummary{N: len(xs)}
	for _, x := range xs {
		s.Mean += x / float64(len(xs))
		s.Max = math.Max(s.Max, x)
	}
	for _, x := range xs {
		s.SCV += (x - s.Mean) * (x - s.Mean) / float64(len(xs))
	}
	s.SCV /= s.Mean * s.Mean
	return s
}

// Two labs' stats merged are what one lab serving both labs' requests
// would report: counts summed, the service times' n, mean, SCV and max
// those of the union, the earliest start, a lab that does not say its
// backlog making the merged backlog unknown (−1); one lab's stats pass
// through as they are.
func TestMergeLabStats(t *testing.T) {
	a := []float64{5, 5, 6, 30, 4}
	b := []float64{10, 12, 100}
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	la := result.LabStats{Since: t0.Add(time.Second), Accepted: 5, Done: 5, QueuedMax: 2, BackloggedMax: 1, ServiceMS: summary(a), ProcessCPUMS: 3,
		Classes: result.LabClasses{Critical: result.LabClass{Done: 2}}}
	lb := result.LabStats{Since: t0, Accepted: 4, Refused: 1, Done: 3, QueuedMax: 1, BackloggedMax: -1, ServiceMS: summary(b), ProcessCPUMS: 2,
		Classes: result.LabClasses{Critical: result.LabClass{Done: 1}}}
	m := result.MergeLabStats(la, lb)
	want := summary(append(append([]float64{}, a...), b...))
	if m.ServiceMS.N != want.N || math.Abs(m.ServiceMS.Mean-want.Mean) > 1e-9 || math.Abs(m.ServiceMS.SCV-want.SCV) > 1e-9 || m.ServiceMS.Max != want.Max {
		t.Errorf("merged service %+v: want the union's %+v", m.ServiceMS, want)
	}
	if !m.Since.Equal(t0) || m.Accepted != 9 || m.Refused != 1 || m.Done != 8 || m.QueuedMax != 3 || m.BackloggedMax != -1 || m.ProcessCPUMS != 5 || m.Classes.Critical.Done != 3 {
		t.Errorf("merged %+v: want since %v, accepted 9, refused 1, done 8, queued_max 3, backlogged_max -1, cpu 5, critical done 3", m, t0)
	}
	lb.BackloggedMax = 4
	if m := result.MergeLabStats(la, lb); m.BackloggedMax != 5 {
		t.Errorf("backlogged_max %d: want 1 + 4", m.BackloggedMax)
	}
	if one := result.MergeLabStats(la); one != la {
		t.Errorf("one lab's stats merged: %+v, want them as they are", one)
	}
}
