package maintain

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// A table whose columns changed after its files were registered: deep
// verify reads each file through the column mapping and finds nothing
// wrong, and optimize and compact rewrite the rows as queries read them
// (old names, defaults, widened types), not as the files name them.
func TestAlteredTables(t *testing.T) {
	dir := t.TempDir()
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	write := func(i int, cols ...pqwrite.Column) {
		path := filepath.Join(dir, fmt.Sprintf("f%d.parquet", i))
		if err := pqwrite.Write(path, cols, pqwrite.Options{RowGroupRows: 7}); err != nil {
			t.Fatal(err)
		}
		if _, err := ingest.Add(c, "t", []string{path}, ingest.Options{Create: i == 0}); err != nil {
			t.Fatal(err)
		}
	}
	col := func(name, typ string, base int64) pqwrite.Column {
		ty := types.MustParseType(typ)
		vals := make([]*types.Value, 20)
		for i := range vals {
			if i%6 == 5 {
				continue
			}
			v := types.IntValue(base + int64(i))
			vals[i] = &v
		}
		return pqwrite.Column{Name: name, Type: ty, Values: vals}
	}
	alter := func(a catalog.Alteration) {
		tx, _ := c.Begin()
		tx.AlterTable("t", a)
		if _, err := tx.Commit(); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
	}
	write(0, col("id", "int64", 0), col("a", "int32", 100), col("gone", "int64", 7))
	alter(catalog.Alteration{Kind: catalog.AddColumn, Column: "b", Type: "INTEGER", Default: stats.Known("42")})
	write(1, col("id", "int64", 20), col("a", "int32", 200), col("gone", "int64", 7), col("b", "int32", 300))
	alter(catalog.Alteration{Kind: catalog.RenameColumn, Column: "a", NewName: "a2"})
	alter(catalog.Alteration{Kind: catalog.SetColumnType, Column: "a2", Type: "BIGINT"})
	alter(catalog.Alteration{Kind: catalog.DropColumn, Column: "gone"})
	// The dropped name again, another column: the older files' "gone"
	// must not be read as it.
	alter(catalog.Alteration{Kind: catalog.AddColumn, Column: "gone", Type: "BIGINT"})
	write(2, col("id", "int64", 40), col("a2", "int64", 5_000_000_000), col("b", "int32", 400), col("gone", "int64", -1))

	e, _ := engine.New(c)
	defer e.Close()
	ctx := context.Background()
	const q = "SELECT id, a2, b, gone FROM t ORDER BY ALL"
	want := answerOf(t, e, catalog.Latest, q)
	if sum := answerOf(t, e, catalog.Latest, "SELECT count(*), sum(a2), sum(b), count(gone) FROM t"); sum != "60|85000005571|13054|17" {
		t.Errorf("the altered table reads %s", sum)
	}
	rep, err := Verify(ctx, e, "t", catalog.Latest, true)
	if err != nil || len(rep.Problems) != 0 || rep.Units == 0 {
		t.Fatalf("deep verify of an altered table: %+v %v", rep, err)
	}
	if _, err := MergeSmallFiles(ctx, e, "t", MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := answerOf(t, e, catalog.Latest, q); got != want {
		t.Errorf("after compact:\n%s\nwant\n%s", got, want)
	}
	if _, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	if got := answerOf(t, e, catalog.Latest, q); got != want {
		t.Errorf("after optimize:\n%s\nwant\n%s", got, want)
	}
	if rep, err := Verify(ctx, e, "t", catalog.Latest, true); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("deep verify after the rewrites: %+v %v", rep, err)
	}
}

// A declared layout (month(ts), bucket(3, id)): compact and optimize write
// files that each hold one partition, and every row still reads the same.
func TestRewritesHonourPartitioning(t *testing.T) {
	dir := t.TempDir()
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	var paths []string
	for f := range 4 {
		n := 50
		ts, ids, vs := make([]*types.Value, n), make([]*types.Value, n), make([]*types.Value, n)
		for i := range n {
			// Rows of every file spread over three months.
			a := types.IntValue((1704067200 + int64((f*n+i)%3)*31*86400 + int64(i)*3600) * 1_000_000)
			b := types.IntValue(int64(f*n + i))
			if i%9 == 4 {
				ts[i] = nil
			} else {
				ts[i] = &a
			}
			ids[i], vs[i] = &b, &b
		}
		path := filepath.Join(dir, fmt.Sprintf("f%d.parquet", f))
		if err := pqwrite.Write(path, []pqwrite.Column{
			{Name: "ts", Type: types.MustParseType("timestamp"), Values: ts},
			{Name: "id", Type: types.MustParseType("int64"), Values: ids},
			{Name: "v", Type: types.MustParseType("int64"), Values: vs},
		}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	if _, err := ingest.Add(c, "t", paths, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	tx, _ := c.Begin()
	tx.AlterTable("t", catalog.Alteration{Kind: catalog.SetPartitioning, Partitioning: []string{"month(ts)", "bucket(3, id)"}})
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	e, _ := engine.New(c)
	defer e.Close()
	ctx := context.Background()
	const q = "SELECT * FROM t ORDER BY id"
	want := answerOf(t, e, catalog.Latest, q)
	onePartitionEach := func(what string) {
		t.Helper()
		r, _ := c.Read(catalog.Latest)
		defer r.Close()
		tb, _ := r.Table("t")
		files, _ := r.Files(tb.ID)
		if len(files) < 9 {
			t.Errorf("%s: %d files, want one at least per partition (3 months x 3 buckets + NULLs)", what, len(files))
		}
		for _, f := range files {
			var n int
			// A row whose ts is NULL has the key (NULL, bucket): one more
			// partition, counted like the others.
			err := e.DB().QueryRow(`SELECT count(DISTINCT {'m': year(ts) * 12 + month(ts), 'b': hash(id) % 3}) FROM read_parquet(?)`, f.Location(tb)).Scan(&n)
			if err != nil || n != 1 {
				t.Errorf("%s: %s holds %d partitions (%v)", what, f.Path, n, err)
			}
			// Its layout values, recorded: those of its rows.
			var month, bucket sql.NullString
			err = e.DB().QueryRow(`SELECT any_value(strftime(ts, '%Y-%m')), any_value((hash(id) % 3)::VARCHAR) FROM read_parquet(?)`, f.Location(tb)).Scan(&month, &bucket)
			want := []catalog.LayoutValue{{ColumnID: 1, Transform: "month"}, {ColumnID: 2, Transform: "bucket(3)"}}
			if month.Valid {
				want[0].Value = stats.Known(month.String)
			}
			want[1].Value = stats.Known(bucket.String)
			if err != nil || fmt.Sprint(f.LayoutValues) != fmt.Sprint(want) {
				t.Errorf("%s: %s: layout values %v, want %v (%v)", what, f.Path, f.LayoutValues, want, err)
			}
		}
		if got := answerOf(t, e, catalog.Latest, q); got != want {
			t.Errorf("%s changed the rows", what)
		}
	}
	if _, err := MergeSmallFiles(ctx, e, "t", MergeOptions{RowsPerFile: 1000}); err != nil {
		t.Fatal(err)
	}
	onePartitionEach("compact")
	if _, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"v"}, RowsPerFile: 7}); err != nil {
		t.Fatal(err)
	}
	onePartitionEach("optimize")
	if rep, err := Verify(ctx, e, "t", catalog.Latest, true); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("deep verify after the rewrites: %+v %v", rep, err)
	}
}
