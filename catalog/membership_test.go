package catalog

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

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
