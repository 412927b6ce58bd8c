package writesql

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/internal/sqllex"
)

// Every INSERT built from the grammar's pieces, with comments and space
// between them, reads back its table and query, and Over replaces the
// target and nothing else.
func TestInsertGrammar(t *testing.T) {
	targets := map[string]string{`t`: "t", `"My Table"`: "My Table", `"a""b"`: `a"b`, `Events_2`: "Events_2"}
	aliases := []string{"", " AS x", " x"}
	bys := []string{"", " BY NAME", " by position"}
	lists := []string{"", " (a, b)", ` ("a,b", c)`}
	queries := []string{"SELECT 1, 2", "VALUES (1, 'a;b'), (2, NULL)", "FROM s", "WITH w AS (SELECT 1) SELECT * FROM w", "(SELECT 1)", "TABLE s", "select 'x' -- trailing"}
	seps := []string{" ", "\n\t", " /* c */ ", " -- c\n"}
	n := 0
	for tgt, name := range targets {
		for _, alias := range aliases {
			for _, by := range bys {
				for _, list := range lists {
					for _, q := range queries {
						sep := seps[n%len(seps)]
						n++
						head := "INSERT" + sep + "INTO " + tgt + alias + by + list
						text := head + sep + q + ";"
						if !Is(text) {
							t.Fatalf("Is(%q) = false", text)
						}
						st, err := Parse(text)
						if err != nil {
							t.Fatalf("%q: %v", text, err)
						}
						if st.Kind != Insert || st.Table != name || st.Query != q {
							t.Fatalf("%q: kind %v table %q query %q", text, st.Kind, st.Table, st.Query)
						}
						want := strings.Replace(head, "INTO "+tgt, "INTO temp.w", 1) + sep + "Q\n"
						if got := st.Over("temp.w", "Q", ""); got != want {
							t.Fatalf("%q: Over gives\n%q, want\n%q", text, got, want)
						}
					}
				}
			}
		}
	}
	st, err := Parse("insert into t default values")
	if err != nil || st.Query != "" || st.Over("w", "", "") != "insert into w default values" {
		t.Fatalf("DEFAULT VALUES: %+v %v", st, err)
	}
}

func TestCreateAndCopy(t *testing.T) {
	cases := []struct {
		text  string
		kind  Kind
		table string
		check func(*Statement) string
	}{
		{"CREATE TABLE t (a INTEGER NOT NULL, b VARCHAR)", CreateTable, "t", func(s *Statement) string { return s.Columns }},
		{"create table if not exists \"x y\" (a DECIMAL(9, 2))", CreateTable, "x y", func(s *Statement) string { return s.Columns }},
		{"CREATE TABLE u AS SELECT * FROM t WHERE a > 1", CreateAs, "u", func(s *Statement) string { return s.Query }},
		{"COPY t FROM '/d/it''s.csv' (FORMAT csv, HEADER)", Copy, "t", func(s *Statement) string { return s.Over("w", "", "") }},
		{"COPY t (a, b) FROM 'x.parquet'", Copy, "t", func(s *Statement) string { return s.Over("w", "", "/stage/p") }},
		{"copy t from stdin with (format csv)", Copy, "t", func(s *Statement) string { return s.Over("w", "", "/stage/in") }},
	}
	want := []string{
		"a INTEGER NOT NULL, b VARCHAR", "a DECIMAL(9, 2)", "SELECT * FROM t WHERE a > 1",
		"COPY w FROM '/d/it''s.csv' (FORMAT csv, HEADER)", "COPY w (a, b) FROM '/stage/p'", "COPY w from '/stage/in' with (format csv)",
	}
	for i, c := range cases {
		if !Is(c.text) {
			t.Errorf("Is(%q) = false", c.text)
		}
		st, err := Parse(c.text)
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		if st.Kind != c.kind || st.Table != c.table || c.check(st) != want[i] {
			t.Errorf("%q: %v %q %q, want %q", c.text, st.Kind, st.Table, c.check(st), want[i])
		}
	}
}

// What is not a write is not taken for one, and what rocklake does not
// run says so.
func TestNotWrites(t *testing.T) {
	for _, q := range []string{"SELECT 1", "COPY (SELECT 1) TO 'x.csv'", "COPY t TO 'x.csv'", "CREATE VIEW v AS SELECT 1", "CREATE SCHEMA s", "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", "-- INSERT\nSELECT 1"} {
		if Is(q) {
			t.Errorf("Is(%q) = true", q)
		}
		if _, err := Parse(q); !errors.Is(err, ErrNotWrite) {
			t.Errorf("Parse(%q): %v, want ErrNotWrite", q, err)
		}
	}
	for q, msg := range map[string]string{
		"INSERT OR REPLACE INTO t VALUES (1)":             "no keys",
		"INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING": "no keys",
		"INSERT INTO t SELECT 1 RETURNING *":              "RETURNING",
		"CREATE OR REPLACE TABLE t AS SELECT 1":           "drop the table first",
		"CREATE TEMP TABLE t AS SELECT 1":                 "catalog table",
		"INSERT INTO main.t VALUES (1)":                   "one-part names",
	} {
		if _, err := Parse(q); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), msg) {
			t.Errorf("Parse(%q): %v, want unsupported with %q", q, err, msg)
		}
	}
	for q, msg := range map[string]string{
		"INSERT t VALUES (1)":            "expected INTO",
		"INSERT INTO":                    "at end of statement: expected a table name",
		"INSERT INTO t":                  "expected a query or VALUES",
		"INSERT INTO t (a, b":            "closing parenthesis",
		"INSERT INTO t DEFAULT VALUES x": `near "x"`,
		"CREATE TABLE t":                 "expected AS",
		"COPY t FROM x.csv":              "quoted path or STDIN",
		"COPY t FROM 'x.csv' FORMAT csv": "parenthesised option list",
		"COPY t FROM 'x.csv":             "closing quote",
	} {
		if _, err := Parse(q); err == nil || errors.Is(err, ErrNotWrite) || !strings.Contains(err.Error(), msg) {
			t.Errorf("Parse(%q): %v, want an error with %q", q, err, msg)
		}
	}
}

// Whatever the text, Parse does not panic, and a statement it reads,
// rebuilt over another target by Over, reads back as the same statement
// over that target.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"INSERT INTO t VALUES (1)", `insert into "a""b" by name (x, "y z") select 1 -- c`, "INSERT INTO t DEFAULT VALUES",
		"COPY t (a) FROM '/x''y' WITH (FORMAT csv)", "copy t from stdin", "CREATE TABLE IF NOT EXISTS t AS SELECT 1", "CREATE TABLE t (a INT)",
		"INSERT INTO t /* c */ (SELECT 1)", "INSERT INTO t AS x (a) VALUES (1) RETURNING *",
		"DELETE FROM t AS x USING u WHERE x.a = u.a", "MERGE INTO t USING (SELECT 1 AS a) s ON t.a = s.a WHEN MATCHED AND s.a > 0 THEN UPDATE SET b = 'x' WHEN NOT MATCHED THEN INSERT (a) VALUES (s.a)", "UPDATE t SET a = {'k': (1, 2)}, b = 'x' FROM u WHERE a IS DISTINCT FROM b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		st, err := Parse(q)
		if err == nil && (st.Kind == Delete || st.Kind == Update || st.Kind == Merge) {
			// The pieces are the statement's own text, in order.
			sets := st.Sets
			for _, c := range st.When {
				sets = append(sets, c.Sets...)
				for _, x := range append([]string{c.Cond}, c.Values...) {
					if !strings.Contains(q, x) {
						t.Fatalf("%q: clause %+v", q, c)
					}
				}
			}
			for _, a := range sets {
				if a.Column == "" || strings.TrimSpace(a.Expr) == "" || !strings.Contains(q, a.Expr) {
					t.Fatalf("%q: assignment %+v", q, a)
				}
			}
			if !strings.Contains(q, st.From) || !strings.Contains(q, st.Where) {
				t.Fatalf("%q: from %q where %q", q, st.From, st.Where)
			}
			return
		}
		if err != nil || (st.Kind != Insert && st.Kind != Copy) {
			return
		}
		again, err := Parse(st.Over(`"tgt"`, "", ""))
		if err != nil {
			t.Fatalf("%q rebuilt as %q: %v", q, st.Over(`"tgt"`, "", ""), err)
		}
		if again.Kind != st.Kind || again.Table != "tgt" || strings.TrimSpace(again.Query) != strings.TrimSpace(st.Query) || again.Path != st.Path || again.Options != st.Options {
			t.Fatalf("%q rebuilt as %q reads %+v, was %+v", q, st.Over(`"tgt"`, "", ""), again, st)
		}
	})
}

// Every DELETE and UPDATE built from the grammar's pieces reads back its
// table, alias, list, condition and assignments, whatever strings,
// parentheses, comments and keywords the pieces hold; Rows puts them in a
// query with the target's name where it says.
func TestChangeGrammar(t *testing.T) {
	targets := map[string]string{`t`: "t", `"My Table"`: "My Table", `"a""b"`: `a"b`}
	aliases := map[string]string{"": "", " AS x": "x", " y": "y", ` AS "w h"`: "w h"}
	lists := []string{"", "u", "u JOIN v USING (id)", "(SELECT 1 AS id WHERE 'where' <> 'from') AS s, w"}
	wheres := []string{"", "id = 1", "a IS DISTINCT FROM b AND s = 'x WHERE y'", "id IN (SELECT id FROM u WHERE z) -- WHERE\n", "CASE WHEN a THEN b END"}
	sets := [][2]string{{"a", "1"}, {`"b c"`, "'x, y'"}, {"s", "{'a': 1, 'b': [2, 3]}"}, {"d", "a IS NOT DISTINCT FROM b"}, {"e", "(SELECT max(v) FROM u WHERE u.k = t.k)"}}
	seps := []string{" ", "\n\t", " /* c */ "}
	n := 0
	for tgt, name := range targets {
		for alias, an := range aliases {
			for _, list := range lists {
				for _, where := range wheres {
					sep := seps[n%len(seps)]
					n++
					tail := ""
					if where != "" {
						tail = sep + "WHERE " + where
					}
					for _, kind := range []Kind{Delete, Update} {
						var text string
						var want []Assignment
						switch kind {
						case Delete:
							text = "DELETE" + sep + "FROM " + tgt + alias
							if list != "" {
								text += sep + "USING " + list
							}
						case Update:
							var parts []string
							for i, s := range sets[:1+n%len(sets)] {
								parts = append(parts, s[0]+" = "+s[1])
								col := s[0]
								if i == 1 {
									col = "b c"
								}
								want = append(want, Assignment{Column: col, Expr: s[1]})
							}
							text = "UPDATE " + tgt + alias + sep + "SET " + strings.Join(parts, ",")
							if list != "" {
								text += sep + "FROM " + list
							}
						}
						text += tail + ";"
						if !Is(text) {
							t.Fatalf("Is(%q) = false", text)
						}
						st, err := Parse(text)
						if err != nil {
							t.Fatalf("%q: %v", text, err)
						}
						wantWhere, _, _ := strings.Cut(where, " -- ") // a trailing comment is not kept
						if st.Kind != kind || st.Table != name || st.Alias != an || st.From != list || st.Where != strings.TrimSpace(wantWhere) {
							t.Fatalf("%q: kind %v table %q alias %q from %q where %q", text, st.Kind, st.Table, st.Alias, st.From, st.Where)
						}
						for i := range st.Sets {
							// A comment after an expression stays with it.
							x := strings.TrimSpace(st.Sets[i].Expr)
							if i < len(want) && strings.HasPrefix(x, want[i].Expr) && strings.TrimSpace(sqllex.Mask(x[len(want[i].Expr):])) == "" {
								x = want[i].Expr
							}
							st.Sets[i].Expr = x
						}
						if kind == Update && !slices.Equal(st.Sets, want) {
							t.Fatalf("%q: sets %q, want %q", text, st.Sets, want)
						}
						q, at := st.Rows("1")
						if !strings.HasPrefix(q[at:], `"`+strings.ReplaceAll(name, `"`, `""`)+`"`) || (st.Where != "" && !strings.Contains(q, st.Where)) {
							t.Fatalf("%q: Rows gives %q (target at %d)", text, q, at)
						}
					}
				}
			}
		}
	}
	for q, msg := range map[string]string{
		"DELETE t":                          "expected FROM",
		"DELETE FROM t WHERE":               "condition after WHERE",
		"DELETE FROM t USING":               "table after USING",
		"DELETE FROM t x y":                 "expected USING or WHERE",
		"UPDATE t x = 1":                    "expected SET",
		"UPDATE t SET":                      "col = expr",
		"UPDATE t SET a 1":                  "expected = after column a",
		"UPDATE t SET a =":                  "expression after a =",
		"UPDATE t SET a = 1, a = 2":         "assigned twice",
		"UPDATE t SET a = 1 FROM":           "table after FROM",
		"UPDATE t SET a = 1 WHERE":          "condition after WHERE",
		"DELETE FROM t RETURNING *":         "RETURNING",
		"UPDATE t SET (a, b) = (1, 2)":      "each column on its own",
		"UPDATE t SET t.a = 1":              "name the column alone",
		"UPDATE s.t SET a = 1":              "one-part names",
		"MERGE INTO t USING u ON t.a = u.a": "MERGE",
	} {
		if _, err := Parse(q); err == nil || errors.Is(err, ErrNotWrite) || !strings.Contains(err.Error(), msg) {
			t.Errorf("Parse(%q): %v, want an error with %q", q, err, msg)
		}
	}
}

// MERGE's clauses read back in order, with their conditions, actions,
// assignments, columns and values, whatever CASE expressions, strings
// and parentheses they hold; what rocklake does not run says so.
func TestMergeGrammar(t *testing.T) {
	q := `MERGE INTO "T" AS x USING (SELECT id, CASE WHEN a THEN 'WHEN' ELSE 'x' END AS v FROM u WHERE z ON 1) AS s ON x.id = s.id /* ON */
		WHEN MATCHED AND s.v = 'THEN' THEN UPDATE SET v = CASE WHEN s.v = 'a' THEN 1 ELSE 2 END, "w z" = 'x, y'
		WHEN MATCHED THEN DELETE
		WHEN NOT MATCHED AND (s.id > 3) THEN INSERT (id, v) VALUES (s.id, {'a': (1, 2)})
		WHEN NOT MATCHED BY TARGET THEN INSERT DEFAULT VALUES
		WHEN NOT MATCHED BY SOURCE AND x.id < 0 THEN DO NOTHING
		WHEN NOT MATCHED BY SOURCE THEN DELETE;`
	if !Is(q) {
		t.Fatal("Is(MERGE) = false")
	}
	st, err := Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != Merge || st.Table != "T" || st.Alias != "x" || !strings.HasPrefix(st.From, "(SELECT id, CASE") || !strings.HasSuffix(st.From, "AS s") || st.Where != "x.id = s.id" {
		t.Fatalf("head: %+v", st)
	}
	want := []MergeClause{
		{Matched: true, Cond: "s.v = 'THEN'", Action: MergeUpdate, Sets: []Assignment{{"v", "CASE WHEN s.v = 'a' THEN 1 ELSE 2 END"}, {"w z", "'x, y'"}}},
		{Matched: true, Action: MergeDelete},
		{Cond: "(s.id > 3)", Action: MergeInsert, Columns: []string{"id", "v"}, Values: []string{"s.id", "{'a': (1, 2)}"}},
		{Action: MergeInsert, DefaultValues: true},
		{BySource: true, Cond: "x.id < 0", Action: DoNothing},
		{BySource: true, Action: MergeDelete},
	}
	if len(st.When) != len(want) {
		t.Fatalf("%d clauses: %+v", len(st.When), st.When)
	}
	for i, w := range want {
		g := st.When[i]
		for j := range g.Sets {
			g.Sets[j].Expr = strings.TrimSpace(g.Sets[j].Expr)
		}
		if g.Matched != w.Matched || g.BySource != w.BySource || g.Cond != w.Cond || g.Action != w.Action || g.DefaultValues != w.DefaultValues ||
			!slices.Equal(g.Sets, w.Sets) || !slices.Equal(g.Columns, w.Columns) || !slices.Equal(g.Values, w.Values) {
			t.Errorf("clause %d: %+v, want %+v", i, g, w)
		}
	}
	for q, msg := range map[string]string{
		"MERGE t USING u ON t.a = u.a WHEN MATCHED THEN DELETE":                                         "expected INTO",
		"MERGE INTO t USING u WHEN MATCHED THEN DELETE":                                                 "expected ON",
		"MERGE INTO t USING u ON t.a = u.a":                                                             "expected WHEN",
		"MERGE INTO t USING u ON t.a = u.a WHEN MATCHED DELETE":                                         "expected THEN",
		"MERGE INTO t USING u ON t.a = u.a WHEN SOMETIMES THEN DELETE":                                  "MATCHED or NOT MATCHED",
		"MERGE INTO t USING u ON t.a = u.a WHEN MATCHED THEN UPDATE":                                    "list the columns",
		"MERGE INTO t USING u ON t.a = u.a WHEN MATCHED THEN UPDATE SET *":                              "list the columns",
		"MERGE INTO t USING u ON t.a = u.a WHEN NOT MATCHED THEN INSERT *":                              "list the columns",
		"MERGE INTO t USING u ON t.a = u.a WHEN NOT MATCHED THEN INSERT BY NAME":                        "list the columns",
		"MERGE INTO t USING u ON t.a = u.a WHEN MATCHED THEN ERROR":                                     "ERROR",
		"MERGE INTO t USING u ON t.a = u.a WHEN MATCHED THEN INSERT VALUES (1)":                         "WHEN NOT MATCHED",
		"MERGE INTO t USING u ON t.a = u.a WHEN NOT MATCHED THEN DELETE":                                "BY SOURCE",
		"MERGE INTO t USING u ON t.a = u.a WHEN MATCHED THEN DELETE WHEN MATCHED THEN UPDATE SET a = 1": "second unconditional",
		"MERGE INTO t USING u USING (a) WHEN MATCHED THEN DELETE":                                       "ON",
		"MERGE INTO t USING u JOIN v ON u.a = v.a ON t.a = u.a WHEN MATCHED THEN DELETE":                "parentheses",
		"MERGE INTO t USING u ON t.a = u.a WHEN MATCHED THEN DELETE RETURNING *":                        "RETURNING",
		"MERGE INTO t USING u ON t.a = u.a WHEN MATCHED THEN UPDATE SET a = 1, a = 2":                   "assigned twice",
	} {
		if _, err := Parse(q); err == nil || errors.Is(err, ErrNotWrite) || !strings.Contains(err.Error(), msg) {
			t.Errorf("Parse(%q): %v, want an error with %q", q, err, msg)
		}
	}
}
