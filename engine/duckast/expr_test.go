package duckast

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/expr"
)

func decodeExpr(t *testing.T, js string) *Expr {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(quoteNonFinite(js)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return ExprOf(m)
}

const (
	colX = `{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":15,"column_names":["x"]}`
	colT = `{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":15,"column_names":["t","x"]}`
)

func lit(typ, value string) string {
	return `{"class":"CONSTANT","type":"VALUE_CONSTANT","alias":"","query_location":19,"value":{"type":` + typ + `,"is_null":false,"value":` + value + `}}`
}

func cmp(op, l, r string) string {
	return `{"class":"COMPARISON","type":"` + op + `","alias":"","query_location":17,"left":` + l + `,"right":` + r + `}`
}

func cast(child, typ string) string {
	return `{"class":"CAST","type":"OPERATOR_CAST","alias":"","query_location":18446744073709551615,"child":` + child + `,"cast_type":` + typ + `,"try_cast":false}`
}

func fn(name, schema string, op bool, args ...string) string {
	isOp := "false"
	if op {
		isOp = "true"
	}
	return `{"class":"FUNCTION","type":"FUNCTION","alias":"","query_location":17,"function_name":"` + name + `","schema":"` + schema +
		`","children":[` + strings.Join(args, ",") + `],"filter":null,"order_bys":{"type":"ORDER_MODIFIER","orders":[]},"distinct":false,"is_operator":` +
		isOp + `,"export_state":false,"catalog":""}`
}

// TestPredicateReadsDuckDBNodes: DuckDB's parse-tree JSON (as
// json_serialize_sql writes it, taken from DuckDB 1.5) becomes the nodes
// expr.Parse makes of the SQL DuckDB prints for it.
func TestPredicateReadsDuckDBNodes(t *testing.T) {
	dec := func(w, s int) string {
		return `{"id":"DECIMAL","type_info":{"type":"DECIMAL_TYPE_INFO","alias":"","extension_info":null,"width":` +
			strconv.Itoa(w) + `,"scale":` + strconv.Itoa(s) + `}}`
	}
	strip := func(names []string) []string {
		if len(names) == 2 && names[0] == "t" {
			return names[1:]
		}
		return names
	}
	cases := []struct{ js, want string }{
		{cmp("COMPARE_GREATERTHAN", colX, lit(`{"id":"INTEGER","type_info":null}`, "5")), `("x" > 5)`},
		{cmp("COMPARE_EQUAL", colT, lit(`{"id":"INTEGER","type_info":null}`, "-3")), `("x" = -3)`},
		{cmp("COMPARE_EQUAL", colX, lit(dec(2, 1), "15")), `("x" = 1.5)`},
		{cmp("COMPARE_EQUAL", colX, lit(dec(2, 1), "-15")), `("x" = -1.5)`},
		{cmp("COMPARE_EQUAL", colX, lit(dec(1, 1), "5")), `("x" = .5)`},
		{cmp("COMPARE_EQUAL", colX, lit(dec(2, 1), "0")), `("x" = 0.0)`},
		{cmp("COMPARE_EQUAL", colX, lit(dec(4, 3), "-5")), `("x" = -0.005)`},
		{cmp("COMPARE_EQUAL", colX, lit(dec(22, 1), `{"upper":66,"lower":17082781258626382359}`)), `("x" = 123456789012345678901.5)`},
		{cmp("COMPARE_EQUAL", colX, lit(`{"id":"HUGEINT","type_info":null}`, `{"upper":-9223372036854775808,"lower":1}`)),
			`("x" = -170141183460469231731687303715884105727)`},
		{cmp("COMPARE_EQUAL", colX, lit(`{"id":"HUGEINT","type_info":null}`, `{"upper":-1,"lower":9223372036854775807}`)),
			`("x" = -9223372036854775809)`},
		{cmp("COMPARE_EQUAL", colX, lit(`{"id":"UHUGEINT","type_info":null}`, `{"upper":9223372036854775808,"lower":0}`)),
			`("x" = 170141183460469231731687303715884105728)`},
		{cmp("COMPARE_EQUAL", colX, lit(`{"id":"DOUBLE","type_info":null}`, "1000.0")), `("x" = CAST('1000.0' AS DOUBLE))`},
		{cmp("COMPARE_EQUAL", colX, lit(`{"id":"DOUBLE","type_info":null}`, "-Infinity")), `("x" = CAST('-Infinity' AS DOUBLE))`},
		{cmp("COMPARE_EQUAL", colX, lit(`{"id":"VARCHAR","type_info":null}`, `"it's"`)), `("x" = 'it''s')`},
		{cmp("COMPARE_NOT_DISTINCT_FROM", cast(colX, `{"id":"BOOLEAN","type_info":null}`), lit(`{"id":"BOOLEAN","type_info":null}`, "true")),
			`(CAST("x" AS BOOLEAN) IS NOT DISTINCT FROM TRUE)`},
		{cmp("COMPARE_GREATERTHANOREQUALTO", colX, cast(lit(`{"id":"VARCHAR","type_info":null}`, `"2024-01-01"`), `{"id":"DATE","type_info":null}`)),
			`("x" >= CAST('2024-01-01' AS DATE))`},
		{cmp("COMPARE_EQUAL", colX, cast(lit(`{"id":"VARCHAR","type_info":null}`, `"x"`), `{"id":"TIMESTAMP WITH TIME ZONE","type_info":null}`)),
			`("x" = CAST('x' AS TIMESTAMP WITH TIME ZONE))`},
		{cmp("COMPARE_EQUAL", colX, cast(lit(`{"id":"VARCHAR","type_info":null}`, `"x"`),
			`{"id":"LIST","type_info":{"type":"LIST_TYPE_INFO","alias":"","extension_info":null,"child_type":{"id":"INTEGER","type_info":null}}}`)),
			`("x" = CAST('x' AS INTEGER[]))`},
		{cmp("COMPARE_EQUAL", colX, fn("-", "", true, cast(lit(dec(2, 1), "15"), `{"id":"FLOAT","type_info":null}`))), `("x" = CAST(-1.5 AS FLOAT))`},
		{cmp("COMPARE_GREATERTHAN", fn("-", "", true, colX), lit(`{"id":"INTEGER","type_info":null}`, "1")), `((-"x") > 1)`},
		{fn("~~", "", true, colX, lit(`{"id":"VARCHAR","type_info":null}`, `"ab%"`)), `("x" LIKE 'ab%')`},
		{fn("!~~*", "", true, colX, lit(`{"id":"VARCHAR","type_info":null}`, `"ab%"`)), `(NOT ilike("x", 'ab%'))`},
		{fn("like_escape", "main", false, colX, lit(`{"id":"VARCHAR","type_info":null}`, `"a%"`), lit(`{"id":"VARCHAR","type_info":null}`, `"\\"`)),
			`("x" LIKE 'a%' ESCAPE '\')`},
		{fn("PREFIX", "pg_catalog", false, colX, lit(`{"id":"VARCHAR","type_info":null}`, `"a"`)), `prefix("x", 'a')`},
		{fn("f", "other", false, colX), `<function other.f>`},
		{fn("~~~", "", true, colX, lit(`{"id":"VARCHAR","type_info":null}`, `"a*"`)), `<operator ~~~>`},
		{`{"class":"OPERATOR","type":"COMPARE_NOT_IN","alias":"","query_location":17,"children":[` + colX + `,` +
			lit(`{"id":"INTEGER","type_info":null}`, "1") + `,` + lit(`{"id":"INTEGER","type_info":null}`, "2") + `]}`, `("x" NOT IN (1, 2))`},
		{`{"class":"OPERATOR","type":"OPERATOR_NOT","alias":"","query_location":17,"children":[{"class":"BETWEEN","type":"COMPARE_BETWEEN","alias":"",` +
			`"query_location":18446744073709551615,"input":` + colX + `,"lower":` + lit(`{"id":"INTEGER","type_info":null}`, "1") +
			`,"upper":` + lit(`{"id":"INTEGER","type_info":null}`, "2") + `}]}`, `(NOT ("x" BETWEEN 1 AND 2))`},
		{`{"class":"CONJUNCTION","type":"CONJUNCTION_OR","alias":"","query_location":17,"children":[` +
			`{"class":"OPERATOR","type":"OPERATOR_IS_NULL","alias":"","query_location":17,"children":[` + colX + `]},` +
			`{"class":"CASE","type":"CASE_EXPR","alias":"","query_location":17},` +
			`{"class":"OPERATOR","type":"OPERATOR_IS_NOT_NULL","alias":"","query_location":17,"children":[` + colT + `]}]}`,
			`((("x" IS NULL) OR <case_expr>) OR ("x" IS NOT NULL))`},
		{`{"class":"CONSTANT","type":"VALUE_CONSTANT","alias":"","query_location":19,"value":{"type":{"id":"NULL","type_info":null},"is_null":true}}`, `NULL`},
		{cmp("COMPARE_EQUAL", colX, cast(colX, `{"id":"UNBOUND","type_info":{"type":"UNBOUND_TYPE_INFO","alias":"","extension_info":null,"name":"my type","catalog":"","schema":"","user_type_modifiers":[]}}`)),
			`("x" = CAST("x" AS "my type"))`},
		{cmp("COMPARE_EQUAL", colX, cast(colX, `{"id":"STRUCT","type_info":{"type":"STRUCT_TYPE_INFO","child_types":[]}}`)), `("x" = <operator_cast>)`},
	}
	for _, c := range cases {
		n, _ := Predicate(decodeExpr(t, c.js), strip)
		if got := expr.Format(n); got != c.want {
			t.Errorf("%s\n got  %s\n want %s", c.js, got, c.want)
		}
	}
	if _, ok := Predicate(decodeExpr(t, `{"class":"SUBQUERY","type":"SUBQUERY","alias":"","query_location":3}`), nil); ok {
		t.Error("a subquery conjunct is usable")
	}
}
