package maintain

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
	srv := s3test.StartWithEnv(t, "lake")
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
	srv := s3test.StartWithEnv(t, "lake")
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

// Writes into a Hive-partitioned table of objects put each partition's
// rows under its own key=value prefixes below the write's prefix, from
// which registration reads the values back as written (the values a
// directory must spell with care included); single-row inserts are merged
// within their partition; an UPDATE of the partition column moves rows
// between prefixes; a table made of a user's partitioned objects gets new
// objects above its key=value prefixes, never inside one partition's; and
// a data root whose path a partition would be read from is refused with
// nothing uploaded.
func TestWriteHiveObjects(t *testing.T) {
	srv := s3test.StartWithEnv(t, "lake")
	ctx := context.Background()
	c, e := objectLake(t, "s3://lake/root/")
	hiveTable(t, c, "t", "id BIGINT, p VARCHAR, q INTEGER", "p", "q")
	vals := []string{"'a'", "NULL", "'NULL'", "'x/y'", "'k=v'", "'%41'", "''", "'..'", "'é'"}
	var rows []string
	for i, v := range vals {
		rows = append(rows, fmt.Sprintf("(%d, %s, %d), (%d, %s, %d)", i, v, i%2, i+100, v, i%2))
	}
	mustWrite(t, e, "INSERT INTO t VALUES "+strings.Join(rows, ", "))
	files := liveFilesOf(t, c, "t")
	if len(files) != len(vals) {
		t.Fatalf("%d files for %d partitions", len(files), len(vals))
	}
	for _, f := range files {
		loc := f.Location(catalog.Table{})
		if !strings.HasPrefix(loc, "s3://lake/root/_rocklake/table-") || !strings.Contains(loc, "/p=") || !strings.Contains(loc, "/q=") || f.ETag == "" {
			t.Fatalf("file %s (etag %q) is not an object under key=value prefixes of the rewrite prefix", loc, f.ETag)
		}
	}
	for i, v := range vals {
		pred := "p = " + v
		if v == "NULL" {
			pred = "p IS NULL"
		}
		if got := answerOf(t, e, catalog.Latest, "SELECT string_agg(id || ':' || q, ',' ORDER BY id) FROM t WHERE "+pred); got != fmt.Sprintf("%d:%d,%d:%d", i, i%2, i+100, i%2) {
			t.Errorf("%s: %s", pred, got)
		}
		if kept := keptFiles(t, c, catalog.Latest, pred); kept != 1 {
			t.Errorf("%s keeps %d files", pred, kept)
		}
	}
	// Single-row inserts into one partition are merged there.
	for i := range 9 {
		mustWrite(t, e, fmt.Sprintf("INSERT INTO t VALUES (%d, 'x/y', 1)", 1000+i))
	}
	xy := 0
	for _, f := range liveFilesOf(t, c, "t") {
		if strings.Contains(f.Location(catalog.Table{}), "/p=x%2Fy/q=1/") {
			xy++
		}
	}
	if xy > 3 {
		t.Errorf("%d files in partition x/y after nine single-row inserts: not merged", xy)
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT count(*), sum(id) FROM t WHERE p = 'x/y' AND q = 1"); got != "11|9142" {
		t.Errorf("partition x/y: %s", got)
	}
	mustWrite(t, e, "UPDATE t SET p = 'moved', q = 7 WHERE id >= 100 AND id < 1000")
	if got := answerOf(t, e, catalog.Latest, "SELECT count(*), min(id), max(id) FROM t WHERE p = 'moved' AND q = 7"); got != fmt.Sprintf("%d|100|%d", len(vals), 100+len(vals)-1) {
		t.Errorf("after moving rows: %s", got)
	}
	if kept := keptFiles(t, c, catalog.Latest, "p = 'moved'"); kept != 1 {
		t.Errorf("the moved rows are in %d files", kept)
	}

	// A table of a user's partitioned objects: new ones go beside the
	// table's prefix, not into the partition of its first file.
	st, err := storage.NewS3(ctx, storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	c2, e2 := objectLake(t, "") // no data root: writes go beside the table's objects
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	local := filepath.Join(t.TempDir(), "part-0.parquet")
	if _, err := db.Exec(fmt.Sprintf("COPY (SELECT i::BIGINT AS id, 'v' || i AS v FROM range(10) r(i)) TO '%s' (FORMAT parquet)", local)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	srv.Put(t, "s3://lake/sales/region=eu/part-0.parquet", data)
	if _, err := ingest.Add(c2, "sales", []string{"s3://lake/sales/"}, ingest.Options{Create: true, Objects: st}); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, e2, "INSERT INTO sales VALUES (20, 'w', 'us'), (21, 'w', 'eu')")
	for _, f := range liveFilesOf(t, c2, "sales") {
		loc := f.Location(catalog.Table{})
		if loc != "s3://lake/sales/region=eu/part-0.parquet" && !strings.HasPrefix(loc, "s3://lake/sales/_rocklake/table-") {
			t.Errorf("written object %s is not under s3://lake/sales/_rocklake/ (above the partitions' prefixes)", loc)
		}
	}
	if got := answerOf(t, e2, catalog.Latest, "SELECT string_agg(region || ':' || count, ',' ORDER BY region) FROM (SELECT region, count(*) AS count FROM sales GROUP BY region)"); got != "eu:11,us:1" {
		t.Errorf("sales by region: %s", got)
	}

	// A data root below a key=value prefix: refused, nothing uploaded.
	c3, e3 := objectLake(t, "s3://lake/year=2024/root/")
	hiveTable(t, c3, "h", "id BIGINT, p VARCHAR", "p")
	_, err = Write(ctx, e3, "INSERT INTO h VALUES (1, 'a')", WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}})
	if err == nil || !strings.Contains(err.Error(), `"year=2024"`) || !strings.Contains(err.Error(), "partitioned") {
		t.Fatalf("a write under s3://lake/year=2024/: %v", err)
	}
	if keys := keysUnder(t, srv, "lake", "year=2024/"); len(keys) != 0 {
		t.Fatalf("the refused write left %v", keys)
	}
}
