package classroom

import (
	"encoding/xml"
	"regexp"
	"strconv"
	"strings"
	"testing"

	qrcode "github.com/skip2/go-qrcode"
)

// TestNormalizeCode checks what learners may type for a code.
func TestNormalizeCode(t *testing.T) {
	cases := []struct {
		what, in, want string // plain-English description, typed, normalized ("" = refused)
	}{
		{"a code as shown", "K7PQ2M", "K7PQ2M"},
		{"lower case", "k7pq2m", "K7PQ2M"},
		{"spaces and a dash", " k7p-q2m ", "K7PQ2M"},
		{"too short", "K7PQ2", ""},
		{"too long", "K7PQ2MM", ""},
		{"a zero, which codes never contain", "K7PQ20", ""},
		{"the letter O", "K7PQ2O", ""},
		{"a one", "K7PQ21", ""},
		{"the letter I", "K7PQ2I", ""},
		{"the letter L", "K7PQ2L", ""},
		{"a non-ASCII letter", "K7PQ2É", ""},
		{"empty", "", ""},
	}
	for _, c := range cases {
		got, ok := NormalizeCode(c.in)
		if ok != (c.want != "") || got != c.want {
			t.Errorf("%s: NormalizeCode(%q) = %q, %v; want %q", c.what, c.in, got, ok, c.want)
		}
	}
}

// TestNewCode checks generated codes use only the alphabet and that every
// character of it turns up.
func TestNewCode(t *testing.T) {
	seen := map[rune]int{}
	for range 2000 {
		c := newCode()
		if n, ok := NormalizeCode(c); !ok || n != c {
			t.Fatalf("newCode() = %q, not a valid code", c)
		}
		for _, r := range c {
			seen[r]++
		}
	}
	for _, r := range CodeAlphabet {
		if seen[r] == 0 {
			t.Errorf("character %q never drawn in 12,000", r)
		}
	}
	if strings.ContainsAny(CodeAlphabet, "0O1IL") {
		t.Fatal("the alphabet has a look-alike")
	}
	if h := newHostToken(); len(h) < 43 {
		t.Fatalf("host token %q shorter than 256 bits", h)
	}
}

// TestQRSVG redraws the SVG's squares into a grid and compares it with the
// QR library's bitmap, module by module.
func TestQRSVG(t *testing.T) {
	link := "http://127.0.0.1:8080/join/K7PQ2M"
	svg, err := QRSVG(link)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Fatalf("not well-formed XML: %v", err)
	}
	q, err := qrcode.New(link, qrcode.Medium)
	if err != nil {
		t.Fatal(err)
	}
	want := q.Bitmap()
	n := len(want)
	if !strings.Contains(svg, `viewBox="0 0 `+strconv.Itoa(n)+" "+strconv.Itoa(n)+`"`) {
		t.Fatalf("viewBox is not %d modules: %.120s", n, svg)
	}
	got := make([][]bool, n)
	for i := range got {
		got[i] = make([]bool, n)
	}
	for _, m := range regexp.MustCompile(`M(\d+) (\d+)h(\d+)v1h-\d+z`).FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.Atoi(m[1])
		y, _ := strconv.Atoi(m[2])
		w, _ := strconv.Atoi(m[3])
		for i := range w {
			got[y][x+i] = true
		}
	}
	dark := 0
	for y := range n {
		for x := range n {
			if got[y][x] != want[y][x] {
				t.Fatalf("module (%d,%d) is %v in the SVG, %v in the code", x, y, got[y][x], want[y][x])
			}
			if got[y][x] {
				dark++
			}
		}
	}
	if dark == 0 {
		t.Fatal("no dark modules")
	}
}
