package catalog

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"rocklake/catalog/catalogpb"
	"rocklake/kv"
	"rocklake/stats"
)

// File blocks: a plan's file list and one column's bounds, read as a few
// column-major values instead of one row per file.
//
// Planning reads every live file of a table and, per predicate column,
// every file's stats. From per-file rows (06 and 09) that is one key and
// one protobuf message per file and column: at a million files, about a
// second before any predicate is evaluated. Beside those rows (which stay
// the record every other reader uses), a commit writes what it adds in
// blocks:
//
//	14 table first          FileBlock     the commit's new files of the table: begin
//	                                      snapshot; ids, record counts, row groups, sizes
//	15 table column first   StatsBlock    the column's stats of those files, aligned
//	16 table end            RemovedFiles  the ids a commit removed (end = its snapshot)
//	17 table                FileBlocks    present: every file of the table is in a block
//
// first is the block's smallest file id; a commit's files of one table get
// consecutive ids, so blocks in key order are files in id order. The files
// visible at snapshot s are those of the blocks with begin ≤ s, less the
// ids of removal records with end ≤ s: exactly the rows with begin ≤ s <
// end. A table gets the marker (17) when it is created, so a table made
// before blocks existed keeps being read from its rows; a table with the
// marker is never read from rows by a planner.
//
// Expiry forgets files whose end is at or before the oldest kept snapshot:
// it deletes their removal records and rewrites the blocks that hold them
// without them, in the same batch as the rows it deletes.
//
// A FileSet built from blocks holds no DataFile rows: FileAt reads a file's
// row when a plan keeps it (and keeps it for the next reader).

// blockFiles is the most files one block holds: a commit of more writes
// several.
const blockFiles = 16384

// hasBlocks says whether the table's files are all in blocks.
func (w *commitWriter) hasBlocks(ts *tableState) (bool, error) {
	if ts.created {
		return true, nil
	}
	if ts.blocksKnown {
		return ts.blocks, nil
	}
	_, err := w.get(key(tagBlocksMarker, ts.t.ID))
	switch {
	case errors.Is(err, kv.ErrNotFound):
		ts.blocksKnown = true
	case err != nil:
		return false, err
	default:
		ts.blocks, ts.blocksKnown = true, true
	}
	return ts.blocks, nil
}

// writeBlocks writes the blocks of a commit's changes to a table.
func (w *commitWriter) writeBlocks(ts *tableState) error {
	if ts.created {
		w.put(key(tagBlocksMarker, ts.t.ID), &catalogpb.FileBlocks{})
	}
	if len(ts.added) == 0 && len(ts.removed) == 0 {
		return w.writeErr
	}
	if ok, err := w.hasBlocks(ts); err != nil || !ok {
		return err
	}
	if len(ts.removed) > 0 {
		ids := make([]int64, 0, len(ts.removed))
		for id := range ts.removed {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		w.put(key(tagRemovedFiles, ts.t.ID, w.next.ID), &catalogpb.RemovedFiles{Ids: ids})
	}
	for lo := 0; lo < len(ts.added); lo += blockFiles {
		files := ts.added[lo:min(lo+blockFiles, len(ts.added))]
		fb := &catalogpb.FileBlock{BeginSnapshot: w.next.ID}
		for _, af := range files {
			f := af.f
			fb.Ids = append(fb.Ids, f.ID)
			fb.RecordCounts = append(fb.RecordCounts, f.RecordCount)
			fb.RowGroupCounts = append(fb.RowGroupCounts, f.RowGroupCount)
			fb.Sizes = append(fb.Sizes, f.FileSizeBytes)
		}
		first := files[0].f.ID
		w.put(key(tagFileBlock, ts.t.ID, first), fb)
		for _, c := range ts.cols {
			var sb *catalogpb.StatsBlock
			for j, af := range files {
				fc := af.fc[c.ID]
				if fc == nil {
					continue
				}
				if sb == nil {
					sb = &catalogpb.StatsBlock{Flags: make([]uint32, len(files)), NullCounts: make([]int64, len(files)),
						ValueCounts: make([]int64, len(files)), RowCounts: make([]int64, len(files)),
						MinLengths: make([]uint32, len(files)), MaxLengths: make([]uint32, len(files))}
				}
				st := &fc.Stats
				sb.Flags[j] = uint32(statsFlags(st))
				sb.NullCounts[j], sb.ValueCounts[j], sb.RowCounts[j] = st.NullCount.V, st.ValueCount.V, st.RowCount
				if st.Min.Known {
					sb.Mins, sb.MinLengths[j] = append(sb.Mins, st.Min.V...), uint32(len(st.Min.V))
				}
				if st.Max.Known {
					sb.Maxs, sb.MaxLengths[j] = append(sb.Maxs, st.Max.V...), uint32(len(st.Max.V))
				}
			}
			if sb != nil {
				w.put(key(tagStatsBlock, ts.t.ID, c.ID, first), sb)
			}
		}
	}
	return w.writeErr
}

// statsFlags is the planner's flags of a file's stats for a column.
func statsFlags(st *stats.Column) uint16 {
	f := cbHasStats
	set := func(cond bool, bit uint16) {
		if cond {
			f |= bit
		}
	}
	set(st.Min.Known, cbHasMin)
	set(st.Max.Known, cbHasMax)
	set(st.MinIsExact, cbMinExact)
	set(st.MaxIsExact, cbMaxExact)
	set(st.NullCount.Known, cbHasNulls)
	set(st.ValueCount.Known, cbHasValues)
	set(st.ContainsNull.Known, cbHasContainsNull)
	set(st.ContainsNull.Known && st.ContainsNull.V, cbContainsNull)
	set(st.ContainsNaN.Known, cbHasContainsNaN)
	set(st.ContainsNaN.Known && st.ContainsNaN.V, cbContainsNaN)
	return f
}

// fsBlock is a block as a FileSet holds it: its first id, and the FileSet
// position of each of its files (-1: not visible).
type fsBlock struct {
	first int64
	pos   []int32
}

// readsBlocks says whether the table's files are all in blocks (the
// answer is the same at every snapshot the table is visible at: the marker
// is written when the table is created).
func (r *Reader) readsBlocks(tableID int64) (bool, error) {
	_, err := r.kvs.Get(key(tagBlocksMarker, tableID))
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// blocksFileSet builds the table's FileSet from its blocks, or extends
// base (built from blocks at an older state that this one only added files
// to): then only the blocks of files from base's next_file_id on are read.
func (r *Reader) blocksFileSet(tableID int64, base *FileSet) (*FileSet, error) {
	s := r.snap.ID
	fs := &FileSet{table: tableID, fromBlocks: true, built: built{snap: r.snap.ID, nextFileID: r.snap.NextFileID}}
	removed := map[int64]bool{}
	lower := key(tagFileBlock, tableID)
	if base != nil {
		fs.IDs, fs.RecordCounts = slices.Clone(base.IDs), slices.Clone(base.RecordCounts)
		fs.RowGroupCount, fs.SizeBytes = slices.Clone(base.RowGroupCount), slices.Clone(base.SizeBytes)
		fs.TotalRowGroups, fs.TotalBytes, fs.EmptyFiles = base.TotalRowGroups, base.TotalBytes, base.EmptyFiles
		fs.blocks = slices.Clone(base.blocks)
		lower = key(tagFileBlock, tableID, base.nextFileID)
	}
	var rf catalogpb.RemovedFiles
	upper := key(tagRemovedFiles, tableID, s+1)
	if base != nil {
		upper = key(tagRemovedFiles, tableID) // no removal since base
	}
	err := r.scan(key(tagRemovedFiles, tableID), upper, func(k, v []byte) error {
		rf.Reset()
		if err := decodeValue(v, &rf); err != nil {
			return fmt.Errorf("removed files %x: %w", k, err)
		}
		for _, id := range rf.Ids {
			removed[id] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var fb catalogpb.FileBlock
	err = r.scan(lower, kv.PrefixEnd(key(tagFileBlock, tableID)), func(k, v []byte) error {
		fb.Reset()
		if err := decodeValue(v, &fb); err != nil {
			return fmt.Errorf("file block %x: %w", k, err)
		}
		n := len(fb.Ids)
		if len(fb.RecordCounts) != n || len(fb.RowGroupCounts) != n || len(fb.Sizes) != n || n == 0 {
			return fmt.Errorf("%w: file block %x has arrays of %d, %d, %d and %d", ErrCorrupt, k, n, len(fb.RecordCounts), len(fb.RowGroupCounts), len(fb.Sizes))
		}
		if fb.BeginSnapshot > s {
			return nil
		}
		b := fsBlock{first: fb.Ids[0], pos: make([]int32, n)}
		for j, id := range fb.Ids {
			if removed[id] {
				b.pos[j] = -1
				continue
			}
			if k := len(fs.IDs); k > 0 && fs.IDs[k-1] >= id {
				return fmt.Errorf("%w: file block %x: file %d after %d", ErrCorrupt, k, id, fs.IDs[k-1])
			}
			b.pos[j] = int32(len(fs.IDs))
			rows, rgs, size := fb.RecordCounts[j], fb.RowGroupCounts[j], fb.Sizes[j]
			fs.IDs, fs.RecordCounts, fs.RowGroupCount, fs.SizeBytes = append(fs.IDs, id), append(fs.RecordCounts, rows), append(fs.RowGroupCount, rgs), append(fs.SizeBytes, size)
			fs.TotalRowGroups += int64(rgs)
			fs.TotalBytes += size
			if rows == 0 {
				fs.EmptyFiles++
			}
		}
		fs.blocks = append(fs.blocks, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	fs.files = make([]atomic.Pointer[DataFile], len(fs.IDs))
	if base != nil {
		for i := range base.files {
			fs.files[i].Store(base.files[i].Load())
		}
	}
	return fs, nil
}

// blocksColumnBounds fills cb (sized to fs) from the column's stats
// blocks of files from id from on.
func (r *Reader) blocksColumnBounds(fs *FileSet, tableID, columnID, from int64, cb *ColumnBounds, mins, maxs [][]byte) error {
	var sb catalogpb.StatsBlock
	prefix := key(tagStatsBlock, tableID, columnID)
	return r.scan(key(tagStatsBlock, tableID, columnID, from), kv.PrefixEnd(prefix), func(k, v []byte) error {
		first, err := idAt(k, 2)
		if err != nil {
			return err
		}
		bi, ok := slices.BinarySearchFunc(fs.blocks, first, func(b fsBlock, id int64) int {
			switch {
			case b.first < id:
				return -1
			case b.first > id:
				return 1
			}
			return 0
		})
		if !ok {
			return nil // a block the snapshot does not see
		}
		sb.Reset()
		if err := decodeValue(v, &sb); err != nil {
			return fmt.Errorf("stats block %x: %w", k, err)
		}
		pos := fs.blocks[bi].pos
		n := len(pos)
		if len(sb.Flags) != n || len(sb.NullCounts) != n || len(sb.ValueCounts) != n || len(sb.RowCounts) != n ||
			len(sb.MinLengths) != n || len(sb.MaxLengths) != n {
			return fmt.Errorf("%w: stats block %x does not have %d files", ErrCorrupt, k, n)
		}
		var mo, xo int
		for j, p := range pos {
			f := uint16(sb.Flags[j])
			ml, xl := int(sb.MinLengths[j]), int(sb.MaxLengths[j])
			if mo+ml > len(sb.Mins) || xo+xl > len(sb.Maxs) {
				return fmt.Errorf("%w: stats block %x: bounds past the end", ErrCorrupt, k)
			}
			min, max := sb.Mins[mo:mo+ml:mo+ml], sb.Maxs[xo:xo+xl:xo+xl]
			mo, xo = mo+ml, xo+xl
			if p < 0 || f&cbHasStats == 0 {
				continue
			}
			i := int(p)
			cb.flags[i], cb.nulls[i], cb.values[i], cb.rows[i] = f, sb.NullCounts[j], sb.ValueCounts[j], sb.RowCounts[j]
			if f&cbHasMin != 0 {
				mins[i] = min
			}
			if f&cbHasMax != 0 {
				maxs[i] = max
			}
		}
		return nil
	})
}

// FileAt is file i of fs (a FileSet of this reader's catalog): its row,
// read on first use when fs was built from blocks.
func (r *Reader) FileAt(fs *FileSet, i int) (DataFile, error) {
	if p := fs.files[i].Load(); p != nil {
		return *p, nil
	}
	raw, err := r.kvs.Get(key(tagDataFile, fs.table, fs.IDs[i]))
	if err != nil {
		return DataFile{}, fmt.Errorf("data file %d of table %d: %w", fs.IDs[i], fs.table, err)
	}
	var p catalogpb.DataFile
	if err := decodeValue(raw, &p); err != nil {
		return DataFile{}, fmt.Errorf("data file %d of table %d: %w", fs.IDs[i], fs.table, err)
	}
	f := dataFileFromPB(&p)
	// The cached row serves every snapshot that sees the file: only its
	// end differs between them, and no FileSet reader looks at it.
	fs.files[i].Store(&f)
	return f, nil
}

// expireBlocks rewrites a table's blocks without the files expiry forgets
// (ids, whose removal records end at or before oldest) and deletes those
// records.
func expireBlocks(kvs kv.Reader, tableID int64, colIDs []int64, oldest int64, forgotten map[int64]bool,
	put func(k []byte, m *catalogpb.FileBlock) error, putStats func(k []byte, m *catalogpb.StatsBlock) error, del func(k []byte) error) error {
	if _, err := kvs.Get(key(tagBlocksMarker, tableID)); errors.Is(err, kv.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	err := scanBetween(kvs, key(tagRemovedFiles, tableID), key(tagRemovedFiles, tableID, oldest+1), func(k, _ []byte) error {
		return del(k)
	})
	if err != nil || len(forgotten) == 0 {
		return err
	}
	return scanRange(kvs, key(tagFileBlock, tableID), func(k, v []byte) error {
		var fb catalogpb.FileBlock
		if err := decodeValue(v, &fb); err != nil {
			return fmt.Errorf("file block %x: %w", k, err)
		}
		var keep []int
		for j, id := range fb.Ids {
			if !forgotten[id] {
				keep = append(keep, j)
			}
		}
		if len(keep) == len(fb.Ids) {
			return nil
		}
		// A rewritten block that keeps its first file keeps its key: it is
		// set, never deleted and set in one batch.
		first := fb.Ids[0]
		if len(keep) == 0 || fb.Ids[keep[0]] != first {
			if err := del(k); err != nil {
				return err
			}
		}
		var nfb *catalogpb.FileBlock
		if len(keep) > 0 {
			nfb = &catalogpb.FileBlock{BeginSnapshot: fb.BeginSnapshot}
			for _, j := range keep {
				nfb.Ids = append(nfb.Ids, fb.Ids[j])
				nfb.RecordCounts = append(nfb.RecordCounts, fb.RecordCounts[j])
				nfb.RowGroupCounts = append(nfb.RowGroupCounts, fb.RowGroupCounts[j])
				nfb.Sizes = append(nfb.Sizes, fb.Sizes[j])
			}
			if err := put(key(tagFileBlock, tableID, nfb.Ids[0]), nfb); err != nil {
				return err
			}
		}
		for _, col := range colIDs {
			sk := key(tagStatsBlock, tableID, col, first)
			raw, err := kvs.Get(sk)
			if errors.Is(err, kv.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			var sb catalogpb.StatsBlock
			if err := decodeValue(raw, &sb); err != nil {
				return fmt.Errorf("stats block %x: %w", sk, err)
			}
			if nfb == nil || nfb.Ids[0] != first {
				if err := del(sk); err != nil {
					return err
				}
			}
			if nfb == nil {
				continue
			}
			if len(sb.Flags) != len(fb.Ids) {
				return fmt.Errorf("%w: stats block %x does not have %d files", ErrCorrupt, sk, len(fb.Ids))
			}
			nsb := &catalogpb.StatsBlock{}
			var mo, xo int
			offs := make([][2]int, len(fb.Ids))
			for j := range fb.Ids {
				offs[j] = [2]int{mo, xo}
				mo, xo = mo+int(sb.MinLengths[j]), xo+int(sb.MaxLengths[j])
			}
			if mo > len(sb.Mins) || xo > len(sb.Maxs) {
				return fmt.Errorf("%w: stats block %x: bounds past the end", ErrCorrupt, sk)
			}
			for _, j := range keep {
				nsb.Flags = append(nsb.Flags, sb.Flags[j])
				nsb.NullCounts = append(nsb.NullCounts, sb.NullCounts[j])
				nsb.ValueCounts = append(nsb.ValueCounts, sb.ValueCounts[j])
				nsb.RowCounts = append(nsb.RowCounts, sb.RowCounts[j])
				nsb.MinLengths = append(nsb.MinLengths, sb.MinLengths[j])
				nsb.MaxLengths = append(nsb.MaxLengths, sb.MaxLengths[j])
				nsb.Mins = append(nsb.Mins, sb.Mins[offs[j][0]:offs[j][0]+int(sb.MinLengths[j])]...)
				nsb.Maxs = append(nsb.Maxs, sb.Maxs[offs[j][1]:offs[j][1]+int(sb.MaxLengths[j])]...)
			}
			if err := putStats(key(tagStatsBlock, tableID, col, nfb.Ids[0]), nsb); err != nil {
				return err
			}
		}
		return nil
	})
}

// prefetchScan is the share of a table's files beyond which PrefetchFiles
// reads every row in one scan instead of asking for each.
const prefetchScan = 16

// PrefetchFiles reads the rows of fs's files at the given positions that
// no reader has read yet, in as few round trips as the store allows (one
// range scan when they are many), so that FileAt then finds them.
func (r *Reader) PrefetchFiles(fs *FileSet, positions []int) error {
	var missing []int
	for _, i := range positions {
		if fs.files[i].Load() == nil {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	store := func(i int, raw []byte) error {
		var p catalogpb.DataFile
		if err := decodeValue(raw, &p); err != nil {
			return fmt.Errorf("data file %d of table %d: %w", fs.IDs[i], fs.table, err)
		}
		f := dataFileFromPB(&p)
		fs.files[i].Store(&f)
		return nil
	}
	if len(missing) > 256 && len(missing)*prefetchScan > fs.Len() {
		return scanAligned(r, fs, key(tagDataFile, fs.table), 0, func(i int, _ int64, v []byte) error {
			if fs.files[i].Load() != nil {
				return nil
			}
			return store(i, v)
		})
	}
	keys := make([][]byte, len(missing))
	for k, i := range missing {
		keys[k] = key(tagDataFile, fs.table, fs.IDs[i])
	}
	var vals [][]byte
	if mg, ok := r.kvs.(kv.MultiGetter); ok {
		var err error
		if vals, err = mg.GetMany(keys); err != nil {
			return err
		}
	} else {
		vals = make([][]byte, len(keys))
		for k := range keys {
			v, err := r.kvs.Get(keys[k])
			if err != nil && !errors.Is(err, kv.ErrNotFound) {
				return err
			}
			vals[k] = v
		}
	}
	for k, i := range missing {
		if vals[k] == nil {
			return fmt.Errorf("data file %d of table %d: %w", fs.IDs[i], fs.table, kv.ErrNotFound)
		}
		if err := store(i, vals[k]); err != nil {
			return err
		}
	}
	return nil
}
