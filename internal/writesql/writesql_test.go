package writesql

import (
	"errors"
	"strings"
	"testing"
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
		"INSERT INTO t /* c */ (SELECT 1)", "INSERT INTO t AS x (a) VALUES (1) RETURNING *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		st, err := Parse(q)
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
