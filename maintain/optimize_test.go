package maintain

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/curve"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/internal/testkit"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/types"
	"github.com/rocklake/rocklake/types/typestest"
)

func TestOptimizeSortBy(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(9, 9))
	var paths []string
	const files, rows = 40, 250
	for f := range files {
		xs := make([]*types.Value, rows)
		ys := make([]*types.Value, rows)
		for i := range rows {
			x := types.IntValue(r.Int64N(10_000))
			y := types.StringValue(fmt.Sprint("k", r.IntN(7)))
			xs[i], ys[i] = &x, &y
			if r.IntN(50) == 0 {
				xs[i] = nil
			}
		}
		p := filepath.Join(dir, fmt.Sprintf("f%02d.parquet", f))
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: xs},
			{Name: "y", Type: types.MustParseType("varchar"), Values: ys}}, pqwrite.Options{RowGroupRows: 100}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	c, before, e := lakeOf(t, paths)
	ctx := context.Background()

	kept := func(snap int64, pred string) int { return keptFiles(t, c, snap, pred) }
	answer := func(snap int64, q string) string { return answerOf(t, e, snap, q) }
	queries := []string{
		"SELECT count(*), count(x), sum(x), min(x), max(x) FROM t",
		"SELECT count(*), sum(x) FROM t WHERE x >= 5000 AND x < 5100",
		"SELECT y, count(*), sum(x) FROM t WHERE x < 300 OR x IS NULL GROUP BY y ORDER BY y",
		"SELECT count(*) FROM t WHERE x = 4242",
	}
	old := map[string]string{}
	for _, q := range queries {
		old[q] = answer(before.Snapshot.ID, q)
	}
	pred := "x >= 5000 AND x < 5100"
	keptBefore := kept(before.Snapshot.ID, pred)

	// A column that does not exist: an error naming it, nothing written.
	snaps, _ := c.Snapshots()
	if _, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"nope"}}); !errors.Is(err, catalog.ErrNoSuchColumn) || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("bad sort column: %v", err)
	}
	if now, _ := c.Snapshots(); len(now) != len(snaps) {
		t.Fatal("a failed optimize committed a snapshot")
	}

	out := filepath.Join(dir, "sorted")
	res, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"X"}, RowsPerFile: rows, Dir: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesBefore != files || res.FilesAfter != files || res.Rows != files*rows {
		t.Fatalf("optimize result %+v", res)
	}
	keptAfter := kept(res.Snapshot.ID, pred)
	t.Logf("files kept for %s: %d before, %d after", pred, keptBefore, keptAfter)
	if keptAfter == 0 || keptBefore < 10*keptAfter {
		t.Fatalf("sorting by x should cut the files read by >= 10x: %d before, %d after", keptBefore, keptAfter)
	}
	for _, q := range queries {
		if got := answer(catalog.Latest, q); got != old[q] {
			t.Errorf("%s after optimize:\n got %s\nwant %s", q, got, old[q])
		}
		// Time travel still reads the old files.
		if got := answer(before.Snapshot.ID, q); got != old[q] {
			t.Errorf("%s at the old snapshot:\n got %s\nwant %s", q, got, old[q])
		}
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("optimize removed an old file: %v", err)
		}
	}
	// The output directory exists now: a second run into it is refused
	// and commits nothing.
	snaps, _ = c.Snapshots()
	if _, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"x"}, Dir: out}); err == nil {
		t.Fatal("optimize into an existing directory must fail")
	}
	if now, _ := c.Snapshots(); len(now) != len(snaps) {
		t.Fatal("a failed optimize committed a snapshot")
	}
}

func rowString(row []*string) string {
	parts := make([]string, len(row))
	for i, v := range row {
		parts[i] = "NULL"
		if v != nil {
			parts[i] = *v
		}
	}
	return strings.Join(parts, "|")
}

func TestMergeSmallFiles(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	write := func(name string, lo, n int) {
		vals := make([]*types.Value, n)
		for i := range vals {
			v := types.IntValue(int64(lo + i))
			vals[i] = &v
		}
		p := filepath.Join(dir, name)
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: vals}}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	for f := range 10 {
		write(fmt.Sprintf("small%02d.parquet", f), f*30, 30) // x in order across files
	}
	write("big.parquet", 1000, 500)
	c, before, e := lakeOf(t, paths)
	ctx := context.Background()
	q := "SELECT count(*), sum(x), min(x), max(x) FROM t WHERE x >= 10 AND x < 1200"
	want := answerOf(t, e, before.Snapshot.ID, q)

	res, err := MergeSmallFiles(ctx, e, "t", MergeOptions{RowsPerFile: 100, Dir: filepath.Join(dir, "merged")})
	if err != nil {
		t.Fatal(err)
	}
	if res == nil || res.FilesBefore != 10 || res.FilesAfter != 3 || res.Rows != 300 {
		t.Fatalf("compact: %+v", res)
	}
	rd, _ := c.Read(catalog.Latest)
	tb, _ := rd.Table("t")
	files, _ := rd.Files(tb.ID)
	rd.Close()
	if len(files) != 4 {
		t.Fatalf("after compact: %d live files, want 3 merged + big", len(files))
	}
	if got := answerOf(t, e, catalog.Latest, q); got != want {
		t.Fatalf("compact changed the answer: %s, want %s", got, want)
	}
	if got := answerOf(t, e, before.Snapshot.ID, q); got != want {
		t.Fatalf("time travel after compact: %s, want %s", got, want)
	}
	// Rows kept their order: the merged files hold x in [0,100), [100,200),
	// [200,300), so a range on x still reads one of them.
	if k := keptFiles(t, c, catalog.Latest, "x >= 120 AND x < 150"); k != 1 {
		t.Fatalf("plan after compact: %d files kept, want 1", k)
	}
	// Nothing small left: no snapshot.
	snaps, _ := c.Snapshots()
	if res, err := MergeSmallFiles(ctx, e, "t", MergeOptions{RowsPerFile: 100}); err != nil || res != nil {
		t.Fatalf("second compact: %+v %v", res, err)
	}
	if now, _ := c.Snapshots(); len(now) != len(snaps) {
		t.Fatal("a compact with nothing to do committed a snapshot")
	}
}

func answerOf(t *testing.T, e *engine.Engine, snap int64, q string) string {
	t.Helper()
	res, err := e.Query(context.Background(), q, engine.QueryOptions{Snapshot: snap})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []string
	for _, row := range res.Rows {
		out = append(out, rowString(row))
	}
	return strings.Join(out, "\n")
}

// A rewrite through DuckDB must keep every value of every type: the
// per-column content (an order-free hash sum), counts and bounds are
// compared between the old and the new snapshot.
func TestOptimizeKeepsEveryType(t *testing.T) {
	typs := []string{"boolean", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
		"float32", "float64", "decimal(4,2)", "decimal(18,3)", "decimal(38,10)", "date", "timestamp_ms",
		"timestamp", "timestamp_ns", "timestamptz", "varchar", "blob", "uuid"}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 5))
	var paths []string
	for f := range 5 {
		var cols []pqwrite.Column
		for i, typ := range typs {
			tt := types.MustParseType(typ)
			vals := make([]*types.Value, 60)
			for j := range vals {
				if r.IntN(10) > 0 {
					v := typestest.Random(r, tt)
					vals[j] = &v
				}
			}
			cols = append(cols, pqwrite.Column{Name: fmt.Sprintf("c%d", i), Type: tt, Values: vals})
		}
		p := filepath.Join(dir, fmt.Sprintf("f%d.parquet", f))
		if err := pqwrite.Write(p, cols, pqwrite.Options{RowGroupRows: 25}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	_, before, e := lakeOf(t, paths)
	res, err := Optimize(context.Background(), e, "t", OptimizeOptions{SortBy: []string{"c4", "c19"}, RowsPerFile: 70, Dir: filepath.Join(dir, "out")})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesAfter != 5 || res.Rows != 300 {
		t.Fatalf("optimize: %+v", res)
	}
	for i, typ := range typs {
		q := fmt.Sprintf("SELECT count(*), count(c%[1]d), min(c%[1]d)::VARCHAR, max(c%[1]d)::VARCHAR, sum(hash(c%[1]d)::HUGEINT) FROM t", i)
		old, now := answerOf(t, e, before.Snapshot.ID, q), answerOf(t, e, res.Snapshot.ID, q)
		if old != now {
			t.Errorf("%s (c%d) changed in the rewrite:\n before %s\n after  %s", typ, i, old, now)
		}
	}
	// The rewritten files are DuckDB's: pruning over their stats must
	// agree with a full scan, for literals at and between the values.
	ctx := context.Background()
	count := func(q string, o engine.QueryOptions) string {
		o.Snapshot = res.Snapshot.ID
		out, err := e.Query(ctx, q, o)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return rowString(out.Rows[0])
	}
	checks := 0
	for i, typ := range typs {
		vals, err := e.Query(ctx, fmt.Sprintf("SELECT DISTINCT c%[1]d::VARCHAR FROM t WHERE c%[1]d IS NOT NULL ORDER BY 1 LIMIT 6", i),
			engine.QueryOptions{Snapshot: res.Snapshot.ID, NoPruning: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range vals.Rows {
			if strings.ContainsRune(*row[0], 0) {
				continue // a NUL cannot be written in a SQL literal
			}
			lit := "'" + strings.ReplaceAll(*row[0], "'", "''") + "'"
			col := fmt.Sprintf("c%d", i)
			for _, pred := range []string{"C = V", "C < V", "C >= V", "C > V OR C IS NULL", "NOT (C <= V)"} {
				q := "SELECT count(*) FROM t WHERE " + strings.NewReplacer("C", col, "V", lit).Replace(pred)
				if got, want := count(q, engine.QueryOptions{}), count(q, engine.QueryOptions{NoPruning: true}); got != want {
					t.Errorf("%s (%s): pruned %s, full scan %s", q, typ, got, want)
				}
				checks++
			}
		}
	}
	t.Logf("%d pruned-vs-full-scan checks on the rewritten files", checks)
}

// lakeOf registers files as table t in a new in-memory catalog.
func lakeOf(t *testing.T, paths []string) (*catalog.Catalog, ingest.Result, *engine.Engine) {
	t.Helper()
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	res, err := ingest.Add(c, "t", paths, ingest.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return c, res, e
}

// keptFiles is how many files of t a predicate keeps at a snapshot.
func keptFiles(t *testing.T, c *catalog.Catalog, snap int64, pred string) int {
	t.Helper()
	rd, err := c.Read(snap)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	p, err := prune.PlanTable(rd, "t", pred, prune.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Files.Kept
}

// twoColumnLake is a table of 20 files whose rows have independent
// uniform x and y: every file spans both columns' whole ranges.
func twoColumnLake(t *testing.T) (string, *catalog.Catalog, ingest.Result, *engine.Engine) {
	t.Helper()
	dir := t.TempDir()
	paths := testkit.TwoColumnFiles(t, dir)
	c, res, e := lakeOf(t, paths)
	return dir, c, res, e
}

// A curve over (x, y) keeps files narrow in y too: a 1% range on y reads
// at least 3x fewer files than after a sort by x alone, while x stays
// prunable; answers never change.
func TestOptimizeCurve(t *testing.T) {
	dir, c, before, e := twoColumnLake(t)
	ctx := context.Background()
	queries := []string{
		"SELECT count(*), sum(x), sum(y), min(z), max(z) FROM t",
		"SELECT count(*), sum(x) FROM t WHERE y >= 5000 AND y < 5100",
		"SELECT count(*), sum(x) FROM t WHERE y >= 1234 AND y < 1334 AND z > 's5'",
		"SELECT count(*), sum(y) FROM t WHERE x >= 200 AND x < 300",
		"SELECT count(*) FROM t WHERE y IS NULL",
	}
	old := map[string]string{}
	for _, q := range queries {
		old[q] = answerOf(t, e, before.Snapshot.ID, q)
	}
	// Files kept, averaged over 25 windows of 1% of each column's range.
	r := rand.New(rand.NewPCG(1, 2))
	var lows []int64
	for range 25 {
		lows = append(lows, r.Int64N(9_900))
	}
	meanKept := func(snap int64, col string) float64 {
		n := 0
		for _, lo := range lows {
			n += keptFiles(t, c, snap, fmt.Sprintf("%s >= %d AND %s < %d", col, lo, col, lo+100))
		}
		return float64(n) / float64(len(lows))
	}
	run := func(name string, o OptimizeOptions) (float64, float64) {
		o.RowsPerFile, o.Dir = 625, filepath.Join(dir, name)
		res, err := Optimize(ctx, e, "t", o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.FilesAfter != 64 || res.Rows != 40_000 {
			t.Fatalf("%s: %+v", name, res)
		}
		for _, q := range queries {
			if got := answerOf(t, e, res.Snapshot.ID, q); got != old[q] {
				t.Errorf("%s: %s:\n got %s\nwant %s", name, q, got, old[q])
			}
		}
		y, x := meanKept(res.Snapshot.ID, "y"), meanKept(res.Snapshot.ID, "x")
		t.Logf("%-8s mean files kept of 64 for a 1%% range: %5.2f on y, %5.2f on x", name, y, x)
		return y, x
	}
	sortY, sortX := run("sort", OptimizeOptions{SortBy: []string{"x"}})
	if sortY < 60 || sortX > 2 {
		t.Fatalf("sorted by x: %.1f files for y, %.1f for x", sortY, sortX)
	}
	// The rewritten files carry a page index, and bloom filters for the
	// columns with membership filters (x: random ids); not for k-like data.
	rd, _ := c.Read(catalog.Latest)
	tb, _ := rd.Table("t")
	files, _ := rd.Files(tb.ID)
	for _, name := range []string{"x", "z"} {
		col, _ := rd.Column(tb.ID, name)
		if fl, _ := rd.Filters(tb.ID, col.ID); fl == nil || fl.Count() != len(files) {
			t.Fatalf("column %s: membership filters missing on the rewritten files", name)
		}
		rgs, err := rd.RowGroupStats(tb.ID, col.ID, files[3].ID)
		if err != nil || len(rgs) == 0 {
			t.Fatalf("row groups of %s: %v", name, err)
		}
		for _, rg := range rgs {
			if rg.ColumnIndex.Length <= 0 || rg.OffsetIndex.Length <= 0 || rg.BloomFilter.Length == 0 {
				t.Fatalf("column %s row group %d: page index %+v/%+v, bloom %+v", name, rg.Index, rg.ColumnIndex, rg.OffsetIndex, rg.BloomFilter)
			}
		}
	}
	rd.Close()
	// Both curves: ≥ 3x fewer files than the sort on the second column
	// (measured 6.4x Hilbert, 4.5x Z-order: a Z-order file that straddles
	// one of the curve's long jumps spans a long stretch of a column, so a
	// range at the midpoint of y reads 23 files where Hilbert reads 16).
	for _, k := range []curve.Kind{curve.Hilbert, curve.ZOrder} {
		y, x := run(string(k), OptimizeOptions{SortBy: []string{"x", "y"}, Curve: k})
		if y == 0 || sortY < 3*y || x == 0 || sortY < 3*x {
			t.Errorf("%s: %.1f files for y and %.1f for x, want both ≤ %.1f/3", k, y, x, sortY)
		}
	}
	// Time travel to before the rewrites reads the original files.
	for _, q := range queries {
		if got := answerOf(t, e, before.Snapshot.ID, q); got != old[q] {
			t.Errorf("at the first snapshot: %s: got %s, want %s", q, got, old[q])
		}
	}
	if _, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"x", "y"}, Curve: "peano"}); err == nil || !strings.Contains(err.Error(), "peano") {
		t.Errorf("unknown curve: %v", err)
	}
}

// --target-file-size: files come out near the target, the tail is not a
// sliver, and compacting by size merges only files under the target.
func TestTargetFileSize(t *testing.T) {
	dir, c, before, e := twoColumnLake(t)
	ctx := context.Background()
	total := before.Bytes
	target := total / 7
	res, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"x"}, TargetFileSize: target, Dir: filepath.Join(dir, "sized")})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := c.Read(res.Snapshot.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	tb, _ := rd.Table("t")
	files, _ := rd.Files(tb.ID)
	if len(files) != res.FilesAfter || res.FilesAfter < 3 {
		t.Fatalf("%d files registered, result %+v", len(files), res)
	}
	var sizes []int64
	for _, f := range files {
		sizes = append(sizes, f.FileSizeBytes)
		if f.FileSizeBytes < target/2 || f.FileSizeBytes > target*3/2 {
			t.Errorf("file sizes %v, target %d", sizes, target)
		}
	}
	t.Logf("input %d bytes in %d files; target %d: %d files of %v bytes", total, before.Files, target, len(files), sizes)

	// Every file is under twice the target: compacting to that size merges
	// all of them; to a tenth of it, none is small.
	if res, err := MergeSmallFiles(ctx, e, "t", MergeOptions{TargetFileSize: target / 10}); err != nil || res != nil {
		t.Fatalf("compact below every file: %+v, %v", res, err)
	}
	merged, err := MergeSmallFiles(ctx, e, "t", MergeOptions{TargetFileSize: 2 * total, Dir: filepath.Join(dir, "merged")})
	if err != nil {
		t.Fatal(err)
	}
	if merged.FilesBefore != len(files) || merged.FilesAfter != 1 || merged.Rows != 40_000 {
		t.Fatalf("compact to one file: %+v", merged)
	}
}

// parseText's fast paths read every value as the codec's CAST parser does:
// our text is DuckDB's (types' cross-check), so random values formatted
// and read both ways must agree, specials included.
func TestParseTextFastPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, typ := range []string{"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
		"float32", "float64", "decimal(4,2)", "decimal(18,3)", "decimal(18,0)", "decimal(38,10)", "varchar"} {
		tt := types.MustParseType(typ)
		codec, _ := types.CodecFor(tt)
		texts := []string{}
		for range 3000 {
			texts = append(texts, codec.Format(typestest.Random(r, tt)))
		}
		if tt.Kind == types.KindFloat || tt.Kind == types.KindDouble {
			texts = append(texts, "nan", "inf", "-inf", "-0.0", "0.0", "1e+20", "1.5e-07", "-3.4028235e+38")
		}
		for _, s := range texts {
			want, werr := codec.Parse(s)
			got, gerr := parseText(codec, tt.Kind, s)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("%s %q: codec %v, fast path %v", typ, s, werr, gerr)
			}
			if werr != nil {
				continue
			}
			wb, err1 := codec.Encode(want)
			gb, err2 := codec.Encode(got)
			if (err1 == nil) != (err2 == nil) || string(wb) != string(gb) || (err1 != nil && codec.Format(want) != codec.Format(got)) {
				t.Fatalf("%s %q: codec %v, fast path %v", typ, s, want, got)
			}
		}
	}
}

// Two curve rewrites in a row on one engine both commit, the second with
// the curve function the first registered; a table of files without rows
// is rewritten by retiring them and writing nothing.
func TestRepeatCurveRewritesAndEmptyFiles(t *testing.T) {
	dir, c, _, e := twoColumnLake(t)
	want := answerOf(t, e, catalog.Latest, "SELECT count(*), sum(x) FROM t WHERE x < 100")
	ctx := context.Background()
	for i := range 2 {
		if _, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"x", "y"}, Curve: Hilbert, RowsPerFile: 5000,
			Dir: filepath.Join(dir, fmt.Sprintf("h%d", i))}); err != nil {
			t.Fatalf("curve rewrite %d: %v", i, err)
		}
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT count(*), sum(x) FROM t WHERE x < 100"); got != want {
		t.Errorf("after two curve rewrites: %s, want %s", got, want)
	}

	// A table of empty files: optimize retires them and writes nothing.
	empty := filepath.Join(dir, "empty.parquet")
	if err := pqwrite.Write(empty, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64")}}, pqwrite.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "e", []string{empty}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	res, err := Optimize(ctx, e, "e", OptimizeOptions{SortBy: []string{"x"}, Dir: filepath.Join(dir, "e-out")})
	if err != nil || res.FilesBefore != 1 || res.FilesAfter != 0 {
		t.Fatalf("optimize of an empty file: %+v, %v", res, err)
	}
}
