package loadrun

import "math"

// PyRandom is a random source that gives the same numbers as CPython's
// random module: the Mersenne Twister MT19937, seeded the way
// random.seed(n) seeds it for a non-negative integer n, with Random
// (random.random()) and Expovariate (random.expovariate(rate)) computed
// as CPython computes them. A simulation written in CPython that calls
// random.seed(21) and then random.expovariate(rate) for each gap draws
// the same gaps from NewPyRandom(21). It is written from the published
// description of MT19937 (Matsumoto and Nishimura, 1998, with the 2002
// array initialisation) and of CPython's seeding, not from CPython's code.
// The zero value is not usable; build one with NewPyRandom.
type PyRandom struct {
	mt  [mtN]uint32
	idx int
}

// MT19937's parameters.
const (
	mtN         = 624
	mtM         = 397
	mtMatrixA   = 0x9908b0df
	mtUpperMask = 0x80000000
	mtLowerMask = 0x7fffffff
)

// NewPyRandom returns a source in the state CPython's random.seed(seed)
// leaves it in. CPython takes the absolute value of an integer seed,
// splits it into 32-bit words, least significant first (one word, 0, for
// seed 0), and initialises the generator from that array.
func NewPyRandom(seed uint64) *PyRandom {
	key := []uint32{uint32(seed)}
	if hi := uint32(seed >> 32); hi != 0 {
		key = append(key, hi)
	}
	r := &PyRandom{}
	r.initByArray(key)
	return r
}

// initGenrand fills the state from one 32-bit seed.
func (r *PyRandom) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < mtN; i++ {
		prev := r.mt[i-1]
		r.mt[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	r.idx = mtN
}

// initByArray fills the state from an array of 32-bit words, the
// initialisation CPython uses for every seed.
func (r *PyRandom) initByArray(key []uint32) {
	r.initGenrand(19650218)
	i, j := 1, 0
	for k := max(mtN, len(key)); k > 0; k-- {
		prev := r.mt[i-1]
		r.mt[i] = (r.mt[i] ^ ((prev ^ (prev >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= mtN {
			r.mt[0] = r.mt[mtN-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k := mtN - 1; k > 0; k-- {
		prev := r.mt[i-1]
		r.mt[i] = (r.mt[i] ^ ((prev ^ (prev >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= mtN {
			r.mt[0] = r.mt[mtN-1]
			i = 1
		}
	}
	r.mt[0] = 0x80000000 // the most significant bit set: the state is never all zero
	r.idx = mtN
}

// twist regenerates the whole state.
func (r *PyRandom) twist() {
	mag := func(y uint32) uint32 { return (y & 1) * mtMatrixA }
	for k := 0; k < mtN; k++ {
		y := (r.mt[k] & mtUpperMask) | (r.mt[(k+1)%mtN] & mtLowerMask)
		r.mt[k] = r.mt[(k+mtM)%mtN] ^ (y >> 1) ^ mag(y)
	}
	r.idx = 0
}

// Uint32 returns the generator's next 32-bit output (CPython's
// getrandbits(32)).
func (r *PyRandom) Uint32() uint32 {
	if r.idx >= mtN {
		r.twist()
	}
	y := r.mt[r.idx]
	r.idx++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// Random returns a float64 in [0, 1) as CPython's random.random() does:
// 53 bits made from the top 27 bits of one output and the top 26 of the
// next, (a·2²⁶ + b) / 2⁵³.
func (r *PyRandom) Random() float64 {
	a := r.Uint32() >> 5
	b := r.Uint32() >> 6
	return (float64(a)*67108864.0 + float64(b)) * (1.0 / 9007199254740992.0)
}

// Expovariate returns an exponential variate with the given rate (mean
// 1/rate), as CPython's random.expovariate(rate) computes it (Lib/random.py
// of CPython 3.11 and later: -log(1.0 - random()) / rate).
func (r *PyRandom) Expovariate(rate float64) float64 {
	return -pyLog(1.0-r.Random()) / rate
}

// dd is a double-double number: hi + lo with |lo| ≤ ulp(hi)/2, about 106
// bits of precision.
type dd struct{ hi, lo float64 }

// twoSum returns a + b exactly as a double-double.
func twoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

// quickTwoSum is twoSum for |a| ≥ |b|.
func quickTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func ddAdd(a, b dd) dd {
	s := twoSum(a.hi, b.hi)
	t := twoSum(a.lo, b.lo)
	s = quickTwoSum(s.hi, s.lo+t.hi)
	return quickTwoSum(s.hi, s.lo+t.lo)
}

func ddMul(a, b dd) dd {
	p := a.hi * b.hi
	e := math.FMA(a.hi, b.hi, -p)
	e += a.hi*b.lo + a.lo*b.hi
	return quickTwoSum(p, e)
}

func ddDiv(a, b dd) dd {
	q1 := a.hi / b.hi
	r := ddAdd(a, ddMul(dd{-q1, 0}, b))
	q2 := r.hi / b.hi
	r = ddAdd(r, ddMul(dd{-q2, 0}, b))
	q3 := r.hi / b.hi
	q := quickTwoSum(q1, q2)
	return ddAdd(q, dd{q3, 0})
}

// ln2dd is log(2) as a double-double.
var ln2dd = dd{0.6931471805599453, 2.3190468138462996e-17}

// pyLog returns the natural logarithm of x > 0 rounded to the nearest
// float64, computed in double-double precision. Go's math.Log is
// accurate to within one ulp but not always the nearest float64 (it
// differs in about 6% of CPython's expovariate draws); the C library's
// log, which CPython calls, is nearest in all but very rare cases, and
// so is this. log(m·2^e) = e·log 2 + 2·atanh(s) with s = (m−1)/(m+1) and
// m in [√½, √2), atanh by its series in s² (|s| ≤ 0.172, so 22 terms
// reach 2⁻¹¹⁰).
func pyLog(x float64) float64 {
	switch {
	case x == 1:
		return 0
	case !(x > 0) || math.IsInf(x, 1):
		return math.Log(x) // NaN, -Inf or +Inf, as C's log
	}
	m, e := math.Frexp(x) // x = m·2^e, m in [0.5, 1)
	if m < math.Sqrt2/2 {
		m *= 2
		e--
	}
	f := m - 1 // exact: m is within a factor of two of 1
	s := ddDiv(dd{f, 0}, twoSum(2, f))
	t := ddMul(s, s)
	const terms = 22
	sum := dd{}
	for k := terms - 1; k >= 0; k-- {
		d := float64(2*k + 1)
		c := dd{1 / d, 0}
		c.lo = math.FMA(-c.hi, d, 1) / d
		sum = ddAdd(ddMul(sum, t), c)
	}
	r := ddMul(ddMul(dd{2, 0}, s), sum)
	r = ddAdd(r, ddMul(dd{float64(e), 0}, ln2dd))
	return r.hi + r.lo
}
