package maintain

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/testkit"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// fileLayout is, per live file of t in id order, its rows and its bounds
// of x and y: what a sort and a file size decide.
func fileLayout(t *testing.T, c *catalog.Catalog) string {
	t.Helper()
	rd, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	tb, err := rd.Table("t")
	if err != nil {
		t.Fatal(err)
	}
	files, err := rd.Files(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(files, func(a, b catalog.DataFile) int { return int(a.ID - b.ID) })
	codec, _ := types.CodecFor(types.MustParseType("int64"))
	bounds := map[string]map[int64]string{}
	for _, name := range []string{"x", "y"} {
		col, err := rd.Column(tb.ID, name)
		if err != nil {
			t.Fatal(err)
		}
		bounds[name] = map[int64]string{}
		err = rd.FileColumnStats(tb.ID, col.ID, func(id int64, st *stats.Column) error {
			lo, err1 := codec.Decode(st.Min.V)
			hi, err2 := codec.Decode(st.Max.V)
			if err := errors.Join(err1, err2); err != nil {
				return err
			}
			bounds[name][id] = fmt.Sprintf("%s..%s", codec.Format(lo), codec.Format(hi))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for _, f := range files {
		out = append(out, fmt.Sprintf("%d rows x %s y %s", f.RecordCount, bounds["x"][f.ID], bounds["y"][f.ID]))
	}
	return strings.Join(out, "\n")
}

func alterT(t *testing.T, c *catalog.Catalog, words string) {
	t.Helper()
	a, err := catalog.ParseAlteration(strings.Fields(words))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tx.AlterTable("t", a)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// Optimize without sort columns sorts by the table's declared sort key and
// curve, and sizes files by its write options: the files come out as an
// optimize given the same key and sizes explicitly writes them, over the
// same input. Without a declared key it is refused, committing nothing;
// explicit options win over the table's.
func TestOptimizeUsesDeclaredSortKeyAndOptions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	paths := testkit.TwoColumnFiles(t, dir)
	declared, _, de := lakeOf(t, paths)
	explicit, _, ee := lakeOf(t, paths)

	snaps, _ := declared.Snapshots()
	if _, err := Optimize(ctx, de, "t", OptimizeOptions{}); !errors.Is(err, ErrNoSortKey) {
		t.Fatalf("optimize of a table without a sort key: %v, want ErrNoSortKey", err)
	}
	if now, _ := declared.Snapshots(); len(now) != len(snaps) {
		t.Fatal("a refused optimize committed a snapshot")
	}

	alterT(t, declared, "set sorted by hilbert(x, y)")
	alterT(t, declared, "set option target_file_rows = 700")
	res, err := Optimize(ctx, de, "t", OptimizeOptions{Dir: filepath.Join(dir, "declared1")})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Optimize(ctx, ee, "t", OptimizeOptions{SortBy: []string{"x", "y"}, Curve: Hilbert, RowsPerFile: 700, Dir: filepath.Join(dir, "explicit1")})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesAfter != 58 || res.FilesAfter != want.FilesAfter || res.Rows != want.Rows {
		t.Fatalf("declared %+v, explicit %+v; want 58 files of 700 rows (40,000 rows)", res, want)
	}
	got, exp := fileLayout(t, declared), fileLayout(t, explicit)
	if got != exp {
		t.Fatalf("declared key and options:\n%s\nexplicit:\n%s", got, exp)
	}

	// A size in bytes wins over rows; a plain key sorts lexicographically.
	// Fresh tables, so that both read the same files (bytes per row decide
	// the cuts).
	declared, _, de = lakeOf(t, paths)
	explicit, _, ee = lakeOf(t, paths)
	alterT(t, declared, "set option target_file_rows = 700")
	alterT(t, declared, "set option target_file_size = 40kB")
	alterT(t, declared, "set sorted by y, x")
	res, err = Optimize(ctx, de, "t", OptimizeOptions{Dir: filepath.Join(dir, "declared2")})
	if err != nil {
		t.Fatal(err)
	}
	want, err = Optimize(ctx, ee, "t", OptimizeOptions{SortBy: []string{"y", "x"}, TargetFileSize: 40_000, Dir: filepath.Join(dir, "explicit2")})
	if err != nil {
		t.Fatal(err)
	}
	if got, exp := fileLayout(t, declared), fileLayout(t, explicit); got != exp || res.FilesAfter != want.FilesAfter || res.FilesAfter == 58 {
		t.Fatalf("declared %d files:\n%s\nexplicit %d files:\n%s", res.FilesAfter, got, want.FilesAfter, exp)
	}

	// Explicit columns and sizes win over the table's.
	res, err = Optimize(ctx, de, "t", OptimizeOptions{SortBy: []string{"x"}, RowsPerFile: 10_000, Dir: filepath.Join(dir, "declared3")})
	if err != nil {
		t.Fatal(err)
	}
	want, err = Optimize(ctx, ee, "t", OptimizeOptions{SortBy: []string{"x"}, RowsPerFile: 10_000, Dir: filepath.Join(dir, "explicit3")})
	if err != nil {
		t.Fatal(err)
	}
	if got, exp := fileLayout(t, declared), fileLayout(t, explicit); got != exp || res.FilesAfter != 4 {
		t.Fatalf("explicit over declared, %d files:\n%s\nwant:\n%s", res.FilesAfter, got, exp)
	}
}
