package model

import "math"

// Shape of the queue curve: CurveLast+1 points at utilisation
// i ÷ CurveSteps for i = 0 … CurveLast, that is 0, 0.01, … 0.95.
const (
	CurveSteps = 100
	CurveLast  = 95
)

// QueuePoint is the M/M/c model at one offered load. Times are ms.
type QueuePoint struct {
	Arrivals       Num `json:"arrivals"`    // offered load, requests per second
	Utilisation    Num `json:"utilisation"` // ρ = λ·S ÷ c
	ProbWait       Num `json:"prob_wait"`   // Erlang C: chance an arrival finds every server busy
	MeanInSystem   Num `json:"mean_in_system"`
	MeanQueue      Num `json:"mean_queue"`
	MeanWaitMS     Num `json:"mean_wait_ms"`
	MeanResponseMS Num `json:"mean_response_ms"`
	P50ResponseMS  Num `json:"p50_response_ms"`
	P99ResponseMS  Num `json:"p99_response_ms"`
}

// Queue is the M/M/c queue (M/M/1 when c = 1) at the learner's offered
// load, and the curve of the same servers over offered load.
type Queue struct {
	Servers   Num `json:"servers"`
	ServiceMS Num `json:"service_ms"`
	Arrivals  Num `json:"arrivals"`
	Capacity  Num `json:"capacity"` // c × 1000 ÷ S requests per second
	// Stable is false when utilisation is 1 or more: the queue then grows
	// without limit, At has NaN (null) for every figure but arrivals and
	// utilisation, and Message says so.
	Stable bool         `json:"stable"`
	At     QueuePoint   `json:"at"`
	Knee   QueuePoint   `json:"knee"`  // where throughput ÷ mean response (Kleinrock's power) peaks
	At70   QueuePoint   `json:"at_70"` // utilisation 0.7
	At90   QueuePoint   `json:"at_90"` // utilisation 0.9
	Curve  []QueuePoint `json:"curve"`
	// Separate is the same load split at random among the same servers,
	// each with a queue of its own: each is an M/M/1 queue at the same
	// utilisation, offered arrivals ÷ servers. Its figures are for the
	// whole load (mean_in_system and mean_queue summed over the queues);
	// with one server it equals At. SeparateCurve is that over offered
	// load, point for point with Curve.
	Separate      QueuePoint   `json:"separate"`
	SeparateCurve []QueuePoint `json:"separate_curve"`
	Message       string       `json:"message,omitempty"`
	Sentence      string       `json:"sentence"`
}

// mmc holds the fixed part of an M/M/c queue: c servers, mean service S ms.
type mmc struct {
	c int
	s float64
}

// erlangC is the probability of waiting for offered load a (Erlangs),
// through the Erlang B recursion B(k) = a·B(k−1) ÷ (k + a·B(k−1)), which
// stays finite for large c, then C = B ÷ (1 − ρ(1 − B)).
func (q mmc) erlangC(a float64) float64 {
	b := 1.0
	for k := 1; k <= q.c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	rho := a / float64(q.c)
	return b / (1 - rho*(1-b))
}

// meanWait is the mean wait in queue, ms, at utilisation rho < 1: C ÷ θ
// with θ = c·(1 − ρ) ÷ S.
func (q mmc) meanWait(rho float64) float64 {
	c := float64(q.c)
	theta := c * (1 - rho) / q.s
	return q.erlangC(rho*c) / theta
}

// meanResponse is the mean time in system, ms, at utilisation rho < 1.
func (q mmc) meanResponse(rho float64) float64 {
	return q.meanWait(rho) + q.s
}

// tail is P(T > t) for the response time T (ms) of a first-come,
// first-served M/M/c queue: with probability 1 − C no wait, then service
// Exp(μ); with probability C a wait Exp(θ), θ = cμ − λ, then service.
func tail(cw, mu, theta, t float64) float64 {
	es := math.Exp(-mu * t)
	d := theta - mu
	var h float64
	if math.Abs(d*t) < 1 {
		g := t
		if d != 0 {
			g = -math.Expm1(-d*t) / d
		}
		h = es * (1 + mu*g)
	} else {
		h = (theta*es - mu*math.Exp(-theta*t)) / d
	}
	return (1-cw)*es + cw*h
}

// percentile returns the time t (ms) with P(T > t) = p for the M/M/c
// response time: invert of tail.
func percentile(cw, mu, theta, p float64) float64 {
	return invert(func(t float64) float64 { return tail(cw, mu, theta, t) }, 1/mu, p)
}

// invert returns the time t (ms) with tail(t) = p for a decreasing tail,
// by doubling an upper bound from start and then bisecting (at most 100
// steps) until the bracket is within 1e-13 of its top.
func invert(tail func(float64) float64, start, p float64) float64 {
	lo, hi := 0.0, start
	for i := 0; i < 200 && tail(hi) > p; i++ {
		lo, hi = hi, hi*2
	}
	for i := 0; i < 100 && hi-lo > 1e-13*hi; i++ {
		mid := (lo + hi) / 2
		if tail(mid) > p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// point evaluates the model at utilisation rho; rho ≥ 1 gives NaN figures.
func (q mmc) point(rho float64) QueuePoint {
	c := float64(q.c)
	capacity := c * 1000 / q.s
	p := QueuePoint{Arrivals: Num(rho * capacity), Utilisation: Num(rho)}
	if !(rho < 1) {
		nan := Num(math.NaN())
		p.ProbWait, p.MeanInSystem, p.MeanQueue, p.MeanWaitMS, p.MeanResponseMS, p.P50ResponseMS, p.P99ResponseMS = nan, nan, nan, nan, nan, nan, nan
		return p
	}
	a := rho * c
	cw := q.erlangC(a)
	mu := 1 / q.s
	theta := c * (1 - rho) / q.s
	lambda := a / q.s // per ms
	wait := cw / theta
	p.ProbWait = Num(cw)
	p.MeanWaitMS = Num(wait)
	p.MeanResponseMS = Num(wait + q.s)
	p.MeanQueue = Num(lambda * wait)
	p.MeanInSystem = Num(lambda * (wait + q.s))
	p.P50ResponseMS = Num(percentile(cw, mu, theta, 0.5))
	p.P99ResponseMS = Num(percentile(cw, mu, theta, 0.01))
	return p
}

// separate evaluates c separate M/M/1 queues, each offered a random 1/c
// of the load, at utilisation rho: a request's figures are one queue's,
// the counts inside are summed over the c queues.
func (q mmc) separate(rho float64) QueuePoint {
	p := mmc{c: 1, s: q.s}.point(rho)
	c := Num(q.c)
	p.Arrivals *= c
	p.MeanInSystem *= c
	p.MeanQueue *= c
	return p
}

// knee finds the utilisation where throughput ÷ mean response peaks, by 100
// golden-section steps on [0, 0.999]. For M/M/1 it is exactly 0.5.
func (q mmc) knee() float64 {
	power := func(rho float64) float64 { return rho / q.meanResponse(rho) }
	gr := (math.Sqrt(5) - 1) / 2
	a, b := 0.0, 0.999
	x1, x2 := b-gr*(b-a), a+gr*(b-a)
	f1, f2 := power(x1), power(x2)
	for i := 0; i < 100; i++ {
		if f1 < f2 {
			a, x1, f1 = x1, x2, f2
			x2 = a + gr*(b-a)
			f2 = power(x2)
		} else {
			b, x2, f2 = x2, x1, f1
			x1 = b - gr*(b-a)
			f1 = power(x1)
		}
	}
	return (a + b) / 2
}

// QueueCurve computes the M/M/c model for servers (a whole number ≥ 1),
// mean service time serviceMS (> 0) and offered load arrivals per second.
// Inputs are validated by the caller.
func QueueCurve(servers, serviceMS, arrivals float64) Queue {
	q := mmc{c: int(servers), s: serviceMS}
	capacity := servers * 1000 / serviceMS
	rho := arrivals * serviceMS / (1000 * servers)
	r := Queue{Servers: Num(servers), ServiceMS: Num(serviceMS), Arrivals: Num(arrivals), Capacity: Num(capacity)}
	r.At = q.point(rho)
	r.At.Arrivals = Num(arrivals)
	r.Stable = rho < 1
	r.Knee = q.point(q.knee())
	r.At70 = q.point(0.7)
	r.At90 = q.point(0.9)
	r.Separate = q.separate(rho)
	r.Separate.Arrivals = Num(arrivals)
	r.Curve = make([]QueuePoint, 0, CurveLast+1)
	r.SeparateCurve = make([]QueuePoint, 0, CurveLast+1)
	for i := 0; i <= CurveLast; i++ {
		r.Curve = append(r.Curve, q.point(float64(i)/CurveSteps))
		r.SeparateCurve = append(r.SeparateCurve, q.separate(float64(i)/CurveSteps))
	}
	c, s, lam := Format(servers), Format(serviceMS), Format(arrivals)
	servs := c + " " + plural(c, "server", "servers")
	perSecond := lam + " " + plural(lam, "request", "requests") + " a second"
	if !r.Stable {
		r.Message = "At " + perSecond + " the offered load is " + Format(rho*100) + "% of what " + servs + " of " + s +
			" ms can serve (" + Format(capacity) + " a second): the queue grows without limit, so there is no steady state to report."
		r.Sentence = r.Message
		return r
	}
	l := Format(float64(r.At.MeanInSystem))
	r.Sentence = "At " + perSecond + ", " + servs + " taking " + s + " ms each " + plural(c, "is", "are") + " " +
		Format(rho*100) + "% busy: on average " + l + " " + plural(l, "request is", "requests are") + " inside, each waits " +
		Format(float64(r.At.MeanWaitMS)) + " ms and spends " + Format(float64(r.At.MeanResponseMS)) +
		" ms in all; 1 in 100 takes longer than " + Format(float64(r.At.P99ResponseMS)) + " ms."
	if servers > 1 {
		r.Sentence += " Given a queue each and a random share of the arrivals, the same " + servs +
			" would be as busy, but a request would wait " + Format(float64(r.Separate.MeanWaitMS)) + " ms on average and 1 in 100 would take longer than " +
			Format(float64(r.Separate.P99ResponseMS)) + " ms."
	}
	return r
}
