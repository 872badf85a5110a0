package labsvc_test

import (
	"math"
	"sync"
	"testing"
	"time"

	"capacitylab/dist"
	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
)

// TestDistMoments serves 1,000 requests from each distribution, 32 at a
// time, on a lab with more workers than callers and no spin (so nothing
// queues and each service time is its drawn demand). The lab's own
// service_ms has the mean and SCV of the 1,000 factors its seed draws
// first (dist.Sampler; WAIT_MS=40 times their mean within 5%, and their
// SCV within 10%: the lab's own work, a fraction of a millisecond on a
// busy processor, adds to every request, and so lowers the SCV a little),
// (the draws' moments against the distribution's are package dist's
// tests, over a million draws: a thousand lognormal ones can be far from
// theirs). A constant lab's SCV is near 0.
func TestDistMoments(t *testing.T) {
	for _, spec := range []dist.Spec{"", "exponential,seed=5", "lognormal,scv=2,seed=5", "bimodal,p=0.1,x=10,seed=5"} {
		t.Run(spec.String(), func(t *testing.T) {
			l := labtest.Serve(t, labsvc.Config{Workers: 64, SpinMS: 0, WaitMS: 40, CPUs: 1, Dist: spec})
			const n, callers = 1000, 32
			var wg sync.WaitGroup
			errs := make(chan error, callers)
			for c := range callers {
				wg.Go(func() {
					for i := c; i < n; i += callers {
						if r, err := call(l.Addr, 10*time.Second); err != nil || r.status != 200 {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("a request failed: %v", err)
			}
			st := stats(t, l.Control)
			p, _ := spec.Params()
			s := dist.NewSampler(p)
			var sum, sq float64
			for range n {
				f := s.Next()
				sum, sq = sum+f, sq+f*f
			}
			mean := sum / n
			want := (sq/n - mean*mean) / (mean * mean)
			t.Logf("%s: service_ms %+v; the draws' mean %.4f, SCV %.3f; the distribution's SCV %.3f", spec, st.ServiceMS, mean, want, p.SCV())
			if st.ServiceMS.N != n {
				t.Fatalf("service_ms over %d requests, want %d", st.ServiceMS.N, n)
			}
			if math.Abs(st.ServiceMS.Mean-40*mean)/(40*mean) > 0.05 {
				t.Errorf("mean service %.3f ms, want WAIT_MS=40 times the draws' mean, %.3f, within 5%%", st.ServiceMS.Mean, 40*mean)
			}
			if want == 0 {
				if st.ServiceMS.SCV > 0.01 {
					t.Errorf("a constant lab's SCV %.4f, want near 0", st.ServiceMS.SCV)
				}
				return
			}
			if math.Abs(st.ServiceMS.SCV-want)/want > 0.10 {
				t.Errorf("service SCV %.3f, want the draws' %.3f within 10%%", st.ServiceMS.SCV, want)
			}
		})
	}
}

// TestDistRepeatsEachWindow sends 60 requests one at a time to a bimodal
// lab (10 ms fast, 100 ms slow), resets it, and sends 60 more: each
// window's requests are slow or fast in the same order, as the seed says,
// and a change of DIST's seed changes the order.
func TestDistRepeatsEachWindow(t *testing.T) {
	l := labtest.Serve(t, labsvc.Config{Workers: 1, SpinMS: 0, WaitMS: 19, CPUs: 1, Dist: "bimodal,p=0.1,x=10,seed=3"})
	window := func() []bool {
		var slow []bool
		for range 60 {
			r, err := call(l.Addr, 5*time.Second)
			if err != nil || r.status != 200 {
				t.Fatalf("request: %v %+v", err, r)
			}
			slow = append(slow, r.serviceMS > 50)
		}
		if st := doJSON(t, "POST", l.Control+"/reset", "{}", nil); st != 200 {
			t.Fatalf("reset: status %d", st)
		}
		return slow
	}
	a, b := window(), window()
	if !equalBools(a, b) {
		t.Fatalf("two windows of one seed differ:\n%v\n%v", a, b)
	}
	if n := count(a); n == 0 || n > 20 {
		t.Errorf("%d slow requests of 60, want about 6", n)
	}
	if st := doJSON(t, "POST", l.Control+"/config", `{"dist": "bimodal,p=0.1,x=10,seed=4"}`, nil); st != 200 {
		t.Fatalf("changing DIST: status %d", st)
	}
	if c := window(); equalBools(a, c) {
		t.Errorf("seeds 3 and 4 gave the same order of slow requests: %v", c)
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func count(xs []bool) int {
	n := 0
	for _, x := range xs {
		if x {
			n++
		}
	}
	return n
}
