package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// seedStats loads the table's stats as of the head, to widen on append.
func (w *commitWriter) seedStats(ts *tableState) error {
	if ts.seeded {
		return nil
	}
	ts.seeded = true
	stored, err := w.r.fileTableStats(ts.t.ID)
	if err != nil {
		return err
	}
	ts.stats = &TableStats{
		RecordCount: stored.RecordCount, NextRowID: stored.NextRowID,
		FileSizeBytes: stored.FileSizeBytes, FileCount: stored.FileCount,
		Columns: map[int64]*TableColumnStats{},
	}
	ts.accs = map[int64]*colAcc{}
	for _, c := range ts.cols {
		acc := newColAcc(c.Type)
		if cs := stored.Columns[c.ID]; cs != nil && stored.FileCount > 0 {
			acc.seed(cs)
		}
		ts.accs[c.ID] = acc
	}
	return nil
}

// removalKeepsStats updates a table's stats for the files this commit
// removes without reading the files that stay, where the stats read alone
// prove that no removed file gave the table a bound or a flag that no
// surviving file gives it too: then every column's stats are the head's
// widened by the files added (as addFiles left them), and only the counts
// lose the removed files. It reads the removed files' stats, one row per
// file and column. Where that proof fails (a removed file held the
// table's minimum, or its only NULL as far as the stats say), or the
// removal is a large share of the table, it reports false and the caller
// folds every survivor again (recompute): the stored stats must be the
// exact fold of the live files', which readers and exports rely on.
func (w *commitWriter) removalKeepsStats(ts *tableState) (bool, error) {
	if ts.restamped || len(ts.synth) > 0 || !ts.seeded {
		return false, nil
	}
	head, err := w.r.fileTableStats(ts.t.ID)
	if err != nil {
		return false, err
	}
	removed := make([]int64, 0, len(ts.removed))
	for id := range ts.removed {
		removed = append(removed, id)
	}
	slices.Sort(removed)
	// More than a sixteenth of the table (every file gone among them): a
	// fold of the rest costs about as much as the reads below.
	if 16*int64(len(removed)) > head.FileCount {
		return false, nil
	}
	for _, id := range removed {
		if _, ok := ts.live[id]; !ok {
			return false, nil
		}
	}
	keys := make([][]byte, 0, len(removed)*len(ts.cols))
	for _, c := range ts.cols {
		if c.Type.Kind == types.KindGeometry || head.Columns[c.ID] == nil {
			return false, nil // an extent is a union: no bound to compare with
		}
		for _, id := range removed {
			keys = append(keys, key(tagFileColumnStats, ts.t.ID, c.ID, id))
		}
	}
	vals, err := w.getMany(keys)
	if err != nil {
		return false, err
	}
	var p catalogpb.ColumnStats
	for i, c := range ts.cols {
		table := head.Columns[c.ID]
		// What the files this commit adds give the column alone: what a
		// removed file gave the table may come from them too.
		added := newColAcc(c.Type)
		for _, af := range ts.added {
			if fc := af.fc[c.ID]; fc != nil {
				added.add(&fc.Stats)
			} else {
				added.add(nil)
			}
		}
		for j := range removed {
			st := &stats.Column{} // no stats row: all unknown, as the fold takes it
			if v := vals[i*len(removed)+j]; v != nil {
				s, err := decodeFileColumnStats(v, &p, c.ID, removed[j])
				if err != nil {
					return false, err
				}
				st = &s
			}
			if !unitLeavesTable(table, st, added.ordered, added) {
				return false, nil
			}
		}
	}
	removalsKept.Add(1)
	for _, id := range removed {
		f := ts.live[id]
		ts.stats.RecordCount -= f.RecordCount
		ts.stats.FileSizeBytes -= f.FileSizeBytes
		ts.stats.FileCount--
	}
	return true, nil
}

// removalsKept counts the removals removalKeepsStats settled, for tests.
var removalsKept atomic.Int64

// unitLeavesTable reports whether the table column stats table, a fold
// that includes the unit st, stay what they are when st leaves the fold
// and the units folded in added come in, as far as the stats tell. Each
// part of the fold is settled by one of: st gave nothing the table shows
// (a false flag; a flag unlike the table's, whose true or unknown then
// comes from another unit; a bound strictly inside the table's, whose
// extreme another unit holds with the exactness shown; a known bound where
// the table's is unknown), or the added units give the same to the result
// whatever the survivors hold (a true flag; a lower minimum; an equal one,
// exact or where the table's is not; an unknown bound). A type without an
// order keeps no bounds at table level, only whether any unit holds a
// value.
func unitLeavesTable(table *TableColumnStats, st *stats.Column, ordered bool, added *colAcc) bool {
	// The added units' fold, as flags and bounds (none added: no unit,
	// which makes no flag true and no bound).
	addNull, addNaN := stats.Known(false), stats.Known(false)
	if added.seen {
		addNull, addNaN = added.cs.ContainsNull, added.cs.ContainsNaN
	}
	flag := func(t, u, a stats.Maybe[bool]) bool {
		switch {
		case u.Known && !u.V, u != t:
			return true
		case u.Known: // the table's true may be st's alone
			return a == stats.Known(true)
		default: // the table's unknown may be st's alone
			return a != stats.Known(false)
		}
	}
	empty := stats.HoldsNoValue(st)
	nan := st.ContainsNaN
	if empty {
		nan = stats.Known(false) // as colAcc.add takes it
	}
	if !flag(table.ContainsNull, stats.ContainsNull(st), addNull) || !flag(table.ContainsNaN, nan, addNaN) {
		return false
	}
	if empty {
		return true // no bound of its own to give
	}
	if !ordered {
		return added.hasBounds
	}
	bound := func(t stats.Maybe[[]byte], tExact bool, u stats.Maybe[[]byte], a stats.Maybe[[]byte], aExact bool, want int) bool {
		if u.Known && (!t.Known || bytes.Compare(u.V, t.V)*want < 0) {
			return true
		}
		if !added.hasBounds {
			return false
		}
		if !a.Known {
			return true // the result is unknown either way
		}
		if !u.Known {
			return false // the table's unknown may be st's alone
		}
		// st holds the table's extreme: the added units must give it.
		switch c := bytes.Compare(a.V, t.V) * want; {
		case c > 0:
			return true
		case c == 0:
			return aExact || !tExact
		}
		return false
	}
	return bound(table.Min, table.MinIsExact, st.Min, added.cs.Min, added.cs.MinIsExact, stats.Lower) &&
		bound(table.Max, table.MaxIsExact, st.Max, added.cs.Max, added.cs.MaxIsExact, stats.Higher)
}

// getMany reads keys of the head in one round trip where the store can;
// a missing key is a nil value.
func (w *commitWriter) getMany(keys [][]byte) ([][]byte, error) {
	if mg, ok := w.r.kvs.(kv.MultiGetter); ok {
		return mg.GetMany(keys)
	}
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := w.r.kvs.Get(k)
		if errors.Is(err, kv.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// recompute rebuilds a table's stats exactly from the files that survive
// this commit: the head's live files less the removed ones, plus the added.
//
// The survivors come from the head's FileSet (ids and row counts in
// arrays) unless the commit has read every file row anyway (a drop, an
// alteration, a restamp): a removal of a tenth of ten million files held
// every survivor's row as a DataFile, twice, and went past 19 GB.
func (w *commitWriter) recompute(ts *tableState) error {
	st := &TableStats{Columns: map[int64]*TableColumnStats{}}
	var keep []int64 // the survivors' ids, sorted
	var survivors []DataFile
	// Where the head's FileSet was read from blocks, each column is folded
	// from its stats blocks, a key per block, instead of a stats row per
	// file (gone: the removed ids, sorted).
	var fs *FileSet
	var gone []int64
	if ts.loaded || len(ts.synth) > 0 {
		if err := w.loadFiles(ts); err != nil {
			return err
		}
		for id, f := range ts.live {
			if !ts.removed[id] {
				survivors = append(survivors, f)
				st.addFile(f)
				keep = append(keep, id)
			}
		}
		// Stats rows come in file id order: the survivors' ids, sorted,
		// are walked beside them (a map of millions of ids costs a cache
		// miss a row).
		slices.Sort(keep)
	} else {
		var err error
		if fs, gone, keep, err = w.survivorsOf(ts, st); err != nil {
			return err
		}
		if !fs.fromBlocks {
			fs = nil
		}
	}
	for _, af := range ts.added {
		st.addFile(af.f)
	}
	ts.accs = map[int64]*colAcc{}
	for _, c := range ts.cols {
		acc := newColAcc(c.Type)
		if made, ok := ts.synth[c.ID]; ok {
			for _, f := range survivors {
				acc.add(made[f.ID])
			}
			ts.accs[c.ID] = acc
			continue
		}
		folded := false
		if fs != nil && c.Type.Kind != types.KindGeometry {
			var err error
			if folded, err = w.foldStatsBlocks(fs, c.ID, gone, acc); err != nil {
				return err
			}
			if !folded {
				acc = newColAcc(c.Type) // the rows, from the start
			}
		}
		if !folded {
			var n int
			err := w.r.fileColumnStatsOf(ts.t.ID, c.ID, keep, func(_ int64, cs *stats.Column) error {
				acc.add(cs)
				n++
				return nil
			})
			if err != nil {
				return err
			}
			if n < len(keep) {
				acc.add(nil)
			}
		}
		for _, af := range ts.added {
			if fc := af.fc[c.ID]; fc != nil {
				acc.add(&fc.Stats)
			} else {
				acc.add(nil)
			}
		}
		ts.accs[c.ID] = acc
	}
	// Row ids keep counting up: a removed file's ids are never reused.
	st.NextRowID = max(st.NextRowID, ts.stats.NextRowID)
	ts.stats = st
	return nil
}

// survivorsOf returns the sorted ids of the head's live files that this
// commit does not remove, from the head's FileSet, and adds their counts
// to st. Every removed file is live at the head (removeFiles checked it),
// so the FileSet holds each of them.
func (w *commitWriter) survivorsOf(ts *tableState, st *TableStats) (fs *FileSet, gone, keep []int64, err error) {
	if fs, err = w.r.FileSet(ts.t.ID); err != nil {
		return nil, nil, nil, err
	}
	gone = make([]int64, 0, len(ts.removed))
	for id := range ts.removed {
		gone = append(gone, id)
	}
	slices.Sort(gone)
	keep = make([]int64, 0, max(fs.Len()-len(gone), 0))
	st.FileSizeBytes = fs.TotalBytes
	next := 0
	for i, id := range fs.IDs {
		if next < len(gone) && gone[next] == id {
			next++
			f, ok := ts.live[id]
			if !ok {
				return nil, nil, nil, fmt.Errorf("%w: removed file %d of table %q has no row in this commit", ErrCorrupt, id, ts.t.Name)
			}
			st.FileSizeBytes -= f.FileSizeBytes
			continue
		}
		keep = append(keep, id)
		st.RecordCount += fs.RecordCounts[i]
	}
	if next != len(gone) {
		return nil, nil, nil, fmt.Errorf("%w: table %q's file set at snapshot %d lacks %d of the files this commit removes", ErrCorrupt, ts.t.Name, w.head.ID, len(gone)-next)
	}
	st.FileCount = int64(len(keep))
	return fs, gone, keep, nil
}

// foldStatsBlocks folds into acc one column's stats of the files of fs
// that gone (sorted) does not name, from the column's stats blocks: what
// a stats row per file gives the fold, for a key per block. A block
// without a stats block has no stats of the column (a column added
// later). It reports false, having folded part of them, where a block's
// stats block does not match the FileSet's: another process's expiry
// rewrote the block since the FileSet was cached (expiry makes no
// snapshot, so the cache key did not change), which only drops files, so
// the count differs, or the block moved to the key of its new first file.
// The caller folds the rows instead.
func (w *commitWriter) foldStatsBlocks(fs *FileSet, col int64, gone []int64, acc *colAcc) (bool, error) {
	// In chunks of blocks: a block's stats are up to blockFiles files'.
	const chunk = 256
	keys := make([][]byte, 0, min(len(fs.blocks), chunk))
	var sb catalogpb.StatsBlock
	next := 0 // in gone
	for lo := 0; lo < len(fs.blocks); lo += chunk {
		blocks := fs.blocks[lo:min(lo+chunk, len(fs.blocks))]
		keys = keys[:0]
		for _, b := range blocks {
			keys = append(keys, key(tagStatsBlock, fs.table, col, b.first))
		}
		vals, err := w.getMany(keys)
		if err != nil {
			return false, err
		}
		for k := range blocks {
			blk := &blocks[k]
			var sv *statsView
			if vals[k] != nil {
				if err := decodeStatsBlockInPlace(vals[k], &sb); err != nil {
					return false, fmt.Errorf("stats block %x: %w", keys[k], err)
				}
				if sv, err = viewStats(&sb); err != nil {
					return false, fmt.Errorf("stats block %x: %w", keys[k], err)
				}
				if sv.n != blk.len() {
					return false, nil
				}
			} else if _, err := w.r.kvs.Get(key(tagFileBlock, fs.table, blk.first)); errors.Is(err, kv.ErrNotFound) {
				return false, nil // the block is gone, rewritten under another key
			} else if err != nil {
				return false, err
			}
			for j := range blk.len() {
				p := blk.at(j)
				if p < 0 {
					continue // not live at the head
				}
				id := fs.IDs[p]
				for next < len(gone) && gone[next] < id {
					next++
				}
				if next < len(gone) && gone[next] == id {
					continue
				}
				if sv == nil || sv.flag(j)&cbHasStats == 0 {
					acc.add(nil)
					continue
				}
				u := blockUnit(sv.flag(j), sv.rows.at(j), sv.nulls.at(j), sv.values.at(j), sv.min(j), sv.max(j))
				acc.add(&u)
			}
		}
	}
	return true, nil
}

// variants returns the table-level variant stats of a VARIANT column over
// the files that survive the commit.
func (w *commitWriter) variants(ts *tableState, col Column) ([]VariantStats, error) {
	if err := w.loadFiles(ts); err != nil {
		return nil, err
	}
	var lists [][]VariantStats
	for id := range ts.live {
		if ts.removed[id] {
			continue
		}
		vs, err := w.r.FileVariantStats(ts.t.ID, col.ID, id)
		if err != nil {
			return nil, err
		}
		lists = append(lists, vs)
	}
	for _, af := range ts.added {
		var vs []VariantStats
		if fc := af.fc[col.ID]; fc != nil {
			vs = fc.Variants
		}
		lists = append(lists, vs)
	}
	return mergeVariantLists(lists), nil
}

func (w *commitWriter) replaceTableVariants(tableID, colID int64, vs []VariantStats) error {
	err := scanPrefix(w.r, key(tagTableVariantStats, tableID, colID), func(k, _ []byte) error {
		return w.batch.Delete(append([]byte(nil), k...))
	})
	if err != nil {
		return err
	}
	for _, v := range vs {
		w.put(keyWithString(tagTableVariantStats, v.Path, tableID, colID), v.toPB())
	}
	return nil
}
