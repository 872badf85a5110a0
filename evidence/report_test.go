package evidence_test

import (
	"bytes"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"capacitylab/evidence"
)

// svgNamespace is the one URL the report may hold: the SVG namespace
// name on its inline plots, which names the vocabulary and is never
// fetched.
const svgNamespace = "http://www.w3.org/2000/svg"

// report is the knee sweep's report with a 250 ms budget.
func report(t *testing.T) (evidence.Analysis, string) {
	t.Helper()
	s := kneeSweep(t)
	d := s.dataset(t, s.rep.Records(), true)
	a := evidence.Analyze(d, evidence.Options{BudgetMS: 250})
	var b bytes.Buffer
	if err := evidence.WriteReport(&b, d, a); err != nil {
		t.Fatal(err)
	}
	if p := os.Getenv("EVIDENCE_REPORT"); p != "" {
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return a, b.String()
}

// The report is one HTML document that parses, refers to nothing outside
// itself (no URL, no src, no link, no script, no url() or @import in its
// style) and holds the analysis's figures.
func TestReportSelfContained(t *testing.T) {
	a, page := report(t)
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var svgs, figures int
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "link", "img", "iframe", "object", "embed", "base":
				t.Errorf("<%s> in a self-contained report", n.Data)
			case "svg":
				svgs++
			case "figure":
				figures++
			}
			for _, at := range n.Attr {
				switch at.Key {
				case "src", "href", "xlink:href", "srcset", "action", "formaction", "poster", "style":
					t.Errorf("<%s %s=%q>: a reference outside the file (or an inline style)", n.Data, at.Key, at.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if figures != 2 || svgs < 4 {
		t.Errorf("%d figures, %d svg elements: want the two charts drawn inline", figures, svgs)
	}
	rest := strings.ReplaceAll(page, `xmlns="`+svgNamespace+`"`, "")
	if m := regexp.MustCompile(`(?i)(https?:|//[a-z0-9.-]+\.[a-z]{2,}/|url\(|@import)`).FindString(rest); m != "" {
		i := strings.Index(rest, m)
		t.Errorf("the report refers outside itself: %q in %q", m, rest[max(0, i-80):min(len(rest), i+80)])
	}
	for _, want := range []string{
		"<title>Capacity evidence: records.csv</title>",
		"prefers-color-scheme: dark",
		"First saturation point", "window 6 (240/s) answered",
		"197.79 ok answers a second, in window 6 (240/s)",
		"checklist: 9 of 9 met",
		"✓ Met:", "Open loop: arrivals on a schedule",
		"Admission limit",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	// Every row's figures are in the rows table.
	for _, r := range a.Rows {
		for _, f := range []string{"<td>" + itoa(r.Sent) + "</td>", "<td>" + itoa(r.N) + "</td>",
			"<td>" + strconv.FormatFloat(r.OKPerSec, 'f', -1, 64) + "</td>", "<td>" + strconv.FormatFloat(r.P99MS, 'f', -1, 64) + "</td>"} {
			if !strings.Contains(page, f) {
				t.Errorf("window %d: the report lacks %s", r.Window+1, f)
			}
		}
	}
	if l := a.Limit; l == nil || !strings.Contains(page, "gives "+itoa(l.Limit)+" waiting for a 250 ms budget") {
		t.Errorf("the report lacks the limit %+v", a.Limit)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// An incomplete result's report says, in words, which items are not met
// and why, shows the warnings and the service's gauges, and says there
// is no limit without a budget.
func TestReportIncomplete(t *testing.T) {
	s := kneeSweep(t)
	d := s.dataset(t, s.rep.Records(), false)
	d.Format, d.Timing = evidence.VegetaCSV, evidence.FromSent
	d.Data = &evidence.ReportData{Gauges: []evidence.WindowGauges{{Window: 2, Readings: map[string]evidence.GaugeReading{
		"http_requests_in_flight": {Kind: "gauge", Mean: 2.5, Max: 7, N: 6}}}}}
	a := evidence.Analyze(d, evidence.Options{})
	var b bytes.Buffer
	if err := evidence.WriteReport(&b, d, a); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if _, err := html.Parse(strings.NewReader(page)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"vegeta (its results as CSV)",
		"checklist: 7 of 9 met",
		"✗ Not met:</span> <span class=\"item-title\">Open loop",
		"coordinated omission",
		"✗ Not met:</span> <span class=\"item-title\">Utilisation measured",
		"<th scope=\"col\">http_requests_in_flight</th>",
		"<td>2.5 (7)</td>",
		"No admission limit is derived: no latency budget was given",
		"the service&#39;s http_requests_in_flight read 2.5 on average",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

// A page's chart (Chart) is the report's two charts (Charts) in one
// figure: the same panels, and one table holding both tables' columns,
// a row a window; the ceiling and the budget are drawn as lines, the
// knee marked on both panels.
func TestReportChartsAndPageChart(t *testing.T) {
	a, _ := report(t)
	cs := evidence.Charts(a)
	c := evidence.Chart(a, "page-chart")
	if len(cs) != 2 || len(c.Panels) != 2 {
		t.Fatalf("%d report charts, a page chart of %d panels: want 2 and 2", len(cs), len(c.Panels))
	}
	for i, rc := range cs {
		if !reflect.DeepEqual(rc.Panels[0], c.Panels[i]) || rc.XMax != c.XMax {
			t.Errorf("the report's %s panel differs from the page's", rc.ID)
		}
		if len(rc.Table.Rows) != len(a.Rows) {
			t.Errorf("the report's %s table has %d rows for %d windows", rc.ID, len(rc.Table.Rows), len(a.Rows))
		}
	}
	if want := []string{"window", "offered /s", "ok /s", "p50 ms", "p95 ms", "p99 ms", "n"}; !reflect.DeepEqual(c.Table.Head, want) || len(c.Table.Rows) != len(a.Rows) {
		t.Errorf("the page chart's table: %q, %d rows; want %q, %d", c.Table.Head, len(c.Table.Rows), want, len(a.Rows))
	}
	for i, row := range c.Table.Rows {
		if got, want := []string{row[0], row[1], row[2]}, cs[0].Table.Rows[i]; !reflect.DeepEqual(got, want) {
			t.Errorf("window %d: ok /s cells %q, the report's %q", i+1, got, want)
		}
		if got, want := append([]string{row[0], row[1]}, row[3:]...), cs[1].Table.Rows[i]; !reflect.DeepEqual(got, want) {
			t.Errorf("window %d: latency cells %q, the report's %q", i+1, got, want)
		}
	}
	thr, lat := c.Panels[0], c.Panels[1]
	if len(thr.Regions) != 1 || thr.Regions[0].Y0 != a.Ceiling || len(lat.Regions) != 1 || lat.Regions[0].Y0 != a.BudgetMS {
		t.Errorf("regions %+v and %+v: want the ceiling %v and the budget %v", thr.Regions, lat.Regions, a.Ceiling, a.BudgetMS)
	}
	if knee := a.Rows[a.Knee].Offered; len(thr.Marks) != 1 || thr.Marks[0].X != knee || len(lat.Marks) != 1 || lat.Marks[0].X != knee {
		t.Errorf("marks %+v and %+v: want the knee at %v on both", thr.Marks, lat.Marks, knee)
	}
}
