package model

import "math"

// Lab is the lab service's knobs as the models see them (labsvc.Config
// without the admission limit, which the models leave out).
type Lab struct {
	Workers, CPUs, SpinMS, WaitMS float64
}

// LabPoint is what the models say the lab does at one offered rate:
// throughput from the two ceilings (min(offered, ceiling)) and latency from
// the M/M/c queue of Lab.Queue. The latencies are NaN where the queue has
// no steady state (offered at or above its capacity) or a request does no
// work.
type LabPoint struct {
	Offered, OKPerSec, P50MS, P99MS float64
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

// At applies the models to one offered rate.
func (l Lab) At(offered float64) LabPoint {
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

// Curve is the latency model from no load to 95% of the queue's capacity
// (QueueCurve's own points, which are exact), up to offered rate upTo;
// none when there is no queue.
func (l Lab) Curve(upTo float64) []LabPoint {
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
