package catalog

import (
	"errors"
	"testing"
	"time"
)

// A renamed table keeps its files and statistics under the new name, is
// found under the old one at earlier snapshots, and survives expiry of the
// snapshots that knew the old name: an old name's ended row is not a drop.
func TestRenameTable(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	s2 := commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "a", 0, 9, 0), intFile(t, "b", 10, 19, 2)) })
	commit(t, c, func(tx *Txn) { tx.CreateTable("other", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	before := dump(t, c)
	for _, c2 := range []struct{ from, to string }{{"t", "other"}, {"nosuch", "u"}, {"t", " "}} {
		tx, _ := c.Begin()
		tx.RenameTable(c2.from, c2.to)
		if _, err := tx.Commit(); err == nil {
			t.Fatalf("rename %q to %q succeeded", c2.from, c2.to)
		}
	}
	if dump(t, c) != before {
		t.Fatal("a refused rename changed the store")
	}
	s4 := commit(t, c, func(tx *Txn) { tx.RenameTable("T", "u") })
	if s4.Changes.RenamedTables == nil {
		t.Fatal("the rename is not in the snapshot's changes")
	}
	check := func(snap int64, name string) {
		t.Helper()
		r, err := c.Read(snap)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		tb, err := r.Table(name)
		if err != nil {
			t.Fatalf("snapshot %d: %v", snap, err)
		}
		files, _ := r.Files(tb.ID)
		ts, _ := r.TableStats(tb.ID)
		if len(files) != 2 || ts.RecordCount != 22 {
			t.Fatalf("snapshot %d, table %s: %d files, %d records", snap, name, len(files), ts.RecordCount)
		}
	}
	check(s2.ID, "t")
	check(s4.ID, "u")
	r, _ := c.Read(Latest)
	if _, err := r.Table("t"); !errors.Is(err, ErrNoSuchTable) {
		t.Fatalf("the old name still resolves at the latest snapshot: %v", err)
	}
	r.Close()
	// A writer that began before the rename and names the old table fails.
	tx, _ := c.Begin()
	commit(t, c, func(tx *Txn) { tx.RenameTable("u", "v") })
	tx.AddFiles("u", intFile(t, "c", 20, 29, 0))
	if _, err := tx.Commit(); !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNoSuchTable) {
		t.Fatalf("adding to a table renamed since the transaction began: %v", err)
	}
	// Expire every snapshot but the newest: the table and all its files
	// stay, and the old names' rows go.
	if _, err := c.ExpireSnapshots(time.Now().Add(24*time.Hour), false); err != nil {
		t.Fatal(err)
	}
	check(Latest, "v")
	rows, err := allTableRows(c.store)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d table rows after expiry, want one per table", len(rows))
	}
}
