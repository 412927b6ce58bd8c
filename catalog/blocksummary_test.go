package catalog

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/stats"
)

// checkSummaries checks every block summary of the table at the latest
// snapshot: with exact, it is the fold (stats.Merge) of the block's files
// as the table's bounds give them (every file of the block live); and in
// any case it bounds each live file of its block. A summary is absent only
// where a file of the block has no stats or the block holds one file, and
// none outlives its stats block.
func checkSummaries(t *testing.T, c *Catalog, cols []ColumnDef, exact bool, stage string) (summaries int) {
	t.Helper()
	r, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, _ := r.Table("t")
	fs, err := r.FileSet(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, cd := range cols {
		col, err := r.Column(tb.ID, cd.Name)
		if err != nil {
			t.Fatal(err)
		}
		cb, err := r.ColumnBounds(tb.ID, col.ID)
		if err != nil {
			t.Fatal(err)
		}
		sums, err := r.BlockSummaries(fs, col.ID)
		if err != nil {
			t.Fatal(err)
		}
		for b := range fs.Blocks() {
			start, end := fs.BlockFiles(b)
			var units []stats.Column
			allStats := true
			for p := start; p < end; p++ {
				var st stats.Column
				if !cb.Fill(p, &st) {
					allStats = false
					continue
				}
				units = append(units, st)
			}
			var sum stats.Column
			has := sums.Fill(b, &sum)
			where := fmt.Sprintf("%s: column %s block %d (files %d to %d)", stage, cd.Name, b, start, end)
			if !has {
				if exact && allStats && len(units) > 1 {
					t.Fatalf("%s: no summary, though every file has stats", where)
				}
				continue
			}
			summaries++
			if exact {
				want := stats.Merge(units)
				want.DistinctCount, want.ColumnSizeBytes, want.ExtraStats = stats.Maybe[int64]{}, 0, ""
				if !reflect.DeepEqual(normal(sum), normal(want)) {
					t.Fatalf("%s: summary %+v, the fold of its files %+v", where, sum, want)
				}
			}
			for i, u := range units {
				if !holds(&sum, &u) {
					t.Fatalf("%s: summary %+v does not bound file %d: %+v", where, sum, start+i, u)
				}
			}
		}
	}
	err = scanPrefix(r, key(tagBlockSummary, tb.ID), func(k, _ []byte) error {
		sk := append([]byte{tagStatsBlock}, k[1:]...)
		if _, err := r.kvs.Get(sk); err != nil {
			return fmt.Errorf("summary %x without its stats block: %w", k, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", stage, err)
	}
	return summaries
}

// normal is st with empty bounds as nil, for comparison.
func normal(st stats.Column) stats.Column {
	if len(st.Min.V) == 0 {
		st.Min.V = nil
	}
	if len(st.Max.V) == 0 {
		st.Max.V = nil
	}
	return st
}

// holds says whether sum is true of a unit u inside it: its bounds,
// flags and counts all allow u's.
func holds(sum, u *stats.Column) bool {
	if stats.HoldsNoValue(sum) && !stats.HoldsNoValue(u) {
		return false
	}
	if !stats.HoldsNoValue(u) {
		if sum.Min.Known && (!u.Min.Known || string(sum.Min.V) > string(u.Min.V)) {
			return false
		}
		if sum.Max.Known && (!u.Max.Known || string(sum.Max.V) < string(u.Max.V)) {
			return false
		}
	}
	if c := stats.ContainsNull(sum); c.Known && !c.V && !stats.NoNulls(u) {
		return false
	}
	if sum.ContainsNaN.Known && !sum.ContainsNaN.V && (!u.ContainsNaN.Known || u.ContainsNaN.V) {
		return false
	}
	if sum.NullCount.Known && (!u.NullCount.Known || u.NullCount.V > sum.NullCount.V) {
		return false
	}
	return !sum.ValueCount.Known || (u.ValueCount.Known && u.ValueCount.V <= sum.ValueCount.V)
}

// Block summaries through every writer of stats blocks: commits of random
// statistics (unknown flags and bounds, all-NULL files, files without a
// stats row, an unordered type), a removal and the expiry that rewrites
// the blocks, and an ALTER that writes stats for the files it maps.
func TestBlockSummariesAreTheFold(t *testing.T) {
	cols := []ColumnDef{{Name: "x", Type: "bigint"}, {Name: "d", Type: "double"}, {Name: "s", Type: "varchar"}, {Name: "i", Type: "interval"}}
	domains := map[string][]string{
		"bigint":  {"-3", "0", "1", "2", "5", "9"},
		"double":  {"-2.5", "0", "1.5", "2", "7.25"},
		"varchar": {"", "a", "ab", "b", "zz"},
	}
	total := 0
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 78))
		unknown := []int{0, 40, 6}[seed%3]
		c := newMemCatalog(t)
		commit(t, c, func(tx *Txn) { tx.CreateTable("t", cols) })
		n := 0
		for range 2 + rng.IntN(5) {
			var nfs []NewFile
			for range 1 + rng.IntN(12) {
				n++
				rows := int64(1 + rng.IntN(50))
				nf := NewFile{Path: fmt.Sprintf("f%d.parquet", n), RecordCount: rows, FileSizeBytes: 100, FooterSize: 10, RowGroupCount: 1}
				for _, cd := range cols {
					if unknown > 0 && rng.IntN(unknown) == 0 {
						continue
					}
					nf.Columns = append(nf.Columns, FileColumn{Path: []string{cd.Name}, Stats: randomUnit(t, rng, cd.Type, domains[cd.Type], rows, unknown)})
				}
				nfs = append(nfs, nf)
			}
			commit(t, c, func(tx *Txn) { tx.AddFiles("t", nfs...) })
		}
		total += checkSummaries(t, c, cols, true, fmt.Sprintf("seed %d: commits", seed))
		r, _ := c.Read(Latest)
		tb, _ := r.Table("t")
		fs, _ := r.FileSet(tb.ID)
		var gone []int64
		for i := range fs.Len() {
			if rng.IntN(3) == 0 {
				gone = append(gone, fs.IDs[i])
			}
		}
		r.Close()
		commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", gone...) })
		total += checkSummaries(t, c, cols, false, fmt.Sprintf("seed %d: removed", seed))
		if _, err := c.ExpireSnapshots(time.Now().Add(time.Hour), false); err != nil {
			t.Fatal(err)
		}
		total += checkSummaries(t, c, cols, true, fmt.Sprintf("seed %d: expired", seed))
		commit(t, c, func(tx *Txn) {
			tx.AlterTable("t", Alteration{Kind: AddColumn, Column: "a", Type: "bigint", Default: stats.Known("7")})
		})
		withA := append(cols[:len(cols):len(cols)], ColumnDef{Name: "a", Type: "bigint"})
		total += checkSummaries(t, c, withA, true, fmt.Sprintf("seed %d: column added", seed))
	}
	t.Logf("%d summaries checked", total)
	if total < 500 {
		t.Errorf("only %d summaries checked", total)
	}
}

// A FileSet cached before another process's expiry rewrote its blocks:
// the bounds read after it leave those blocks' files without stats (kept
// by every plan) instead of failing, and the process that expires forgets
// what it cached.
func TestBoundsAfterAnotherProcessExpired(t *testing.T) {
	store := kvtest.Store(t)
	c, err := CreateInStore(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cols := []ColumnDef{{Name: "x", Type: "bigint"}, {Name: "y", Type: "bigint"}}
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", cols) })
	for b := range 3 {
		var nfs []NewFile
		for i := range 4 {
			nf := NewFile{Path: fmt.Sprintf("f%d-%d.parquet", b, i), RecordCount: 10, FileSizeBytes: 100, FooterSize: 10, RowGroupCount: 1}
			for _, cd := range cols {
				v := enc(t, "bigint", fmt.Sprint(b*10+i))
				nf.Columns = append(nf.Columns, FileColumn{Path: []string{cd.Name}, Stats: stats.Column{RowCount: 10, Min: stats.Known(v), Max: stats.Known(v),
					NullCount: stats.Known(int64(0)), ValueCount: stats.Known(int64(10))}})
			}
			nfs = append(nfs, nf)
		}
		commit(t, c, func(tx *Txn) { tx.AddFiles("t", nfs...) })
	}
	other, err := OpenStore(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Both cache the FileSet; one removes a file of the middle block (not
	// its first) and expires.
	for _, cat := range []*Catalog{c, other} {
		r, _ := cat.Read(Latest)
		tb, _ := r.Table("t")
		fs, _ := r.FileSet(tb.ID)
		if fs.Len() != 12 {
			t.Fatalf("%d files", fs.Len())
		}
		r.Close()
	}
	r, _ := c.Read(Latest)
	tb, _ := r.Table("t")
	fs, _ := r.FileSet(tb.ID)
	victim := fs.IDs[6]
	r.Close()
	commit(t, other, func(tx *Txn) { tx.RemoveFiles("t", victim) })
	// Both read the removal's state (a FileSet holding the victim's block
	// as it was), then other expires.
	for _, cat := range []*Catalog{c, other} {
		r, _ := cat.Read(Latest)
		if _, err := r.FileSet(tb.ID); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	if _, err := other.ExpireSnapshots(time.Now().Add(time.Hour), false); err != nil {
		t.Fatal(err)
	}
	for name, cat := range map[string]*Catalog{"the process that expired": other, "another process": c} {
		r, _ := cat.Read(Latest)
		fs, _ := r.FileSet(tb.ID)
		col, _ := r.Column(tb.ID, "y")
		cb, err := r.ColumnBounds(tb.ID, col.ID)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sub, err := r.BoundsOfBlocks(fs, col.ID, []int{1})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		start, end := fs.BlockFiles(1)
		for p := start; p < end; p++ {
			var st, st2 stats.Column
			ok, ok2 := cb.Fill(p, &st), sub.Fill(p-start, &st2)
			if ok != ok2 || !reflect.DeepEqual(st, st2) {
				t.Errorf("%s: file %d: bounds %v %+v, of its block %v %+v", name, p, ok, st, ok2, st2)
			}
			if name == "the process that expired" && !ok {
				t.Errorf("%s: file %d has no stats", name, p)
			}
			if ok && string(st.Min.V) != string(enc(t, "bigint", fmt.Sprint(10+p-start+map[bool]int{true: 1}[p-start >= 2]))) {
				t.Errorf("%s: file %d: min %x", name, p, st.Min.V)
			}
		}
		r.Close()
	}
}

// A commit that folds a table's stats again (recompute) from stats blocks
// its process cached the FileSet of before another process's expiry
// rewrote them: the stored stats must still be the fold of the live
// files. The victim is a block's first file (the block moves to another
// key) or another (the block keeps its key and loses a file).
func TestRecomputeAfterAnotherProcessExpired(t *testing.T) {
	for _, victimAt := range []int{4, 6} {
		store := kvtest.Store(t)
		c, err := CreateInStore(store, Options{})
		if err != nil {
			t.Fatal(err)
		}
		threeBlocks(t, c)
		other, err := OpenStore(store, Options{})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := c.Read(Latest)
		tb, _ := r.Table("t")
		fs, _ := r.FileSet(tb.ID)
		ids := slices.Clone(fs.IDs)
		r.Close()
		commit(t, other, func(tx *Txn) { tx.RemoveFiles("t", ids[victimAt]) })
		r, _ = c.Read(Latest)
		if _, err := r.FileSet(tb.ID); err != nil { // cached as the removal left it
			t.Fatal(err)
		}
		r.Close()
		if _, err := other.ExpireSnapshots(time.Now().Add(time.Hour), false); err != nil {
			t.Fatal(err)
		}
		// The last file holds the table's maxima: its removal folds again.
		commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", ids[11]) })
		r, _ = c.Read(Latest)
		stored, _, err := r.storedTableStats(tb.ID)
		if err != nil || stored == nil {
			t.Fatalf("victim %d: stored stats %v, %v", victimAt, stored, err)
		}
		fold, err := r.computeTableStats(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		if stored.FileCount != 10 || stored.FileCount != fold.FileCount || stored.RecordCount != fold.RecordCount || stored.FileSizeBytes != fold.FileSizeBytes {
			t.Fatalf("victim %d: counts %+v, the fold's %+v", victimAt, stored, fold)
		}
		for id, f := range fold.Columns {
			if s := stored.Columns[id]; s == nil || fmt.Sprint(*s) != fmt.Sprint(*f) {
				t.Errorf("victim %d column %d: stored %+v, the fold's %+v", victimAt, id, s, f)
			}
			if !f.Max.Known {
				t.Errorf("victim %d column %d: the fold has no max", victimAt, id)
			}
		}
	}
}

// threeBlocks creates table t (x bigint, s varchar) and adds three
// commits of four files: three blocks, each with a summary; file i of
// commit b holds x = b*10+i, s from "a…" to "z…", and i%2 NULLs in s.
func threeBlocks(t *testing.T, c *Catalog) {
	t.Helper()
	cols := []ColumnDef{{Name: "x", Type: "bigint"}, {Name: "s", Type: "varchar"}}
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", cols) })
	for b := range 3 {
		var nfs []NewFile
		for i := range 4 {
			nf := NewFile{Path: fmt.Sprintf("f%d-%d.parquet", b, i), RecordCount: 10, FileSizeBytes: 100, FooterSize: 10, RowGroupCount: 1}
			v := fmt.Sprint(b*10 + i)
			nf.Columns = append(nf.Columns,
				FileColumn{Path: []string{"x"}, Stats: stats.Column{RowCount: 10, Min: stats.Known(enc(t, "bigint", v)), Max: stats.Known(enc(t, "bigint", v)), MinIsExact: true, MaxIsExact: true,
					NullCount: stats.Known(int64(0)), ValueCount: stats.Known(int64(10))}},
				FileColumn{Path: []string{"s"}, Stats: stats.Column{RowCount: 10, Min: stats.Known([]byte("a" + v)), Max: stats.Known([]byte("z" + v)),
					NullCount: stats.Known(int64(i % 2)), ValueCount: stats.Known(int64(10 - i%2))}})
			nfs = append(nfs, nf)
		}
		commit(t, c, func(tx *Txn) { tx.AddFiles("t", nfs...) })
	}
}
