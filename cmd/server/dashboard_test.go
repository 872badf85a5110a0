package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"capacitylab/labsvc"
)

// The files compose's metrics profile mounts (deploy/), read here beside
// compose_test.go because their truth is across the parts: the course
// server's /metrics is this package's, the lab's and the proxy's are the
// processes the compose services run, and this package's tests already
// start the first two (run, and this binary as a "lab-child") and can
// build the third.
const (
	promFile       = "../../deploy/prometheus/prometheus.yml"
	dashboardFile  = "../../deploy/grafana/dashboards/policies.json"
	datasourceFile = "../../deploy/grafana/provisioning/datasources/prometheus.yml"
	providerFile   = "../../deploy/grafana/provisioning/dashboards/capacitylab.yml"
)

// promConfig is the part of prometheus.yml these tests read.
type promConfig struct {
	Global struct {
		ScrapeInterval string `yaml:"scrape_interval"`
		ScrapeTimeout  string `yaml:"scrape_timeout"`
	} `yaml:"global"`
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		MetricsPath   string `yaml:"metrics_path"`
		Scheme        string `yaml:"scheme"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

// grafanaDashboard is the part of a dashboard's JSON these tests read.
type grafanaDashboard struct {
	UID    string       `json:"uid"`
	Title  string       `json:"title"`
	Panels []dashePanel `json:"panels"`
}

type dashePanel struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Datasource  struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []dashePanel `json:"panels"` // a row's panels, when it is folded
}

// exports is what one scrape target exports: each series name (a
// histogram's as name_bucket, name_sum and name_count) and the label sets
// of its series.
type exports map[string][]map[string]string

func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// composeParts maps each compose service to the program it runs: its
// entrypoint's binary (lab, proxy), "server" for the project's image
// without one (its own entrypoint), or another image's name.
func composeParts(c composeFile) map[string]string {
	parts := map[string]string{}
	for name, s := range c.Services {
		switch {
		case len(s.Entrypoint) > 0:
			parts[name] = path.Base(s.Entrypoint[0])
		case s.Image == c.Services["server"].Image:
			parts[name] = "server"
		default:
			parts[name] = s.Image
		}
	}
	return parts
}

// metricsPorts are the ports inside its container where a compose service
// of the project's image serves /metrics: the port of its entrypoint's
// --control (the lab's and the proxy's control API), or, with no
// entrypoint (the server, whose /metrics is beside its pages), the
// container side of its ports.
func metricsPorts(c composeFile, service string) []string {
	s := c.Services[service]
	var ports []string
	for i, a := range s.Entrypoint {
		if a == "--control" && i+1 < len(s.Entrypoint) {
			if _, port, err := net.SplitHostPort(s.Entrypoint[i+1]); err == nil {
				ports = append(ports, port)
			}
		}
	}
	if len(s.Entrypoint) == 0 {
		for _, p := range s.Ports {
			f := strings.Split(p, ":")
			ports = append(ports, strings.TrimSuffix(f[len(f)-1], "/tcp"))
		}
	}
	return ports
}

// scrapeProblems checks prometheus.yml's scrape configs against compose:
// every target a compose service and the port it serves /metrics on, every job named
// once and scraped at /metrics over http. It returns each job's part
// (server, lab, proxy).
func scrapeProblems(p promConfig, c composeFile) (map[string]string, []string) {
	var problems []string
	parts := composeParts(c)
	jobs := map[string]string{}
	for _, sc := range p.ScrapeConfigs {
		if _, dup := jobs[sc.JobName]; dup || sc.JobName == "" {
			problems = append(problems, fmt.Sprintf("job %q is empty or named twice", sc.JobName))
		}
		if (sc.MetricsPath != "" && sc.MetricsPath != "/metrics") || (sc.Scheme != "" && sc.Scheme != "http") {
			problems = append(problems, fmt.Sprintf("job %s scrapes %s://…%s: every part serves http …/metrics", sc.JobName, sc.Scheme, sc.MetricsPath))
		}
		var targets []string
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
		if len(targets) == 0 {
			problems = append(problems, fmt.Sprintf("job %s has no targets", sc.JobName))
		}
		for _, tg := range targets {
			host, port, err := net.SplitHostPort(tg)
			if err != nil {
				problems = append(problems, fmt.Sprintf("job %s: target %q is not host:port", sc.JobName, tg))
				continue
			}
			part, ok := parts[host]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("job %s: target %s names no compose service", sc.JobName, tg))
			case !slices.Contains(metricsPorts(c, host), port):
				problems = append(problems, fmt.Sprintf("job %s: target %s: compose's %s serves /metrics on %v, not %s", sc.JobName, tg, host, metricsPorts(c, host), port))
			case jobs[sc.JobName] != "" && jobs[sc.JobName] != part:
				problems = append(problems, fmt.Sprintf("job %s scrapes both %s and %s", sc.JobName, jobs[sc.JobName], part))
			default:
				jobs[sc.JobName] = part
			}
		}
		if _, ok := jobs[sc.JobName]; !ok {
			jobs[sc.JobName] = ""
		}
	}
	return jobs, problems
}

// dashboardProblems checks a dashboard's JSON against what each job
// exports (byJob, from the real parts' /metrics): every panel titled and
// described; every query a PromQL expression whose every selector names
// a job (the lab and the proxy export the same admit_* names, so a query
// without one would mix them) that exists, a metric that job exports (a
// histogram only as _bucket, _sum or _count), labels its series have and,
// for =, a value one of them has.
func dashboardProblems(raw []byte, datasource string, byJob map[string]exports) []string {
	var d grafanaDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return []string{"the dashboard is not JSON: " + err.Error()}
	}
	var problems []string
	if d.UID == "" || d.Title == "" {
		problems = append(problems, fmt.Sprintf("the dashboard has uid %q and title %q: it needs both", d.UID, d.Title))
	}
	queries := 0
	var walk func([]dashePanel)
	walk = func(panels []dashePanel) {
		for _, p := range panels {
			if p.Type == "row" {
				if p.Title == "" {
					problems = append(problems, "a row has no title")
				}
				walk(p.Panels)
				continue
			}
			where := fmt.Sprintf("panel %q", p.Title)
			if p.Title == "" || strings.TrimSpace(p.Description) == "" {
				problems = append(problems, where+": a panel needs a title and a description a learner can read")
			}
			if p.Datasource.UID != datasource {
				problems = append(problems, fmt.Sprintf("%s: data source %q, want the provisioned %q", where, p.Datasource.UID, datasource))
			}
			if len(p.Targets) == 0 {
				problems = append(problems, where+": no queries")
			}
			for _, tg := range p.Targets {
				queries++
				problems = append(problems, queryProblems(fmt.Sprintf("%s query %s", where, tg.RefID), tg.Expr, byJob)...)
			}
		}
	}
	walk(d.Panels)
	if queries == 0 {
		problems = append(problems, "the dashboard has no queries")
	}
	return problems
}

func queryProblems(where, expr string, byJob map[string]exports) []string {
	sels, err := promqlSelectors(expr)
	if err != nil {
		return []string{fmt.Sprintf("%s %q: %v", where, expr, err)}
	}
	if len(sels) == 0 {
		return []string{fmt.Sprintf("%s %q names no metric", where, expr)}
	}
	var problems []string
	for _, s := range sels {
		at := fmt.Sprintf("%s: %s", where, selectorString(s))
		job := ""
		for _, m := range s.matchers {
			if m.name == "job" && m.op == "=" {
				job = m.value
			}
		}
		ex, ok := byJob[job]
		switch {
		case job == "":
			problems = append(problems, at+": names no job (job=\"…\"): the lab and the proxy export the same admit_* names")
			continue
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: job %q is not scraped (prometheus.yml's jobs: %v)", at, job, sortedKeys(byJob)))
			continue
		}
		series, ok := ex[s.metric]
		if !ok {
			var also []string
			for j, e := range byJob {
				if _, ok := e[s.metric]; ok {
					also = append(also, j)
				}
			}
			slices.Sort(also)
			problems = append(problems, fmt.Sprintf("%s: job %s exports no %s (exported by: %v)", at, job, s.metric, also))
			continue
		}
		for _, m := range s.matchers {
			if m.name == "job" || m.name == "instance" || m.name == "__name__" {
				continue // Prometheus's own, and the name
			}
			var values []string
			for _, ls := range series {
				if v, ok := ls[m.name]; ok {
					values = append(values, v)
				}
			}
			switch {
			case len(values) == 0:
				problems = append(problems, fmt.Sprintf("%s: %s has no label %s", at, s.metric, m.name))
			case m.op == "=" && !slices.Contains(values, m.value):
				problems = append(problems, fmt.Sprintf("%s: %s's %s is one of %v, never %q", at, s.metric, m.name, values, m.value))
			}
		}
	}
	return problems
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// scrape reads url's Prometheus text exposition.
func scrape(t *testing.T, c *http.Client, url string) exports {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	ex := exports{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			ls := map[string]string{}
			for _, l := range m.GetLabel() {
				ls[l.GetName()] = l.GetValue()
			}
			switch f.GetType().String() {
			case "HISTOGRAM":
				for _, b := range m.GetHistogram().GetBucket() {
					le := map[string]string{"le": strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)}
					for k, v := range ls {
						le[k] = v
					}
					ex[name+"_bucket"] = append(ex[name+"_bucket"], le)
				}
				ex[name+"_sum"] = append(ex[name+"_sum"], ls)
				ex[name+"_count"] = append(ex[name+"_count"], ls)
			case "SUMMARY":
				ex[name] = append(ex[name], ls)
				ex[name+"_sum"] = append(ex[name+"_sum"], ls)
				ex[name+"_count"] = append(ex[name+"_count"], ls)
			default:
				ex[name] = append(ex[name], ls)
			}
		}
	}
	return ex
}

// startProxyProcess builds cmd/proxy and runs it in front of upstream on
// kernel-chosen loopback ports until the test ends, and returns its
// request and control URLs.
func startProxyProcess(t *testing.T, upstream string) (string, string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "proxy")
	if out, err := exec.Command("go", "build", "-o", bin, "capacitylab/cmd/proxy").CombinedOutput(); err != nil {
		t.Fatalf("building cmd/proxy: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--control", "127.0.0.1:0", "--upstream", upstream, "--workers", "2")
	cmd.Env = []string{} // its settings are the flags above, whatever this environment holds
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the proxy did not stop cleanly on SIGINT: %v\n%s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("the proxy had not stopped 10 s after SIGINT\n%s", stderr.String())
		}
	})
	first := regexp.MustCompile(`^proxy: listening on (http://127\.0\.0\.1:\d+) \(requests\) and (http://127\.0\.0\.1:\d+) \(control\)`)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stdout.String(), "\n"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy printed no line in 10 s; stderr:\n%s", stderr.String())
		}
	}
	m := first.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("the proxy's first line %q does not match %v; stderr:\n%s", stdout.String(), first, stderr.String())
	}
	return m[1], m[2]
}

// TestDashboardQueriesWhatThePartsExport reads compose's metrics profile
// (prometheus.yml, Grafana's data source and dashboard provider, the
// dashboard) and checks it against the real parts: the course server (run),
// a lab child and the proxy (built, in front of the lab), each sent a few
// requests and then scraped. It fails naming any scrape target that is no
// compose service and port, and any query's metric (or label) the job it
// names does not export; the table at the end shows those failures happen.
func TestDashboardQueriesWhatThePartsExport(t *testing.T) {
	var c composeFile
	readYAML(t, "../../compose.yaml", &c)
	var prom promConfig
	readYAML(t, promFile, &prom)
	jobs, problems := scrapeProblems(prom, c)
	for _, p := range problems {
		t.Error("prometheus.yml: " + p)
	}
	for _, want := range []string{"server", "lab", "proxy"} {
		if !slices.Contains(slices.Collect(maps.Values(jobs)), want) {
			t.Errorf("prometheus.yml scrapes no %s (its jobs: %v)", want, jobs)
		}
	}
	for _, d := range []string{prom.Global.ScrapeInterval, prom.Global.ScrapeTimeout} {
		if v, err := model.ParseDuration(d); err != nil || time.Duration(v) > 2*time.Second || time.Duration(v) <= 0 {
			t.Errorf("prometheus.yml's scrape interval and timeout are %q and %q: want each at most 2s (the experiments are about seconds)",
				prom.Global.ScrapeInterval, prom.Global.ScrapeTimeout)
			break
		}
	}

	// Compose runs Prometheus and Grafana behind the metrics profile with
	// these files mounted where they read them.
	mounts := func(service string) map[string]string {
		m := map[string]string{}
		for _, v := range c.Services[service].Volumes {
			f := strings.Split(v, ":")
			if len(f) >= 2 {
				m[path.Clean(f[0])] = f[1]
			}
		}
		return m
	}
	for _, s := range []string{"prometheus", "grafana"} {
		if p := c.Services[s].Profiles; !slices.Equal(p, []string{"metrics"}) || c.Services[s].Image == "" || strings.HasSuffix(c.Services[s].Image, ":latest") || !strings.Contains(c.Services[s].Image, ":") {
			t.Errorf("compose's %s: profiles %v, image %q; want [metrics] (plain `docker compose up` unchanged) and an image pinned by tag", s, p, c.Services[s].Image)
		}
	}
	if got := mounts("prometheus")["deploy/prometheus/prometheus.yml"]; got != "/etc/prometheus/prometheus.yml" {
		t.Errorf("compose's prometheus mounts deploy/prometheus/prometheus.yml at %q, want /etc/prometheus/prometheus.yml", got)
	}
	gm := mounts("grafana")
	if gm["deploy/grafana/provisioning"] != "/etc/grafana/provisioning" {
		t.Errorf("compose's grafana mounts deploy/grafana/provisioning at %q, want /etc/grafana/provisioning", gm["deploy/grafana/provisioning"])
	}
	g := c.Services["grafana"]
	if g.Environment["GF_AUTH_ANONYMOUS_ENABLED"] != "true" || g.Environment["GF_AUTH_ANONYMOUS_ORG_ROLE"] != "Viewer" || !slices.Contains(g.Ports, "127.0.0.1:3000:3000") {
		t.Errorf("compose's grafana: environment %v, ports %v; want anonymous viewers on 127.0.0.1:3000", g.Environment, g.Ports)
	}
	if !slices.Contains(c.Services["prometheus"].Ports, "127.0.0.1:9090:9090") {
		t.Errorf("compose's prometheus: ports %v, want 127.0.0.1:9090:9090 (its own pages, where the README sends learners)", c.Services["prometheus"].Ports)
	}

	var ds struct {
		Datasources []struct {
			UID, Type, URL string
			JSONData       map[string]any `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, datasourceFile, &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL != "http://prometheus:9090" || ds.Datasources[0].UID == "" {
		t.Fatalf("%s: %+v; want one prometheus data source with a uid at http://prometheus:9090", datasourceFile, ds.Datasources)
	}
	if ds.Datasources[0].JSONData["timeInterval"] != prom.Global.ScrapeInterval {
		t.Errorf("the data source's timeInterval is %v, want the scrape interval %s ($__rate_interval is four of it)", ds.Datasources[0].JSONData["timeInterval"], prom.Global.ScrapeInterval)
	}
	var prov struct {
		Providers []struct {
			Type    string
			Options struct{ Path string }
		} `yaml:"providers"`
	}
	readYAML(t, providerFile, &prov)
	if len(prov.Providers) != 1 || prov.Providers[0].Type != "file" || prov.Providers[0].Options.Path != gm["deploy/grafana/dashboards"] || prov.Providers[0].Options.Path == "" {
		t.Errorf("%s: %+v; want one file provider reading where compose mounts deploy/grafana/dashboards (%q)", providerFile, prov.Providers, gm["deploy/grafana/dashboards"])
	}
	if home := g.Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]; home != "" && home != path.Join(gm["deploy/grafana/dashboards"], path.Base(dashboardFile)) {
		t.Errorf("grafana's home dashboard %s is not the mounted %s", home, path.Base(dashboardFile))
	}

	// The real parts, each sent a few requests, then scraped.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	srv := start(t, nil, "--data", t.TempDir())
	for _, p := range []string{"/", "/lessons/littles-law", "/healthz", "/nowhere"} {
		get(t, client, srv.url+p)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	lab, err := labsvc.StartChild(t.Context(), labsvc.ChildCommand{Path: self, Args: []string{"lab-child"}}, labsvc.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lab.Stop() })
	proxyURL, proxyControl := startProxyProcess(t, lab.Target())
	for range 5 {
		if code, body := get(t, client, proxyURL+"/"); code != http.StatusOK {
			t.Fatalf("GET through the proxy: %d %s", code, body)
		}
	}
	byPart := map[string]exports{
		"server": scrape(t, client, srv.url+"/metrics"),
		"lab":    scrape(t, client, lab.Control()+"/metrics"),
		"proxy":  scrape(t, client, proxyControl+"/metrics"),
	}
	byJob := map[string]exports{}
	for job, part := range jobs {
		if ex, ok := byPart[part]; ok {
			byJob[job] = ex
		} else if part != "" {
			t.Errorf("prometheus.yml's job %s scrapes %s, which this test does not start", job, part)
		}
	}

	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range dashboardProblems(raw, ds.Datasources[0].UID, byJob) {
		t.Error(dashboardFile + ": " + p)
	}

	// The same checks fail on a dashboard or a scrape config that is
	// wrong. Each case is one panel whose only query is expr, its jobs
	// named as the parts (as prometheus.yml names them today).
	for _, tc := range []struct {
		name, expr, want string // want: part of the one problem; "" for none
	}{
		{"a gauge the lab exports", `admit_limit{job="lab"}`, ""},
		{"a histogram's buckets", `histogram_quantile(0.99, sum by (le) (rate(admit_queue_seconds_bucket{job="proxy"}[$__rate_interval])))`, ""},
		{"a labelled counter, its label's value", `rate(proxy_upstream_total{job="proxy", outcome="served"}[1m])`, ""},
		{"a metric nobody exports", `admit_limt{job="lab"}`, "job lab exports no admit_limt (exported by: [])"},
		{"the lab's metric asked of the proxy", `lab_queued{job="proxy"}`, "job proxy exports no lab_queued (exported by: [lab])"},
		{"a histogram by its bare name", `admit_queue_seconds{job="lab"}`, "exports no admit_queue_seconds"},
		{"_count of a counter", `lab_done_total_count{job="lab"}`, "exports no lab_done_total_count"},
		{"no job: lab and proxy mixed", `admit_inflight`, "names no job"},
		{"a job nobody scrapes", `admit_inflight{job="door"}`, `job "door" is not scraped (prometheus.yml's jobs: [lab proxy server])`},
		{"a label the metric lacks", `lab_bad_total{job="lab", outcome="gone"}`, "lab_bad_total has no label outcome"},
		{"a label value it never has", `proxy_upstream_total{job="proxy", outcome="refused"}`, `never "refused"`},
		{"a misspelt function", `rat(lab_done_total{job="lab"}[1m])`, "rat( is no PromQL function"},
	} {
		panel := map[string]any{"type": "timeseries", "title": tc.name, "description": "a case", "datasource": map[string]string{"uid": ds.Datasources[0].UID},
			"targets": []map[string]string{{"refId": "A", "expr": tc.expr}}}
		raw, err := json.Marshal(map[string]any{"uid": "u", "title": "t", "panels": []any{panel}})
		if err != nil {
			t.Fatal(err)
		}
		got := dashboardProblems(raw, ds.Datasources[0].UID, byPart)
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: %q: %q, want no problem", tc.name, tc.expr, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s: %q: %q, want one problem containing %q", tc.name, tc.expr, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name, job, target, want string
	}{
		{"the lab's control port", "lab", "service:8001", ""},
		{"the lab's request port, not its control API", "lab", "service:8000", "compose's service serves /metrics on [8001], not 8000"},
		{"the server's port", "server", "server:8080", ""},
		{"no such service", "lab", "lab:8001", "names no compose service"},
		{"no port", "proxy", "proxy", "is not host:port"},
	} {
		var p promConfig
		if err := yaml.Unmarshal(fmt.Appendf(nil, "scrape_configs:\n  - job_name: %s\n    static_configs:\n      - targets: [%q]\n", tc.job, tc.target), &p); err != nil {
			t.Fatal(err)
		}
		_, got := scrapeProblems(p, c)
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: %q, want no problem", tc.name, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s: %q, want one problem containing %q", tc.name, got, tc.want)
		}
	}
}
