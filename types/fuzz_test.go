package types_test

import (
	"bytes"
	"testing"

	"github.com/rocklake/rocklake/types"
	"github.com/rocklake/rocklake/types/typestest"
)

// fuzzTypes are the types the fuzz targets pick from by index.
var fuzzTypes = []string{
	"boolean", "int8", "int16", "int32", "int64", "int128", "uint8", "uint16", "uint32", "uint64",
	"uint128", "float32", "float64", "decimal(4,2)", "decimal(18,3)", "decimal(38,10)", "date",
	"time", "timetz", "timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns", "timestamptz",
	"interval", "uuid", "varchar", "blob", "enum('a', 'b')", "time_ns",
}

func fuzzCodec(i uint8) *types.Codec {
	c, ok := types.CodecFor(types.MustParseType(fuzzTypes[int(i)%len(fuzzTypes)]))
	if !ok {
		panic("fuzz type without codec")
	}
	return c
}

// FuzzDecode: any bytes either fail to decode or decode to a value that
// encodes and decodes again to the same value.
func FuzzDecode(f *testing.F) {
	for i := range fuzzTypes {
		c := fuzzCodec(uint8(i))
		f.Add(uint8(i), make([]byte, c.Width()))
		f.Add(uint8(i), bytes.Repeat([]byte{0xff}, c.Width()))
		f.Add(uint8(i), bytes.Repeat([]byte{0x80}, c.Width()))
	}
	f.Fuzz(func(t *testing.T, ti uint8, b []byte) {
		c := fuzzCodec(ti)
		v, err := c.Decode(b)
		if err != nil {
			return
		}
		enc, err := c.Encode(v)
		if err != nil {
			t.Fatalf("%s: decoded %#v from % x does not encode: %v", c.Type(), v, b, err)
		}
		// Every accepted encoding is the canonical one: a second encoding
		// of the same value would sort apart from it.
		if !bytes.Equal(enc, b) {
			t.Fatalf("%s: % x decodes, but re-encodes as % x", c.Type(), b, enc)
		}
		v2, err := c.Decode(enc)
		if err != nil {
			t.Fatalf("%s: re-decode: %v", c.Type(), err)
		}
		if enc2, _ := c.Encode(v2); !bytes.Equal(enc, enc2) {
			t.Fatalf("%s: unstable encoding % x vs % x", c.Type(), enc, enc2)
		}
		_ = c.Format(v)
	})
}

// FuzzParseText: any text either fails to parse or parses to a value whose
// text form parses back to the same encoding.
func FuzzParseText(f *testing.F) {
	for i, typ := range fuzzTypes {
		for _, seed := range typestest.Ascending[typ] {
			f.Add(uint8(i), seed)
		}
	}
	for i := range fuzzTypes {
		for _, s := range []string{"", "nan", "-infinity", "1e400", "2024-01-01T00:00:00.123456789123+15:59",
			"0045-03-15 (BC) 10:00:00", `\x41\xFF`, "{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}", "1 year -3 days 04:00:00"} {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, ti uint8, s string) {
		c := fuzzCodec(ti)
		for _, r := range []types.Rounding{types.Cast, types.Floor, types.Ceil} {
			v, _, err := c.ParseRounded(s, r)
			if err != nil {
				continue
			}
			enc, err := c.Encode(v)
			if err != nil {
				continue // NaN, or a float text rounding beyond float32 values
			}
			text := c.Format(v)
			back, err := c.Parse(text)
			if err != nil {
				t.Fatalf("%s: %q parsed, but its text %q does not: %v", c.Type(), s, text, err)
			}
			enc2, err := c.Encode(back)
			if err != nil || !bytes.Equal(enc, enc2) {
				t.Fatalf("%s: %q → %q → % x, want % x (%v)", c.Type(), s, text, enc2, enc, err)
			}
		}
	})
}

// FuzzParseType: any text either fails with a *TypeError or parses to a type
// whose canonical text parses back to an equal type.
func FuzzParseType(f *testing.F) {
	for _, s := range []string{"int", "decimal(38,10)", "struct(a int, \"b\"\"c\" varchar[])[]",
		"map(varchar, enum('x','y'))", "timestamp with time zone", "union(a int)", "int[3][]", "x(((("} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ty, err := types.ParseType(s)
		if err != nil {
			return
		}
		back, err := types.ParseType(ty.DuckLakeName())
		if err != nil {
			t.Fatalf("%q parsed to %q, which does not parse: %v", s, ty.DuckLakeName(), err)
		}
		if !back.Equal(ty) {
			t.Fatalf("%q → %q → %q", s, ty.DuckLakeName(), back.DuckLakeName())
		}
		_, _ = types.CodecFor(ty)
	})
}
