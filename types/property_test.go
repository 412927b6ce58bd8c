package types

import (
	"bytes"
	"cmp"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

const propertyRounds = 20000

func newRand(t *testing.T) *rand.Rand {
	seed := uint64(0x5eed)
	t.Logf("seed %#x", seed)
	return rand.New(rand.NewPCG(seed, seed))
}

// checkOrder encodes a and b and asserts that bytes.Compare of the encodings
// is want, and that each value survives decode and its text form.
func checkOrder(t *testing.T, c *Codec, a, b Value, want int) {
	t.Helper()
	ea, err := c.Encode(a)
	if err != nil {
		t.Fatalf("%s: encode %#v: %v", c.Type(), a, err)
	}
	eb, err := c.Encode(b)
	if err != nil {
		t.Fatalf("%s: encode %#v: %v", c.Type(), b, err)
	}
	if got := bytes.Compare(ea, eb); got != want {
		t.Fatalf("%s: order of %#v vs %#v: got %d want %d", c.Type(), a, b, got, want)
	}
	for _, v := range []Value{a, b} {
		enc, _ := c.Encode(v)
		dec, err := c.Decode(enc)
		if err != nil {
			t.Fatalf("%s: decode: %v", c.Type(), err)
		}
		if re, _ := c.Encode(dec); !bytes.Equal(re, enc) {
			t.Fatalf("%s: decode(encode(%#v)) = %#v", c.Type(), v, dec)
		}
		text := c.Format(v)
		back, err := c.Parse(text)
		if err != nil {
			t.Fatalf("%s: parse(format(%#v)) = parse(%q): %v", c.Type(), v, text, err)
		}
		if re, _ := c.Encode(back); !bytes.Equal(re, enc) {
			t.Fatalf("%s: parse(format(%#v)) via %q = %#v", c.Type(), v, text, back)
		}
	}
}

func TestPropertySignedIntegers(t *testing.T) {
	r := newRand(t)
	for _, k := range []Kind{KindTinyInt, KindSmallInt, KindInteger, KindBigInt} {
		c, _ := CodecFor(Simple(k))
		lo, hi := signedRange(intWidths[k])
		gen := func() int64 {
			switch r.IntN(8) {
			case 0:
				return lo
			case 1:
				return hi
			case 2:
				return int64(r.IntN(5)) - 2
			}
			if k == KindBigInt {
				return int64(r.Uint64())
			}
			return lo + r.Int64N(hi-lo+1)
		}
		for range propertyRounds {
			a, b := gen(), gen()
			checkOrder(t, c, IntValue(a), IntValue(b), cmp.Compare(a, b))
		}
	}
}

func TestPropertyUnsignedIntegers(t *testing.T) {
	r := newRand(t)
	for _, k := range []Kind{KindUTinyInt, KindUSmallInt, KindUInteger, KindUBigInt} {
		c, _ := CodecFor(Simple(k))
		w := intWidths[k]
		gen := func() uint64 {
			u := r.Uint64()
			if r.IntN(4) == 0 {
				u = 1<<63 + uint64(r.IntN(3)) - 1 // around 2^63, where int64 readers go wrong
			}
			if w < 8 {
				u &= 1<<(8*w) - 1
			}
			return u
		}
		for range propertyRounds {
			a, b := gen(), gen()
			checkOrder(t, c, UintValue(a), UintValue(b), cmp.Compare(a, b))
		}
	}
}

func TestPropertyHugeInts(t *testing.T) {
	r := newRand(t)
	s, _ := CodecFor(Simple(KindHugeInt))
	u, _ := CodecFor(Simple(KindUHugeInt))
	gen := func() (Int128, Uint128) {
		hi, lo := r.Uint64(), r.Uint64()
		switch r.IntN(4) {
		case 0:
			hi = 0
		case 1:
			hi = math.MaxUint64
		}
		return Int128{Hi: int64(hi), Lo: lo}, Uint128{Hi: hi, Lo: lo}
	}
	for range propertyRounds {
		a, ua := gen()
		b, ub := gen()
		checkOrder(t, s, Int128Value(a), Int128Value(b), a.Big().Cmp(b.Big()))
		checkOrder(t, u, Uint128Value(ua), Uint128Value(ub), ua.Big().Cmp(ub.Big()))
	}
}

// floatOrder is DuckDB's order on non-NaN floats: numeric, with -0.0 = +0.0.
func floatOrder(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestPropertyFloats(t *testing.T) {
	r := newRand(t)
	d, _ := CodecFor(Simple(KindDouble))
	f, _ := CodecFor(Simple(KindFloat))
	specials := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.MaxFloat64,
		-math.MaxFloat64, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, 1, -1}
	gen64 := func() float64 {
		for {
			if r.IntN(5) == 0 {
				return specials[r.IntN(len(specials))]
			}
			x := math.Float64frombits(r.Uint64())
			if !math.IsNaN(x) {
				return x
			}
		}
	}
	gen32 := func() float64 {
		for {
			if r.IntN(5) == 0 {
				s := specials[r.IntN(len(specials))]
				if s == 0 || math.IsInf(s, 0) || s == 1 || s == -1 {
					return s
				}
			}
			x := math.Float32frombits(r.Uint32())
			if x == x {
				return float64(x)
			}
		}
	}
	for range propertyRounds {
		a, b := gen64(), gen64()
		checkOrder(t, d, FloatValue(a), FloatValue(b), floatOrder(a, b))
		a32, b32 := gen32(), gen32()
		checkOrder(t, f, FloatValue(a32), FloatValue(b32), floatOrder(a32, b32))
	}
}

func TestPropertyDecimals(t *testing.T) {
	r := newRand(t)
	for _, ty := range []Type{Decimal(4, 2), Decimal(18, 0), Decimal(18, 18), Decimal(19, 4), Decimal(38, 10), Decimal(38, 38)} {
		c, _ := CodecFor(ty)
		limit := pow10s[ty.Precision]
		gen := func() *big.Int {
			buf := make([]byte, 17)
			for i := range buf {
				buf[i] = byte(r.Uint32())
			}
			z := new(big.Int).SetBytes(buf[:1+r.IntN(16)])
			z.Mod(z, limit)
			if r.IntN(2) == 0 {
				z.Neg(z)
			}
			if r.IntN(10) == 0 {
				z.Sub(limit, big.NewInt(1)) // the largest magnitude
			}
			return z
		}
		for range propertyRounds / 4 {
			a, b := gen(), gen()
			ia, _ := Int128FromBig(a)
			ib, _ := Int128FromBig(b)
			checkOrder(t, c, Int128Value(ia), Int128Value(ib), a.Cmp(b))
		}
	}
}

func TestPropertyTemporal(t *testing.T) {
	r := newRand(t)
	for _, k := range []Kind{KindTimestamp, KindTimestampS, KindTimestampMS, KindTimestampNS, KindTimestampTZ} {
		c, _ := CodecFor(Simple(k))
		gen := func() int64 {
			switch r.IntN(6) {
			case 0:
				return int64(r.IntN(2_000_001)) - 1_000_000 // around the epoch
			case 1:
				return []int64{timestampInfinity, timestampNegInfinity}[r.IntN(2)]
			}
			x := int64(r.Uint64())
			if x == math.MinInt64 || x == timestampNegInfinity || x == timestampInfinity {
				return 0
			}
			if k != KindTimestampNS {
				// Keep within years DuckDB can print (±290,000 years of µs).
				x /= 1 << 3
			}
			return x
		}
		for range propertyRounds {
			a, b := gen(), gen()
			checkOrder(t, c, IntValue(a), IntValue(b), cmp.Compare(a, b))
		}
	}
	dc, _ := CodecFor(Simple(KindDate))
	for range propertyRounds {
		a, b := r.Int64N(2*dateInfinity-1)-dateInfinity+1, int64(r.IntN(200_000))-100_000
		checkOrder(t, dc, IntValue(a), IntValue(b), cmp.Compare(a, b))
	}
	tc, _ := CodecFor(Simple(KindTime))
	for range propertyRounds {
		a, b := r.Int64N(microsPerDay+1), r.Int64N(microsPerDay+1)
		checkOrder(t, tc, IntValue(a), IntValue(b), cmp.Compare(a, b))
	}
	tn, _ := CodecFor(Simple(KindTimeNS))
	for range propertyRounds {
		a, b := r.Int64N(nanosPerDay+1), r.Int64N(nanosPerDay+1)
		checkOrder(t, tn, IntValue(a), IntValue(b), cmp.Compare(a, b))
	}
	tz, _ := CodecFor(Simple(KindTimeTZ))
	for range propertyRounds {
		am, bm := r.Int64N(microsPerDay+1), r.Int64N(microsPerDay+1)
		ao, bo := int32(r.IntN(2*maxTZOffset+1)-maxTZOffset), int32(r.IntN(2*maxTZOffset+1)-maxTZOffset)
		if r.IntN(3) == 0 {
			ao, bo = ao/3600*3600, bo/3600*3600
			bm = am - int64(ao-bo)*1_000_000 // the same instant, other offsets
			if bm < 0 || bm > microsPerDay {
				bm = am
			}
		}
		want := cmp.Or(cmp.Compare(am-int64(ao)*1_000_000, bm-int64(bo)*1_000_000), cmp.Compare(bo, ao))
		checkOrder(t, tz, TimeTZValue(am, ao), TimeTZValue(bm, bo), want)
	}
}

func TestPropertyBytes(t *testing.T) {
	r := newRand(t)
	gen := func() []byte {
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = []byte{0x00, 0x01, 0x41, 0x7f, 0x80, 0xc3, 0xff}[r.IntN(7)]
		}
		return b
	}
	blob, _ := CodecFor(Simple(KindBlob))
	uuid, _ := CodecFor(Simple(KindUUID))
	for range propertyRounds {
		a, b := gen(), gen()
		checkOrder(t, blob, BytesValue(a), BytesValue(b), bytes.Compare(a, b))
		ua, ub := make([]byte, 16), make([]byte, 16)
		for i := range ua {
			ua[i], ub[i] = byte(r.Uint32()), byte(r.Uint32())
		}
		if r.IntN(2) == 0 {
			copy(ub, ua[:1+r.IntN(15)])
		}
		checkOrder(t, uuid, BytesValue(ua), BytesValue(ub), bytes.Compare(ua, ub))
	}
	vc, _ := CodecFor(Simple(KindVarchar))
	runes := []rune{'a', 'z', 'A', 0x7f, 0xe9, 0x7ff, 0x800, 0xffff, 0x10000, 0x10ffff}
	genS := func() string {
		rs := make([]rune, r.IntN(5))
		for i := range rs {
			rs[i] = runes[r.IntN(len(runes))]
		}
		return string(rs)
	}
	for range propertyRounds {
		a, b := genS(), genS()
		// Unsigned byte order of UTF-8 is code point order.
		want := cmp.Compare(a, b)
		checkOrder(t, vc, StringValue(a), StringValue(b), want)
	}
}

// TestDirectedRounding: Floor never exceeds the text's exact value and Ceil
// never falls below it, for decimals, integers, floats and timestamps.
func TestDirectedRounding(t *testing.T) {
	r := newRand(t)
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
		}
		return string(b)
	}
	for range 3000 {
		sign := []string{"", "-"}[r.IntN(2)]
		text := sign + digits(1+r.IntN(12)) + "." + digits(1+r.IntN(25))
		if r.IntN(4) == 0 {
			text += "e" + []string{"", "-"}[r.IntN(2)] + digits(1+r.IntN(2))
		}
		exact, ok := new(big.Rat).SetString(text)
		if !ok {
			t.Fatalf("bad test text %q", text)
		}
		for _, ty := range []Type{Decimal(38, 6), Decimal(38, 0), Simple(KindBigInt), Simple(KindDouble), Simple(KindFloat)} {
			c, _ := CodecFor(ty)
			lo, loExact, err1 := c.ParseRounded(text, Floor)
			hi, hiExact, err2 := c.ParseRounded(text, Ceil)
			if err1 != nil || err2 != nil {
				continue // out of range for the type
			}
			if math.IsInf(lo.F, 1) || math.IsInf(hi.F, -1) {
				t.Fatalf("%s: %q rounds outward to an infinity on the wrong side", ty, text)
			}
			if math.IsInf(lo.F, -1) || math.IsInf(hi.F, 1) {
				continue // beyond the float range: the infinity is the bound
			}
			ratOf := func(v Value) *big.Rat {
				switch ty.Kind {
				case KindDouble, KindFloat:
					return new(big.Rat).SetFloat64(v.F)
				}
				q := new(big.Rat).SetInt(v.I.Big())
				return q.Quo(q, new(big.Rat).SetInt(pow10s[ty.Scale]))
			}
			if ratOf(lo).Cmp(exact) > 0 || (loExact && ratOf(lo).Cmp(exact) != 0) {
				t.Fatalf("%s: Floor(%q) = %s above the value", ty, text, c.Format(lo))
			}
			if ratOf(hi).Cmp(exact) < 0 || (hiExact && ratOf(hi).Cmp(exact) != 0) {
				t.Fatalf("%s: Ceil(%q) = %s below the value", ty, text, c.Format(hi))
			}
			if cv, _ := c.CompareValues(lo, hi); cv > 0 {
				t.Fatalf("%s: Floor > Ceil for %q", ty, text)
			}
		}
	}
	ts, _ := CodecFor(Simple(KindTimestamp))
	for _, c := range []struct {
		text    string
		lo, hi  int64
		loExact bool
		nearest int64
	}{
		// Cast truncates below the unit, as DuckDB's CAST does.
		{"1970-01-01 00:00:00.0000005", 0, 1, false, 0},
		{"1969-12-31 23:59:59.9999999", -1, 0, false, -1},
		{"1970-01-01 00:00:00.000001000", 1, 1, true, 1},
	} {
		lo, loExact, _ := ts.ParseRounded(c.text, Floor)
		hi, _, _ := ts.ParseRounded(c.text, Ceil)
		n, _ := ts.Parse(c.text)
		if lo.Int64() != c.lo || hi.Int64() != c.hi || loExact != c.loExact || n.Int64() != c.nearest {
			t.Errorf("%q: floor %d ceil %d exact %v nearest %d; want %d %d %v %d", c.text,
				lo.Int64(), hi.Int64(), loExact, n.Int64(), c.lo, c.hi, c.loExact, c.nearest)
		}
	}
	// DuckDB's own answers for CAST(text AS type).
	for _, c := range []struct{ typ, text, want string }{
		{"time", "10:00:00.1234567", "10:00:00.123456"},
		{"time_ns", "10:00:00.1234567899", "10:00:00.123456789"},
		{"timestamp_ns", "1970-01-01 00:00:00.0000000009", "1970-01-01 00:00:00"},
		{"timestamp_ns", "2020-01-01 10:00:00+05", "2020-01-01 05:00:00"},
		{"timestamp", "2020-01-01 10:00:00+05", "2020-01-01 10:00:00"},
		{"timestamp_s", "2024-01-01 10:00:00.5", "2024-01-01 10:00:01"},
		{"timestamp_ms", "2024-01-01 10:00:00.0005", "2024-01-01 10:00:00.001"},
		{"timestamptz", "2024-01-01 10:00:00.9999999+00", "2024-01-01 10:00:00.999999+00"},
	} {
		codec, _ := CodecFor(MustParseType(c.typ))
		v, err := codec.Parse(c.text)
		if err != nil || codec.Format(v) != c.want {
			t.Errorf("%s %q: cast gives %q (%v), DuckDB gives %q", c.typ, c.text, codec.Format(v), err, c.want)
		}
	}
	dec, _ := CodecFor(Decimal(10, 2))
	for _, c := range []struct{ text, floor, ceil, nearest string }{
		{"1.235", "1.23", "1.24", "1.24"},
		{"-1.235", "-1.24", "-1.23", "-1.24"},
		{"1.2349", "1.23", "1.24", "1.23"},
		{"0.001", "0.00", "0.01", "0.00"},
		{"-0.001", "-0.01", "0.00", "0.00"},
		{"1e-30", "0.00", "0.01", "0.00"},
	} {
		f, _, _ := dec.ParseRounded(c.text, Floor)
		ce, _, _ := dec.ParseRounded(c.text, Ceil)
		n, _ := dec.Parse(c.text)
		if dec.Format(f) != c.floor || dec.Format(ce) != c.ceil || dec.Format(n) != c.nearest {
			t.Errorf("%q: floor %s ceil %s nearest %s; want %s %s %s", c.text,
				dec.Format(f), dec.Format(ce), dec.Format(n), c.floor, c.ceil, c.nearest)
		}
	}
}
