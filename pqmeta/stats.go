package pqmeta

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"

	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

type side uint8

const (
	lower side = iota // a min: round toward -inf
	upper             // a max: round toward +inf
)

// chunkStats translates one column chunk's statistics into the leaf's
// DuckDB type. Everything it cannot vouch for is left unknown: a bound it
// keeps always admits every value in the chunk.
func chunkStats(l *Leaf, ch *Chunk, order columnOrder, rows int64, w writer) stats.Column {
	st := stats.Column{RowCount: rows}
	isFloat := l.dec == decFloat || l.dec == decDouble || l.dec == decFloat16 || l.phys == physFloat || l.phys == physDouble
	if !isFloat {
		st.ContainsNaN = stats.Known(false) // only floats hold NaN
	}
	if !ch.hasMeta {
		return st
	}
	st.ColumnSizeBytes = ch.CompressedSize
	s := ch.stats
	if s == nil {
		return st
	}
	if s.NullCount != nil && *s.NullCount >= 0 && !l.Repeated {
		st.NullCount = stats.Known(*s.NullCount)
		st.ContainsNull = stats.Known(*s.NullCount > 0)
		// For a leaf outside lists and maps, num_values counts one entry per
		// row, NULLs included.
		if v := ch.Values - *s.NullCount; v >= 0 && ch.Values <= rows {
			st.ValueCount = stats.Known(v)
		}
	}
	if s.DistinctCount != nil && *s.DistinctCount >= 0 && !l.Repeated {
		st.DistinctCount = stats.Known(*s.DistinctCount)
	}
	switch {
	case !isFloat:
	case s.NanCount != nil && *s.NanCount >= 0:
		st.ContainsNaN = stats.Known(*s.NanCount > 0)
	case w.nanDropsBounds && (s.MinValue != nil || s.Min != nil):
		// This writer leaves a chunk that holds a NaN without bounds, so
		// bounds mean no NaN.
		st.ContainsNaN = stats.Known(false)
	}
	lo, hi, loExact, hiExact := pickBounds(l, s, order)
	codec, ok := types.CodecFor(l.Type)
	if !ok || !codec.Ordered() {
		return st
	}
	if lo != nil {
		if b, rounded, ok := decodeBound(l, codec, lo, lower); ok {
			st.Min, st.MinIsExact = stats.Known(b), loExact && !rounded
		}
	}
	if hi != nil {
		if b, rounded, ok := decodeBound(l, codec, hi, upper); ok {
			st.Max, st.MaxIsExact = stats.Known(b), hiExact && !rounded
		}
	}
	if st.Min.Known && st.Max.Known && bytes.Compare(st.Min.V, st.Max.V) > 0 {
		// Inverted bounds come from a writer that got its order wrong:
		// they prove nothing.
		st.Min, st.Max = stats.Maybe[[]byte]{}, stats.Maybe[[]byte]{}
		st.MinIsExact, st.MaxIsExact = false, false
	}
	return st
}

// pickBounds chooses which statistics fields to trust:
//   - min_value/max_value, when the footer's column_orders give this leaf an
//     order rocklake knows (TYPE_ORDER; IEEE_754_TOTAL_ORDER for floats,
//     whose NaN bounds are then dropped by decodeBound);
//   - else the deprecated min/max, only when the type's order is signed and
//     the physical type is not binary (old writers compared bytes as signed
//     chars);
//   - else nothing.
func pickBounds(l *Leaf, s *rawStats, order columnOrder) (lo, hi []byte, loExact, hiExact bool) {
	stringy := l.dec == decBytes
	usable := order == columnOrderType || (order == columnOrderIEEE754 && (l.dec == decFloat || l.dec == decDouble || l.dec == decFloat16))
	if usable && (s.MinValue != nil || s.MaxValue != nil) {
		exact := func(p *bool) bool {
			if p != nil {
				return *p
			}
			return !stringy // absent: exact except for strings, which writers truncate
		}
		return s.MinValue, s.MaxValue, exact(s.IsMinExact), exact(s.IsMaxExact)
	}
	legacyOK := l.order == orderSigned && l.phys != physBinary && l.phys != physFLBA && l.phys != physInt96
	if legacyOK && (s.Min != nil || s.Max != nil) {
		return s.Min, s.Max, true, true
	}
	return nil, nil, false, false
}

// decodeBound reads a PLAIN-encoded bound as the leaf's DuckDB type and
// returns its order-preserving encoding, rounding outward where the file's
// unit is finer than the type's.
func decodeBound(l *Leaf, codec *types.Codec, b []byte, sd side) (enc []byte, rounded, ok bool) {
	v, ok := decodeValue(l, b, sd)
	if !ok {
		return nil, false, false
	}
	out, err := codec.Encode(v)
	if err != nil {
		return nil, false, false // NaN, or a value outside the type: no bound
	}
	return out, wasRounded(l, b), true
}

// wasRounded reports whether decoding b into the leaf's type dropped
// precision (a finer file unit), so that the bound is no longer exact.
func wasRounded(l *Leaf, b []byte) bool {
	if len(b) != 8 {
		return false
	}
	x := int64(binary.LittleEndian.Uint64(b))
	switch l.dec {
	case decTimeNanos:
		return l.Type.Kind != types.KindTimeNS && x%1000 != 0
	case decTimestamp:
		_, want := unitOf(l.Type.Kind)
		return l.unitPerSec > want && x%(l.unitPerSec/want) != 0
	}
	return false
}

// ReadsExactly reports whether DuckDB reads every stored value of the leaf
// as a value of the leaf's type without rounding, so that distinct stored
// values stay distinct: not so for nanoseconds read as a microsecond type
// (a Parquet TIMESTAMP(NANOS) adjusted to UTC is TIMESTAMPTZ, µs), nor for
// leaves without a known decoding.
func (l *Leaf) ReadsExactly() bool {
	switch l.dec {
	case decNone:
		return false
	case decTimeNanos:
		return l.Type.Kind == types.KindTimeNS
	case decTimestamp:
		ok, per := unitOf(l.Type.Kind)
		return ok && l.unitPerSec <= per
	}
	return true
}

// Value decodes one PLAIN-encoded value of the leaf as DuckDB reads it.
// It fails on bytes that are not a value of the leaf, and on every value
// of a leaf that does not read exactly (ReadsExactly), where it could
// only approximate.
func (l *Leaf) Value(plain []byte) (types.Value, bool) {
	if !l.ReadsExactly() {
		return types.Value{}, false
	}
	return decodeValue(l, plain, lower)
}

// IntKind says how Value reads this leaf's 4- and 8-byte plain integers
// when it reads them as integers: types.IntValue of the signed number
// (signed), types.UintValue of the unsigned one; ok is false for any other
// leaf. A reader of many values (registration's filters) takes them from
// the column reader's ints, with no plain bytes to encode and decode.
func (l *Leaf) IntKind() (signed, ok bool) {
	if !l.ReadsExactly() {
		return false, false
	}
	switch l.dec {
	case decInt32, decInt64:
		return true, true
	case decUint32, decUint64:
		return false, true
	}
	return false, false
}

func decodeValue(l *Leaf, b []byte, sd side) (types.Value, bool) {
	le32 := func() (uint32, bool) {
		if len(b) != 4 {
			return 0, false
		}
		return binary.LittleEndian.Uint32(b), true
	}
	le64 := func() (uint64, bool) {
		if len(b) != 8 {
			return 0, false
		}
		return binary.LittleEndian.Uint64(b), true
	}
	switch l.dec {
	case decBool:
		if len(b) != 1 || b[0] > 1 {
			return types.Value{}, false
		}
		return types.BoolValue(b[0] == 1), true
	case decInt32:
		u, ok := le32()
		return types.IntValue(int64(int32(u))), ok
	case decUint32:
		u, ok := le32()
		return types.UintValue(uint64(u)), ok
	case decInt64:
		u, ok := le64()
		return types.IntValue(int64(u)), ok
	case decUint64:
		// Unsigned 64-bit values travel in an INT64: read the bits as
		// unsigned, never as a negative number.
		u, ok := le64()
		return types.UintValue(u), ok
	case decFloat:
		u, ok := le32()
		return types.FloatValue(float64(math.Float32frombits(u))), ok
	case decDouble:
		u, ok := le64()
		return types.FloatValue(math.Float64frombits(u)), ok
	case decFloat16:
		if len(b) != 2 {
			return types.Value{}, false
		}
		return types.FloatValue(float64(halfToFloat32(binary.LittleEndian.Uint16(b)))), true
	case decBytes:
		return types.BytesValue(append([]byte{}, b...)), true
	case decUUID:
		if len(b) != 16 {
			return types.Value{}, false
		}
		return types.BytesValue(append([]byte{}, b...)), true
	case decDecimalInt:
		switch {
		case l.phys == physInt32 && len(b) == 4:
			return types.IntValue(int64(int32(binary.LittleEndian.Uint32(b)))), true
		case l.phys == physInt64 && len(b) == 8:
			return types.IntValue(int64(binary.LittleEndian.Uint64(b))), true
		}
		return types.Value{}, false
	case decDecimalBinary:
		if len(b) == 0 || len(b) > 17 || (l.phys == physFLBA && int32(len(b)) != l.typeLength) {
			return types.Value{}, false
		}
		z := new(big.Int).SetBytes(b)
		if b[0]&0x80 != 0 { // two's complement negative
			z.Sub(z, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
		x, ok := types.Int128FromBig(z)
		return types.Int128Value(x), ok
	case decTimeMillis:
		u, ok := le32()
		return timeOfDay(int64(int32(u))*1000, l), ok
	case decTimeMicros:
		u, ok := le64()
		return timeOfDay(int64(u), l), ok
	case decTimeNanos:
		u, ok := le64()
		if l.Type.Kind == types.KindTimeNS {
			return types.IntValue(int64(u)), ok
		}
		return timeOfDay(roundDiv(int64(u), 1000, sd), l), ok
	case decTimestamp:
		u, ok := le64()
		if !ok {
			return types.Value{}, false
		}
		_, want := unitOf(l.Type.Kind)
		x, ok := convertUnit(int64(u), l.unitPerSec, want, sd)
		return types.IntValue(x), ok
	}
	return types.Value{}, false
}

func timeOfDay(micros int64, l *Leaf) types.Value {
	if l.Type.Kind == types.KindTimeTZ {
		return types.TimeTZValue(micros, 0)
	}
	return types.IntValue(micros)
}

// unitOf returns a timestamp kind's units per second.
func unitOf(k types.Kind) (ok bool, perSec int64) {
	switch k {
	case types.KindTimestampS:
		return true, 1
	case types.KindTimestampMS:
		return true, 1_000
	case types.KindTimestamp, types.KindTimestampTZ:
		return true, 1_000_000
	case types.KindTimestampNS:
		return true, 1_000_000_000
	}
	return false, 0
}

// convertUnit converts a count of `from` units per second into `to` units,
// rounding a lower bound down and an upper bound up, and failing on
// overflow instead of wrapping.
func convertUnit(x, from, to int64, sd side) (int64, bool) {
	switch {
	case from == to:
		return x, true
	case from > to:
		return roundDiv(x, from/to, sd), true
	}
	m := to / from
	if x > math.MaxInt64/m || x < math.MinInt64/m {
		return 0, false
	}
	return x * m, true
}

// roundDiv divides rounding toward -inf for a lower bound and +inf for an
// upper bound.
func roundDiv(x, d int64, sd side) int64 {
	q := x / d
	r := x % d
	if r != 0 {
		if sd == lower && x < 0 {
			q--
		}
		if sd == upper && x > 0 {
			q++
		}
	}
	return q
}

// halfToFloat32 widens an IEEE 754 binary16 value exactly.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h & 0x3ff)
	switch exp {
	case 0:
		if frac == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: value = frac × 2^-24.
		f := float32(frac) * float32(math.Ldexp(1, -24))
		if sign != 0 {
			f = -f
		}
		return f
	case 0x1f:
		if frac == 0 {
			return math.Float32frombits(sign | 0x7f800000)
		}
		return float32(math.NaN())
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}
