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
	// Changes read the objects they touch through the cache and write
	// delete files as objects (merge-on-read) or rewrite them as objects
	// (copy-on-write); a failed one uploads nothing.
	if r := mustWrite(t, e, "DELETE FROM t WHERE id < 5"); r.Rows != 5 || r.FilesRemoved != 0 || r.DeleteFiles != 1 {
		t.Fatalf("delete, merge-on-read: %+v", r)
	}
	objectDeletes(t, c, "t")
	alterTable(t, c, "t", "set", "option", "delete_mode", "=", catalog.CopyOnWrite)
	if r := mustWrite(t, e, "DELETE FROM t WHERE id < 10"); r.Rows != 5 || r.FilesRemoved != 1 || r.DeleteFiles != 0 {
		t.Fatalf("delete, copy-on-write: %+v", r)
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

// A transaction of writes over objects: its statements upload their files,
// read each other's writes, and at COMMIT the objects it wrote and
// rewrote again are deleted, the rest registered; ROLLBACK deletes every
// object it uploaded.
func TestTxnObjects(t *testing.T) {
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
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.UseObjects(st, &storage.Cache{Dir: t.TempDir()})
	mustWrite(t, e, "CREATE TABLE t (id BIGINT NOT NULL, s VARCHAR)")
	mustWrite(t, e, "INSERT INTO t SELECT i, 's' || i FROM range(100) r(i)")
	// registered is every object some snapshot of the catalog names.
	registered := func() map[string]bool {
		r, err := c.Read(catalog.Latest)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		tb, _ := r.Table("t")
		ever, err := r.FilesEver(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, f := range ever {
			out[strings.TrimPrefix(f.Location(tb), "s3://lake/")] = true
		}
		return out
	}
	unregistered := func() []string {
		reg := registered()
		var out []string
		for _, k := range keysUnder(t, srv, "lake", "root/") {
			if strings.HasSuffix(k, ".parquet") && !reg[k] {
				out = append(out, k)
			}
		}
		return out
	}
	for _, end := range []string{"ROLLBACK", "COMMIT"} {
		tx := NewTxn(e)
		for _, q := range []string{"INSERT INTO t SELECT i, 'new' FROM range(100, 110) r(i)", "UPDATE t SET s = 'updated' WHERE id >= 105", "DELETE FROM t WHERE id < 5"} {
			if _, err := tx.Exec(ctx, q, changeOpts()); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if got := answerOf(t, tx.Engine(), catalog.Latest, "SELECT count(*), count(*) FILTER (s = 'updated'), min(id) FROM t"); got != "105|5|5" {
			t.Fatalf("in the transaction: %s", got)
		}
		want := "100|0|0"
		if end == "ROLLBACK" {
			tx.Rollback()
		} else {
			if _, err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			want = "105|5|5"
		}
		if got := answerOf(t, e, catalog.Latest, "SELECT count(*), count(*) FILTER (s = 'updated'), min(id) FROM t"); got != want {
			t.Fatalf("after %s: %s, want %s", end, got, want)
		}
		if left := unregistered(); len(left) > 0 {
			t.Fatalf("after %s, objects no snapshot names: %v", end, left)
		}
	}
}
