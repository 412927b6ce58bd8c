package types

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// Hot paths of statistics handling: encoding a bound, comparing two
// encodings, and parsing DuckLake text. Run with
// `go test ./types -run '^$' -bench . -benchmem`.

func benchValues(b *testing.B, typ string, gen func(r *rand.Rand) Value) (*Codec, []Value) {
	b.Helper()
	c, ok := CodecFor(MustParseType(typ))
	if !ok {
		b.Fatalf("no codec for %s", typ)
	}
	r := rand.New(rand.NewPCG(7, 7))
	vs := make([]Value, 1024)
	for i := range vs {
		vs[i] = gen(r)
	}
	return c, vs
}

func BenchmarkAppend(b *testing.B) {
	for _, tc := range []struct {
		typ string
		gen func(r *rand.Rand) Value
	}{
		{"int64", func(r *rand.Rand) Value { return IntValue(r.Int64() - r.Int64()) }},
		{"float64", func(r *rand.Rand) Value { return FloatValue(r.NormFloat64() * 1e6) }},
		{"decimal(38,10)", func(r *rand.Rand) Value { return Int128Value(Int128From(r.Int64() - r.Int64())) }},
		{"timestamptz", func(r *rand.Rand) Value { return IntValue(r.Int64N(1 << 52)) }},
		{"varchar", func(r *rand.Rand) Value { return StringValue(string(rune('a'+r.IntN(26))) + "bcdefghijklmnop") }},
	} {
		b.Run(tc.typ, func(b *testing.B) {
			c, vs := benchValues(b, tc.typ, tc.gen)
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				var err error
				if buf, err = c.Append(buf[:0], vs[i%len(vs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCompareEncoded(b *testing.B) {
	c, vs := benchValues(b, "int64", func(r *rand.Rand) Value { return IntValue(r.Int64() - r.Int64()) })
	enc := make([][]byte, len(vs))
	for i, v := range vs {
		enc[i], _ = c.Encode(v)
	}
	b.ReportAllocs()
	n := 0
	for i := 0; b.Loop(); i++ {
		if bytes.Compare(enc[i%len(enc)], enc[(i+1)%len(enc)]) < 0 {
			n++
		}
	}
	_ = n
}

func BenchmarkParseText(b *testing.B) {
	for _, tc := range []struct{ typ, text string }{
		{"int64", "-9123456789012"},
		{"decimal(18,3)", "123456789.125"},
		{"timestamptz", "2024-03-01 12:34:56.789+02"},
		{"date", "2024-03-01"},
	} {
		b.Run(tc.typ, func(b *testing.B) {
			c, _ := CodecFor(MustParseType(tc.typ))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Parse(tc.text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
