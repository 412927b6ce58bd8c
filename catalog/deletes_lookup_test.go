package catalog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDeleteLookupsAgree runs random commits that record delete files,
// expect them, and retire files, on either side of peekLimit (a commit of
// a few files looks each up alone, one of many reads the table's), and
// checks every snapshot's delete files against a model: each live file's
// newest, none for a retired file; and that a commit whose Replaces is
// stale fails with ErrConflict and changes nothing.
func TestDeleteLookupsAgree(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	const nFiles = 12 * peekLimit
	var nfs []NewFile
	for i := range nFiles {
		nfs = append(nfs, intFile(t, fmt.Sprintf("/d/f%04d", i), int64(i*10), int64(i*10+9), 0))
	}
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", nfs...) })
	r, _ := c.Read(Latest)
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	r.Close()
	live := map[int64]DataFile{}
	for _, f := range files {
		live[f.ID] = f
	}
	type model struct{ id, count int64 } // the current delete file: its id, its count
	cur := map[int64]model{}
	check := func(step int) {
		t.Helper()
		r, err := c.Read(Latest)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		got, err := r.DeleteFiles(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(cur) {
			t.Fatalf("step %d: %d current delete files, the model has %d", step, len(got), len(cur))
		}
		for id, m := range cur {
			d, ok := got[id]
			if !ok || d.ID != m.id || d.DeleteCount != m.count {
				t.Fatalf("step %d: file %d: delete file %+v, the model's id %d count %d", step, id, d, m.id, m.count)
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 41))
	pick := func(n int) []int64 {
		var ids []int64
		for id := range live {
			ids = append(ids, id)
		}
		// Sorted first: a map's order is random, and the run must be
		// the seed's alone.
		slices.Sort(ids)
		rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		return ids[:min(n, len(ids))]
	}
	sizes := []int{1, 3, peekLimit, peekLimit + 1, 2 * peekLimit}
	for step := range 120 {
		if len(live) == 0 {
			break
		}
		set := pick(sizes[rng.IntN(len(sizes))])
		var gone []int64
		if rng.IntN(4) == 0 {
			// Retired with their delete files, some just recorded by
			// this very commit.
			gone = pick([]int{1, 2, 5, peekLimit + 1}[rng.IntN(4)])
			gone = append(gone[:len(gone)-1], set[:min(len(set), 3)]...)
			slices.Sort(gone)
			gone = slices.Compact(gone)
		}
		stale := rng.IntN(6) == 0
		tx, err := c.Begin()
		if err != nil {
			t.Fatal(err)
		}
		expect := map[int64]int64{}
		for _, id := range pick(sizes[rng.IntN(len(sizes))]) {
			expect[id] = cur[id].id
		}
		tx.ExpectDeletes("t", expect)
		var nds []NewDeleteFile
		for k, id := range set {
			m := cur[id]
			n := min(m.count+1, live[id].RecordCount)
			replaces := m.id
			if stale && k == len(set)/2 {
				replaces += 1000 // not the current one
			}
			nds = append(nds, NewDeleteFile{DataFileID: id, Path: fmt.Sprintf("/d/del-%d-%d.parquet", step, id), DeleteCount: n, FileSizeBytes: 10, Replaces: replaces})
		}
		tx.SetDeletes("t", nds...)
		if len(gone) > 0 {
			tx.RemoveFiles("t", gone...)
		}
		before := dump(t, c)
		s, err := tx.Commit()
		if stale {
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("step %d: a stale Replaces committed: %v", step, err)
			}
			if dump(t, c) != before {
				t.Fatalf("step %d: a failed commit changed the store", step)
			}
			check(step)
			continue
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		r, _ := c.Read(s.ID)
		now, err := r.DeleteFiles(tb.ID)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, nd := range nds {
			cur[nd.DataFileID] = model{id: now[nd.DataFileID].ID, count: nd.DeleteCount}
		}
		for _, id := range gone {
			delete(cur, id)
			delete(live, id)
		}
		check(step)
	}
	if len(cur) < peekLimit {
		t.Fatalf("only %d files ended with a delete file: the run did not reach the whole-table reads", len(cur))
	}
}
