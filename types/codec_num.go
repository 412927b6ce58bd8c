package types

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strings"
)

func boolCodec() *Codec {
	return &Codec{
		typ: Simple(KindBoolean), width: 1, ordered: true,
		enc: func(dst []byte, v Value) ([]byte, error) {
			if v.Bool() {
				return append(dst, 1), nil
			}
			return append(dst, 0), nil
		},
		dec: func(b []byte) (Value, error) {
			if b[0] > 1 {
				return Value{}, fmt.Errorf("BOOLEAN: bad encoding 0x%02x", b[0])
			}
			return BoolValue(b[0] == 1), nil
		},
		format: func(v Value) string {
			if v.Bool() {
				return "true"
			}
			return "false"
		},
		parse: func(s string, _ Rounding) (Value, bool, error) {
			switch strings.ToLower(strings.TrimSpace(s)) {
			case "true", "t", "1", "yes", "y", "on":
				return BoolValue(true), true, nil
			case "false", "f", "0", "no", "n", "off":
				return BoolValue(false), true, nil
			}
			return Value{}, false, fmt.Errorf("%q is not a BOOLEAN", s)
		},
	}
}

var intWidths = map[Kind]int{
	KindTinyInt: 1, KindSmallInt: 2, KindInteger: 4, KindBigInt: 8,
	KindUTinyInt: 1, KindUSmallInt: 2, KindUInteger: 4, KindUBigInt: 8,
}

// appendBiased appends the low w bytes of x big-endian with the sign bit of
// a w-byte integer flipped, which maps the signed range onto the unsigned
// one in order (-128 → 0x00, 0 → 0x80, 127 → 0xff for w = 1).
func appendBiased(dst []byte, x int64, w int) []byte {
	u := uint64(x) ^ (1 << (8*w - 1))
	for i := w - 1; i >= 0; i-- {
		dst = append(dst, byte(u>>(8*i)))
	}
	return dst
}

func readBiased(b []byte) int64 {
	w := len(b)
	var u uint64
	for _, c := range b {
		u = u<<8 | uint64(c)
	}
	u ^= 1 << (8*w - 1)
	// Sign-extend from w bytes.
	shift := 64 - 8*w
	return int64(u<<shift) >> shift
}

func appendUint(dst []byte, u uint64, w int) []byte {
	for i := w - 1; i >= 0; i-- {
		dst = append(dst, byte(u>>(8*i)))
	}
	return dst
}

func signedRange(w int) (int64, int64) {
	if w == 8 {
		return math.MinInt64, math.MaxInt64
	}
	return -(1 << (8*w - 1)), 1<<(8*w-1) - 1
}

// intRange is what AppendInt and AppendUint need of an integer codec.
type intRange struct {
	signed, unsigned bool
	lo, hi           int64  // signed
	uhi              uint64 // unsigned
}

// AppendInt appends the encoding of IntValue(x): the same bytes and the
// same error as Append, without making a Value, for the loops that encode
// every value of a column (a membership filter's build reads millions).
func (c *Codec) AppendInt(dst []byte, x int64) ([]byte, error) {
	if r := &c.ints; r.signed && x >= r.lo && x <= r.hi {
		if c.width == 8 {
			return binary.BigEndian.AppendUint64(dst, uint64(x)^(1<<63)), nil
		}
		return appendBiased(dst, x, c.width), nil
	}
	return c.enc(dst, IntValue(x))
}

// AppendUint is AppendInt of UintValue(x).
func (c *Codec) AppendUint(dst []byte, x uint64) ([]byte, error) {
	if r := &c.ints; r.unsigned && x <= r.uhi {
		if c.width == 8 {
			return binary.BigEndian.AppendUint64(dst, x), nil
		}
		return appendUint(dst, x, c.width), nil
	}
	return c.enc(dst, UintValue(x))
}

func signedCodec(k Kind) *Codec {
	w := intWidths[k]
	lo, hi := signedRange(w)
	bigLo, bigHi := big.NewInt(lo), big.NewInt(hi)
	return &Codec{
		typ: Simple(k), width: w, ordered: true,
		ints: intRange{signed: true, lo: lo, hi: hi},
		enc: func(dst []byte, v Value) ([]byte, error) {
			if !v.I.IsInt64() || v.Int64() < lo || v.Int64() > hi {
				return dst, fmt.Errorf("%s: %s: %w", kindName(k), v.I, ErrOutOfRange)
			}
			return appendBiased(dst, v.Int64(), w), nil
		},
		dec:    func(b []byte) (Value, error) { return IntValue(readBiased(b)), nil },
		format: func(v Value) string { return v.I.String() },
		parse: func(s string, r Rounding) (Value, bool, error) {
			z, exact, err := parseIntegerText(s, r)
			if err != nil {
				return Value{}, false, fmt.Errorf("%s: %w", kindName(k), err)
			}
			if z.Cmp(bigLo) < 0 || z.Cmp(bigHi) > 0 {
				return Value{}, false, fmt.Errorf("%s: %q: %w", kindName(k), s, ErrOutOfRange)
			}
			return IntValue(z.Int64()), exact, nil
		},
	}
}

func unsignedCodec(k Kind) *Codec {
	w := intWidths[k]
	hi := uint64(math.MaxUint64)
	if w < 8 {
		hi = 1<<(8*w) - 1
	}
	bigHi := new(big.Int).SetUint64(hi)
	return &Codec{
		typ: Simple(k), width: w, ordered: true,
		ints: intRange{unsigned: true, uhi: hi},
		enc: func(dst []byte, v Value) ([]byte, error) {
			if v.U.Hi != 0 || v.U.Lo > hi {
				return dst, fmt.Errorf("%s: %s: %w", kindName(k), v.U, ErrOutOfRange)
			}
			return appendUint(dst, v.U.Lo, w), nil
		},
		dec: func(b []byte) (Value, error) {
			var u uint64
			for _, c := range b {
				u = u<<8 | uint64(c)
			}
			return UintValue(u), nil
		},
		format: func(v Value) string { return v.U.String() },
		parse: func(s string, r Rounding) (Value, bool, error) {
			z, exact, err := parseIntegerText(s, r)
			if err != nil {
				return Value{}, false, fmt.Errorf("%s: %w", kindName(k), err)
			}
			if z.Sign() < 0 || z.Cmp(bigHi) > 0 {
				return Value{}, false, fmt.Errorf("%s: %q: %w", kindName(k), s, ErrOutOfRange)
			}
			return UintValue(z.Uint64()), exact, nil
		},
	}
}

func appendInt128(dst []byte, x Int128) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(x.Hi)^(1<<63))
	return binary.BigEndian.AppendUint64(dst, x.Lo)
}

func readInt128(b []byte) Int128 {
	return Int128{Hi: int64(binary.BigEndian.Uint64(b) ^ (1 << 63)), Lo: binary.BigEndian.Uint64(b[8:])}
}

func hugeintCodec() *Codec {
	return &Codec{
		typ: Simple(KindHugeInt), width: 16, ordered: true,
		enc:    func(dst []byte, v Value) ([]byte, error) { return appendInt128(dst, v.I), nil },
		dec:    func(b []byte) (Value, error) { return Int128Value(readInt128(b)), nil },
		format: func(v Value) string { return v.I.String() },
		parse: func(s string, r Rounding) (Value, bool, error) {
			z, exact, err := parseIntegerText(s, r)
			if err != nil {
				return Value{}, false, fmt.Errorf("HUGEINT: %w", err)
			}
			x, ok := Int128FromBig(z)
			if !ok {
				return Value{}, false, fmt.Errorf("HUGEINT: %q: %w", s, ErrOutOfRange)
			}
			return Int128Value(x), exact, nil
		},
	}
}

func uhugeintCodec() *Codec {
	return &Codec{
		typ: Simple(KindUHugeInt), width: 16, ordered: true,
		enc: func(dst []byte, v Value) ([]byte, error) {
			dst = binary.BigEndian.AppendUint64(dst, v.U.Hi)
			return binary.BigEndian.AppendUint64(dst, v.U.Lo), nil
		},
		dec: func(b []byte) (Value, error) {
			return Uint128Value(Uint128{Hi: binary.BigEndian.Uint64(b), Lo: binary.BigEndian.Uint64(b[8:])}), nil
		},
		format: func(v Value) string { return v.U.String() },
		parse: func(s string, r Rounding) (Value, bool, error) {
			z, exact, err := parseIntegerText(s, r)
			if err != nil {
				return Value{}, false, fmt.Errorf("UHUGEINT: %w", err)
			}
			x, ok := Uint128FromBig(z)
			if !ok {
				return Value{}, false, fmt.Errorf("UHUGEINT: %q: %w", s, ErrOutOfRange)
			}
			return Uint128Value(x), exact, nil
		},
	}
}

// Floats: a positive value gets its sign bit set, a negative one has every
// bit inverted, so unsigned byte order is numeric order with -inf lowest and
// +inf highest. Both zeros encode as +0.0: DuckDB holds -0.0 = +0.0, so one
// encoding for both means a bound can never exclude either zero (a lower
// bound of 0 admits -0.0, an upper bound of 0 admits +0.0) and a comparison on
// encodings agrees with DuckDB's. Decoding a zero gives +0.0. NaN has no
// encoding (ErrNaN): DuckDB sorts it above +inf, and the caller records
// contains_nan instead of widening a bound to it.
func floatCodec(k Kind) *Codec {
	w, bitSize := 8, 64
	if k == KindFloat {
		w, bitSize = 4, 32
	}
	return &Codec{
		typ: Simple(k), width: w, ordered: true,
		enc: func(dst []byte, v Value) ([]byte, error) {
			f := v.F
			if math.IsNaN(f) {
				return dst, fmt.Errorf("%s: %w", kindName(k), ErrNaN)
			}
			if f == 0 {
				f = 0 // folds -0.0 into +0.0
			}
			if w == 4 {
				f32 := float32(f)
				if float64(f32) != f {
					return dst, fmt.Errorf("FLOAT: %v is not a FLOAT value: %w", f, ErrOutOfRange)
				}
				u := math.Float32bits(f32)
				if u>>31 == 1 {
					u = ^u
				} else {
					u |= 1 << 31
				}
				return binary.BigEndian.AppendUint32(dst, u), nil
			}
			u := math.Float64bits(f)
			if u>>63 == 1 {
				u = ^u
			} else {
				u |= 1 << 63
			}
			return binary.BigEndian.AppendUint64(dst, u), nil
		},
		dec: func(b []byte) (Value, error) {
			if w == 4 {
				u := binary.BigEndian.Uint32(b)
				if u>>31 == 1 {
					u &^= 1 << 31
				} else {
					u = ^u
				}
				f := math.Float32frombits(u)
				if f != f {
					return Value{}, fmt.Errorf("FLOAT: encoding decodes to NaN")
				}
				if f == 0 && u != 0 {
					// -0.0 is always encoded as +0.0; the other pattern
					// would sort below every zero bound.
					return Value{}, fmt.Errorf("FLOAT: non-canonical encoding of -0.0")
				}
				return FloatValue(float64(f)), nil
			}
			u := binary.BigEndian.Uint64(b)
			if u>>63 == 1 {
				u &^= 1 << 63
			} else {
				u = ^u
			}
			f := math.Float64frombits(u)
			if math.IsNaN(f) {
				return Value{}, fmt.Errorf("DOUBLE: encoding decodes to NaN")
			}
			if f == 0 && u != 0 {
				return Value{}, fmt.Errorf("DOUBLE: non-canonical encoding of -0.0")
			}
			return FloatValue(f), nil
		},
		format: func(v Value) string { return formatFloat(v.F, bitSize) },
		parse: func(s string, r Rounding) (Value, bool, error) {
			f, exact, err := parseFloatText(s, bitSize, r)
			if err != nil {
				return Value{}, false, fmt.Errorf("%s: %w", kindName(k), err)
			}
			return FloatValue(f), exact, nil
		},
	}
}

// pow10s[p] = 10^p as big.Int, for decimal range checks.
var pow10s = func() []*big.Int {
	out := make([]*big.Int, 40)
	for i := range out {
		out[i] = new(big.Int).Exp(bigTen, big.NewInt(int64(i)), nil)
	}
	return out
}()

// decimalCodec stores the unscaled integer at the column's scale: 8 biased
// bytes up to precision 18, 16 above. Encodings of two different scales do
// not compare; a caller rescales first.
func decimalCodec(t Type) (*Codec, bool) {
	p, sc := int(t.Precision), int(t.Scale)
	if p < 1 || p > 38 || sc > p {
		return nil, false
	}
	w := 8
	if p > 18 {
		w = 16
	}
	// 10^38 < 2^127, so the limits are Int128s and the range check, run on
	// every encode and decode, needs no big.Int.
	limit, _ := Int128FromBig(pow10s[p])
	negLimit := limit.Neg()
	inRange := func(x Int128) bool { return x.Cmp(limit) < 0 && x.Cmp(negLimit) > 0 }
	name := t.String() // for errors
	return &Codec{
		typ: t, width: w, ordered: true,
		enc: func(dst []byte, v Value) ([]byte, error) {
			if !inRange(v.I) {
				return dst, fmt.Errorf("%s: unscaled %s: %w", name, v.I, ErrOutOfRange)
			}
			if w == 8 {
				return appendBiased(dst, v.Int64(), 8), nil
			}
			return appendInt128(dst, v.I), nil
		},
		dec: func(b []byte) (Value, error) {
			var x Int128
			if w == 8 {
				x = Int128From(readBiased(b))
			} else {
				x = readInt128(b)
			}
			if !inRange(x) {
				return Value{}, fmt.Errorf("%s: decoded %s: %w", name, x, ErrOutOfRange)
			}
			return Int128Value(x), nil
		},
		format: func(v Value) string { return formatDecimal(v.I.Big(), sc) },
		parse: func(s string, r Rounding) (Value, bool, error) {
			mant, exp, err := parseNumberText(s)
			if err != nil {
				return Value{}, false, fmt.Errorf("%s: %w", name, err)
			}
			z, exact := roundScaled(mant, exp+sc, r)
			x, fits := Int128FromBig(z)
			if !fits || !inRange(x) {
				return Value{}, false, fmt.Errorf("%s: %q: %w", name, s, ErrOutOfRange)
			}
			return Int128Value(x), exact, nil
		},
	}, true
}

// formatDecimal writes an unscaled integer with exactly scale fraction
// digits, as DuckDB does (1.5 in DECIMAL(10,2) is "1.50").
func formatDecimal(z *big.Int, scale int) string {
	neg := z.Sign() < 0
	digits := new(big.Int).Abs(z).String()
	if scale > 0 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// NegativeZero says s is a FLOAT or DOUBLE zero written with its sign
// (-0, -0.0, -0e5). Codecs read it as 0, as statistics bounds must (the
// two compare equal), but DuckDB's CAST keeps the sign: where the text is
// the value itself (a partition directory's), the two readings differ.
func NegativeZero(t Type, s string) bool {
	if t.Kind != KindFloat && t.Kind != KindDouble {
		return false
	}
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "-") {
		return false
	}
	c, ok := CodecFor(t)
	if !ok {
		return false
	}
	v, err := c.Parse(s)
	return err == nil && v.F == 0
}
