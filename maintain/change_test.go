package maintain

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
)

func changeOpts() WriteOptions {
	return WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}, NoMerge: true}
}

func TestChangeSmoke(t *testing.T) {
	_, c, e := writeLake(t)
	mustWrite(t, e, "CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, v DOUBLE)")
	mustWrite(t, e, "INSERT INTO t SELECT i, 'n' || i, i / 2 FROM range(0, 100) r(i)")
	mustWrite(t, e, "INSERT INTO t SELECT i, 'n' || i, i / 2 FROM range(100, 200) r(i)")
	mustWrite(t, e, "CREATE TABLE u (id BIGINT, tag VARCHAR)")
	mustWrite(t, e, "INSERT INTO u VALUES (5, 'five'), (150, 'one fifty'), (7, NULL)")
	alterTable(t, c, "t", "set", "option", "delete_mode", "=", catalog.CopyOnWrite) // the files it changes are rewritten
	before := answerOf(t, e, catalog.Latest, "SELECT count(*) FROM t")

	r := mustWrite(t, e, "DELETE FROM t WHERE id >= 190")
	if r.Rows != 10 || r.FilesRemoved != 1 || r.Statement != "DELETE" {
		t.Fatalf("delete: %+v", r)
	}
	if r.Query == nil || r.Query.Tables[0].Plan.Files.Kept != 1 {
		t.Fatalf("delete should keep one file of two: %+v", r.Query.Tables[0].Plan.Files)
	}
	r = mustWrite(t, e, "DELETE FROM t AS x USING u WHERE x.id = u.id AND u.tag IS NOT NULL")
	if r.Rows != 2 || r.FilesRemoved != 2 || r.Files != 2 { // each file rewritten into one of its own
		t.Fatalf("delete using: %+v", r)
	}
	r = mustWrite(t, e, "UPDATE t SET name = upper(name), v = v * 10 WHERE id IN (SELECT id FROM u) OR id = 0")
	if r.Rows != 2 {
		t.Fatalf("update: %+v", r)
	}
	r = mustWrite(t, e, "UPDATE t SET name = u.tag FROM u WHERE t.id = u.id")
	if r.Rows != 1 { // 7 (tag NULL) is the one row left that u matches
		t.Fatalf("update from: %+v", r)
	}
	got := answerOf(t, e, catalog.Latest, "SELECT count(*), sum(id), string_agg(name, ',' ORDER BY id) FILTER (WHERE id IN (0, 7, 8)), sum(v) FILTER (WHERE id IN (0, 7)) FROM t")
	if got != "188|17800|N0,n8|35.0" {
		t.Fatalf("after changes: %s (before %s)", got, before)
	}
	if r := mustWrite(t, e, "DELETE FROM t WHERE id < 0"); r.Rows != 0 || r.Snapshot.ID != 0 {
		t.Fatalf("no-op delete: %+v", r)
	}
	// Errors name the table and leave the catalog as it was.
	head, _ := c.Read(catalog.Latest)
	was := head.Snapshot().ID
	head.Close()
	for q, want := range map[string]string{
		"UPDATE t SET id = NULL WHERE id = 1":                         "t.id",
		"UPDATE t SET id = 'x' WHERE id = 1":                          "Conversion Error",
		"UPDATE t SET nope = 1":                                       `no column "nope"`,
		"UPDATE t SET name = u.tag FROM u, u AS u2 WHERE t.id = u.id": "more than one row",
		"DELETE FROM t WHERE nope = 1":                                `"nope"`,
		"DELETE FROM t RETURNING *":                                   "RETURNING",
		"DELETE FROM missing":                                         "missing",
	} {
		_, err := Write(context.Background(), e, q, changeOpts())
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "__rocklake") {
			t.Errorf("%s: %v (want %q)", q, err, want)
		}
	}
	head, _ = c.Read(catalog.Latest)
	if head.Snapshot().ID != was {
		t.Fatalf("failed changes made snapshot %d (was %d)", head.Snapshot().ID, was)
	}
	head.Close()
	if r := mustWrite(t, e, "DELETE FROM t"); r.Rows != 188 || r.Files != 0 {
		t.Fatalf("delete all: %+v", r)
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT count(*) FROM t"); got != "0" {
		t.Fatalf("after delete all: %s", got)
	}
	// Time travel still sees the rows.
	if got := answerOf(t, e, was, "SELECT count(*) FROM t"); got != "188" {
		t.Fatalf("at %d: %s", was, got)
	}
}

// A DELETE of one id in a table of many files reads only the files that
// may hold it: the files its condition keeps, by statistics and filters.
func TestChangeReadsCandidatesOnly(t *testing.T) {
	_, _, e := writeLake(t)
	mustWrite(t, e, "CREATE TABLE t (user_id UUID, n BIGINT)")
	const files, rows = 20, 5000 // enough rows that the first write chooses a filter on user_id
	for k := range files {
		q := fmt.Sprintf("INSERT INTO t SELECT md5(i::VARCHAR)::UUID, i FROM range(%d, %d) r(i)", k*rows, (k+1)*rows)
		if _, err := Write(context.Background(), e, q, changeOpts()); err != nil {
			t.Fatal(err)
		}
	}
	var id, id2 string
	if err := e.DB().QueryRow("SELECT md5('12345')::UUID::VARCHAR, md5('54321')::UUID::VARCHAR").Scan(&id, &id2); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"DELETE FROM t WHERE user_id = '" + id + "'",
		"UPDATE t SET n = -1 WHERE user_id = '" + id2 + "'",
	} {
		r, err := Write(context.Background(), e, q, changeOpts())
		if err != nil {
			t.Fatal(err)
		}
		p := r.Query.Tables[0].Plan
		t.Logf("%s: kept %d of %d files, %d rows changed", q, p.Files.Kept, p.Files.Total, r.Rows)
		if p.Files.Kept > 2 || p.Files.Total < files {
			t.Fatalf("%s read %d of %d files", q, p.Files.Kept, p.Files.Total)
		}
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT count(*), count(*) FILTER (WHERE n IN (12345, 54321)), count(*) FILTER (WHERE n = -1) FROM t"); got != fmt.Sprintf("%d|0|1", files*rows-1) {
		t.Fatalf("after: %s", got)
	}
}

// Changes race other writers at the commit: one to the same file as
// another change, or an optimize, fails and says to retry, committing
// nothing and leaving no file; one racing an append to the table, or a
// change to other files, commits, and both hold.
func TestChangeRaces(t *testing.T) {
	for _, other := range []string{"delete same file", "optimize", "insert", "delete other file"} {
		t.Run(other, func(t *testing.T) {
			root, c, e := writeLake(t)
			mustWrite(t, e, "CREATE TABLE t (a INTEGER, b VARCHAR)")
			mustWrite(t, e, "INSERT INTO t SELECT i, 'x' FROM range(0, 10) r(i)")
			mustWrite(t, e, "INSERT INTO t SELECT i, 'y' FROM range(10, 20) r(i)")
			alterTable(t, c, "t", "set", "sorted", "by", "a")
			alterTable(t, c, "t", "set", "option", "delete_mode", "=", catalog.CopyOnWrite) // the race is at the rewrite's commit
			var raceErr error
			fired := false
			afterWrite = func([]string) {
				if fired {
					return
				}
				fired = true
				switch other {
				case "delete same file":
					_, raceErr = Write(context.Background(), e, "DELETE FROM t WHERE a = 2", changeOpts())
				case "delete other file":
					_, raceErr = Write(context.Background(), e, "DELETE FROM t WHERE a = 12", changeOpts())
				case "insert":
					_, raceErr = Write(context.Background(), e, "INSERT INTO t VALUES (100, 'z')", changeOpts())
				case "optimize":
					_, raceErr = Optimize(context.Background(), e, "t", OptimizeOptions{})
				}
			}
			defer func() { afterWrite = nil }()
			before, files0 := latestID(t, c), parquetFiles(t, root)
			_, err := Write(context.Background(), e, "DELETE FROM t WHERE a = 1", changeOpts())
			if raceErr != nil {
				t.Fatalf("the racing %s: %v", other, raceErr)
			}
			got := answerOf(t, e, catalog.Latest, "SELECT count(*), count(*) FILTER (WHERE a IN (1, 2, 12, 100)) FROM t")
			switch other {
			case "delete same file", "optimize":
				if !errors.Is(err, ErrWriteRaced) || !strings.Contains(err.Error(), "run the statement again") {
					t.Fatalf("after a racing %s: %v", other, err)
				}
				if latestID(t, c) != before+1 {
					t.Fatalf("the losing delete committed")
				}
				want := "20|3" // the optimize's rows, all there
				if other == "delete same file" {
					want = "19|2"
				}
				if got != want {
					t.Fatalf("rows: %s, want %s", got, want)
				}
				// The loser's files are gone: every file left is live, or
				// was there before the race.
				r, _ := c.Read(catalog.Latest)
				tb, _ := r.Table("t")
				live, _ := r.Files(tb.ID)
				r.Close()
				for _, p := range parquetFiles(t, root) {
					if strings.HasSuffix(p, ".parquet") && !slices.Contains(files0, p) && !slices.ContainsFunc(live, func(f catalog.DataFile) bool { return f.Location(tb) == p }) {
						t.Fatalf("the losing delete left %s", p)
					}
				}
			default:
				if err != nil {
					t.Fatalf("a delete racing a %s: %v", other, err)
				}
				want := "18|1" // 1 and 12 gone, 2 stays
				if other == "insert" {
					want = "20|3" // 1 gone; 2, 12 and the 100 added
				}
				if got != want {
					t.Fatalf("rows: %s, want %s", got, want)
				}
			}
		})
	}
}

func TestMergeSmoke(t *testing.T) {
	_, c, e := writeLake(t)
	mustWrite(t, e, "CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR)")
	alterTable(t, c, "t", "add", "column", "n", "INTEGER", "DEFAULT", "7")
	mustWrite(t, e, "INSERT INTO t SELECT i, 'n' || i, i FROM range(0, 100) r(i)")
	mustWrite(t, e, "INSERT INTO t SELECT i, 'n' || i, i FROM range(100, 200) r(i)")
	r := mustWrite(t, e, `MERGE INTO t USING (SELECT * FROM (VALUES (5, 'five'), (150, 'gone'), (500, 'new'), (501, NULL)) v(id, name)) AS s ON t.id = s.id
		WHEN MATCHED AND s.name = 'gone' THEN DELETE
		WHEN MATCHED THEN UPDATE SET name = s.name, n = t.n * 100
		WHEN NOT MATCHED AND s.name IS NULL THEN INSERT (id) VALUES (s.id)
		WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, -1)`)
	if r.Rows != 4 || r.Statement != "MERGE" {
		t.Fatalf("merge: %+v", r)
	}
	got := answerOf(t, e, catalog.Latest, "SELECT count(*), string_agg(id || ':' || coalesce(name, '-') || ':' || n, ',' ORDER BY id) FILTER (WHERE id IN (5, 150, 500, 501)) FROM t")
	if got != "201|5:five:500,500:new:-1,501:-:7" {
		t.Fatalf("after merge: %s", got)
	}
	r = mustWrite(t, e, `MERGE INTO t AS x USING (SELECT 1 AS id) AS s ON x.id = s.id WHEN NOT MATCHED BY SOURCE AND x.id >= 190 THEN DELETE WHEN MATCHED THEN DO NOTHING`)
	if r.Rows != 12 { // 190..199, 500, 501
		t.Fatalf("by source: %+v", r)
	}
	for q, want := range map[string]string{
		"MERGE INTO t USING (SELECT 1 AS id UNION ALL SELECT 1) s ON t.id = s.id WHEN MATCHED THEN DELETE":            "more than one row",
		"MERGE INTO t USING (SELECT 2 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = NULL":                 "t.id",
		"MERGE INTO t USING (SELECT 2 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET nope = 1":                  `no column "nope"`,
		"MERGE INTO t USING (SELECT 2 AS id) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (nope) VALUES (1)":         `no column "nope"`,
		"MERGE INTO t USING (SELECT 2000 AS id) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES ('x', 'y', 'z')": "Conversion Error",
	} {
		_, err := Write(context.Background(), e, q, changeOpts())
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "__rocklake") {
			t.Errorf("%s: %v (want %q)", q, err, want)
		}
	}
}

// Changes to a table whose files were written under older columns (a
// column added with a default since, one renamed) read every file as the
// table is now, and the rewritten files hold the table's columns.
func TestChangeEvolvedTable(t *testing.T) {
	_, c, e := writeLake(t)
	mustWrite(t, e, "CREATE TABLE t (id BIGINT, v VARCHAR)")
	mustWrite(t, e, "INSERT INTO t SELECT i, 'v' || i FROM range(0, 10) r(i)")
	alterTable(t, c, "t", "set", "option", "delete_mode", "=", catalog.CopyOnWrite) // the rewritten files hold the table's columns
	alterTable(t, c, "t", "add", "column", "n", "INTEGER", "DEFAULT", "7")
	alterTable(t, c, "t", "rename", "column", "v", "to", "label")
	mustWrite(t, e, "INSERT INTO t SELECT i, 'w' || i, i FROM range(10, 20) r(i)")
	if r := mustWrite(t, e, "UPDATE t SET n = n + 100 WHERE id % 5 = 0"); r.Rows != 4 || r.FilesRemoved != 2 {
		t.Fatalf("update: %+v", r)
	}
	if r := mustWrite(t, e, "DELETE FROM t WHERE label IN ('v1', 'w11')"); r.Rows != 2 {
		t.Fatalf("delete: %+v", r)
	}
	got := answerOf(t, e, catalog.Latest, "SELECT count(*), sum(n), string_agg(id || ':' || label || ':' || n, ',' ORDER BY id) FILTER (WHERE id IN (0, 2, 10, 12, 15)) FROM t")
	// ids 0..9 read n = 7 (the default), 10..19 their own; 0, 5, 10, 15 get +100; 1 and 11 deleted.
	if got != "18|597|0:v0:107,2:v2:7,10:w10:110,12:w12:12,15:w15:115" {
		t.Fatalf("after the changes: %s", got)
	}
	rep, err := Verify(context.Background(), e, "t", catalog.Latest, true)
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// Changes to a table whose Hive-partitioned files someone else wrote (a
// value URL-encoded, one with a leading zero) keep each partition's rows
// under the directories its files spelled; rows moved to a new partition
// get a directory of their own. After each change the table holds what
// DuckDB's own table does after the same statement, and DuckDB reading
// the live files' directories itself sees the same rows.
func TestChangeHiveTables(t *testing.T) {
	for _, mode := range []string{"copy-on-write", "merge-on-read"} {
		t.Run(mode, func(t *testing.T) {
			root, c, e := writeLake(t)
			oracle, err := engine.Open("")
			if err != nil {
				t.Fatal(err)
			}
			defer oracle.Close()
			if _, err := oracle.Exec("CREATE TABLE sales (id BIGINT, p VARCHAR, k BIGINT)"); err != nil {
				t.Fatal(err)
			}
			for i, dir := range []string{"p=a/k=1", "p=%20b/k=-007", "p=a/k=2"} {
				d := filepath.Join(root, "sales", filepath.FromSlash(dir))
				os.MkdirAll(d, 0o755)
				if _, err := e.DB().Exec(fmt.Sprintf("COPY (SELECT range + %d AS id FROM range(5)) TO '%s' (FORMAT parquet)", 10*i, filepath.Join(d, "f.parquet"))); err != nil {
					t.Fatal(err)
				}
				p, k, _ := strings.Cut(dir, "/")
				pv, _ := url.PathUnescape(strings.TrimPrefix(p, "p="))
				kv, _ := strconv.Atoi(strings.TrimPrefix(k, "k="))
				if _, err := oracle.Exec(fmt.Sprintf("INSERT INTO sales SELECT range + %d, '%s', %d FROM range(5)", 10*i, pv, kv)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := ingest.Add(c, "sales", []string{filepath.Join(root, "sales")}, ingest.Options{Create: true, Hive: true}); err != nil {
				t.Fatal(err)
			}
			alterTable(t, c, "sales", "set", "option", "delete_mode", "=", mode)
			const rows = "SELECT string_agg(id || ':' || coalesce(p, 'NULL') || ':' || coalesce(k::VARCHAR, 'NULL'), ',' ORDER BY id, p, k) FROM "
			for _, q := range []string{
				"DELETE FROM sales WHERE id = 1",
				"UPDATE sales SET id = id + 100 WHERE id IN (2, 12)",
				"UPDATE sales SET p = 'c/d' WHERE id = 3",
				"UPDATE sales SET k = NULL, p = NULL WHERE id BETWEEN 20 AND 22",
				"INSERT INTO sales (id, p, k) VALUES (50, ' b', -7), (51, 'a', 1)",
				"MERGE INTO sales USING (SELECT 50 AS id) s ON sales.id = s.id WHEN MATCHED THEN UPDATE SET p = 'e', k = 9",
			} {
				if _, err := Write(context.Background(), e, q, changeOpts()); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				if _, err := oracle.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				var want string
				if err := oracle.QueryRow(rows + "sales").Scan(&want); err != nil {
					t.Fatal(err)
				}
				if got := answerOf(t, e, catalog.Latest, rows+"sales"); got != want {
					t.Fatalf("%s: the table holds\n%s\nDuckDB's\n%s", q, got, want)
				}
				// DuckDB reading the live files where they are (delete
				// files aside: the merge-on-read table is folded first).
				if mode == "merge-on-read" {
					if _, err := FoldDeletes(context.Background(), e, "sales"); err != nil {
						t.Fatal(err)
					}
				}
				rd, err := c.Read(catalog.Latest)
				if err != nil {
					t.Fatal(err)
				}
				tb, _ := rd.Table("sales")
				rd.Close()
				var paths []string
				for _, f := range liveFilesOf(t, c, "sales") {
					paths = append(paths, "'"+f.Location(tb)+"'")
				}
				var read string
				if err := oracle.QueryRow(rows + "read_parquet([" + strings.Join(paths, ", ") + "], hive_partitioning = true, hive_types = {'p': 'VARCHAR', 'k': 'BIGINT'})").Scan(&read); err != nil {
					t.Fatal(err)
				}
				if read != want {
					t.Fatalf("%s: DuckDB reads the files' directories as\n%s\nwant\n%s", q, read, want)
				}
			}
		})
	}
}

// Under merge-on-read, a change and another writer race at the commit on
// delete files too: an optimize that read a file before a delete of its
// rows landed must not bring the rows back (it fails, committing nothing);
// an UPDATE whose delete file merged an older state of the file's deletes,
// or whose file was rewritten, fails and says to retry; one racing a change
// to another file commits, and both hold.
func TestChangeRacesMergeOnRead(t *testing.T) {
	for _, race := range []struct{ main, other string }{
		{"optimize", "DELETE FROM t WHERE a = 2"},
		{"UPDATE t SET b = 'u' WHERE a = 1", "DELETE FROM t WHERE a = 2"},
		{"UPDATE t SET b = 'u' WHERE a = 1", "DELETE FROM t WHERE a = 12"},
		{"UPDATE t SET b = 'u' WHERE a = 1", "optimize"},
	} {
		t.Run(race.main+" vs "+race.other, func(t *testing.T) {
			_, c, e := writeLake(t)
			mustWrite(t, e, "CREATE TABLE t (a INTEGER, b VARCHAR)")
			mustWrite(t, e, "INSERT INTO t SELECT i, 'x' FROM range(0, 10) r(i)")
			mustWrite(t, e, "INSERT INTO t SELECT i, 'y' FROM range(10, 20) r(i)")
			alterTable(t, c, "t", "set", "sorted", "by", "a")
			alterTable(t, c, "t", "set", "option", "delete_mode", "=", "merge-on-read")
			do := func(what string) error {
				if what == "optimize" {
					_, err := Optimize(context.Background(), e, "t", OptimizeOptions{})
					return err
				}
				_, err := Write(context.Background(), e, what, changeOpts())
				return err
			}
			var raceErr error
			fired := false
			afterWrite = func([]string) {
				if !fired {
					fired = true
					raceErr = do(race.other)
				}
			}
			defer func() { afterWrite = nil }()
			before := latestID(t, c)
			err := do(race.main)
			if !fired || raceErr != nil {
				t.Fatalf("the racing %s: fired %v, %v", race.other, fired, raceErr)
			}
			got := answerOf(t, e, catalog.Latest, "SELECT count(*), count(*) FILTER (WHERE a IN (1, 2, 12)), count(*) FILTER (WHERE b = 'u') FROM t")
			if race.other == "DELETE FROM t WHERE a = 12" {
				if err != nil || got != "19|2|1" {
					t.Fatalf("an update racing a delete of another file: %v, rows %s", err, got)
				}
				return
			}
			if err == nil || latestID(t, c) != before+1 {
				t.Fatalf("%s racing %s committed (%v)", race.main, race.other, err)
			}
			if race.main != "optimize" && !errors.Is(err, ErrWriteRaced) {
				t.Fatalf("%s racing %s: %v, want ErrWriteRaced", race.main, race.other, err)
			}
			want := "19|2|0" // the racing delete of 2 holds, nothing of the loser
			if race.other == "optimize" {
				want = "20|3|0"
			}
			if got != want {
				t.Fatalf("rows %s, want %s", got, want)
			}
		})
	}
}

// Optimize, compact and fold of a table whose files have deleted rows read
// them a batch of files at a time and fold the deletes: the rows left, in
// one snapshot, no delete file after; time travel still reads the rows
// before.
func TestRewritesFoldDeletes(t *testing.T) {
	defer func(n int) { stageBatch = n }(stageBatch)
	stageBatch = 2
	for _, how := range []string{"optimize", "compact", "fold"} {
		t.Run(how, func(t *testing.T) {
			_, c, e := writeLake(t)
			mustWrite(t, e, "CREATE TABLE t (a INTEGER, b VARCHAR)")
			for k := range 5 {
				mustWrite(t, e, fmt.Sprintf("INSERT INTO t SELECT i, 'x' || i FROM range(%d, %d) r(i)", k*10, (k+1)*10))
			}
			alterTable(t, c, "t", "set", "sorted", "by", "a")
			alterTable(t, c, "t", "set", "option", "delete_mode", "=", "merge-on-read")
			r := mustWrite(t, e, "DELETE FROM t WHERE a % 3 = 0")
			if r.DeleteFiles != 5 {
				t.Fatalf("delete: %+v", r)
			}
			before := latestID(t, c)
			var err error
			switch how {
			case "optimize":
				_, err = Optimize(context.Background(), e, "t", OptimizeOptions{})
			case "compact":
				_, err = MergeSmallFiles(context.Background(), e, "t", MergeOptions{RowsPerFile: 1000})
			default:
				_, err = FoldDeletes(context.Background(), e, "t")
			}
			if err != nil {
				t.Fatal(err)
			}
			q := "SELECT count(*), sum(a), count(*) FILTER (WHERE a % 3 = 0) FROM t"
			if got := answerOf(t, e, catalog.Latest, q); got != "33|817|0" {
				t.Fatalf("after %s: %s", how, got)
			}
			if got := answerOf(t, e, before-1, q); got != "50|1225|17" {
				t.Fatalf("before the delete: %s", got)
			}
			rd, _ := c.Read(catalog.Latest)
			defer rd.Close()
			tb, _ := rd.Table("t")
			if ds, _ := rd.DeleteFiles(tb.ID); len(ds) != 0 {
				t.Fatalf("after %s: %d delete files", how, len(ds))
			}
		})
	}
}
