package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/types"
)

// writeInts writes a one-column BIGINT file of n rows.
func writeInts(t *testing.T, p, col string, n int) string {
	t.Helper()
	vals := make([]*types.Value, n)
	for i := range vals {
		v := types.IntValue(int64(i))
		vals[i] = &v
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := pqwrite.Write(p, []pqwrite.Column{{Name: col, Type: types.MustParseType("int64"), Values: vals}}, pqwrite.Options{}); err != nil {
		t.Fatal(err)
	}
	return p
}

// realDir is a fresh temporary directory with its own links resolved, so
// that expected paths compare equal to resolved ones.
func realDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func snapshotCount(t *testing.T, c *catalog.Catalog) int {
	t.Helper()
	s, err := c.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	return len(s)
}

func liveFiles(t *testing.T, c *catalog.Catalog, table string) []catalog.DataFile {
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
	fs, err := r.Files(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// DuckDB 1.5 folds the case of ASCII letters only when it binds a name
// (checked against the DuckDB linked here: `SELECT "ÜNï"` binds a column
// `Ünï`, `SELECT "ÜNÏ"` and `SELECT ß` do not; union_by_name keeps `Ünï` and
// `ÜNÏ` apart).
func TestNamesFoldLikeDuckDB(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"Name", "NAME", true},
		{"ÜNï", "Ünï", true},
		{"ÜNÏ", "Ünï", false},
		{"ü", "Ü", false},
		{"ß", "SS", false},
		{"\u212a", "k", false}, // KELVIN SIGN, which Unicode folds to k
		{"ǅ", "ǆ", false},
		{"a_1", "A_1", true},
	} {
		if got := types.SameIdent(tc.a, tc.b); got != tc.same {
			t.Errorf("types.SameIdent(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
		if got := types.FoldIdent(tc.a) == types.FoldIdent(tc.b); got != tc.same {
			t.Errorf("types.FoldIdent(%q) == types.FoldIdent(%q) is %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

func TestNonASCIICaseIsAnotherColumn(t *testing.T) {
	dir := realDir(t)
	c := memCatalog(t)
	if _, err := Add(c, "t", []string{writeInts(t, filepath.Join(dir, "a.parquet"), "Ünï", 10)}, Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	n := snapshotCount(t, c)
	bad := writeInts(t, filepath.Join(dir, "b.parquet"), "ÜNÏ", 10)
	_, err := Add(c, "t", []string{bad}, Options{})
	if !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), `no column "Ünï"`) ||
		!strings.Contains(err.Error(), `its column "ÜNÏ"`) || !strings.Contains(err.Error(), "b.parquet") {
		t.Fatalf("a file whose column differs in non-ASCII case: %v", err)
	}
	if snapshotCount(t, c) != n {
		t.Fatal("a refused add committed a snapshot")
	}
	// ASCII case is DuckDB's to ignore: the same column.
	if _, err := Add(c, "t", []string{writeInts(t, filepath.Join(dir, "c.parquet"), "ÜNï", 10)}, Options{}); err != nil {
		t.Fatalf("a file whose column differs in ASCII case only: %v", err)
	}
	// Filter columns are named the same way.
	if _, err := Add(c, "t", []string{writeInts(t, filepath.Join(dir, "d.parquet"), "Ünï", 10)}, Options{FilterColumns: []string{"ünï"}}); !errors.Is(err, catalog.ErrNoSuchColumn) {
		t.Fatalf("--filter-columns ünï for a column Ünï: %v", err)
	}
}

// Two columns DuckDB tells apart, which a table cannot hold both of, are
// refused with a message naming them (the catalog's own duplicate check
// folds Unicode case).
func TestCreateRefusesColumnsDifferingInNonASCIICase(t *testing.T) {
	dir := realDir(t)
	p := filepath.Join(dir, "two.parquet")
	i64 := types.MustParseType("int64")
	one := types.IntValue(1)
	if err := pqwrite.Write(p, []pqwrite.Column{{Name: "Ü", Type: i64, Values: []*types.Value{&one}}, {Name: "ü", Type: i64, Values: []*types.Value{&one}}}, pqwrite.Options{}); err != nil {
		t.Fatal(err)
	}
	c := memCatalog(t)
	_, err := Add(c, "t", []string{p}, Options{Create: true})
	if !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), `"Ü" and "ü"`) {
		t.Fatalf("a new table from columns Ü and ü: %v", err)
	}
	if snapshotCount(t, c) != 1 {
		t.Fatal("a refused add committed a snapshot")
	}
}

// Paths are resolved by the operating system: "lnk/../f" is the f beside
// lnk's target, not the f beside lnk.
func TestExpandPathsResolvesLikeTheOS(t *testing.T) {
	dir := realDir(t)
	here := writeInts(t, filepath.Join(dir, "data", "f.parquet"), "x", 3)
	there := writeInts(t, filepath.Join(dir, "other", "f.parquet"), "x", 5)
	if err := os.MkdirAll(filepath.Join(dir, "other", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "other", "sub"), filepath.Join(dir, "data", "lnk")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "data"), filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for arg, want := range map[string]string{
		"data/lnk/../f.parquet":          there,
		dir + "/data/lnk/../f.parquet":   there,
		"data/lnk/../f*.parquet":         there,
		dir + "/alias/lnk/../f*":         there,
		"alias/f.parquet":                here,
		"alias/./f.parquet":              here,
		"alias/lnk/../../data/f.parquet": here,
		"alias":                          here, // a directory given through a link is walked
		"alias/":                         here,
		filepath.Join("data", "..", "alias", "f.parquet"): here,
	} {
		got, err := ExpandPaths([]string{arg})
		if err != nil || len(got) != 1 || got[0] != want {
			t.Errorf("ExpandPaths(%q) = %v, %v; want [%s]", arg, got, err, want)
		}
	}
	// No directory lists "..", so ".." after a pattern matches nothing
	// (rather than being cleaned away).
	if got, err := ExpandPaths([]string{"data/l?k/../f.parquet"}); err == nil || !strings.Contains(err.Error(), "no file matches") {
		t.Errorf(`ExpandPaths("data/l?k/../f.parquet") = %v, %v; want no match`, got, err)
	}
	// What the OS opens is what is registered.
	c := memCatalog(t)
	res, err := Add(c, "t", []string{"data/lnk/../f.parquet"}, Options{Create: true})
	if err != nil || res.Rows != 5 {
		t.Fatalf("add data/lnk/../f.parquet: %+v %v", res, err)
	}
	if fs := liveFiles(t, c, "t"); len(fs) != 1 || fs[0].Path != there {
		t.Fatalf("registered %+v, want %s", fs, there)
	}
}

func TestSameFileTwiceInOneAdd(t *testing.T) {
	dir := realDir(t)
	f := writeInts(t, filepath.Join(dir, "data", "f.parquet"), "x", 3)
	if err := os.Symlink(filepath.Join(dir, "data"), filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.parquet")
	if err := os.Link(f, hard); err != nil {
		t.Fatal(err)
	}
	c := memCatalog(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{f, filepath.Join(dir, "alias", "f.parquet")}, "named twice"},
		{[]string{filepath.Join(dir, "data"), filepath.Join(dir, "alias")}, "named twice"},
		{[]string{f, hard}, "are the same file"},
		{[]string{dir + "/data/../data/f.parquet", filepath.Join(dir, "*.parquet")}, "are the same file"},
	} {
		_, err := Add(c, "t", tc.args, Options{Create: true})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), f) {
			t.Errorf("add %v: want %q naming %s, got %v", tc.args, tc.want, f, err)
		}
	}
	if snapshotCount(t, c) != 1 {
		t.Fatal("a refused add committed a snapshot")
	}
}

func TestSameFileAlreadyRegistered(t *testing.T) {
	dir := realDir(t)
	f := writeInts(t, filepath.Join(dir, "data", "f.parquet"), "x", 3)
	if err := os.Symlink(filepath.Join(dir, "data"), filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.parquet")
	if err := os.Link(f, hard); err != nil {
		t.Fatal(err)
	}
	c := memCatalog(t)
	if _, err := Add(c, "t", []string{f}, Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	n := snapshotCount(t, c)
	alias := filepath.Join(dir, "alias", "f.parquet")
	if _, err := Add(c, "t", []string{alias}, Options{}); !errors.Is(err, catalog.ErrDuplicate) || !strings.Contains(err.Error(), f) ||
		!strings.Contains(err.Error(), `given as "`+alias+`"`) {
		t.Fatalf("the registered file through a link: %v", err)
	}
	_, err := Add(c, "t", []string{hard}, Options{})
	if !errors.Is(err, catalog.ErrDuplicate) || !strings.Contains(err.Error(), "registered as "+f) || !strings.Contains(err.Error(), hard) {
		t.Fatalf("the registered file through a hard link: %v", err)
	}
	if snapshotCount(t, c) != n {
		t.Fatal("a refused add committed a snapshot")
	}
	// Another table may hold the same file.
	if _, err := Add(c, "u", []string{hard}, Options{Create: true}); err != nil {
		t.Fatalf("the same file in another table: %v", err)
	}
	// Once the registered file is retired, its other name may come back.
	old := liveFiles(t, c, "t")
	if _, err := Add(c, "t", []string{hard}, Options{Replace: []int64{old[0].ID}}); err != nil {
		t.Fatalf("replacing a file by its hard link: %v", err)
	}
	if fs := liveFiles(t, c, "t"); len(fs) != 1 || fs[0].Path != hard || !fs[0].Identity.Known() {
		t.Fatalf("after the replace: %+v", fs)
	}
	if _, err := Add(c, "t", []string{f}, Options{}); !errors.Is(err, catalog.ErrDuplicate) {
		t.Fatalf("the first name again, after its hard link replaced it: %v", err)
	}
	// A registered file moved away no longer reaches its entry: a file
	// that now has its device and inode (as a deleted file's inode can be
	// reused) is not taken for it, nor for the retired first name once
	// that is gone too.
	moved := filepath.Join(dir, "moved.parquet")
	if err := os.Rename(hard, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	if _, err := Add(c, "t", []string{moved}, Options{}); err != nil {
		t.Fatalf("a file whose inode the registered path no longer reaches: %v", err)
	}
}

// Named pipes, sockets, devices and directories given as files are refused
// before anything opens them. A regression would block in open(2); the
// deadline turns that into a failure instead of a hung test.
func TestNonRegularFilesAreRefused(t *testing.T) {
	dir := realDir(t)
	good := writeInts(t, filepath.Join(dir, "data", "good.parquet"), "x", 3)
	fifo := filepath.Join(dir, "data", "pipe.parquet")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	sock := filepath.Join(dir, "s", "sock.parquet")
	_ = os.MkdirAll(filepath.Dir(sock), 0o755)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.MkdirAll(filepath.Join(dir, "g", "spark.parquet"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeInts(t, filepath.Join(dir, "g", "spark.parquet", "part-0.parquet"), "x", 3)
	linkToFifo := filepath.Join(dir, "l", "link.parquet")
	_ = os.MkdirAll(filepath.Dir(linkToFifo), 0o755)
	if err := os.Symlink(fifo, linkToFifo); err != nil {
		t.Fatal(err)
	}
	c := memCatalog(t)
	if _, err := Add(c, "t", []string{good}, Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	n := snapshotCount(t, c)
	for _, tc := range []struct {
		name string
		args []string
		path string // the path the error must name
		what string
	}{
		{"fifo", []string{fifo}, fifo, "named pipe"},
		{"fifo by glob", []string{filepath.Join(dir, "data", "p*.parquet")}, fifo, "named pipe"},
		{"fifo in a directory", []string{filepath.Join(dir, "data")}, fifo, "named pipe"},
		{"link to a fifo", []string{linkToFifo}, linkToFifo, "named pipe"},
		{"link to a fifo in a directory", []string{filepath.Join(dir, "l")}, fifo, "named pipe"},
		{"socket", []string{sock}, sock, "socket"},
		{"socket in a directory", []string{filepath.Join(dir, "s")}, sock, "socket"},
		{"device", []string{"/dev/null"}, "/dev/null", "character device"},
		{"directory by glob", []string{filepath.Join(dir, "g", "*.parquet")}, filepath.Join(dir, "g", "spark.parquet"), "directory"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		done := make(chan error, 1)
		go func() {
			_, err := Add(c, "t", tc.args, Options{})
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, pqmeta.ErrNotRegular) || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.what) {
				t.Errorf("%s: want %v naming %s (%s), got %v", tc.name, pqmeta.ErrNotRegular, tc.path, tc.what, err)
			}
		case <-ctx.Done():
			t.Errorf("%s: add %v still running after 10s (blocked opening a non-regular file?)", tc.name, tc.args)
		}
		cancel()
	}
	if snapshotCount(t, c) != n {
		t.Fatal("a refused add committed a snapshot")
	}
	// A directory given on its own is walked: the Spark-style directory
	// named *.parquet holds a file.
	if res, err := Add(c, "t", []string{filepath.Join(dir, "g")}, Options{}); err != nil || res.Files != 1 {
		t.Fatalf("add of a directory holding a directory named *.parquet: %+v %v", res, err)
	}
}

// A directory's walk registers each file by its resolved path, which it
// takes without resolving again where no link leads to the file: over
// random trees of directories, files, links to files elsewhere (absolute,
// relative, through another link) and links to directories (not walked),
// reached through a linked alias, the paths listed are exactly the
// resolutions of the .parquet entries a walk meets, each its own
// resolution.
func TestWalkedPathsAreResolved(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for round := range 8 {
		dir := realDir(t)
		tree, outside := filepath.Join(dir, "tree"), filepath.Join(dir, "outside")
		var targets []string
		for i := range 4 {
			targets = append(targets, writeInts(t, filepath.Join(outside, fmt.Sprintf("sub%d", i%2), fmt.Sprintf("o%d.parquet", i)), "x", 2))
		}
		hop := filepath.Join(outside, "hop.parquet") // a link to a link
		if err := os.Symlink(targets[0], hop); err != nil {
			t.Fatal(err)
		}
		dirs := []string{tree}
		for i := range 12 {
			parent := dirs[r.IntN(len(dirs))]
			name := filepath.Join(parent, fmt.Sprintf("e%d", i))
			var err error
			switch r.IntN(5) {
			case 0:
				err = os.MkdirAll(name, 0o755)
				dirs = append(dirs, name)
			case 1, 2:
				writeInts(t, name+".parquet", "x", 1+r.IntN(3))
			case 3: // a link to a file outside, absolute or relative
				target := targets[r.IntN(len(targets))]
				if r.IntN(2) == 0 {
					if target, err = filepath.Rel(parent, target); err != nil {
						t.Fatal(err)
					}
				}
				err = os.MkdirAll(parent, 0o755)
				if err == nil {
					err = os.Symlink(target, name+".parquet")
				}
			case 4: // a link to a directory, which a walk does not follow
				err = os.MkdirAll(parent, 0o755)
				if err == nil {
					err = os.Symlink(filepath.Join(outside, "sub1"), name)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		writeInts(t, filepath.Join(tree, "last.parquet"), "x", 1)
		if r.IntN(2) == 0 {
			if err := os.Symlink(hop, filepath.Join(tree, "hop.parquet")); err != nil {
				t.Fatal(err)
			}
		}
		alias := filepath.Join(dir, "alias")
		if err := os.Symlink(tree, alias); err != nil {
			t.Fatal(err)
		}
		var want []string
		err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
				return err
			}
			real, err := filepath.EvalSymlinks(p)
			want = append(want, real)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		got, err := ExpandPaths([]string{alias})
		if dup := len(slices.Compact(slices.Clone(want))) != len(want); dup {
			if err == nil || !strings.Contains(err.Error(), "named twice") {
				t.Fatalf("round %d: a file reached twice: %v, %v", round, got, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: listed %v, want %v", round, got, want)
		}
		for _, p := range got {
			if real, err := filepath.EvalSymlinks(p); err != nil || real != p {
				t.Fatalf("round %d: %s listed, which resolves to %s (%v)", round, p, real, err)
			}
		}
	}
}
