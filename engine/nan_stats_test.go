package engine

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/types"
)

// A file whose float statistics leave NaN out, as the Parquet format
// requires and arrow-go, parquet-mr and pyarrow write them: DuckDB 1.5.6
// takes its min/max as the whole range by default and folds `c > 127` to
// false, dropping the NaN rows (duckdb/duckdb#25521; found by the
// whole-query fuzzer, seed 500088). rocklake's views read files with
// can_have_nan, so every comparison sees the NaN; rocklake's own pruning
// already treats an unknown contains_nan as "may hold NaN".
func TestNaNOutsideFileStatistics(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "nan.parquet")
	var vals []*types.Value
	for _, f := range []float64{-0.004, math.NaN(), -0.002, 5, math.Copysign(math.NaN(), -1)} {
		v := types.FloatValue(f)
		vals = append(vals, &v)
	}
	if err := pqwrite.Write(p, []pqwrite.Column{{Name: "c", Type: types.MustParseType("float64"), Values: vals}}, pqwrite.Options{}); err != nil {
		t.Fatal(err)
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", []string{p}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// DuckDB orders NaN above every number: both NaN rows are > 127, and
	// neither is < 0 or = 5.
	for q, want := range map[string]string{
		"SELECT count(*) FROM t WHERE c > 127":                   "2",
		"SELECT count(*) FROM t WHERE c <> 5":                    "4",
		"SELECT count(*) FROM t WHERE c <= 5":                    "3",
		"SELECT count(*) FILTER (WHERE c > 127) FROM t":          "2",
		"SELECT sum(CASE WHEN c > 127 THEN 1 ELSE 0 END) FROM t": "2",
	} {
		for _, opts := range []QueryOptions{{Snapshot: catalog.Latest}, {Snapshot: catalog.Latest, NoPruning: true, NoMetadataAnswers: true}} {
			res, err := e.Query(context.Background(), q, opts)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if got := *res.Rows[0][0]; got != want {
				t.Errorf("%s (no pruning %v): %s, want %s", q, opts.NoPruning, got, want)
			}
		}
	}
}

// DuckDB 1.5.6 answers an ungrouped min/max over one Parquet file from the
// file's statistics, and read with can_have_nan (as the views read every
// file) a float column's statistics there end in NaN: `SELECT max(f)` over
// a one-file table answered NaN for a file without NaN, also under a WHERE
// every row group satisfies (found by the schema-evolution fuzzer, seed
// 2034). Every database runs without that optimizer (disabledOptimizers);
// a file that holds a NaN still answers NaN, as DuckDB orders it last.
func TestFloatMaxOverOneFile(t *testing.T) {
	dir := t.TempDir()
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Written by DuckDB: its footers are what its reader turns into the
	// statistics the answer came from (arrow-go's did not).
	write := func(name, values string) string {
		p := filepath.Join(dir, name)
		q := fmt.Sprintf("COPY (SELECT row_number() OVER () AS id, v::FLOAT AS f, v::DOUBLE AS d FROM (VALUES %s) x(v)) TO '%s'", values, p)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		return p
	}
	clean := write("clean.parquet", "(3), (-1.5), (10), (0)")
	withNaN := write("nan.parquet", "(3), ('nan'::DOUBLE), (10)")
	for _, tc := range []struct {
		file string
		want string // max(f), max(d), min(f), min(d)
	}{{clean, "10.0|10.0|-1.5|-1.5"}, {withNaN, "nan|nan|3.0|3.0"}} {
		c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
		if _, err := ingest.Add(c, "t", []string{tc.file}, ingest.Options{Create: true}); err != nil {
			t.Fatal(err)
		}
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, where := range []string{"", " WHERE id >= 0", " WHERE id < 100"} {
			q := "SELECT max(f)::VARCHAR || '|' || max(d)::VARCHAR || '|' || min(f)::VARCHAR || '|' || min(d)::VARCHAR FROM t" + where
			for _, opts := range []QueryOptions{{Snapshot: catalog.Latest}, {Snapshot: catalog.Latest, NoPruning: true, NoMetadataAnswers: true}} {
				res, err := e.Query(context.Background(), q, opts)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				if got := *res.Rows[0][0]; got != tc.want {
					t.Errorf("%s over %s (no pruning %v): %s, want %s", q, filepath.Base(tc.file), opts.NoPruning, got, tc.want)
				}
			}
		}
		e.Close()
	}
}
