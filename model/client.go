package model

import "math"

// limited is the lab's queue behind a client with a fixed pool of k
// workers (Lab.ClientWorkers): c exponential first-come, first-served
// servers with mean service s ms, then a fixed d ms outside the queue
// (Lab.Queue's extraMS; 0 when the workers are the servers), the client
// holding each request through both, so at most k are inside and a Poisson
// arrival that finds k inside is not sent (client busy). With d = 0 it is
// M/M/c/K with K = k (an Erlang loss system M/M/k/k when k ≤ c).
//
// With d > 0 it is a closed network of k customers: the idle client
// workers (a single server of rate λ: arrivals come at λ while one is
// free), the servers and an infinite-server delay of d. Its steady state is
// product form, so the chance of n at the servers and m in the delay is
//
//	p(n, m) ∝ g(n) · b^m ÷ m!,  g(n) = a^n ÷ ∏_{i≤n} min(i, c),  n + m ≤ k
//
// with a = λ·s and b = λ·d in erlangs, whatever the delay's distribution.
type limited struct {
	c, k int
	s, d float64
}

// limitedState is the limited queue at one offered rate.
type limitedState struct {
	accepted float64 // share of arrivals sent: 1 − P_K
	blocked  float64 // P_K: share that find all k client workers busy
	// ahead[j] is the chance an accepted arrival finds j + c − 1 at the
	// servers (j ≥ 1), so it waits for j departures before its service;
	// ahead[0] is the chance it finds a server free.
	ahead []float64
	// after[j] is ahead[j+1] + ahead[j+2] + …, summed from the end.
	after []float64
}

// logAdd is ln(e^x + e^y) without overflow.
func logAdd(x, y float64) float64 {
	if x < y {
		x, y = y, x
	}
	if math.IsInf(y, -1) {
		return x
	}
	return x + math.Log1p(math.Exp(y-x))
}

// state solves the product form at offered rate lambda (per second, ≥ 0)
// in logarithms, so that any k and load stay finite.
func (q limited) state(lambda float64) limitedState {
	a, b := lambda*q.s/1000, lambda*q.d/1000
	lg := make([]float64, q.k+1) // ln g(n)
	lp := make([]float64, q.k+1) // ln b^m ÷ m!
	le := make([]float64, q.k+1) // ln Σ_{i≤m} b^i ÷ i!
	for n := 1; n <= q.k; n++ {
		lg[n] = lg[n-1] + math.Log(a) - math.Log(float64(min(n, q.c)))
		lp[n] = lp[n-1] + math.Log(b) - math.Log(float64(n))
		le[n] = logAdd(le[n-1], lp[n])
	}
	zk, zk1, full := math.Inf(-1), math.Inf(-1), math.Inf(-1)
	for n := 0; n <= q.k; n++ {
		zk = logAdd(zk, lg[n]+le[q.k-n])
		full = logAdd(full, lg[n]+lp[q.k-n])
		if n < q.k {
			zk1 = logAdd(zk1, lg[n]+le[q.k-1-n])
		}
	}
	st := limitedState{accepted: math.Exp(zk1 - zk), blocked: math.Exp(full - zk)}
	st.ahead = make([]float64, max(1, q.k-q.c+1))
	for n := 0; n < q.k; n++ {
		st.ahead[max(0, n-q.c+1)] += math.Exp(lg[n] + le[q.k-1-n] - zk1)
	}
	st.after = make([]float64, len(st.ahead))
	for j := len(st.ahead) - 2; j >= 0; j-- {
		st.after[j] = st.after[j+1] + st.ahead[j+1]
	}
	return st
}

// tail is P(T > t) for an accepted request's time at the servers, T (ms),
// without the fixed d. One that finds j waiting-or-served ahead beyond the
// free servers waits for j departures of c busy servers (rate c/s) and is
// then served (rate 1/s); counting the events of a Poisson process of rate
// c/s, of which each after its service starts is its own with chance 1/c,
//
//	P(T > t | j) = Σ_i Poisson(y; i) · r^{(i−j)+},  y = c·t ÷ s,  r = (c − 1) ÷ c,
//
// a sum of positive terms (for c = 1 it is the Erlang(j+1) tail). Over the
// mixture the weight of term i is after[i] + B(i), B(i) = r·B(i−1) + ahead[i].
// The Poisson chances are kept scaled, so a large y does not underflow
// e^{−y}; the sum stops past the mode and the last weight once what is left
// is below 1e-16 of it.
func (q limited) tail(st limitedState, t float64) float64 {
	if t <= 0 {
		return 1
	}
	c := float64(q.c)
	y, r := c*t/q.s, (c-1)/c
	last := len(st.ahead) - 1
	v, scale, sum, bsum := 1.0, -y, 0.0, 0.0 // Poisson(y; i) = v·e^scale
	for i := 0; ; i++ {
		if i > 0 {
			v *= y / float64(i)
			if v > 1e250 {
				v, sum, scale = v*1e-250, sum*1e-250, scale+250*math.Ln10
			}
		}
		bsum *= r
		h := bsum
		if i <= last {
			bsum += st.ahead[i]
			h = bsum + st.after[i]
		}
		sum += v * h
		if i >= last && float64(i+2) > y {
			rest := v * y / float64(i+1) / (1 - y/float64(i+2)) * h
			if rest <= 1e-16*sum || i > 1<<24 {
				break
			}
		}
	}
	return sum * math.Exp(scale)
}

// limitedPoint is the limited queue at one offered rate (per second):
// throughput sent and answered, client busy, and the p50 and p99 of an
// accepted request's response time including d.
func (q limited) point(lambda float64) (ok, busy, p50, p99 float64) {
	st := q.state(lambda)
	f := func(t float64) float64 { return q.tail(st, t) }
	return lambda * st.accepted, lambda * st.blocked, invert(f, q.s, 0.5) + q.d, invert(f, q.s, 0.01) + q.d
}
