package catalog

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/membership"
	"github.com/rocklake/rocklake/stats"
)

// planFields is what ColumnBounds.Fill carries: every field the planner
// reads.
func planFields(st *stats.Column) string { return planView(st) }

// randomStats gives a unit random, partly unknown statistics; strings get
// bounds of varying width, int64 fixed 8 bytes.
func randomStats(t *testing.T, r *rand.Rand, typ string) stats.Column {
	st := stats.Column{RowCount: r.Int64N(1000)}
	if r.IntN(40) == 0 { // counts beyond 32 bits, which the cache widens for
		st.RowCount = 1<<33 + r.Int64N(1000)
	}
	lo, hi := r.Int64N(1000), r.Int64N(1000)
	if lo > hi {
		lo, hi = hi, lo
	}
	text := func(n int64) string {
		if typ == "varchar" { // "a…" ≤ "b…": widths vary, order holds
			if r.IntN(60) == 0 { // beyond the fixed-width form's 64 KiB
				return string(rune('a'+n/1000)) + strings.Repeat("x", 70_000)
			}
			return string(rune('a'+n/1000)) + strings.Repeat("x", r.IntN(20))
		}
		return fmt.Sprint(n)
	}
	if r.IntN(5) > 0 {
		st.Min, st.MinIsExact = stats.Known(enc(t, typ, text(lo))), r.IntN(2) == 0
	}
	if r.IntN(5) > 0 {
		st.Max, st.MaxIsExact = stats.Known(enc(t, typ, text(hi+1000))), r.IntN(2) == 0
	}
	if r.IntN(3) > 0 {
		st.NullCount = stats.Known(r.Int64N(st.RowCount + 1))
	}
	if r.IntN(3) > 0 {
		st.ValueCount = stats.Known(r.Int64N(st.RowCount + 1))
	}
	if r.IntN(3) > 0 {
		st.ContainsNull = stats.Known(r.IntN(2) == 0)
	}
	if r.IntN(3) > 0 {
		st.ContainsNaN = stats.Known(r.IntN(2) == 0)
	}
	return st
}

// The cached, column-major stats equal the stored rows, file by file, at
// every snapshot (files added and removed between them), with the cache
// on, starved (evicting all the time) and off.
func TestColumnBoundsMatchStoredStats(t *testing.T) {
	for _, budget := range []int64{0, 3000, -1} {
		t.Run(fmt.Sprint("budget=", budget), func(t *testing.T) {
			c, err := CreateInStore(kvtest.Store(t), Options{Now: fixedNow(), CacheBytes: budget})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(7, uint64(budget)))
			commit(t, c, func(tx *Txn) {
				tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}, {Name: "s", Type: "varchar"}, {Name: "n", Type: "bigint"}})
			})
			var snaps []int64
			var live []int64
			for step := range 12 {
				var s Snapshot
				if step%4 == 3 && len(live) > 2 {
					gone := live[r.IntN(len(live))]
					s = commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", gone) })
				} else {
					var nfs []NewFile
					for range 1 + r.IntN(5) {
						nf := NewFile{Path: fmt.Sprintf("/d/%d-%d", step, r.Int64()), RecordCount: 10, RowGroupCount: 1}
						for _, col := range []struct{ name, typ string }{{"x", "int64"}, {"s", "varchar"}} {
							if r.IntN(6) == 0 {
								continue // no stats row for this column
							}
							fc := FileColumn{Path: []string{col.name}, Stats: randomStats(t, r, col.typ)}
							if col.name == "x" && r.IntN(3) > 0 {
								// A filter holding the file's path, to find it by.
								data, _, err := membership.Build([]uint64{membership.Hash([]byte(nf.Path))})
								if err != nil {
									t.Fatal(err)
								}
								fc.Filter = &Filter{Kind: membership.Kind, Data: data, Distinct: 1}
							}
							nf.Columns = append(nf.Columns, fc)
						}
						nfs = append(nfs, nf)
					}
					s = commit(t, c, func(tx *Txn) { tx.AddFiles("t", nfs...) })
				}
				snaps = append(snaps, s.ID)
				rd, _ := c.Read(s.ID)
				tb, _ := rd.Table("t")
				files, _ := rd.Files(tb.ID)
				live = live[:0]
				for _, f := range files {
					live = append(live, f.ID)
				}
				rd.Close()
			}
			// Read every snapshot oldest first (each state extends the one
			// before when only files were added), then newest first, then
			// oldest first again, so that entries of other snapshots are
			// cached, extended or rebuilt.
			order := append(append(append([]int64{}, snaps...), snaps...), snaps...)
			for i := range len(snaps) {
				order[len(snaps)+i] = snaps[len(snaps)-1-i]
			}
			before := extensions.Load()
			defer func() {
				if budget >= 0 && extensions.Load() == before {
					t.Error("no cache entry was built by extending an older one")
				}
			}()
			for _, id := range order {
				rd, err := c.Read(id)
				if err != nil {
					t.Fatal(err)
				}
				tb, _ := rd.Table("t")
				files, _ := rd.Files(tb.ID)
				fs, err := rd.FileSet(tb.ID)
				if err != nil {
					t.Fatal(err)
				}
				if fs.Len() != len(files) {
					t.Fatalf("snapshot %d: file set of %d, %d files", id, fs.Len(), len(files))
				}
				var rgs, bytes int64
				for i, f := range files {
					g, err := rd.FileAt(fs, i)
					if err != nil {
						t.Fatal(err)
					}
					g.End = f.End // a row read at another snapshot may end since
					if !reflect.DeepEqual(g, f) || fs.IDs[i] != f.ID || fs.RecordCounts[i] != f.RecordCount {
						t.Fatalf("snapshot %d file %d: %+v vs %+v", id, i, g, f)
					}
					rgs, bytes = rgs+int64(f.RowGroupCount), bytes+f.FileSizeBytes
				}
				if fs.TotalRowGroups != rgs || fs.TotalBytes != bytes {
					t.Fatalf("snapshot %d: totals %d/%d, want %d/%d", id, fs.TotalRowGroups, fs.TotalBytes, rgs, bytes)
				}
				// Filters: the files with one are found by their own key.
				xcol, _ := rd.Column(tb.ID, "x")
				fl, err := rd.Filters(tb.ID, xcol.ID)
				if err != nil {
					t.Fatal(err)
				}
				withFilter := 0
				for i, f := range files {
					var has bool
					err := scanRange(c.store, key(tagFileFilter, tb.ID, xcol.ID, f.ID), func(_, _ []byte) error { has = true; return nil })
					if err != nil {
						t.Fatal(err)
					}
					if fl != nil && fl.Has(i) != has {
						t.Fatalf("snapshot %d: file %d has a filter: %v, the cache says %v", id, f.ID, has, fl.Has(i))
					}
					if has {
						withFilter++
						if fl == nil || !fl.MayContain(i, []byte(f.Path)) {
							t.Fatalf("snapshot %d: file %d's filter is not at its position", id, f.ID)
						}
					}
				}
				if got := 0; fl != nil {
					got = fl.Count()
					if got != withFilter {
						t.Fatalf("snapshot %d: %d filters, want %d", id, got, withFilter)
					}
				} else if withFilter != 0 {
					t.Fatalf("snapshot %d: no filters, want %d", id, withFilter)
				}
				cols, _ := rd.Columns(tb.ID)
				for _, col := range cols {
					want, err := rd.ColumnStatsOf(tb.ID, col.ID, files)
					if err != nil {
						t.Fatal(err)
					}
					cb, err := rd.ColumnBounds(tb.ID, col.ID)
					if err != nil {
						t.Fatal(err)
					}
					min, max, facts := cb.BoundArrays()
					bounded := false // a width needs some bound known
					for _, st := range want {
						bounded = bounded || st != nil && (st.Min.Known || st.Max.Known)
					}
					if col.Name != "s" && bounded && (min.Off != nil || max.Off != nil || min.W != 8 && max.W != 8) {
						t.Fatalf("snapshot %d column %s: bigint bounds not 8 bytes wide in one array: %d %d", id, col.Name, min.W, max.W)
					}
					for i := range files {
						var st stats.Column
						got := &st
						if !cb.Fill(i, &st) {
							got = nil
						}
						if g, w := planFields(got), planFields(want[i]); g != w {
							t.Fatalf("snapshot %d column %s file %d:\n got %s\nwant %s", id, col.Name, files[i].ID, g, w)
						}
						f := stats.FactsOf(want[i])
						if facts[i] != f {
							t.Fatalf("snapshot %d column %s file %d: facts %08b, want %08b", id, col.Name, files[i].ID, facts[i], f)
						}
						if f&stats.FactMin != 0 && string(min.At(i)) != string(want[i].Min.V) ||
							f&stats.FactMax != 0 && string(max.At(i)) != string(want[i].Max.V) {
							t.Fatalf("snapshot %d column %s file %d: arrays give %x %x, want %x %x", id, col.Name, files[i].ID,
								min.At(i), max.At(i), want[i].Min.V, want[i].Max.V)
						}
					}
				}
				rd.Close()
			}
		})
	}
}

func TestPackBounds(t *testing.T) {
	for _, bs := range [][][]byte{
		{nil, nil},
		{[]byte("abcd"), nil, []byte("wxyz")},
		{[]byte(""), nil, []byte("")},
		{[]byte("a"), []byte("abc"), nil, []byte("")},
	} {
		p := packBounds(bs)
		for i, b := range bs {
			if b == nil {
				continue
			}
			if got := p.at(i); string(got) != string(b) || cap(got) != len(got) {
				t.Errorf("%q: at(%d) = %q (cap %d)", bs, i, got, cap(got))
			}
		}
	}
}

// A handle that planned a table extends its cached file set and bounds
// when another handle on the same store (as another process would)
// appended since, reading only the new rows; after a removal it rebuilds
// them. Either way it serves exactly the store's state.
func TestPlanCacheExtendsAcrossHandles(t *testing.T) {
	store := kvtest.Store(t)
	a, err := CreateInStore(store, Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenStore(store, Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, b, func(tx *Txn) {
		tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}})
		tx.AddFiles("t", intFile(t, "/d/a", 0, 9, 0), intFile(t, "/d/b", 10, 19, 0))
	})
	// planA plans t through A and returns its files' upper bounds and how
	// many cache entries were built by extending older ones meanwhile.
	planA := func() (maxes []string, extended int64) {
		t.Helper()
		before := extensions.Load()
		r, err := a.Read(Latest)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		tb, _ := r.Table("t")
		fs, err := r.FileSet(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		cb, err := r.ColumnBounds(tb.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		if fs.Len() != cb.Len() {
			t.Fatalf("file set of %d, bounds of %d", fs.Len(), cb.Len())
		}
		for i := range fs.Len() {
			hi, _ := cb.MaxBound(i)
			maxes = append(maxes, decodeInt(t, stats.Known(hi)))
		}
		return maxes, extensions.Load() - before
	}
	if got, _ := planA(); fmt.Sprint(got) != "[9 19]" {
		t.Fatalf("A plans %v", got)
	}
	s := commit(t, b, func(tx *Txn) { tx.AddFiles("t", intFile(t, "/d/c", 100, 199, 0)) })
	got, extended := planA()
	if fmt.Sprint(got) != "[9 19 199]" {
		t.Fatalf("A plans %v after B's append", got)
	}
	if extended != 2 {
		t.Errorf("after B's append, A extended %d cache entries, want 2 (the file set and the bounds)", extended)
	}
	rb, _ := b.Read(s.ID)
	tb, _ := rb.Table("t")
	files, _ := rb.Files(tb.ID)
	rb.Close()
	commit(t, b, func(tx *Txn) { tx.RemoveFiles("t", files[0].ID) })
	got, extended = planA()
	if fmt.Sprint(got) != "[19 199]" {
		t.Fatalf("A plans %v after B's removal", got)
	}
	if extended != 0 {
		t.Errorf("after B's removal, A extended %d cache entries; a removal must rebuild them", extended)
	}
}

// The pieces single plans read (stats blocks, row-group statistics) are
// evicted among themselves, within an eighth of the budget: however many
// a stream of different plans keeps, the table's FileSet and bounds stay.
// dropTable forgets both kinds.
func TestPlanCachePiecesKeepTheirOwnBudget(t *testing.T) {
	c := &planCache{budget: 8000}
	state := statsKey{table: 7, nextFileID: 100, schemaVersion: 1}
	set, bounds := cacheKey{statsKey: state, column: -1}, cacheKey{statsKey: state, column: 3}
	c.put(set, "set", 5000)
	c.put(bounds, "bounds", 2000)
	var pieces []cacheKey
	for i := range int64(200) {
		k := cacheKey{statsKey: state, column: statsBlockSpace - 3, block: 1 + i}
		if i%2 == 1 {
			k = cacheKey{statsKey: state, column: rowGroupSpace - 3 - i}
		}
		if !k.piece() {
			t.Fatalf("%+v is not a piece", k)
		}
		c.put(k, i, 300)
		pieces = append(pieces, k)
	}
	if c.get(set) != "set" || c.get(bounds) != "bounds" {
		t.Fatal("pieces pushed out the file set or the bounds")
	}
	if c.pieces.used > c.budget/8 || c.sets.used != 7000 {
		t.Fatalf("pieces hold %d bytes (at most %d), sets %d (want 7000)", c.pieces.used, c.budget/8, c.sets.used)
	}
	if c.get(pieces[len(pieces)-1]) != int64(len(pieces)-1) || c.get(pieces[0]) != nil {
		t.Fatal("pieces are not evicted oldest first")
	}
	for _, k := range []cacheKey{set, bounds, {statsKey: state, column: -2 - 3}, {statsKey: state, column: hasFiltersSpace - 3}} {
		if k.piece() {
			t.Fatalf("%+v taken for a piece", k)
		}
	}
	c.dropTable(7)
	if len(c.m) != 0 || c.sets.used != 0 || c.pieces.used != 0 || len(c.pieces.order) != 0 {
		t.Fatalf("dropTable left %d entries (%d + %d bytes)", len(c.m), c.sets.used, c.pieces.used)
	}
}

// A row-group memo holds at most what it is charged: files past its bound
// are read from the store by every plan, not kept.
func TestRowGroupMemoKeepsItsBound(t *testing.T) {
	m := &rowGroupMemo{m: map[int64][]RowGroupStats{}}
	rgs := make([]RowGroupStats, 3)
	for i := range rgs {
		rgs[i].Stats.Min, rgs[i].Stats.Max = stats.Known(make([]byte, 40)), stats.Known(make([]byte, 40))
	}
	for id := range int64(100_000) {
		m.put(id, rgs)
	}
	if m.bytes > rowGroupMemoBytes || len(m.m) == 0 || len(m.m) == 100_000 {
		t.Fatalf("memo of %d files holds %d bytes; charged %d", len(m.m), m.bytes, rowGroupMemoBytes)
	}
	if _, ok := m.get(0); !ok {
		t.Fatal("the first file read is not kept")
	}
	if _, ok := m.get(99_999); ok {
		t.Fatal("a file past the bound is kept")
	}
}
