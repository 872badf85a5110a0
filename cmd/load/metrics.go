package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"capacitylab/evidence"
)

// Reading the service's own metrics (--metrics, --gauge, --counter).
const (
	// metricsEvery is how often the service's /metrics is read while a
	// window runs.
	metricsEvery = time.Second
	// metricsWait bounds one read of /metrics.
	metricsWait = 2 * time.Second
	// maxMetricsBody bounds how much of /metrics is read.
	maxMetricsBody = 16 << 20
)

// metricSpec is one metric to read: a name, and the labels a series must
// carry to count (none: every series of the name, summed).
type metricSpec struct {
	key     string // as given, e.g. admit_inflight{class="normal"}
	name    string
	labels  map[string]string
	counter bool // --counter: its increase a second; else a gauge
}

// parseMetricSpec reads a --gauge or --counter NAME as Prometheus's text
// format writes a series: a name with an optional label set.
func parseMetricSpec(flagName, s string, counter bool) (metricSpec, error) {
	bad := usagef(`--%s %q is not a metric name with an optional label set as /metrics shows it: want e.g. admit_inflight or admit_inflight{class="normal"}`, flagName, s)
	if strings.TrimSpace(s) != s || s == "" || strings.ContainsAny(s, "\n#") {
		return metricSpec{}, bad
	}
	// The series as a line of the text format, read by the same parser
	// that reads /metrics.
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(s + " 0\n"))
	if err != nil || len(fams) != 1 {
		return metricSpec{}, bad
	}
	spec := metricSpec{key: s, labels: map[string]string{}, counter: counter}
	for name, f := range fams {
		spec.name = name
		for _, lp := range f.GetMetric()[0].GetLabel() {
			spec.labels[lp.GetName()] = lp.GetValue()
		}
	}
	return spec, nil
}

// metricsSource reads the named metrics from a service's Prometheus text
// endpoint.
type metricsSource struct {
	url    string
	client *http.Client
	specs  []metricSpec
}

func newMetricsSource(url string, specs []metricSpec) metricsSource {
	return metricsSource{url: url, client: &http.Client{Timeout: metricsWait}, specs: specs}
}

// read returns each spec's value now, in specs' order: the sum of the
// series of its name that carry its labels. A metric that /metrics does
// not show is an error naming it.
func (m metricsSource) read(ctx context.Context) ([]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s answered %s", m.url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, maxMetricsBody))
	if err != nil {
		return nil, fmt.Errorf("%s is not Prometheus's text format: %w", m.url, err)
	}
	vals := make([]float64, len(m.specs))
	var missing []string
	for i, s := range m.specs {
		found := false
		for _, mt := range fams[s.name].GetMetric() {
			if !hasLabels(mt.GetLabel(), s.labels) {
				continue
			}
			switch {
			case mt.Gauge != nil:
				vals[i] += mt.GetGauge().GetValue()
			case mt.Counter != nil:
				vals[i] += mt.GetCounter().GetValue()
			case mt.Untyped != nil:
				vals[i] += mt.GetUntyped().GetValue()
			default:
				return nil, fmt.Errorf("%s is a summary or histogram: want a gauge or a counter (or name one of its series, e.g. %s_count)", s.key, s.name)
			}
			found = true
		}
		if !found {
			missing = append(missing, s.key)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s does not show %s", m.url, strings.Join(missing, ", "))
	}
	return vals, nil
}

// hasLabels reports whether a series' labels include every one of want.
func hasLabels[L interface {
	GetName() string
	GetValue() string
}](have []L, want map[string]string) bool {
	n := 0
	for _, lp := range have {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// gaugeWatch reads the service's metrics once every metricsEvery while a
// window runs, in a goroutine of its own (run), so the reads never share
// the generator's send path, and folds each window's readings into
// evidence.GaugeReading values as the window ends (end).
type gaugeWatch struct {
	src  metricsSource
	kick chan struct{}

	mu     sync.Mutex
	window int // the window being read, -1 between windows
	reads  []gaugeRead
	failed int // reads of the window that failed
}

type gaugeRead struct {
	at   time.Time
	vals []float64
}

func newGaugeWatch(src metricsSource) *gaugeWatch {
	return &gaugeWatch{src: src, kick: make(chan struct{}, 1), window: -1}
}

// run reads while a window is being read, once at its beginning and every
// metricsEvery after, until ctx is done.
func (g *gaugeWatch) run(ctx context.Context) {
	t := time.NewTicker(metricsEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.kick:
			t.Reset(metricsEvery)
		case <-t.C:
		}
		g.mu.Lock()
		w := g.window
		g.mu.Unlock()
		if w < 0 {
			continue
		}
		vals, err := g.src.read(ctx)
		at := time.Now()
		g.mu.Lock()
		if g.window == w {
			if err != nil {
				g.failed++
			} else {
				g.reads = append(g.reads, gaugeRead{at: at, vals: vals})
			}
		}
		g.mu.Unlock()
	}
}

// begin says window w is running (its first progress): its readings start
// now.
func (g *gaugeWatch) begin(w int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.window == w {
		return
	}
	g.window, g.reads, g.failed = w, nil, 0
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// end takes the window's last reading now, as it has ended, and returns
// its readings: a gauge's mean and most, a counter's increase a second
// over the span from the first reading to the last (Max its fastest
// increase between two readings). A counter that went down was reset: its
// value after counts as the increase, as Prometheus's rate counts it.
func (g *gaugeWatch) end(ctx context.Context, w int) map[string]evidence.GaugeReading {
	vals, err := g.src.read(ctx)
	at := time.Now()
	g.mu.Lock()
	reads := g.reads
	if g.window != w {
		reads = nil // the window sent no progress: only this reading
	}
	g.window, g.reads = -1, nil
	g.mu.Unlock()
	if err == nil {
		reads = append(reads, gaugeRead{at: at, vals: vals})
	}
	out := make(map[string]evidence.GaugeReading, len(g.src.specs))
	for i, s := range g.src.specs {
		r := evidence.GaugeReading{Kind: "gauge", N: len(reads)}
		if s.counter {
			r.Kind = "counter"
			var inc float64
			for k := 1; k < len(reads); k++ {
				d := reads[k].vals[i] - reads[k-1].vals[i]
				if d < 0 {
					d = reads[k].vals[i]
				}
				inc += d
				if dt := reads[k].at.Sub(reads[k-1].at).Seconds(); dt > 0 {
					r.Max = max(r.Max, d/dt)
				}
			}
			if len(reads) > 1 {
				if span := reads[len(reads)-1].at.Sub(reads[0].at).Seconds(); span > 0 {
					r.Mean = inc / span
				}
			}
		} else if len(reads) > 0 {
			r.Max = reads[0].vals[i]
			for _, rd := range reads {
				r.Mean += rd.vals[i]
				r.Max = max(r.Max, rd.vals[i])
			}
			r.Mean /= float64(len(reads))
		}
		out[s.key] = r
	}
	return out
}

// gaugeText is a window's readings on one line, in specs' order, for the
// table:
//
//	metrics: admit_inflight mean 3.2 max 4 (n 3); process_cpu_seconds_total 0.41/s (max 0.52/s, n 3)
func gaugeText(specs []metricSpec, rs map[string]evidence.GaugeReading) string {
	parts := make([]string, 0, len(specs))
	for _, s := range specs {
		r := rs[s.key]
		switch {
		case r.Kind == "counter" && r.N < 2:
			parts = append(parts, fmt.Sprintf("%s ? (n %d: two readings needed)", s.key, r.N))
		case r.Kind == "counter":
			parts = append(parts, fmt.Sprintf("%s %s/s (max %s/s, n %d)", s.key, num(r.Mean), num(r.Max), r.N))
		case r.N == 0:
			parts = append(parts, s.key+" ? (n 0)")
		default:
			parts = append(parts, fmt.Sprintf("%s mean %s max %s (n %d)", s.key, num(r.Mean), num(r.Max), r.N))
		}
	}
	return "metrics: " + strings.Join(parts, "; ")
}

// num prints a reading to four significant digits.
func num(v float64) string { return strconv.FormatFloat(sig4(v), 'f', -1, 64) }
