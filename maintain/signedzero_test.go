package maintain

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// TestFloatPartitionsReadAsDuckDBReadsThem: a table whose FLOAT or DOUBLE
// column is a Hive partition column reads each directory's value as
// DuckDB's hive_partitioning reads it (its text cast to the type), before
// and after compact writes every partition anew. A negative zero (-0,
// -0.0, -0e5, ...) is refused, naming the directory, and the catalog stays
// as it was: rocklake's codecs read it as 0.0 and partitions are kept
// apart by value, where DuckDB would read the sign.
func TestFloatPartitionsReadAsDuckDBReadsThem(t *testing.T) {
	ctx := context.Background()
	oracle, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer oracle.Close()
	for _, typ := range []string{"DOUBLE", "FLOAT"} {
		dir := t.TempDir()
		write := func(value string, i int) string {
			vals := []*types.Value{}
			for j := range 3 {
				v := types.IntValue(int64(i*10 + j))
				vals = append(vals, &v)
			}
			path := filepath.Join(dir, "k="+value, fmt.Sprintf("f%d.parquet", i))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := pqwrite.Write(path, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: vals}}, pqwrite.Options{}); err != nil {
				t.Fatal(err)
			}
			return path
		}
		var good []string
		for i, v := range []string{"0.0", "0", "-1.5", "2.25", "1e3", "-0.5", "0.1", "-3.4e38", "1e-45", "-1e-45", "__HIVE_DEFAULT_PARTITION__"} {
			good = append(good, write(v, i))
		}
		c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
		defs := []catalog.ColumnDef{{Name: "x", Type: "BIGINT"}, {Name: "k", Type: typ}}
		if err := catalog.PartitionBy(defs, []string{"k"}); err != nil {
			t.Fatal(err)
		}
		tx, _ := c.Begin()
		tx.CreateTable("t", defs)
		if _, err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := ingest.Add(c, "t", good, ingest.Options{Hive: true}); err != nil {
			t.Fatal(err)
		}
		for i, v := range []string{"-0", "-0.0", "-0.000", "-0e5", "-0E-3", "-00.0"} {
			p := write(v, 100+i)
			r, _ := c.Read(catalog.Latest)
			before := r.Snapshot().ID
			r.Close()
			_, err := ingest.Add(c, "t", []string{p}, ingest.Options{Hive: true})
			if !errors.Is(err, ingest.ErrSchemaMismatch) || !strings.Contains(err.Error(), "k="+v) || !strings.Contains(err.Error(), "negative zero") {
				t.Errorf("%s k=%s: %v, want a refusal naming the directory", typ, v, err)
			}
			r, _ = c.Read(catalog.Latest)
			if r.Snapshot().ID != before {
				t.Errorf("%s k=%s: a refused add made a snapshot", typ, v)
			}
			r.Close()
			// The catalog refuses it too, whoever registers the file.
			tx, _ := c.Begin()
			tx.AddFiles("t", catalog.NewFile{Path: p, RecordCount: 3, FileSizeBytes: 1,
				PartitionValues: []catalog.NewPartitionValue{{Column: "k", Value: stats.Known(v)}}})
			if _, err := tx.Commit(); !errors.Is(err, catalog.ErrInvalid) || !strings.Contains(err.Error(), "negative zero") {
				t.Errorf("%s k=%s through the catalog: %v", typ, v, err)
			}
		}
		if _, err := ingest.Add(c, "t", []string{write("NaN", 200)}, ingest.Options{Hive: true}); !errors.Is(err, ingest.ErrSchemaMismatch) {
			t.Errorf("%s k=NaN: %v, want a refusal", typ, err)
		}
		e, err := engine.New(c)
		if err != nil {
			t.Fatal(err)
		}
		const q = "SELECT x, k::VARCHAR, left(k::BIT::VARCHAR, 1) AS sign FROM t ORDER BY x"
		var lits []string
		for _, p := range good {
			lits = append(lits, "'"+p+"'")
		}
		want := oracleRows(t, oracle, fmt.Sprintf("SELECT x, k::VARCHAR, left(k::BIT::VARCHAR, 1) AS sign FROM read_parquet([%s], hive_partitioning = true, hive_types = {'k': %s}) ORDER BY x",
			strings.Join(lits, ", "), typ))
		check := func(when string) {
			t.Helper()
			res, err := e.Query(ctx, q, engine.QueryOptions{Snapshot: catalog.Latest})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range res.Rows {
				got = append(got, joinRow(r))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s %s:\n%s\nDuckDB reads the directories as\n%s", typ, when, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
		check("as added")
		if _, err := MergeSmallFiles(ctx, e, "t", MergeOptions{RowsPerFile: 1000}); err != nil {
			t.Fatal(err)
		}
		check("after compact")
		e.Close()
	}
}

func oracleRows(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]*string, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, joinRow(vals))
	}
	return out
}

func joinRow(r []*string) string {
	var vals []string
	for _, v := range r {
		if v == nil {
			vals = append(vals, "NULL")
		} else {
			vals = append(vals, *v)
		}
	}
	return strings.Join(vals, "|")
}
