package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/pgkv"
	"github.com/rocklake/rocklake/stats"
)

// fillCatalog gives c a history worth copying: tables created, renamed
// and dropped, files added and removed, over a dozen snapshots.
func fillCatalog(t *testing.T, c *Catalog) {
	t.Helper()
	commit(t, c, func(tx *Txn) {
		tx.CreateTable("events", []ColumnDef{{Name: "x", Type: "bigint"}})
		tx.CreateTable("users", []ColumnDef{{Name: "x", Type: "bigint"}, {Name: "s", Type: "struct(a int32, b varchar)"}})
	})
	for i := range 8 {
		commit(t, c, func(tx *Txn) {
			tx.AddFiles("events", intFile(t, fmt.Sprintf("/data/events/%d.parquet", i), int64(i*100), int64(i*100+99), int64(i%3)))
		})
	}
	commit(t, c, func(tx *Txn) { tx.AddFiles("users", intFile(t, "/data/users/0.parquet", -5, 5, 0)) })
	r, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := r.Table("events")
	files, _ := r.Files(tb.ID)
	r.Close()
	commit(t, c, func(tx *Txn) { tx.RemoveFiles("events", files[2].ID, files[5].ID) })
	commit(t, c, func(tx *Txn) { tx.AlterTable("events", Alteration{Kind: SetSorting, Sorting: []string{"x"}}) })
	commit(t, c, func(tx *Txn) {
		tx.AlterTable("users", Alteration{Kind: SetOption, Option: OptionTargetFileSize, Value: "64MiB"})
	})
	commit(t, c, func(tx *Txn) { tx.RenameTable("users", "people") })
	commit(t, c, func(tx *Txn) { tx.CreateTable("gone", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	commit(t, c, func(tx *Txn) { tx.DropTable("gone") })
}

// describeCatalog is what a catalog's readers see at every snapshot:
// tables, columns, files, file and row-group statistics, table stats.
func describeCatalog(t *testing.T, c *Catalog) string {
	t.Helper()
	snaps, err := c.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, s := range snaps {
		fmt.Fprintf(&b, "snapshot %+v\n", s)
		r, err := c.Read(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		tables, err := r.Tables()
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			key := tb.SortedBy
			tb.SortedBy = nil // a pointer, which differs between catalogs
			fmt.Fprintf(&b, " table %+v sorted by %+v\n", tb, key)
			cols, err := r.Columns(tb.ID)
			if err != nil {
				t.Fatal(err)
			}
			files, err := r.Files(tb.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				fmt.Fprintf(&b, "  file %+v\n", f)
			}
			for _, col := range cols {
				fmt.Fprintf(&b, "  column %d %s %s %v\n", col.ID, col.Name, col.Type, col.Parent)
				err := r.FileColumnStats(tb.ID, col.ID, func(id int64, st *stats.Column) error {
					fmt.Fprintf(&b, "   file %d stats %+v\n", id, *st)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range files {
					rgs, err := r.RowGroupStats(tb.ID, col.ID, f.ID)
					if err != nil {
						t.Fatal(err)
					}
					fmt.Fprintf(&b, "   file %d row groups %+v\n", f.ID, rgs)
				}
			}
			ts, err := r.TableStats(tb.ID)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "  stats rows=%d next=%d bytes=%d files=%d\n", ts.RecordCount, ts.NextRowID, ts.FileSizeBytes, ts.FileCount)
			ids := make([]int64, 0, len(ts.Columns))
			for id := range ts.Columns {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			for _, id := range ids {
				fmt.Fprintf(&b, "   column %d %+v\n", id, *ts.Columns[id])
			}
		}
		r.Close()
	}
	return b.String()
}

// storeRows is every key and value of a store, in order.
func storeRows(t *testing.T, s kv.Reader) [][2][]byte {
	t.Helper()
	it, err := s.NewIter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out [][2][]byte
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, [2][]byte{bytes.Clone(it.Key()), bytes.Clone(it.Value())})
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameRows(a, b [][2][]byte) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d rows, want %d", len(b), len(a))
	}
	for i := range a {
		if !bytes.Equal(a[i][0], b[i][0]) || !bytes.Equal(a[i][1], b[i][1]) {
			return fmt.Errorf("row %d: key %x, want %x (or its value differs)", i, b[i][0], a[i][0])
		}
	}
	return nil
}

// TestCopyPebblePostgresPebble copies a directory catalog into a database
// and that one back into a directory: every store holds the same rows,
// readers see the same catalog at every snapshot, and each copy takes
// new commits where the original would.
func TestCopyPebblePostgresPebble(t *testing.T) {
	base := t.TempDir()
	src, err := Create(filepath.Join(base, "src"), Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	fillCatalog(t, src)
	want := describeCatalog(t, src)
	if !strings.Contains(want, "sorted by &{Columns:[1] Curve:}") || !strings.Contains(want, "TargetFileBytes:67108864") {
		t.Fatalf("the history to copy lacks table properties:\n%s", want)
	}
	wantRows := storeRows(t, src.store)
	var wantBytes int64
	for _, r := range wantRows {
		wantBytes += int64(len(r[0]) + len(r[1]))
	}

	pgLoc := pgtest.URL(t)
	if _, err := Open(pgLoc, Options{}); !errors.Is(err, ErrNotCatalog) || strings.Count(err.Error(), "catalog") > 1 {
		t.Fatalf("open an empty database: %v; want ErrNotCatalog, said once", err)
	}
	var progress []CopyProgress
	// Small batches and progress steps, so that this small catalog
	// takes many of each.
	opts := CopyOptions{BatchBytes: 500, ProgressEvery: 10, Progress: func(p CopyProgress) { progress = append(progress, p) }}
	res, err := Copy(src, pgLoc, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Keys != int64(len(wantRows)) || res.Bytes != wantBytes || res.Batches < 3 || !strings.HasPrefix(res.Destination, "postgres://") {
		t.Fatalf("copy result %+v; want %d keys, %d bytes, several batches", res, len(wantRows), wantBytes)
	}
	if u, err := url.Parse(pgLoc); err != nil {
		t.Fatal(err)
	} else if pw, _ := u.User.Password(); pw == "" || strings.Contains(res.Destination, pw) {
		t.Fatal("the copy names its destination with the password")
	}
	last := map[string]CopyProgress{}
	for _, p := range progress {
		last[p.Phase] = p
	}
	for _, phase := range []string{"copy", "check"} {
		if p := last[phase]; !p.Done || p.Keys != res.Keys || p.Bytes != res.Bytes {
			t.Errorf("last %s progress %+v; want done with every key", phase, p)
		}
	}
	if len(progress) < int(res.Keys/10) {
		t.Errorf("%d progress calls for %d keys every 10", len(progress), res.Keys)
	}

	mid, err := Open(pgLoc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sameRows(wantRows, storeRows(t, mid.store)); err != nil {
		t.Fatalf("PostgreSQL copy: %v", err)
	}
	if got := describeCatalog(t, mid); got != want {
		t.Fatalf("PostgreSQL copy reads differently:\n%s\nwant\n%s", got, want)
	}

	back := filepath.Join(base, "back")
	if _, err := Copy(mid, back, CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	round, err := Open(back, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer round.Close()
	if err := sameRows(wantRows, storeRows(t, round.store)); err != nil {
		t.Fatalf("copied back: %v", err)
	}
	if got := describeCatalog(t, round); got != want {
		t.Fatalf("copied back reads differently:\n%s\nwant\n%s", got, want)
	}
	h, err := openHeadRecord(back, true)
	if err != nil {
		t.Fatal(err)
	}
	h.close()
	if srcSnaps, _ := src.Snapshots(); !h.ok || h.last != srcSnaps[len(srcSnaps)-1].ID {
		t.Fatalf("the copy's head record holds %d (valid %v), want the newest snapshot", h.last, h.ok)
	}

	// Each copy goes on from where the source stands.
	next := commit(t, src, func(tx *Txn) { tx.CreateTable("later", []ColumnDef{{Name: "x", Type: "bigint"}}) }).ID
	for name, c := range map[string]*Catalog{"postgres": mid, "directory": round} {
		if got := commit(t, c, func(tx *Txn) { tx.CreateTable("later", []ColumnDef{{Name: "x", Type: "bigint"}}) }).ID; got != next {
			t.Errorf("%s copy committed snapshot %d, the source %d", name, got, next)
		}
	}
	mid.Close()
}

// TestCopyPostgresToDirectory copies a catalog made in a database, in a
// schema of its own, into a directory.
func TestCopyPostgresToDirectory(t *testing.T) {
	loc := withSearchPath(t, pgtest.URL(t), "lake")
	src, err := Create(loc, Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	fillCatalog(t, src)
	dir := filepath.Join(t.TempDir(), "lake")
	res, err := Copy(src, dir, CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if err := sameRows(storeRows(t, src.store), storeRows(t, dst.store)); err != nil {
		t.Fatal(err)
	}
	if got, want := describeCatalog(t, dst), describeCatalog(t, src); got != want {
		t.Fatalf("the directory copy reads differently:\n%s\nwant\n%s", got, want)
	}
	if res.Destination != dir || res.Batches != 1 {
		t.Fatalf("copy result %+v", res)
	}
}

func withSearchPath(t *testing.T, loc, schema string) string {
	t.Helper()
	return loc + "&search_path=" + schema
}

// TestCopyRefusesOccupiedDestinations: a copy never writes where a
// catalog, or anything else, already is.
func TestCopyRefusesOccupiedDestinations(t *testing.T) {
	base := t.TempDir()
	src, err := Create(filepath.Join(base, "src"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	fillCatalog(t, src)

	other := filepath.Join(base, "other")
	oc, err := Create(other, Options{})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, oc, func(tx *Txn) { tx.CreateTable("mine", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	before := storeRows(t, oc.store)
	oc.Close()
	if _, err := Copy(src, other, CopyOptions{}); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "never overwrites") {
		t.Fatalf("copy onto a directory catalog: %v", err)
	}
	oc, err = Open(other, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sameRows(before, storeRows(t, oc.store)); err != nil {
		t.Fatalf("a refused copy changed the catalog there: %v", err)
	}
	oc.Close()

	plain := filepath.Join(base, "plain")
	_ = os.MkdirAll(plain, 0o755)
	_ = os.WriteFile(filepath.Join(plain, "notes.txt"), []byte("mine"), 0o644)
	if _, err := Copy(src, plain, CopyOptions{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("copy into a directory of other files: %v", err)
	}
	if entries, _ := os.ReadDir(plain); len(entries) != 1 {
		t.Fatalf("a refused copy wrote into %s: %d entries", plain, len(entries))
	}
	if _, err := Copy(src, filepath.Join(base, "src"), CopyOptions{}); err == nil || !strings.Contains(err.Error(), "the catalog being copied") {
		t.Fatalf("copy onto itself: %v", err)
	}

	db := pgtest.URL(t)
	pc, err := Create(db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, pc, func(tx *Txn) { tx.CreateTable("mine", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	before = storeRows(t, pc.store)
	if _, err := Copy(src, db, CopyOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("copy onto a database catalog: %v", err)
	}
	if err := sameRows(before, storeRows(t, pc.store)); err != nil {
		t.Fatalf("a refused copy changed the catalog there: %v", err)
	}
	pc.Close()

	foreign := pgtest.URL(t)
	conn, err := pgx.Connect(context.Background(), foreign)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(context.Background(), `CREATE TABLE orders (id int)`)
	conn.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Copy(src, foreign, CopyOptions{}); !errors.Is(err, pgkv.ErrForeign) {
		t.Fatalf("copy into a schema of other tables: %v", err)
	}
}

// failingStore fails the commit of its batch number failAt (from 1), and
// records which keys each committed batch wrote.
type failingStore struct {
	kv.Store
	failAt  int
	commits int
	wrote   [][][]byte
}

func (s *failingStore) NewBatch() kv.Batch { return &failingBatch{Batch: s.Store.NewBatch(), s: s} }

type failingBatch struct {
	kv.Batch
	s    *failingStore
	keys [][]byte
}

func (b *failingBatch) Set(k, v []byte) error {
	b.keys = append(b.keys, bytes.Clone(k))
	return b.Batch.Set(k, v)
}

func (b *failingBatch) Commit() error {
	b.s.commits++
	if b.s.commits == b.s.failAt {
		return errors.New("injected: the destination went away")
	}
	if err := b.Batch.Commit(); err != nil {
		return err
	}
	b.s.wrote = append(b.s.wrote, b.keys)
	return nil
}

// TestCopyWritesMetadataLast: the metadata row goes in the last batch and
// no other, so that a copy cut off before it leaves no catalog, which Open
// refuses and another Copy names as an incomplete copy to remove.
func TestCopyWritesMetadataLast(t *testing.T) {
	src, err := Create(filepath.Join(t.TempDir(), "src"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	fillCatalog(t, src)
	snap, err := src.store.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	meta, err := snap.Get(key(tagMeta))
	if err != nil {
		t.Fatal(err)
	}

	// A copy that completes: the metadata is in the last batch only.
	whole := filepath.Join(t.TempDir(), "whole")
	dst, _, err := newCopyDestination(whole, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fs := &failingStore{Store: dst}
	var res CopyResult
	if err := writeCopy(snap, fs, meta, CopyOptions{BatchBytes: 1000, ProgressEvery: 1}, &res); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	if len(fs.wrote) < 3 {
		t.Fatalf("%d batches; want several", len(fs.wrote))
	}
	for i, keys := range fs.wrote[:len(fs.wrote)-1] {
		for _, k := range keys {
			if bytes.Equal(k, key(tagMeta)) {
				t.Fatalf("batch %d of %d writes the metadata", i+1, len(fs.wrote))
			}
		}
	}
	if last := fs.wrote[len(fs.wrote)-1]; !bytes.Equal(last[len(last)-1], key(tagMeta)) {
		t.Fatal("the metadata is not the last batch's")
	}

	for _, target := range []string{"directory", "postgres"} {
		t.Run(target, func(t *testing.T) {
			loc := filepath.Join(t.TempDir(), "cut")
			if target == "postgres" {
				loc = pgtest.URL(t)
			}
			dst, _, err := newCopyDestination(loc, Options{})
			if err != nil {
				t.Fatal(err)
			}
			fs := &failingStore{Store: dst, failAt: 3}
			var res CopyResult
			if err := writeCopy(snap, fs, meta, CopyOptions{BatchBytes: 1000, ProgressEvery: 1000}, &res); err == nil {
				t.Fatal("the injected failure did not stop the copy")
			}
			dst.Close()
			if len(fs.wrote) != 2 {
				t.Fatalf("%d batches landed before the failure, want 2", len(fs.wrote))
			}
			if c, err := Open(loc, Options{}); !errors.Is(err, ErrNotCatalog) {
				if c != nil {
					c.Close()
				}
				t.Fatalf("open an interrupted copy: want ErrNotCatalog, got %v", err)
			}
			hint := "remove the directory"
			if target == "postgres" {
				hint = "drop its table rocklake_kv"
			}
			_, err = Copy(src, loc, CopyOptions{})
			if !errors.Is(err, ErrPartialCopy) || !strings.Contains(err.Error(), hint) {
				t.Fatalf("copy onto an interrupted copy: %v; want ErrPartialCopy saying to %s", err, hint)
			}
		})
	}
}

// TestCompareStoresFindsEveryDifference: the check after a copy fails on
// a changed value, a missing key and an extra key, wherever they are.
func TestCompareStoresFindsEveryDifference(t *testing.T) {
	fill := func(edit func(b kv.Batch)) kv.Store {
		s := kv.NewMemory()
		b := s.NewBatch()
		for i := range 5 {
			_ = b.Set([]byte{byte(2 * i)}, []byte{byte(i)})
		}
		edit(b)
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	orig := fill(func(kv.Batch) {})
	if n, size, err := compareStores(orig, fill(func(kv.Batch) {}), CopyOptions{ProgressEvery: 1}); err != nil || n != 5 || size != 10 {
		t.Fatalf("equal stores: %d keys, %d bytes, %v", n, size, err)
	}
	for name, edit := range map[string]func(b kv.Batch){
		"changed value": func(b kv.Batch) { _ = b.Set([]byte{4}, []byte{9}) },
		"missing first": func(b kv.Batch) { _ = b.Delete([]byte{0}) },
		"missing last":  func(b kv.Batch) { _ = b.Delete([]byte{8}) },
		"extra between": func(b kv.Batch) { _ = b.Set([]byte{3}, []byte{3}) },
		"extra last":    func(b kv.Batch) { _ = b.Set([]byte{9}, []byte{9}) },
		"empty value":   func(b kv.Batch) { _ = b.Set([]byte{6}, []byte{}) },
	} {
		if _, _, err := compareStores(orig, fill(edit), CopyOptions{ProgressEvery: 1}); err == nil {
			t.Errorf("%s: no difference found", name)
		}
	}
}
