package rocklake_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/rocklake/rocklake"
)

func parquetUnder(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			n++
		}
		return nil
	})
	return n
}

func firstValue(t *testing.T, lake *rocklake.Lake, q string) string {
	t.Helper()
	res, err := lake.Query(context.Background(), q, rocklake.QueryOptions{})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return *res.Rows[0][0]
}

// A transaction's writes become visible together, in one snapshot, or
// not at all: a rollback, and a commit that fails, leave no file behind.
func TestWriteTransaction(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lake, err := rocklake.Create(ctx, filepath.Join(dir, "lake"), rocklake.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()
	for _, q := range []string{"CREATE TABLE a (x INTEGER)", "CREATE TABLE b (y VARCHAR NOT NULL)"} {
		if _, err := lake.Exec(ctx, q, rocklake.ExecOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	files := filepath.Join(dir, "lake.files")
	snaps := func() int {
		s, err := lake.Snapshots(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(s)
	}
	before := snaps()

	tx := lake.BeginWrite()
	for _, q := range []string{"INSERT INTO a SELECT * FROM range(10)", "INSERT INTO b VALUES ('p'), ('q')", "INSERT INTO a VALUES (100)"} {
		if _, err := tx.Exec(ctx, q, rocklake.ExecOptions{}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if got := firstValue(t, lake, "SELECT count(*) FROM a"); got != "0" {
		t.Fatalf("before commit a has %s rows", got)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO b VALUES (NULL)", rocklake.ExecOptions{}); err == nil {
		t.Fatal("a NOT NULL violation was staged")
	}
	if _, err := tx.Exec(ctx, "CREATE TABLE c (z INTEGER)", rocklake.ExecOptions{}); err == nil {
		t.Fatal("CREATE TABLE ran inside a transaction")
	}
	snap, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snaps() != before+1 {
		t.Fatalf("a transaction of three writes made %d snapshots", snaps()-before)
	}
	if got := firstValue(t, lake, "SELECT count(*) || '/' || sum(x) FROM a") + " " + firstValue(t, lake, "SELECT string_agg(y, ',' ORDER BY y) FROM b"); got != "11/145 p,q" {
		t.Fatalf("after commit at %d: %s", snap.ID, got)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO a VALUES (1)", rocklake.ExecOptions{}); !errors.Is(err, rocklake.ErrTxnDone) {
		t.Fatalf("Exec after Commit: %v", err)
	}

	n := parquetUnder(t, files)
	tx = lake.BeginWrite()
	if _, err := tx.Exec(ctx, "INSERT INTO a SELECT * FROM range(5)", rocklake.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	if parquetUnder(t, files) != n+1 {
		t.Fatal("the staged write wrote no file")
	}
	tx.Rollback()
	if got := parquetUnder(t, files); got != n {
		t.Fatalf("rollback left %d files", got-n)
	}

	// A table dropped before the commit: nothing committed, nothing left.
	tx = lake.BeginWrite()
	if _, err := tx.Exec(ctx, "INSERT INTO a VALUES (7)", rocklake.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO b VALUES ('r')", rocklake.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	c := lake.Catalog()
	ctx2, err := c.Begin()
	if err != nil {
		t.Fatal(err)
	}
	ctx2.DropTable("b")
	if _, err := ctx2.Commit(); err != nil {
		t.Fatal(err)
	}
	mid := snaps()
	if _, err := tx.Commit(ctx); err == nil {
		t.Fatal("a commit into a dropped table succeeded")
	}
	if snaps() != mid || firstValue(t, lake, "SELECT count(*) FROM a") != "11" {
		t.Fatal("a failed commit changed the catalog")
	}
	if got := parquetUnder(t, files); got != n {
		t.Fatalf("a failed commit left %d files", got-n)
	}
}

// Lake.Insert appends an Arrow stream by column name; a value that does
// not fit its column fails the insert and commits nothing.
func TestInsertArrow(t *testing.T) {
	ctx := context.Background()
	lake, err := rocklake.Create(ctx, filepath.Join(t.TempDir(), "lake"), rocklake.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()
	if _, err := lake.Exec(ctx, "CREATE TABLE t (id BIGINT, s VARCHAR, extra DOUBLE)", rocklake.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	records := func(ids []string) array.RecordReader {
		schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "id", Type: arrow.BinaryTypes.String}}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		for i, id := range ids {
			if i%2 == 0 {
				b.Field(0).(*array.StringBuilder).AppendNull()
			} else {
				b.Field(0).(*array.StringBuilder).Append("v" + id)
			}
			b.Field(1).(*array.StringBuilder).Append(id)
		}
		rec := b.NewRecordBatch()
		rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		if err != nil {
			t.Fatal(err)
		}
		return rr
	}
	res, err := lake.Insert(ctx, "t", records([]string{"1", "2", "3"}))
	if err != nil || res.Rows != 3 {
		t.Fatalf("insert: %+v %v", res, err)
	}
	if got := firstValue(t, lake, "SELECT sum(id) || '/' || count(s) || '/' || count(extra) FROM t"); got != "6/1/0" {
		t.Fatalf("rows: %s", got)
	}
	before, _ := lake.Snapshots(ctx)
	if _, err := lake.Insert(ctx, "t", records([]string{"4", "not a number"})); err == nil || !strings.Contains(err.Error(), "not a number") {
		t.Fatalf("a value that does not fit: %v", err)
	}
	if after, _ := lake.Snapshots(ctx); len(after) != len(before) {
		t.Fatal("a failed insert made a snapshot")
	}
}
