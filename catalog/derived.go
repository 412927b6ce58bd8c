package catalog

import (
	"bytes"
	"fmt"

	"github.com/rocklake/rocklake/stats"
)

// DerivedProblem is one place where what plans read for a table differs
// from the rows it is derived from. FileID is 0 for the table as a whole.
type DerivedProblem struct {
	FileID int64
	What   string
}

// CheckDerived compares what a plan reads for the table at the reader's
// snapshot with the rows every other reader uses, from which it is
// derived: the file set (file blocks, or the cache built from them) with
// the visible data-file rows, each column's cached bounds (stats blocks)
// with each file's stats row, each block summary with its files' stats
// rows, and the table's stats with a fresh fold of the file stats. A planner that reads a bound the rows do not hold can
// skip a file holding matching rows; this finds such a divergence without
// reading the data. It reads every visible file's rows and every
// column's stats rows: O(table).
func (r *Reader) CheckDerived(tableID int64) ([]DerivedProblem, error) {
	var out []DerivedProblem
	bad := func(file int64, format string, args ...any) {
		out = append(out, DerivedProblem{FileID: file, What: fmt.Sprintf(format, args...)})
	}
	files, err := r.Files(tableID)
	if err != nil {
		return nil, err
	}
	fs, err := r.FileSet(tableID)
	if err != nil {
		return nil, err
	}
	src := "the file set"
	if fs.fromBlocks {
		src = "the file blocks"
	}
	if fs.Len() != len(files) {
		seen := make(map[int64]bool, fs.Len())
		for _, id := range fs.IDs {
			seen[id] = true
		}
		for _, f := range files {
			if !seen[f.ID] {
				bad(f.ID, "%s leave out a live file (a plan would never read it)", src)
			}
			delete(seen, f.ID)
		}
		for id := range seen {
			bad(id, "%s hold a file no live row names", src)
		}
		return out, nil // the columns below are aligned with the set
	}
	var rgs, size int64
	empty := 0
	for i, f := range files {
		switch {
		case fs.IDs[i] != f.ID:
			bad(f.ID, "%s hold file %d in its place", src, fs.IDs[i])
			return out, nil
		case fs.RecordCounts[i] != f.RecordCount:
			bad(f.ID, "%s say %d rows, its row %d", src, fs.RecordCounts[i], f.RecordCount)
		case fs.RowGroupCount[i] != f.RowGroupCount:
			bad(f.ID, "%s say %d row groups, its row %d", src, fs.RowGroupCount[i], f.RowGroupCount)
		}
		rgs, size = rgs+int64(f.RowGroupCount), size+f.FileSizeBytes
		if f.RecordCount == 0 {
			empty++
		}
	}
	if fs.TotalRowGroups != rgs || fs.TotalBytes != size || fs.EmptyFiles != empty {
		bad(0, "%s total %d row groups, %d bytes, %d empty files; the rows %d, %d, %d",
			src, fs.TotalRowGroups, fs.TotalBytes, fs.EmptyFiles, rgs, size, empty)
	}
	cols, err := r.Columns(tableID)
	if err != nil {
		return nil, err
	}
	for _, col := range cols {
		want, err := r.ColumnStatsOf(tableID, col.ID, files)
		if err != nil {
			return nil, err
		}
		cb, err := r.ColumnBounds(tableID, col.ID)
		if err != nil {
			return nil, err
		}
		if fs.fromBlocks {
			if err := r.checkSummaries(fs, col, files, want, bad); err != nil {
				return nil, err
			}
		}
		_, _, facts := cb.BoundArrays()
		var st stats.Column
		for i, f := range files {
			got := "none"
			if cb.Fill(i, &st) {
				got = planView(&st)
			}
			if w := planView(want[i]); got != w {
				bad(f.ID, "column %s: plans read %s, its stats row says %s", col.Name, got, w)
			} else if facts[i] != stats.FactsOf(want[i]) {
				bad(f.ID, "column %s: plans read facts %b, its stats row gives %b", col.Name, facts[i], stats.FactsOf(want[i]))
			}
		}
	}
	got, err := r.fileTableStats(tableID)
	if err != nil {
		return nil, err
	}
	fold, err := r.computeTableStats(tableID)
	if err != nil {
		return nil, err
	}
	if got.RecordCount != fold.RecordCount || got.FileSizeBytes != fold.FileSizeBytes || got.FileCount != fold.FileCount {
		bad(0, "table stats say %d rows, %d bytes, %d files; its files %d, %d, %d",
			got.RecordCount, got.FileSizeBytes, got.FileCount, fold.RecordCount, fold.FileSizeBytes, fold.FileCount)
	}
	for _, col := range cols {
		g, f := got.Columns[col.ID], fold.Columns[col.ID]
		if g == nil || f == nil || fmt.Sprint(*g) != fmt.Sprint(*f) {
			if g == nil && f == nil {
				continue
			}
			bad(0, "column %s: table stats %s, the fold of its files' %s", col.Name, tableColumnView(g), tableColumnView(f))
		}
	}
	return out, nil
}

// checkSummaries checks that each block summary of the column holds what
// the stats rows say of each file of its block the snapshot sees: a plan
// skips every file of a block whose summary rules a predicate out. A
// summary may be wider than its visible files (it also covers files
// retired since), so only a claim a file's row contradicts is a problem:
// a bound the file's bound lies beyond (for a file holding a value), no
// NULL or NaN where the file's flags say it has some, fewer NULLs or rows
// than the file alone. (Each check compares a field with the same field:
// the fold keeps the flags and counts as the rows give them, consistent
// or not.)
func (r *Reader) checkSummaries(fs *FileSet, col Column, files []DataFile, rows []*stats.Column, bad func(int64, string, ...any)) error {
	sums, err := r.BlockSummaries(fs, col.ID)
	if err != nil {
		return err
	}
	var sum stats.Column
	for b := range fs.Blocks() {
		if !sums.Fill(b, &sum) {
			continue
		}
		start, end := fs.BlockFiles(b)
		for i := start; i < end; i++ {
			st := rows[i]
			if st == nil {
				continue
			}
			// A file holding no value has no bounds to keep, whatever
			// its row says of them (a plan skips it for any comparison).
			bounded := !stats.HoldsNoValue(st)
			var what string
			switch {
			case bounded && sum.Min.Known && st.Min.Known && bytes.Compare(st.Min.V, sum.Min.V) < 0:
				what = fmt.Sprintf("minimum %x is below its block summary's %x", st.Min.V, sum.Min.V)
			case bounded && sum.Max.Known && st.Max.Known && bytes.Compare(st.Max.V, sum.Max.V) > 0:
				what = fmt.Sprintf("maximum %x is above its block summary's %x", st.Max.V, sum.Max.V)
			case sum.ContainsNull.Known && !sum.ContainsNull.V && st.ContainsNull.Known && st.ContainsNull.V:
				what = "holds NULLs; its block summary says none"
			case sum.ContainsNaN.Known && !sum.ContainsNaN.V && st.ContainsNaN.Known && st.ContainsNaN.V:
				what = "holds NaN; its block summary says none"
			case sum.NullCount.Known && st.NullCount.Known && st.NullCount.V > sum.NullCount.V:
				what = fmt.Sprintf("holds %d NULLs; its block summary %d", st.NullCount.V, sum.NullCount.V)
			case st.RowCount > sum.RowCount:
				what = fmt.Sprintf("holds %d rows; its block summary %d", st.RowCount, sum.RowCount)
			default:
				continue
			}
			bad(files[i].ID, "column %s: the file's %s", col.Name, what)
		}
	}
	return nil
}

// planView prints the fields of a unit's stats a plan reads.
func planView(st *stats.Column) string {
	if st == nil {
		return "none"
	}
	return fmt.Sprintf("min=%v/%x max=%v/%x exact=%v/%v nulls=%v values=%v cnull=%v cnan=%v rows=%d",
		st.Min.Known, st.Min.V, st.Max.Known, st.Max.V, st.MinIsExact, st.MaxIsExact,
		st.NullCount, st.ValueCount, st.ContainsNull, st.ContainsNaN, st.RowCount)
}

func tableColumnView(s *TableColumnStats) string {
	if s == nil {
		return "none"
	}
	return fmt.Sprintf("min=%v/%x max=%v/%x exact=%v/%v cnull=%v cnan=%v novalues=%v variants=%d",
		s.Min.Known, s.Min.V, s.Max.Known, s.Max.V, s.MinIsExact, s.MaxIsExact, s.ContainsNull, s.ContainsNaN, s.NoValues, len(s.Variants))
}
