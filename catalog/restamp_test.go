package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// identityOf is a file's device and inode, as registration records them.
func identityOf(t *testing.T, p string) FileIdentity {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Sys().(*syscall.Stat_t)
	return FileIdentity{Device: uint64(s.Dev), Inode: uint64(s.Ino)}
}

// liveFile is a table's live file at path at the latest snapshot, read
// through the planning cache (FileSet) as queries read it.
func liveFile(t *testing.T, c *Catalog, snap int64, path string) DataFile {
	t.Helper()
	r, err := c.Read(snap)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, err := r.Table("t")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := r.FileSet(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range fs.IDs {
		f, err := r.FileAt(fs, i)
		if err != nil {
			t.Fatal(err)
		}
		if f.Path == path {
			return f
		}
	}
	t.Fatalf("no live file %s at snapshot %d", path, snap)
	return DataFile{}
}

// A restamp records a live file's identity as found on disk now, in
// place: every snapshot that reads the file, the one before too, reads
// the new identity, also through a planning cache filled before; the
// identity index follows it; the table's statistics stay; and whatever
// would make it another file (its size or footer, an identity another
// live file has) is refused with the catalog left exactly as it was.
func TestRestamp(t *testing.T) {
	c := newMemCatalog(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idA, idB := identityOf(t, a), identityOf(t, b)
	added := commit(t, c, func(tx *Txn) {
		tx.CreateTable("t", []ColumnDef{{Name: "id", Type: "bigint"}})
		tx.AddFiles("t",
			NewFile{Path: a, RecordCount: 3, FileSizeBytes: 30, FooterSize: 10, ModifiedUnixNanos: 11, ChangedUnixNanos: 12, Identity: idA, FooterFingerprint: 77},
			NewFile{Path: b, RecordCount: 4, FileSizeBytes: 40, FooterSize: 10, ModifiedUnixNanos: 21, ChangedUnixNanos: 22, Identity: idB, FooterFingerprint: 88})
	})
	before := liveFile(t, c, added.ID, a) // fills the cache
	statsBefore := func() TableStats {
		r, _ := c.Read(Latest)
		defer r.Close()
		tb, _ := r.Table("t")
		ts, err := r.TableStats(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		return *ts
	}()

	// a is restored from a backup: the same bytes under a new inode.
	data, _ := os.ReadFile(a)
	if err := os.WriteFile(a+".new", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(a+".new", a); err != nil {
		t.Fatal(err)
	}
	idA2 := identityOf(t, a)
	good := Restamp{FileID: before.ID, ModifiedUnixNanos: 11, ChangedUnixNanos: 99, Identity: idA2, FileSizeBytes: 30, FooterSize: 10, FooterFingerprint: 77}

	refused := func(what string, want error, r Restamp) {
		t.Helper()
		d := dump(t, c)
		tx, err := c.Begin()
		if err != nil {
			t.Fatal(err)
		}
		tx.Restamp("t", r)
		if _, err := tx.Commit(); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
		if dump(t, c) != d {
			t.Errorf("%s: refused, but the catalog changed", what)
		}
	}
	bad := good
	bad.FileSizeBytes = 31
	refused("another size", ErrInvalid, bad)
	bad = good
	bad.FooterFingerprint = 78
	refused("another footer", ErrInvalid, bad)
	bad = good
	bad.FooterSize = 11
	refused("another footer length", ErrInvalid, bad)
	bad = good
	bad.FooterFingerprint = 0
	refused("no fingerprint", ErrInvalid, bad)
	bad = good
	bad.FileID = 999
	refused("no such file", ErrNoSuchFile, bad)

	// A transaction begun before the restamp conflicts with it.
	late, err := c.Begin()
	if err != nil {
		t.Fatal(err)
	}
	s := commit(t, c, func(tx *Txn) { tx.Restamp("t", good) })
	if !slices.Contains(s.Changes.RestampedTables, before.TableID) || s.NextFileID <= added.NextFileID {
		t.Errorf("restamp snapshot %+v: want the table in RestampedTables and next_file_id advanced", s)
	}
	late.AddFiles("t", NewFile{Path: filepath.Join(dir, "c"), RecordCount: 1, FileSizeBytes: 1})
	if _, err := late.Commit(); !errors.Is(err, ErrConflict) {
		t.Errorf("a commit begun before the restamp: %v, want ErrConflict", err)
	}
	for _, snap := range []int64{added.ID, s.ID} {
		f := liveFile(t, c, snap, a)
		if f.Identity != idA2 || f.ChangedUnixNanos != 99 || f.ModifiedUnixNanos != 11 || f.FooterFingerprint != 77 ||
			f.ID != before.ID || f.RowIDStart != before.RowIDStart || f.RecordCount != 3 {
			t.Errorf("at snapshot %d: %+v, want the new identity on the same registration", snap, f)
		}
	}
	if st := statsBefore; func() bool {
		r, _ := c.Read(Latest)
		defer r.Close()
		tb, _ := r.Table("t")
		ts, err := r.TableStats(tb.ID)
		return err != nil || ts.RecordCount != st.RecordCount || ts.FileCount != st.FileCount || ts.NextRowID != st.NextRowID
	}() {
		t.Errorf("the table's statistics changed with the restamp")
	}
	// The identity index follows the file: a second name for its new
	// inode is the same file, its old inode is free.
	link := filepath.Join(dir, "a-link")
	if err := os.Link(a, link); err != nil {
		t.Fatal(err)
	}
	d := dump(t, c)
	tx, _ := c.Begin()
	tx.AddFiles("t", NewFile{Path: link, RecordCount: 3, FileSizeBytes: 30, Identity: idA2})
	if _, err := tx.Commit(); !errors.Is(err, ErrDuplicate) {
		t.Errorf("a hard link to the restamped file: %v, want ErrDuplicate", err)
	}
	if dump(t, c) != d {
		t.Errorf("a refused add changed the catalog")
	}
	// b's path made another name of a's file: restamped to that identity,
	// b would be a twice.
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	fb := liveFile(t, c, Latest, b)
	refused("another live file's identity", ErrDuplicate, Restamp{FileID: fb.ID, ModifiedUnixNanos: 21, ChangedUnixNanos: 23,
		Identity: idA2, FileSizeBytes: 40, FooterSize: 10, FooterFingerprint: 88})
}

// A file registered again, at its location, in the commit that retires
// it (new statistics for content changed in place) is not one a rewrite
// took into other files: removed later and added back, it is a file like
// any other, before expire and after. A file retired to be registered
// again that the commit does not register again is refused.
func TestRegisterAgain(t *testing.T) {
	c := newMemCatalog(t)
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.WriteFile(a, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	commit(t, c, func(tx *Txn) {
		tx.CreateTable("t", []ColumnDef{{Name: "id", Type: "bigint"}})
		tx.AddFiles("t", NewFile{Path: a, RecordCount: 3, FileSizeBytes: 30, ModifiedUnixNanos: 11, Identity: identityOf(t, a)})
	})
	old := liveFile(t, c, Latest, a)
	for what, add := range map[string][]NewFile{
		"not registered again":       nil,
		"registered at another path": {{Path: filepath.Join(dir, "b"), RecordCount: 3, FileSizeBytes: 30}},
	} {
		d := dump(t, c)
		tx, _ := c.Begin()
		tx.RegisterAgain("t", old.ID)
		if len(add) > 0 {
			tx.AddFiles("t", add...)
		}
		if _, err := tx.Commit(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", what, err)
		}
		if dump(t, c) != d {
			t.Errorf("%s: refused, but the catalog changed", what)
		}
	}
	again := commit(t, c, func(tx *Txn) {
		tx.RegisterAgain("t", old.ID)
		tx.AddFiles("t", NewFile{Path: a, RecordCount: 5, FileSizeBytes: 50, ModifiedUnixNanos: 11, Identity: identityOf(t, a)})
	})
	now := liveFile(t, c, Latest, a)
	if now.ID == old.ID || now.RecordCount != 5 {
		t.Fatalf("registered again: %+v", now)
	}
	removal := commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", now.ID) })
	retired := func() map[int64]RetiredFile {
		r, err := c.Read(Latest)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		tb, _ := r.Table("t")
		rs, err := r.RetiredFiles(tb)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int64]RetiredFile{}
		for _, f := range rs {
			out[f.FileID] = f
		}
		return out
	}
	for _, when := range []string{"before expire", "after expire"} {
		rs := retired()
		if len(rs) != 2 || rs[old.ID].Rewritten || rs[old.ID].EndSnapshot != again.ID || rs[now.ID].Rewritten || rs[now.ID].EndSnapshot != removal.ID {
			t.Errorf("%s: retired %+v, want both files retired and neither taken in by a rewrite", when, rs)
		}
		if when == "before expire" {
			if _, err := c.Expire(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), ExpireOptions{MinRetention: -1}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
