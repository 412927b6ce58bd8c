package catalog

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A user's file that a rewrite or a removal retired is remembered after
// expire forgets its row, with whether a rewrite took its rows in; files
// rocklake deletes itself are not. Cleanup drops a record once its file
// has left the disk, and forgetting the table drops them all.
func TestExpireRemembersUsersFiles(t *testing.T) {
	c := newMemCatalog(t)
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	for _, n := range []string{"a", "b", "c"} {
		if err := os.WriteFile(path(n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, c, func(tx *Txn) {
		tx.CreateTable("t", []ColumnDef{{Name: "id", Type: "bigint"}})
		tx.AddFiles("t",
			NewFile{Path: path("a"), RecordCount: 1, FileSizeBytes: 1, ModifiedUnixNanos: 11, Owner: OwnerUser, Identity: FileIdentity{Device: 1, Inode: 1}},
			NewFile{Path: path("b"), RecordCount: 1, FileSizeBytes: 1, ModifiedUnixNanos: 12},
			NewFile{Path: path("c"), RecordCount: 1, FileSizeBytes: 1, ModifiedUnixNanos: 13, Owner: OwnerTaken})
	})
	ids := func() map[string]int64 {
		rd, err := c.Read(Latest)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		tb, _ := rd.Table("t")
		files, _ := rd.FilesEver(tb.ID)
		out := map[string]int64{}
		for _, f := range files {
			out[filepath.Base(f.Path)] = f.ID
		}
		return out
	}()
	// A rewrite of a and c into d (rocklake's), then a removal of b.
	rewrite := commit(t, c, func(tx *Txn) {
		tx.AddFiles("t", NewFile{Path: path("d"), RecordCount: 2, FileSizeBytes: 2, Owner: OwnerRocklake})
		tx.RemoveFiles("t", ids["a"], ids["c"])
	})
	removal := commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", ids["b"]) })
	retired := func() map[string]RetiredFile {
		rd, err := c.Read(Latest)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		tb, err := rd.Table("t")
		if err != nil {
			t.Fatal(err)
		}
		rs, err := rd.RetiredFiles(tb)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]RetiredFile{}
		for _, r := range rs {
			out[filepath.Base(r.Location)] = r
		}
		return out
	}
	check := func(when string, want map[string]RetiredFile) {
		t.Helper()
		got := retired()
		if len(got) != len(want) {
			t.Fatalf("%s: retired files %v, want %v", when, got, want)
		}
		for n, w := range want {
			g, ok := got[n]
			if !ok || g.Rewritten != w.Rewritten || g.Forgotten != w.Forgotten || g.EndSnapshot != w.EndSnapshot || g.FileID != ids[n] {
				t.Errorf("%s: %s is %+v, want rewritten %v, forgotten %v, end %d, file %d", when, n, g, w.Rewritten, w.Forgotten, w.EndSnapshot, ids[n])
			}
		}
	}
	check("before expire", map[string]RetiredFile{
		"a": {Rewritten: true, EndSnapshot: rewrite.ID},
		"b": {EndSnapshot: removal.ID},
		"c": {Rewritten: true, EndSnapshot: rewrite.ID},
	})
	if _, err := c.Expire(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), ExpireOptions{MinRetention: -1}); err != nil {
		t.Fatal(err)
	}
	// c was handed over: cleanup deletes it, and its path may hold a new
	// file later.
	after := map[string]RetiredFile{
		"a": {Rewritten: true, Forgotten: true, EndSnapshot: rewrite.ID},
		"b": {Forgotten: true, EndSnapshot: removal.ID},
	}
	check("after expire", after)
	if r := retired()["a"]; r.Identity != (FileIdentity{Device: 1, Inode: 1}) || !r.Unchanged(1, 11, "") || r.Unchanged(1, 12, "") || r.Unchanged(2, 11, "") {
		t.Errorf("a's record %+v does not tell the file as registered from another", r)
	}
	if _, err := c.Cleanup(CleanupOptions{Grace: -1}); err != nil {
		t.Fatal(err)
	}
	check("after cleanup, both files on disk", after)
	if _, err := os.Stat(path("c")); !os.IsNotExist(err) {
		t.Errorf("cleanup left the handed-over file c: %v", err)
	}
	if err := os.Remove(path("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cleanup(CleanupOptions{Grace: -1, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	check("after a dry-run cleanup, a gone", after)
	if _, err := c.Cleanup(CleanupOptions{Grace: -1}); err != nil {
		t.Fatal(err)
	}
	delete(after, "a")
	check("after cleanup, a gone", after)
	commit(t, c, func(tx *Txn) { tx.DropTable("t") })
	if _, err := c.Expire(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), ExpireOptions{MinRetention: -1}); err != nil {
		t.Fatal(err)
	}
	var left [][]byte
	if err := scanRange(c.store, key(tagForgottenFile), func(k, _ []byte) error { left = append(left, slices.Clone(k)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("forgetting the table left %d records of its forgotten files", len(left))
	}
}
