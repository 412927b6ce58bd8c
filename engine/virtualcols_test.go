package engine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
)

// DuckDB's file readers give virtual columns (filename, file_row_number,
// file_index) that catalog tables do not have: every way a query names one
// on a catalog table fails saying so, while a table with a real column of
// that name reads it as any other column.
func TestVirtualColumnsRefusedClearly(t *testing.T) {
	dir := t.TempDir()
	c, e := intTable(t, dir, 1, 2, 3)
	ctx := context.Background()
	latest := QueryOptions{Snapshot: catalog.Latest}
	for _, v := range virtualColumns {
		for _, q := range []string{
			"SELECT " + v + " FROM t",
			"SELECT t." + v + " FROM t",
			"SELECT a." + v + ", x FROM t a",
			"SELECT x FROM t WHERE " + v + " IS NOT NULL",
			"SELECT count(*) FROM (SELECT " + v + " FROM t)",
			"SELECT x FROM t ORDER BY " + v,
		} {
			_, err := e.Query(ctx, q, latest)
			if err == nil || !strings.Contains(err.Error(), v+" is a virtual column of DuckDB's file readers") {
				t.Errorf("%s: %v", q, err)
			}
		}
	}
	// A column of the same name that the table has is the table's.
	named := filepath.Join(dir, "b.parquet")
	db, _ := Open("")
	defer db.Close()
	if _, err := db.Exec("COPY (SELECT 7 AS filename, 8 AS file_row_number) TO '" + named + "' (FORMAT parquet)"); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "n", []string{named}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Query(ctx, "SELECT filename, file_row_number FROM n", latest)
	if err != nil || rowsText(res.Rows) != "7|8|;" {
		t.Fatalf("real columns named like virtual ones: %v %v", err, res)
	}
}
