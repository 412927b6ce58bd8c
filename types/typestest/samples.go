// Package typestest holds sample values for tests of anything that handles
// typed statistics: per type, texts in ascending order with the type's
// extremes, and a generator of random values within the range DuckDB
// accepts, extremes mixed in.
package typestest

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/rocklake/rocklake/types"
)

// Ascending lists, per type, text values in DuckDB's ascending order with
// each type's extremes. A value written "=x" compares equal to the one before
// it (DuckDB holds them equal); every other step is strictly increasing.
var Ascending = map[string][]string{
	"boolean": {"false", "true"},
	"int8":    {"-128", "-127", "-1", "0", "1", "126", "127"},
	"int16":   {"-32768", "-129", "-1", "0", "1", "255", "256", "32767"},
	"int32":   {"-2147483648", "-65536", "-1", "0", "1", "2147483647"},
	"int64":   {"-9223372036854775808", "-4294967296", "-1", "0", "1", "9223372036854775807"},
	"int128": {"-170141183460469231731687303715884105728", "-18446744073709551616",
		"-9223372036854775809", "-1", "0", "1", "9223372036854775808", "18446744073709551615",
		"18446744073709551616", "170141183460469231731687303715884105727"},
	"uint8":  {"0", "1", "127", "128", "255"},
	"uint16": {"0", "1", "255", "256", "32768", "65535"},
	"uint32": {"0", "1", "2147483648", "4294967295"},
	"uint64": {"0", "1", "9223372036854775807", "9223372036854775808", "18446744073709551615"},
	"uint128": {"0", "1", "18446744073709551615", "18446744073709551616",
		"170141183460469231731687303715884105728", "340282366920938463463374607431768211455"},
	"float32": {"-inf", "-3.4028235e+38", "-1.0", "-1.1754944e-38", "-1e-45", "-0.0", "=0.0",
		"1e-45", "1.1754944e-38", "0.1", "1.0", "16777216.0", "3.4028235e+38", "inf"},
	"float64": {"-inf", "-1.7976931348623157e+308", "-1e+300", "-1.0", "-5e-324", "-0.0", "=0.0",
		"5e-324", "2.2250738585072014e-308", "0.1", "1.0", "9007199254740992.0", "1e+300",
		"1.7976931348623157e+308", "inf"},
	"decimal(4,2)":  {"-99.99", "-1.00", "-0.01", "0.00", "0.01", "99.99"},
	"decimal(18,3)": {"-999999999999999.999", "-0.001", "0.000", "0.001", "999999999999999.999"},
	"decimal(38,10)": {"-9999999999999999999999999999.9999999999", "-1.0000000001", "0.0000000000",
		"0.0000000001", "9999999999999999999999999999.9999999999"},
	"decimal(38,0)": {"-99999999999999999999999999999999999999", "-1", "0", "1",
		"99999999999999999999999999999999999999"},
	"date": {"-infinity", "5877642-06-25 (BC)", "0001-01-01 (BC)", "0001-12-31 (BC)", "0001-01-01",
		"1969-12-31", "1970-01-01", "2000-02-29", "9999-12-31", "5881580-07-10", "infinity"},
	"time": {"00:00:00", "00:00:00.000001", "12:34:56.789", "23:59:59.999999", "24:00:00"},
	"time_ns": {"00:00:00", "00:00:00.000000001", "00:00:00.000001", "12:34:56.789123456",
		"23:59:59.999999999", "24:00:00"},
	"timetz": {"00:00:00+15:59:59", "12:00:00+05", "08:00:00+01", "07:00:00+00", "06:00:00-01",
		"07:00:00-01", "23:59:59.999999+00", "24:00:00-15:59:59"},
	"timestamp": {"-infinity", "290309-12-22 (BC) 00:00:00", "0001-01-01 00:00:00",
		"1677-09-21 00:12:43.145224", "1969-12-31 23:59:59.999999", "1970-01-01 00:00:00",
		"1970-01-01 00:00:00.000001", "2024-02-29 12:00:00", "9999-12-31 23:59:59.999999",
		"294247-01-10 04:00:54.775806", "infinity"},
	"timestamp_s": {"-infinity", "0001-01-01 00:00:00", "1900-01-01 00:00:00", "1969-12-31 23:59:59",
		"1970-01-01 00:00:00", "9999-12-31 23:59:59", "infinity"},
	"timestamp_ms": {"-infinity", "1900-01-01 00:00:00", "1969-12-31 23:59:59.999",
		"1970-01-01 00:00:00", "1970-01-01 00:00:00.001", "9999-12-31 23:59:59.999", "infinity"},
	"timestamp_ns": {"-infinity", "1677-09-22 00:00:00", "1969-12-31 23:59:59.999999999",
		"1970-01-01 00:00:00", "1970-01-01 00:00:00.000000001", "2262-04-11 00:00:00.000000001",
		"infinity"},
	"timestamptz": {"-infinity", "1969-12-31 23:59:59.999999+00", "1970-01-01 00:00:00+00",
		"1970-01-01 02:00:00.000001+02", "1970-01-01 00:00:00.000002Z",
		"2024-01-01T00:00:00-05:30", "9999-12-31 23:59:59.999999+00", "infinity"},
	"uuid": {"00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000001",
		"7FFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "80000000-0000-0000-0000-000000000000",
		"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "ffffffff-ffff-ffff-ffff-ffffffffffff"},
	"varchar":             {"", "\x00", "A", "Z", "a", "ab", "b", "z", "\u00e9", "\u07ff", "\uffff", "\U0010FFFF"},
	"blob":                {"", `\x00`, `\x00\x00`, `\x01`, "A", "AB", `\x7F`, `\x80`, `\xFF`, `\xFF\xFF`},
	"enum('b', 'a', 'c')": {"b", "a", "c"},
}

// Extremes parses the Ascending texts of t (by its canonical text) into
// values; nil when the table has none for t.
func Extremes(t types.Type) []types.Value {
	key := t.DuckLakeName()
	if v, ok := extremesCache.Load(key); ok {
		return v.([]types.Value)
	}
	out := parseExtremes(t)
	extremesCache.Store(key, out)
	return out
}

var extremesCache sync.Map

func parseExtremes(t types.Type) []types.Value {
	c, ok := types.CodecFor(t)
	if !ok {
		return nil
	}
	var out []types.Value
	for _, s := range Ascending[t.DuckLakeName()] {
		v, err := c.Parse(strings.TrimPrefix(s, "="))
		if err != nil {
			panic("typestest: bad sample " + s + ": " + err.Error())
		}
		out = append(out, v)
	}
	return out
}

// Range limits DuckDB itself accepts, narrower than the encodings.
const (
	minTimestampMicros = -9223372022400000000 // 290309-12-22 (BC) 00:00:00
	maxTimestampMicros = math.MaxInt64 - 1    // 294247-01-10 04:00:54.775806
	minDateDays        = -2147483646          // 5877642-06-25 (BC)
	maxDateDays        = 2147483646           // 5881580-07-10
	maxTZOffset        = 16*3600 - 1
	microsPerDay       = 86_400_000_000
)

// Random returns a value of t: often an extreme from Ascending, else uniform
// over DuckDB's range or near zero. It panics for a type without a codec.
func Random(r *rand.Rand, t types.Type) types.Value {
	if ex := Extremes(t); len(ex) > 0 && r.IntN(8) == 0 {
		return ex[r.IntN(len(ex))]
	}
	small := r.IntN(4) == 0
	switch t.Kind {
	case types.KindBoolean:
		return types.BoolValue(r.IntN(2) == 1)
	case types.KindTinyInt, types.KindSmallInt, types.KindInteger, types.KindBigInt:
		bits := map[types.Kind]uint{types.KindTinyInt: 8, types.KindSmallInt: 16, types.KindInteger: 32, types.KindBigInt: 64}[t.Kind]
		if small {
			return types.IntValue(int64(r.IntN(21)) - 10)
		}
		return types.IntValue(int64(r.Uint64()) >> (64 - bits))
	case types.KindUTinyInt, types.KindUSmallInt, types.KindUInteger, types.KindUBigInt:
		bits := map[types.Kind]uint{types.KindUTinyInt: 8, types.KindUSmallInt: 16, types.KindUInteger: 32, types.KindUBigInt: 64}[t.Kind]
		if small {
			return types.UintValue(uint64(r.IntN(10)))
		}
		return types.UintValue(r.Uint64() >> (64 - bits))
	case types.KindHugeInt:
		if small {
			return types.Int128Value(types.Int128From(int64(r.IntN(21)) - 10))
		}
		return types.Int128Value(types.Int128{Hi: int64(r.Uint64()) >> r.IntN(64), Lo: r.Uint64()})
	case types.KindUHugeInt:
		return types.Uint128Value(types.Uint128{Hi: r.Uint64() >> r.IntN(65), Lo: r.Uint64()})
	case types.KindFloat:
		if small {
			return types.FloatValue(float64(float32(r.NormFloat64())))
		}
		for {
			f := math.Float32frombits(r.Uint32())
			if f == f {
				return types.FloatValue(float64(f))
			}
		}
	case types.KindDouble:
		if small {
			return types.FloatValue(r.NormFloat64() * 100)
		}
		for {
			f := math.Float64frombits(r.Uint64())
			if !math.IsNaN(f) {
				return types.FloatValue(f)
			}
		}
	case types.KindDecimal:
		n := 1 + r.IntN(int(t.Precision))
		var sb strings.Builder
		for range n {
			sb.WriteByte(byte('0' + r.IntN(10)))
		}
		z, _ := new(big.Int).SetString(sb.String(), 10)
		if r.IntN(2) == 0 {
			z.Neg(z)
		}
		x, _ := types.Int128FromBig(z)
		return types.Int128Value(x)
	case types.KindDate:
		if small {
			return types.IntValue(int64(r.IntN(40000)) - 20000)
		}
		return types.IntValue(minDateDays + r.Int64N(maxDateDays-minDateDays+1))
	case types.KindTime:
		return types.IntValue(r.Int64N(microsPerDay + 1))
	case types.KindTimeNS:
		return types.IntValue(r.Int64N(1000*microsPerDay + 1))
	case types.KindTimeTZ:
		// Whole minutes: DuckDB prints an offset of -07:00:52 as "-07:52",
		// so its text of offsets with seconds is lossy.
		return types.TimeTZValue(r.Int64N(microsPerDay+1), int32(r.IntN(2*maxTZOffset/60+1)-maxTZOffset/60)*60)
	case types.KindTimestamp, types.KindTimestampTZ, types.KindTimestampS, types.KindTimestampMS, types.KindTimestampNS:
		var lo, hi int64
		switch t.Kind {
		case types.KindTimestampS:
			lo, hi = minTimestampMicros/1_000_000, maxTimestampMicros/1_000_000
		case types.KindTimestampMS:
			lo, hi = minTimestampMicros/1_000, maxTimestampMicros/1_000
		case types.KindTimestampNS:
			// DuckDB reads TIMESTAMP_NS text through microseconds.
			lo, hi = -9_200_000_000_000_000_000, 9_200_000_000_000_000_000
		case types.KindTimestampTZ:
			// DuckDB formats TIMESTAMPTZ through ICU, whose double
			// milliseconds drift beyond ±2^53 ms (about 285,000 years).
			lo, hi = -(1<<52)*1000, (1<<52)*1000
		default:
			lo, hi = minTimestampMicros, maxTimestampMicros
		}
		if small {
			return types.IntValue(r.Int64N(2_000_000_000_000) - 1_000_000_000_000)
		}
		return types.IntValue(lo + int64(r.Uint64N(uint64(hi-lo)+1)))
	case types.KindInterval:
		return types.IntervalValue(types.Interval{
			Months: int32(r.IntN(2000) - 1000), Days: int32(r.IntN(2000) - 1000),
			Micros: r.Int64N(1<<50) - 1<<49,
		})
	case types.KindUUID:
		b := make([]byte, 16)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return types.BytesValue(b)
	case types.KindVarchar:
		runes := []rune{'a', 'b', 'z', 'A', ' ', '\'', 0x7f, 0xe9, 0x7ff, 0x800, 0xffff, 0x10000, 0x10ffff}
		rs := make([]rune, r.IntN(6))
		for i := range rs {
			rs[i] = runes[r.IntN(len(runes))]
		}
		return types.StringValue(string(rs))
	case types.KindBlob:
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = []byte{0x00, 0x01, 'A', '\\', '\'', 0x7f, 0x80, 0xff}[r.IntN(8)]
		}
		return types.BytesValue(b)
	case types.KindEnum:
		return types.UintValue(uint64(r.IntN(len(t.Labels))))
	}
	panic("typestest: no generator for " + t.String())
}
