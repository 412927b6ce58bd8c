package types

import "testing"

// Every type shows as DuckDB prints it, and the shown name parses back to
// the same type, so what a user reads they can write.
func TestDisplayNameIsDuckDBs(t *testing.T) {
	for in, want := range map[string]string{
		"int64": "BIGINT", "int32": "INTEGER", "uint64": "UBIGINT", "int128": "HUGEINT",
		"float32": "FLOAT", "float64": "DOUBLE", "decimal(18,3)": "DECIMAL(18,3)",
		"timestamptz": "TIMESTAMP WITH TIME ZONE", "timetz": "TIME WITH TIME ZONE",
		"timestamp_ns": "TIMESTAMP_NS", "varchar": "VARCHAR", "blob": "BLOB", "uuid": "UUID",
		"json": "JSON", "interval": "INTERVAL", "date": "DATE", "boolean": "BOOLEAN",
		"int64[]":                               "BIGINT[]",
		"timestamptz[2]":                        "TIMESTAMP WITH TIME ZONE[2]",
		`struct("TIMESTAMPTZ" int32, b timetz)`: `STRUCT("TIMESTAMPTZ" INTEGER, b TIME WITH TIME ZONE)`,
		"map(varchar, timestamptz)":             "MAP(VARCHAR, TIMESTAMP WITH TIME ZONE)",
		"enum('a', 'B')":                        "ENUM('a', 'B')",
		"variant":                               "VARIANT",
		"struct":                                "STRUCT",
		"list":                                  "LIST",
	} {
		ty, err := ParseType(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		got := DisplayName(ty)
		if got != want {
			t.Errorf("DisplayName(%s) = %q, want %q", in, got, want)
		}
		back, err := ParseType(got)
		if err != nil {
			t.Errorf("%s shows as %q, which does not parse: %v", in, got, err)
		} else if back.DuckLakeName() != ty.DuckLakeName() {
			t.Errorf("%s shows as %q, which parses as %s", in, got, back)
		}
	}
}
