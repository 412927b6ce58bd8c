package catalog

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/stats"
)

// A table's FileSet and ColumnBounds, built from its file blocks, equal
// what its rows say at every kept snapshot, through random appends,
// removals and expiries, with the plan cache on (extending entries after
// appends) and off; and a table made before blocks existed (no marker) is
// read from its rows.
// dropBlocksMarker makes table stand for one made before blocks existed:
// it has no marker, so its files are read from their rows.
func dropBlocksMarker(t *testing.T, c *Catalog, store kv.Store, table string) {
	t.Helper()
	rd, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := rd.Table(table)
	rd.Close()
	if err != nil {
		t.Fatal(err)
	}
	b := store.NewBatch()
	defer b.Close()
	if err := b.Delete(key(tagBlocksMarker, tb.ID)); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestBlocksEqualRows(t *testing.T) {
	for _, budget := range []int64{0, -1} {
		t.Run(fmt.Sprint("budget=", budget), func(t *testing.T) {
			store := kvtest.Store(t)
			c, err := CreateInStore(store, Options{Now: fixedNow(), CacheBytes: budget})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(21, uint64(budget)))
			commit(t, c, func(tx *Txn) {
				tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}, {Name: "s", Type: "varchar"}})
				tx.CreateTable("old", []ColumnDef{{Name: "x", Type: "bigint"}})
			})
			// "old" stands for a table made before blocks: no marker.
			dropBlocksMarker(t, c, store, "old")
			var live map[string][]int64 = map[string][]int64{}
			path := 0
			for step := range 60 {
				switch {
				case step%9 == 8:
					// Expire everything before a recent snapshot.
					snaps, _ := c.Snapshots()
					cut := snaps[max(0, len(snaps)-1-r.IntN(4))]
					if _, err := c.ExpireSnapshots(cut.Time, false); err != nil {
						t.Fatal(err)
					}
				case step%4 == 3:
					for _, tb := range []string{"t", "old"} {
						if len(live[tb]) < 2 {
							continue
						}
						var gone []int64
						for _, id := range live[tb] {
							if r.IntN(3) == 0 {
								gone = append(gone, id)
							}
						}
						if len(gone) > 0 {
							commit(t, c, func(tx *Txn) { tx.RemoveFiles(tb, gone...) })
						}
					}
				default:
					for _, tb := range []string{"t", "old"} {
						var nfs []NewFile
						for range 1 + r.IntN(30) {
							path++
							nf := NewFile{Path: fmt.Sprintf("/d/%d", path), RecordCount: r.Int64N(3) * 10, RowGroupCount: int32(r.IntN(3)), FileSizeBytes: r.Int64N(1000)}
							for _, col := range []struct{ name, typ string }{{"x", "int64"}, {"s", "varchar"}} {
								if (tb == "old" && col.name == "s") || r.IntN(5) == 0 {
									continue
								}
								nf.Columns = append(nf.Columns, FileColumn{Path: []string{col.name}, Stats: randomStats(t, r, col.typ)})
							}
							nfs = append(nfs, nf)
						}
						commit(t, c, func(tx *Txn) { tx.AddFiles(tb, nfs...) })
					}
				}
				snaps, err := c.Snapshots()
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range snaps {
					checkFileSetAgainstRows(t, c, s.ID, live, s.ID == snaps[len(snaps)-1].ID)
				}
			}
		})
	}
}

func checkFileSetAgainstRows(t *testing.T, c *Catalog, snap int64, live map[string][]int64, latest bool) {
	t.Helper()
	rd, err := c.Read(snap)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	tables, err := rd.Tables()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		files, err := rd.Files(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if latest {
			live[tb.Name] = live[tb.Name][:0]
			for _, f := range files {
				live[tb.Name] = append(live[tb.Name], f.ID)
			}
		}
		// The retired files a table's removal records name are those its
		// rows say ended by this snapshot.
		retired, err := rd.retiredRows(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		ever, err := rd.FilesEver(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got, want []int64
		for _, f := range retired {
			got = append(got, f.ID)
		}
		for _, f := range ever {
			if f.End.Known && f.End.V <= snap {
				want = append(want, f.ID)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("snapshot %d table %s: retired files %v, rows say %v", snap, tb.Name, got, want)
		}
		if probs, err := rd.CheckDerived(tb.ID); err != nil || len(probs) > 0 {
			t.Fatalf("snapshot %d table %s: CheckDerived found %v, %v", snap, tb.Name, probs, err)
		}
		fs, err := rd.FileSet(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := tb.Name == "t"; fs.fromBlocks != want {
			t.Fatalf("snapshot %d table %s: built from blocks %v, want %v", snap, tb.Name, fs.fromBlocks, want)
		}
		if fs.Len() != len(files) {
			t.Fatalf("snapshot %d table %s: file set of %d, %d files", snap, tb.Name, fs.Len(), len(files))
		}
		var rgs, bytes int64
		empty := 0
		for i, f := range files {
			g, err := rd.FileAt(fs, i)
			if err != nil {
				t.Fatal(err)
			}
			g.End = f.End
			if !reflect.DeepEqual(g, f) || fs.IDs[i] != f.ID || fs.RecordCounts[i] != f.RecordCount || fs.RowGroupCount[i] != f.RowGroupCount {
				t.Fatalf("snapshot %d table %s file %d: %+v (%d %d %d) vs %+v", snap, tb.Name, i, g, fs.IDs[i], fs.RecordCounts[i], fs.RowGroupCount[i], f)
			}
			rgs, bytes = rgs+int64(f.RowGroupCount), bytes+f.FileSizeBytes
			if f.RecordCount == 0 {
				empty++
			}
		}
		if fs.TotalRowGroups != rgs || fs.TotalBytes != bytes || fs.EmptyFiles != empty {
			t.Fatalf("snapshot %d table %s: totals %d/%d/%d, want %d/%d/%d", snap, tb.Name, fs.TotalRowGroups, fs.TotalBytes, fs.EmptyFiles, rgs, bytes, empty)
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
			for i := range files {
				var st stats.Column
				got := "none"
				if cb.Fill(i, &st) {
					got = planFields(&st)
				}
				if w := planFields(want[i]); got != w {
					t.Fatalf("snapshot %d table %s column %s file %d: cached %s, stored %s", snap, tb.Name, col.Name, files[i].ID, got, w)
				}
				if _, _, facts := cb.BoundArrays(); facts[i] != stats.FactsOf(want[i]) {
					t.Fatalf("snapshot %d table %s column %s file %d: facts %b, the stored stats' %b", snap, tb.Name, col.Name, files[i].ID, facts[i], stats.FactsOf(want[i]))
				}
			}
		}
	}
}

// A FileSet built from blocks keeps at most blockRowsKept rows, so that a
// table of millions of files still fits the plan cache: the set is cached
// under a budget its rows would exceed, and every row a plan asks for is
// still the file's row, kept or read again.
func TestBlockFileSetKeepsBoundedRows(t *testing.T) {
	defer func(n int) { blockRowsKept = n }(blockRowsKept)
	blockRowsKept = 16
	const files = 2000
	row := int64(unsafe.Sizeof(DataFile{}))
	// Room for the arrays and 16 rows, far from a row per file.
	budget := files*(8+8+4+8+4) + 16*(row+64) + 1024
	if budget > files*row/2 {
		t.Fatalf("budget %d would hold half the rows: the test proves nothing", budget)
	}
	c, err := CreateInStore(kvtest.Store(t), Options{Now: fixedNow(), CacheBytes: int64(budget)})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	for b := range 4 {
		commit(t, c, func(tx *Txn) {
			for i := range files / 4 {
				n := b*files/4 + i
				tx.AddFiles("t", intFile(t, fmt.Sprintf("/d/f%05d.parquet", n), int64(n), int64(n)+5, 0))
			}
		})
	}
	r, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, _ := r.Table("t")
	want, err := r.Files(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := r.FileSet(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !fs.fromBlocks || len(fs.IDs) != files {
		t.Fatalf("file set of %d files, from blocks %v", len(fs.IDs), fs.fromBlocks)
	}
	for pass := range 3 {
		// Pass 1 prefetches a few (by key), pass 2 all (one scan): rows
		// past the set's bound are kept by the reader.
		if pass > 0 {
			var pos []int
			for i := range fs.IDs {
				if pass == 2 || i%97 == 3 {
					pos = append(pos, i)
				}
			}
			if err := r.PrefetchFiles(fs, pos); err != nil {
				t.Fatal(err)
			}
		}
		for i := range fs.IDs {
			f, err := r.FileAt(fs, i)
			if err != nil {
				t.Fatal(err)
			}
			if f.Path != want[i].Path || f.ID != want[i].ID || f.RecordCount != want[i].RecordCount {
				t.Fatalf("pass %d: file %d is %s (%d), want %s (%d)", pass, i, f.Path, f.ID, want[i].Path, want[i].ID)
			}
		}
	}
	if read, _ := fs.files.sizes(); read > 16 {
		t.Errorf("%d rows kept, want at most 16", read)
	}
	again, err := r.FileSet(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again != fs {
		t.Error("the file set was not cached: its estimate does not fit a budget that holds it")
	}
}

// Under the default budget a set of a million files keeps every row (broad
// plans read none twice); one of ten million keeps what fits half the
// budget, and its estimate leaves the other half to column bounds.
func TestRowsKeptFitHalfTheBudget(t *testing.T) {
	c := &planCache{budget: DefaultCacheBytes}
	if got := c.rowsKept(1_000_000); got != 1_000_000 {
		t.Errorf("a million files keep %d rows, want all", got)
	}
	n := 10_000_000
	kept := c.rowsKept(n)
	if kept < blockRowsKept || kept >= n {
		t.Fatalf("ten million files keep %d rows, want between %d and all", kept, blockRowsKept)
	}
	fs := &FileSet{IDs: make([]int64, n), files: &fileRows{n: n, max: kept}}
	if m := fs.memory(); m > DefaultCacheBytes/2+int64(unsafe.Sizeof(DataFile{}))+64 {
		t.Errorf("a set of ten million files is estimated at %d bytes, over half the budget", m)
	}
	if c := (&planCache{budget: 1 << 20}); c.rowsKept(1_000_000) != blockRowsKept {
		t.Errorf("a small budget keeps %d rows, want the floor %d", c.rowsKept(1_000_000), blockRowsKept)
	}
}
