package expr

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/types"
)

func testColumns() []catalog.Column {
	defs := []catalog.ColumnDef{
		{Name: "i", Type: "int32"}, {Name: "t", Type: "int8"}, {Name: "f", Type: "float32"}, {Name: "d", Type: "float64"},
		{Name: "p", Type: "decimal(10,2)"}, {Name: "s", Type: "varchar"}, {Name: "ts", Type: "timestamp"},
		{Name: "tz", Type: "timestamptz"}, {Name: "dt", Type: "date"}, {Name: "b", Type: "boolean"},
		{Name: "Mixed Case", Type: "int64"}, {Name: "st", Type: "struct(a int32, b varchar)"}, {Name: "j", Type: "json"},
	}
	cols, err := catalog.PlanColumns(defs)
	if err != nil {
		panic(err)
	}
	return cols
}

func TestBinding(t *testing.T) {
	cases := []struct{ in, want string }{
		{"i = 5", "i = '5'"},
		{"5 < i", "i > '5'"},
		{"I >= -3", "i >= '-3'"},
		{`"Mixed Case" = 1`, "Mixed Case = '1'"},
		{"mixed case = 1", ""}, // not a name
		{"i = 1.5", "FALSE"},
		{"i <> 1.5", "i IS NOT NULL"},
		{"i < 1.5", "i <= '1'"},
		{"i > 1.5", "i >= '2'"},
		{"i > -1.5", "i >= '-1'"},
		{"i = '1.5'", "i = '2'"}, // a string literal is cast, and the cast rounds
		{"t < 1000", "t IS NOT NULL"},
		{"t > 1000", "FALSE"},
		{"t = -129", "FALSE"},
		{"t >= -129", "t IS NOT NULL"},
		{"p = 1.234", "FALSE"},
		{"p <= 1.234", "p <= '1.23'"},
		{"p > 1.234", "p >= '1.24'"},
		// DuckDB casts a decimal literal to a FLOAT column's type, and
		// 0.1 (1 / 10, both exact in FLOAT) rounds correctly.
		{"f = 0.1", "f = '0.1'"},
		{"f < 0.1", "f < '0.1'"},
		// A DOUBLE against a FLOAT column compares in DOUBLE, exactly.
		{"f = 0.1::DOUBLE", "FALSE"},
		{"f < 0.1::DOUBLE", "f <= '0.099999994'"},
		{"i = - -3", "i = '3'"},
		{"i = - - -3", "i = '-3'"},
		{"i /* a /* nested */ comment */ = 3 -- trailing", "i = '3'"},
		{"i BETWEEN ASYMMETRIC 1 AND 3", "(i >= '1' AND i <= '3')"},
		{"i IS NOT DISTINCT FROM 3", "i = '3'"},
		{"i IS DISTINCT FROM 3", "(i <> '3' OR i IS NULL)"},
		{"NOT (i IS DISTINCT FROM 3)", "i = '3'"},
		{"i IS DISTINCT FROM NULL", "i IS NOT NULL"},
		{"NULL IS NOT DISTINCT FROM i", "i IS NULL"},
		{"NULL IS DISTINCT FROM NULL", "FALSE"},
		{"b IS TRUE", "b = 'true'"},
		{"b IS NOT TRUE", "(b <> 'true' OR b IS NULL)"},
		{"(i > 5) IS FALSE", "i <= '5'"},
		{"(i > 5) IS NOT FALSE", "(i > '5' OR i IS NULL)"},
		{"NOT ((i > 5) IS TRUE)", "(i <= '5' OR i IS NULL)"},
		{"i IS UNKNOWN", "i IS NULL"},
		{"NULL IS NOT TRUE", "TRUE"},
		{"d < 1e400", "d < 'inf'"},
		{"i < 1e400", "i IS NOT NULL"},
		{"i > -1e400", "i IS NOT NULL"},
		{"i = 1e400", "FALSE"},
		{"i < 'nan'::FLOAT", "i IS NOT NULL"},
		{"i >= 'nan'::FLOAT", "FALSE"},
		{"t = 100::FLOAT", "t = '100'"},
		{"d = 'NaN'", "d = nan"},
		{"d > 'nan'::DOUBLE", "d > nan"},
		{"d = 0.5", "d = '0.5'"},
		{"s LIKE 'ab%'", `s LIKE "ab"%`},
		{"s LIKE 'a\\_b%' ESCAPE '\\'", `s LIKE "a_b"%`},
		{"s LIKE 'a_b%'", `s LIKE "a"% [implied]`},
		{"s LIKE 'abc'", "s = 'abc'"},
		{"s NOT LIKE 'ab%'", `s NOT LIKE "ab"%`},
		{"s NOT LIKE 'a%b'", "MAYBE(NOT LIKE with inner wildcards)"},
		{"starts_with(s, 'x')", `s LIKE "x"%`},
		{"(s ~~ 'ab%')", `s LIKE "ab"%`},
		{"(s !~~ 'ab%')", `s NOT LIKE "ab"%`},
		{`main.like_escape(s, 'a\_b%', '\')`, `s LIKE "a_b"%`},
		{"main.prefix(s, 'x')", `s LIKE "x"%`},
		{"NOT starts_with(s, 'x')", `s NOT LIKE "x"%`},
		{"isnan(d)", "isnan(d)"},
		{"NOT isnan(d)", "NOT isnan(d)"},
		{"NOT (i < 5)", "i >= '5'"},
		{"NOT (i < 5 AND s = 'x')", "(i >= '5' OR s <> 'x')"},
		{"NOT (i < 5 OR NOT s = 'x')", "(i >= '5' AND s = 'x')"},
		{"i BETWEEN 1 AND 3", "(i >= '1' AND i <= '3')"},
		{"i NOT BETWEEN 1 AND 3", "(i < '1' OR i > '3')"},
		{"i IN (1, 2)", "(i = '1' OR i = '2')"},
		{"i NOT IN (1, 2)", "(i <> '1' AND i <> '2')"},
		{"i NOT IN (1, NULL)", "FALSE"},
		{"i IN (1, NULL)", "i = '1'"},
		{"i = NULL", "FALSE"},
		{"NOT (i = NULL)", "FALSE"},
		{"i IS NULL", "i IS NULL"},
		{"NOT i IS NOT NULL", "i IS NULL"},
		{"b", "b = 'true'"},
		{"NOT b", "b <> 'true'"},
		{"1 = 1", "TRUE"},
		{"1 < 0.5", "FALSE"},
		{"'a' = 'b'", "FALSE"},
		{"NULL IS NULL", "TRUE"},
		{"i = 1 AND false", "FALSE"},
		{"i = 1 OR true", "TRUE"},
		{"i + 1 = 5", "MAYBE(comparison of expressions)"},
		{"i = t", "MAYBE(comparison of expressions)"},
		{"abs(i) = 5", "MAYBE(comparison of expressions)"},
		{"ts >= DATE '2024-01-01'", "ts >= '2024-01-01 00:00:00'"},
		{"ts < '2024-01-01 10:00:00.1234567'", "ts < '2024-01-01 10:00:00.123456'"},
		{"tz = '2024-01-01 10:00:00'", "tz = '2024-01-01 10:00:00+00'"},
		{"tz = TIMESTAMP '2024-01-01 10:00:00'", "tz = '2024-01-01 10:00:00+00'"},
		{"tz > '2024-01-01 10:00:00+02'", "tz > '2024-01-01 08:00:00+00'"},
		{"st.a = 3", "st.a = '3'"},
		{"j = '{}'", "MAYBE(column j has no ordered statistics)"},
		{"CAST('7' AS INTEGER) < i", "i > '7'"},
		{"'7'::BIGINT < i", "i > '7'"},
	}
	cols := testColumns()
	for _, c := range cases {
		b, err := Compile(c.in, cols)
		if c.want == "" {
			if err == nil {
				t.Errorf("%q: want an error, got %s", c.in, b.Pred)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := b.Pred.String(); got != c.want {
			t.Errorf("%q\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

func TestErrorsNamePosition(t *testing.T) {
	cols := testColumns()
	cases := []struct {
		in  string
		pos int
		sub string
	}{
		{"nope = 1", 0, "no such column"},
		{"i = 1 AND nope > 2", 10, "no such column"},
		{"i < 'abc'", 4, "cannot cast"},
		{"ts > 'yesterday'", 5, "cannot cast"},
		{"i <", 3, "unexpected end"},
		{"i = (1", 6, `expected ")"`},
		{"i = 'x", 4, "unterminated"},
		{"i == 1 AND AND", 11, "unexpected keyword"},
		{"i IS 5", 5, "expected NULL"},
		{"i BETWEEN SYMMETRIC 1 AND 3", 10, "BETWEEN SYMMETRIC"},
		{"i = 1 /* open", 6, "unterminated"},
		{"i = 1 garbage", 6, "unexpected"},
		{"i @ 1", 2, "unexpected character"},
		{"s LIKE 'a' ESCAPE 'xy'", 2, "ESCAPE"},
		{"i", 0, "not a boolean"},
		{"5", 0, "not a condition"},
		{"", 0, "empty"},
		{"abs(nope) = 1", 4, "no such column"},
	}
	for _, c := range cases {
		_, err := Compile(c.in, cols)
		if err == nil {
			t.Errorf("%q: want an error", c.in)
			continue
		}
		var se *SyntaxError
		var be *BindError
		pos := -1
		switch {
		case errors.As(err, &se):
			pos = se.Pos
		case errors.As(err, &be):
			pos = be.Pos
		}
		if pos != c.pos || !strings.Contains(err.Error(), c.sub) {
			t.Errorf("%q: error at %d (%v), want offset %d containing %q", c.in, pos, err, c.pos, c.sub)
		}
	}
}

// An unknown column is catalog.ErrNoSuchColumn to errors.Is, as the
// catalog's own lookups are; other bind failures are not.
func TestUnknownColumnIsTheCatalogSentinel(t *testing.T) {
	cols := testColumns()
	_, err := Compile("abs(nope) = 1", cols)
	if !errors.Is(err, catalog.ErrNoSuchColumn) || !errors.Is(err, ErrNoSuchColumn) {
		t.Errorf("unknown column: err = %v, want errors.Is catalog.ErrNoSuchColumn", err)
	}
	_, err = Compile("i", cols)
	if err == nil || errors.Is(err, catalog.ErrNoSuchColumn) {
		t.Errorf("a bare integer column: err = %v, want an error that is not ErrNoSuchColumn", err)
	}
}

func TestHostilePredicates(t *testing.T) {
	cols := testColumns()
	// A 10,000-element IN list.
	var items []string
	for i := range 10000 {
		items = append(items, fmt.Sprint(i))
	}
	b, err := Compile("i IN ("+strings.Join(items, ",")+")", cols)
	if err != nil {
		t.Fatal(err)
	}
	if or, ok := b.Pred.(*Or); !ok || len(or.Args) != 10000 {
		t.Fatalf("10,000-element IN bound to %T", b.Pred)
	}
	// 1,000-deep NOT and AND nesting.
	deep := strings.Repeat("NOT (", 1000) + "i = 1" + strings.Repeat(")", 1000)
	if b, err := Compile(deep, cols); err != nil || b.Pred.String() != "i = '1'" {
		t.Fatalf("1000 NOTs: %v %v", b, err)
	}
	and := strings.Repeat("(i = 1 AND ", 1000) + "true" + strings.Repeat(")", 1000)
	if _, err := Compile(and, cols); err != nil {
		t.Fatalf("1000-deep AND: %v", err)
	}
	// Too deep is an error, not a crash.
	if _, err := Compile(strings.Repeat("NOT ", 100000)+"b", cols); err == nil {
		t.Fatal("100,000 NOTs must be refused")
	}
	// A 1 MB string literal.
	big := strings.Repeat("x", 1<<20)
	if b, err := Compile("s = '"+big+"'", cols); err != nil || len(b.Pred.(*Cmp).Value) != 1<<20 {
		t.Fatalf("1 MB literal: %v", err)
	}
	_ = types.Cast
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"i = 1", "NOT (a < 'x' OR b IS NULL)", "s LIKE 'a\\%%' ESCAPE '\\'",
		"x IN (1, 2.5, 'a', NULL)", "ts >= TIMESTAMP '2024-01-01' AND ts < DATE '2025-01-01'", "CAST(x AS DECIMAL(10,2)) = 1e3"} {
		f.Add(s)
	}
	cols := testColumns()
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err != nil {
			return
		}
		_, _ = Bind(n, s, cols)
	})
}

// TestFloatOperandsKeepMatches: DuckDB compares an integer or decimal
// column with a FLOAT in FLOAT (16777217::INTEGER = 16777216::FLOAT is
// true), so the planner must keep a unit holding 16777217 for every
// spelling of that comparison.
func TestFloatOperandsKeepMatches(t *testing.T) {
	cols, err := catalog.PlanColumns([]catalog.ColumnDef{{Name: "i", Type: "int32"}, {Name: "u", Type: "uint32"},
		{Name: "d", Type: "decimal(9,0)"}, {Name: "big", Type: "int64"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"i", "u", "d", "big"} {
		for _, p := range []string{"%s = 16777216::FLOAT", "%s <= 16777216::FLOAT", "%s IN (16777216::FLOAT, 1)",
			"%s BETWEEN 0 AND CAST('16777216' AS REAL)", "%s = CAST('16777216' AS FLOAT)", "16777216::FLOAT >= %s",
			"%s IS NOT DISTINCT FROM 16777216::FLOAT", "%s IN ('16777216', 1::FLOAT)"} {
			p = fmt.Sprintf(p, c)
			b, err := Compile(p, cols)
			if err != nil {
				t.Fatalf("%q: %v", p, err)
			}
			if !mayHold(b.Pred, 16777217) {
				t.Errorf("%q binds to %s, which rules out 16777217", p, b.Pred)
			}
		}
	}
}

// mayHold evaluates a bound predicate on one integer value, leaves that
// cannot tell counting as true.
func mayHold(p Pred, v int64) bool {
	switch p := p.(type) {
	case *Const:
		return p.Value
	case *And:
		for _, a := range p.Args {
			if !mayHold(a, v) {
				return false
			}
		}
		return true
	case *Or:
		for _, a := range p.Args {
			if mayHold(a, v) {
				return true
			}
		}
		return false
	case *NullTest:
		return p.Not
	case *Cmp:
		x, err := p.Col.Codec.Decode(p.Value)
		if err != nil {
			return true
		}
		r, ok := new(big.Rat).SetString(p.Col.Codec.Format(x))
		if !ok {
			return true
		}
		c := big.NewRat(v, 1).Cmp(r)
		return [...]bool{c == 0, c != 0, c < 0, c <= 0, c > 0, c >= 0}[p.Op]
	}
	return true
}

// TestDottedNamesDoNotCollide: a quoted "a.b" names the top-level column,
// a.b and "a"."b" the field b of struct a, as in DuckDB.
func TestDottedNamesDoNotCollide(t *testing.T) {
	cols, err := catalog.PlanColumns([]catalog.ColumnDef{{Name: "a.b", Type: "int32"}, {Name: "a", Type: "struct(b int32, c int32)"}})
	if err != nil {
		t.Fatal(err)
	}
	var top, field int64
	for _, c := range cols {
		switch {
		case len(c.Path) == 1 && c.Path[0] == "a.b":
			top = c.ID
		case len(c.Path) == 2 && c.Path[1] == "b":
			field = c.ID
		}
	}
	for p, want := range map[string]int64{`"a.b" = 1`: top, `"A.B" = 1`: top, `a.b = 1`: field, `"a"."b" = 1`: field, `A."b" = 1`: field} {
		b, err := Compile(p, cols)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		if len(b.Columns) != 1 || b.Columns[0].ID != want {
			t.Errorf("%q resolves to %v, want column %d", p, b.Columns, want)
		}
	}
	if _, err := Compile(`"a.c" = 1`, cols); err == nil {
		t.Error(`"a.c" names no column, but binds`)
	}
}
