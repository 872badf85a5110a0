package model

import (
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update rewrites the golden SVG files: go test ./model/ -run Golden -update
var update = flag.Bool("update", false, "rewrite testdata/*.svg golden files")

// checkSVG parses s as XML and checks the accessibility skeleton: an <svg>
// root with role="img", a <title> and a <desc> it is labelled by.
func checkSVG(t *testing.T, s string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	var root *xml.StartElement
	seen := map[string]bool{}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == nil {
				root = &se
			}
			seen[se.Name.Local] = true
		}
	}
	if root == nil || root.Name.Local != "svg" {
		t.Fatal("root element is not <svg>")
	}
	attrs := map[string]string{}
	for _, a := range root.Attr {
		attrs[a.Name.Local] = a.Value
	}
	if attrs["role"] != "img" || attrs["aria-labelledby"] == "" || !seen["title"] || !seen["desc"] {
		t.Errorf("want role=img, aria-labelledby, <title> and <desc>; got %v, title %v, desc %v", attrs, seen["title"], seen["desc"])
	}
	if strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
		t.Error("SVG contains NaN or Inf")
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file; inspect, then rerun with -update if the change is intended\ngot:\n%s", path, got)
	}
}

func TestQueueCurveSVGGolden(t *testing.T) {
	cases := []struct {
		why, file                    string
		servers, serviceMS, arrivals float64
	}{
		{"the lab default, M/M/1 at 80% busy", "queue-curve-mm1.svg", 1, 20, 40},
		{"four servers past capacity: no current point, a note instead", "queue-curve-mm4-overloaded.svg", 4, 20, 250},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			q := QueueCurve(c.servers, c.serviceMS, c.arrivals)
			got := QueueCurveSVG(q, "qc")
			checkSVG(t, got)
			if again := QueueCurveSVG(q, "qc"); again != got {
				t.Error("output is not deterministic")
			}
			if q.Stable == strings.Contains(got, "no steady state") {
				t.Errorf("%s: stable=%v but the note is %v", c.why, q.Stable, !q.Stable)
			}
			golden(t, c.file, got)
		})
	}
}

func TestCeilingsSVGGolden(t *testing.T) {
	cases := []struct {
		why, file                     string
		workers, cpus, spinMS, waitMS float64
		binds                         string
	}{
		{"the lab default: the workers bind", "ceilings-default.svg", 1, 1, 2, 18, "tc-workers binds"},
		{"no spin: the processor bar says no limit", "ceilings-spin0.svg", 4, 1, 0, 18, "tc-workers binds"},
		{"sixteen workers: the processor binds", "ceilings-processor.svg", 16, 1, 2, 18, "tc-processor binds"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			got := CeilingsSVG(TwoCeilings(c.workers, c.cpus, c.spinMS, c.waitMS), "tc")
			checkSVG(t, got)
			if !strings.Contains(got, `class="`+c.binds+`"`) {
				t.Errorf("%s: no %q bar", c.why, c.binds)
			}
			golden(t, c.file, got)
		})
	}
}

func TestSVGEscapesID(t *testing.T) {
	// An id with markup in it must not break out of the attribute.
	got := QueueCurveSVG(QueueCurve(1, 20, 10), `x"><script>`)
	checkSVG(t, got)
	if strings.Contains(got, "<script>") {
		t.Error("id was not escaped")
	}
}

func TestQueueCurveSVGPinsFarPoint(t *testing.T) {
	// At 99.9% busy the p99 is far above the curve's range: the y axis must
	// not stretch to it (which would flatten the curve); the point is pinned
	// to the top edge and the axes stay those of any other load.
	q := QueueCurve(1, 20, 49.95)
	got := QueueCurveSVG(q, "qc")
	checkSVG(t, got)
	normal := QueueCurveSVG(QueueCurve(1, 20, 40), "qc")
	axisOf := func(s string) string {
		i := strings.Index(s, `<g class="qc-axes"`)
		j := strings.Index(s, `</g>`)
		return s[i:j]
	}
	if axisOf(got) != axisOf(normal) {
		t.Error("the y axis changed with the learner's load; it should depend only on the curve")
	}
}
