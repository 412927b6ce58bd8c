package types

import (
	"bytes"
	"fmt"
	"math/big"
	"math/bits"
)

// Int128 is a two's complement signed 128-bit integer (HUGEINT, and the
// unscaled value of a DECIMAL).
type Int128 struct {
	Hi int64
	Lo uint64
}

// Uint128 is an unsigned 128-bit integer (UHUGEINT).
type Uint128 struct {
	Hi, Lo uint64
}

// Int128From widens an int64.
func Int128From(x int64) Int128 { return Int128{Hi: x >> 63, Lo: uint64(x)} }

// Cmp returns -1, 0 or +1.
func (a Int128) Cmp(b Int128) int {
	switch {
	case a.Hi < b.Hi:
		return -1
	case a.Hi > b.Hi:
		return 1
	case a.Lo < b.Lo:
		return -1
	case a.Lo > b.Lo:
		return 1
	}
	return 0
}

// IsInt64 reports whether the value fits an int64.
func (a Int128) IsInt64() bool { return a.Hi == int64(a.Lo)>>63 }

// Big returns the value as a big.Int.
func (a Int128) Big() *big.Int {
	z := new(big.Int).SetInt64(a.Hi)
	z.Lsh(z, 64)
	return z.Or(z, new(big.Int).SetUint64(a.Lo))
}

// Neg returns -a (wrapping at the minimum, like two's complement).
func (a Int128) Neg() Int128 {
	lo, borrow := bits.Sub64(0, a.Lo, 0)
	hi, _ := bits.Sub64(0, uint64(a.Hi), borrow)
	return Int128{Hi: int64(hi), Lo: lo}
}

func (a Int128) String() string { return a.Big().String() }

var (
	two64      = new(big.Int).Lsh(big.NewInt(1), 64)
	minInt128  = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 127))
	maxInt128  = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 127), big.NewInt(1))
	maxUint128 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))
	mask64     = new(big.Int).Sub(two64, big.NewInt(1))
)

// Int128FromBig converts z, reporting false when it does not fit.
func Int128FromBig(z *big.Int) (Int128, bool) {
	if z.Cmp(minInt128) < 0 || z.Cmp(maxInt128) > 0 {
		return Int128{}, false
	}
	lo := new(big.Int).And(z, mask64).Uint64()
	hi := new(big.Int).Rsh(z, 64).Int64()
	return Int128{Hi: hi, Lo: lo}, true
}

// Cmp returns -1, 0 or +1.
func (a Uint128) Cmp(b Uint128) int {
	switch {
	case a.Hi < b.Hi:
		return -1
	case a.Hi > b.Hi:
		return 1
	case a.Lo < b.Lo:
		return -1
	case a.Lo > b.Lo:
		return 1
	}
	return 0
}

// Big returns the value as a big.Int.
func (a Uint128) Big() *big.Int {
	z := new(big.Int).SetUint64(a.Hi)
	z.Lsh(z, 64)
	return z.Or(z, new(big.Int).SetUint64(a.Lo))
}

func (a Uint128) String() string { return a.Big().String() }

// Uint128FromBig converts z, reporting false when it does not fit.
func Uint128FromBig(z *big.Int) (Uint128, bool) {
	if z.Sign() < 0 || z.Cmp(maxUint128) > 0 {
		return Uint128{}, false
	}
	lo := new(big.Int).And(z, mask64).Uint64()
	hi := new(big.Int).Rsh(z, 64).Uint64()
	return Uint128{Hi: hi, Lo: lo}, true
}

// Interval is DuckDB's INTERVAL: three independent parts, so it has no total
// order (1 month vs 30 days) and is never used to prune.
type Interval struct {
	Months int32
	Days   int32
	Micros int64
}

// Value is one non-NULL scalar in the physical form of its type. Which field
// holds it depends on the type, and a Value means nothing without one:
//
//	boolean                       I (0 or 1)
//	tinyint … hugeint             I (Int128, sign-extended)
//	utinyint … uhugeint           U
//	float, double                 F (a float's value is exactly a float32)
//	decimal(p,s)                  I, the unscaled integer at scale s
//	date                          I, days since 1970-01-01
//	time                          I, microseconds since midnight
//	time_ns                       I, nanoseconds since midnight
//	timetz                        I, local microseconds; Offset, seconds east of UTC
//	timestamp, _s, _ms, _ns, tz   I, units since the Unix epoch (UTC for tz)
//	interval                      Interval
//	uuid                          B, 16 bytes in RFC 4122 order
//	varchar, blob                 B
//	enum                          U, the dictionary index
type Value struct {
	I        Int128
	U        Uint128
	F        float64
	B        []byte
	Interval Interval
	Offset   int32
}

// Constructors for the common cases.

func BoolValue(b bool) Value {
	if b {
		return Value{I: Int128From(1)}
	}
	return Value{}
}
func IntValue(x int64) Value         { return Value{I: Int128From(x)} }
func Int128Value(x Int128) Value     { return Value{I: x} }
func UintValue(x uint64) Value       { return Value{U: Uint128{Lo: x}} }
func Uint128Value(x Uint128) Value   { return Value{U: x} }
func FloatValue(f float64) Value     { return Value{F: f} }
func BytesValue(b []byte) Value      { return Value{B: b} }
func StringValue(s string) Value     { return Value{B: []byte(s)} }
func IntervalValue(i Interval) Value { return Value{Interval: i} }

// TimeTZValue is a local time of day in microseconds with its UTC offset in
// seconds (east positive).
func TimeTZValue(micros int64, offsetSeconds int32) Value {
	return Value{I: Int128From(micros), Offset: offsetSeconds}
}

// Int64 returns I as an int64 (callers know the type fits).
func (v Value) Int64() int64 { return int64(v.I.Lo) }

// Uint64 returns the low word of U.
func (v Value) Uint64() uint64 { return v.U.Lo }

// Bool returns I as a boolean.
func (v Value) Bool() bool { return v.I.Lo != 0 }

// Same reports whether two values hold the same representation (floats
// compared with ==, so -0.0 and +0.0 are the same).
func (v Value) Same(o Value) bool {
	return v.I == o.I && v.U == o.U && v.F == o.F && bytes.Equal(v.B, o.B) &&
		v.Interval == o.Interval && v.Offset == o.Offset
}

// GoString helps test failure messages.
func (v Value) GoString() string {
	return fmt.Sprintf("Value{I:%s U:%s F:%g B:%q Interval:%+v Offset:%d}", v.I, v.U, v.F, v.B, v.Interval, v.Offset)
}
