package expr

import (
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

func variantColumns(t *testing.T) []catalog.Column {
	t.Helper()
	cols, err := catalog.PlanColumns([]catalog.ColumnDef{
		{Name: "v", Type: "variant"}, {Name: "st", Type: "struct(a int32)"}, {Name: "i", Type: "int64"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cols
}

// TestVariantSubFieldBinding: every spelling of a sub-field binds to the
// same sub-field column, in the cast's type; what cannot be pruned on (no
// cast, a non-VARIANT column, an array index) binds to MAYBE, not an error.
func TestVariantSubFieldBinding(t *testing.T) {
	cols := variantColumns(t)
	cases := []struct{ in, want string }{
		{"v.a::INT > 6000", `v."a"::int32 > '6000'`},
		{"CAST(v.a AS BIGINT) = 3", `v."a"::int64 = '3'`},
		{"variant_extract(v, 'a')::INT > 6000", `v."a"::int32 > '6000'`},
		{`v."a"::INT > 6000`, `v."a"::int32 > '6000'`},
		{"V.a::INT > 6000", `v."a"::int32 > '6000'`}, // the column's name ignores case
		{"v.A::INT > 6000", `v."A"::int32 > '6000'`}, // a field's does not
		{`v."a.b"::INT = 1`, `v."a.b"::int32 = '1'`},
		{"variant_extract(v, 'a.b')::INT = 1", `v."a.b"::int32 = '1'`},
		{"v.a.b::INT = 1", `v."a"."b"::int32 = '1'`},
		{"variant_extract(variant_extract(v, 'a'), 'b')::INT = 1", `v."a"."b"::int32 = '1'`},
		{"variant_extract(v.a, 'b')::INT = 1", `v."a"."b"::int32 = '1'`},
		{`v."we""ird"::INT = 1`, `v."we""ird"::int32 = '1'`},
		{"v::INT = 1", "v::int32 = '1'"},
		{"v.a::INT = 1.5", "FALSE"},
		{"v.a::INT < 1.5", `v."a"::int32 <= '1'`},
		{"v.a::TINYINT > 1000", "FALSE"},
		{"v.a::INT BETWEEN 1 AND 3", `(v."a"::int32 >= '1' AND v."a"::int32 <= '3')`},
		{"v.a::INT IN (1, 2)", `(v."a"::int32 = '1' OR v."a"::int32 = '2')`},
		{"v.a::INT IS NULL", `v."a"::int32 IS NULL`},
		{"v.a IS NOT NULL", `v."a" IS NOT NULL`},
		{"NOT (v.a::INT > 5)", `v."a"::int32 <= '5'`},
		{"v.s::VARCHAR LIKE 'ab%'", `v."s"::varchar LIKE "ab"%`},
		{"starts_with(v.s::VARCHAR, 'ab')", `v."s"::varchar LIKE "ab"%`},
		{"v.t::TIMESTAMP >= '2024-01-01'", `v."t"::timestamp >= '2024-01-01 00:00:00'`},
		{"v.a = 5", `MAYBE(column v."a" has no ordered statistics)`},
		{"v.a", `MAYBE(VARIANT sub-field v."a" as a condition)`},
		{"variant_extract(v, 1)::INT = 1", "MAYBE(comparison of expressions)"},
		{"st.a::BIGINT = 1", "MAYBE(comparison of expressions)"},
		{"i::INT = 1", "MAYBE(comparison of expressions)"},
		{"v.a::INTERVAL = INTERVAL '1 day'", `MAYBE(column v."a"::interval has no ordered statistics)`},
	}
	for _, c := range cases {
		b, err := Compile(c.in, cols)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := b.Pred.String(); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
	// One column per (sub-field, type), shared by separately bound
	// conjuncts (the query path binds each on its own).
	b1, _ := Compile("v.a::INT > 1", cols)
	b2, _ := Compile("variant_extract(v, 'a')::INTEGER < 9", cols)
	b3, _ := Compile("v.a::BIGINT < 9", cols)
	if b1.Columns[0].ID != b2.Columns[0].ID || b1.Columns[0].ID == b3.Columns[0].ID || b1.Columns[0].ID >= 0 {
		t.Errorf("sub-field ids: %d %d %d", b1.Columns[0].ID, b2.Columns[0].ID, b3.Columns[0].ID)
	}
	if c := Conjoin(b1, b2, b3); len(c.Columns) != 2 {
		t.Errorf("conjoined columns: %d", len(c.Columns))
	}
	if _, err := Compile("w.a::INT = 1", cols); err == nil || !strings.Contains(err.Error(), "no such column") {
		t.Errorf("unknown column: %v", err)
	}
	if _, err := Compile("v.a::INT = 'x'", cols); err == nil {
		t.Error("a literal the cast's type cannot hold must be an error, as in DuckDB")
	}
}

// TestSubFieldStats pins which casts give bounds, and that bounds are
// rounded outward: a file's sub-field in [lo, hi] of the shredded type,
// cast as DuckDB casts it, stays in the bounds given.
func TestSubFieldStats(t *testing.T) {
	cols := variantColumns(t)
	enc := func(typ, text string) stats.Maybe[[]byte] {
		c, _ := types.CodecFor(types.MustParseType(typ))
		v, err := c.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := c.Encode(v)
		return stats.Known(b)
	}
	dec := func(c *Column, b stats.Maybe[[]byte]) string {
		if !b.Known {
			return "?"
		}
		v, _ := c.Codec.Decode(b.V)
		return c.Codec.Format(v)
	}
	noNaN := stats.Known(false)
	cases := []struct {
		cast, shredded, lo, hi string
		nan                    stats.Maybe[bool]
		want                   string // "lo hi", or "-" for no stats
	}{
		{"INT", "int64", "5", "6000", noNaN, "5 6000"},
		{"TINYINT", "int64", "5", "6000", noNaN, "-"}, // 6000 fails the cast
		{"UINTEGER", "int64", "-1", "5", noNaN, "-"},
		{"DOUBLE", "int64", "9007199254740993", "9007199254740993", noNaN, "9007199254740991.0 9007199254740994.0"},
		{"INT", "float64", "1.5", "2.5", noNaN, "1 3"},   // DuckDB: 2 and 2 (half to even)
		{"INT", "float64", "-0.5", "0.5", noNaN, "-1 1"}, // DuckDB: -0 and 0
		{"INT", "float64", "1", "2", stats.Maybe[bool]{}, "-"},
		{"INT", "float64", "1", "2", stats.Known(true), "-"}, // NaN fails the cast
		{"DOUBLE", "float64", "1", "2", stats.Known(true), "1.0 2.0"},
		{"INT", "decimal(9,2)", "2.50", "3.49", noNaN, "2 4"}, // DuckDB: 3 and 3 (half away)
		{"DECIMAL(18,3)", "int32", "-7", "7", noNaN, "-7.000 7.000"},
		{"DECIMAL(4,1)", "int32", "-7", "1000", noNaN, "-"},
		{"VARCHAR", "varchar", "a", "b", noNaN, "a b"},
		{"VARCHAR", "int64", "1", "2", noNaN, "-"}, // '10' < '9'
		{"INT", "varchar", "1", "2", noNaN, "-"},
		{"DATE", "timestamp", "2024-01-01 10:00:00", "2024-01-02 10:00:00", noNaN, "2024-01-01 2024-01-03"},
		{"TIMESTAMP_S", "timestamp", "2024-01-01 10:00:00.7", "2024-01-01 10:00:01.2", noNaN, "2024-01-01 10:00:00 2024-01-01 10:00:02"},
		{"TIMESTAMP", "date", "2024-01-01", "2024-01-02", noNaN, "2024-01-01 00:00:00 2024-01-02 00:00:00"},
		{"TIMESTAMPTZ", "timestamp", "2024-01-01", "2024-01-02", noNaN, "-"}, // the session's time zone
		{"TIMESTAMPTZ", "timestamptz", "2024-01-01 00:00:00+00", "2024-01-02 00:00:00+00", noNaN, "2024-01-01 00:00:00+00 2024-01-02 00:00:00+00"},
	}
	for _, c := range cases {
		b, err := Compile("v.a::"+c.cast+" IS NOT NULL", cols)
		if err != nil {
			t.Fatal(err)
		}
		col := b.Columns[0]
		st, ok := col.SubFieldStats(c.shredded, 10, 2, 12, enc(c.shredded, c.lo), enc(c.shredded, c.hi), c.nan)
		got := "-"
		if ok {
			got = dec(col, st.Min) + " " + dec(col, st.Max)
			if st.NullCount.V != 2 || st.ValueCount.V != 10 || st.MinIsExact || st.MaxIsExact {
				t.Errorf("%s from %s: counts or exactness %+v", c.cast, c.shredded, st)
			}
		}
		if got != c.want {
			t.Errorf("%s from %s [%s, %s]: got %s, want %s", c.cast, c.shredded, c.lo, c.hi, got, c.want)
		}
	}
	// Counts that do not add up to the unit's rows are not used, and a
	// unit without values needs no bounds.
	b, _ := Compile("v.a::INT > 1", cols)
	if _, ok := b.Columns[0].SubFieldStats("int64", 10, 2, 13, stats.Maybe[[]byte]{}, stats.Maybe[[]byte]{}, noNaN); ok {
		t.Error("counts not adding up to the rows were used")
	}
	if st, ok := b.Columns[0].SubFieldStats("int64", 0, 12, 12, stats.Maybe[[]byte]{}, stats.Maybe[[]byte]{}, noNaN); !ok || !stats.HoldsNoValue(&st) {
		t.Error("an all-NULL unit must be usable")
	}
}

func TestExtentBinding(t *testing.T) {
	cols, err := catalog.PlanColumns([]catalog.ColumnDef{{Name: "g", Type: "geometry"}, {Name: "b", Type: "blob"}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ in, want string }{
		{"g && 'POINT(1 2)'::GEOMETRY", "g && BOX(0.9999999999999999 1.9999999999999998, 1.0000000000000002 2.0000000000000004)"},
		{"'POINT(1 2)'::GEOMETRY && g", "g && BOX(0.9999999999999999 1.9999999999999998, 1.0000000000000002 2.0000000000000004)"},
		{"st_intersects_extent(g, 'LINESTRING(0 0, 4 -2)')", "g && BOX(-5e-324 -2.0000000000000004, 4.000000000000001 5e-324)"},
		{"g && 'POINT EMPTY'::GEOMETRY", "FALSE"},
		{"NOT (g && 'POINT(1 2)'::GEOMETRY)", "MAYBE(function &&)"},
		{"g && 'SRID=4326;POINT(1 2)'::GEOMETRY", "MAYBE(geometry literal SRID=4326;POINT(1 2))"},
		{"g && g", "MAYBE(function &&)"},
		{"b && 'POINT(1 2)'::GEOMETRY", "MAYBE(function &&)"},
	}
	for _, c := range cases {
		b, err := Compile(c.in, cols)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := b.Pred.String(); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.in, got, c.want)
		}
		if n, err := Parse(c.in); err != nil {
			t.Errorf("%s: %v", c.in, err)
		} else if _, err := Parse(Format(n)); err != nil {
			t.Errorf("%s: Format gives %q, which does not parse: %v", c.in, Format(n), err)
		}
	}
}
