package ingest

import (
	"math/big"

	"rocklake/types"
)

// Compatibility rules: a file column fits a table column when DuckDB can
// read every value of the file's type as the table's type exactly, or (for
// decimals and timestamps of a finer unit) after rounding that the bounds
// then follow outward:
//
//   - the same type always fits;
//   - a signed integer fits a signed integer at least as wide; an unsigned
//     one fits an unsigned one at least as wide, or a strictly wider signed
//     one; any integer up to 64 bits fits int128, an unsigned one uint128;
//   - an integer fits decimal(p,s) when p-s holds all its digits;
//   - float32 fits float64;
//   - decimal(p,s) fits decimal(p',s') when p'-s' ≥ p-s (the integer digits
//     fit); a smaller scale rounds, and bounds round outward;
//   - timestamp, _s, _ms and _ns fit one another (bounds converted to the
//     table's unit, rounded outward); timestamptz fits only timestamptz;
//   - json fits varchar;
//   - nested types fit when they are equal.
//
// Nothing else fits: a string never fits an integer, a timestamp never a
// timestamptz, a float never an integer.
func fits(f, t types.Type) bool {
	if f.Equal(t) {
		return true
	}
	fk, tk := f.Kind, t.Kind
	switch {
	case isSigned(fk) && isSigned(tk):
		return intWidth(fk) <= intWidth(tk)
	case isUnsigned(fk) && isUnsigned(tk):
		return intWidth(fk) <= intWidth(tk)
	case isUnsigned(fk) && isSigned(tk):
		return intWidth(fk) < intWidth(tk)
	case (isSigned(fk) || isUnsigned(fk)) && tk == types.KindDecimal:
		return intDigits(fk) > 0 && int(t.Precision)-int(t.Scale) >= intDigits(fk)
	case fk == types.KindFloat && tk == types.KindDouble:
		return true
	case fk == types.KindDecimal && tk == types.KindDecimal:
		return int(t.Precision)-int(t.Scale) >= int(f.Precision)-int(f.Scale)
	case isLocalTimestamp(fk) && isLocalTimestamp(tk):
		return true
	case fk == types.KindJSON && tk == types.KindVarchar:
		return true
	}
	return false
}

func isSigned(k types.Kind) bool {
	return k == types.KindTinyInt || k == types.KindSmallInt || k == types.KindInteger || k == types.KindBigInt || k == types.KindHugeInt
}

func isUnsigned(k types.Kind) bool {
	return k == types.KindUTinyInt || k == types.KindUSmallInt || k == types.KindUInteger || k == types.KindUBigInt || k == types.KindUHugeInt
}

func intWidth(k types.Kind) int {
	switch k {
	case types.KindTinyInt, types.KindUTinyInt:
		return 1
	case types.KindSmallInt, types.KindUSmallInt:
		return 2
	case types.KindInteger, types.KindUInteger:
		return 4
	case types.KindBigInt, types.KindUBigInt:
		return 8
	}
	return 16
}

// intDigits is the decimal digits of an integer type's widest value; 0 for
// 128-bit types, which no decimal holds.
func intDigits(k types.Kind) int {
	return map[types.Kind]int{
		types.KindTinyInt: 3, types.KindSmallInt: 5, types.KindInteger: 10, types.KindBigInt: 19,
		types.KindUTinyInt: 3, types.KindUSmallInt: 5, types.KindUInteger: 10, types.KindUBigInt: 20,
	}[k]
}

func isLocalTimestamp(k types.Kind) bool {
	return k == types.KindTimestamp || k == types.KindTimestampS || k == types.KindTimestampMS || k == types.KindTimestampNS
}

// convertValue converts a bound from the file's type to the table's (which
// fits says is possible), rounding as the side says. exact is false when
// the conversion rounded.
func convertValue(v types.Value, f, t types.Type, sd side) (out types.Value, exact bool, ok bool) {
	if f.Equal(t) {
		return v, true, true
	}
	fk, tk := f.Kind, t.Kind
	switch {
	case isUnsigned(fk) && isSigned(tk):
		x, ok := types.Int128FromBig(v.U.Big())
		return types.Int128Value(x), true, ok
	case (isSigned(fk) && isSigned(tk)) || (isUnsigned(fk) && isUnsigned(tk)):
		return v, true, true
	case (isSigned(fk) || isUnsigned(fk)) && tk == types.KindDecimal:
		z := v.I.Big()
		if isUnsigned(fk) {
			z = v.U.Big()
		}
		z.Mul(z, pow10(int(t.Scale)))
		x, ok := types.Int128FromBig(z)
		return types.Int128Value(x), true, ok
	case fk == types.KindFloat && tk == types.KindDouble:
		return v, true, true
	case fk == types.KindDecimal && tk == types.KindDecimal:
		z, exact := rescale(v.I.Big(), int(t.Scale)-int(f.Scale), sd)
		x, ok := types.Int128FromBig(z)
		return types.Int128Value(x), exact, ok
	case isLocalTimestamp(fk) && isLocalTimestamp(tk):
		_, from := unitOf(fk)
		_, to := unitOf(tk)
		x := v.Int64()
		if x == timestampInf || x == -timestampInf {
			return v, true, true // infinities stay infinite in every unit
		}
		y, ok := convertUnit(x, from, to, sd)
		return types.IntValue(y), from <= to || y*(from/to) == x, ok
	case fk == types.KindJSON && tk == types.KindVarchar:
		return v, true, true
	}
	return types.Value{}, false, false
}

const timestampInf = 1<<63 - 1

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

// rescale multiplies by 10^shift, or divides rounding a lower bound down and
// an upper bound up.
func rescale(z *big.Int, shift int, sd side) (*big.Int, bool) {
	if shift >= 0 {
		return z.Mul(z, pow10(shift)), true
	}
	d := pow10(-shift)
	q, m := new(big.Int).QuoRem(z, d, new(big.Int))
	if m.Sign() == 0 {
		return q, true
	}
	if sd == lower && z.Sign() < 0 {
		q.Sub(q, big.NewInt(1))
	}
	if sd == upper && z.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q, false
}
