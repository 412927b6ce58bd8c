package catalog

import (
	"errors"
	"fmt"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/stats"
	"google.golang.org/protobuf/proto"
)

// Block summaries: a stats block's files folded into one unit, so that a
// plan decides whole blocks before it decodes a single file's bounds.
//
//	15 table column first   StatsBlock    the column's stats of a block's files
//	1A table column first   ColumnStats   the same files folded (stats.Merge)
//
// A selective plan over ten million files in two thousand blocks reads two
// thousand summaries per predicate column, evaluates them as units, and
// decodes the stats blocks of the few blocks left: not every file's bounds.
//
// A summary is the fold row groups get into a file: bounds over every file
// holding a value, counts summed, flags or-ed, distinct counts dropped. It
// is written in the same batch as its stats block, by every writer of one
// (a commit, expiry's rewrite, an ALTER's stats for the files it maps), and
// deleted with it. A block of one file, or with a file without stats, has
// no summary, nor has a block written before summaries existed: a plan
// evaluates such a block's files one by one. Expiry only takes files out of a block, so a
// summary is never narrower than its block even between the two writes.

// putStatsBlock writes a stats block and its summary, deleting a summary
// the block no longer has (del nil: the block is new, there is none).
func putStatsBlock(put func(k []byte, m proto.Message) error, del func(k []byte) error, tableID, columnID, first int64, sb *statsBlock) error {
	if err := put(key(tagStatsBlock, tableID, columnID, first), sb.encode()); err != nil {
		return err
	}
	sk := key(tagBlockSummary, tableID, columnID, first)
	if sum := sb.summary(); sum != nil {
		return put(sk, sum)
	}
	if del == nil {
		return nil
	}
	return del(sk)
}

// putStatsBlock writes a stats block and its summary in the commit; fresh:
// the block is new.
func (w *commitWriter) putStatsBlock(tableID, columnID, first int64, sb *statsBlock, fresh bool) {
	put := func(k []byte, m proto.Message) error {
		w.put(k, m)
		return w.writeErr
	}
	var del func([]byte) error
	if !fresh {
		del = func(k []byte) error {
			if w.writeErr == nil {
				w.writeErr = w.batch.Delete(k)
			}
			return w.writeErr
		}
	}
	if err := putStatsBlock(put, del, tableID, columnID, first, sb); err != nil && w.writeErr == nil {
		w.writeErr = err
	}
}

// deleteStatsBlock deletes a stats block and its summary.
func deleteStatsBlock(del func(k []byte) error, tableID, columnID, first int64) error {
	if err := del(key(tagStatsBlock, tableID, columnID, first)); err != nil {
		return err
	}
	return del(key(tagBlockSummary, tableID, columnID, first))
}

// summary folds the block's files, nil when one of them has no stats or
// when the block holds one file (its summary would be its stats again: a
// stream of one-row INSERTs would pay a key per column per commit for
// nothing a plan of its few files needs).
func (b *statsBlock) summary() *catalogpb.ColumnStats {
	if len(b.flags) < 2 {
		return nil
	}
	units := make([]stats.Column, len(b.flags))
	var mo, xo int
	for j := range b.flags {
		f := uint16(b.flags[j])
		if f&cbHasStats == 0 {
			return nil
		}
		ml, xl := int(b.minLens[j]), int(b.maxLens[j])
		st := blockUnit(f, b.rows[j], b.nulls[j], b.values[j], b.mins[mo:mo+ml:mo+ml], b.maxs[xo:xo+xl:xo+xl])
		mo, xo = mo+ml, xo+xl
		// A count outside 0..rows proves nothing in a sum: the fold could
		// otherwise read a block as all NULL.
		if st.NullCount.Known && (st.NullCount.V < 0 || st.NullCount.V > st.RowCount) {
			st.NullCount = stats.Maybe[int64]{}
		}
		if st.ValueCount.Known && (st.ValueCount.V < 0 || st.ValueCount.V > st.RowCount) {
			st.ValueCount = stats.Maybe[int64]{}
		}
		if st.RowCount < 0 {
			st.RowCount, st.NullCount, st.ValueCount = 0, stats.Maybe[int64]{}, stats.Maybe[int64]{}
		}
		units[j] = st
	}
	m := stats.Merge(units)
	m.DistinctCount, m.ColumnSizeBytes, m.ExtraStats = stats.Maybe[int64]{}, 0, ""
	return columnStatsToPB(&m)
}

// blockUnit is one file's stats as a stats block holds them: flags,
// counts and bounds (min and max are read only where the flags say they
// are known); no distinct count, size or extra stats.
func blockUnit(f uint16, rows, nulls, values int64, min, max []byte) stats.Column {
	st := stats.Column{
		RowCount:     rows,
		NullCount:    stats.Maybe[int64]{V: nulls, Known: f&cbHasNulls != 0},
		ValueCount:   stats.Maybe[int64]{V: values, Known: f&cbHasValues != 0},
		ContainsNull: stats.Maybe[bool]{V: f&cbContainsNull != 0, Known: f&cbHasContainsNull != 0},
		ContainsNaN:  stats.Maybe[bool]{V: f&cbContainsNaN != 0, Known: f&cbHasContainsNaN != 0},
		MinIsExact:   f&cbMinExact != 0,
		MaxIsExact:   f&cbMaxExact != 0,
	}
	if f&cbHasMin != 0 {
		st.Min = stats.Known(min)
	}
	if f&cbHasMax != 0 {
		st.Max = stats.Known(max)
	}
	return st
}

// Blocks is the number of file blocks fs was built from: 0 when it was
// built from rows.
func (s *FileSet) Blocks() int {
	if !s.fromBlocks {
		return 0
	}
	return len(s.blocks)
}

// BlockFiles is the positions in fs of block b's files the snapshot sees:
// [start, end), in id order like every position.
func (s *FileSet) BlockFiles(b int) (start, end int) {
	start, end = int(s.blocks[b].start), len(s.IDs)
	if b+1 < len(s.blocks) {
		end = int(s.blocks[b+1].start)
	}
	return start, end
}

// BlockSummaries is one column's block summaries, aligned with a FileSet's
// blocks: a prune.ColumnStats over the blocks as units. Shared: read it,
// never modify it.
type BlockSummaries struct {
	units []stats.Column
	has   []bool
}

// Fill writes block i's summary into st; false when it has none.
func (s *BlockSummaries) Fill(i int, st *stats.Column) bool {
	if !s.has[i] {
		return false
	}
	*st = s.units[i]
	return true
}

// summaryCacheColumn is where a column's summaries are cached (see
// cacheKey for the plan cache's key spaces).
func summaryCacheColumn(columnID int64) int64 { return -(1 << 41) - columnID }

// BlockSummaries reads the column's block summaries for fs (built from
// blocks by this reader's catalog at its snapshot), cached like the
// column's bounds.
func (r *Reader) BlockSummaries(fs *FileSet, columnID int64) (*BlockSummaries, error) {
	k := r.cacheKey(fs.table, summaryCacheColumn(columnID))
	if v, ok := r.c.plan.get(k).(*BlockSummaries); ok && len(v.has) == fs.Blocks() {
		return v, nil
	}
	n := fs.Blocks()
	s := &BlockSummaries{units: make([]stats.Column, n), has: make([]bool, n)}
	var p catalogpb.ColumnStats
	size := int64(n) * 100
	err := r.scan(key(tagBlockSummary, fs.table, columnID), kv.PrefixEnd(key(tagBlockSummary, fs.table, columnID)), func(k, v []byte) error {
		first, err := idAt(k, 2)
		if err != nil {
			return err
		}
		bi, ok := fs.blockOf(first)
		if !ok {
			return nil // a block the snapshot does not see
		}
		p.Reset()
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("block summary %x: %w", k, err)
		}
		// decodeValue copies: the bounds may outlive the scan.
		s.units[bi], s.has[bi] = columnStatsFromPB(&p), true
		size += int64(len(p.Min) + len(p.Max))
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.c.plan.put(k, s, size)
	return s, nil
}

// BoundsOfBlocks is the column's bounds over the files of the given blocks
// of fs only (block indexes, increasing): unit i of the result is the i-th
// of those files in position order. It is built for one plan and not
// cached; the stats blocks it reads are (statsBlocksOf).
func (r *Reader) BoundsOfBlocks(fs *FileSet, columnID int64, blocks []int) (*ColumnBounds, error) {
	if !fs.fromBlocks {
		return nil, errors.New("catalog: BoundsOfBlocks of a file set built from rows")
	}
	offs := make([]int, len(blocks)) // each block's first unit in the result
	var records []int64
	keys := make([][]byte, len(blocks))
	for k, b := range blocks {
		start, end := fs.BlockFiles(b)
		offs[k] = len(records)
		records = append(records, fs.RecordCounts[start:end]...)
		keys[k] = key(tagStatsBlock, fs.table, columnID, fs.blocks[b].first)
	}
	n := len(records)
	cb := &ColumnBounds{flags: make([]uint16, n), facts: make([]stats.Facts, n),
		rows: defaultCounts(n, records), values: defaultCounts(n, records), nulls: defaultCounts(n, nil)}
	vals, err := r.statsBlocksOf(fs, columnID, blocks, keys)
	if err != nil {
		return nil, err
	}
	mins := newBoundBuilder(n, func(i int) bool { return cb.flags[i]&cbHasMin != 0 })
	maxs := newBoundBuilder(n, func(i int) bool { return cb.flags[i]&cbHasMax != 0 })
	var sb catalogpb.StatsBlock
	for k, b := range blocks {
		if vals[k] == nil {
			continue // no stats block: the files have no stats of the column
		}
		blk := &fs.blocks[b]
		if err := fillFromStatsBlock(keys[k], vals[k], &sb, blk, cb, mins, maxs, offs[k]-int(blk.start)); err != nil {
			return nil, err
		}
	}
	if cb.min, err = mins.finish(); err != nil {
		return nil, err
	}
	if cb.max, err = maxs.finish(); err != nil {
		return nil, err
	}
	r.deriveFacts(cb, 0)
	return cb, nil
}

// statsBlocksOf reads the stored stats blocks keys, of the given blocks of
// fs, from the plan cache where a plan of the reader's state read them
// before: a warm plan of a selective predicate keeps a block or two, and
// on PostgreSQL each of their reads was a round trip per plan.
//
// A block's stored stats may change within a state: expiry rewrites it
// without a snapshot, keeping a subset of its files. This process's expiry
// drops the table's entries (dropTable); another's leaves a kept value
// whose file count differs from the FileSet's block if the set was read
// after it, and fillFromStatsBlock then leaves the block's files without
// stats, which every plan keeps. A file's stats never change, so a kept
// value of the same count is the same files' stats.
func (r *Reader) statsBlocksOf(fs *FileSet, columnID int64, blocks []int, keys [][]byte) ([][]byte, error) {
	vals := make([][]byte, len(keys))
	ck := make([]cacheKey, len(keys))
	var miss []int
	for k, b := range blocks {
		ck[k] = r.cacheKey(fs.table, statsBlockSpace-columnID)
		ck[k].block = fs.blocks[b].first
		if v, ok := r.c.plan.get(ck[k]).(statsBlockValue); ok {
			vals[k] = v
			continue
		}
		miss = append(miss, k)
	}
	if len(miss) == 0 {
		return vals, nil
	}
	missKeys := make([][]byte, len(miss))
	for i, k := range miss {
		missKeys[i] = keys[k]
	}
	got, err := getMany(r.kvs, missKeys)
	if err != nil {
		return nil, err
	}
	for i, k := range miss {
		vals[k] = got[i]
		// A block without a stats block (a column added later) is kept as
		// nil: it has none at this state either.
		r.c.plan.put(ck[k], statsBlockValue(got[i]), int64(len(got[i])+len(keys[k]))+64)
	}
	return vals, nil
}

// statsBlockValue is a stored stats block as the plan cache keeps it; nil
// where the block has none.
type statsBlockValue []byte
