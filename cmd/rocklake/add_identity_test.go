package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/engine"
)

// identFixture is a catalog and a data directory (links resolved, so paths
// compare equal to the ones add registers), with DuckDB to write files.
type identFixture struct {
	t    *testing.T
	cat  string
	dir  string
	duck *sql.DB
}

func newIdentFixture(t *testing.T) *identFixture {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &identFixture{t: t, cat: newCatalogDir(t), dir: dir, duck: db}
}

// write has DuckDB write a query's rows to dir/name.
func (f *identFixture) write(name, query string) string {
	f.t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.duck.Exec(fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet)", query, strings.ReplaceAll(p, "'", "''"))); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *identFixture) snapshots() string {
	f.t.Helper()
	return mustRun(f.t, "--catalog", f.cat, "--format", "json", "snapshots")
}

// query is a query's rows as CSV, header dropped.
func (f *identFixture) query(q string) string {
	f.t.Helper()
	out := mustRun(f.t, "--catalog", f.cat, "--format", "csv", "query", q)
	_, rows, _ := strings.Cut(out, "\n")
	return strings.TrimSpace(rows)
}

// refused runs an add that must fail within a deadline (a regression that
// opens a named pipe blocks for ever; this turns it into a failure), with
// an error holding every one of want, and leave the catalog unchanged.
func (f *identFixture) refused(args []string, want ...string) {
	f.t.Helper()
	before := f.snapshots()
	done := make(chan error, 1)
	go func() {
		_, err := run(f.t, append([]string{"--catalog", f.cat, "add"}, args...)...)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			f.t.Fatalf("add %v: accepted, want an error", args)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				f.t.Fatalf("add %v: error %q does not say %q", args, err, w)
			}
		}
	case <-time.After(20 * time.Second):
		f.t.Fatalf("add %v: still running after 20s (blocked opening a file?)", args)
	}
	if after := f.snapshots(); after != before {
		f.t.Fatalf("add %v: refused, but the catalog changed:\n%s\n%s", args, before, after)
	}
}

// registered is the table's live file paths.
func (f *identFixture) registered(table, column string) []string {
	f.t.Helper()
	var so rocklake.TableStats
	out := mustRun(f.t, "--catalog", f.cat, "--format", "json", "stats", table, "--column", column)
	if err := json.Unmarshal([]byte(out), &so); err != nil {
		f.t.Fatal(err)
	}
	var paths []string
	for _, fs := range so.FileStats {
		paths = append(paths, fs.Path)
	}
	return paths
}

// A file column that differs from the table's only in the case of
// non-ASCII letters is another column to DuckDB, which would read the
// table's column as NULL there: the file is refused, naming both.
func TestAddNamesMatchAsInDuckDB(t *testing.T) {
	f := newIdentFixture(t)
	a := f.write("a.parquet", `SELECT range AS "Ünï" FROM range(10)`)
	b := f.write("b.parquet", `SELECT range + 100 AS "ÜNÏ" FROM range(5)`)
	c := f.write("c.parquet", `SELECT range AS "ÜNï" FROM range(4)`)
	mustRun(t, "--catalog", f.cat, "add", "t", a, "--create")
	f.refused([]string{"t", b}, "b.parquet", `no column "Ünï"`, `"ÜNÏ"`, "non-ASCII")
	f.refused([]string{"t", c, b}, "b.parquet", `"ÜNÏ"`, "no file was added")
	// ASCII case is DuckDB's to ignore.
	mustRun(t, "--catalog", f.cat, "add", "t", c)
	if got := f.query(`SELECT count("Ünï"), count(*), count(*) FILTER (WHERE "Ünï" IS NULL), sum("ÜNï") FROM t`); got != "14,14,0,51" {
		t.Fatalf(`count("Ünï"), count(*), NULLs, sum: got %q, want 14,14,0,51`, got)
	}
	if got := f.query(`SELECT count(*) FROM t WHERE "Ünï" IS NULL`); got != "0" {
		t.Fatalf(`count(*) WHERE "Ünï" IS NULL: %q`, got)
	}
	// Columns DuckDB reads as two, which a table cannot hold both of.
	two := f.write("two.parquet", `SELECT 1 AS "Ü", 2 AS "ü"`)
	f.refused([]string{"u", two, "--create"}, "two.parquet", `"Ü" and "ü"`, "non-ASCII")
}

// The same file under another name — a symbolic link to its directory, a
// hard link — is refused, in one add and against the table; "lnk/.."
// reaches what the operating system reaches.
func TestAddSameFileUnderAnotherName(t *testing.T) {
	f := newIdentFixture(t)
	t.Chdir(f.dir)
	data := f.write("data/f.parquet", "SELECT range AS x FROM range(3)")
	f.write("data/g.parquet", "SELECT range AS x FROM range(1000, 1007)")
	other := f.write("other/g.parquet", "SELECT range AS x FROM range(50)")
	if err := os.MkdirAll("other/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{"alias": "data", "data/lnk": filepath.Join(f.dir, "other", "sub")} {
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(data, "hard.parquet"); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(f.dir, "hard.parquet")

	mustRun(t, "--catalog", f.cat, "add", "t", "data/f.parquet", "--create")
	f.refused([]string{"t", "alias/f.parquet"}, data, "already exists", `given as "alias/f.parquet"`)
	f.refused([]string{"t", "hard.parquet"}, hard, "already exists", "registered as "+data, "same file")
	f.refused([]string{"u", "data/f.parquet", "alias/f.parquet", "--create"}, data, "named twice")
	f.refused([]string{"u", "data/f.parquet", "hard.parquet", "--create"}, data, hard, "same file")
	f.refused([]string{"u", "data", "alias", "--create"}, "named twice")
	if got := f.query("SELECT count(*), sum(x) FROM t"); got != "3,3" {
		t.Fatalf("count, sum after refused adds: %q", got)
	}

	// data/lnk/../g.parquet is other/g.parquet to the OS (lnk is
	// other/sub); cleaned as text it would be data/g.parquet.
	mustRun(t, "--catalog", f.cat, "add", "t", "data/lnk/../g.parquet")
	if got := f.registered("t", "x"); len(got) != 2 || got[0] != data || got[1] != other {
		t.Fatalf("registered %v, want [%s %s]", got, data, other)
	}
	if got := f.query("SELECT count(*), sum(x) FROM t"); got != "53,1228" {
		t.Fatalf("count, sum: %q, want the rows of data/f and other/g: 53,1228", got)
	}
	f.refused([]string{"t", "other/g.parquet"}, other, "already exists")
}

// Named pipes, sockets, devices, and directories where a file is
// expected are refused before anything opens them.
func TestAddRefusesNonRegularFiles(t *testing.T) {
	f := newIdentFixture(t)
	good := f.write("data/good.parquet", "SELECT range AS x FROM range(3)")
	mustRun(t, "--catalog", f.cat, "add", "t", good, "--create")
	fifo := filepath.Join(f.dir, "data", "pipe.parquet")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// A writer that never comes: if add opened the pipe, it would block.
	sockDir := filepath.Join(f.dir, "s")
	_ = os.MkdirAll(sockDir, 0o755)
	sock := filepath.Join(sockDir, "sock.parquet")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f.write("spark/out.parquet/part-0.parquet", "SELECT range AS x FROM range(4)")
	spark := filepath.Join(f.dir, "spark", "out.parquet")

	f.refused([]string{"t", fifo}, fifo, "not a regular file", "named pipe")
	f.refused([]string{"t", filepath.Join(f.dir, "data", "*.parquet")}, fifo, "named pipe")
	f.refused([]string{"t", filepath.Join(f.dir, "data")}, fifo, "named pipe")
	f.refused([]string{"t", sock}, sock, "socket")
	f.refused([]string{"t", sockDir}, sock, "socket")
	f.refused([]string{"t", "/dev/null"}, "/dev/null", "character device")
	f.refused([]string{"t", filepath.Join(f.dir, "spark", "*.parquet")}, spark, "a directory", "name a directory on its own")
	// The directory given on its own is searched.
	if out := mustRun(t, "--catalog", f.cat, "add", "t", filepath.Join(f.dir, "spark")); !strings.Contains(out, "added 1 file, 4 rows") {
		t.Fatalf("add of a directory holding out.parquet/: %q", out)
	}
	if got := f.query("SELECT count(*) FROM t"); got != "7" {
		t.Fatalf("count(*): %q", got)
	}
}

func TestAddHelpSaysWhatIsRegistered(t *testing.T) {
	out := mustRun(t, "add", "--help")
	for _, w := range []string{"resolved path is what is registered and what", "DuckDB opens", "hard links", "named pipe", "ASCII"} {
		if !strings.Contains(out, w) {
			t.Errorf("add --help does not say %q:\n%s", w, out)
		}
	}
}
