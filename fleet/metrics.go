package fleet

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scrapeTimeout bounds the one query a scrape of a web replica's /metrics
// makes for the shared queue.
const scrapeTimeout = 2 * time.Second

// depthCollector exports the shared queue on a web replica's /metrics,
// read from the store at each scrape (one statement, store.QueueDepth):
//
//	capacitylab_runs_queued   gauge: runs waiting in the shared queue (every replica's)
//	capacitylab_runs_running  gauge: runs running on the runners
//	capacitylab_runners       gauge: runner processes alive (heartbeat within LostAfter)
//	capacitylab_runner_slots  gauge: runs those runners run at once
//
// The first two have the names and meaning of the in-process runner's
// gauges (package runner), so a dashboard reads either role the same;
// every web replica reports the same shared queue, so combine them across
// replicas with max, not sum. A scrape while the database cannot be
// reached leaves the four out, rather than reporting zeros or failing the
// whole scrape (the replica's HTTP metrics matter most then).
type depthCollector struct {
	q                                *Queue
	queued, running, runners, slotsD *prometheus.Desc
}

func newDepthCollector(q *Queue) *depthCollector {
	return &depthCollector{q: q,
		queued:  prometheus.NewDesc("capacitylab_runs_queued", "Sweep runs waiting in the queue (on a web replica: the shared queue, every replica's runs).", nil, nil),
		running: prometheus.NewDesc("capacitylab_runs_running", "Sweep runs running (on a web replica: on every runner).", nil, nil),
		runners: prometheus.NewDesc("capacitylab_runners", "Runner processes whose heartbeat is recent (--role runner).", nil, nil),
		slotsD:  prometheus.NewDesc("capacitylab_runner_slots", "Runs the live runners run at once, summed (their --runner-slots).", nil, nil),
	}
}

func (c *depthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.queued
	ch <- c.running
	ch <- c.runners
	ch <- c.slotsD
}

func (c *depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	d, err := c.q.st.QueueDepth(ctx, c.q.cfg.LostAfter)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(d.Queued))
	ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, float64(d.Running))
	ch <- prometheus.MustNewConstMetric(c.runners, prometheus.GaugeValue, float64(d.Runners))
	ch <- prometheus.MustNewConstMetric(c.slotsD, prometheus.GaugeValue, float64(d.Slots))
}
