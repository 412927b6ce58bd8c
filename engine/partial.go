package engine

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/prune"
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
	// PartialForce reads the row ranges of every kept file that can be
	// read so, whatever they cost, and reads the page index of every row
	// group (unless QueryOptions.Prune says otherwise): for tests, which
	// run the differential suites through this path.
	PartialForce
)

// Read methods of FileRead.How.
const (
	ReadWhole     = "whole"      // DuckDB reads the file as it decides
	ReadRowRanges = "row_ranges" // DuckDB reads the kept row ranges only
)

// FileRead is how a query read one kept file, and why: the file whole, or
// only its kept row ranges (read_parquet's file_row_number, which DuckDB
// pushes into its scan: row groups outside the ranges are not read).
// Bytes are the compressed column chunks of the row groups read, of every
// column (DuckDB reads only the columns the query uses), and FileBytes
// those of the whole file; both 0 when the footer was not read.
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
		if opts.Partial == PartialForce {
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

// partialRead decides how one kept file is read. spans are the row ranges
// to read when read.How is ReadRowRanges. path is where DuckDB reads the
// file (a local copy for an object); odd says its columns differ from the
// table's (it is then read by name, as readSQL reads such files).
func partialRead(kf prune.KeptFile, path string, mode PartialMode) (read FileRead, spans []rowSpan) {
	read = FileRead{Path: kf.Path, How: ReadWhole, Rows: kf.Rows, FileRows: kf.Rows}
	switch {
	case mode == PartialOff:
		read.Why = "partial scan off"
		return read, nil
	case kf.Ranges == nil:
		// No ranges: every row group matched in full, or planning had no
		// row-group rows to derive ranges from.
		read.Why = "no row ranges planned"
		return read, nil
	}
	var kept int64
	for _, r := range kf.Ranges {
		kept += r.Count
	}
	if mode == PartialAuto && kept*2 > kf.Rows {
		read.Why = "most rows kept"
		return read, nil
	}
	// The footer gives each row group's first row and bytes: the plan's
	// ranges are checked against it, so that a range derived from
	// statistics that do not describe this file never drops a row.
	f, err := pqmeta.Read(path, pqmeta.FileIdentity{})
	if err != nil {
		read.Why = "footer unreadable"
		return read, nil
	}
	firsts := make([]int64, len(f.RowGroups)+1)
	for i, rg := range f.RowGroups {
		firsts[i+1] = firsts[i] + rg.Rows
		for _, c := range rg.Chunks {
			read.FileBytes += c.CompressedSize
		}
	}
	read.FileRows = f.Rows
	if f.Rows != kf.Rows {
		read.Why = "footer's rows differ from the catalog's"
		return read, nil
	}
	touched := map[int32]bool{}
	for _, r := range kf.Ranges {
		g := int(r.RowGroup)
		if g < 0 || g >= len(f.RowGroups) || r.Count <= 0 || r.First < firsts[g] || r.First+r.Count > firsts[g+1] {
			read.Why = "row ranges do not match the footer"
			return read, nil
		}
		touched[r.RowGroup] = true
		spans = append(spans, rowSpan{r.First, r.First + r.Count})
	}
	spans = mergeSpans(spans, maxRanges)
	read.Rows = 0
	for _, s := range spans {
		read.Rows += s.hi - s.lo
	}
	for g := range touched {
		for _, c := range f.RowGroups[g].Chunks {
			read.Bytes += c.CompressedSize
		}
	}
	read.Ranges, read.RowGroups = len(spans), len(touched)
	if mode == PartialAuto && !partialPays(read) {
		read.Why = "row groups read hold most bytes"
		read.Rows, read.Ranges, read.RowGroups = kf.Rows, 0, 0
		return read, nil
	}
	read.How = ReadRowRanges
	if mode == PartialForce {
		read.Why = "forced"
	} else {
		read.Why = "kept row groups hold a small share of the bytes"
	}
	return read, spans
}

// partialPays is the cost rule. DuckDB reads the whole file's footer and
// skips row groups by its own statistics only where its filter allows;
// given the row ranges it reads only the row groups they touch, but every
// page of those. So the ranges pay when the row groups they touch hold at
// most half of the file's bytes; the rest of the gain (rows outside the
// ranges never reach the query's filter) is small beside the bytes.
func partialPays(r FileRead) bool {
	return r.FileBytes > 0 && r.Bytes*2 <= r.FileBytes
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
	base, _, err := readSQL(t, cols, []string{file}, odd, consts, schemas, func([]string) string { return "" })
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
	return b.String(), nil
}

// partialView is readSQL for a view whose files may be read in part:
// the files in their order, runs of files read whole through readSQL and
// each file read in part through rangesSQL, UNION ALL. Keeping the
// files' order keeps the rows' (see readSQL). reads says how each file
// (of kept, in the order of files) was read.
func partialView(t catalog.Table, cols []catalog.Column, files []string, kept []prune.KeptFile, odd map[string]bool, consts partConsts,
	schemas map[string]fileSchema, source func([]string) string, mode PartialMode) (sql string, mixed bool, reads []FileRead, err error) {
	for _, c := range cols {
		if types.SameIdent(c.Name, "file_row_number") {
			// read_parquet's own column would clash with the table's.
			mode = PartialOff
		}
	}
	if len(kept) != len(files) {
		// Not a plan's files (cannot happen): read them as before.
		sql, mixed, err = readSQL(t, cols, files, odd, consts, schemas, source)
		return sql, mixed, nil, err
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
		s, m, err := readSQL(t, cols, run, odd, consts, schemas, source)
		if err != nil {
			return err
		}
		parts = append(parts, s)
		mixed = mixed || m
		run = nil
		return nil
	}
	for i, f := range files {
		read, spans := partialRead(kept[i], f, mode)
		if read.How == ReadRowRanges {
			s, err := rangesSQL(t, cols, f, odd, consts, schemas, spans)
			if err != nil {
				read.How, read.Why = ReadWhole, "partial scan: "+err.Error()
				read.Rows, read.Ranges, read.RowGroups = read.FileRows, 0, 0
			} else {
				if err := flush(); err != nil {
					return "", false, nil, err
				}
				parts = append(parts, s)
				reads = append(reads, read)
				continue
			}
		}
		reads = append(reads, read)
		run = append(run, f)
	}
	if err := flush(); err != nil {
		return "", false, nil, err
	}
	if len(parts) == 0 {
		sql, mixed, err = readSQL(t, cols, nil, odd, consts, schemas, source)
		return sql, mixed, reads, err
	}
	mixed = mixed || len(sigs) > 1
	return strings.Join(parts, " UNION ALL "), mixed, reads, nil
}

// partialSummary is the bind phase's detail: how many kept files were
// read in part.
func partialSummary(reads map[*prune.Plan][]FileRead) string {
	var n, parts int
	var rows, fileRows int64
	for _, rs := range reads {
		for _, r := range rs {
			n++
			if r.How == ReadRowRanges {
				parts++
				rows += r.Rows
				fileRows += r.FileRows
			}
		}
	}
	if parts == 0 {
		return ""
	}
	return fmt.Sprintf("row ranges of %d of %d files: %d of %d rows", parts, n, rows, fileRows)
}
