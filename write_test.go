package rocklake_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	if _, err := tx.Commit(ctx); !errors.Is(err, rocklake.ErrConflict) || !strings.Contains(err.Error(), `table "b" was dropped`) {
		t.Fatalf("a commit into a dropped table: %v", err)
	}
	if snaps() != mid || firstValue(t, lake, "SELECT count(*) FROM a") != "11" {
		t.Fatal("a failed commit changed the catalog")
	}
	if got := parquetUnder(t, files); got != n {
		t.Fatalf("a failed commit left %d files", got-n)
	}
}

// orphans counts the files under the lake's rewrite directories that no
// snapshot registered (what cleanup --orphans would delete).
func orphans(t *testing.T, lake *rocklake.Lake) int {
	t.Helper()
	res, err := lake.DeleteOrphans(context.Background(), rocklake.OrphanOptions{DryRun: true, Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	return len(res.Deleted) + len(res.Waiting)
}

// Inside a transaction of writes, statements and queries read its writes:
// a table it inserted into, changed, and changed again, as a DuckDB
// transaction doing the same reads it. Outside, nothing shows until
// COMMIT; files written and retired again inside are removed at COMMIT,
// and every file at ROLLBACK.
func TestWriteTransactionReadsItsWrites(t *testing.T) {
	ctx := context.Background()
	lake, err := rocklake.Create(ctx, filepath.Join(t.TempDir(), "lake"), rocklake.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()
	setup := []string{"CREATE TABLE a (x INTEGER)", "CREATE TABLE b (y INTEGER)", "INSERT INTO a VALUES (1)", "INSERT INTO b VALUES (2)"}
	for _, q := range setup {
		if _, err := lake.Exec(ctx, q, rocklake.ExecOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	duck, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer duck.Close()
	for _, q := range setup {
		if _, err := duck.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	const state = "SELECT coalesce((SELECT string_agg(x::VARCHAR, ',' ORDER BY x) FROM a), '-') || ' ' || coalesce((SELECT string_agg(y::VARCHAR, ',' ORDER BY y) FROM b), '-')"
	want := func(tx *sql.Tx) string {
		t.Helper()
		var s string
		if err := tx.QueryRow(state).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	stmts := []string{
		"INSERT INTO a SELECT * FROM b",
		"INSERT INTO a SELECT x + 1 FROM a",
		"INSERT INTO b SELECT * FROM a WHERE x > 1",
		"INSERT INTO b SELECT count(*) FROM query_table('a')",
		"DELETE FROM a WHERE x = 2",
		"UPDATE a SET x = x * 10 WHERE x = 3",
		"UPDATE a SET x = x + 1",
		"MERGE INTO b USING a ON b.y = a.x WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (a.x)",
		"DELETE FROM b WHERE y = 2",
	}
	for _, end := range []string{"ROLLBACK", "COMMIT"} {
		outside := firstValue(t, lake, state)
		tx := lake.BeginWrite()
		dtx, err := duck.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range stmts {
			if _, err := tx.Exec(ctx, q, rocklake.ExecOptions{}); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if _, err := dtx.Exec(q); err != nil {
				t.Fatalf("DuckDB %s: %v", q, err)
			}
			res, err := lake.Query(ctx, state, rocklake.QueryOptions{In: tx})
			if err != nil {
				t.Fatalf("after %s: %v", q, err)
			}
			if got, w := *res.Rows[0][0], want(dtx); got != w {
				t.Fatalf("after %s the transaction reads %s, DuckDB's %s", q, got, w)
			}
			if got := firstValue(t, lake, state); got != outside {
				t.Fatalf("after %s, outside the transaction: %s, want %s", q, got, outside)
			}
		}
		// A named snapshot is read as committed, in the transaction too;
		// the transaction's own snapshots are not the catalog's.
		if _, err := lake.Query(ctx, "SELECT count(*) FROM a AT (VERSION => 3)", rocklake.QueryOptions{In: tx}); err != nil {
			t.Errorf("time travel in the transaction: %v", err)
		}
		if _, err := lake.Query(ctx, "SELECT count(*) FROM a AT (VERSION => 1000)", rocklake.QueryOptions{In: tx}); !errors.Is(err, rocklake.ErrNoSuchSnapshot) {
			t.Errorf("time travel past the transaction's start: %v", err)
		}
		// The change feed inside reads committed snapshots only.
		feed := "SELECT count(*) || '/' || coalesce(max(snapshot_id), 0) FROM table_changes('a', 1)"
		if res, err := lake.Query(ctx, feed, rocklake.QueryOptions{In: tx}); err != nil || *res.Rows[0][0] != firstValue(t, lake, feed) {
			t.Errorf("the change feed in the transaction: %v %v, outside %s", res, err, firstValue(t, lake, feed))
		}
		committed := want(dtx)
		if end == "ROLLBACK" {
			tx.Rollback()
			if err := dtx.Rollback(); err != nil {
				t.Fatal(err)
			}
			committed = outside
		} else {
			if _, err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := dtx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		if got := firstValue(t, lake, state); got != committed {
			t.Fatalf("after %s: %s, want %s", end, got, committed)
		}
		if n := orphans(t, lake); n != 0 {
			t.Fatalf("after %s, %d files no snapshot registered", end, n)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO a VALUES (7)", rocklake.ExecOptions{}); !errors.Is(err, rocklake.ErrTxnDone) {
			t.Fatalf("Exec after %s: %v", end, err)
		}
	}
}

// mergeOnRead sets table's delete mode to merge-on-read.
func mergeOnRead(t *testing.T, lake *rocklake.Lake, table string) {
	t.Helper()
	setDeleteMode(t, lake, table, "merge-on-read")
}

// setDeleteMode sets table's delete_mode option.
func setDeleteMode(t *testing.T, lake *rocklake.Lake, table, mode string) {
	t.Helper()
	a, err := rocklake.ParseAlteration(strings.Fields("set option delete_mode = " + mode))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lake.AlterTable(context.Background(), table, a); err != nil {
		t.Fatal(err)
	}
}

// Changes in a transaction (DELETE, UPDATE, MERGE, of tables it has not
// written) commit together with its inserts, in one snapshot, or not at
// all; a DELETE that empties a file retires it at the commit; on a
// merge-on-read table they copy on write. A change whose files another
// change retired before the commit fails it with a conflict, leaving
// nothing.
func TestWriteTransactionChanges(t *testing.T) {
	ctx := context.Background()
	lake, err := rocklake.Create(ctx, filepath.Join(t.TempDir(), "lake"), rocklake.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()
	for _, q := range []string{"CREATE TABLE a (x INTEGER)", "CREATE TABLE b (x INTEGER)", "CREATE TABLE m (x INTEGER)", "CREATE TABLE log (x INTEGER)",
		"INSERT INTO a SELECT * FROM range(10)", "INSERT INTO a VALUES (100)", "INSERT INTO b SELECT * FROM range(5)", "INSERT INTO m SELECT * FROM range(4)"} {
		if _, err := lake.Exec(ctx, q, rocklake.ExecOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mergeOnRead(t, lake, "m")
	state := func() string {
		return firstValue(t, lake, "SELECT (SELECT string_agg(x::VARCHAR, ',' ORDER BY x) FROM a) || ' ' || (SELECT string_agg(x::VARCHAR, ',' ORDER BY x) FROM b) || ' ' || (SELECT coalesce(string_agg(x::VARCHAR, ',' ORDER BY x), '') FROM log)")
	}
	snaps := func() int {
		s, err := lake.Snapshots(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(s)
	}
	stmts := []string{"DELETE FROM a WHERE x = 100", "UPDATE b SET x = x * 10 WHERE x >= 3", "INSERT INTO log VALUES (1)",
		"MERGE INTO m USING (SELECT 2 AS k) s ON m.x = s.k WHEN MATCHED THEN DELETE"}
	before, was := snaps(), state()
	tx := lake.BeginWrite()
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q, rocklake.ExecOptions{}); err != nil {
			t.Fatalf("%s in a transaction: %v", q, err)
		}
	}
	if got := state(); got != was {
		t.Fatalf("before the commit: %s, was %s", got, was)
	}
	tx.Rollback()
	if snaps() != before || state() != was {
		t.Fatal("a rolled back transaction of changes changed something")
	}
	tx = lake.BeginWrite()
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q, rocklake.ExecOptions{}); err != nil {
			t.Fatalf("%s in a transaction: %v", q, err)
		}
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if snaps() != before+1 {
		t.Fatalf("a transaction made %d snapshots", snaps()-before)
	}
	if got, want := state(), "0,1,2,3,4,5,6,7,8,9 0,1,2,30,40 1"; got != want {
		t.Fatalf("after the commit: %s, want %s", got, want)
	}
	if got := firstValue(t, lake, "SELECT string_agg(x::VARCHAR, ',' ORDER BY x) FROM m"); got != "0,1,3" {
		t.Fatalf("m after the MERGE: %s", got)
	}

	// Another change to the same rows lands first: the commit conflicts.
	tx = lake.BeginWrite()
	if _, err := tx.Exec(ctx, "DELETE FROM a WHERE x = 1", rocklake.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := lake.Exec(ctx, "UPDATE a SET x = -1 WHERE x = 1", rocklake.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	mid, was := snaps(), state()
	if _, err := tx.Commit(ctx); !errors.Is(err, rocklake.ErrConflict) {
		t.Fatalf("a transaction's DELETE of rows changed since: %v", err)
	}
	if snaps() != mid || state() != was {
		t.Fatal("the failed commit changed something")
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

// Lake.Exec runs DELETE and UPDATE, each one snapshot that rewrites the
// files it touches; a change that matches nothing makes none; the
// snapshot before a change still reads the rows it changed; inside a
// transaction both are refused and leave nothing.
func TestExecDeleteUpdate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lake, err := rocklake.Create(ctx, filepath.Join(dir, "lake"), rocklake.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()
	exec := func(q string) *rocklake.WriteResult {
		t.Helper()
		res, err := lake.Exec(ctx, q, rocklake.ExecOptions{})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return res
	}
	snaps := func() int {
		t.Helper()
		s, err := lake.Snapshots(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(s)
	}
	exec("CREATE TABLE c (id BIGINT NOT NULL, s VARCHAR)")
	setDeleteMode(t, lake, "c", "copy-on-write") // TestLakeMergeOnRead has the default
	ins := exec("INSERT INTO c SELECT i, 'v' || i FROM range(10) r(i)")
	before := snaps()

	del := exec("DELETE FROM c WHERE id < 3")
	if del.Statement != "DELETE" || del.Table != "c" || del.Rows != 3 || del.FilesRemoved != 1 || del.Files != 1 || del.Snapshot.ID <= ins.Snapshot.ID {
		t.Fatalf("DELETE: %+v", del)
	}
	if snaps() != before+1 {
		t.Fatalf("a DELETE made %d snapshots", snaps()-before)
	}
	if got := firstValue(t, lake, "SELECT count(*) || '/' || min(id) FROM c"); got != "7/3" {
		t.Fatalf("after the DELETE: %s", got)
	}
	upd := exec("UPDATE c AS x SET s = upper(x.s), id = id * 10 WHERE id >= 8")
	if upd.Statement != "UPDATE" || upd.Rows != 2 || upd.FilesRemoved != 1 || upd.Files != 2 || upd.Snapshot.ID != del.Snapshot.ID+1 { // the file's other rows, and the new ones
		t.Fatalf("UPDATE: %+v", upd)
	}
	if snaps() != before+2 {
		t.Fatalf("DELETE and UPDATE made %d snapshots", snaps()-before)
	}
	if got := firstValue(t, lake, "SELECT string_agg(id || '=' || s, ',' ORDER BY id) FROM c WHERE id > 6"); got != "7=v7,80=V8,90=V9" {
		t.Fatalf("after the UPDATE: %s", got)
	}

	// Time travel: the snapshot before the DELETE still has its rows.
	at := func(id int64, q string) string {
		t.Helper()
		res, err := lake.Query(ctx, q, rocklake.QueryOptions{Snapshot: rocklake.AtSnapshot(id)})
		if err != nil {
			t.Fatalf("%s at %d: %v", q, id, err)
		}
		return *res.Rows[0][0]
	}
	if got := at(ins.Snapshot.ID, "SELECT count(*) || '/' || sum(id) FROM c"); got != "10/45" {
		t.Fatalf("before the DELETE: %s", got)
	}
	if got := at(del.Snapshot.ID, "SELECT count(*) || '/' || max(s) FROM c"); got != "7/v9" {
		t.Fatalf("between the DELETE and the UPDATE: %s", got)
	}

	// Changes that match no row: no snapshot, no file.
	files := filepath.Join(dir, "lake.files")
	n := parquetUnder(t, files)
	if n < 3 {
		t.Fatalf("%d files after an insert, a delete and an update (the retired ones stay for time travel)", n)
	}
	for _, q := range []string{"DELETE FROM c WHERE id > 1000", "UPDATE c SET s = 'none' WHERE s IS NULL"} {
		if res := exec(q); res.Rows != 0 || res.Snapshot.ID != 0 || res.Files != 0 || res.FilesRemoved != 0 {
			t.Fatalf("%s: %+v", q, res)
		}
	}
	if snaps() != before+2 || parquetUnder(t, files) != n {
		t.Fatal("a change of no rows made a snapshot or a file")
	}

	// Inside a transaction that wrote the table: its changes read the
	// row it wrote; rolled back, nothing is left.
	tx := lake.BeginWrite()
	if _, err := tx.Exec(ctx, "INSERT INTO c VALUES (500, 'staged')", rocklake.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"DELETE FROM c WHERE id = 5", "UPDATE c SET s = 'x' WHERE id = 500"} {
		res, err := tx.Exec(ctx, q, rocklake.ExecOptions{})
		if err != nil || res.Rows != 1 {
			t.Fatalf("%s in a transaction: %+v %v", q, res, err)
		}
	}
	tx.Rollback()
	if snaps() != before+2 || parquetUnder(t, files) != n {
		t.Fatal("a rolled back transaction left a snapshot or a file")
	}
	if got := firstValue(t, lake, "SELECT count(*) || '/' || max(s) FILTER (WHERE id = 5) FROM c"); got != "7/v5" {
		t.Fatalf("after the rollback: %s", got)
	}

	// A change is a write, not a query.
	for _, q := range []string{"DELETE FROM c", "delete from c where id = 1", "UPDATE c SET id = 1", "  update c set id = 1", "MERGE INTO c USING d ON c.id = d.id WHEN MATCHED THEN DELETE"} {
		if !rocklake.IsWrite(q) {
			t.Errorf("IsWrite(%q) is false", q)
		}
	}
	for _, q := range []string{"SELECT 'DELETE FROM c'", "WITH d AS (SELECT 1) SELECT * FROM d"} {
		if rocklake.IsWrite(q) {
			t.Errorf("IsWrite(%q) is true", q)
		}
	}
	if _, err := lake.Query(ctx, "DELETE FROM c", rocklake.QueryOptions{}); !errors.Is(err, rocklake.ErrNotAQuery) {
		t.Errorf("Query of a DELETE: %v", err)
	}
	if got := firstValue(t, lake, "SELECT count(*) FROM c"); got != "7" {
		t.Fatalf("at the end: %s rows", got)
	}
}

// Lake.Changes: the feed of a table's inserts and deletes per snapshot,
// bounded by to; ErrChangesExpired once expire forgot the snapshots.
func TestLakeChanges(t *testing.T) {
	ctx := context.Background()
	lake, err := rocklake.Create(ctx, filepath.Join(t.TempDir(), "lake"), rocklake.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()
	for _, q := range []string{"CREATE TABLE c (id BIGINT)", "INSERT INTO c SELECT * FROM range(5)", "DELETE FROM c WHERE id % 2 = 0", "UPDATE c SET id = id * 10"} {
		if _, err := lake.Exec(ctx, q, rocklake.ExecOptions{}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	count := func(res *rocklake.Result) map[string]int {
		out := map[string]int{}
		for _, row := range res.Rows {
			out[*row[0]+" "+*row[1]]++
		}
		return out
	}
	res, err := lake.Changes(ctx, "c", 1, rocklake.SnapshotRef{})
	if err != nil {
		t.Fatal(err)
	}
	if got := count(res); !maps.Equal(got, map[string]int{"2 insert": 5, "3 delete": 3, "4 delete": 2, "4 insert": 2}) || strings.Join(res.Columns, ",") != "snapshot_id,change_type,id" {
		t.Fatalf("changes: %v %v", got, res.Columns)
	}
	res, err = lake.Changes(ctx, "c", 1, rocklake.AtSnapshot(2))
	if err != nil || len(res.Rows) != 5 {
		t.Fatalf("changes up to 2: %v %v", res, err)
	}
	if _, err := lake.Expire(ctx, time.Now().Add(time.Second), rocklake.ExpireOptions{MinRetention: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := lake.Changes(ctx, "c", 1, rocklake.SnapshotRef{}); !errors.Is(err, rocklake.ErrChangesExpired) {
		t.Fatalf("after expire: %v", err)
	}
}

// Under merge-on-read, Lake.Exec's changes write delete files, Lake.Files
// shows each file's deleted rows, and Lake.FoldDeletes rewrites them out.
func TestLakeMergeOnRead(t *testing.T) {
	ctx := context.Background()
	lake, err := rocklake.Create(ctx, filepath.Join(t.TempDir(), "lake"), rocklake.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()
	for _, q := range []string{
		"CREATE TABLE c (id BIGINT NOT NULL, s VARCHAR)",
		"INSERT INTO c SELECT i, 'v' || i FROM range(10) r(i)",
	} {
		if _, err := lake.Exec(ctx, q, rocklake.ExecOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mergeOnRead(t, lake, "c")
	del, err := lake.Exec(ctx, "DELETE FROM c WHERE id < 3", rocklake.ExecOptions{})
	if err != nil || del.Rows != 3 || del.DeleteFiles != 1 || del.FilesRemoved != 0 {
		t.Fatalf("DELETE: %+v, %v", del, err)
	}
	files, err := lake.Files(ctx, "c", rocklake.ReadOptions{})
	if err != nil || len(files) != 1 || files[0].DeletedRows != 3 || files[0].Rows != 10 || files[0].DeleteFile == "" {
		t.Fatalf("files: %+v, %v", files, err)
	}
	if got := firstValue(t, lake, "SELECT count(*) || '/' || min(id) FROM c"); got != "7/3" {
		t.Fatalf("after the DELETE: %s", got)
	}
	res, err := lake.FoldDeletes(ctx, "c")
	if err != nil || res.FilesBefore != 1 || res.Rows != 7 {
		t.Fatalf("fold: %+v, %v", res, err)
	}
	if files, _ = lake.Files(ctx, "c", rocklake.ReadOptions{}); len(files) != 1 || files[0].DeletedRows != 0 || files[0].Rows != 7 {
		t.Fatalf("files after the fold: %+v", files)
	}
	if got := firstValue(t, lake, "SELECT count(*) || '/' || min(id) FROM c"); got != "7/3" {
		t.Fatalf("after the fold: %s", got)
	}
}
