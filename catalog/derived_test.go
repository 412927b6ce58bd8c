package catalog

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// CheckDerived finds each kind of divergence between what plans read and
// the rows: a file's stats row and its stats block, a file's row and its
// file block, a file row gone from under its block, and the table's
// stats against the fold of its files. Each is made by rewriting one
// stored row behind the catalog's back; a catalog opened afresh (no
// cache) must report it, naming the file, and must report nothing once
// the row is put back. (BlocksEqualRows checks that histories of real
// commits and expiries report nothing.)
func TestCheckDerivedFindsDivergence(t *testing.T) {
	store := kvtest.Store(t)
	c, err := CreateInStore(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	threeBlocks(t, c)
	commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", 3) }) // a block with a gap
	r, _ := c.Read(Latest)
	tb, _ := r.Table("t")
	fs, _ := r.FileSet(tb.ID)
	ids := slices.Clone(fs.IDs)
	second := fs.blocks[1].first // a block of four files, with a summary
	secondStart, _ := fs.BlockFiles(1)
	colList, _ := r.Columns(tb.ID)
	r.Close()
	x := colList[0].ID

	check := func() []DerivedProblem {
		t.Helper()
		fresh, err := OpenStore(store, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Not closed: closing a catalog closes its store.
		r, err := fresh.Read(Latest)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		probs, err := r.CheckDerived(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		return probs
	}
	if probs := check(); len(probs) > 0 {
		t.Fatalf("a consistent catalog: %v", probs)
	}
	rewrite := func(k []byte, m proto.Message, change func()) (undo func()) {
		t.Helper()
		raw, err := store.Get(k)
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeValue(raw, m); err != nil {
			t.Fatal(err)
		}
		b := store.NewBatch()
		if change == nil {
			err = b.Delete(k)
		} else {
			change()
			v, err2 := encodeValue(m)
			if err2 != nil {
				t.Fatal(err2)
			}
			err = b.Set(k, v)
		}
		if err != nil || b.Commit() != nil {
			t.Fatal(err)
		}
		return func() {
			b := store.NewBatch()
			if err := b.Set(k, raw); err != nil || b.Commit() != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		file   int64
		want   string
		break_ func() (undo func())
	}{
		{"a stats row's minimum", ids[5], "column x", func() func() {
			var p catalogpb.ColumnStats
			return rewrite(key(tagFileColumnStats, tb.ID, x, ids[5]), &p, func() { p.Min = enc(t, "bigint", "-7") })
		}},
		{"a file row's record count", ids[2], "rows", func() func() {
			var p catalogpb.DataFile
			return rewrite(key(tagDataFile, tb.ID, ids[2]), &p, func() { p.RecordCount = 11 })
		}},
		{"a file row gone", ids[7], "no live row", func() func() {
			var p catalogpb.DataFile
			return rewrite(key(tagDataFile, tb.ID, ids[7]), &p, nil)
		}},
		{"a block summary's maximum", ids[secondStart], "block summary", func() func() {
			var p catalogpb.ColumnStats
			return rewrite(key(tagBlockSummary, tb.ID, x, second), &p, func() { p.Max = enc(t, "bigint", "-100") })
		}},
		{"a block summary's NULL count", ids[secondStart+1], "NULLs", func() func() {
			var p catalogpb.ColumnStats
			s := colList[1].ID
			return rewrite(key(tagBlockSummary, tb.ID, s, second), &p, func() { zero := int64(0); p.NullCount = &zero })
		}},
		{"the table's maximum", 0, "table stats", func() func() {
			var p catalogpb.TableColumnStats
			return rewrite(key(tagTableColumnStats, tb.ID, x), &p, func() { p.Max = enc(t, "bigint", "5") })
		}},
	} {
		undo := tc.break_()
		probs := check()
		found := false
		for _, p := range probs {
			found = found || p.FileID == tc.file && strings.Contains(p.What, tc.want)
		}
		if !found {
			t.Errorf("%s: found %v, want a problem of file %d about %q", tc.name, probs, tc.file, tc.want)
		}
		undo()
		if probs := check(); len(probs) > 0 {
			t.Fatalf("%s put back: %v", tc.name, probs)
		}
	}
}
