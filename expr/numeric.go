package expr

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/rocklake/rocklake/types"
)

// DuckDB compares a number column with a FLOAT or DOUBLE operand in that
// binary type (the wider of the two): CAST(int_col AS FLOAT) = 1.5::FLOAT,
// CAST(bigint_col AS DOUBLE) = 1e0, CAST(float_col AS DOUBLE) = 1e0. With an
// exact operand (an integer or decimal literal) it compares integers and
// decimals exactly and casts the operand to a FLOAT or DOUBLE column's type.
// Two conversions are not exact, and the planner brackets both:
//
//   - a column value converted to FLOAT or DOUBLE (16777217::INTEGER is
//     16777216::FLOAT; DECIMAL to DOUBLE divides by a power of ten, which
//     is not correctly rounded) lies within a few units in the last place
//     of the value, so a bound on the converted value is widened by a
//     relative slack before it bounds the column;
//   - a decimal cast to FLOAT or DOUBLE (1.5::FLOAT, f = 0.1) is the
//     correctly rounded value only when its unscaled integer and its power
//     of ten are exact in the binary type (DuckDB divides one by the other);
//     otherwise it may be a neighbour of it.

// fnum is an operand as DuckDB holds it in a comparison made in FLOAT
// (bits 32) or DOUBLE (bits 64): one value of [lo, hi] (lo == hi when the
// conversion that made it is known exactly), or NaN.
type fnum struct {
	bits   int
	lo, hi float64
	nan    bool
}

// floatBitsOf is 32 or 64 for a FLOAT or DOUBLE kind, else 0.
func floatBitsOf(k types.Kind) int {
	switch k {
	case types.KindFloat:
		return 32
	case types.KindDouble:
		return 64
	}
	return 0
}

// litFloatBits says whether DuckDB types a literal as FLOAT (32) or DOUBLE
// (64); 0 for anything else.
func litFloatBits(n Node) int {
	l, ok := n.(*Lit)
	if !ok || l.Kind == LitNull {
		return 0
	}
	if l.Type != "" {
		t, err := types.ParseType(l.Type)
		if err != nil {
			return 0
		}
		return floatBitsOf(t.Kind)
	}
	if l.Kind == LitNumber && isDoubleNumber(l.Text) {
		return 64
	}
	return 0
}

// parseDouble reads a number as DuckDB's string-to-DOUBLE cast does: a
// magnitude beyond the range is an infinity (1e400), below it zero.
func parseDouble(text string) (float64, bool) {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}

// roundFloat rounds a float64 to the binary type of bits.
func roundFloat(f float64, bits int) float64 {
	if bits == 32 {
		return float64(float32(f))
	}
	return f
}

// nextUp and nextDown step one value of the binary type.
func nextUp(f float64, bits int) float64 {
	if bits == 32 {
		return float64(math.Nextafter32(float32(f), float32(math.Inf(1))))
	}
	return math.Nextafter(f, math.Inf(1))
}

func nextDown(f float64, bits int) float64 {
	if bits == 32 {
		return float64(math.Nextafter32(float32(f), float32(math.Inf(-1))))
	}
	return math.Nextafter(f, math.Inf(-1))
}

// nearestFloat is the value of the binary type nearest to r.
func nearestFloat(r *big.Rat, bits int) float64 {
	if bits == 32 {
		f, _ := r.Float32()
		return float64(f)
	}
	f, _ := r.Float64()
	return f
}

// floorFloat is the greatest value of the binary type at most r (-inf
// below the range); ceilFloat the least at least r.
func floorFloat(r *big.Rat, bits int) float64 {
	f := nearestFloat(r, bits)
	if math.IsInf(f, 1) {
		return maxFloat(bits)
	}
	if !math.IsInf(f, -1) && ratOfFloat(f).Cmp(r) > 0 {
		f = nextDown(f, bits)
	}
	return f
}

func ceilFloat(r *big.Rat, bits int) float64 {
	f := nearestFloat(r, bits)
	if math.IsInf(f, -1) {
		return -maxFloat(bits)
	}
	if !math.IsInf(f, 1) && ratOfFloat(f).Cmp(r) < 0 {
		f = nextUp(f, bits)
	}
	return f
}

func maxFloat(bits int) float64 {
	if bits == 32 {
		return math.MaxFloat32
	}
	return math.MaxFloat64
}

func ratOfFloat(f float64) *big.Rat { return new(big.Rat).SetFloat64(f) }

// exactToFloat is a decimal n / 10^scale cast to FLOAT or DOUBLE by DuckDB.
func exactToFloat(n *big.Int, scale int, bits int) fnum {
	x := new(big.Rat).SetFrac(n, pow10(scale))
	mant, maxPow := 53, 22
	if bits == 32 {
		mant, maxPow = 24, 10
	}
	abs := new(big.Int).Abs(n)
	certain := (scale == 0 && abs.BitLen() <= 63) || // an integer: one correctly rounded conversion
		(abs.BitLen() <= mant && scale <= maxPow) // both operands of the division exact
	if certain {
		f := nearestFloat(x, bits)
		return fnum{bits: bits, lo: f, hi: f}
	}
	lo, hi := floorFloat(x, bits), ceilFloat(x, bits)
	for range 2 {
		lo, hi = nextDown(lo, bits), nextUp(hi, bits)
	}
	return fnum{bits: bits, lo: lo, hi: hi}
}

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

// decimalParts splits a number's text (no exponent) into its unscaled
// integer and scale, as DuckDB types the literal: 1.50 is 150 at scale 2.
func decimalParts(text string) (*big.Int, int, bool) {
	neg := strings.HasPrefix(text, "-")
	t := strings.TrimPrefix(text, "-")
	scale := 0
	if i := strings.IndexByte(t, '.'); i >= 0 {
		scale = len(t) - i - 1
		t = t[:i] + t[i+1:]
	}
	if t == "" {
		return nil, 0, false
	}
	n, ok := new(big.Int).SetString(t, 10)
	if !ok {
		return nil, 0, false
	}
	if neg {
		n.Neg(n)
	}
	return n, scale, true
}

// exactIn reports whether every value of t converts to the binary type of
// bits exactly (DuckDB's comparison in that type is then exact).
func exactIn(t types.Type, bits int) bool {
	switch t.Kind {
	case types.KindTinyInt, types.KindSmallInt, types.KindUTinyInt, types.KindUSmallInt:
		return true
	case types.KindInteger, types.KindUInteger:
		return bits == 64
	case types.KindDecimal:
		if t.Scale != 0 {
			return false
		}
		if bits == 32 {
			return t.Precision <= 7
		}
		return t.Precision <= 15
	}
	return false
}

// slack bounds how far DuckDB's conversion of a column value to the binary
// type of bits can move it: a few units in the last place, relative, and a
// few of the smallest subnormal.
func slack(x float64, bits int) *big.Rat {
	rel, abs := 20, 140
	if bits == 64 {
		rel, abs = 48, 1060
	}
	s := new(big.Rat).Abs(ratOfFloat(x))
	s.Mul(s, new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), uint(rel))))
	return s.Add(s, new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), uint(abs))))
}

// numRange is the range of an integer or decimal type, at its scale.
func numRange(t types.Type) (lo, hi *big.Rat, scale int, ok bool) {
	one := big.NewInt(1)
	pow2 := func(n uint) *big.Int { return new(big.Int).Lsh(one, n) }
	signed := func(bits uint) (*big.Rat, *big.Rat) {
		return new(big.Rat).SetInt(new(big.Int).Neg(pow2(bits - 1))), new(big.Rat).SetInt(new(big.Int).Sub(pow2(bits-1), one))
	}
	unsigned := func(bits uint) (*big.Rat, *big.Rat) {
		return new(big.Rat), new(big.Rat).SetInt(new(big.Int).Sub(pow2(bits), one))
	}
	if t.Kind == types.KindDecimal {
		m := new(big.Rat).SetFrac(new(big.Int).Sub(pow10(int(t.Precision)), one), pow10(int(t.Scale)))
		return new(big.Rat).Neg(m), m, int(t.Scale), true
	}
	bits, isSigned, isInt := t.Kind.IntBits()
	switch {
	case !isInt:
		return nil, nil, 0, false
	case isSigned:
		lo, hi = signed(uint(bits))
	default:
		lo, hi = unsigned(uint(bits))
	}
	return lo, hi, 0, true
}

// ratText writes n / 10^scale as a decimal.
func ratText(n *big.Int, scale int) string {
	s := new(big.Int).Abs(n).String()
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if n.Sign() < 0 {
		s = "-" + s
	}
	return s
}

// gridFloor is the greatest multiple of 10^-scale at most r; gridCeil the
// least at least r.
func gridFloor(r *big.Rat, scale int) *big.Int {
	x := new(big.Rat).Mul(r, new(big.Rat).SetInt(pow10(scale)))
	q, _ := new(big.Int).DivMod(x.Num(), x.Denom(), new(big.Int))
	return q // Euclidean division: toward -inf for a positive divisor
}

func gridCeil(r *big.Rat, scale int) *big.Int {
	x := new(big.Rat).Mul(r, new(big.Rat).SetInt(pow10(scale)))
	q, m := new(big.Int).DivMod(x.Num(), x.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

// encodeNum encodes n / 10^scale in c's type.
func encodeNum(c *Column, n *big.Int, scale int) ([]byte, bool) {
	v, err := c.Codec.Parse(ratText(n, scale))
	if err != nil {
		return nil, false
	}
	enc, err := c.Codec.Encode(v)
	return enc, err == nil
}

func encodeFloat(c *Column, f float64) ([]byte, bool) {
	enc, err := c.Codec.Encode(types.Value{F: f})
	return enc, err == nil
}

// floatOperand brackets a FLOAT or DOUBLE operand against a FLOAT or
// DOUBLE column: the comparison is made in the wider type, into which the
// column's values convert exactly.
func floatOperand(c *Column, x fnum) (litValue, bool) {
	if x.nan {
		return litValue{nan: true}, true
	}
	bits := floatBitsOf(c.Type.Kind)
	lo, hi := x.lo, x.hi
	if bits < x.bits {
		// A DOUBLE against a FLOAT column: the column's neighbours.
		if !math.IsInf(lo, 0) {
			lo = floorFloat(ratOfFloat(lo), bits)
		}
		if !math.IsInf(hi, 0) {
			hi = ceilFloat(ratOfFloat(hi), bits)
		}
	}
	elo, ok1 := encodeFloat(c, lo)
	ehi, ok2 := encodeFloat(c, hi)
	if !ok1 || !ok2 {
		return litValue{}, false
	}
	if x.lo == x.hi {
		// One value: exact, or strictly between two of the column's.
		return litValue{exact: lo == hi, lo: elo, hi: ehi}, true
	}
	return litValue{lo: elo, hi: ehi, ambiguous: true}, true
}

// intOperand brackets a FLOAT or DOUBLE operand against an integer or
// decimal column, which DuckDB converts to the operand's type.
func (b *binder) intOperand(c *Column, x fnum) (litValue, bool) {
	if x.nan {
		return litValue{above: true}, true // NaN is above every number
	}
	exact := exactIn(c.Type, x.bits)
	// Only a UHUGEINT beyond FLOAT's range converts to an infinity.
	reachesInf := x.bits == 32 && c.Type.Kind == types.KindUHugeInt
	if x.lo == x.hi && math.IsInf(x.lo, 0) && !(reachesInf && x.lo > 0) {
		if x.lo > 0 {
			return litValue{above: true}, true
		}
		return litValue{below: true}, true
	}
	if exact && x.lo == x.hi {
		lv, ok, _ := b.castNumber(c, exactFloatText(x.lo), 0)
		return lv, ok
	}
	// A converted value is within slack of the column value, and one that
	// converts to +inf is above the type's greatest finite value.
	var a, z *big.Rat
	switch {
	case math.IsInf(x.lo, 1):
		a = ratOfFloat(maxFloat(x.bits))
	case !math.IsInf(x.lo, -1):
		a = ratOfFloat(x.lo)
		if !exact {
			a.Sub(a, slack(x.lo, x.bits))
		}
	}
	switch {
	case math.IsInf(x.hi, -1):
		z = ratOfFloat(-maxFloat(x.bits))
	case !math.IsInf(x.hi, 1):
		z = ratOfFloat(x.hi)
		if !exact {
			z.Add(z, slack(x.hi, x.bits))
		}
	}
	min, max, scale, ok := numRange(c.Type)
	if !ok {
		return litValue{}, false
	}
	if z != nil && z.Cmp(min) < 0 {
		return litValue{below: true}, true
	}
	if a != nil && a.Cmp(max) > 0 {
		return litValue{above: true}, true
	}
	lv := litValue{ambiguous: true, noLo: a == nil || a.Cmp(min) < 0, noHi: z == nil || z.Cmp(max) > 0}
	if !lv.noLo {
		if lv.lo, ok = encodeNum(c, gridFloor(a, scale), scale); !ok {
			return litValue{}, false
		}
	}
	if !lv.noHi {
		if lv.hi, ok = encodeNum(c, gridCeil(z, scale), scale); !ok {
			return litValue{}, false
		}
	}
	return lv, true
}
