package dist

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParseSpecCanonical(t *testing.T) {
	for in, want := range map[string]Spec{
		"":                            "",
		"constant":                    "",
		" Constant , seed=3":          "constant,seed=3",
		"exponential":                 "exponential",
		"lognormal, scv = 4":          "lognormal,scv=4",
		"bimodal,x=10,p=0.10":         "bimodal,p=0.1,x=10",
		"bimodal,p=0.1,x=10,seed=7":   "bimodal,p=0.1,x=10,seed=7",
		"exponential,seed=2147483647": "exponential,seed=2147483647",
		"lognormal,seed=0,scv=0.25":   "lognormal,scv=0.25,seed=0",
	} {
		got, err := ParseSpec(in)
		if err != nil || got != want {
			t.Errorf("ParseSpec(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestParseSpecRefusesNamingWhatIsAllowed(t *testing.T) {
	for in, want := range map[string]string{
		"uniform":                  "want constant, exponential, lognormal",
		"lognormal":                "lognormal with scv (0.01 to 25)",
		"lognormal,scv=30":         "lognormal's scv from 0.01 to 25",
		"bimodal,p=0.6,x=10":       "bimodal's p from 0.001 to 0.5",
		"bimodal,p=0.1":            "bimodal with p (0.001 to 0.5), x (1 to 100)",
		"bimodal,p=0.1,x=10,p=0.2": "p is given twice",
		"exponential,scv=2":        "exponential's parameters: seed",
		"exponential,seed=-1":      "seed a whole number from 0 to 2147483647",
		"exponential,seed":         "as name=value",
		"lognormal,scv=NaN":        "lognormal's scv from 0.01 to 25",
	} {
		_, err := ParseSpec(in)
		var se *SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), strings.TrimSpace(in)) {
			t.Errorf("ParseSpec(%q) = %v; want an error naming the value and saying %q", in, err, want)
		}
	}
}

// TestSamplerMoments draws a million factors of each distribution: their
// mean is 1 and their SCV the one set, within the sampling error of a
// million draws (a lognormal with SCV 4 has a heavy tail: its sample SCV
// varies by a few percent).
func TestSamplerMoments(t *testing.T) {
	for _, tc := range []struct {
		spec   Spec
		scv    float64
		scvTol float64
	}{
		{"", 0, 0},
		{"exponential,seed=3", 1, 0.02},
		{"lognormal,scv=0.25", 0.25, 0.02},
		{"lognormal,scv=4", 4, 0.15},
		{"bimodal,p=0.1,x=10", 2.0194, 0.02},
	} {
		p, ok := tc.spec.Params()
		if !ok {
			t.Fatalf("%q does not parse", tc.spec)
		}
		if got := p.SCV(); math.Abs(got-tc.scv) > 1e-3 {
			t.Errorf("%s: SCV() = %.4f, want %.4f", tc.spec, got, tc.scv)
		}
		s := NewSampler(p)
		const n = 1_000_000
		var sum, sq float64
		for range n {
			f := s.Next()
			sum += f
			sq += f * f
		}
		mean := sum / n
		scv := (sq/n - mean*mean) / (mean * mean)
		if math.Abs(mean-1) > 0.01 {
			t.Errorf("%s: mean factor %.4f, want 1 within 1%%", tc.spec, mean)
		}
		if math.Abs(scv-tc.scv) > tc.scvTol*math.Max(tc.scv, 1e-9) && !(tc.scv == 0 && scv == 0) {
			t.Errorf("%s: sample SCV %.4f, want %.4f within %.0f%%", tc.spec, scv, tc.scv, tc.scvTol*100)
		}
	}
}

func TestSamplerRepeatsItsSeed(t *testing.T) {
	p, _ := Spec("lognormal,scv=2,seed=9").Params()
	q, _ := Spec("lognormal,scv=2,seed=10").Params()
	a, b, c := NewSampler(p), NewSampler(p), NewSampler(q)
	same := 0
	for i := range 1000 {
		x, y, z := a.Next(), b.Next(), c.Next()
		if x != y {
			t.Fatalf("draw %d: %v and %v from one seed", i, x, y)
		}
		if x == z {
			same++
		}
	}
	if same > 0 {
		t.Errorf("seeds 9 and 10 drew %d equal factors of 1000", same)
	}
}

func TestBimodalFactors(t *testing.T) {
	p, _ := Spec("bimodal,p=0.1,x=10").Params()
	s := NewSampler(p)
	slow := 0
	for range 100000 {
		switch f := s.Next(); {
		case math.Abs(f-10/1.9) < 1e-12:
			slow++
		case math.Abs(f-1/1.9) < 1e-12:
		default:
			t.Fatalf("factor %v is neither the fast 1/1.9 nor the slow 10/1.9", f)
		}
	}
	if share := float64(slow) / 100000; math.Abs(share-0.1) > 0.005 {
		t.Errorf("slow share %.4f, want 0.1", share)
	}
	if got := p.Words(); got != "bimodal: 10% of requests 10 times as long as the rest (SCV 2.02)" {
		t.Errorf("Words() = %q", got)
	}
}
