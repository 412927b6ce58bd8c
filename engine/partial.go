package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/parquet"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

// PartialMode says whether a query may read only the kept row ranges of a
// file instead of the whole file (see partialReads).
type PartialMode int

const (
	// PartialAuto reads a kept file's row ranges where the cost rule says
	// it pays (partialPays), the whole file elsewhere.
	PartialAuto PartialMode = iota
	// PartialOff hands DuckDB every kept file whole.
	PartialOff
	// PartialForce reads every kept file that can be read in part so,
	// whatever it costs — by the page path where its columns allow, else
	// by row ranges — and reads the page index of every row group (unless
	// QueryOptions.Prune says otherwise): for tests, which run the
	// differential suites through these paths.
	PartialForce
	// PartialForceRows is PartialForce without the page path.
	PartialForceRows
)

// Read methods of FileRead.How.
const (
	ReadWhole     = "whole"      // DuckDB reads the file as it decides
	ReadRowRanges = "row_ranges" // DuckDB reads the kept row ranges only (file_row_number)
	ReadPages     = "pages"      // arrow-go decodes the kept pages; DuckDB reads the rows from a temporary table
)

// FileRead is how a query read one kept file, and why: the file whole;
// its kept row ranges through read_parquet's file_row_number (DuckDB
// pushes the bounds into its scan and skips the row groups outside them);
// or its kept pages, decoded by arrow-go. Bytes are, for pages, the bytes
// arrow-go read (footer included); for row ranges, the estimate of what
// DuckDB reads (rowRangeBytes, every column); FileBytes are the file's
// column chunks. Both 0 when the footer was not read.
type FileRead struct {
	Path      string `json:"path"`
	How       string `json:"how"`
	Why       string `json:"why"`
	Rows      int64  `json:"rows"` // rows in the ranges read, or the file's rows
	FileRows  int64  `json:"file_rows"`
	Ranges    int    `json:"ranges,omitempty"`
	RowGroups int    `json:"row_groups,omitempty"` // row groups the ranges touch
	Bytes     int64  `json:"bytes,omitempty"`
	FileBytes int64  `json:"file_bytes,omitempty"`
	// Handed, for the page path, is the rows handed to DuckDB: those of
	// the ranges the row filter kept (see rowFilter).
	Handed int64 `json:"rows_handed,omitempty"`
}

// partialPageMinRows is the row-group size from which a query reads a
// row group's page index (prune.Options.PageMinRows): a smaller row group
// is read whole, since a part of it saves little against the extra read.
const partialPageMinRows = 65536

// maxRanges bounds the row ranges of one file put in the SQL: beyond it
// the closest ranges are merged. A merged range reads more rows, never
// fewer, and the query's WHERE still filters every row.
const maxRanges = 32

// partialPlanOptions sets the planner options the partial scan needs:
// page-level row ranges for the row groups large enough to gain from them.
func partialPlanOptions(opts *QueryOptions) {
	if opts.Partial == PartialOff || opts.NoPruning || opts.Prune.FilesOnly {
		return
	}
	opts.Prune.Pages = true
	if opts.Prune.PageMinRows == 0 {
		if opts.Partial == PartialForce || opts.Partial == PartialForceRows {
			opts.Prune.PageMinRows = -1
			if opts.Prune.IndexMinRows == 0 {
				opts.Prune.IndexMinRows = -1
			}
		} else {
			opts.Prune.PageMinRows = partialPageMinRows
		}
	}
}

// rowSpan is rows [lo, hi) of a file.
type rowSpan struct{ lo, hi int64 }

// filePlan is what partialRead found of one kept file: read says how to
// read it (ReadWhole, or ReadRowRanges for a file that may be read in
// part: partialView then picks the page path or the row-range SQL); the
// footer's row groups (firsts: each one's first row, then the file's
// rows) and the kept spans, touching ones joined.
type filePlan struct {
	read   FileRead
	spans  []rowSpan
	f      *pqmeta.File
	firsts []int64
}

// partialRead checks whether one kept file may be read in part. path is
// where DuckDB reads the file (a local copy for an object), want what
// registration recorded of it: the footer it reads must be that file's
// (checkDataFile compared its stat only), or the query fails with
// ErrDataFileChanged.
func partialRead(kf prune.KeptFile, table, path string, mode PartialMode, want fileStamp) (filePlan, error) {
	var changed error
	fp := partialReadWith(kf, mode, func() (*pqmeta.File, error) {
		f, err := pqmeta.ReadAs(path, want.stat(), want.fingerprint, want.footerSize)
		var ce *pqmeta.ChangedError
		if errors.As(err, &ce) {
			changed = changedError(table, path, ce.What)
		}
		return f, err
	})
	return fp, changed
}

// partialReadWith is partialRead with the footer read by footer (for an
// object: through ranged requests), called only when it is needed.
func partialReadWith(kf prune.KeptFile, mode PartialMode, footer func() (*pqmeta.File, error)) filePlan {
	fp := filePlan{read: FileRead{Path: kf.Path, How: ReadWhole, Rows: kf.Rows, FileRows: kf.Rows}}
	switch {
	case mode == PartialOff:
		fp.read.Why = "partial scan off"
		return fp
	case kf.Ranges == nil:
		// No ranges: every row group matched in full, or planning had no
		// row-group rows to derive ranges from.
		fp.read.Why = "no row ranges planned"
		return fp
	}
	var kept int64
	for _, r := range kf.Ranges {
		kept += r.Count
	}
	if mode == PartialAuto && kept*2 > kf.Rows {
		fp.read.Why = "most rows kept"
		return fp
	}
	// The footer gives each row group's first row and bytes: the plan's
	// ranges are checked against it, so that a range derived from
	// statistics that do not describe this file never drops a row.
	f, err := footer()
	if err != nil {
		fp.read.Why = "footer unreadable"
		return fp
	}
	firsts := make([]int64, len(f.RowGroups)+1)
	for i, rg := range f.RowGroups {
		firsts[i+1] = firsts[i] + rg.Rows
		for _, c := range rg.Chunks {
			fp.read.FileBytes += c.CompressedSize
		}
	}
	fp.read.FileRows = f.Rows
	if f.Rows != kf.Rows {
		fp.read.Why = "footer's rows differ from the catalog's"
		return fp
	}
	var spans []rowSpan
	for _, r := range kf.Ranges {
		g := int(r.RowGroup)
		if g < 0 || g >= len(f.RowGroups) || r.Count <= 0 || r.First < firsts[g] || r.First+r.Count > firsts[g+1] {
			fp.read.Why = "row ranges do not match the footer"
			return fp
		}
		spans = append(spans, rowSpan{r.First, r.First + r.Count})
	}
	fp.spans, fp.f, fp.firsts = mergeSpans(spans, len(spans)), f, firsts
	fp.read.How = ReadRowRanges
	fp.read.Rows = 0
	for _, s := range fp.spans {
		fp.read.Rows += s.hi - s.lo
	}
	return fp
}

// pageMaxRows bounds the rows the cost rule hands to the page path: they
// pass one by one through the Appender, where DuckDB's own reader is
// faster per row.
const pageMaxRows = 1 << 18

// rowRangeBytes estimates what DuckDB reads of a file given row ranges:
// it skips the row groups they do not touch, and in each one touched
// decodes every column from the row group's first row to the last row
// wanted (DuckDB 1.5.6 uses no offset index; measured: a 10,240-row range
// in the middle of a 1,000,000-row group read half the group's bytes).
// Columns the query does not use are counted too.
func rowRangeBytes(fp filePlan) int64 {
	var total int64
	for g, rg := range fp.f.RowGroups {
		var end int64 = -1
		for _, s := range fp.spans {
			if s.lo < fp.firsts[g+1] && s.hi > fp.firsts[g] {
				end = max(end, min(s.hi, fp.firsts[g+1]))
			}
		}
		if end < 0 || rg.Rows == 0 {
			continue
		}
		var b int64
		for _, c := range rg.Chunks {
			b += c.CompressedSize
		}
		total += b * (end - fp.firsts[g]) / rg.Rows
	}
	return total
}

// touchedRowGroups counts the row groups the spans touch.
func touchedRowGroups(fp filePlan) int {
	n := 0
	for g := range fp.f.RowGroups {
		for _, s := range fp.spans {
			if s.lo < fp.firsts[g+1] && s.hi > fp.firsts[g] {
				n++
				break
			}
		}
	}
	return n
}

// mergeSpans sorts spans, joins touching ones, and merges the closest
// neighbours until at most max remain.
func mergeSpans(spans []rowSpan, max int) []rowSpan {
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	var out []rowSpan
	for _, s := range spans {
		if n := len(out); n > 0 && s.lo <= out[n-1].hi {
			out[n-1].hi = maxInt64(out[n-1].hi, s.hi)
			continue
		}
		out = append(out, s)
	}
	for len(out) > max {
		best := 1
		for i := 2; i < len(out); i++ {
			if out[i].lo-out[i-1].hi < out[best].lo-out[best-1].hi {
				best = i
			}
		}
		out[best-1].hi = out[best].hi
		out = append(out[:best], out[best+1:]...)
	}
	return out
}

func maxInt64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// rangesSQL reads the given row spans of one file as the table: readSQL's
// SELECT over that file alone with read_parquet's file_row_number,
// filtered to the spans. DuckDB 1.5 pushes the bounds on file_row_number
// into its Parquet scan and skips the row groups outside them; the
// disjunction of spans then drops the other rows of the row groups read.
func rangesSQL(t catalog.Table, cols []catalog.Column, file string, odd map[string]bool, consts partConsts,
	schemas map[string]fileSchema, spans []rowSpan) (string, error) {
	if odd[file] {
		for _, n := range schemas[file].names {
			if types.SameIdent(n, "file_row_number") {
				return "", fmt.Errorf("the file has a column named file_row_number")
			}
		}
	}
	// The file's deletes join the spans' condition (read_parquet's
	// file_row_number once).
	deleted := deletedRows(consts[file])
	if deleted != "" {
		fc := maps.Clone(consts[file])
		delete(fc, deletesKey)
		consts = partConsts{file: fc}
	}
	base, _, err := readSQL(t, cols, []string{file}, odd, consts, schemas, fileSource{})
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(base, ")") || strings.Count(base, " FROM read_parquet(") != 1 || strings.Contains(base, " UNION ALL ") {
		return "", fmt.Errorf("unexpected SQL for one file")
	}
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(base, ")"))
	b.WriteString(", file_row_number = true)")
	fmt.Fprintf(&b, " WHERE file_row_number >= %d AND file_row_number < %d", spans[0].lo, spans[len(spans)-1].hi)
	if len(spans) > 1 {
		b.WriteString(" AND (")
		for i, s := range spans {
			if i > 0 {
				b.WriteString(" OR ")
			}
			fmt.Fprintf(&b, "(file_row_number >= %d AND file_row_number < %d)", s.lo, s.hi)
		}
		b.WriteString(")")
	}
	if deleted != "" {
		b.WriteString(" AND " + deleted)
	}
	return b.String(), nil
}

// pageLoads are the temporary tables a query's views read (the page
// path), to be filled on the connection the query runs on.
type pageLoads []*pageLoad

// partialView is readSQL for a view whose files may be read in part:
// the files in their order, runs of files read whole through readSQL, and
// each file read in part through the page path (pagesSQL, its rows loaded
// later into a temporary table: loads) or the row-range SQL (rangesSQL),
// UNION ALL. Keeping the files' order keeps the rows' (see readSQL).
// reads says how each file (of kept, in the order of files) was read.
// noPages leaves the page path out: in a sandboxed engine only DuckDB
// reads data files, so that its allowed_directories hold for every read.
// b is the predicate the plan was made with (nil: none), for the page
// path's row filter.
func partialView(ctx context.Context, t catalog.Table, cols []catalog.Column, files []string, kept []prune.KeptFile, odd map[string]bool, consts partConsts,
	schemas map[string]fileSchema, source fileSource, mode PartialMode, noPages bool, b *expr.Bound, paged map[int]*objectPage,
	stamps map[string]fileStamp, ordered bool) (sql string, mixed bool, reads []FileRead, loads pageLoads, err error) {
	for _, c := range cols {
		if types.SameIdent(c.Name, "file_row_number") {
			// read_parquet's own column would clash with the table's.
			mode = PartialOff
		}
	}
	if len(kept) != len(files) {
		// Not a plan's files (cannot happen): read them as before.
		parts, mixed, err := readParts(t, cols, files, odd, consts, schemas, source)
		return unionAll(parts, ordered), mixed, nil, nil, err
	}
	// Files of one schema read alike; files of several make the union
	// mixed (see readSQL and Engine.mixedDB), however they are read.
	sigs := map[string]bool{}
	for _, f := range files {
		sigs[schemas[f].sig] = true // "" for files matching the table
	}
	var parts []string
	var run []string
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		ps, m, err := readParts(t, cols, run, odd, consts, schemas, source)
		if err != nil {
			return err
		}
		parts = append(parts, ps...)
		mixed = mixed || m
		run = nil
		return nil
	}
	for i, f := range files {
		if op := paged[i]; op != nil {
			// An object whose kept pages were read already, by ranged
			// requests (objectPages): it was not fetched.
			reads = append(reads, op.fp.read)
			if err := flush(); err != nil {
				return "", false, nil, nil, err
			}
			parts = append(parts, op.sql)
			if !op.ld.inline {
				loads = append(loads, op.ld)
			}
			continue
		}
		fp, err := partialRead(kept[i], t.Name, f, mode, stamps[f])
		if err != nil {
			return "", false, nil, nil, err
		}
		s, ld := choosePartial(ctx, &fp, t, cols, f, odd, consts, schemas, mode, noPages, b)
		reads = append(reads, fp.read)
		if s == "" {
			run = append(run, f)
			continue
		}
		if err := flush(); err != nil {
			return "", false, nil, nil, err
		}
		parts = append(parts, s)
		if ld != nil && !ld.inline {
			loads = append(loads, ld)
		}
	}
	if err := flush(); err != nil {
		return "", false, nil, nil, err
	}
	if len(parts) == 0 {
		sql, mixed, err = readSQL(t, cols, nil, odd, consts, schemas, source)
		return sql, mixed, reads, nil, err
	}
	mixed = mixed || len(sigs) > 1
	return unionAll(parts, ordered), mixed, reads, loads, nil
}

// choosePartial is the cost rule, for a file partialRead found may be read
// in part: the page path when few rows are kept (DuckDB would read every
// page up to them), the row-range SQL when DuckDB's reading up to the last
// kept row of each row group touched costs at most a quarter of the file,
// else the whole file. It returns the file's SQL ("" for the whole file)
// and the rows to load for the page path, and fills fp.read.
func choosePartial(ctx context.Context, fp *filePlan, t catalog.Table, cols []catalog.Column, f string, odd map[string]bool, consts partConsts,
	schemas map[string]fileSchema, mode PartialMode, noPages bool, b *expr.Bound) (string, *pageLoad) {
	rd := &fp.read
	if rd.How != ReadRowRanges {
		return "", nil
	}
	whole := func(why string) (string, *pageLoad) {
		rd.How, rd.Why, rd.Rows, rd.Bytes, rd.Ranges, rd.RowGroups = ReadWhole, why, rd.FileRows, 0, 0, 0
		return "", nil
	}
	why := pageWhy(fp, cols, odd[f], consts[f], mode, noPages)
	if why == "" {
		// The file whose footer partialRead checked, not one that took
		// its path since.
		osf, err := pqmeta.Open(f, fp.f.Identity)
		if err == nil {
			var s string
			var ld *pageLoad
			s, ld, err = tryPages(ctx, fp, cols, osf, nil, consts[f], mode, b)
			osf.Close()
			if err == nil {
				return s, ld
			}
		}
		why = "page path: " + err.Error()
	}
	rd.Bytes = rowRangeBytes(*fp)
	if mode == PartialAuto && rd.Bytes*4 > rd.FileBytes {
		return whole("DuckDB would read most of the file up to the kept rows (" + why + ")")
	}
	spans := mergeSpans(fp.spans, maxRanges)
	s, err := rangesSQL(t, cols, f, odd, consts, schemas, spans)
	if err != nil {
		return whole("partial scan: " + err.Error())
	}
	rd.Ranges = len(spans)
	rd.Why = "row groups up to the kept rows hold a small share of the bytes (" + why + ")"
	if mode != PartialAuto {
		rd.Why = "forced (" + why + ")"
	}
	return s, nil
}

// pageWhy says why the page path may not read a file that may be read in
// part ("" when it may), and sets the row groups the ranges touch.
func pageWhy(fp *filePlan, cols []catalog.Column, odd bool, consts fileConstants, mode PartialMode, noPages bool) string {
	rd := &fp.read
	rd.RowGroups = touchedRowGroups(*fp)
	switch {
	case mode == PartialForceRows:
		return "forced to row ranges"
	case noPages:
		return "sandboxed: DuckDB reads every file"
	case odd:
		return "columns differ from the table's"
	case mapped(consts, cols):
		// The page path reads columns by the table's names: a file
		// registered before a column was renamed, dropped and added again,
		// or added, holds other columns under them (mapColumns).
		return "read through the table's column mapping"
	case mode == PartialAuto && (rd.Rows > pageMaxRows || rd.Rows*8 > rd.FileRows):
		return "too many rows for the page path"
	}
	return ""
}

// tryPages reads a file's kept ranges by the page path from src (pf, when
// set, told ahead of each read which byte ranges it needs: an object's
// PartReader) and returns its SQL and rows; fp.read says so on success.
func tryPages(ctx context.Context, fp *filePlan, cols []catalog.Column, src parquet.ReaderAtSeeker, pf func([]storage.Range) error,
	consts fileConstants, mode PartialMode, b *expr.Bound) (string, *pageLoad, error) {
	rd := &fp.read
	pcs, err := pageColumns(fp.f, cols)
	if err != nil {
		return "", nil, err
	}
	var deleted []int64
	if p, ok := consts[deletesPathKey]; ok {
		if deleted, err = DeletedPositions(p); err != nil {
			return "", nil, fmt.Errorf("the delete file %s: %w", p, err)
		}
	}
	ld, err := readPages(ctx, src, pf, pcs, fp.spans, fp.firsts, newRowFilter(b, pcs), deleted)
	if err != nil {
		return "", nil, err
	}
	ld.table = fmt.Sprintf("__rocklake_p%d", pageTables.Add(1))
	s, err := pagesSQL(cols, ld, consts)
	if err != nil {
		return "", nil, err
	}
	rd.How, rd.Ranges, rd.Bytes, rd.Handed = ReadPages, len(fp.spans), ld.bytes, int64(ld.rows)
	rd.Why = "few rows kept"
	if mode == PartialForce {
		rd.Why = "forced"
	}
	return s, ld, nil
}

// mapped says whether a file reads any of the table's columns other than
// by its own name and type (consts are its constants: mapColumns).
func mapped(consts fileConstants, cols []catalog.Column) bool {
	for _, c := range cols {
		if _, ok := consts[c.ID]; ok && c.Partition == "" && !c.Parent.Known {
			return true
		}
	}
	return false
}

// partialSummary is the bind phase's detail: how many kept files were
// read in part.
func partialSummary(reads map[*prune.Plan][]FileRead) string {
	var n, parts int
	var rows, fileRows int64
	for _, rs := range reads {
		for _, r := range rs {
			n++
			if r.How != ReadWhole {
				parts++
				rows += r.Rows
				fileRows += r.FileRows
			}
		}
	}
	if parts == 0 {
		return ""
	}
	return fmt.Sprintf("read in part: %d of %d files, %d of %d rows", parts, n, rows, fileRows)
}
