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
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	srv.SetEnv(t)
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
