package catalog

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/membership"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// In a commit of thousands of files every file's stats entries (stats,
// row groups, filter) land under that file's id, and a bad entry deep in
// it (a bound, a filter, a row group the file does not have) is refused
// with the error a commit of that file alone gives, naming it, with
// nothing committed.
func TestLargeCommitKeepsEachFilesEntries(t *testing.T) {
	n := 4400
	bigint := types.MustParseType("bigint")
	codec, _ := types.CodecFor(bigint)
	enc := func(x int64) []byte {
		b, err := codec.Encode(types.IntValue(x))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	unit := func(lo, hi int64) stats.Column {
		return stats.Column{Min: stats.Known(enc(lo)), Max: stats.Known(enc(hi)), NullCount: stats.Known[int64](0), ValueCount: stats.Known(hi - lo + 1)}
	}
	file := func(i int) NewFile {
		rgs := 1 + i%3
		a := FileColumn{Path: []string{"a"}, Stats: unit(int64(i)*10, int64(i)*10+int64(rgs)-1)}
		for j := range rgs {
			x := int64(i)*10 + int64(j)
			a.RowGroups = append(a.RowGroups, RowGroupStats{Index: int32(j), FirstRow: int64(j), Stats: unit(x, x)})
		}
		if i%5 == 0 {
			h := membership.Hash(enc(int64(i) * 10))
			data, d, err := membership.Build([]uint64{h})
			if err != nil {
				t.Fatal(err)
			}
			a.Filter = &Filter{Kind: membership.Kind, Data: data, Distinct: int64(d), Signature: membership.BuildSignature([]uint64{h}, membership.SignatureBlocks(d))}
		}
		return NewFile{Path: fmt.Sprintf("f%05d.parquet", i), RecordCount: int64(rgs), FileSizeBytes: 100, FooterSize: 10, RowGroupCount: int32(rgs),
			Columns: []FileColumn{a, {Path: []string{"b"}, Stats: unit(-int64(i), -int64(i))}}}
	}
	files := make([]NewFile, n)
	for i := range files {
		files[i] = file(i)
	}
	cols := []ColumnDef{{Name: "a", Type: "bigint"}, {Name: "b", Type: "bigint"}}

	// Bad entries in the second chunk: each refused as alone, naming its file.
	bad := map[string]func(nf *NewFile){
		"no such column": func(nf *NewFile) { nf.Columns[1].Path = []string{"c"} },
		"min > max":      func(nf *NewFile) { nf.Columns[1].Stats = unit(5, 4) },
		"row group":      func(nf *NewFile) { nf.Columns[0].RowGroups[0].Stats.Min = stats.Known([]byte{1}) },
		"filter":         func(nf *NewFile) { nf.Columns[0].Filter.Data = nf.Columns[0].Filter.Data[:19] },
		"twice":          func(nf *NewFile) { nf.Columns[1].Path = []string{"A"} },
		"row group index": func(nf *NewFile) {
			nf.Columns[0].RowGroups[len(nf.Columns[0].RowGroups)-1].Index = nf.RowGroupCount
		},
		"negative row group index": func(nf *NewFile) { nf.Columns[0].RowGroups[0].Index = -1 },
	}
	for name, damage := range bad {
		at := 2050 // i%5 == 0: it has a filter
		one := file(at)
		damage(&one)
		alone := newMemCatalog(t)
		commit(t, alone, func(tx *Txn) { tx.CreateTable("t", cols) })
		tx, _ := alone.Begin()
		tx.AddFiles("t", one)
		_, want := tx.Commit()
		if want == nil || !strings.Contains(want.Error(), one.Path) {
			t.Fatalf("%s: the file alone: %v", name, want)
		}
		many := append([]NewFile(nil), files...)
		many[at] = one
		c := newMemCatalog(t)
		head := commit(t, c, func(tx *Txn) { tx.CreateTable("t", cols) })
		tx, _ = c.Begin()
		tx.AddFiles("t", many...)
		if _, err := tx.Commit(); err == nil || err.Error() != want.Error() {
			t.Errorf("%s: among %d files: %v; alone: %v", name, n, err, want)
		}
		if ss, err := c.Snapshots(); err != nil || ss[len(ss)-1].ID != head.ID {
			t.Errorf("%s: a refused commit made a snapshot (%v)", name, err)
		}
	}

	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", cols) })
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", files...) })
	r, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, _ := r.Table("t")
	tcols, _ := r.Columns(tb.ID)
	fs, err := r.Files(tb.ID)
	if err != nil || len(fs) != n {
		t.Fatalf("%d files, %v", len(fs), err)
	}
	index := map[int64]int{}
	for _, f := range fs {
		var i int
		if _, err := fmt.Sscanf(f.Path, "f%05d.parquet", &i); err != nil {
			t.Fatal(err)
		}
		index[f.ID] = i
	}
	lo := func(st *stats.Column) int64 {
		v, err := codec.Decode(st.Min.V)
		if err != nil {
			t.Fatal(err)
		}
		return v.Int64()
	}
	for _, col := range tcols {
		seen := 0
		err := r.FileColumnStats(tb.ID, col.ID, func(id int64, st *stats.Column) error {
			seen++
			i := int64(index[id])
			if want := map[string]int64{"a": i * 10, "b": -i}[col.Name]; lo(st) != want {
				return fmt.Errorf("file %d (f%05d) column %s: min %d, want %d", id, i, col.Name, lo(st), want)
			}
			return nil
		})
		if err != nil || seen != n {
			t.Fatalf("column %s: %d files' stats, %v", col.Name, seen, err)
		}
	}
	a := tcols[0]
	for _, f := range fs {
		i := index[f.ID]
		rgs, err := r.RowGroupStats(tb.ID, a.ID, f.ID)
		if err != nil || len(rgs) != 1+i%3 {
			t.Fatalf("f%05d: %d row groups, %v", i, len(rgs), err)
		}
		for j, rg := range rgs {
			if got := lo(&rg.Stats); got != int64(i)*10+int64(j) {
				t.Fatalf("f%05d row group %d: min %d", i, j, got)
			}
		}
		v, err := r.kvs.Get(key(tagFileFilter, tb.ID, a.ID, f.ID))
		if i%5 != 0 {
			if err == nil {
				t.Fatalf("f%05d has a filter it was not given", i)
			}
			continue
		}
		var p catalogpb.MembershipFilter
		if err != nil || decodeValue(v, &p) != nil {
			t.Fatalf("f%05d: filter %v", i, err)
		}
		fl, err := membership.Decode(p.Data)
		if err != nil || !fl.MayContain(enc(int64(i)*10)) {
			t.Fatalf("f%05d: its filter does not hold its value (%v)", i, err)
		}
	}

	// On Pebble, filters and slabs are encoded into the batch in place
	// (kv.InPlaceSetter): the same commits leave the same bytes as the
	// memory store's copies.
	ps, err := kv.OpenPebble(t.TempDir(), kv.PebbleOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	pc, err := CreateInStore(ps, Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, pc, func(tx *Txn) { tx.CreateTable("t", cols) })
	commit(t, pc, func(tx *Txn) { tx.AddFiles("t", files...) })
	for _, tag := range []byte{tagFileColumnStats, tagFileFilter, tagMemberSlab, tagMemberGroup} {
		seen := 0
		err := scanRange(r.kvs, []byte{tag}, func(k, v []byte) error {
			seen++
			got, err := ps.Get(k)
			if err != nil || !bytes.Equal(got, v) {
				return fmt.Errorf("key %x: %d bytes on Pebble (%v), %d in memory", k, len(got), err, len(v))
			}
			return nil
		})
		if err != nil || seen == 0 {
			t.Fatalf("tag %#x: %d keys compared, %v", tag, seen, err)
		}
	}
}
