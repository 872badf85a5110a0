package admit_test

import (
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"capacitylab/admit"
)

// benchSpecs are the policies as the benchmarks run them: each one's
// defaults (a quota for inflight, a LIMIT for queue).
var benchSpecs = []struct {
	name  string
	spec  admit.Spec
	limit int
}{
	{"queue", "", 10},
	{"inflight", "inflight,quota=64", 0},
	{"aimd", "aimd", 0},
	{"gradient", "gradient,samples=1", 0},
	{"sojourn", "sojourn", 0},
	{"sojourn_timeout", "sojourn,timeout_ms=250", 0},
}

// BenchmarkDoor measures what a policy costs a request at the door: one
// Admit, Start and Done, as the lab calls them (its metrics registered,
// the clock read by the caller and passed in). single: one goroutine;
// contended: every processor, under one mutex as the lab's door and the
// proxy hold theirs (ns/op is then wall time per request across all of
// them). The goal is under 1 µs a request (docs/BENCHMARKS.md):
//
//	go test -run '^$' -bench BenchmarkDoor ./admit
func BenchmarkDoor(b *testing.B) {
	for _, bs := range benchSpecs {
		b.Run(bs.name+"/single", func(b *testing.B) {
			d := benchDoor(b, bs.spec, bs.limit)
			var now time.Duration
			b.ReportAllocs()
			for b.Loop() {
				now += time.Microsecond
				if d.Admit(now, 1, 0) && d.Start(now, 0) {
					d.Done(now+time.Microsecond, 2*time.Microsecond, admit.Served)
				}
			}
		})
		b.Run(bs.name+"/contended", func(b *testing.B) {
			d := benchDoor(b, bs.spec, bs.limit)
			var mu sync.Mutex
			var now time.Duration
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					mu.Lock()
					now += time.Microsecond
					t := now
					ok := d.Admit(t, 1, 0) && d.Start(t, 0)
					mu.Unlock()
					if !ok {
						continue
					}
					mu.Lock()
					now += time.Microsecond
					d.Done(now, now-t, admit.Served)
					mu.Unlock()
				}
			})
		})
	}
}

func benchDoor(b *testing.B, spec admit.Spec, limit int) *admit.Door {
	d, err := admit.NewDoor(spec, limit, 4)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Register(prometheus.NewRegistry()); err != nil {
		b.Fatal(err)
	}
	return d
}
