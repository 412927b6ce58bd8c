package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// typeNameColumns are a table's columns, one of each type a user can
// create, with a value of each.
var typeNameColumns = []struct{ name, def, value string }{
	{"b", "BOOLEAN", "true"},
	{"i1", "TINYINT", "1"}, {"i2", "SMALLINT", "2"}, {"i4", "INTEGER", "4"}, {"i8", "BIGINT", "8"},
	{"i16", "HUGEINT", "16"}, {"u1", "UTINYINT", "1"}, {"u2", "USMALLINT", "2"}, {"u4", "UINTEGER", "4"},
	{"u8", "UBIGINT", "8"}, {"u16", "UHUGEINT", "16"},
	{"f4", "FLOAT", "1.5"}, {"f8", "DOUBLE", "2.5"}, {"d18", "DECIMAL(18,3)", "1.250"}, {"d38", "DECIMAL(38,10)", "2.5"},
	{"dt", "DATE", "DATE '2026-01-02'"}, {"tm", "TIME", "TIME '01:02:03'"},
	{"ts", "TIMESTAMP", "TIMESTAMP '2026-01-02 03:04:05'"}, {"ts_s", "TIMESTAMP_S", "TIMESTAMP '2026-01-02 03:04:05'"},
	{"ts_ms", "TIMESTAMP_MS", "TIMESTAMP '2026-01-02 03:04:05'"}, {"ts_ns", "TIMESTAMP_NS", "TIMESTAMP '2026-01-02 03:04:05'"},
	{"tz", "TIMESTAMPTZ", "TIMESTAMPTZ '2026-01-02 03:04:05+00'"},
	{"iv", "INTERVAL", "INTERVAL 3 DAY"}, {"id", "UUID", "'6f1c6b9e-8d0a-4a5e-9f57-7f0c1d2e3a4b'"},
	{"s", "VARCHAR", "'x'"}, {"bl", "BLOB", "'\\x01'::BLOB"},
	{"l", "BIGINT[]", "[1, 2]"}, {"st", `STRUCT(a INTEGER, "B c" TIMESTAMPTZ[])`, "{'a': 1, 'B c': [TIMESTAMPTZ '2026-01-02 03:04:05+00']}"},
	{"m", "MAP(VARCHAR, DOUBLE)", "MAP {'k': 1.5}"},
}

// Every command that shows a column's type (table describe, stats,
// analyze; text and JSON) shows DuckDB's own name for it: the name
// typeof() gives for the column in a query, so a user reads the type they
// write in SQL, never the catalog's DuckLake spelling (int64, timestamptz).
func TestTypeNamesAreDuckDBs(t *testing.T) {
	dir := newCatalogDir(t)
	var defs, values, typeofs []string
	for _, c := range typeNameColumns {
		defs = append(defs, c.name+" "+c.def)
		values = append(values, c.value)
		typeofs = append(typeofs, fmt.Sprintf("typeof(%s) AS %s", c.name, c.name))
	}
	mustRun(t, "--catalog", dir, "query", fmt.Sprintf("CREATE TABLE t (%s)", strings.Join(defs, ", ")))
	mustRun(t, "--catalog", dir, "query", fmt.Sprintf("INSERT INTO t VALUES (%s)", strings.Join(values, ", ")))

	// DuckDB's names for the columns, through a query over the table.
	var duck map[string]string
	out := mustRun(t, "--catalog", dir, "--format", "jsonl", "query", "SELECT "+strings.Join(typeofs, ", ")+" FROM t")
	if err := json.Unmarshal([]byte(out), &duck); err != nil {
		t.Fatalf("typeof: %v: %s", err, out)
	}

	type column struct {
		Name   string `json:"name"`
		Column string `json:"column"`
		Type   string `json:"type"`
	}
	check := func(where string, cols []column) {
		t.Helper()
		seen := 0
		for _, c := range cols {
			name := c.Name + c.Column
			want, ok := duck[name]
			if !ok {
				continue // a nested column's field
			}
			seen++
			if c.Type != want {
				t.Errorf("%s: column %s shows type %q, DuckDB's name is %q", where, name, c.Type, want)
			}
		}
		if seen != len(typeNameColumns) {
			t.Errorf("%s: %d of %d columns shown", where, seen, len(typeNameColumns))
		}
	}

	var described struct{ Columns []column }
	out = mustRun(t, "--catalog", dir, "--format", "json", "table", "describe", "t")
	if err := json.Unmarshal([]byte(out), &described); err != nil {
		t.Fatalf("describe: %v: %s", err, out)
	}
	check("table describe --format json", described.Columns)

	var stats struct{ Columns []column }
	out = mustRun(t, "--catalog", dir, "--format", "json", "stats", "t")
	if err := json.Unmarshal([]byte(out), &stats); err != nil {
		t.Fatalf("stats: %v: %s", err, out)
	}
	check("stats --format json", stats.Columns)

	var analyzed []column
	for _, c := range typeNameColumns {
		out, err := run(t, "--catalog", dir, "--format", "json", "analyze", "t", "--column", c.name)
		if err != nil {
			continue // a type analyze does not measure (no order)
		}
		var a column
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			t.Fatalf("analyze: %v: %s", err, out)
		}
		analyzed = append(analyzed, a)
	}
	if len(analyzed) < len(typeNameColumns)/2 {
		t.Errorf("analyze measured %d of %d columns", len(analyzed), len(typeNameColumns))
	}
	for _, a := range analyzed {
		if want := duck[a.Column]; a.Type != want {
			t.Errorf("analyze --format json: column %s shows type %q, DuckDB's name is %q", a.Column, a.Type, want)
		}
	}

	// Text: each column's row holds DuckDB's name.
	for _, args := range [][]string{{"table", "describe", "t"}, {"stats", "t"}} {
		out := mustRun(t, append([]string{"--catalog", dir}, args...)...)
		for _, c := range typeNameColumns {
			found := false
			for _, line := range strings.Split(out, "\n") {
				f := strings.Fields(line)
				if len(f) > 1 && (f[0] == c.name || f[1] == c.name) {
					found = strings.Contains(line, " "+duck[c.name]+" ")
				}
			}
			if !found {
				t.Errorf("%s: no row of column %s shows %q:\n%s", strings.Join(args, " "), c.name, duck[c.name], out)
			}
		}
	}
}
