package prune

import (
	"slices"
	"sync/atomic"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/types"
)

// Blocks before files. A table's files are stored in blocks, one or more
// per commit (catalog/blocks.go), and each block's stats of a column are
// folded into a summary (catalog/blocksummary.go). A plan first evaluates
// the predicate over the blocks as units, the summaries as their
// statistics: a block whose summary proves no row matches holds no
// matching file, since the summary bounds every row of every file in it.
// Then:
//
//   - when the blocks left hold few of the table's files, only their
//     stats blocks are decoded and only their files evaluated (a new
//     process planning a selective predicate over ten million files reads
//     a block's bounds, not ten million);
//   - otherwise every file is evaluated from the table's cached bounds,
//     as without blocks, and the files of skipped blocks are skipped too.
//
// A block without a summary (a file without stats, or a block written
// before summaries existed) is kept, and its files are evaluated one by
// one. Only columns whose file statistics are bounds take part: a
// predicate on a VARIANT sub-field or a GEOMETRY extent plans file by
// file.

// minBlocks is the fewest blocks a table needs for a plan to evaluate
// them first (tests lower it to run the block path on small tables).
var minBlocks = 2

// subsetShare: a plan evaluates only the kept blocks' files while they
// are at most 1/subsetShare of the table's; past that, the table's
// bounds (cached for the next plan) are read whole.
var subsetShare = 4

// subsetPlans counts plans that evaluated only the kept blocks' files
// (tests read it to know the path ran).
var subsetPlans atomic.Int64

// fileResults is what a plan's file level decided: a Result per unit,
// where the units are the FileSet's files (pos nil) or the files at
// positions pos (every file left out is skipped).
type fileResults struct {
	res       []Result
	pos       []int
	subFields []SubField
}

// position is unit k's FileSet position.
func (f *fileResults) position(k int) int {
	if f.pos == nil {
		return k
	}
	return f.pos[k]
}

// planFiles evaluates the predicate over fs's files, by blocks first where
// it can.
func planFiles(r *catalog.Reader, tableID int64, fs *catalog.FileSet, prog *program, b *expr.Bound, opts Options) (*fileResults, error) {
	var keptBlocks []int
	var skipped []bool
	if blocksFirst(fs, b, opts) {
		bs, err := blockStatistics(r, fs, b)
		if err != nil {
			return nil, err
		}
		bres := evalFiles(prog, bs, nil)
		skipped = make([]bool, len(bres))
		files := 0
		for i, res := range bres {
			if res == Skip {
				skipped[i] = true
				continue
			}
			keptBlocks = append(keptBlocks, i)
			start, end := fs.BlockFiles(i)
			files += end - start
		}
		if files*subsetShare <= fs.Len() {
			return planBlockFiles(r, tableID, fs, prog, b, opts, keptBlocks, files)
		}
	}
	files, err := fileStatistics(r, tableID, fs, b, opts)
	if err != nil {
		return nil, err
	}
	var rows []int64 // an empty file is skipped: there is nothing to read
	if fs.EmptyFiles > 0 {
		rows = fs.RecordCounts
	}
	res := evalFiles(prog, files, rows)
	for i, skip := range skipped {
		if skip {
			start, end := fs.BlockFiles(i)
			for p := start; p < end; p++ {
				res[p] = Skip
			}
		}
	}
	return &fileResults{res: res, subFields: files.subFields}, nil
}

// blockStatistics is fs's blocks as units, their summaries as statistics.
func blockStatistics(r *catalog.Reader, fs *catalog.FileSet, b *expr.Bound) (*fileStats, error) {
	bs := &fileStats{n: fs.Blocks()}
	for _, c := range b.Columns {
		if c.Variant != nil || c.Type.Kind == types.KindGeometry {
			continue // no summary: Maybe
		}
		sums, err := r.BlockSummaries(fs, c.ID)
		if err != nil {
			return nil, err
		}
		bs.ids, bs.cols = append(bs.ids, c.ID), append(bs.cols, sums)
	}
	return bs, nil
}

// blocksFirst says whether a plan evaluates fs's blocks before its files.
func blocksFirst(fs *catalog.FileSet, b *expr.Bound, opts Options) bool {
	if opts.NoBlocks || fs.Blocks() < minBlocks || len(b.Columns) == 0 {
		return false
	}
	return !slices.ContainsFunc(b.Columns, func(c *expr.Column) bool {
		return c.Variant != nil || c.Type.Kind == types.KindGeometry
	})
}

// planBlockFiles evaluates the files of the kept blocks only (files of
// them in all).
func planBlockFiles(r *catalog.Reader, tableID int64, fs *catalog.FileSet, prog *program, b *expr.Bound, opts Options, blocks []int, files int) (*fileResults, error) {
	subsetPlans.Add(1)
	pos := make([]int, 0, files)
	for _, bi := range blocks {
		start, end := fs.BlockFiles(bi)
		for p := start; p < end; p++ {
			pos = append(pos, p)
		}
	}
	s := &fileStats{n: len(pos)}
	eq := equalityColumns(b.Pred)
	for _, c := range b.Columns {
		cb, err := r.BoundsOfBlocks(fs, c.ID, blocks)
		if err != nil {
			return nil, err
		}
		var col ColumnStats = cb
		mi, err := probedIndex(r, tableID, c.ID, eq, opts)
		if err != nil {
			return nil, err
		}
		if mi != nil {
			col = filteredSubset{cb, mi, pos}
		}
		s.ids, s.cols = append(s.ids, c.ID), append(s.cols, col)
	}
	var rows []int64
	if fs.EmptyFiles > 0 {
		rows = make([]int64, len(pos))
		for k, p := range pos {
			rows[k] = fs.RecordCounts[p]
		}
	}
	return &fileResults{res: evalFiles(prog, s, rows), pos: pos}, nil
}

// filteredSubset is filteredFiles over some of a FileSet's files: unit k
// is the file at position pos[k], which the membership index knows it by.
type filteredSubset struct {
	*catalog.ColumnBounds
	mi  *catalog.MemberIndex
	pos []int
}

func (c filteredSubset) Absent(k int, value []byte) bool { return c.mi.Absent(c.pos[k], value) }
