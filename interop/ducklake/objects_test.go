package ducklake_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/interop/ducklake"
	"github.com/rocklake/rocklake/maintain"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/storage"
)

// filesAndStats is a catalog's newest files (location, rows, bytes, ETag)
// and their statistics per column, as text to compare.
func filesAndStats(t *testing.T, c *catalog.Catalog, table string) string {
	t.Helper()
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, err := r.Table(table)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	files, _ := r.Files(tb.ID)
	for _, f := range files {
		fmt.Fprintf(&b, "%d %s rows %d bytes %d etag %s rgs %d\n", f.ID, f.Location(tb), f.RecordCount, f.FileSizeBytes, f.ETag, f.RowGroupCount)
	}
	cols, _ := r.Columns(tb.ID)
	for _, col := range cols {
		r.FileColumnStats(tb.ID, col.ID, func(id int64, st *stats.Column) error {
			fmt.Fprintf(&b, "%d %s %+v\n", id, col.Name, *st)
			return nil
		})
	}
	return b.String()
}

// TestObjectsCrossDuckLake: a table of objects in an S3-compatible store
// exports with its s3:// locations and imports back with the same files,
// ETags and statistics, the footers read again from the store.
func TestObjectsCrossDuckLake(t *testing.T) {
	srv := s3test.StartWithEnv(t, "lake")
	st, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	db, _ := engine.Open("")
	dir := t.TempDir()
	for k := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("p%d.parquet", k))
		if _, err := db.Exec(fmt.Sprintf(`COPY (SELECT i + %d AS id, 's' || i AS s FROM range(50) r(i)) TO '%s' (FORMAT parquet)`, k*50, p)); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(p)
		srv.Put(t, fmt.Sprintf("s3://lake/t/p%d.parquet", k), data)
	}
	db.Close()
	c, err := catalog.Create(filepath.Join(t.TempDir(), "lake"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := ingest.Add(c, "t", []string{"s3://lake/t/"}, ingest.Options{Create: true, Objects: st}); err != nil {
		t.Fatal(err)
	}
	dest, _ := export(t, c, ducklake.ExportOptions{})
	ddb, err := engine.Open(dest)
	if err != nil {
		t.Fatal(err)
	}
	paths := join(queryStrings(t, ddb, `SELECT path, path_is_relative FROM ducklake_data_file ORDER BY 1`))
	ddb.Close()
	if want := "s3://lake/t/p0.parquet|false\ns3://lake/t/p1.parquet|false\ns3://lake/t/p2.parquet|false\n"; paths != want {
		t.Errorf("exported paths:\n%s", paths)
	}
	back, err := catalog.Create(filepath.Join(t.TempDir(), "lake"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if _, err := ducklake.Import(context.Background(), back, dest, ducklake.ImportOptions{Objects: st}); err != nil {
		t.Fatal(err)
	}
	if want, got := filesAndStats(t, c, "t"), filesAndStats(t, back, "t"); got != want {
		t.Errorf("imported:\n%s\nwant\n%s", got, want)
	}
}

// A table of objects with delete files that are objects (merge-on-read
// DELETE and UPDATE over S3) exports to DuckLake with their s3://
// locations and imports back with its history: each delete object is
// fetched, checked and replayed, and every snapshot answers as the
// original did at the same point. (import --latest, which folds the
// deletes into new files, still reads local files only.)
func TestObjectDeleteFilesImportWithHistory(t *testing.T) {
	s3test.StartWithEnv(t, "lake")
	ctx := context.Background()
	st, err := storage.NewS3(ctx, storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Create(filepath.Join(t.TempDir(), "lake"), catalog.Options{DataRoot: "s3://lake/root/"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.UseObjects(st, &storage.Cache{Dir: t.TempDir()})
	for _, q := range []string{
		"CREATE TABLE t (id BIGINT, v VARCHAR)",
		"INSERT INTO t SELECT i, 'a' || i FROM range(0, 300) r(i)",
		"INSERT INTO t SELECT i, 'b' || i FROM range(300, 600) r(i)",
		"DELETE FROM t WHERE id % 7 = 0",
		"DELETE FROM t WHERE id BETWEEN 10 AND 12 OR id = 450",
		"UPDATE t SET v = 'u' WHERE id = 301",
	} {
		r, err := maintain.Write(ctx, e, q, maintain.WriteOptions{})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if strings.HasPrefix(q, "DELETE") && r.DeleteFiles == 0 {
			t.Fatalf("%s wrote no delete file: %+v", q, r)
		}
	}
	dest, _ := export(t, c, ducklake.ExportOptions{})
	ddb := openDuck(t, dest)
	dels := queryStrings(t, ddb, `SELECT count(*), count(*) FILTER (WHERE path LIKE 's3://%' AND NOT path_is_relative) FROM ducklake_delete_file`)
	ddb.Close()
	if dels[0][0] == "0" || dels[0][0] != dels[0][1] {
		t.Fatalf("exported delete files (all, s3:// ones): %v", dels[0])
	}
	back, err := catalog.Create(filepath.Join(t.TempDir(), "back"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	res, err := ducklake.Import(ctx, back, dest, ducklake.ImportOptions{Objects: st})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.DeleteFiles) != dels[0][0] {
		t.Errorf("replayed %d delete files, exported %s", res.DeleteFiles, dels[0][0])
	}
	q := "SELECT count(*), CAST(sum(hash(id, v)) AS VARCHAR), count(*) FILTER (WHERE v = 'u') FROM t"
	eb, err := engine.New(back)
	if err != nil {
		t.Fatal(err)
	}
	defer eb.Close()
	eb.UseObjects(st, &storage.Cache{Dir: t.TempDir()})
	ask := func(e *engine.Engine, snap int64) string {
		r, err := e.Query(ctx, q, engine.QueryOptions{Snapshot: snap})
		if err != nil {
			t.Fatalf("at %d: %v", snap, err)
		}
		return deref(r.Rows[0][0]) + "|" + deref(r.Rows[0][1]) + "|" + deref(r.Rows[0][2])
	}
	checked := 0
	for _, sp := range res.Snapshots {
		got, want := ask(eb, sp.Rocklake), ask(e, sp.DuckLake)
		if got != want {
			t.Errorf("DuckLake snapshot %d, imported as %d: %s, want %s", sp.DuckLake, sp.Rocklake, got, want)
		}
		checked++
	}
	if last := ask(eb, catalog.Latest); last != ask(e, catalog.Latest) || checked < 5 {
		t.Errorf("latest: %s, want %s (%d snapshots compared)", last, ask(e, catalog.Latest), checked)
	}
}
