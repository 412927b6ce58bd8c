package engine

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine/duckast"
	"github.com/rocklake/rocklake/expr"
)

// The query path reads each WHERE conjunct from DuckDB's parse tree
// straight into the planner's expression (duckast.Predicate). Before, it
// had DuckDB print the conjunct back to SQL and parsed that text; the
// printing route is kept here as the reference: for every conjunct both
// must bind to the same predicate. The one intended difference: a
// conjunct DuckDB prints in a form the text parser refuses (CASE, COLLATE,
// a subquery) was unusable whole, and now binds with that part "may
// match", which must then show in the bound predicate.

// printConjuncts is the old route: DuckDB prints each conjunct (a DOUBLE
// constant as CAST('text' AS DOUBLE), since DuckDB prints 1e3 as 1000.0),
// in one call where it can; ok[i] is false where it cannot.
func printConjuncts(t *testing.T, db *sql.DB, tmpl string, conds []map[string]any) (texts []string, ok []bool) {
	t.Helper()
	texts, ok = make([]string, len(conds)), make([]bool, len(conds))
	if len(conds) == 0 {
		return
	}
	args := make([]any, len(conds))
	calls := make([]string, len(conds))
	for i, cond := range conds {
		var tree map[string]any
		dec := json.NewDecoder(strings.NewReader(tmpl))
		dec.UseNumber()
		if err := dec.Decode(&tree); err != nil {
			t.Fatal(err)
		}
		tree["statements"].([]any)[0].(map[string]any)["node"].(map[string]any)["where_clause"] = doubleConstants(cond)
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(tree); err != nil {
			t.Fatal(err)
		}
		args[i], calls[i] = buf.String(), "json_deserialize_sql(?::JSON)"
	}
	vals := make([]sql.NullString, len(conds))
	dest := make([]any, len(conds))
	for i := range vals {
		dest[i] = &vals[i]
	}
	if err := db.QueryRow("SELECT "+strings.Join(calls, ", "), args...).Scan(dest...); err != nil {
		if len(conds) == 1 {
			return
		}
		for i := range conds { // one cannot be printed: the others still can
			tx, k := printConjuncts(t, db, tmpl, conds[i:i+1])
			texts[i], ok[i] = tx[0], k[0]
		}
		return
	}
	for i, v := range vals {
		if v.Valid {
			texts[i], ok[i] = strings.CutPrefix(v.String, "SELECT 1 WHERE ")
		}
	}
	return
}

func doubleConstants(x any) any {
	switch x := x.(type) {
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = doubleConstants(y)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[k] = doubleConstants(v)
		}
		v, _ := x["value"].(map[string]any)
		if x["class"] != "CONSTANT" || v == nil || v["is_null"] == true {
			return out
		}
		tm, _ := v["type"].(map[string]any)
		id, _ := tm["id"].(string)
		if id != "DOUBLE" && id != "FLOAT" {
			return out
		}
		return map[string]any{
			"class": "CAST", "type": "OPERATOR_CAST", "alias": "", "query_location": x["query_location"],
			"child": map[string]any{
				"class": "CONSTANT", "type": "VALUE_CONSTANT", "alias": "", "query_location": x["query_location"],
				"value": map[string]any{"type": map[string]any{"id": "VARCHAR", "type_info": nil}, "is_null": false, "value": fmt.Sprint(v["value"])},
			},
			"cast_type": map[string]any{"id": id, "type_info": nil}, "try_cast": false,
		}
	}
	return x
}

// checkParseTreePredicates compares the two routes for every conjunct of
// every predicate over the columns; it returns the conjuncts compared.
func checkParseTreePredicates(t *testing.T, db *sql.DB, cols []catalog.Column, preds []string) int {
	t.Helper()
	var tmpl string
	if err := db.QueryRow("SELECT json_serialize_sql('SELECT 1 WHERE true')::VARCHAR").Scan(&tmpl); err != nil {
		t.Fatal(err)
	}
	n := 0
	for lo := 0; lo < len(preds); lo += 256 {
		chunk := preds[lo:min(lo+256, len(preds))]
		var owner []string
		var conds []map[string]any
		for _, p := range chunk {
			var js string
			if err := db.QueryRow("SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", "SELECT 1 FROM t WHERE "+p+"\n").Scan(&js); err != nil {
				t.Fatal(err)
			}
			tree, err := duckast.Decode(js)
			if err != nil {
				continue // DuckDB's parser refuses it: so does the query
			}
			where, _ := tree.Root()["where_clause"].(map[string]any)
			for _, c := range duckast.Conjuncts(where) {
				owner, conds = append(owner, p), append(conds, c)
			}
		}
		texts, printed := printConjuncts(t, db, tmpl, conds)
		for i, c := range conds {
			n++
			p, text := owner[i], texts[i]
			var old *expr.Bound
			if printed[i] {
				old, _ = expr.Compile(text, cols)
			}
			node, ok := duckast.Predicate(duckast.ExprOf(c), nil)
			var got *expr.Bound
			if ok {
				got, _ = expr.Bind(node, expr.Format(node), cols)
			}
			switch {
			case old == nil && got == nil:
			case old != nil && got == nil:
				t.Errorf("%q: conjunct %q binds from DuckDB's text (%s) but not from its parse tree (%s)", p, text, old.Pred, expr.Format(node))
			case old == nil:
				if !strings.Contains(got.Pred.String(), "MAYBE") {
					t.Errorf("%q: conjunct %q is unusable from DuckDB's text, but binds from the parse tree to %s with nothing left open", p, text, got.Pred)
				}
			case old.Pred.String() != got.Pred.String():
				t.Errorf("%q: conjunct %q binds to %s from DuckDB's text, to %s from the parse tree (%s)", p, text, old.Pred, got.Pred, expr.Format(node))
			}
		}
	}
	return n
}

// TestParseTreePredicatesMatchPrinting runs the comparison on predicates
// of every shape the planner reads, over columns of many types.
func TestParseTreePredicatesMatchPrinting(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cols, err := catalog.PlanColumns([]catalog.ColumnDef{
		{Name: "i", Type: "int32"}, {Name: "h", Type: "int128"}, {Name: "u", Type: "uint64"}, {Name: "d", Type: "decimal(18,3)"},
		{Name: "f", Type: "float32"}, {Name: "g", Type: "float64"}, {Name: "s", Type: "varchar"}, {Name: "b", Type: "boolean"},
		{Name: "ts", Type: "timestamp"}, {Name: "tz", Type: "timestamptz"}, {Name: "dt", Type: "date"}, {Name: "tm", Type: "time"},
		{Name: "bl", Type: "blob"}, {Name: "uu", Type: "uuid"}, {Name: "Mixed Case", Type: "int64"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lits := []string{"1", "-1", "0", "1.5", "-1.5", ".5", "0.0", "-0.0", "1e3", "-1e3", "1e400", "-1e400", "1e-400", "2147483648",
		"9223372036854775808", "-9223372036854775809", "170141183460469231731687303715884105727", "170141183460469231731687303715884105728",
		"-170141183460469231731687303715884105728", "123456789012345678901.5", "0.000000000000000000000000000000000000001",
		"'1'", "'abc'", "'it''s'", "''", "NULL", "TRUE", "false", "1::TINYINT", "1.5::FLOAT", "-1.5::FLOAT", "-(1.5::FLOAT)",
		"CAST(-1.5 AS DOUBLE)", "'2024-01-01'::DATE", "DATE '2024-01-01'", "TIMESTAMP '2024-01-01 10:00:00'",
		"'2024-01-01 10:00:00+02'::TIMESTAMPTZ", "'10:00'::TIME", "'x'::BLOB", "'\\x00\\xff'::BLOB",
		"'00000000-0000-0000-0000-000000000001'::UUID", "1::DECIMAL(5,2)", "12.5::DECIMAL(38,10)", "'nan'::DOUBLE", "'-inf'::FLOAT",
		"1_000", "- -3", "-(-3)", "1::UBIGINT", "NULL::INTEGER", "TRY_CAST('1' AS INTEGER)", "'1'::INTEGER[]",
	}
	var preds []string
	for _, c := range []string{"i", "h", "u", "d", "f", "g", "s", "b", "ts", "tz", "dt", "tm", "bl", "uu", `"Mixed Case"`, `t.i`} {
		for _, l := range lits {
			for _, op := range []string{"=", "<>", "<", ">=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM"} {
				preds = append(preds, fmt.Sprintf("%s %s %s", c, op, l), fmt.Sprintf("%s %s %s", l, op, c))
			}
			preds = append(preds, fmt.Sprintf("%s BETWEEN %s AND %s", c, l, l), fmt.Sprintf("%s NOT BETWEEN %s AND 1", c, l),
				fmt.Sprintf("%s IN (%s, 1)", c, l), fmt.Sprintf("%s NOT IN (%s)", c, l), fmt.Sprintf("(%s < %s) IS NOT TRUE", c, l),
				fmt.Sprintf("NOT (%s > %s)", c, l), fmt.Sprintf("%s = %s OR %s IS NULL", c, l, c))
		}
		preds = append(preds, c+" IS NULL", c+" IS NOT NULL", c+" ISNULL", c+" NOTNULL", c+" IS TRUE", c+" IS NOT FALSE",
			c+"::VARCHAR = '1'", c+"::INTEGER > 1", "-"+c+" > 1", c+" + 1 > 2", c+" LIKE 'a%'", c+" NOT LIKE 'a_c%'",
			c+" ILIKE 'A%'", c+" NOT ILIKE 'a%'", c+" LIKE 'a!%%' ESCAPE '!'", c+" GLOB 'a*'", "prefix("+c+", 'ab')",
			"starts_with("+c+", 'ab')", "NOT starts_with("+c+", 'ab')", "isnan("+c+")", "NOT isnan("+c+")",
			"CASE WHEN "+c+" > 1 THEN true ELSE false END", c+" = 1 AND CASE WHEN true THEN "+c+" > 2 END",
			"("+c+" = 1 AND "+c+" COLLATE nocase = 'a') OR "+c+" > 5", c+" > (SELECT 1)", "coalesce("+c+", 1) = 1",
			c+" = ANY([1, 2])", c+" IN (SELECT 1)", "main.prefix("+c+", 'a')", "pg_catalog.prefix("+c+", 'a')",
			c+" = 1 AND "+c+" = 2 AND ("+c+" = 3 OR "+c+" < 4)", c+" = 1::VARCHAR(10)", c+" = '1'::\"varchar\"",
			"NOT ("+c+" = 1 OR "+c+" = 2)", "NOT ("+c+" > 1 AND "+c+" < 5)", "NOT (NOT "+c+" IS NULL)", c+" IN ()",
			c+" NOT IN ()", c+" IN (1)", c+" LIKE 'a\\%' ESCAPE '\\'", c+" NOT LIKE 'a_%' ESCAPE '_'")
	}
	n := checkParseTreePredicates(t, db, cols, preds)
	t.Logf("%d conjuncts of %d predicates bound both ways", n, len(preds))
}
