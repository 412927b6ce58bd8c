package types

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func TestEncodingExamples(t *testing.T) {
	cases := []struct {
		typ, text string
		want      []byte
	}{
		{"int8", "-128", []byte{0x00}},
		{"int8", "0", []byte{0x80}},
		{"int8", "127", []byte{0xff}},
		{"int16", "-1", []byte{0x7f, 0xff}},
		{"int32", "1", []byte{0x80, 0, 0, 1}},
		{"uint16", "258", []byte{1, 2}},
		{"boolean", "true", []byte{1}},
		{"float64", "0.0", []byte{0x80, 0, 0, 0, 0, 0, 0, 0}},
		{"float64", "-0.0", []byte{0x80, 0, 0, 0, 0, 0, 0, 0}},
		{"float32", "1.0", []byte{0xbf, 0x80, 0, 0}},
		{"float32", "-1.0", []byte{0x40, 0x7f, 0xff, 0xff}},
		{"decimal(10,2)", "123.45", []byte{0x80, 0, 0, 0, 0, 0, 0x30, 0x39}},
		{"date", "1970-01-02", []byte{0x80, 0, 0, 1}},
		{"time", "00:00:01", []byte{0x80, 0, 0, 0, 0, 0x0f, 0x42, 0x40}},
		{"time_ns", "00:00:01", []byte{0x80, 0, 0, 0, 0x3b, 0x9a, 0xca, 0}},
		{"timestamp_s", "1970-01-01 00:00:01", []byte{0x80, 0, 0, 0, 0, 0, 0, 1}},
		{"timestamptz", "1970-01-01 01:00:01+01", []byte{0x80, 0, 0, 0, 0, 0x0f, 0x42, 0x40}},
		{"enum('x','y')", "y", []byte{0, 0, 0, 1}},
		{"varchar", "h\u00e9", []byte{'h', 0xc3, 0xa9}},
	}
	for _, c := range cases {
		codec, _ := CodecFor(MustParseType(c.typ))
		v, err := codec.Parse(c.text)
		if err != nil {
			t.Fatalf("%s %q: %v", c.typ, c.text, err)
		}
		got, err := codec.Append([]byte("prefix"), v)
		if err != nil {
			t.Fatalf("%s %q: %v", c.typ, c.text, err)
		}
		if !bytes.Equal(got[6:], c.want) || string(got[:6]) != "prefix" {
			t.Errorf("%s %q: got % x, want prefix + % x", c.typ, c.text, got, c.want)
		}
	}
}

func TestNaNIsNeverABound(t *testing.T) {
	for _, typ := range []string{"float32", "float64"} {
		c, _ := CodecFor(MustParseType(typ))
		for _, text := range []string{"nan", "NaN", "-nan"} {
			v, err := c.Parse(text)
			if err != nil || !math.IsNaN(v.F) {
				t.Fatalf("%s: parse %q = %v, %v", typ, text, v.F, err)
			}
			if _, err := c.Encode(v); !errors.Is(err, ErrNaN) {
				t.Errorf("%s: encoding NaN: want ErrNaN, got %v", typ, err)
			}
			if _, err := c.CompareValues(v, FloatValue(1)); !errors.Is(err, ErrNaN) {
				t.Errorf("%s: comparing NaN: want ErrNaN, got %v", typ, err)
			}
		}
		// No encoding decodes to NaN either: the all-ones pattern below +inf
		// would be a NaN if decoding did not check.
		nanEnc := bytes.Repeat([]byte{0xff}, c.Width())
		if _, err := c.Decode(nanEnc); err == nil {
			t.Errorf("%s: decoding a NaN bit pattern must fail", typ)
		}
	}
}

// TestSignedZeroRule: a bound computed from data holding -0.0 must admit
// +0.0 and the reverse, since DuckDB holds them equal.
func TestSignedZeroRule(t *testing.T) {
	for _, typ := range []string{"float32", "float64"} {
		c, _ := CodecFor(MustParseType(typ))
		neg, _ := c.Encode(FloatValue(math.Copysign(0, -1)))
		pos, _ := c.Encode(FloatValue(0))
		if !bytes.Equal(neg, pos) {
			t.Errorf("%s: -0.0 and +0.0 encode differently: % x vs % x", typ, neg, pos)
		}
		tiny, _ := c.Encode(FloatValue(-math.SmallestNonzeroFloat64))
		if typ == "float32" {
			tiny, _ = c.Encode(FloatValue(float64(-math.SmallestNonzeroFloat32)))
		}
		if bytes.Compare(tiny, neg) >= 0 {
			t.Errorf("%s: the smallest negative must sort below both zeros", typ)
		}
	}
}

func TestIntervalRoundTrip(t *testing.T) {
	c, _ := CodecFor(MustParseType("interval"))
	cases := map[string]Interval{
		"1 year 2 months 3 days 04:05:06.789": {Months: 14, Days: 3, Micros: 14706789000},
		"-1 day":                              {Days: -1},
		"00:00:00":                            {},
		"-02:00:00":                           {Micros: -7200000000},
		"-1 year -2 months":                   {Months: -14},
		"1 month -3 days":                     {Months: 1, Days: -3},
		"36:00:00":                            {Micros: 129600000000},
	}
	for text, want := range cases {
		v, err := c.Parse(text)
		if err != nil || v.Interval != want {
			t.Errorf("parse %q = %+v, %v; want %+v", text, v.Interval, err, want)
			continue
		}
		if got := c.Format(v); got != text {
			t.Errorf("format %+v = %q, want %q", want, got, text)
		}
		enc, _ := c.Encode(v)
		dec, err := c.Decode(enc)
		if err != nil || dec.Interval != want {
			t.Errorf("decode(encode(%q)) = %+v, %v", text, dec.Interval, err)
		}
	}
	for _, bad := range []string{"", "1", "1 fortnight", "x days", "1:xx:00"} {
		if _, err := c.Parse(bad); err == nil {
			t.Errorf("parse %q: want an error", bad)
		}
	}
}

func TestTolerantParse(t *testing.T) {
	same := []struct {
		typ  string
		a, b string
	}{
		{"boolean", "1", "true"}, {"boolean", "T", "true"}, {"boolean", "0", "false"}, {"boolean", "FALSE", "f"},
		{"float64", "infinity", "inf"}, {"float64", "-Infinity", "-inf"}, {"float64", "+inf", "inf"},
		{"float64", "1e2", "100"}, {"float32", " 1.5 ", "1.5"},
		{"decimal(10,3)", "1.5", "1.500"}, {"decimal(10,3)", "1.50000", "1.5"}, {"decimal(10,3)", "1", "1.000"},
		{"decimal(10,3)", "1.5e1", "15"}, {"decimal(10,3)", "-.5", "-0.500"},
		{"int32", "1e3", "1000"}, {"int32", "+7", "7"},
		{"timestamp", "2024-01-02T03:04:05", "2024-01-02 03:04:05"},
		{"timestamp", "2024-01-02 03:04:05.120000000", "2024-01-02 03:04:05.12"},
		{"timestamp", "2024-01-02", "2024-01-02 00:00:00"},
		{"timestamp", "2024-01-02 03:04", "2024-01-02 03:04:00"},
		{"timestamp_ns", "2024-01-02 03:04:05.123456789", "2024-01-02T03:04:05.123456789"},
		{"timestamptz", "2024-01-02 03:04:05+00", "2024-01-02T03:04:05Z"},
		{"timestamptz", "2024-01-02 05:34:05+02:30", "2024-01-02 03:04:05 UTC"},
		{"timestamptz", "2024-01-02 05:34:05+0230", "2024-01-02 03:04:05+00:00"},
		{"timestamptz", "2024-01-01 19:04:05-08", "2024-01-02 03:04:05+00"},
		{"date", "-0044-03-15", "0045-03-15 (BC)"},
		{"uuid", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{"uuid", "{a0eebc999c0b4ef8bb6d6bb9bd380a11}", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{"blob", `\x41\x42`, "AB"}, {"blob", `\xab`, `\xAB`},
		{"timetz", "12:00:00+05:30", "12:00:00+0530"},
	}
	for _, c := range same {
		codec, _ := CodecFor(MustParseType(c.typ))
		va, err := codec.Parse(c.a)
		if err != nil {
			t.Errorf("%s: parse %q: %v", c.typ, c.a, err)
			continue
		}
		vb, err := codec.Parse(c.b)
		if err != nil {
			t.Errorf("%s: parse %q: %v", c.typ, c.b, err)
			continue
		}
		if cmp, err := codec.CompareValues(va, vb); err != nil || cmp != 0 {
			t.Errorf("%s: %q and %q differ (%d, %v)", c.typ, c.a, c.b, cmp, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	bad := []struct {
		typ, text string
		is        error
	}{
		{"timestamptz", "2024-01-02 03:04:05", ErrNoOffset},
		{"timetz", "12:00:00", ErrNoOffset},
		{"int8", "128", ErrOutOfRange},
		{"int8", "-129", ErrOutOfRange},
		{"uint8", "-1", ErrOutOfRange},
		{"uint64", "18446744073709551616", ErrOutOfRange},
		{"int128", "170141183460469231731687303715884105728", ErrOutOfRange},
		{"decimal(4,2)", "100.00", ErrOutOfRange},
		{"decimal(4,2)", "99.995", ErrOutOfRange}, // rounds to 100.00
		{"timestamp_ns", "2262-04-12 00:00:00", ErrOutOfRange},
		{"timestamp_ns", "1677-09-21 00:00:00", ErrOutOfRange},
		{"float32", "1e39", ErrOutOfRange},
		{"time", "24:00:00.000001", nil},
		{"time_ns", "24:00:00.000000001", nil},
		{"time", "25:00:00", nil},
		{"date", "2023-02-29", nil},
		{"date", "2024-13-01", nil},
		{"date", "0000-01-01 (BC)", nil},
		{"date", "2024-01-01 junk", nil},
		{"int32", "12abc", nil},
		{"int32", "", nil},
		{"float64", "1.2.3", nil},
		{"boolean", "maybe", nil},
		{"uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", nil},
		{"uuid", "a0eebc99x9c0b-4ef8-bb6d-6bb9bd380a11", nil},
		{"blob", `\xZZ`, nil},
		{"blob", `\x4`, nil},
		{"blob", `a\b`, nil},
		{"enum('a')", "b", nil},
		{"timestamp", "2024-01-01 12:00:00+99", nil},
	}
	for _, c := range bad {
		codec, _ := CodecFor(MustParseType(c.typ))
		_, err := codec.Parse(c.text)
		if err == nil {
			t.Errorf("%s: parse %q: want an error", c.typ, c.text)
			continue
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: parse %q: got %v, want %v", c.typ, c.text, err, c.is)
		}
	}
}

func TestEncodeRangeChecks(t *testing.T) {
	bad := []struct {
		typ string
		v   Value
	}{
		{"int8", IntValue(128)},
		{"int16", IntValue(-32769)},
		{"int32", Int128Value(Int128{Hi: 1})},
		{"uint8", UintValue(256)},
		{"uint64", Uint128Value(Uint128{Hi: 1})},
		{"float32", FloatValue(0.1)}, // not a float32 value
		{"decimal(4,2)", IntValue(10000)},
		{"decimal(20,2)", Int128Value(Int128FromBigMust("100000000000000000000"))},
		{"time", IntValue(-1)},
		{"time", IntValue(microsPerDay + 1)},
		{"time_ns", IntValue(-1)},
		{"time_ns", IntValue(nanosPerDay + 1)},
		{"timetz", TimeTZValue(0, 16*3600)},
		{"uuid", BytesValue([]byte{1, 2})},
		{"enum('a')", UintValue(1)},
		{"date", IntValue(math.MaxInt32 + 1)},
	}
	for _, c := range bad {
		codec, _ := CodecFor(MustParseType(c.typ))
		if _, err := codec.Encode(c.v); err == nil {
			t.Errorf("%s: encoding %#v: want an error", c.typ, c.v)
		}
	}
}

func Int128FromBigMust(s string) Int128 {
	z, ok := parseBig(s)
	if !ok {
		panic(s)
	}
	x, ok := Int128FromBig(z)
	if !ok {
		panic(s)
	}
	return x
}

func TestDecodeRejectsBadInput(t *testing.T) {
	for _, typ := range []string{"int32", "float64", "uuid", "decimal(38,2)", "timetz", "date"} {
		c, _ := CodecFor(MustParseType(typ))
		if _, err := c.Decode(make([]byte, c.Width()+1)); err == nil {
			t.Errorf("%s: decoding a wrong-length encoding must fail", typ)
		}
	}
	c, _ := CodecFor(MustParseType("decimal(4,2)"))
	enc := appendBiased(nil, 10000, 8)
	if _, err := c.Decode(enc); err == nil {
		t.Error("decimal(4,2): decoding 100.00 must fail")
	}
	b, _ := CodecFor(MustParseType("boolean"))
	if _, err := b.Decode([]byte{2}); err == nil {
		t.Error("boolean: decoding 0x02 must fail")
	}
}

func parseBig(s string) (*big.Int, bool) { return new(big.Int).SetString(s, 10) }

// The precision limit is exclusive on both sides, for encode, decode and
// parse, at every width.
func TestDecimalRangeEdges(t *testing.T) {
	for _, p := range []int{1, 4, 18, 19, 38} {
		c, ok := CodecFor(Decimal(p, 0))
		if !ok {
			t.Fatalf("no codec for decimal(%d,0)", p)
		}
		lim := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
		for _, tc := range []struct {
			z  *big.Int
			ok bool
		}{
			{new(big.Int).Sub(lim, big.NewInt(1)), true},
			{new(big.Int).Neg(new(big.Int).Sub(lim, big.NewInt(1))), true},
			{lim, false},
			{new(big.Int).Neg(lim), false},
		} {
			x, _ := Int128FromBig(tc.z)
			_, err := c.Encode(Int128Value(x))
			if (err == nil) != tc.ok || (!tc.ok && !errors.Is(err, ErrOutOfRange)) {
				t.Errorf("decimal(%d,0) encode %s: err %v, want ok=%v", p, tc.z, err, tc.ok)
			}
			if _, err := c.Parse(tc.z.String()); (err == nil) != tc.ok {
				t.Errorf("decimal(%d,0) parse %s: err %v, want ok=%v", p, tc.z, err, tc.ok)
			}
			if p > 18 && !tc.ok {
				// A 16-byte encoding of an out-of-range value must not decode.
				if _, err := c.Decode(appendInt128(nil, x)); !errors.Is(err, ErrOutOfRange) {
					t.Errorf("decimal(%d,0) decode %s: %v", p, tc.z, err)
				}
			}
		}
	}
}

// AppendInt and AppendUint write exactly Append's bytes and fail exactly
// where it fails, for every integer type and a few others, over edges of
// each width and random values.
func TestAppendIntIsAppend(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 29))
	var xs []int64
	for _, w := range []uint{7, 8, 15, 16, 31, 32, 63} {
		e := int64(1) << w
		xs = append(xs, e, e-1, -e, -e-1, -e+1)
	}
	xs = append(xs, 0, 1, -1, math.MinInt64, math.MaxInt64)
	for range 2000 {
		xs = append(xs, int64(rng.Uint64())>>rng.IntN(64))
	}
	kinds := []Kind{KindTinyInt, KindSmallInt, KindInteger, KindBigInt, KindUTinyInt, KindUSmallInt, KindUInteger, KindUBigInt, KindHugeInt, KindDate, KindDouble}
	for _, k := range kinds {
		c, ok := CodecFor(Simple(k))
		if !ok {
			t.Fatalf("%v: no codec", k)
		}
		for _, x := range xs {
			prefix := []byte{0xAB}
			want, werr := c.Append(prefix, IntValue(x))
			got, gerr := c.AppendInt(prefix, x)
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() || !bytes.Equal(got, want) {
				t.Fatalf("%s AppendInt(%d) = %x, %v; Append = %x, %v", c.Type(), x, got, gerr, want, werr)
			}
			u := uint64(x)
			want, werr = c.Append(prefix, UintValue(u))
			got, gerr = c.AppendUint(prefix, u)
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() || !bytes.Equal(got, want) {
				t.Fatalf("%s AppendUint(%d) = %x, %v; Append = %x, %v", c.Type(), u, got, gerr, want, werr)
			}
		}
	}
}
