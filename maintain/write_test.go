package maintain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/prune"
)

// writeLake is an empty catalog with a data root, and its engine.
func writeLake(t *testing.T) (string, *catalog.Catalog, *engine.Engine) {
	t.Helper()
	root := t.TempDir()
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{DataRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return root, c, e
}

func mustWrite(t *testing.T, e *engine.Engine, q string) *WriteResult {
	t.Helper()
	res, err := Write(context.Background(), e, q, WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return res
}

func TestWriteSmoke(t *testing.T) {
	root, _, e := writeLake(t)
	mustWrite(t, e, "CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, v DOUBLE)")
	if r := mustWrite(t, e, "INSERT INTO t VALUES (1, 'a', 1.5), (2, NULL, -0.0), (3, 'c', 'NaN')"); r.Rows != 3 || r.Files != 1 {
		t.Fatalf("insert: %+v", r)
	}
	mustWrite(t, e, "INSERT INTO t (name, id) SELECT 'x' || i, i FROM range(10, 20) r(i)")
	mustWrite(t, e, "INSERT INTO t BY NAME SELECT 99 AS id")
	mustWrite(t, e, "CREATE TABLE u AS SELECT id * 2 AS id2, name FROM t WHERE id < 12")
	csv := filepath.Join(t.TempDir(), "in.csv")
	os.WriteFile(csv, []byte("id,name,v\n100,p,0.5\n101,q,\n"), 0o644)
	mustWrite(t, e, "COPY t FROM '"+csv+"' (FORMAT csv, HEADER)")
	got := answerOf(t, e, catalog.Latest, "SELECT count(*), count(name), sum(id), count(v) FROM t")
	if got != "16|14|451|4" {
		t.Fatalf("t: %s", got)
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT string_agg(id2::VARCHAR || ':' || coalesce(name, '-'), ',' ORDER BY id2) FROM u"); got != "2:a,4:-,6:c,20:x10,22:x11" {
		t.Fatalf("u: %s", got)
	}
	if _, err := Write(context.Background(), e, "INSERT INTO t (name) VALUES ('no id')", WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}}); err == nil || !strings.Contains(err.Error(), "t.id") {
		t.Fatalf("NOT NULL: %v", err)
	}
	t.Log(root)
}

// A stream of single-row inserts leaves a bounded number of files (tiers
// of 8), every row once, and a selective query that reads a few of them.
func TestSmallWritesMerge(t *testing.T) {
	root, c, e := writeLake(t)
	mustWrite(t, e, "CREATE TABLE t (id BIGINT, v VARCHAR)")
	const n = 300
	start := time.Now()
	merges := 0
	for i := range n {
		res := mustWrite(t, e, fmt.Sprintf("INSERT INTO t VALUES (%d, 'v%d')", i, i))
		if res.MergeError != "" {
			t.Fatal(res.MergeError)
		}
		if res.Merged > 0 {
			merges++
		}
	}
	t.Logf("%d single-row inserts: %v each, %d merges", n, time.Since(start)/n, merges)
	if got := answerOf(t, e, catalog.Latest, "SELECT count(*), count(DISTINCT id), sum(id) FROM t"); got != fmt.Sprintf("%d|%d|%d", n, n, n*(n-1)/2) {
		t.Fatalf("rows: %s", got)
	}
	live := liveFiles(t, c)
	bound := (mergeFanout - 1) * (tierOf(n) + 1)
	if len(live) > bound {
		t.Fatalf("%d live files after %d inserts, more than %d", len(live), n, bound)
	}
	if kept := keptFiles(t, c, catalog.Latest, "id = 150"); kept > 2 {
		t.Fatalf("id = 150 keeps %d of %d files", kept, len(live))
	}
	// Retired files stay for time travel; the first snapshot with rows
	// still reads its one row.
	if got := answerOf(t, e, 2, "SELECT count(*) FROM t"); got != "1" {
		t.Fatalf("snapshot 2: %s", got)
	}
	_ = root
}

// A write whose table is dropped, or loses a column, after its files are
// written and before they are registered commits nothing, removes its
// files and says to retry.
func TestWriteRacesAlter(t *testing.T) {
	for _, change := range []string{"drop table", "drop column", "drop and create"} {
		t.Run(change, func(t *testing.T) {
			root, c, e := writeLake(t)
			mustWrite(t, e, "CREATE TABLE t (a INTEGER, b VARCHAR)")
			mustWrite(t, e, "INSERT INTO t VALUES (1, 'x')")
			files := parquetFiles(t, root)
			afterWrite = func([]string) {
				tx, err := c.Begin()
				if err != nil {
					t.Fatal(err)
				}
				switch change {
				case "drop table":
					tx.DropTable("t")
				case "drop column":
					a, _ := catalog.ParseAlteration([]string{"drop", "column", "b"})
					tx.AlterTable("t", a)
				case "drop and create":
					tx.DropTable("t")
					tx.CreateTable("t", []catalog.ColumnDef{{Name: "a", Type: "INTEGER"}, {Name: "b", Type: "VARCHAR"}})
				}
				if _, err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			defer func() { afterWrite = nil }()
			before := latestID(t, c)
			_, err := Write(context.Background(), e, "INSERT INTO t SELECT i, 'y' FROM range(10) r(i)", WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}})
			if !errors.Is(err, ErrWriteRaced) || !errors.Is(err, catalog.ErrConflict) || !strings.Contains(err.Error(), "run the statement again") {
				t.Fatalf("%s: %v", change, err)
			}
			if latestID(t, c) != before+1 {
				t.Fatalf("the write committed something")
			}
			if now := parquetFiles(t, root); !slices.Equal(now, files) {
				t.Fatalf("files left: %v", now)
			}
		})
	}
}

// The first write into a table made by CREATE TABLE chooses membership
// filters as add --create does (random ids), and later writes build them
// too: a probe for one id keeps only the file that holds it.
func TestWriteFilters(t *testing.T) {
	_, c, e := writeLake(t)
	mustWrite(t, e, "CREATE TABLE t (id UUID, n BIGINT)")
	for k := range 4 {
		mustWrite(t, e, fmt.Sprintf("INSERT INTO t SELECT md5(i::VARCHAR)::UUID, i FROM range(%d, %d) r(i)", k*5000, (k+1)*5000))
	}
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := r.Table("t")
	cols, _ := r.Columns(tb.ID)
	has, err := r.HasFilters(tb.ID, cols[0].ID)
	r.Close()
	if err != nil || !has {
		t.Fatalf("no membership filter on the id column: %v", err)
	}
	var id string
	if err := e.DB().QueryRow("SELECT md5('12345')::UUID::VARCHAR").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if kept := keptFiles(t, c, catalog.Latest, "id = '"+id+"'"); kept != 1 {
		t.Fatalf("a probe for one id keeps %d of 4 files", kept)
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT n FROM t WHERE id = '"+id+"'"); got != "12345" {
		t.Fatalf("probe: %s", got)
	}
}

// Files a write lays out by the table's sort key prune as well as the
// same rows after optimize by that key: for ranges of every width, the
// write keeps no more files than optimize does.
func TestWritePrunesAsOptimize(t *testing.T) {
	_, c, e := writeLake(t)
	for _, tb := range []string{"w", "o"} {
		mustWrite(t, e, "CREATE TABLE "+tb+" (x BIGINT, y DOUBLE, s VARCHAR)")
		alterTable(t, c, tb, "set", "option", "target_file_rows", "=", "5000")
	}
	alterTable(t, c, "w", "set", "sorted", "by", "x")
	src := "SELECT (hash(i) % 1000000)::BIGINT AS x, (hash(i, 1) % 1000)::DOUBLE AS y, 's' || (i % 97) AS s FROM range(50000) r(i)"
	mustWrite(t, e, "INSERT INTO w "+src)
	mustWrite(t, e, "INSERT INTO o "+src)
	if _, err := Optimize(context.Background(), e, "o", OptimizeOptions{SortBy: []string{"x"}, RowsPerFile: 5000}); err != nil {
		t.Fatal(err)
	}
	kept := func(table, pred string) int {
		r, err := c.Read(catalog.Latest)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		p, err := prune.PlanTable(r, table, pred, prune.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Files.Kept
	}
	if n := len(liveFilesOf(t, c, "w")); n != 10 {
		t.Fatalf("the write made %d files of 5,000 rows, not 10", n)
	}
	for _, width := range []int{1, 1000, 50000, 300000} {
		for lo := 0; lo < 1000000; lo += 137777 {
			pred := fmt.Sprintf("x BETWEEN %d AND %d", lo, lo+width)
			if w, o := kept("w", pred), kept("o", pred); w > o {
				t.Fatalf("%s: the write keeps %d files, optimize %d", pred, w, o)
			}
		}
	}
	if got, want := answerOf(t, e, catalog.Latest, "SELECT count(*), sum(x) FROM w WHERE x < 123456"), answerOf(t, e, catalog.Latest, "SELECT count(*), sum(x) FROM o WHERE x < 123456"); got != want {
		t.Fatalf("answers differ: %s, %s", got, want)
	}
}

func liveFilesOf(t *testing.T, c *catalog.Catalog, table string) []catalog.DataFile {
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
	files, err := r.Files(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A write into a table with Hive partition columns is refused, saying
// why, and commits nothing.
func TestWriteHiveRefused(t *testing.T) {
	root, c, e := writeLake(t)
	defs, err := createColumns("id BIGINT, p VARCHAR")
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.PartitionBy(defs, []string{"p"}); err != nil {
		t.Fatal(err)
	}
	tx, _ := c.Begin()
	tx.CreateTable("t", defs)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	before := latestID(t, c)
	_, err = Write(context.Background(), e, "INSERT INTO t VALUES (1, 'a')", WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}})
	if err == nil || !strings.Contains(err.Error(), `Hive partition column "p"`) {
		t.Fatalf("a write into a Hive-partitioned table: %v", err)
	}
	if latestID(t, c) != before || len(parquetFiles(t, root)) != 0 {
		t.Fatal("the refused write left something")
	}
}
