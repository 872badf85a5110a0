package model

import "math"

// Lab is the lab service's knobs as the models see them (labsvc.Config
// without the admission limit, which the models leave out), and the
// client in front of it.
type Lab struct {
	Workers, CPUs, SpinMS, WaitMS float64
	// ClientWorkers is the client's fixed pool of workers (a whole number;
	// loadrun.Open.ClientWorkers): an arrival that finds every one busy is
	// not sent. 0 is a client with no limit, the models' default.
	ClientWorkers float64
}

// LabPoint is what the models say the lab does at one offered rate.
// With no client limit: throughput from the two ceilings (min(offered,
// ceiling)) and latency from the M/M/c queue of Lab.Queue; the latencies
// are NaN where the queue has no steady state (offered at or above its
// capacity) or a request does no work. With ClientWorkers: throughput,
// client busy and latency from the same queue behind the client's workers
// (M/M/c/K; see the package doc), which has a steady state at any rate.
type LabPoint struct {
	Offered, OKPerSec, P50MS, P99MS float64
	ClientBusyPerSec                float64 // arrivals a second the client does not send (0 with no limit)
}

// Ceilings is the lab's two-ceilings model.
func (l Lab) Ceilings() Ceilings { return TwoCeilings(l.Workers, l.CPUs, l.SpinMS, l.WaitMS) }

// Queue says which M/M/c queue models the lab. When the processors bind
// (cpus ÷ spin below workers ÷ (spin + wait)) the servers are the CPUs with
// the spin as service time, and every request then also waits WAIT_MS
// outside the queue (extraMS); otherwise the servers are the workers, each
// holding a request for spin + wait. ok is false when a request does no
// work, so there is no queue.
func (l Lab) Queue() (servers, serviceMS, extraMS float64, ok bool) {
	servers, serviceMS = l.Workers, l.SpinMS+l.WaitMS
	if l.Ceilings().Binds == BindsProcessor {
		servers, serviceMS, extraMS = l.CPUs, l.SpinMS, l.WaitMS
	}
	return servers, serviceMS, extraMS, serviceMS > 0 && servers >= 1
}

// limited is the queue of Lab.Queue behind the client's workers, if the
// client has a limit and there is a queue.
func (l Lab) limited() (limited, bool) {
	servers, service, extra, ok := l.Queue()
	k := int(l.ClientWorkers)
	return limited{c: int(servers), k: k, s: service, d: extra}, ok && k >= 1
}

// ClientCeiling is the most a client of ClientWorkers workers can send a
// second if no request ever waited: ClientWorkers × 1000 ÷ (spin + wait);
// +Inf with no limit or no work per request.
func (l Lab) ClientCeiling() float64 {
	if l.ClientWorkers < 1 || l.SpinMS+l.WaitMS <= 0 {
		return math.Inf(1)
	}
	return math.Floor(l.ClientWorkers) * 1000 / (l.SpinMS + l.WaitMS)
}

// At applies the models to one offered rate.
func (l Lab) At(offered float64) LabPoint {
	if q, ok := l.limited(); ok && offered >= 0 {
		return limitedAt(q, offered)
	}
	p := LabPoint{Offered: offered, OKPerSec: math.Min(offered, float64(l.Ceilings().Ceiling)), P50MS: math.NaN(), P99MS: math.NaN()}
	servers, service, extra, ok := l.Queue()
	if !ok || offered <= 0 {
		return p
	}
	qc := QueueCurve(servers, service, offered)
	if !qc.Stable {
		return p
	}
	p.P50MS, p.P99MS = finite(float64(qc.At.P50ResponseMS)+extra), finite(float64(qc.At.P99ResponseMS)+extra)
	return p
}

// limitedAt is the client-limited model at one offered rate.
func limitedAt(q limited, offered float64) LabPoint {
	p := LabPoint{Offered: offered}
	p.OKPerSec, p.ClientBusyPerSec, p.P50MS, p.P99MS = q.point(offered)
	return p
}

// Curve is the latency model from no load to 95% of the queue's capacity
// (QueueCurve's own points, which are exact), up to offered rate upTo;
// none when there is no queue. With ClientWorkers, whose model has a
// steady state at any rate, it is CurveSteps + 1 points evenly from 0 to
// upTo.
func (l Lab) Curve(upTo float64) []LabPoint {
	if q, ok := l.limited(); ok {
		out := make([]LabPoint, 0, CurveSteps+1)
		for i := 0; i <= CurveSteps; i++ {
			out = append(out, limitedAt(q, math.Max(0, upTo)*float64(i)/CurveSteps))
		}
		return out
	}
	servers, service, extra, ok := l.Queue()
	if !ok {
		return nil
	}
	ceiling := float64(l.Ceilings().Ceiling)
	var out []LabPoint
	for _, pt := range QueueCurve(servers, service, 0).Curve {
		x := float64(pt.Arrivals)
		if x > upTo {
			break
		}
		out = append(out, LabPoint{Offered: x, OKPerSec: math.Min(x, ceiling),
			P50MS: finite(float64(pt.P50ResponseMS) + extra), P99MS: finite(float64(pt.P99ResponseMS) + extra)})
	}
	return out
}

// finite is v, or NaN when v is infinite.
func finite(v float64) float64 {
	if math.IsInf(v, 0) {
		return math.NaN()
	}
	return v
}
