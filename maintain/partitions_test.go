package maintain

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/types"
)

// A table with Hive partition columns (values in the files' key=value
// directories, NULL and an empty string among them, spelled with a
// leading zero and URL-encoded): optimize and compact write each
// partition's rows into files of their own, under the directories the old
// files spelled, and record their values; every answer stays the same,
// a partition predicate keeps that partition's files only, and deep
// verify finds nothing wrong, before and after.
func TestPartitionedTables(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	n := 0
	for _, p := range []string{"k=1/s=a%20b", "k=1/s=", "k=-007/s=a%20b", "k=__HIVE_DEFAULT_PARTITION__/s=z", "k=2/s=__HIVE_DEFAULT_PARTITION__"} {
		for f := range 3 {
			vals := make([]*types.Value, 8+4*f)
			for i := range vals {
				v := types.IntValue(int64((n*37 + i*11) % 101))
				vals[i] = &v
			}
			n++
			path := filepath.Join(dir, filepath.FromSlash(p), fmt.Sprintf("f%d.parquet", f))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := pqwrite.Write(path, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: vals}}, pqwrite.Options{RowGroupRows: 10}); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, path)
		}
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", paths, ingest.Options{Create: true, Hive: true}); err != nil {
		t.Fatal(err)
	}
	// Renamed too: the rewrite reads the older files through the mapping.
	tx, _ := c.Begin()
	tx.AlterTable("t", catalog.Alteration{Kind: catalog.RenameColumn, Column: "x", NewName: "y"})
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	e, _ := engine.New(c)
	defer e.Close()
	ctx := context.Background()
	answer := func(q string) string {
		t.Helper()
		res, err := e.Query(ctx, q, engine.QueryOptions{Snapshot: catalog.Latest})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var rows []string
		for _, r := range res.Rows {
			var vals []string
			for _, v := range r {
				if v == nil {
					vals = append(vals, "NULL")
				} else {
					vals = append(vals, *v)
				}
			}
			rows = append(rows, strings.Join(vals, "|"))
		}
		return strings.Join(rows, "\n")
	}
	queries := []string{
		"SELECT k, s, y FROM t ORDER BY ALL",
		"SELECT k, s, count(*), sum(y), typeof(k), typeof(s) FROM t GROUP BY ALL ORDER BY ALL",
		"SELECT count(*) FROM t WHERE k = -7 AND y > 50",
		"SELECT count(*) FROM t WHERE s = '' OR k IS NULL",
	}
	want := map[string]string{}
	for _, q := range queries {
		want[q] = answer(q)
	}
	// Each live file's partition: its values must be those of every row
	// it holds, as the rows read before the rewrite say.
	check := func(what string, onePerPartition bool) {
		t.Helper()
		for _, q := range queries {
			if got := answer(q); got != want[q] {
				t.Errorf("%s: %s:\n%s\nwant\n%s", what, q, got, want[q])
			}
		}
		rep, err := Verify(ctx, e, "t", catalog.Latest, true)
		if err != nil || len(rep.Problems) != 0 || rep.Units == 0 {
			t.Errorf("%s: deep verify: %+v %v", what, rep, err)
		}
		r, _ := c.Read(catalog.Latest)
		defer r.Close()
		tb, _ := r.Table("t")
		files, _ := r.Files(tb.ID)
		perPartition := map[string]int{}
		for _, f := range files {
			if !strings.Contains(f.Path, "_rocklake") {
				t.Errorf("%s: %s is not a rewritten file", what, f.Path)
			}
			if len(f.PartitionValues) != 2 {
				t.Errorf("%s: %s: partition values %v", what, f.Path, f.PartitionValues)
			}
			perPartition[fmt.Sprint(f.PartitionValues)]++
		}
		if onePerPartition && (len(perPartition) != 5 || len(files) != 5) {
			t.Errorf("%s: %d files over %d partitions, want one per partition", what, len(files), len(perPartition))
		}
		for _, pred := range []string{"k = 1 AND s = 'a b'", "k = -7", "k IS NULL", "s = ''", "s IS NULL"} {
			plan, err := prune.PlanTable(r, "t", pred, prune.Options{})
			if err != nil {
				t.Fatal(err)
			}
			cnt, err := e.Query(ctx, "SELECT count(*) FROM t WHERE "+pred, engine.QueryOptions{Snapshot: catalog.Latest})
			if err != nil {
				t.Fatal(err)
			}
			var rows int64
			for _, kf := range plan.KeptFiles {
				if !kf.AllMatch {
					t.Errorf("%s: %s keeps %s, not in full", what, pred, kf.Path)
				}
				rows += kf.Rows
			}
			if fmt.Sprint(rows) != *cnt.Rows[0][0] {
				t.Errorf("%s: %s keeps %d rows in files, %s match", what, pred, rows, *cnt.Rows[0][0])
			}
		}
		for _, f := range files {
			if !slices.ContainsFunc([]string{"k=1/s=a%20b/", "k=1/s=/", "k=-007/s=a%20b/", "k=__HIVE_DEFAULT_PARTITION__/s=z/", "k=2/s=__HIVE_DEFAULT_PARTITION__/"}, func(d string) bool {
				return strings.Contains(filepath.ToSlash(f.Path), d)
			}) {
				t.Errorf("%s: %s is not under its partition's directories as the old files spelled them", what, f.Path)
			}
		}
	}
	res, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"y"}, RowsPerFile: 7})
	if err != nil {
		t.Fatalf("optimize of a partitioned table: %v", err)
	}
	if res.FilesAfter < 10 {
		t.Errorf("optimize wrote %d files of at most 7 rows", res.FilesAfter)
	}
	check("optimize", false)
	res, err = MergeSmallFiles(ctx, e, "t", MergeOptions{RowsPerFile: 1000})
	if err != nil || res == nil {
		t.Fatalf("compact of a partitioned table: %+v %v", res, err)
	}
	check("compact", true)

	// A renamed partition column: the old files' directories still spell
	// k, and the files a rewrite writes name it as it is now, as adds must.
	groups := answer("SELECT k, s, count(*), sum(y) FROM t GROUP BY ALL ORDER BY ALL")
	tx, _ = c.Begin()
	tx.AlterTable("t", catalog.Alteration{Kind: catalog.RenameColumn, Column: "k", NewName: "kk"})
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"y"}}); err != nil {
		t.Fatalf("optimize after the partition column's rename: %v", err)
	}
	if got := answer("SELECT kk, s, count(*), sum(y) FROM t GROUP BY ALL ORDER BY ALL"); got != groups {
		t.Errorf("after the rename and optimize:\n%s\nwant\n%s", got, groups)
	}
	r, _ := c.Read(catalog.Latest)
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	r.Close()
	for _, f := range files {
		if !strings.Contains(filepath.ToSlash(f.Path), "/kk=") || strings.Contains(filepath.ToSlash(f.Path), "/k=") {
			t.Errorf("after the rename: %s", f.Path)
		}
	}

	// An output directory below a key=value directory would add a key:
	// refused, nothing committed.
	before, _ := c.Snapshots()
	if _, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"y"}, Dir: filepath.Join(t.TempDir(), "k=9", "out")}); err == nil || !strings.Contains(err.Error(), `"k=9"`) {
		t.Errorf("optimize into a key=value directory: %v", err)
	}
	if after, _ := c.Snapshots(); len(after) != len(before) {
		t.Error("a refused rewrite committed a snapshot")
	}
}
