package catalog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// A table's stored stats serve the snapshots after the commit that wrote
// them until one changes the table (storedAt): random histories over
// three tables, each commit changing one or two of them (files added,
// removed, rewritten, restamped, delete files, columns added, renamed,
// dropped and retyped, tables dropped and made again, renamed), then, at
// every snapshot and for every table visible there, the stats a new
// handle serves (stored or folded) equal a fold of the files visible at
// that snapshot. Rows written before the promise (untilChanged unset)
// serve their own state only.
func TestStoredTableStatsServeLaterSnapshots(t *testing.T) {
	cols := []ColumnDef{{Name: "x", Type: "bigint"}, {Name: "s", Type: "varchar"}}
	domains := map[string][]string{"bigint": {"-3", "0", "1", "2", "5", "9"}, "varchar": {"", "a", "ab", "b", "zz"}, "integer": {"-1", "0", "4"}}
	served, folded := storedServed.Load(), 0
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 1207))
		store := kvtest.Store(t)
		c, err := CreateInStore(store, Options{Now: fixedNow()})
		if err != nil {
			t.Fatal(err)
		}
		names := []string{"a", "b", "c"}
		for _, n := range names {
			commit(t, c, func(tx *Txn) { tx.CreateTable(n, cols) })
		}
		n := 0
		live := func(table string) ([]DataFile, []Column, map[int64]DeleteFile) { return tableAtLatest(t, c, table) }
		file := func(table string) NewFile {
			n++
			_, tcols, _ := live(table)
			return randomStatsFile(t, rng, fmt.Sprintf("/d/f%d.parquet", n), tcols, domains)
		}
		colN := 0
		for step := range 40 {
			table := names[rng.IntN(len(names))]
			files, tcols, dels := live(table)
			tx, err := c.Begin()
			if err != nil {
				t.Fatal(err)
			}
			switch op := rng.IntN(10); {
			case op < 4 || len(files) == 0:
				for range 1 + rng.IntN(3) {
					tx.AddFiles(table, file(table))
				}
				if rng.IntN(3) == 0 {
					// A second table in the same commit.
					other := names[rng.IntN(len(names))]
					if other != table {
						tx.AddFiles(other, file(other))
					}
				}
			case op == 4:
				gone := files[rng.IntN(len(files))]
				tx.RemoveFiles(table, gone.ID)
				if rng.IntN(2) == 0 {
					tx.AddFiles(table, file(table))
				}
			case op == 5:
				f := files[rng.IntN(len(files))]
				tx.Restamp(table, Restamp{FileID: f.ID, ModifiedUnixNanos: f.ModifiedUnixNanos + 1, FileSizeBytes: f.FileSizeBytes, FooterSize: f.FooterSize, FooterFingerprint: f.FooterFingerprint})
			case op == 6:
				f := files[rng.IntN(len(files))]
				tx.SetDeletes(table, NewDeleteFile{DataFileID: f.ID, Path: fmt.Sprintf("/d/del-%d-%d.parquet", seed, step),
					DeleteCount: 1, FileSizeBytes: 50, Replaces: dels[f.ID].ID})
			case op == 7:
				colN++
				switch k := rng.IntN(4); {
				case k == 0:
					tx.AlterTable(table, Alteration{Kind: AddColumn, Column: fmt.Sprintf("n%d", colN), Type: "integer"})
				case k == 1 && len(tcols) > 1:
					tx.AlterTable(table, Alteration{Kind: DropColumn, Column: tcols[len(tcols)-1].Name})
				case k == 2:
					tx.AlterTable(table, Alteration{Kind: RenameColumn, Column: tcols[0].Name, NewName: fmt.Sprintf("r%d", colN)})
				default:
					tx.AlterTable(table, Alteration{Kind: SetOption, Option: "target_file_size", Value: fmt.Sprint(1000 + colN)})
				}
			case op == 8:
				// Dropped and made again: another table of the same name.
				tx.DropTable(table)
				tx.CreateTable(table, cols)
			default:
				renamed := table + "_"
				tx.RenameTable(table, renamed)
				for i := range names {
					if names[i] == table {
						names[i] = renamed
					}
				}
			}
			if _, err := tx.Commit(); err != nil && !errors.Is(err, ErrUnchanged) {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
		}
		// A row written before the promise serves its own state only.
		r, err := c.Read(Latest)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := r.Table(names[0])
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		tampered := tb.ID
		asBeforePromise(t, store, tb.ID)
		commit(t, c, func(tx *Txn) { tx.AddFiles(names[1], file(names[1])) })

		snaps, err := c.Snapshots()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snaps {
			// A new handle: nothing cached from the commits or the
			// snapshots checked before.
			fresh, err := OpenStore(store, Options{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := fresh.Read(s.ID)
			if err != nil {
				t.Fatal(err)
			}
			tables, err := r.Tables()
			if err != nil {
				t.Fatal(err)
			}
			for _, tb := range tables {
				before := storedServed.Load()
				got, err := r.fileTableStats(tb.ID)
				if err != nil {
					t.Fatal(err)
				}
				if storedServed.Load() == before {
					folded++
				}
				if tb.ID == tampered && storedServed.Load() != before {
					t.Fatalf("seed %d snapshot %d: table %s's row, written before the promise, served another state", seed, s.ID, tb.Name)
				}
				fold, err := r.computeTableStats(tb.ID)
				if err != nil {
					t.Fatal(err)
				}
				// NextRowID only grows: a fold sees no row id of a file
				// removed before, the stored rows do.
				if got.RecordCount != fold.RecordCount || got.FileSizeBytes != fold.FileSizeBytes || got.FileCount != fold.FileCount || got.NextRowID < fold.NextRowID {
					t.Fatalf("seed %d snapshot %d table %s: counts %d/%d/%d/%d, the fold's %d/%d/%d/%d", seed, s.ID, tb.Name,
						got.RecordCount, got.FileSizeBytes, got.FileCount, got.NextRowID, fold.RecordCount, fold.FileSizeBytes, fold.FileCount, fold.NextRowID)
				}
				if len(got.Columns) != len(fold.Columns) {
					t.Fatalf("seed %d snapshot %d table %s: stats of %d columns, the fold's %d", seed, s.ID, tb.Name, len(got.Columns), len(fold.Columns))
				}
				for id, f := range fold.Columns {
					if g := got.Columns[id]; g == nil || fmt.Sprint(*g) != fmt.Sprint(*f) {
						t.Fatalf("seed %d snapshot %d table %s column %d: served %+v, the fold's %+v", seed, s.ID, tb.Name, id, g, f)
					}
				}
			}
			r.Close()
		}
	}
	t.Logf("%d table stats served from rows written at an earlier snapshot, %d folded or served for their own state", storedServed.Load()-served, folded)
	if storedServed.Load() == served || folded == 0 {
		t.Fatal("both ways must be taken")
	}
}

// An append after stats rows written before the promise (untilChanged
// unset) and a commit to another table folds its table's stats, and
// takes its first row id above every file the table ever had: a file
// removed before holds ids the fold does not see.
func TestAppendAfterFoldKeepsRowIDsUnique(t *testing.T) {
	store := kvtest.Store(t)
	c, err := CreateInStore(store, Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, func(tx *Txn) {
		tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}})
		tx.CreateTable("u", []ColumnDef{{Name: "x", Type: "bigint"}})
	})
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "/d/a.parquet", 0, 9, 0)) }) // ids 0–9
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "/d/b.parquet", 0, 4, 0)) }) // ids 10–14
	r, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := r.Table("t")
	files, err := r.Files(tb.ID)
	r.Close()
	if err != nil || len(files) != 2 {
		t.Fatalf("files %v, %v", files, err)
	}
	commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", files[1].ID) })
	// The row as a commit before the promise left it.
	if p := asBeforePromise(t, store, tb.ID); p.NextRowId != 15 {
		t.Fatalf("next row id %d after a removal, want 15", p.NextRowId)
	}
	commit(t, c, func(tx *Txn) { tx.AddFiles("u", intFile(t, "/d/u.parquet", 0, 1, 0)) })
	fresh, err := OpenStore(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, fresh, func(tx *Txn) { tx.AddFiles("t", intFile(t, "/d/c.parquet", 0, 2, 0)) })
	r, err = fresh.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	files, err = r.Files(tb.ID)
	if err != nil || len(files) != 2 {
		t.Fatalf("files %v, %v", files, err)
	}
	if got := files[1].RowIDStart; got != 15 {
		t.Fatalf("the appended file's first row id is %d, want 15: ids 10–14 were a removed file's", got)
	}
}

// asBeforePromise rewrites a table's stored stats row as a commit before
// untilChanged wrote it, and returns it.
func asBeforePromise(t *testing.T, store kv.Store, tableID int64) *catalogpb.TableStats {
	t.Helper()
	raw, err := store.Get(key(tagTableStats, tableID))
	if err != nil {
		t.Fatal(err)
	}
	var p catalogpb.TableStats
	if err := decodeValue(raw, &p); err != nil {
		t.Fatal(err)
	}
	p.UntilChanged = false
	v, err := encodeValue(&p)
	if err != nil {
		t.Fatal(err)
	}
	b := store.NewBatch()
	defer b.Close()
	if err := b.Set(key(tagTableStats, tableID), v); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return &p
}

// tableAtLatest reads a table's live files, columns and current delete
// files at cat's latest snapshot.
func tableAtLatest(t *testing.T, cat *Catalog, table string) ([]DataFile, []Column, map[int64]DeleteFile) {
	t.Helper()
	r, err := cat.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, err := r.Table(table)
	if err != nil {
		t.Fatal(err)
	}
	files, err := r.Files(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	tcols, err := r.Columns(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	dels, err := r.DeleteFiles(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	return files, tcols, dels
}

// randomStatsFile is a file at path of random size and rows, with random
// stats (randomUnit over domains) for most of tcols whose type domains
// lists.
func randomStatsFile(t *testing.T, rng *rand.Rand, path string, tcols []Column, domains map[string][]string) NewFile {
	rows := int64(1 + rng.IntN(40))
	nf := NewFile{Path: path, RecordCount: rows, FileSizeBytes: int64(100 + rng.IntN(1000)), FooterSize: 10, RowGroupCount: 1, FooterFingerprint: rng.Uint64() | 1}
	for _, col := range tcols {
		typ := col.Type.DuckLakeName()
		if d, ok := domains[typ]; ok && rng.IntN(6) > 0 {
			nf.Columns = append(nf.Columns, FileColumn{Path: []string{col.Name}, Stats: randomUnit(t, rng, typ, d, rows, 0)})
		}
	}
	return nf
}
