package pqmeta

import (
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// Fits reports whether a file column DuckDB reads as type f fits a table
// column of type t: whether DuckDB's CAST from f to t exists and keeps
// every value, exactly or after a rounding the bounds then follow outward:
//
//   - the same type always fits;
//   - a signed integer fits a signed integer at least as wide; an unsigned
//     one fits an unsigned one at least as wide, or a strictly wider signed
//     one; any integer up to 64 bits fits int128, an unsigned one uint128;
//   - an integer fits decimal(p,s) when p-s holds all its digits;
//   - float32 fits float64;
//   - decimal(p,s) fits decimal(p',s') when p'-s' ≥ p-s (the integer digits
//     fit); a smaller scale rounds half away from zero;
//   - a timestamp fits a timestamp of a finer unit (timestamp_s → _ms → µs
//     → _ns, exact); timestamp_ns fits timestamp (µs: DuckDB cuts the
//     nanoseconds, toward zero); timestamp (µs) fits timestamp_ms and
//     timestamp_s (rounded half away from zero). DuckDB 1.5 has no cast
//     from timestamp_ns to _ms or _s, nor from _ms to _s: those never fit.
//     timestamptz fits only timestamptz;
//   - time fits time_ns (exact) and time_ns fits time (rounded half up);
//   - json fits varchar;
//   - nested types fit when they are equal.
//
// Nothing else fits: a string never fits an integer, a timestamp never a
// timestamptz, a float never an integer.
//
// A cast that fits can still fail on some values: rounding 9.999 from
// decimal(4,3) to decimal(3,2) gives 10.00, which DuckDB refuses ("value is
// out of range"), and a timestamp outside 1677–2262 has no timestamp_ns.
// File.CastError checks those against the file's statistics.
func Fits(f, t types.Type) bool {
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
		_, from := unitOf(fk)
		_, to := unitOf(tk)
		return from <= to || from == 1_000_000 || (from == 1_000_000_000 && to == 1_000_000)
	case fk == types.KindTime && tk == types.KindTimeNS, fk == types.KindTimeNS && tk == types.KindTime:
		return true
	case fk == types.KindJSON && tk == types.KindVarchar:
		return true
	}
	return false
}

func isSigned(k types.Kind) bool {
	_, signed, ok := k.IntBits()
	return ok && signed
}

func isUnsigned(k types.Kind) bool {
	_, signed, ok := k.IntBits()
	return ok && !signed
}

// intWidth is an integer kind's width in bytes.
func intWidth(k types.Kind) int {
	bits, _, _ := k.IntBits()
	return bits / 8
}

func intDigits(k types.Kind) int { return k.IntDigits() }

func isLocalTimestamp(k types.Kind) bool {
	return k == types.KindTimestamp || k == types.KindTimestampS || k == types.KindTimestampMS || k == types.KindTimestampNS
}

// convertValue converts a bound from the file's type to the table's (which
// Fits says is possible), rounding as the side says. exact is false when
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
	case fk == types.KindTime && tk == types.KindTimeNS:
		return types.IntValue(v.Int64() * 1000), true, true
	case fk == types.KindTimeNS && tk == types.KindTime:
		x := v.Int64()
		return types.IntValue(roundDiv(x, 1000, sd)), x%1000 == 0, true
	case fk == types.KindJSON && tk == types.KindVarchar:
		return v, true, true
	}
	return types.Value{}, false, false
}

// toTableType converts a unit's bounds from the file's type to the table
// column's, rounding outward; a bound that cannot be converted is dropped.
func toTableType(st stats.Column, from, to types.Type) stats.Column {
	if from.Equal(to) {
		return st
	}
	fromCodec, ok1 := types.CodecFor(from)
	toCodec, ok2 := types.CodecFor(to)
	conv := func(b stats.Maybe[[]byte], exact bool, sd side) (stats.Maybe[[]byte], bool) {
		if !b.Known || !ok1 || !ok2 {
			return stats.Maybe[[]byte]{}, false
		}
		v, err := fromCodec.Decode(b.V)
		if err != nil {
			return stats.Maybe[[]byte]{}, false
		}
		cv, stillExact, ok := convertValue(v, from, to, sd)
		if !ok {
			return stats.Maybe[[]byte]{}, false
		}
		out, err := toCodec.Encode(cv)
		if err != nil {
			return stats.Maybe[[]byte]{}, false
		}
		return stats.Known(out), exact && stillExact
	}
	st.Min, st.MinIsExact = conv(st.Min, st.MinIsExact, lower)
	st.Max, st.MaxIsExact = conv(st.Max, st.MaxIsExact, upper)
	if !ok2 || !toCodec.Ordered() {
		st.Min, st.Max = stats.Maybe[[]byte]{}, stats.Maybe[[]byte]{}
	}
	return st
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

// castFails says why DuckDB's cast of a file column to the table's type can
// fail on the file's values, or nil when it cannot. Only casts that round
// or widen a timestamp's range can fail (Fits already refuses the rest):
//
//   - decimal(p,s) → decimal(p',s') with s' < s and p'-s' = p-s: the value
//     rounds half away from zero, and DuckDB refuses a result of p'+1
//     digits (decimal(4,3) 9.995 → decimal(3,2) fails). Safe when p'-s' >
//     p-s, or when the file's exact bounds round into range.
//   - timestamp (µs) → _ms / _s: rounds half away from zero, then DuckDB
//     checks the result converts back to µs: within half a unit of the
//     µs range's ends it fails. Safe when the file stores a unit no finer
//     than the table's (the values are whole units), or by exact bounds.
//   - any timestamp → _ns: values outside ±2^63 ns of the epoch (about
//     1677-09-21 to 2262-04-11) fail. Safe by exact bounds only.
//
// Infinities cast to infinities. A column without values cannot fail.
func castFails(l *Leaf, f, t types.Type, st stats.Column) error {
	if f.Equal(t) {
		return nil
	}
	fk, tk := f.Kind, t.Kind
	var check func(v types.Value) bool
	switch {
	case fk == types.KindDecimal && tk == types.KindDecimal:
		if t.Scale >= f.Scale || int(t.Precision)-int(t.Scale) > int(f.Precision)-int(f.Scale) {
			return nil
		}
		limit := pow10(int(t.Precision))
		check = func(v types.Value) bool {
			r := roundHalfAway(v.I.Big(), int(f.Scale)-int(t.Scale))
			return r.CmpAbs(limit) < 0
		}
	case isLocalTimestamp(fk) && isLocalTimestamp(tk):
		_, from := unitOf(fk)
		_, to := unitOf(tk)
		switch {
		case to == 1_000_000_000 && from < to:
			check = func(v types.Value) bool {
				x := v.Int64()
				if x == timestampInf || x == -timestampInf {
					return true
				}
				y, ok := convertUnit(x, from, to, lower)
				return ok && y != math.MinInt64 && y != timestampInf && y != -timestampInf
			}
		case from == 1_000_000 && to < from:
			if l != nil && l.dec == decTimestamp && l.unitPerSec <= to {
				return nil // whole units of the table's: nothing rounds
			}
			m := from / to
			check = func(v types.Value) bool {
				x := v.Int64()
				if x == timestampInf || x == -timestampInf {
					return true
				}
				q := roundHalfAwayInt(x, m)
				back := new(big.Int).Mul(big.NewInt(q), big.NewInt(m))
				return back.IsInt64() && back.Int64() > -timestampInf && back.Int64() < timestampInf
			}
		default:
			return nil
		}
	default:
		return nil
	}
	if st.ValueCount.Known && st.ValueCount.V == 0 {
		return nil
	}
	why := fmt.Sprintf("DuckDB's cast from %s to %s fails for some values", f, t)
	if !st.Min.Known || !st.Max.Known || !st.MinIsExact || !st.MaxIsExact {
		return fmt.Errorf("%s, and the file's statistics have no exact bounds to show that none is here", why)
	}
	codec, ok := types.CodecFor(f)
	if !ok {
		return errors.New(why)
	}
	for _, b := range [][]byte{st.Min.V, st.Max.V} {
		v, err := codec.Decode(b)
		if err != nil {
			return fmt.Errorf("%s: %w", why, err)
		}
		if !check(v) {
			return fmt.Errorf("%s, and %s is one", why, codec.Format(v))
		}
	}
	return nil
}

// roundHalfAway divides z by 10^digits, rounding half away from zero, as
// DuckDB's decimal casts do.
func roundHalfAway(z *big.Int, digits int) *big.Int {
	if digits <= 0 {
		return new(big.Int).Set(z)
	}
	d := pow10(digits)
	q, m := new(big.Int).QuoRem(z, d, new(big.Int))
	m.Abs(m).Lsh(m, 1)
	if m.Cmp(d) >= 0 {
		if z.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// roundHalfAwayInt divides x by d, rounding half away from zero, as
// DuckDB's casts to a coarser timestamp unit do.
func roundHalfAwayInt(x, d int64) int64 {
	q, r := x/d, x%d
	if r < 0 {
		r = -r
	}
	if r >= d-r {
		if x < 0 {
			q--
		} else {
			q++
		}
	}
	return q
}
