package types

import (
	"errors"
	"testing"
)

func TestParseTypeNames(t *testing.T) {
	cases := []struct{ in, want string }{
		{"boolean", "boolean"}, {"BOOL", "boolean"}, {"logical", "boolean"},
		{"tinyint", "int8"}, {"int8", "int8"}, {"INT1", "int8"},
		{"smallint", "int16"}, {"int16", "int16"}, {"int2", "int16"},
		{"integer", "int32"}, {"int32", "int32"}, {"INT", "int32"}, {"int4", "int32"},
		{"bigint", "int64"}, {"int64", "int64"}, {"long", "int64"},
		{"hugeint", "int128"}, {"int128", "int128"},
		{"utinyint", "uint8"}, {"uint8", "uint8"},
		{"usmallint", "uint16"}, {"uint16", "uint16"},
		{"uinteger", "uint32"}, {"uint32", "uint32"},
		{"ubigint", "uint64"}, {"uint64", "uint64"},
		{"uhugeint", "uint128"}, {"uint128", "uint128"},
		{"float", "float32"}, {"float32", "float32"}, {"REAL", "float32"}, {"float4", "float32"},
		{"double", "float64"}, {"float64", "float64"}, {"Double Precision", "float64"}, {"float8", "float64"},
		{"decimal", "decimal(18,3)"}, {"DECIMAL(10,2)", "decimal(10,2)"}, {"numeric(38, 38)", "decimal(38,38)"},
		{"decimal(5)", "decimal(5,0)"},
		{"date", "date"}, {"time", "time"}, {"timetz", "timetz"}, {"time with time zone", "timetz"},
		{"TIME WITHOUT TIME ZONE", "time"},
		{"timestamp", "timestamp"}, {"datetime", "timestamp"}, {"timestamp_us", "timestamp"},
		{"timestamp without time zone", "timestamp"},
		{"timestamp_s", "timestamp_s"}, {"timestamp_ms", "timestamp_ms"}, {"TIMESTAMP_NS", "timestamp_ns"},
		{"timestamptz", "timestamptz"}, {"timestamp with time zone", "timestamptz"},
		{"interval", "interval"}, {"uuid", "uuid"},
		{"varchar", "varchar"}, {"VARCHAR(20)", "varchar"}, {"text", "varchar"}, {"string", "varchar"},
		{"character varying(3)", "varchar"}, {"char", "varchar"},
		{"blob", "blob"}, {"bytea", "blob"}, {"json", "json"},
		{"enum", "enum"}, {"ENUM('a', 'b''c')", "enum('a', 'b''c')"},
		{"variant", "variant"}, {"geometry", "geometry"},
		{"integer[]", "int32[]"}, {"varchar[][]", "varchar[][]"}, {"int[3]", "int32[3]"},
		{"list", "list"}, {"list(integer)", "int32[]"},
		{"struct", "struct"}, {"STRUCT(a INTEGER, \"B c\" VARCHAR[])", `struct(a int32, "B c" varchar[])`},
		{"row(x double)", "struct(x float64)"},
		{"struct(\"timestamp\" timestamp with time zone)", `struct("timestamp" timestamptz)`},
		{"map", "map"}, {"MAP(VARCHAR, STRUCT(a INT))", "map(varchar, struct(a int32))"},
		{"map(int, int[])[]", "map(int32, int32[])[]"},
		{"bitstring", "bitstring"}, {"union(a int, b varchar)", "union(a int, b varchar)"},
		{"  MyType  ", "MyType"}, {"struct(a foo(1, 2))", "struct(a foo(1, 2))"},
	}
	for _, c := range cases {
		got, err := ParseType(c.in)
		if err != nil {
			t.Errorf("ParseType(%q): %v", c.in, err)
			continue
		}
		if got.DuckLakeName() != c.want {
			t.Errorf("ParseType(%q) = %s, want %s", c.in, got, c.want)
		}
		back, err := ParseType(got.DuckLakeName())
		if err != nil || !back.Equal(got) {
			t.Errorf("round trip of %q via %q: %v, %v", c.in, got.DuckLakeName(), back, err)
		}
	}
}

func TestParseTypeUnknownKeepsText(t *testing.T) {
	ty, err := ParseType("Frobnicator(7)")
	if err != nil {
		t.Fatal(err)
	}
	if ty.Kind != KindUnknown || ty.Text != "Frobnicator(7)" {
		t.Fatalf("got %#v", ty)
	}
	if _, ok := CodecFor(ty); ok {
		t.Fatal("an unknown type must have no codec")
	}
}

func TestParseTypeErrors(t *testing.T) {
	for _, in := range []string{
		"", "   ", "decimal(40,2)", "decimal(0)", "decimal(5,6)", "decimal(a)", "decimal(10,2",
		"integer(3)", "int[", "int[0]", "int[x]", "struct(a int", "struct()", "struct(a int, A int)",
		"map(int)", "enum(a)", "enum('a','a')", "int)", "int extra", "'quoted'", "varchar(x)",
		"foo(", "foo(1", "int @", "struct(a int,)",
	} {
		_, err := ParseType(in)
		var te *TypeError
		if !errors.As(err, &te) {
			t.Errorf("ParseType(%q): want a *TypeError, got %v", in, err)
		}
	}
}

func TestNoStatsTypes(t *testing.T) {
	for _, name := range []string{"json", "variant", "geometry", "int[]", "int[2]", "struct(a int)",
		"map(int,int)", "list", "struct", "map", "enum", "bitstring"} {
		if _, ok := CodecFor(MustParseType(name)); ok {
			t.Errorf("%s: want no statistics codec", name)
		}
	}
	iv, ok := CodecFor(MustParseType("interval"))
	if !ok || iv.Ordered() {
		t.Errorf("interval: want an unordered codec, got ok=%v", ok)
	}
}
