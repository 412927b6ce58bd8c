package catalog

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/membership"
)

// The membership index answers exactly what the files' own filters answer,
// file by file, at every snapshot, whatever the commits' sizes (so through
// every merge tier), with files removed between them; its slabs cover
// every file with a signature once, and no level holds a full fan-in of
// open slabs after a commit.
func TestMemberIndexEqualsFilters(t *testing.T) {
	c, err := CreateInStore(kvtest.Store(t), Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	commit(t, c, func(tx *Txn) {
		tx.CreateTable("t", []ColumnDef{{Name: "id", Type: "bigint"}, {Name: "k", Type: "bigint"}})
	})
	values := map[int64][]uint64{} // file id → its values
	sigOf := map[int64][]uint64{}  // file id → its signature, if it has one
	encOf := func(v uint64) []byte { return enc(t, "bigint", fmt.Sprint(v%1_000_000)) }
	var snaps []Snapshot
	var live []int64
	// Commit sizes: many one-file commits (every tier of merges), a few
	// mid-sized ones, one larger than a slab.
	sizes := []int{1200}
	for range 70 {
		sizes = append(sizes, 1)
	}
	sizes = append(sizes, 9, 30, 3, 1, 1, 200)
	nextPath := 0
	for step, n := range sizes {
		if step%11 == 10 && len(live) > 3 {
			gone := []int64{live[r.IntN(len(live))], live[r.IntN(len(live))]}
			if gone[0] == gone[1] {
				gone = gone[:1]
			}
			snaps = append(snaps, commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", gone...) }))
		}
		var nfs []NewFile
		var sets, sigs [][]uint64
		for range n {
			nextPath++
			nf := NewFile{Path: fmt.Sprintf("/d/%d", nextPath), RecordCount: 10, RowGroupCount: 1}
			distinct := []int{1, 5, 40, 300}[r.IntN(4)]
			var vs, hs []uint64
			for range distinct {
				v := r.Uint64N(1_000_000)
				vs = append(vs, v)
				hs = append(hs, membership.Hash(encOf(v)))
			}
			fc := FileColumn{Path: []string{"id"}}
			if r.IntN(10) > 0 { // some files have no filter at all
				data, d, err := membership.Build(hs)
				if err != nil {
					t.Fatal(err)
				}
				fc.Filter = &Filter{Kind: membership.Kind, Data: data, Distinct: int64(d)}
				if r.IntN(20) > 0 { // and some a filter without a signature (an older writer)
					fc.Filter.Signature = membership.BuildSignature(hs, membership.SignatureBlocks(d))
				}
			}
			nf.Columns = []FileColumn{fc}
			nfs = append(nfs, nf)
			if fc.Filter != nil {
				sigs = append(sigs, fc.Filter.Signature)
			} else {
				sigs = append(sigs, nil)
			}
			sets = append(sets, vs)
		}
		s := commit(t, c, func(tx *Txn) { tx.AddFiles("t", nfs...) })
		snaps = append(snaps, s)
		rd, _ := c.Read(s.ID)
		tb, _ := rd.Table("t")
		files, _ := rd.Files(tb.ID)
		live = live[:0]
		for _, f := range files {
			live = append(live, f.ID)
			for i, nf := range nfs {
				if nf.Path == f.Path {
					values[f.ID], sigOf[f.ID] = sets[i], sigs[i]
				}
			}
		}
		checkSlabShape(t, c, tb.ID)
		rd.Close()
	}
	var slabs, reads, bytes, confirmed int64
	for _, s := range snaps {
		rd, err := c.Read(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		tb, _ := rd.Table("t")
		cols, err := rd.Columns(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		col := cols[0].ID
		fs, err := rd.FileSet(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		fl, err := rd.Filters(tb.ID, col)
		if err != nil {
			t.Fatal(err)
		}
		mi, err := rd.MemberIndex(tb.ID, col)
		if err != nil || mi == nil {
			t.Fatalf("snapshot %d: index %v, %v", s.ID, mi, err)
		}
		// Values of some files of the snapshot, and random ones.
		var probes []uint64
		for range 10 {
			if vs := values[fs.IDs[r.IntN(fs.Len())]]; len(vs) > 0 {
				probes = append(probes, vs[r.IntN(len(vs))])
			}
			probes = append(probes, r.Uint64N(1_000_000))
		}
		for _, v := range probes {
			e := encOf(v)
			for i := range fs.Len() {
				// The index is the file's signature, then its filter: absent
				// when either rules the value out, never when the file holds it.
				id := fs.IDs[i]
				want := !fl.MayContain(i, e) || sigOf[id] != nil && !membership.SignatureMayContain(sigOf[id], membership.Hash(e))
				got := mi.Absent(i, e)
				if got != want {
					t.Fatalf("snapshot %d, file %d, value %d: index says absent=%v, the file's filter and signature %v", s.ID, id, v, got, want)
				}
				if got && slices.Contains(values[id], v) {
					t.Fatalf("snapshot %d: file %d holds %d but the index rules it out", s.ID, id, v)
				}
			}
		}
		st := mi.Stats()
		reads, bytes, confirmed = reads+st.Reads, bytes+st.Bytes, confirmed+st.Confirmed
		slabs++
		rd.Close()
	}
	t.Logf("%d snapshots probed 20 values each: %d reads, %d bytes, %d filters read to confirm", slabs, reads, bytes, confirmed)
}

// checkSlabShape checks the slab invariants of a table's column slabs: a
// file is in one slab; after a commit, no level of one signature length
// holds slabFanIn open (not full) slabs; every slab has its groups.
func checkSlabShape(t *testing.T, c *Catalog, tableID int64) {
	t.Helper()
	rd, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	seen := map[int64]bool{}
	open := map[[3]int64]int{}
	err = scanPrefix(rd, key(tagMemberSlab, tableID), func(k, v []byte) error {
		var p catalogpb.MembershipSlab
		if err := decodeValue(v, &p); err != nil {
			return err
		}
		col, _ := idAt(k, 1)
		level, _ := idAt(k, 2)
		first, _ := idAt(k, 3)
		if len(p.FileIds) == 0 || p.FileIds[0] != first || len(p.FileIds) > membership.MaxSlabFiles {
			return fmt.Errorf("slab %x: %d files, first %d", k, len(p.FileIds), first)
		}
		for _, id := range p.FileIds {
			if seen[id] {
				return fmt.Errorf("file %d in two slabs", id)
			}
			seen[id] = true
		}
		if len(p.FileIds) < membership.MaxSlabFiles {
			open[[3]int64{col, level, int64(p.Blocks)}]++
		}
		groups := 0
		if err := scanPrefix(rd, key(tagMemberGroup, tableID, col, level, first), func(_, _ []byte) error { groups++; return nil }); err != nil {
			return err
		}
		if groups != int(p.Groups) || groups != membership.Groups(len(p.FileIds), int(p.Blocks)) {
			return fmt.Errorf("slab %x: %d groups stored, header says %d", k, groups, p.Groups)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, n := range open {
		if n >= slabFanIn {
			t.Fatalf("column %d level %d (%d blocks): %d open slabs after a commit", k[0], k[1], k[2], n)
		}
	}
}

// expire deletes the slabs that name no file whose row stays, groups and
// all, and keeps every slab naming a live file: the index then answers
// for the live files exactly as before, none of them loose.
func TestExpireDeletesDeadSlabs(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) {
		tx.CreateTable("t", []ColumnDef{{Name: "id", Type: "bigint"}})
	})
	encOf := func(v int) []byte { return enc(t, "bigint", fmt.Sprint(v)) }
	path := 0
	batch := func(n int) []NewFile {
		var nfs []NewFile
		for range n {
			path++
			hs := []uint64{membership.Hash(encOf(path)), membership.Hash(encOf(path + 100000))}
			data, d, err := membership.Build(hs)
			if err != nil {
				t.Fatal(err)
			}
			f := &Filter{Kind: membership.Kind, Data: data, Distinct: int64(d), Signature: membership.BuildSignature(hs, membership.SignatureBlocks(d))}
			nfs = append(nfs, NewFile{Path: fmt.Sprintf("/d/%d", path), RecordCount: 2, RowGroupCount: 1,
				Columns: []FileColumn{{Path: []string{"id"}, Filter: f}}})
		}
		return nfs
	}
	// Three commits, a slab each (no merge below slabFanIn), then the
	// first two's files removed.
	var ids [][]int64
	for _, n := range []int{5, 7, 4} {
		s := commit(t, c, func(tx *Txn) { tx.AddFiles("t", batch(n)...) })
		rd, _ := c.Read(s.ID)
		tb, _ := rd.Table("t")
		files, _ := rd.Files(tb.ID)
		var added []int64
		for _, f := range files[len(files)-n:] {
			added = append(added, f.ID)
		}
		ids = append(ids, added)
		rd.Close()
	}
	commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", append(append([]int64{}, ids[0]...), ids[1][:6]...)...) })
	rd, _ := c.Read(Latest)
	tb, _ := rd.Table("t")
	rd.Close()
	slabCount := func() (slabs, groups int) {
		rd, _ := c.Read(Latest)
		defer rd.Close()
		scanPrefix(rd, key(tagMemberSlab, tb.ID), func(_, _ []byte) error { slabs++; return nil })
		scanPrefix(rd, key(tagMemberGroup, tb.ID), func(_, _ []byte) error { groups++; return nil })
		return slabs, groups
	}
	before, beforeGroups := slabCount()
	if before != 3 {
		t.Fatalf("%d slabs before expire, want 3 (one per commit)", before)
	}
	res, err := c.Expire(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), ExpireOptions{MinRetention: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesForgotten != 11 {
		t.Fatalf("expire forgot %d files, want 11", res.FilesForgotten)
	}
	after, afterGroups := slabCount()
	// The first commit's slab is dead; the second's keeps its live file.
	if after != 2 || afterGroups >= beforeGroups {
		t.Fatalf("after expire: %d slabs, %d groups (before %d, %d), want 2 slabs and fewer groups", after, afterGroups, before, beforeGroups)
	}
	checkSlabShape(t, c, tb.ID)
	rd, _ = c.Read(Latest)
	defer rd.Close()
	cols, _ := rd.Columns(tb.ID)
	fs, _ := rd.FileSet(tb.ID)
	mi, err := rd.MemberIndex(tb.ID, cols[0].ID)
	if err != nil || mi == nil {
		t.Fatalf("index %v, %v", mi, err)
	}
	if err := mi.Prepare(); err != nil {
		t.Fatal(err)
	}
	if len(mi.loose) != 0 {
		t.Fatalf("%d live files lost their slab", len(mi.loose))
	}
	fl, _ := rd.Filters(tb.ID, cols[0].ID)
	for v := 1; v <= path; v++ {
		for i := range fs.Len() {
			if got, want := mi.Absent(i, encOf(v)), !fl.MayContain(i, encOf(v)); got && !want {
				t.Fatalf("file %d, value %d: the index rules out what the filter keeps", fs.IDs[i], v)
			}
		}
	}
}
