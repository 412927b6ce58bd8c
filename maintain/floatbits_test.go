package maintain

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/curve"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// TestRewritesKeepFloatBits: compact and optimize write every FLOAT and
// DOUBLE value back bit for bit (-0.0 with its sign, NaN with its sign and
// payload) whatever lays the rows out: a declared layout whose field is
// the float column itself (its rows are numbered by partition, which
// DuckDB sorts on a normalised key), with another field, through a
// transform, a sort key, a curve. Each row's bits are compared before and
// after, by its id; a rewrite that cannot keep them must fail, not commit.
func TestRewritesKeepFloatBits(t *testing.T) {
	ctx := context.Background()
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	values := []string{"'-0.0'", "0.0", "-1.5", "'nan'", "-('nan'::DOUBLE)", "NULL", "'inf'", "'-inf'", "2.5"}
	for _, typ := range []string{"DOUBLE", "FLOAT"} {
		for _, layout := range [][]string{nil, {"k"}, {"k", "bucket(2, x)"}, {"bucket(3, k)"}} {
			dir := t.TempDir()
			var paths []string
			for f := range 3 {
				p := filepath.Join(dir, fmt.Sprintf("f%d.parquet", f))
				var cases []string
				for i, v := range values {
					cases = append(cases, fmt.Sprintf("WHEN %d THEN (%s)::%s", i, v, typ))
				}
				q := fmt.Sprintf("COPY (SELECT i AS x, CASE i %% %d %s END AS k FROM range(%d, %d) r(i)) TO '%s' (FORMAT parquet)",
					len(values), strings.Join(cases, " "), f*20, f*20+20, p)
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
			if _, err := ingest.Add(c, "t", paths, ingest.Options{Create: true}); err != nil {
				t.Fatal(err)
			}
			if layout != nil {
				tx, _ := c.Begin()
				tx.AlterTable("t", catalog.Alteration{Kind: catalog.SetPartitioning, Partitioning: layout})
				if _, err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			e, err := engine.New(c)
			if err != nil {
				t.Fatal(err)
			}
			bits := func() string {
				t.Helper()
				res, err := e.Query(ctx, "SELECT string_agg(x || ':' || coalesce(k::BIT::VARCHAR, 'NULL'), ',' ORDER BY x) FROM t", engine.QueryOptions{Snapshot: catalog.Latest})
				if err != nil {
					t.Fatal(err)
				}
				return *res.Rows[0][0]
			}
			want := bits()
			if !strings.Contains(want, ":1000000000000") || !strings.Contains(want, ":1111111111111") && typ == "DOUBLE" {
				t.Fatalf("%s: the table does not hold -0.0 and -NaN: %s", typ, want)
			}
			for _, op := range []struct {
				name string
				run  func() error
			}{
				{"compact", func() error { _, err := MergeSmallFiles(ctx, e, "t", MergeOptions{RowsPerFile: 1000}); return err }},
				{"optimize by x", func() error {
					_, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"x"}, RowsPerFile: 11})
					return err
				}},
				{"optimize by k", func() error {
					_, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"k"}, RowsPerFile: 5})
					return err
				}},
				{"optimize along a curve", func() error {
					_, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"k", "x"}, Curve: curve.Hilbert, RowsPerFile: 13})
					return err
				}},
			} {
				if err := op.run(); err != nil {
					t.Errorf("%s, layout %v: %s: %v", typ, layout, op.name, err)
					continue
				}
				if got := bits(); got != want {
					t.Errorf("%s, layout %v: %s changed the bits of some values:\n%s\nwant\n%s", typ, layout, op.name, got, want)
				}
			}
			e.Close()
		}
	}
}
