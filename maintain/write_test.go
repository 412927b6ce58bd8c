package maintain

import (
	"context"
	"database/sql"
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

// hiveTable creates table name in c with Hive partition columns parts.
func hiveTable(t *testing.T, c *catalog.Catalog, name, defs string, parts ...string) {
	t.Helper()
	cd, err := createColumns(defs)
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.PartitionBy(cd, parts); err != nil {
		t.Fatal(err)
	}
	tx, _ := c.Begin()
	tx.CreateTable(name, cd)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// A write into a table with Hive partition columns puts each partition's
// rows under its own key=value directories, spelled so that DuckDB's own
// hive_partitioning reads them back as written, for the values a
// directory must spell with care in every type that can partition (NULL,
// the string 'NULL', '/', '=', '%', '.', edges of each range); each
// partition is one file, and a query on a partition keeps only it. An
// UPDATE of the partition column moves rows between directories, with
// delete files or by rewriting the files it touches.
func TestWriteHivePartitions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		typ  string
		vals []string
	}{
		{"VARCHAR", []string{"'a'", "NULL", "'NULL'", "'null'", "'__HIVE_DEFAULT_PARTITION__'", "'x/y'", "'k=v'", "'%41'", "''", "'.'", "'..'", "' lead'", "'é中'", "'a\\b'", "'?#&'"}},
		{"BIGINT", []string{"0", "-1", "NULL", "-9223372036854775808", "9223372036854775807"}},
		{"DOUBLE", []string{"0.0", "0.1", "-2.5e-300", "'inf'", "'-inf'", "1e308", "NULL"}},
		{"FLOAT", []string{"0.1", "-3.5", "3.4028235e38"}},
		{"DECIMAL(9,2)", []string{"-9999999.99", "0.10", "1"}},
		{"DATE", []string{"DATE '0001-01-01'", "DATE '9999-12-31'", "DATE '2024-02-29'"}},
		{"TIMESTAMP", []string{"TIMESTAMP '2024-01-01 10:00:00.000001'", "TIMESTAMP '1970-01-01'"}},
		{"BOOLEAN", []string{"true", "false", "NULL"}},
	} {
		mode := []string{"copy-on-write", "merge-on-read"}[len(tc.typ)%2]
		t.Run(tc.typ+"/"+mode, func(t *testing.T) {
			root, c, e := writeLake(t)
			hiveTable(t, c, "t", "id BIGINT, p "+tc.typ+", q INTEGER", "p", "q")
			if mode != "copy-on-write" {
				alterTable(t, c, "t", "set", "option", "delete_mode", "=", mode)
			}
			var rows []string
			for i, v := range tc.vals {
				rows = append(rows, fmt.Sprintf("(%d, %s, %d), (%d, %s, %d)", i, v, i%2, i+100, v, i%2))
			}
			mustWrite(t, e, "INSERT INTO t VALUES "+strings.Join(rows, ", "))
			if n := len(liveFilesOf(t, c, "t")); n != len(tc.vals) {
				t.Fatalf("%d files for %d partitions", n, len(tc.vals))
			}
			// DuckDB reading the directories itself.
			db, err := engine.Open("")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			duck := func() string {
				t.Helper()
				var got sql.NullString
				q := fmt.Sprintf("SELECT string_agg(id || ':' || coalesce(p::VARCHAR, 'NULL') || ':' || q, ',' ORDER BY id) FROM read_parquet('%s/**/*.parquet', hive_partitioning = true, hive_types = {'p': '%s', 'q': 'INTEGER'})", root, tc.typ)
				if err := db.QueryRow(q).Scan(&got); err != nil {
					t.Fatal(err)
				}
				return got.String
			}
			ours := "SELECT string_agg(id || ':' || coalesce(p::VARCHAR, 'NULL') || ':' || q, ',' ORDER BY id) FROM t"
			if got, want := duck(), answerOf(t, e, catalog.Latest, ours); got != want {
				t.Fatalf("DuckDB reads the directories as\n%s\nthe table holds\n%s", got, want)
			}
			for i, v := range tc.vals {
				pred := fmt.Sprintf("p = CAST(%s AS %s)", v, tc.typ)
				if v == "NULL" {
					pred = "p IS NULL"
				}
				if got := answerOf(t, e, catalog.Latest, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t WHERE "+pred); got != fmt.Sprintf("%d,%d", i, i+100) {
					t.Errorf("%s: %s", pred, got)
				}
				if kept := keptFiles(t, c, catalog.Latest, pred); kept != 1 {
					t.Errorf("%s keeps %d files", pred, kept)
				}
			}
			// Rows move to another partition; the files they left go.
			mustWrite(t, e, "UPDATE t SET p = (SELECT p FROM t WHERE id = 0), q = 7 WHERE id >= 100")
			if got := answerOf(t, e, catalog.Latest, "SELECT count(*) FROM t WHERE q = 7 AND p IS NOT DISTINCT FROM (SELECT p FROM t WHERE id = 0)"); got != fmt.Sprint(len(tc.vals)) {
				t.Errorf("after the UPDATE, %s rows in the new partition", got)
			}
			if _, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"id"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Expire(time.Now(), catalog.ExpireOptions{MinRetention: -1}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Cleanup(catalog.CleanupOptions{Grace: -1}); err != nil {
				t.Fatal(err)
			}
			if got, want := duck(), answerOf(t, e, catalog.Latest, ours); got != want {
				t.Fatalf("after the UPDATE and optimize, DuckDB reads the directories as\n%s\nthe table holds\n%s", got, want)
			}
		})
	}
}

// A value no directory holds as the catalog keeps it (NaN; -0.0, which
// registration cannot keep apart from 0.0) is refused, saying so, and the
// write leaves nothing behind.
func TestWriteHiveRefusals(t *testing.T) {
	for _, tc := range []struct{ typ, val, says string }{
		{"DOUBLE", "'NaN'::DOUBLE", "a NaN partition value is not supported"},
		{"FLOAT", "'NaN'::FLOAT", "a NaN partition value is not supported"},
		{"DOUBLE", "'-0.0'::DOUBLE", catalog.NegativeZeroPartition},
		{"FLOAT", "'-0.0'::FLOAT", catalog.NegativeZeroPartition},
		// 30 characters of 3 bytes, each byte written %XX: 272 bytes with
		// "p=". Before, the file system's ENAMETOOLONG said nothing of
		// which column or value.
		{"VARCHAR", "'" + strings.Repeat("€", 30) + "'", "more than the 255 a file system allows"},
	} {
		root, c, e := writeLake(t)
		hiveTable(t, c, "t", "id BIGINT, p "+tc.typ, "p")
		before := latestID(t, c)
		_, err := Write(context.Background(), e, "INSERT INTO t VALUES (1, 1.5), (2, "+tc.val+")", WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}})
		if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), `partition column "p"`) {
			t.Fatalf("%s %s: %v", tc.typ, tc.val, err)
		}
		if latestID(t, c) != before || len(parquetFiles(t, root)) != 0 {
			t.Fatalf("%s %s: the refused write left something", tc.typ, tc.val)
		}
	}
}

// Equal INTERVALs of different spellings (DuckDB holds '30 days' equal to
// '1 month', '24 hours' to '1 day') are different Hive partitions: each
// row keeps its own value, through a write and through a merge of small
// files (both once put the rows of both spellings in one directory, whose
// value every row then read: '30 days' became '1 month', and DATE
// '2024-02-01' + p moved a day).
func TestWriteHiveIntervalSpellings(t *testing.T) {
	_, c, e := writeLake(t)
	hiveTable(t, c, "t", "id BIGINT, p INTERVAL", "p")
	const rows = "SELECT string_agg(id || ':' || p::VARCHAR || ':' || (DATE '2024-02-01' + p)::DATE, ',' ORDER BY id) FROM t"
	mustWrite(t, e, "INSERT INTO t VALUES (1, INTERVAL '1 month'), (2, INTERVAL '30 days'), (3, INTERVAL '1 day'), (4, INTERVAL '24 hours')")
	want := "1:1 month:2024-03-01,2:30 days:2024-03-02,3:1 day:2024-02-02,4:24:00:00:2024-02-02"
	if got := answerOf(t, e, catalog.Latest, rows); got != want {
		t.Fatalf("after the insert: %s, want %s", got, want)
	}
	if n := len(liveFilesOf(t, c, "t")); n != 4 {
		t.Fatalf("%d files for 4 spellings", n)
	}
	mustWrite(t, e, "INSERT INTO t VALUES (5, INTERVAL '30 days')")
	mustWrite(t, e, "INSERT INTO t VALUES (6, INTERVAL '1 month')")
	if _, err := MergeSmallFiles(context.Background(), e, "t", MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	want += ",5:30 days:2024-03-02,6:1 month:2024-03-01"
	if got := answerOf(t, e, catalog.Latest, rows); got != want {
		t.Fatalf("after merging small files: %s, want %s", got, want)
	}
}

// A sorted write keeps its order in the files it writes when DuckDB's
// threads share the work: 600,000 rows (several of DuckDB's row groups)
// in no order of x, into files of 100,000; each file holds a run of the
// order, the files one after another. With a layout's partitions too:
// within each partition file, x ascends. The order is what pruning
// stands on; the rewrite's check would not see it lost (it compares rows
// as sets).
func TestSortedWriteOrder(t *testing.T) {
	root, c, e := writeLake(t)
	for _, tb := range []string{"w", "p"} {
		mustWrite(t, e, "CREATE TABLE "+tb+" (x BIGINT, s VARCHAR, y DOUBLE)")
		alterTable(t, c, tb, "set", "sorted", "by", "x")
		alterTable(t, c, tb, "set", "option", "target_file_rows", "=", "100000")
	}
	alterTable(t, c, "p", "set", "partitioned", "by", "bucket(3, s)")
	src := " SELECT (hash(i) % 1000000)::BIGINT, 's' || (i % 13), i::DOUBLE FROM range(600000) r(i)"
	mustWrite(t, e, "INSERT INTO w"+src)
	mustWrite(t, e, "INSERT INTO p"+src)
	for _, tb := range []string{"w", "p"} {
		r, err := c.Read(catalog.Latest)
		if err != nil {
			t.Fatal(err)
		}
		table, err := r.Table(tb)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, f := range liveFilesOf(t, c, tb) {
			paths = append(paths, "'"+f.Location(table)+"'")
		}
		slices.Sort(paths) // part-00000, part-00001, ...: the order they were cut in
		if len(paths) < 6 {
			t.Fatalf("%s: %d files", tb, len(paths))
		}
		// Out of order: a row below the one before it in its file (in
		// every table), or a file starting below the end of the one
		// before it (in the table without partitions).
		q := fmt.Sprintf(`SELECT count(*) FILTER (WHERE x < px AND filename = pf), count(*) FILTER (WHERE x < px AND filename <> pf), count(*)
			FROM (SELECT x, filename, lag(x) OVER (ORDER BY filename, file_row_number) AS px, lag(filename) OVER (ORDER BY filename, file_row_number) AS pf
			FROM read_parquet([%s], filename = true, file_row_number = true))`, strings.Join(paths, ", "))
		var within, across, n int64
		if err := e.DB().QueryRow(q).Scan(&within, &across, &n); err != nil {
			t.Fatal(err)
		}
		if n != 600000 || within != 0 || (tb == "w" && across != 0) {
			t.Fatalf("%s: %d rows, %d out of order within a file, %d across files", tb, n, within, across)
		}
	}
	_ = root
}
