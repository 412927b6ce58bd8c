package maintain

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/storage"
)

// Writes into a catalog whose data root is a bucket prefix put their files
// there as objects (under _rocklake/table-<id>/), registered with their
// ETags, read back by queries through the object cache; the small-file
// merge rewrites objects too, and a failed write uploads nothing; so do
// DELETE, UPDATE and MERGE; the same under a sandbox, whose DuckDB reads
// only its directories.
func TestWriteObjects(t *testing.T) {
	for _, sandboxed := range []bool{false, true} {
		t.Run(fmt.Sprintf("sandboxed=%t", sandboxed), func(t *testing.T) { writeObjects(t, sandboxed) })
	}
}

func writeObjects(t *testing.T, sandboxed bool) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	srv.SetEnv(t)
	ctx := context.Background()
	st, err := storage.NewS3(ctx, storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{DataRoot: "s3://lake/root/"})
	if err != nil {
		t.Fatal(err)
	}
	var o engine.Options
	cache := t.TempDir()
	if sandboxed {
		o.Sandbox = &engine.Sandbox{Dirs: []string{cache}, TempDir: t.TempDir()}
	}
	e, err := engine.NewWithOptions(c, o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.UseObjects(st, &storage.Cache{Dir: cache})
	mustWrite(t, e, "CREATE TABLE t (id BIGINT NOT NULL, s VARCHAR)")
	mustWrite(t, e, "INSERT INTO t SELECT i, 's' || i FROM range(1000) r(i)")
	for i := range 9 {
		mustWrite(t, e, fmt.Sprintf("INSERT INTO t VALUES (%d, 'one')", 1000+i))
	}
	for _, f := range liveFilesOf(t, c, "t") {
		if loc := f.Location(catalog.Table{}); !strings.HasPrefix(loc, "s3://lake/root/_rocklake/table-") || f.ETag == "" {
			t.Fatalf("file %s (etag %q) is not an object under the data root's rewrite prefix", loc, f.ETag)
		}
	}
	if n := len(liveFilesOf(t, c, "t")); n > 3 {
		t.Fatalf("%d live files after one big and nine single-row inserts: the small ones were not merged", n)
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT count(*), sum(id), count(*) FILTER (s = 'one') FROM t WHERE id >= 0"); got != "1009|508536|9" {
		t.Fatalf("rows: %s", got)
	}
	before := len(keysUnder(t, srv, "lake", "root/"))
	if _, err := Write(ctx, e, "INSERT INTO t VALUES (NULL, 'x')", WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}}); err == nil {
		t.Fatal("a NOT NULL violation was written")
	}
	if after := len(keysUnder(t, srv, "lake", "root/")); after != before {
		t.Fatalf("a failed write left %d objects", after-before)
	}
	// Changes read the objects they touch through the cache and rewrite
	// them as objects; a failed one uploads nothing.
	if r := mustWrite(t, e, "DELETE FROM t WHERE id < 10"); r.Rows != 10 || r.FilesRemoved != 1 {
		t.Fatalf("delete: %+v", r)
	}
	if r := mustWrite(t, e, "UPDATE t SET s = upper(s) WHERE id BETWEEN 10 AND 19"); r.Rows != 10 {
		t.Fatalf("update: %+v", r)
	}
	if r := mustWrite(t, e, "MERGE INTO t USING (SELECT 20 AS id UNION ALL SELECT 5000) AS m ON t.id = m.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (m.id, 'new')"); r.Rows != 2 {
		t.Fatalf("merge: %+v", r)
	}
	for _, f := range liveFilesOf(t, c, "t") {
		if loc := f.Location(catalog.Table{}); !strings.HasPrefix(loc, "s3://lake/root/_rocklake/table-") || f.ETag == "" {
			t.Fatalf("after the changes, file %s (etag %q) is not an object under the rewrite prefix", loc, f.ETag)
		}
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT count(*), count(*) FILTER (s LIKE 'S%'), count(*) FILTER (s = 'new') FROM t"); got != "999|10|1" {
		t.Fatalf("after the changes: %s", got)
	}
	before = len(keysUnder(t, srv, "lake", "root/"))
	if _, err := Write(ctx, e, "UPDATE t SET id = NULL WHERE id = 30", changeOpts()); err == nil {
		t.Fatal("a NOT NULL violation was written by an UPDATE")
	}
	if after := len(keysUnder(t, srv, "lake", "root/")); after != before {
		t.Fatalf("a failed update left %d objects", after-before)
	}
}
