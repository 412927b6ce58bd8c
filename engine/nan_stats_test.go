package engine

import (
	"context"
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
