package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
)

// asCLI, set in the environment, makes the test binary run as rocklake
// itself: tests that send signals run the CLI as a process of its own
// without building a second binary.
const asCLI = "ROCKLAKE_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		main()
		os.Exit(0)
	}
	// Main stops the PostgreSQL server the tests of catalogs in a
	// database start.
	os.Exit(pgtest.Main(m))
}

// cli starts the CLI as a process.
func cli(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asCLI+"=1")
	return cmd
}

// writeWide writes n files of rows rows each (id, v, d) into dir; d holds
// signed zeros and NaNs, so a rewrite that loses a bit shows.
func writeWide(t *testing.T, dir string, n, rows int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f := range n {
		ids, vs, ds := make([]*types.Value, rows), make([]*types.Value, rows), make([]*types.Value, rows)
		for i := range ids {
			id := types.IntValue(int64((i*7919 + f*104729) % 1_000_003))
			v := types.StringValue(fmt.Sprintf("value-%d-%d", f, i%977))
			d := types.FloatValue([]float64{-0.0, 0, negNaN(), float64(i) / 3}[i%4])
			ids[i], vs[i], ds[i] = &id, &v, &d
		}
		err := pqwrite.Write(filepath.Join(dir, fmt.Sprintf("w%d.parquet", f)), []pqwrite.Column{
			{Name: "id", Type: types.MustParseType("int64"), Values: ids},
			{Name: "v", Type: types.MustParseType("varchar"), Values: vs},
			{Name: "d", Type: types.MustParseType("float64"), Values: ds}}, pqwrite.Options{RowGroupRows: 8192})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// registered is every location a data-file row of any table names at any
// snapshot of the catalog in dir, and the snapshot ids.
func registered(t *testing.T, dir string) (map[string]bool, []int64) {
	t.Helper()
	c, err := catalog.Open(dir, catalog.Options{})
	if err != nil {
		t.Fatalf("open after an interrupt: %v", err)
	}
	defer c.Close()
	snaps, err := c.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	var ids []int64
	for _, s := range snaps {
		ids = append(ids, s.ID)
		r, err := c.Read(s.ID)
		if err != nil {
			t.Fatalf("snapshot %d: %v", s.ID, err)
		}
		tables, err := r.Tables()
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			files, err := r.Files(tb.ID)
			if err != nil {
				t.Fatalf("snapshot %d, table %s: %v", s.ID, tb.Name, err)
			}
			for _, f := range files {
				out[f.Location(tb)] = true
			}
		}
		r.Close()
	}
	return out, ids
}

// unregistered lists the files under root that no snapshot registers, and
// the directories holding none that is registered.
func unregistered(t *testing.T, root string, known map[string]bool) []string {
	t.Helper()
	var out []string
	holds := map[string]bool{}
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist) && p == root:
			return filepath.SkipDir
		case err != nil:
			return err
		case d.IsDir():
			if p != root && filepath.Dir(p) != root {
				dirs = append(dirs, p)
			}
		case d.Name() == catalog.RewriteMarker:
		case known[p]:
			holds[filepath.Dir(p)] = true
		default:
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !holds[d] {
			out = append(out, d+string(filepath.Separator))
		}
	}
	return out
}

func negNaN() float64 { return -nan() }

func nan() float64 { var z float64; return z / z }

// SIGINT or SIGTERM at random points of optimize and compact (run as
// processes of their own): each run either completes or commits nothing,
// and leaves on disk nothing the catalog does not know; every snapshot
// stays readable and the table's content, float bits included, never
// changes.
func TestInterruptedRewritesLeaveNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the CLI 21 times")
	}
	cat := newCatalogDir(t)
	data := filepath.Join(t.TempDir(), "data")
	writeWide(t, data, 6, 40_000)
	mustRun(t, "--catalog", cat, "add", "t", data, "--create", "--no-auto-filters")
	const digest = "SELECT count(*), sum(hash(id)), sum(hash(v)), sum(hash(d::BIT)) FROM t"
	want := mustRun(t, "--catalog", cat, "--format", "csv", "query", digest)
	root := cat + ".files"

	// One whole run measures how long a rewrite takes here.
	start := time.Now()
	if out, err := cli("--catalog", cat, "optimize", "t", "--sort-by", "v", "--rows-per-file", "20000").CombinedOutput(); err != nil {
		t.Fatalf("optimize: %v\n%s", err, out)
	}
	whole := time.Since(start)
	r := rand.New(rand.NewPCG(14, 3))
	interrupted := 0
	for i := range 20 {
		args := []string{"--catalog", cat, "optimize", "t", "--sort-by", []string{"v", "id", "d", "id,v"}[r.IntN(4)],
			"--rows-per-file", fmt.Sprint(5000 + r.IntN(30000))}
		if r.IntN(3) == 0 {
			args = []string{"--catalog", cat, "compact", "t", "--rows-per-file", "1000000"}
		}
		sig := []os.Signal{os.Interrupt, syscall.SIGTERM}[r.IntN(2)]
		delay := time.Duration(r.Int64N(int64(whole)))
		cmd := cli(args...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(sig)
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee) && ee.ExitCode() == exitInterrupted:
			interrupted++
		case errors.As(err, &ee) && ee.ExitCode() == -1:
			// The signal came before the handler was installed.
			interrupted++
		default:
			t.Fatalf("run %d (%v, %s after %s): %v\n%s", i, args[2:], sig, delay, err, out.String())
		}
		known, snaps := registered(t, cat)
		if left := unregistered(t, root, known); len(left) > 0 {
			t.Fatalf("run %d (%v, %s after %s) left files no snapshot registers: %v\n%s", i, args[2:], sig, delay, left, out.String())
		}
		for _, s := range snaps[1:] {
			if _, err := run(t, "--catalog", cat, "--format", "csv", "query", "--snapshot", fmt.Sprint(s), "SELECT count(*) FROM t"); err != nil {
				t.Fatalf("run %d: snapshot %d unreadable: %v", i, s, err)
			}
		}
		if got := mustRun(t, "--catalog", cat, "--format", "csv", "query", digest); got != want {
			t.Fatalf("run %d (%v, %s after %s) changed the table:\n%s\nwant\n%s", i, args[2:], sig, delay, got, want)
		}
	}
	if interrupted < 5 {
		t.Fatalf("only %d of 20 runs were interrupted (a whole rewrite took %s)", interrupted, whole)
	}
	t.Logf("%d of 20 runs interrupted; a whole rewrite took %s", interrupted, whole)
}

// Files a killed rewrite left behind are orphans: cleanup --orphans deletes
// them once older than the grace period, with the directory they leave
// empty, and never a registered file, a file of another name, or anything
// outside rocklake's rewrite directories.
func TestCleanupOrphans(t *testing.T) {
	cat := newCatalogDir(t)
	data := filepath.Join(t.TempDir(), "data")
	writeEvents(t, data, 2)
	mustRun(t, "--catalog", cat, "add", "ev", data, "--create")
	out := mustRun(t, "--catalog", cat, "optimize", "ev", "--sort-by", "user_id")
	live := filepath.Join(cat+".files", "table-1", "optimize-1")
	if !strings.Contains(out, " in "+live+", snapshot 2") {
		t.Fatalf("optimize: %q", out)
	}
	// What a rewrite killed before its commit leaves: a marked directory
	// with part files, one beside the live rewrite's files too, and one
	// at a --dir of the user's choosing.
	killed := filepath.Join(cat+".files", "table-1", "optimize-2")
	userDir := filepath.Join(t.TempDir(), "mine")
	for _, d := range []string{killed, userDir} {
		l, err := catalog.MakeRewriteDir(d, cat+".files")
		if err != nil {
			t.Fatal(err)
		}
		// Gone with its writer, as a killed rewrite's lease is once
		// expired or its process found dead.
		l.Release()
	}
	src, err := os.ReadFile(filepath.Join(live, "part-00000.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	orphans := []string{filepath.Join(killed, "part-00000.parquet"), filepath.Join(killed, "part-00001.parquet"),
		filepath.Join(live, "part-00007.parquet")}
	keep := []string{filepath.Join(killed, "notes.txt"), filepath.Join(data, "part-00009.parquet"), filepath.Join(userDir, "part-00000.parquet")}
	old := time.Now().Add(-2 * time.Hour)
	for _, p := range append(append([]string{}, orphans...), keep...) {
		if err := os.WriteFile(p, src, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	// Not deleted: a file of another name in a rewrite directory, a file
	// in the user's directory, and one in a marked directory that holds
	// no file the catalog knows (a --dir of a rewrite killed before its
	// commit: nothing records where it was). Nor, within the grace
	// period, a fresh orphan.
	fresh := filepath.Join(killed, "part-00002.parquet")
	if err := os.WriteFile(fresh, src, 0o644); err != nil {
		t.Fatal(err)
	}

	out = mustRun(t, "--catalog", cat, "cleanup", "--orphans", "--dry-run")
	for _, p := range orphans {
		if !strings.Contains(out, "would delete orphan "+p+" ") {
			t.Errorf("dry run does not name orphan %s:\n%s", p, out)
		}
	}
	if !strings.Contains(out, "waiting orphan "+fresh+" ") || !strings.Contains(out, "would delete 3 orphaned files; 1 waiting for the 1h0m0s grace period") {
		t.Errorf("dry run:\n%s", out)
	}
	for _, p := range orphans {
		if !fileExists(p) {
			t.Fatalf("a dry run deleted %s", p)
		}
	}
	out = mustRun(t, "--catalog", cat, "cleanup", "--orphans")
	if !strings.Contains(out, "deleted 3 orphaned files; 1 waiting") {
		t.Fatalf("cleanup --orphans: %q", out)
	}
	for _, p := range orphans {
		if fileExists(p) {
			t.Errorf("orphan %s is left", p)
		}
	}
	for _, p := range append(keep, fresh, filepath.Join(live, "part-00000.parquet")) {
		if !fileExists(p) {
			t.Errorf("cleanup --orphans deleted %s", p)
		}
	}
	// With no grace the fresh one goes too; the directory keeps the
	// user's note, so it stays.
	out = mustRun(t, "--catalog", cat, "cleanup", "--orphans", "--grace", "0s")
	if !strings.Contains(out, "deleted orphan "+fresh) || fileExists(fresh) || !fileExists(killed) {
		t.Fatalf("cleanup --orphans --grace 0s: %q", out)
	}
	os.Remove(filepath.Join(killed, "notes.txt"))
	out = mustRun(t, "--catalog", cat, "cleanup", "--orphans", "--grace", "0s")
	if fileExists(killed) || !strings.Contains(out, "removed empty directory "+killed) {
		t.Fatalf("the emptied directory of the killed rewrite is left: %q", out)
	}
	if q := mustRun(t, "--catalog", cat, "--format", "csv", "query", "SELECT count(*) FROM ev"); !strings.Contains(q, "60") {
		t.Fatalf("query after cleanup --orphans: %q", q)
	}
	// A running write's directory (a live lease, this process's) is left
	// whole however old its files, and said to be in use; once the write
	// ends, its files are orphans.
	running := filepath.Join(cat+".files", "table-1", "insert-9")
	l, err := catalog.MakeRewriteDir(running, cat+".files")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	staged := filepath.Join(running, "part-00000.parquet")
	os.WriteFile(staged, src, 0o644)
	os.Chtimes(staged, old, old)
	out = mustRun(t, "--catalog", cat, "cleanup", "--orphans", "--grace", "0s")
	if !fileExists(staged) || !strings.Contains(out, "in use "+running+" ") || !strings.Contains(out, "; 1 directory in use") {
		t.Fatalf("cleanup --orphans beside a running write: %q", out)
	}
	l.Release()
	out = mustRun(t, "--catalog", cat, "cleanup", "--orphans", "--grace", "0s")
	if fileExists(staged) || fileExists(running) || !strings.Contains(out, "; 0 directories in use") {
		t.Fatalf("cleanup --orphans after the write ended: %q", out)
	}
}

// Table names are not paths: a table named ../../../evil or a/b is
// rewritten under the catalog's rewrite root, in a directory named by its
// id, and nothing is written anywhere else.
func TestRewriteDirsIgnoreTableNames(t *testing.T) {
	base := t.TempDir()
	cat := filepath.Join(base, "lake")
	mustRun(t, "--catalog", cat, "init")
	data := filepath.Join(base, "deep", "er", "data")
	writeEvents(t, data, 2)
	dirOf := regexp.MustCompile(` in (` + regexp.QuoteMeta(cat+".files"+string(filepath.Separator)) + `table-[0-9]+)` +
		regexp.QuoteMeta(string(filepath.Separator)) + `(optimize|compact)-[0-9]+, snapshot`)
	seen := map[string]string{}
	for _, name := range []string{"../../../evil", "a/b", "..", `c:\x`} {
		mustRun(t, "--catalog", cat, "add", name, data, "--create")
		for _, args := range [][]string{{"optimize", name, "--sort-by", "v", "--rows-per-file", "20"}, {"compact", name, "--rows-per-file", "1000"}} {
			out := mustRun(t, append([]string{"--catalog", cat}, args...)...)
			m := dirOf.FindStringSubmatch(out)
			if m == nil || seen[m[1]] != "" && seen[m[1]] != name {
				t.Fatalf("%v: %q (directories so far %v)", args, out, seen)
			}
			seen[m[1]] = name
		}
	}
	// Beside the catalog: the catalog, its rewrite root, and the data.
	if got := listDir(t, base); strings.Join(got, " ") != "deep lake lake.files" {
		t.Fatalf("%s holds %v", base, got)
	}
	if got := listDir(t, data); strings.Join(got, " ") != "part0.parquet part1.parquet" {
		t.Fatalf("%s holds %v", data, got)
	}
}
