package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/engine"
)

// verify --deep over a table with columns named as DuckDB's own virtual
// columns and SQL words, and a few hundred columns: no problem reported
// where there is none, and one query per chunk of columns, not per column.
func TestVerifyDeepOddAndManyColumns(t *testing.T) {
	dir := newCatalogDir(t)
	data := t.TempDir()
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cols := []string{`i AS "file_row_number"`, `i + 1 AS "filename"`, `i * 2 AS "rowid"`, `'x' || i AS "select"`, `i::DOUBLE / 3 AS "d"`}
	for j := range 400 {
		cols = append(cols, fmt.Sprintf(`i * %d AS "c%d"`, j, j))
	}
	p := filepath.Join(data, "wide.parquet")
	if _, err := db.Exec(fmt.Sprintf("COPY (SELECT %s FROM range(3) r(i)) TO '%s'", strings.Join(cols, ", "), p)); err != nil {
		t.Fatal(err)
	}
	q := filepath.Join(data, "rg.parquet")
	if _, err := db.Exec(fmt.Sprintf(`COPY (SELECT i AS "rowid", i %% 7 AS "filename" FROM range(1000) r(i)) TO '%s' (ROW_GROUP_SIZE 100)`, q)); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "--catalog", dir, "add", "wide", p, "--create", "--no-auto-filters")
	mustRun(t, "--catalog", dir, "add", "rg", q, "--create", "--no-auto-filters")
	for _, table := range []string{"wide", "rg"} {
		out, err := run(t, "--catalog", dir, "verify", table, "--deep")
		if err != nil || !strings.Contains(out, " 0 problems") {
			t.Fatalf("verify --deep %s: %v\n%s", table, err, out)
		}
	}
}
