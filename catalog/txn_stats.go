package catalog

import (
	"slices"

	"github.com/rocklake/rocklake/stats"
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

// recompute rebuilds a table's stats exactly from the files that survive
// this commit: the head's live files less the removed ones, plus the added.
func (w *commitWriter) recompute(ts *tableState) error {
	if err := w.loadFiles(ts); err != nil {
		return err
	}
	st := &TableStats{Columns: map[int64]*TableColumnStats{}}
	var survivors []DataFile
	for id, f := range ts.live {
		if !ts.removed[id] {
			survivors = append(survivors, f)
			st.addFile(f)
		}
	}
	for _, af := range ts.added {
		st.addFile(af.f)
	}
	// Stats rows come in file id order: the survivors' ids, sorted, are
	// walked beside them (a map of millions of ids costs a cache miss a
	// row).
	keep := make([]int64, len(survivors))
	for i, f := range survivors {
		keep[i] = f.ID
	}
	slices.Sort(keep)
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
		var n int
		err := w.r.fileColumnStatsOf(ts.t.ID, c.ID, keep, func(_ int64, cs *stats.Column) error {
			acc.add(cs)
			n++
			return nil
		})
		if err != nil {
			return err
		}
		if n < len(survivors) {
			acc.add(nil)
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
