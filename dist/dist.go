// Package dist is the lab's service-time distributions: the DIST knob.
//
// A request's service demand is SPIN_MS and WAIT_MS times a factor drawn
// for it, whose mean is 1, so DIST changes how the demand varies and never
// its mean. DIST is one of these, parameters after commas (no spaces
// needed, as POLICY):
//
//	constant                 every factor 1: the lab as it always was (the default)
//	exponential              exponential factors: squared coefficient of variation (SCV) 1
//	lognormal,scv=4          lognormal factors with the SCV given (0.01 to 25)
//	bimodal,p=0.1,x=10       a share p (0.001 to 0.5) of requests x (1 to 100) times as long as the rest
//
// and any of them with seed=N (0 to 2147483647, default 1): the seed of
// the source the factors are drawn from, so that a run repeats. A
// bimodal's fast factor is 1 ÷ (1 − p + p·x) and its slow one x times
// that; with p=0.1, x=10 they are 0.526 and 5.26, and its SCV is 2.02.
// A draw above MaxFactor is taken as MaxFactor (for a lognormal with a
// large SCV, one draw in millions or fewer).
package dist

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// The distributions, by the name DIST gives them.
const (
	Constant    = "constant"
	Exponential = "exponential"
	Lognormal   = "lognormal"
	Bimodal     = "bimodal"
)

// MaxFactor is the largest factor a draw gives: a request takes at most
// MaxFactor times the mean demand.
const MaxFactor = 1000

// Allowed says what a DIST value may be, as the errors say it.
const Allowed = "constant, exponential, lognormal,scv=S (S 0.01 to 25) or bimodal,p=P,x=X (P 0.001 to 0.5, X 1 to 100), each with seed=N (0 to 2147483647) after a comma if wanted"

// Spec is a distribution as DIST spells it. ParseSpec returns it
// canonical: the name, then the parameters given in the order the package
// doc lists them, numbers in their shortest form; "" for constant with
// no seed.
type Spec string

// Params is a Spec read: its kind and parameters, defaults filled in.
type Params struct {
	Kind   string
	LogSCV float64 // lognormal's squared coefficient of variation
	P, X   float64 // bimodal's slow share and how many times as long
	Seed   uint64
}

// SpecError says what is wrong with a DIST value: Value as given, and
// Allowed, what is allowed instead.
type SpecError struct {
	Value   string
	Allowed string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("distribution %q is not allowed: want %s", e.Value, e.Allowed)
}

type param struct {
	name   string
	lo, hi float64
	whole  bool
	field  func(*Params) *float64
}

// params are each kind's own parameters, in canonical order; seed is
// every kind's, last.
func params(kind string) ([]param, bool) {
	switch kind {
	case Constant, Exponential:
		return nil, true
	case Lognormal:
		return []param{{"scv", 0.01, 25, false, func(p *Params) *float64 { return &p.LogSCV }}}, true
	case Bimodal:
		return []param{
			{"p", 0.001, 0.5, false, func(p *Params) *float64 { return &p.P }},
			{"x", 1, 100, false, func(p *Params) *float64 { return &p.X }},
		}, true
	}
	return nil, false
}

// ParseSpec reads text as DIST spells it and returns the canonical Spec,
// or a *SpecError saying what is wrong and what is allowed. Spaces around
// the commas and = signs are allowed. lognormal needs scv, bimodal p and
// x.
func ParseSpec(text string) (Spec, error) {
	p, given, err := parse(text)
	if err != nil {
		return Spec(strings.TrimSpace(text)), err
	}
	return p.spec(given), nil
}

func parse(text string) (Params, map[string]bool, error) {
	bad := func(allowed string) (Params, map[string]bool, error) {
		return Params{}, nil, &SpecError{Value: strings.TrimSpace(text), Allowed: allowed}
	}
	fields := strings.Split(text, ",")
	kind := strings.ToLower(strings.TrimSpace(fields[0]))
	if kind == "" && len(fields) == 1 {
		kind = Constant
	}
	own, ok := params(kind)
	if !ok {
		return bad(Allowed)
	}
	p := Params{Kind: kind, Seed: 1}
	given := map[string]bool{}
	for _, f := range fields[1:] {
		name, val, ok := strings.Cut(f, "=")
		name, val = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(val)
		if !ok || name == "" {
			return bad(fmt.Sprintf("%s's parameters as name=value after commas: %s", kind, names(own)))
		}
		if given[name] {
			return bad(fmt.Sprintf("each parameter once: %s is given twice", name))
		}
		given[name] = true
		if name == "seed" {
			n, err := strconv.ParseUint(val, 10, 31)
			if err != nil {
				return bad("seed a whole number from 0 to 2147483647")
			}
			p.Seed = n
			continue
		}
		i := -1
		for j, pr := range own {
			if pr.name == name {
				i = j
			}
		}
		if i < 0 {
			return bad(fmt.Sprintf("%s's parameters: %s", kind, names(own)))
		}
		pr := own[i]
		v, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(v) || v < pr.lo || v > pr.hi || pr.whole && v != math.Trunc(v) {
			return bad(fmt.Sprintf("%s's %s from %s to %s", kind, pr.name, num(pr.lo), num(pr.hi)))
		}
		*pr.field(&p) = v
	}
	for _, pr := range own {
		if !given[pr.name] {
			return bad(fmt.Sprintf("%s with %s: %s", kind, names(own), Allowed))
		}
	}
	return p, given, nil
}

func names(own []param) string {
	var out []string
	for _, pr := range own {
		out = append(out, fmt.Sprintf("%s (%s to %s)", pr.name, num(pr.lo), num(pr.hi)))
	}
	return strings.Join(append(out, "seed (0 to 2147483647)"), ", ")
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func (p Params) spec(given map[string]bool) Spec {
	if p.Kind == Constant && !given["seed"] {
		return ""
	}
	b := []string{p.Kind}
	own, _ := params(p.Kind)
	for _, pr := range own {
		b = append(b, pr.name+"="+num(*pr.field(&p)))
	}
	if given["seed"] {
		b = append(b, "seed="+strconv.FormatUint(p.Seed, 10))
	}
	return Spec(strings.Join(b, ","))
}

// Spec is p as DIST spells it, canonical, its seed given unless it is
// the default, 1.
func (p Params) Spec() Spec {
	return p.spec(map[string]bool{"seed": p.Seed != 1})
}

// Params reads the Spec; ok is false when it does not parse.
func (s Spec) Params() (Params, bool) {
	p, _, err := parse(string(s))
	return p, err == nil
}

// Validate returns nil, or a *SpecError saying what is wrong.
func (s Spec) Validate() error {
	_, _, err := parse(string(s))
	return err
}

// String is the Spec as DIST spells it, "constant" for the zero value.
func (s Spec) String() string {
	if s == "" {
		return Constant
	}
	return string(s)
}

// Constant says whether every factor is 1 (the zero value, or constant
// with a seed).
func (s Spec) Constant() bool {
	p, ok := s.Params()
	return ok && p.Kind == Constant
}

// MarshalText writes the Spec as DIST spells it.
func (s Spec) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a Spec, canonical when it parses and as given
// otherwise (for Validate to name what is wrong).
func (s *Spec) UnmarshalText(b []byte) error {
	*s, _ = ParseSpec(string(b))
	return nil
}

// SCV is the distribution's squared coefficient of variation (variance
// over the mean squared; the mean is 1), as set (MaxFactor's cut aside).
func (p Params) SCV() float64 {
	switch p.Kind {
	case Exponential:
		return 1
	case Lognormal:
		return p.LogSCV
	case Bimodal:
		m := 1 - p.P + p.P*p.X
		return (1-p.P+p.P*p.X*p.X)/(m*m) - 1
	}
	return 0
}

// Words says the distribution in a phrase for a caption: "constant",
// "exponential (SCV 1)", "lognormal (SCV 4)", "bimodal: 10% of requests
// 10 times as long (SCV 2.02)".
func (p Params) Words() string {
	switch p.Kind {
	case Exponential:
		return "exponential (SCV 1)"
	case Lognormal:
		return "lognormal (SCV " + num(p.LogSCV) + ")"
	case Bimodal:
		return fmt.Sprintf("bimodal: %s%% of requests %s times as long as the rest (SCV %.2f)", num(p.P*100), num(p.X), p.SCV())
	}
	return "constant"
}

// Sampler draws factors, mean 1, from a source seeded with the Spec's
// seed: two samplers of one Spec draw the same factors in the same order.
// It is not safe for concurrent use.
type Sampler struct {
	p       Params
	rng     *rand.Rand
	mu, sig float64 // lognormal's
	fast    float64 // bimodal's fast factor
}

// NewSampler returns a sampler for p, starting from its seed.
func NewSampler(p Params) *Sampler {
	s := &Sampler{p: p, rng: rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15))}
	switch p.Kind {
	case Lognormal:
		v := math.Log1p(p.LogSCV)
		s.sig, s.mu = math.Sqrt(v), -v/2
	case Bimodal:
		s.fast = 1 / (1 - p.P + p.P*p.X)
	}
	return s
}

// Sampler returns a sampler of the Spec's factors from its seed; one of
// constant factors (every one 1) when the Spec does not parse, which the
// lab and the simulator refuse before they draw.
func (s Spec) Sampler() *Sampler {
	p, ok := s.Params()
	if !ok {
		p = Params{Kind: Constant}
	}
	return NewSampler(p)
}

// Next returns the next factor.
func (s *Sampler) Next() float64 {
	var f float64
	switch s.p.Kind {
	case Exponential:
		f = s.rng.ExpFloat64()
	case Lognormal:
		f = math.Exp(s.mu + s.sig*s.rng.NormFloat64())
	case Bimodal:
		f = s.fast
		if s.rng.Float64() < s.p.P {
			f *= s.p.X
		}
	default:
		return 1
	}
	return min(f, MaxFactor)
}
