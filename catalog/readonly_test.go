package catalog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/kv"
)

// dirState is what a read-only open must leave as it was: every file's
// name, size and modification time, but for LOCK, which every open takes
// (and the operating system's lock call truncates).
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if e.Name() == "LOCK" {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fmt.Sprint(fi.ModTime(), fi.Mode(), fi.Size())
	}
	return out
}

func sameState(t *testing.T, before, after map[string]string) {
	t.Helper()
	for name, st := range before {
		if after[name] != st {
			t.Errorf("%s changed: %q, then %q", name, st, after[name])
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s was created", name)
		}
	}
}

func TestReadOnlyOpenWritesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	c, err := Create(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "a", 0, 9, 0), intFile(t, "b", 5, 50, 1)) })
	// The commits are still only in the store's log: a reader must replay
	// it, in memory.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, dir)

	ro := Options{Pebble: kv.PebbleOptions{ReadOnly: true}}
	c, err = Open(dir, ro)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := r.Table("t")
	ts, err := r.TableStats(tb.ID)
	if err != nil || ts.RecordCount != 57 || r.Snapshot().ID != 2 {
		t.Fatalf("read-only: snapshot %d, %+v, %v", r.Snapshot().ID, ts, err)
	}
	r.Close()
	tx, err := c.Begin()
	if err == nil {
		tx.CreateTable("u", []ColumnDef{{Name: "x", Type: "bigint"}})
		_, err = tx.Commit()
	}
	if !errors.Is(err, kv.ErrReadOnly) {
		t.Fatalf("a commit on a read-only catalog: want ErrReadOnly, got %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	sameState(t, before, dirState(t, dir))

	// A catalog without a head record (made before it existed) opens
	// read-only without getting one.
	if err := os.Remove(filepath.Join(dir, HeadRecordFile)); err != nil {
		t.Fatal(err)
	}
	before = dirState(t, dir)
	if c, err = Open(dir, ro); err != nil {
		t.Fatal(err)
	}
	c.Close()
	sameState(t, before, dirState(t, dir))
}

// A reader refuses a store that lost acknowledged snapshots as a writer
// does, though it cannot repair the record.
func TestReadOnlyOpenRefusesLostSnapshot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	c, err := Create(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	c.Close()
	h, err := openHeadRecord(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.advance(7); err != nil {
		t.Fatal(err)
	}
	h.close()
	if _, err := Open(dir, Options{Pebble: kv.PebbleOptions{ReadOnly: true}}); !errors.Is(err, ErrLostSnapshot) {
		t.Fatalf("want ErrLostSnapshot, got %v", err)
	}
}
