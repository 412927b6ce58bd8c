package maintain

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
)

var txnN = flag.Int("txn.n", 25, "transactions TestTxnAsDuckDBWithAnotherWriter runs")

// TestTxnAsDuckDBWithAnotherWriter is a differential check of
// transactions of writes against DuckDB's own, with another writer: random
// transactions of INSERTs, INSERT ... SELECTs, DELETEs, UPDATEs, MERGEs
// and queries over three tables (one merge-on-read, so that the files the
// transaction reads carry delete files, one Hive-partitioned), while between its statements
// another writer appends to either table and commits. DuckDB runs the
// same transaction on one connection and the other writer's statements on
// another. Every statement must touch the rows DuckDB's touches, every
// query answer as DuckDB's (the transaction's writes in, the other
// writer's appends since its first statement out), and after each COMMIT
// or ROLLBACK the tables must hold DuckDB's rows. Runs on the catalog
// backends kvtest.Store gives (PostgreSQL too).
func TestTxnAsDuckDBWithAnotherWriter(t *testing.T) {
	ctx := context.Background()
	_, c, e := writeLake(t)
	oracle, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer oracle.Close()
	in, err := oracle.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	other, err := oracle.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	both := func(q string) {
		t.Helper()
		// No merge after the write: a merge retires small files, which
		// a change of the transaction may retire too (a conflict, 40001).
		if _, err := Write(ctx, e, q, changeOpts()); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if _, err := other.ExecContext(ctx, q); err != nil {
			t.Fatalf("DuckDB %s: %v", q, err)
		}
	}
	both("CREATE TABLE a (x BIGINT, s VARCHAR)")
	both("CREATE TABLE b (x BIGINT, s VARCHAR)")
	alterTable(t, c, "b", "set", "option", "delete_mode", "=", catalog.MergeOnRead)
	for i := range 3 {
		both(fmt.Sprintf("INSERT INTO a SELECT i, 'a' || i FROM range(%d, %d) r(i)", i*20, i*20+20))
		both(fmt.Sprintf("INSERT INTO b SELECT i, 'b' || i FROM range(%d, %d) r(i)", i*15, i*15+15))
	}
	both("DELETE FROM b WHERE x % 7 = 0") // delete files on b's files
	// h is Hive-partitioned by s: a write puts each value's rows under
	// s=value/ directories, an UPDATE of s moves them.
	hiveTable(t, c, "h", "x BIGINT, s VARCHAR", "s")
	if _, err := other.ExecContext(ctx, "CREATE TABLE h (x BIGINT, s VARCHAR)"); err != nil {
		t.Fatal(err)
	}
	both("INSERT INTO h SELECT i, 'h' || (i % 4) FROM range(0, 40) r(i)")

	query := func(ask func(context.Context, string) (string, error), q string) string {
		t.Helper()
		s, err := ask(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return s
	}
	duckAsk := func(conn *sql.Conn) func(context.Context, string) (string, error) {
		return func(ctx context.Context, q string) (string, error) {
			var s sql.NullString
			err := conn.QueryRowContext(ctx, q).Scan(&s)
			return s.String, err
		}
	}
	ourAsk := func(e *engine.Engine) func(context.Context, string) (string, error) {
		return func(ctx context.Context, q string) (string, error) {
			res, err := e.Query(ctx, q, engine.QueryOptions{Snapshot: catalog.Latest})
			if err != nil {
				return "", err
			}
			if v := res.Rows[0][0]; v != nil {
				return *v, nil
			}
			return "", nil
		}
	}
	const state = "SELECT coalesce(string_agg(x::VARCHAR || ':' || coalesce(s, '-'), ',' ORDER BY x, s), '') FROM "
	r := rand.New(rand.NewPCG(11, 3))
	tables := []string{"a", "b", "h"}
	var stmts, reads, appends, commits, cleanups int
	for n := range *txnN {
		tx := NewTxn(e)
		if _, err := in.ExecContext(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		for step := range 1 + r.IntN(7) {
			x, y := tables[r.IntN(len(tables))], tables[r.IntN(len(tables))]
			var q string
			switch k := r.IntN(7); {
			case step == 0 || k == 0:
				q = fmt.Sprintf("INSERT INTO %s VALUES (%d, 'i%d')", x, r.IntN(200), n%3)
			case k == 1:
				q = fmt.Sprintf("INSERT INTO %s SELECT x + 1000, s || '+' FROM %s WHERE x %% 5 = %d", x, y, r.IntN(5))
			case k == 2:
				q = fmt.Sprintf("DELETE FROM %s WHERE x %% 4 = %d", x, r.IntN(4))
			case k == 3:
				q = fmt.Sprintf("UPDATE %s SET s = s || 'u', x = x + 1 WHERE x < %d", x, r.IntN(80))
			case k == 4:
				q = fmt.Sprintf("MERGE INTO %s USING (SELECT DISTINCT x %% 30 AS k FROM %s) src ON %s.x = src.k "+
					"WHEN MATCHED AND src.k %% 2 = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET s = 'm' WHEN NOT MATCHED THEN INSERT VALUES (src.k + 500, 'new')", x, y, x)
			default:
				q = "SELECT count(*) || '/' || coalesce(sum(x), 0) || '/' || coalesce(max(s), '') FROM " + y
				got, want := query(ourAsk(tx.Engine()), q), query(duckAsk(in), q)
				if got != want {
					t.Fatalf("transaction %d: %s: %s, DuckDB's transaction %s", n, q, got, want)
				}
				reads++
				continue
			}
			res, err := tx.Exec(ctx, q, changeOpts())
			if err != nil {
				t.Fatalf("transaction %d: %s: %v", n, q, err)
			}
			dres, err := in.ExecContext(ctx, q)
			if err != nil {
				t.Fatalf("DuckDB %s: %v", q, err)
			}
			if want, _ := dres.RowsAffected(); res.Rows != want {
				t.Fatalf("transaction %d: %s: %d rows, DuckDB's %d", n, q, res.Rows, want)
			}
			stmts++
			if r.IntN(4) == 0 {
				// Orphan cleanup with no grace, in the middle of the
				// transaction: its files are leased, every other file is
				// registered, so there is nothing to take.
				orph, err := c.DeleteOrphans(catalog.OrphanOptions{Grace: -1})
				if err != nil {
					t.Fatal(err)
				}
				if len(orph.Deleted) > 0 {
					t.Fatalf("transaction %d: orphan cleanup took %v", n, orph.Deleted)
				}
				cleanups++
			}
			if r.IntN(3) == 0 {
				// The other writer appends and commits.
				both(fmt.Sprintf("INSERT INTO %s VALUES (%d, 'o%d')", tables[r.IntN(len(tables))], r.IntN(300), n%3))
				appends++
			}
		}
		end := "COMMIT"
		if r.IntN(4) == 0 {
			end = "ROLLBACK"
			tx.Rollback()
		} else if _, err := tx.Commit(ctx); err != nil {
			t.Fatalf("transaction %d: COMMIT: %v", n, err)
		} else {
			commits++
		}
		if _, err := in.ExecContext(ctx, end); err != nil {
			t.Fatalf("DuckDB %s: %v", end, err)
		}
		for _, tb := range tables {
			if got, want := query(ourAsk(e), state+tb), query(duckAsk(other), state+tb); got != want {
				t.Fatalf("after transaction %d (%s), %s holds\n%s\nDuckDB's\n%s", n, end, tb, got, want)
			}
		}
	}
	res, err := c.DeleteOrphans(catalog.OrphanOptions{DryRun: true, Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted)+len(res.Waiting)+len(res.InUse)+len(res.Expired) != 0 {
		t.Fatalf("files no snapshot registered: %+v", res)
	}
	t.Logf("%d transactions (%d committed): %d statements, %d reads, %d appends of the other writer, %d orphan cleanups within", *txnN, commits, stmts, reads, appends, cleanups)
}

// A staging file a killed write left in its rewrite directory is an
// orphan like its files: cleanup --orphans removes it once older than the
// grace period, and leaves the table's rows.
func TestStaleStagingFileIsAnOrphan(t *testing.T) {
	_, c, e := writeLake(t)
	mustWrite(t, e, "CREATE TABLE t (id BIGINT, v VARCHAR)")
	mustWrite(t, e, "INSERT INTO t SELECT i, 'v' || i FROM range(1000) r(i)")
	files := liveFilesOf(t, c, "t")
	tb := latestTable(t, c, "t")
	stage := filepath.Join(filepath.Dir(files[0].Location(tb)), ".rows.tmp")
	if err := os.WriteFile(stage, []byte("rows"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(stage, old, old)
	res, err := c.DeleteOrphans(catalog.OrphanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stage); !errors.Is(err, fs.ErrNotExist) || !slices.Contains(res.Deleted, stage) {
		t.Fatalf("a stale staging file was kept: %v, %v", err, res.Deleted)
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT count(*) FROM t"); got != "1000" {
		t.Fatalf("after cleanup: %s", got)
	}
}

// noLeaseLeft fails when a write left its lease (catalog.LeaseFile)
// anywhere under root: every write gives it up when it commits, fails or
// rolls back, or cleanup --orphans would leave its directory alone until
// the lease expired.
func noLeaseLeft(t *testing.T, root string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == catalog.LeaseFile {
			t.Fatalf("a lease left behind: %s", p)
		}
		return nil
	})
}

// A transaction held open longer than the grace period keeps its files
// from cleanup --orphans (its lease), and commits them; one rolled back
// leaves nothing, lease included.
func TestOpenTxnFilesOutliveOrphanCleanup(t *testing.T) {
	ctx := context.Background()
	for _, end := range []string{"COMMIT", "ROLLBACK"} {
		t.Run(end, func(t *testing.T) {
			root, c, e := writeLake(t)
			mustWrite(t, e, "CREATE TABLE t (id BIGINT, v VARCHAR)")
			mustWrite(t, e, "INSERT INTO t SELECT i, 'a' FROM range(10) r(i)")
			tx := NewTxn(e)
			defer tx.Rollback()
			o := WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}}
			for _, q := range []string{"INSERT INTO t SELECT i, 'b' FROM range(100) r(i)", "UPDATE t SET v = 'c' WHERE id < 5",
				"INSERT INTO t VALUES (1000, 'd')"} {
				if _, err := tx.Exec(ctx, q, o); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			// Hours pass: every file the transaction wrote (those beside a
			// lease) is older than the grace period.
			old := time.Now().Add(-3 * time.Hour)
			var parts int
			filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				_, leased := os.Stat(filepath.Join(filepath.Dir(p), catalog.LeaseFile))
				if err == nil && leased == nil && strings.HasPrefix(d.Name(), "part-") {
					os.Chtimes(p, old, old)
					parts++
				}
				return nil
			})
			res, err := c.DeleteOrphans(catalog.OrphanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Deleted) != 0 || len(res.InUse) != 3 {
				t.Fatalf("cleanup --orphans during an open transaction (%d part files): %+v", parts, res)
			}
			want := "111|1|10"
			if end == "COMMIT" {
				if _, err := tx.Commit(ctx); err != nil {
					t.Fatalf("COMMIT after cleanup: %v", err)
				}
			} else {
				tx.Rollback()
				want = "10|0|0"
			}
			q := "SELECT count(*), count(*) FILTER (WHERE v = 'd'), count(*) FILTER (WHERE v = 'c') FROM t"
			if got := answerOf(t, e, catalog.Latest, q); got != want {
				t.Fatalf("after %s: %s, want %s", end, got, want)
			}
			noLeaseLeft(t, root)
			if res, err := c.DeleteOrphans(catalog.OrphanOptions{DryRun: true, Grace: -1}); err != nil || len(res.Deleted)+len(res.InUse) != 0 {
				t.Fatalf("after %s, orphans: %+v %v", end, res, err)
			}
		})
	}
}

// A killed DELETE's delete file is an orphan like a killed write's part
// file; the delete files snapshots apply are not, in a live directory or
// in one that also holds an orphan.
func TestOrphanedDeleteFile(t *testing.T) {
	_, c, e := writeLake(t)
	mustWrite(t, e, "CREATE TABLE t (id BIGINT, v VARCHAR)")
	mustWrite(t, e, "INSERT INTO t SELECT i, 'v' || i FROM range(1000) r(i)")
	mustWrite(t, e, "DELETE FROM t WHERE id % 10 = 0")
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := r.Table("t")
	if err != nil {
		t.Fatal(err)
	}
	dels, err := r.DeleteFiles(tb.ID)
	r.Close()
	if err != nil || len(dels) == 0 {
		t.Fatalf("no delete file: %v %v", dels, err)
	}
	var live string
	for _, d := range dels {
		live = d.Location(tb)
	}
	killed := filepath.Join(filepath.Dir(filepath.Dir(live)), "delete-99")
	l, err := catalog.MakeRewriteDir(killed, c.RewriteRoot())
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	orphans := []string{filepath.Join(killed, "delete-1.parquet"), filepath.Join(filepath.Dir(live), "delete-12345.parquet")}
	old := time.Now().Add(-2 * time.Hour)
	for _, p := range append([]string{live}, orphans...) {
		if p != live {
			if err := os.WriteFile(p, []byte("PAR1"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, p := range orphans {
		os.Chtimes(p, old, old)
	}
	// No grace: the live delete file, just written, would go too were it
	// not known.
	res, err := c.DeleteOrphans(catalog.OrphanOptions{Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(slices.Values(res.Deleted)); !slices.Equal(got, slices.Sorted(slices.Values(orphans))) {
		t.Fatalf("deleted %v, want %v", got, orphans)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("a delete file the latest snapshot applies: %v", err)
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT count(*) FROM t"); got != "900" {
		t.Fatalf("after cleanup: %s", got)
	}
}

// A write into a Hive-partitioned table puts its files in key=value
// directories below its rewrite directory: orphan cleanup finds them
// there once the writer's lease is gone (a commit after that fails with
// ErrLeaseLost, committing nothing), and cleanup removes the key=value
// directories and the rewrite directory they leave empty.
func TestHiveWriteDirsLeaveNoShells(t *testing.T) {
	ctx := context.Background()
	root, c, e := writeLake(t)
	hiveTable(t, c, "t", "id BIGINT, p VARCHAR", "p")
	mustWrite(t, e, "INSERT INTO t SELECT i, 'k' || (i % 3) FROM range(30) r(i)")
	first := liveFilesOf(t, c, "t")
	tb := latestTable(t, c, "t")
	firstDir := filepath.Dir(filepath.Dir(first[0].Location(tb)))
	if !catalog.IsRewriteDir(firstDir) {
		t.Fatalf("%s is not the write's directory", firstDir)
	}

	tx := NewTxn(e)
	defer tx.Rollback()
	if _, err := tx.Exec(ctx, "INSERT INTO t SELECT i, 'q' || (i % 4) FROM range(40) r(i)", WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}}); err != nil {
		t.Fatal(err)
	}
	// The writer died: its lease went with it, and its files are hours
	// old.
	st := tx.staged[0]
	st.lease.Release()
	old := time.Now().Add(-3 * time.Hour)
	var staged []string
	filepath.WalkDir(st.path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), "part-") {
			os.Chtimes(p, old, old)
			staged = append(staged, p)
		}
		return nil
	})
	if len(staged) != 4 {
		t.Fatalf("staged %v", staged)
	}
	res, err := c.DeleteOrphans(catalog.OrphanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(slices.Values(res.Deleted)); !slices.Equal(got, slices.Sorted(slices.Values(staged))) {
		t.Fatalf("orphans deleted %v, want %v", got, staged)
	}
	if _, err := os.Stat(st.path); !errors.Is(err, fs.ErrNotExist) || !slices.Contains(res.Dirs, st.path) {
		t.Fatalf("the killed write's directory is left: %v %v", err, res.Dirs)
	}
	if _, err := tx.Commit(ctx); !errors.Is(err, catalog.ErrLeaseLost) {
		t.Fatalf("commit of the files cleanup took: %v", err)
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT count(*) FROM t"); got != "30" {
		t.Fatalf("after the failed commit: %s rows", got)
	}

	// A rewrite into a directory of the user's choosing (--dir): an
	// orphan in one of its key=value directories is found through the
	// files the catalog knows there.
	mine := filepath.Join(root, "mine")
	if _, err := Optimize(ctx, e, "t", OptimizeOptions{Dir: mine, SortBy: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	kv, err := filepath.Glob(filepath.Join(mine, "p=*"))
	if err != nil || len(kv) == 0 {
		t.Fatalf("no key=value directories in %s: %v", mine, err)
	}
	stray := filepath.Join(kv[0], "part-00099.parquet")
	os.WriteFile(stray, []byte("PAR1"), 0o644)
	os.Chtimes(stray, old, old)
	if res, err := c.DeleteOrphans(catalog.OrphanOptions{}); err != nil || !slices.Equal(res.Deleted, []string{stray}) {
		t.Fatalf("orphan in a --dir rewrite's partition directory: %+v %v", res, err)
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT count(*) FROM t"); got != "30" {
		t.Fatalf("after the optimize and cleanup: %s rows", got)
	}

	// The first write's files, retired and expired, go with every
	// directory they were in.
	alterTable(t, c, "t", "set", "option", "delete_mode", "=", catalog.CopyOnWrite)
	mustWrite(t, e, "DELETE FROM t WHERE true")
	if _, err := c.Expire(time.Now(), catalog.ExpireOptions{MinRetention: -1}); err != nil {
		t.Fatal(err)
	}
	cres, err := c.Cleanup(catalog.CleanupOptions{Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(firstDir); !errors.Is(err, fs.ErrNotExist) {
		entries, _ := os.ReadDir(firstDir)
		t.Fatalf("cleanup left %s: %v (%+v)", firstDir, entries, cres)
	}
	noLeaseLeft(t, root)
}

// latestTable is the table of that name at the catalog's latest snapshot.
func latestTable(t *testing.T, c *catalog.Catalog, name string) catalog.Table {
	t.Helper()
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, err := r.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}
