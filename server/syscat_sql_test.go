package server

import (
	"strings"
	"testing"
)

// Each rewrite, and what is left alone: a query with nothing of
// PostgreSQL's own comes out as it went in.
func TestRewriteSystemQuery(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT relname FROM pg_catalog.pg_class":                         `SELECT relname FROM pc_7."pg_class"`,
		"SELECT * FROM pg_am a, pg_catalog.pg_namespace":                  `SELECT * FROM pgs."pg_am" a, pgs."pg_namespace"`,
		"SELECT * FROM information_schema.columns":                        `SELECT * FROM is_7."columns"`,
		"SELECT * FROM information_schema.routines":                       `SELECT * FROM iss."routines"`,
		"SELECT pg_class.oid FROM pg_class":                               `SELECT pg_class.oid FROM pc_7."pg_class"`,
		"SELECT 1 AS pg_class":                                            "SELECT 1 AS pg_class",
		"SELECT pg_catalog.lower('A')":                                    "SELECT lower('A')",
		"SELECT pg_catalog.format_type(1, 2), format_type(3, 4)":          "SELECT pc_7.format_type(1, 2), pc_7.format_type(3, 4)",
		"SELECT x FROM t WHERE a OPERATOR(pg_catalog.=) 1":                "SELECT x FROM t WHERE a = 1",
		"SELECT 'a' COLLATE pg_catalog.default, 'b' COLLATE \"C\"":        "SELECT 'a' , 'b' ",
		"SELECT a ~ '^x'":                                                 "SELECT a ~ ('(?s:.*)(?:' || ('^x') || ')(?s:.*)')",
		"SELECT a !~* b.c":                                                "SELECT a !~ ('(?i)(?s:.*)(?:' || (b.c) || ')(?s:.*)')",
		"SELECT ~ 5":                                                      "SELECT ~ 5",
		"SELECT 'pg_class'::regclass":                                     "SELECT pc_7.__to_regclass('pg_class')",
		"SELECT 'x'::text::pg_catalog.regtype":                            "SELECT pc_7.__to_regtype('x'::text)",
		"SELECT c.oid::regclass, c.oid::regclass::text":                   "SELECT c.oid, pc_7.__regclass_name(c.oid)",
		"SELECT f(a, b)::regclass":                                        "SELECT f(a, b)",
		"SELECT x::name, y::\"char\", z::pg_catalog.int4":                 "SELECT x::VARCHAR, y::VARCHAR, z::int4",
		"SELECT * FROM pg_attribute a LEFT JOIN t ON a.attnum = ANY(t.k)": `SELECT * FROM pc_7."pg_attribute" a LEFT JOIN t ON list_contains((t.k), a.attnum)`,
		"SELECT 1 WHERE x <> ALL (ARRAY[1])":                              "SELECT 1 WHERE NOT list_contains((ARRAY[1]), x)",
		"SELECT 1 WHERE x = ANY (SELECT 1)":                               "SELECT 1 WHERE x = ANY (SELECT 1)",
		"SELECT s FROM generate_series(1, 2) s":                           "SELECT s FROM generate_series(1, 2) s(s)",
		"SELECT s FROM generate_series(1, 2) AS s(n)":                     "SELECT s FROM generate_series(1, 2) AS s(n)",
		"SELECT count(x) c FROM t":                                        "SELECT count(x) c FROM t",
		"SELECT json_build_object('a', 1)":                                "SELECT json_object('a', 1)",
		"SELECT 'pg_catalog.pg_class', \"pg_class\" FROM t -- pg_class":   `SELECT 'pg_catalog.pg_class', pc_7."pg_class" FROM t -- pg_class`,
		"SELECT E'it''s \\' pg_class' /* pg_class */":                     "SELECT E'it''s \\' pg_class' /* pg_class */",
		"SELECT $1, $$ pg_class $$":                                       "SELECT $1, $$ pg_class $$",
	} {
		got, _ := rewriteSystemQuery(in, 7)
		if got != want {
			t.Errorf("%s\n got %s\nwant %s", in, got, want)
		}
	}
}

// Rewriting takes any text without failing, and keeps every byte of a
// statement with no PostgreSQL syntax of its own, whatever its spacing,
// strings and comments.
func FuzzRewriteSystemQuery(f *testing.F) {
	for _, s := range []string{"SELECT a, b FROM t WHERE x = 1", "SELECT 'a''b', \"q\"\"x\" -- c\n", "/* a /* b */ */ SELECT 1e-5, .5, $1", "E'\\", "'a", "/* x", "$a$ b"} {
		f.Add(s)
	}
	for _, s := range []string{"SELECT c.oid::regclass::text FROM pg_class c WHERE relname ~ $1 AND x = ANY(y)", "SELECT * FROM generate_series(1,2) s, pg_am"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		// Tokens cover the input exactly, however it ends.
		var b strings.Builder
		for _, tok := range sysTokenize(q) {
			b.WriteString(tok.text)
		}
		if b.String() != q {
			t.Fatalf("tokens of %q rebuild %q", q, b.String())
		}
		// The pre-check never turns away a statement for the catalogs.
		if _, reads := rewriteSystemQuery(q, 1); reads && !mayNameSystemCatalog(q) {
			t.Fatalf("%q is for the catalogs, and the pre-check says no", q)
		}
		lower := strings.ToLower(q)
		for _, w := range []string{"pg_", "information_schema", "operator", "collate", "~", "::", "any", "all", "some", "(", "json_", "string_to_array",
			"format_type", "has_", "obj_", "col_", "shobj_", "array_", "current_schema", "quote_ident", "to_reg"} {
			if strings.Contains(lower, w) {
				return
			}
		}
		if got, reads := rewriteSystemQuery(q, 1); got != q || reads {
			t.Fatalf("%q became %q (reads %v)", q, got, reads)
		}
	})
}
