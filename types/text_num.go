package types

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// parseNumberText reads [+-]digits[.digits][e[+-]digits] (either digit run may
// be empty, not both) as mant × 10^exp10, exactly.
func parseNumberText(s string) (mant *big.Int, exp10 int, err error) {
	t := strings.TrimSpace(s)
	i := 0
	neg := false
	if i < len(t) && (t[i] == '+' || t[i] == '-') {
		neg = t[i] == '-'
		i++
	}
	var digits strings.Builder
	nd, frac := 0, 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		digits.WriteByte(t[i])
		i++
		nd++
	}
	if i < len(t) && t[i] == '.' {
		i++
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			digits.WriteByte(t[i])
			i++
			nd++
			frac++
		}
	}
	if nd == 0 {
		return nil, 0, fmt.Errorf("%q is not a number", s)
	}
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		i++
		start := i
		if i < len(t) && (t[i] == '+' || t[i] == '-') {
			i++
		}
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		e, perr := strconv.Atoi(t[start:i])
		if perr != nil || e > 1_000_000 || e < -1_000_000 {
			return nil, 0, fmt.Errorf("%q has a bad exponent", s)
		}
		exp10 = e
	}
	if i != len(t) {
		return nil, 0, fmt.Errorf("%q is not a number", s)
	}
	mant, _ = new(big.Int).SetString(digits.String(), 10)
	if neg {
		mant.Neg(mant)
	}
	return mant, exp10 - frac, nil
}

var bigTen = big.NewInt(10)

// roundScaled returns mant × 10^shift rounded to an integer as r says, and
// whether no rounding happened. Shifts far beyond any 128-bit type are
// clamped: the caller's range check rejects the result.
func roundScaled(mant *big.Int, shift int, r Rounding) (*big.Int, bool) {
	if mant.Sign() == 0 {
		return new(big.Int), true
	}
	if shift >= 0 {
		if shift > 80 {
			shift = 80 // already beyond 10^38 × 10^40
		}
		p := new(big.Int).Exp(bigTen, big.NewInt(int64(shift)), nil)
		return p.Mul(p, mant), true
	}
	n := len(new(big.Int).Abs(mant).String())
	if -shift > n+1 {
		// |value| < 0.1: the integer part is 0.
		switch {
		case r == Floor && mant.Sign() < 0:
			return big.NewInt(-1), false
		case r == Ceil && mant.Sign() > 0:
			return big.NewInt(1), false
		}
		return new(big.Int), false
	}
	d := new(big.Int).Exp(bigTen, big.NewInt(int64(-shift)), nil)
	q, m := new(big.Int).QuoRem(mant, d, new(big.Int)) // truncates toward zero
	if m.Sign() == 0 {
		return q, true
	}
	switch r {
	case Floor:
		if mant.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		}
	case Ceil:
		if mant.Sign() > 0 {
			q.Add(q, big.NewInt(1))
		}
	default:
		twice := new(big.Int).Abs(m)
		twice.Lsh(twice, 1)
		if twice.Cmp(d) >= 0 {
			if mant.Sign() < 0 {
				q.Sub(q, big.NewInt(1))
			} else {
				q.Add(q, big.NewInt(1))
			}
		}
	}
	return q, false
}

// parseIntegerText reads an integer, or a number with a fraction or exponent
// rounded as r says.
func parseIntegerText(s string, r Rounding) (*big.Int, bool, error) {
	mant, exp, err := parseNumberText(s)
	if err != nil {
		return nil, false, err
	}
	z, exact := roundScaled(mant, exp, r)
	return z, exact, nil
}

// formatFloat writes a float as DuckDB writes a DOUBLE (the shortest text
// that reads back to the same value, fixed notation for exponents in
// [-4, 16), else d.ddde±XX), so that stored text matches DuckLake's. For a
// FLOAT, DuckDB sometimes writes more digits than the shortest (1835397.75
// where 1835397.8 reads back the same); both texts denote the same value.
func formatFloat(f float64, bitSize int) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, bitSize)
	k := strings.LastIndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[k+1:])
	if exp >= -4 && exp < 16 {
		s := strconv.FormatFloat(f, 'f', -1, bitSize)
		if !strings.ContainsRune(s, '.') {
			s += ".0"
		}
		return s
	}
	return e
}

// parseFloatText reads a float of bitSize 32 or 64 (inf, -inf, infinity and
// nan in any case included), rounding as r says. Directed rounding is exact:
// the nearest float is checked against the text's exact rational value.
func parseFloatText(s string, bitSize int, r Rounding) (float64, bool, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch t {
	case "inf", "+inf", "infinity", "+infinity":
		return math.Inf(1), true, nil
	case "-inf", "-infinity":
		return math.Inf(-1), true, nil
	case "nan", "+nan", "-nan":
		return math.NaN(), true, nil
	}
	mant, exp, err := parseNumberText(t)
	if err != nil {
		return 0, false, err
	}
	f, perr := strconv.ParseFloat(t, bitSize)
	overflow := perr != nil && math.IsInf(f, 0)
	if perr != nil && !overflow {
		return 0, false, fmt.Errorf("%q is not a number", s)
	}
	if mant.Sign() == 0 {
		return 0, true, nil
	}
	down := func(x float64) float64 {
		if bitSize == 32 {
			return float64(math.Nextafter32(float32(x), float32(math.Inf(-1))))
		}
		return math.Nextafter(x, math.Inf(-1))
	}
	up := func(x float64) float64 {
		if bitSize == 32 {
			return float64(math.Nextafter32(float32(x), float32(math.Inf(1))))
		}
		return math.Nextafter(x, math.Inf(1))
	}
	if overflow {
		switch {
		case r == Floor && f > 0:
			return down(f), false, nil // the largest finite value
		case r == Ceil && f < 0:
			return up(f), false, nil
		case r == Cast:
			return 0, false, fmt.Errorf("%q: %w for %s", s, ErrOutOfRange, map[int]string{32: "FLOAT", 64: "DOUBLE"}[bitSize])
		}
		return f, false, nil
	}
	var cmp int
	if f == 0 {
		// Underflow to zero: zero is below a positive value, above a
		// negative one.
		cmp = -mant.Sign()
	} else {
		// Beyond 1100 significant digits, compare against the first 1100:
		// a float's exact decimal expansion is shorter than that, so it
		// either differs from the prefix (and the prefix decides) or equals
		// it (and the remaining digits decide).
		more := false
		if digits := new(big.Int).Abs(mant).String(); len(digits) > 1100 {
			more = strings.Trim(digits[1100:], "0") != ""
			exp += len(digits) - 1100
			t, _ := new(big.Int).SetString(digits[:1100], 10)
			if mant.Sign() < 0 {
				t.Neg(t)
			}
			mant = t
		}
		exact := new(big.Rat).SetInt(mant)
		p := new(big.Rat).SetInt(new(big.Int).Exp(bigTen, big.NewInt(int64(abs(exp))), nil))
		if exp >= 0 {
			exact.Mul(exact, p)
		} else {
			exact.Quo(exact, p)
		}
		cmp = new(big.Rat).SetFloat64(f).Cmp(exact)
		if cmp == 0 && more {
			cmp = -mant.Sign()
		}
	}
	if cmp == 0 {
		return f, true, nil
	}
	switch {
	case r == Floor && cmp > 0:
		f = down(f)
	case r == Ceil && cmp < 0:
		f = up(f)
	}
	return f, false, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
