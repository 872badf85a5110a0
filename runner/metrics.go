package runner

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the runner's Prometheus series; nil when Config.Registerer
// is nil.
type metrics struct {
	runs    *prometheus.CounterVec // by outcome
	dropped prometheus.Counter
	wait    prometheus.Histogram
	deaths  prometheus.Counter // lab children that died during a run

	loadDeaths prometheus.Counter // load children that died during a run
}

// newMetrics registers the runner's series on reg:
//
//	capacitylab_runs_queued                 gauge: runs waiting
//	capacitylab_runs_running                gauge: runs running
//	capacitylab_runs_total{outcome}         counter: runs ended, by done, failed, cancelled, interrupted
//	capacitylab_run_watchers                gauge: live event subscriptions (websocket watchers)
//	capacitylab_run_watchers_dropped_total  counter: subscriptions dropped for falling behind
//	capacitylab_run_queue_wait_seconds      histogram: from queued to started
//	capacitylab_lab_child_deaths_total      counter: lab children that died during a run
//	capacitylab_load_child_deaths_total     counter: load children that died during a run
func newMetrics(reg prometheus.Registerer, r *Runner) *metrics {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "capacitylab_runs_total", Help: "Sweep runs ended, by outcome.",
		}, []string{"outcome"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "capacitylab_run_watchers_dropped_total", Help: "Run event subscriptions dropped because the watcher fell behind.",
		}),
		deaths: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "capacitylab_lab_child_deaths_total", Help: "Lab child processes that exited unexpectedly during a run (each is logged).",
		}),
		loadDeaths: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "capacitylab_load_child_deaths_total", Help: "Load generator child processes that exited unexpectedly during a run (each is logged).",
		}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "capacitylab_run_queue_wait_seconds", Help: "Time sweep runs waited in the queue before starting.",
			Buckets: []float64{0.1, 1, 5, 15, 30, 60, 120, 300, 600, 1200},
		}),
	}
	count := func(f func() int) func() float64 {
		return func() float64 {
			r.mu.Lock()
			defer r.mu.Unlock()
			return float64(f())
		}
	}
	reg.MustRegister(m.runs, m.dropped, m.wait, m.deaths, m.loadDeaths,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "capacitylab_runs_queued", Help: "Sweep runs waiting in the queue."},
			count(func() int { return len(r.queue) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "capacitylab_runs_running", Help: "Sweep runs running."},
			count(func() int { return len(r.running) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "capacitylab_run_watchers", Help: "Live subscriptions to run events (websocket watchers)."},
			count(func() int {
				n := 0
				for _, ru := range r.byID {
					n += ru.log.subscribers()
				}
				return n
			})),
	)
	for _, o := range []Kind{KindDone, KindFailed, KindCancelled, KindInterrupted} {
		m.runs.WithLabelValues(string(o))
	}
	return m
}
