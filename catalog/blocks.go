package catalog

import (
	"errors"
	"fmt"
	"slices"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/internal/hugemem"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/stats"
	"google.golang.org/protobuf/proto"
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
// it rewrites the blocks that hold them without them, then deletes their
// rows, then their removal records, possibly over several commits
// (expirewrites.go).
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
		n := len(files)
		fb := &fileBlock{begin: w.next.ID, ids: make([]int64, n), rows: make([]int64, n), rgs: make([]int64, n), sizes: make([]int64, n)}
		for j, af := range files {
			f := af.f
			fb.ids[j], fb.rows[j], fb.rgs[j], fb.sizes[j] = f.ID, f.RecordCount, int64(f.RowGroupCount), f.FileSizeBytes
		}
		first := files[0].f.ID
		w.put(key(tagFileBlock, ts.t.ID, first), fb.encode())
		for _, c := range ts.cols {
			var sb *statsBlock
			for j, af := range files {
				fc := af.fc[c.ID]
				switch {
				case fc == nil && sb == nil:
				case fc == nil:
					sb.add(nil)
				default:
					if sb == nil {
						sb = &statsBlock{}
						for range j {
							sb.add(nil)
						}
					}
					sb.add(&fc.Stats)
				}
			}
			if sb != nil {
				w.putStatsBlock(ts.t.ID, c.ID, first, sb, true)
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
// position of each of its files: start+j for file j when the snapshot sees
// all of them (pos nil, the common block), else pos[j] (-1: not visible).
type fsBlock struct {
	first int64
	start int32
	n     int32
	pos   []int32
}

func (b *fsBlock) len() int { return int(b.n) }

// blockOf is the index in s.blocks of the block whose first file is first.
func (s *FileSet) blockOf(first int64) (int, bool) {
	return slices.BinarySearchFunc(s.blocks, first, func(b fsBlock, id int64) int {
		switch {
		case b.first < id:
			return -1
		case b.first > id:
			return 1
		}
		return 0
	})
}

func (b *fsBlock) at(j int) int32 {
	if b.pos == nil {
		return b.start + int32(j)
	}
	return b.pos[j]
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
	// Decode the visible blocks first, then size the arrays once.
	var blocks []fileBlockView
	total := 0
	if base != nil {
		total = len(base.IDs)
	}
	err = r.scan(lower, kv.PrefixEnd(key(tagFileBlock, tableID)), func(k, v []byte) error {
		fb := &catalogpb.FileBlock{}
		if err := decodeValue(v, fb); err != nil {
			return fmt.Errorf("file block %x: %w", k, err)
		}
		bv, err := viewFileBlock(fb)
		if err != nil {
			return fmt.Errorf("file block %x: %w", k, err)
		}
		if fb.BeginSnapshot <= s {
			blocks, total = append(blocks, bv), total+bv.n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The arrays are sized once, fresh (hugemem: a new process's plan of
	// millions of files spends most of its time faulting them in).
	fs.IDs, fs.RecordCounts, fs.RowGroupCount = hugemem.Slice[int64](total), hugemem.Slice[int64](total), hugemem.Slice[int32](total)
	if base != nil {
		fs.IDs, fs.RecordCounts = append(fs.IDs, base.IDs...), append(fs.RecordCounts, base.RecordCounts...)
		fs.RowGroupCount = append(fs.RowGroupCount, base.RowGroupCount...)
	}
	for _, bv := range blocks {
		n := bv.n
		b := fsBlock{first: bv.ids.at(0), start: int32(len(fs.IDs)), n: int32(n)}
		if len(removed) == 0 {
			// Every file of the block is visible: its arrays are appended
			// whole, then checked in order.
			start := len(fs.IDs)
			fs.IDs = bv.ids.appendTo(fs.IDs, n)
			for k := max(start, 1); k < len(fs.IDs); k++ {
				if fs.IDs[k-1] >= fs.IDs[k] {
					return nil, fmt.Errorf("%w: file blocks of table %d: file %d after %d", ErrCorrupt, tableID, fs.IDs[k], fs.IDs[k-1])
				}
			}
			fs.RecordCounts = bv.rows.appendTo(fs.RecordCounts, n)
			for _, rows := range fs.RecordCounts[start:] {
				if rows == 0 {
					fs.EmptyFiles++
				}
			}
			for j := range n {
				rgs := int32(bv.rgs.at(j))
				fs.RowGroupCount = append(fs.RowGroupCount, rgs)
				fs.TotalRowGroups += int64(rgs)
				fs.TotalBytes += bv.sizes.at(j)
			}
			fs.blocks = append(fs.blocks, b)
			continue
		}
		for j := range n {
			id := bv.ids.at(j)
			if len(removed) > 0 && removed[id] {
				if b.pos == nil {
					b.pos = make([]int32, n)
					for k := range j {
						b.pos[k] = b.start + int32(k)
					}
				}
				b.pos[j] = -1
				continue
			}
			if k := len(fs.IDs); k > 0 && fs.IDs[k-1] >= id {
				return nil, fmt.Errorf("%w: file blocks of table %d: file %d after %d", ErrCorrupt, tableID, id, fs.IDs[k-1])
			}
			if b.pos != nil {
				b.pos[j] = int32(len(fs.IDs))
			}
			rows, rgs, size := bv.rows.at(j), int32(bv.rgs.at(j)), bv.sizes.at(j)
			fs.IDs, fs.RecordCounts, fs.RowGroupCount = append(fs.IDs, id), append(fs.RecordCounts, rows), append(fs.RowGroupCount, rgs)
			fs.TotalRowGroups += int64(rgs)
			fs.TotalBytes += size
			if rows == 0 {
				fs.EmptyFiles++
			}
		}
		fs.blocks = append(fs.blocks, b)
	}
	fs.files = &fileRows{n: len(fs.IDs), max: r.c.plan.rowsKept(len(fs.IDs))}
	if base != nil {
		fs.files.copyFrom(base.files)
	}
	return fs, nil
}

// blocksColumnBounds fills cb (sized to fs; its first fresh files copied
// from base, built at an older state this one extends, or none) from the
// column's stats blocks of files from id from on, in one pass: each block
// is read in place from the store's value and its bounds copied straight
// into cb's packed arrays (boundBuilder), so nothing of a block outlives
// its visit.
func (r *Reader) blocksColumnBounds(fs *FileSet, tableID, columnID, from int64, fresh int, base *ColumnBounds, cb *ColumnBounds) error {
	n := len(cb.flags)
	mins := newBoundBuilder(n, func(i int) bool { return cb.flags[i]&cbHasMin != 0 })
	maxs := newBoundBuilder(n, func(i int) bool { return cb.flags[i]&cbHasMax != 0 })
	for i := range fresh {
		if b, ok := base.MinBound(i); ok {
			mins.set(i, b)
		}
		if b, ok := base.MaxBound(i); ok {
			maxs.set(i, b)
		}
	}
	var sb catalogpb.StatsBlock
	prefix := key(tagStatsBlock, tableID, columnID)
	err := r.scan(key(tagStatsBlock, tableID, columnID, from), kv.PrefixEnd(prefix), func(k, v []byte) error {
		first, err := idAt(k, 2)
		if err != nil {
			return err
		}
		bi, ok := fs.blockOf(first)
		if !ok {
			return nil // a block the snapshot does not see
		}
		return fillFromStatsBlock(k, v, &sb, &fs.blocks[bi], cb, mins, maxs, 0)
	})
	if err != nil {
		return err
	}
	if cb.min, err = mins.finish(); err != nil {
		return err
	}
	cb.max, err = maxs.finish()
	return err
}

// fillFromStatsBlock copies the stats of a block's files (blk, as its
// FileSet holds it) from the stored stats block k, v into cb: the file at
// FileSet position p goes to unit p+delta.
func fillFromStatsBlock(k, v []byte, sb *catalogpb.StatsBlock, blk *fsBlock, cb *ColumnBounds, mins, maxs *boundBuilder, delta int) error {
	if err := decodeStatsBlockInPlace(v, sb); err != nil {
		return fmt.Errorf("stats block %x: %w", k, err)
	}
	sv, err := viewStats(sb)
	if err != nil {
		return fmt.Errorf("stats block %x: %w", k, err)
	}
	if sv.n != blk.len() {
		// Expiry rewrote the block after this FileSet was read (by another
		// process: this one forgets what it cached when it expires): its
		// files are left without stats here, kept by every plan, until a
		// commit makes a new FileSet.
		return nil
	}
	// Counts start at 0 in any form, so a block without nulls (the
	// common one) need not set them.
	noNulls := sv.nulls.w == 0 && sv.nulls.base == 0
	for j := range sv.n {
		p := blk.at(j)
		f := sv.flag(j)
		if p < 0 || f&cbHasStats == 0 {
			continue
		}
		i := int(p) + delta
		cb.flags[i] = f
		if !noNulls {
			cb.nulls.set(i, sv.nulls.at(j))
		}
		cb.values.set(i, sv.values.at(j))
		cb.rows.set(i, sv.rows.at(j))
		if f&cbHasMin != 0 {
			mins.set(i, sv.min(j))
		}
		if f&cbHasMax != 0 {
			maxs.set(i, sv.max(j))
		}
	}
	return nil
}

// boundBuilder packs one side's bounds as they arrive in position order:
// fixed-width while every bound has the width of the first (and it is
// below 64 KiB), as packBounds would choose, switching once to
// concatenated bounds with offsets when one differs.
type boundBuilder struct {
	n    int
	has  func(i int) bool // whether position i holds a bound (set before set(i, …))
	w    int              // every bound's width so far; -1 before the first
	data []byte
	off  []uint64 // in the offsets form: positions below next are done
	next int
	err  error
}

func newBoundBuilder(n int, has func(int) bool) *boundBuilder {
	return &boundBuilder{n: n, has: has, w: -1}
}

func (b *boundBuilder) set(i int, v []byte) {
	if b.off == nil {
		switch {
		case b.w == -1 && len(v) < 1<<16:
			b.w, b.data = len(v), hugemem.Zeroed[byte](b.n*len(v))
			fallthrough
		case b.w == len(v):
			copy(b.data[i*b.w:], v)
			return
		}
		b.toOffsets(i)
	}
	if i < b.next {
		b.err = fmt.Errorf("catalog: bounds out of file order (file %d after %d)", i, b.next-1)
		return
	}
	for ; b.next < i; b.next++ {
		b.off[b.next+1] = b.off[b.next]
	}
	b.data = append(b.data, v...)
	b.off[i+1], b.next = uint64(len(b.data)), i+1
}

// toOffsets rewrites the fixed-width bounds of positions below upTo as
// concatenated bounds with offsets.
func (b *boundBuilder) toOffsets(upTo int) {
	b.off = make([]uint64, b.n+1)
	var out []byte
	for p := range upTo {
		if b.w > 0 && b.has(p) {
			out = append(out, b.data[p*b.w:(p+1)*b.w]...)
		}
		b.off[p+1] = uint64(len(out))
	}
	b.data, b.next = out, upTo
}

func (b *boundBuilder) finish() (boundArray, error) {
	switch {
	case b.err != nil:
		return boundArray{}, b.err
	case b.off == nil && b.w == -1:
		return boundArray{}, nil
	case b.off == nil:
		return boundArray{w: b.w, data: b.data}, nil
	}
	for ; b.next < b.n; b.next++ {
		b.off[b.next+1] = b.off[b.next]
	}
	return boundArray{data: b.data, off: b.off}, nil
}

// FileAt is file i of fs (a FileSet of this reader's catalog): its row,
// read on first use when fs was built from blocks.
func (r *Reader) FileAt(fs *FileSet, i int) (DataFile, error) {
	if p := fs.files.load(i); p != nil {
		return *p, nil
	}
	if p := r.spilled(fs, i); p != nil {
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
	// end differs between them, and no FileSet reader looks at it. (A
	// restamp changes it in place too, and advances next_file_id: a set
	// cached before holds the older identity, which can only make a
	// reader refuse the file, never read another.)
	r.keep(fs, i, &f)
	return f, nil
}

// expireBlocks rewrites a table's blocks without the files expiry forgets
// (ids), calling boundary after each block. Their removal records go after
// (expirewrites.go): until then they hide the files in the blocks not yet
// rewritten.
func expireBlocks(kvs kv.Reader, tableID int64, colIDs []int64, forgotten map[int64]bool,
	put func(k []byte, m proto.Message) error, del func(k []byte) error, boundary func() error) error {
	if len(forgotten) == 0 {
		return nil
	}
	if _, err := kvs.Get(key(tagBlocksMarker, tableID)); errors.Is(err, kv.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	return scanRange(kvs, key(tagFileBlock, tableID), func(k, v []byte) error {
		var fb catalogpb.FileBlock
		if err := decodeValue(v, &fb); err != nil {
			return fmt.Errorf("file block %x: %w", k, err)
		}
		bv, err := viewFileBlock(&fb)
		if err != nil {
			return fmt.Errorf("file block %x: %w", k, err)
		}
		var keep []int
		for j := range bv.n {
			if !forgotten[bv.ids.at(j)] {
				keep = append(keep, j)
			}
		}
		if len(keep) == bv.n {
			return nil
		}
		// A rewritten block that keeps its first file keeps its key: it is
		// set, never deleted and set in one batch.
		first := bv.ids.at(0)
		var nfirst int64 = -1
		if len(keep) > 0 {
			nfirst = bv.ids.at(keep[0])
		}
		if nfirst != first {
			if err := del(k); err != nil {
				return err
			}
		}
		if nfirst >= 0 {
			nfb := &fileBlock{begin: fb.BeginSnapshot}
			for _, j := range keep {
				nfb.ids, nfb.rows = append(nfb.ids, bv.ids.at(j)), append(nfb.rows, bv.rows.at(j))
				nfb.rgs, nfb.sizes = append(nfb.rgs, bv.rgs.at(j)), append(nfb.sizes, bv.sizes.at(j))
			}
			if err := put(key(tagFileBlock, tableID, nfirst), nfb.encode()); err != nil {
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
			sv, err := viewStats(&sb)
			if err != nil {
				return fmt.Errorf("stats block %x: %w", sk, err)
			}
			if sv.n != bv.n {
				return fmt.Errorf("%w: stats block %x holds %d files, its file block %d", ErrCorrupt, sk, sv.n, bv.n)
			}
			if nfirst != first {
				if err := deleteStatsBlock(del, tableID, col, first); err != nil {
					return err
				}
			}
			if nfirst < 0 {
				continue
			}
			if err := putStatsBlock(put, del, tableID, col, nfirst, sv.keep(keep)); err != nil {
				return err
			}
		}
		// The block and its columns' stats blocks are whole again.
		return boundary()
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
		if fs.files.load(i) == nil && r.spilled(fs, i) == nil {
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
		r.keep(fs, i, &f)
		return nil
	}
	if len(missing) > 256 && len(missing)*prefetchScan > fs.Len() {
		// Only the rows asked for: a reader keeps what its set cannot.
		want := make([]bool, fs.Len())
		for _, i := range missing {
			want[i] = true
		}
		return scanAligned(r, fs, key(tagDataFile, fs.table), 0, func(i int, _ int64, v []byte) error {
			if !want[i] {
				return nil
			}
			return store(i, v)
		})
	}
	keys := make([][]byte, len(missing))
	for k, i := range missing {
		keys[k] = key(tagDataFile, fs.table, fs.IDs[i])
	}
	vals, err := getMany(r.kvs, keys)
	if err != nil {
		return err
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
