package model

import (
	"math"
	"testing"
)

// erlangB is Erlang's loss formula for n servers offered a erlangs, by
// its own recursion (as queue.go's erlangC starts).
func erlangB(n int, a float64) float64 {
	b := 1.0
	for k := 1; k <= n; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return b
}

// near reports whether got is within rel of want (relative), or both NaN.
func near(got, want, rel float64) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got)
	}
	return math.Abs(got-want) <= rel*math.Abs(want)
}

// poissonUpTo is e^{−x} Σ_{j<k} x^j ÷ j!, the chance an Erlang(k, 1) sum
// is above x, summed directly (for the small k and x of the tests).
func poissonUpTo(k int, x float64) float64 {
	s, term := 0.0, math.Exp(-x)
	for j := 0; j < k; j++ {
		s += term
		term *= x / float64(j+1)
	}
	return s
}

// A client of no more workers than the servers is Erlang's loss system:
// the blocking probability is Erlang B of k servers, whatever the queue,
// and no request waits, so the response time is the service time alone
// (exponential: p50 = S ln 2, p99 = S ln 100).
func TestClientLossSystemIsErlangB(t *testing.T) {
	tests := []struct {
		name     string
		c, k     int
		s, rate  float64 // ms, per second
		erlangsK float64 // offered to the k places
	}{
		// Ten lab workers of 100 ms, a client of 5 at 50 a second: 5 erlangs on 5 places.
		{"fewer client workers than servers", 10, 5, 100, 50, 5},
		// As many as the servers, at 90% of their capacity.
		{"as many as the servers", 7, 7, 100, 63, 6.3},
		// One place, heavily offered: a ÷ (1 + a).
		{"one place", 1, 1, 20, 200, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, busy, p50, p99 := limited{c: tt.c, k: tt.k, s: tt.s}.point(tt.rate)
			want := erlangB(tt.k, tt.erlangsK)
			if !near(busy/tt.rate, want, 1e-12) || !near(ok/tt.rate, 1-want, 1e-12) {
				t.Errorf("blocked %v, sent %v of the offered; Erlang B(%d, %v) = %v", busy/tt.rate, ok/tt.rate, tt.k, tt.erlangsK, want)
			}
			if !near(p50, tt.s*math.Ln2, 1e-11) || !near(p99, tt.s*math.Log(100), 1e-11) {
				t.Errorf("p50 %v p99 %v, want the service alone: %v and %v", p50, p99, tt.s*math.Ln2, tt.s*math.Log(100))
			}
		})
	}
}

// M/M/1/K in closed form: P_K = (1 − ρ)ρ^K ÷ (1 − ρ^{K+1}) (1 ÷ (K + 1)
// at ρ = 1); an accepted arrival finds n < K with chance ∝ ρ^n and
// answers after n + 1 services, an Erlang(n + 1) time, whose tail is summed
// here term by term and inverted by bisection independently of the model.
func TestClientMM1K(t *testing.T) {
	const s = 10.0
	for _, tt := range []struct {
		k   int
		rho float64
	}{{1, 0.5}, {4, 0.5}, {4, 1}, {10, 0.9}, {10, 2}, {50, 1.2}} {
		q := limited{c: 1, k: tt.k, s: s}
		rate := tt.rho * 1000 / s
		ok, busy, p50, p99 := q.point(rate)
		want := 1 / float64(tt.k+1)
		if tt.rho != 1 {
			want = (1 - tt.rho) * math.Pow(tt.rho, float64(tt.k)) / (1 - math.Pow(tt.rho, float64(tt.k+1)))
		}
		if !near(busy, rate*want, 1e-11) || !near(ok, rate*(1-want), 1e-11) {
			t.Errorf("K=%d ρ=%v: blocked %v a second, sent %v; want P_K = %v", tt.k, tt.rho, busy, ok, want)
		}
		wsum := 0.0
		for n := 0; n < tt.k; n++ {
			wsum += math.Pow(tt.rho, float64(n))
		}
		tail := func(t float64) float64 {
			v := 0.0
			for n := 0; n < tt.k; n++ {
				v += math.Pow(tt.rho, float64(n)) / wsum * poissonUpTo(n+1, t/s)
			}
			return v
		}
		pct := func(p float64) float64 {
			lo, hi := 0.0, 1e6
			for i := 0; i < 200; i++ {
				if mid := (lo + hi) / 2; tail(mid) > p {
					lo = mid
				} else {
					hi = mid
				}
			}
			return lo
		}
		if w50, w99 := pct(0.5), pct(0.01); !near(p50, w50, 1e-9) || !near(p99, w99, 1e-9) {
			t.Errorf("K=%d ρ=%v: p50 %v p99 %v, the Erlang mixture gives %v and %v", tt.k, tt.rho, p50, p99, w50, w99)
		}
	}
}

// With several servers the tail of one request that finds j beyond the
// free servers is also Q(j, cμt) + e^{−μt} (c ÷ (c−1))^j P(j, (c−1)μt)
// (its wait, an Erlang(j, cμ), convolved with its service): a second
// route to the same numbers, fine for the small j and t used here.
func TestClientTailTwoRoutes(t *testing.T) {
	q := limited{c: 3, k: 9, s: 30}
	st := q.state(120) // 3.6 erlangs on 3 servers
	mu, c := 1/q.s, float64(q.c)
	for _, tm := range []float64{0.5, 5, 30, 90, 200, 400} {
		want := 0.0
		for j, w := range st.ahead {
			g := poissonUpTo(j, c*mu*tm) + math.Exp(-mu*tm)*math.Pow(c/(c-1), float64(j))*(1-poissonUpTo(j, (c-1)*mu*tm))
			want += w * g
		}
		if got := q.tail(st, tm); !near(got, want, 1e-9) {
			t.Errorf("P(T > %v ms) = %v, the convolution gives %v", tm, got, want)
		}
	}
	total := 0.0
	for _, w := range st.ahead {
		total += w
	}
	if !near(total, 1, 1e-12) || !near(st.accepted+st.blocked, 1, 1e-12) {
		t.Errorf("an accepted arrival's chances sum to %v, sent + blocked to %v", total, st.accepted+st.blocked)
	}
}

// As the client's workers grow past what ever arrives, the model becomes
// today's M/M/c below capacity: nothing is blocked and the percentiles are
// QueueCurve's.
func TestClientManyWorkersIsMMc(t *testing.T) {
	for _, rho := range []float64{0.3, 0.7, 0.9} {
		c, s := 4.0, 20.0
		rate := rho * c * 1000 / s
		_, busy, p50, p99 := limited{c: int(c), k: 2000, s: s}.point(rate)
		qc := QueueCurve(c, s, rate)
		if busy > 1e-12*rate || !near(p50, float64(qc.At.P50ResponseMS), 1e-9) || !near(p99, float64(qc.At.P99ResponseMS), 1e-9) {
			t.Errorf("ρ=%v: blocked %v/s, p50 %v p99 %v; M/M/c says p50 %v p99 %v", rho, busy, p50, p99, qc.At.P50ResponseMS, qc.At.P99ResponseMS)
		}
	}
}

// With time outside the queue (the processors bind, every request then
// waits d more) the client's workers hold requests through it too. Two
// checks of the product form: servers enough for every client worker make
// the whole lab an infinite-server system, so blocking is Erlang B of k
// for (s + d) erlangs per request a second; and for one server the chance
// of blocking and what an accepted arrival finds match the sums over
// every state (n at the server, m in the delay) done directly.
func TestClientWithDelay(t *testing.T) {
	q := limited{c: 16, k: 8, s: 2, d: 18}
	rate := 300.0
	if _, busy, _, _ := q.point(rate); !near(busy/rate, erlangB(8, rate*0.020), 1e-11) {
		t.Errorf("blocked %v, want Erlang B(8, %v) = %v", busy/rate, rate*0.020, erlangB(8, rate*0.020))
	}

	q = limited{c: 1, k: 5, s: 2, d: 18}
	rate = 400
	a, b := rate*q.s/1000, rate*q.d/1000
	var z, full float64
	found := make([]float64, q.k)
	for n := 0; n <= q.k; n++ {
		for m := 0; n+m <= q.k; m++ {
			p := math.Pow(a, float64(n)) * math.Pow(b, float64(m)) / math.Gamma(float64(m+1))
			z += p
			if n+m == q.k {
				full += p
			} else {
				found[n] += p
			}
		}
	}
	st := q.state(rate)
	if !near(st.blocked, full/z, 1e-12) {
		t.Errorf("blocked %v, the sum over states gives %v", st.blocked, full/z)
	}
	for n := range found {
		if want := found[n] / (z - full); !near(st.ahead[n], want, 1e-12) {
			t.Errorf("an accepted arrival finds %d at the server with chance %v, the sum gives %v", n, st.ahead[n], want)
		}
	}
	if _, _, p50, _ := q.point(rate); !(p50 > q.d) {
		t.Errorf("p50 %v should include the %v ms outside the queue", p50, q.d)
	}
}

// The lab's model with a client limit: every arrival is sent or counted
// busy, what is sent stays under both ceilings and the client's own, the
// percentiles are finite at any rate (a client of k workers never lets a
// queue grow without end), and a lab with no client limit is unchanged.
func TestLabAtWithClientWorkers(t *testing.T) {
	labs := []Lab{
		{Workers: 2, CPUs: 1, WaitMS: 20, ClientWorkers: 6},             // workers bind, K > c
		{Workers: 10, CPUs: 1, WaitMS: 100, ClientWorkers: 5},           // a loss system
		{Workers: 64, CPUs: 1, SpinMS: 2, WaitMS: 18, ClientWorkers: 8}, // the processor binds
	}
	for _, l := range labs {
		ceiling := math.Min(float64(l.Ceilings().Ceiling), l.ClientCeiling())
		for _, rate := range []float64{0, 10, 100, 500, 5000} {
			p := l.At(rate)
			if !near(p.OKPerSec+p.ClientBusyPerSec, rate, 1e-12) && rate > 0 {
				t.Errorf("%+v at %v: ok %v + busy %v is not what was offered", l, rate, p.OKPerSec, p.ClientBusyPerSec)
			}
			if p.OKPerSec > ceiling*(1+1e-12) || math.IsNaN(p.P50MS) || math.IsNaN(p.P99MS) || p.P99MS < p.P50MS {
				t.Errorf("%+v at %v: %+v; want ok under %v and finite percentiles", l, rate, p, ceiling)
			}
		}
		pts := l.Curve(300)
		if len(pts) != CurveSteps+1 || pts[0].Offered != 0 || pts[CurveSteps].Offered != 300 {
			t.Errorf("%+v: curve of %d points from %v, want %d from 0 to 300", l, len(pts), pts[0].Offered, CurveSteps+1)
		}
		for _, pt := range pts {
			if at := l.At(pt.Offered); at != pt {
				t.Errorf("curve %+v, At %+v", pt, at)
			}
		}
	}
	// ClientWorkers 0 is today's model.
	l := Lab{Workers: 2, CPUs: 1, WaitMS: 20}
	if p := l.At(150); p.OKPerSec != 100 || !math.IsNaN(p.P99MS) || p.ClientBusyPerSec != 0 {
		t.Errorf("no client limit, overloaded: %+v, want the ceiling and no steady state", p)
	}
}
