package prune

import (
	"fmt"
	"runtime"
	"sync"

	"rocklake/catalog"
	"rocklake/expr"
	"rocklake/ingest"
	"rocklake/stats"
)

// Counts are units total, kept (to read) and all-match (kept, no filter
// needed).
type Counts struct {
	Total    int `json:"total"`
	Kept     int `json:"kept"`
	AllMatch int `json:"all_match"`
}

// PageCounts are the pages the page level considered; Evaluated is false
// when no page index was consulted.
type PageCounts struct {
	Total     int  `json:"total"`
	Kept      int  `json:"kept"`
	Evaluated bool `json:"evaluated"`
}

// Bytes are data bytes in all files and in the kept units. A kept row
// group counts its share of the file by rows.
type Bytes struct {
	Total int64 `json:"total"`
	Kept  int64 `json:"kept"`
}

// KeptFile is a file the query must read, with the row groups to read;
// AllMatch says every row in those row groups matches. With page-level
// pruning, Ranges lists the row ranges within them still to read.
type KeptFile struct {
	Path      string     `json:"path"`
	FileID    int64      `json:"file_id"`
	Rows      int64      `json:"rows"`
	RowGroups []int32    `json:"row_groups"`
	AllMatch  bool       `json:"all_match"`
	Ranges    []RowRange `json:"row_ranges,omitempty"`
}

// RowRange is rows [First, First+Count) of a file, in one row group.
type RowRange struct {
	RowGroup int32 `json:"row_group"`
	First    int64 `json:"first_row"`
	Count    int64 `json:"rows"`
}

// Plan is what pruning decided for one table and predicate.
type Plan struct {
	Table     string      `json:"table"`
	Snapshot  int64       `json:"snapshot"`
	Predicate string      `json:"predicate"`
	Bound     string      `json:"bound"`
	Files     Counts      `json:"files"`
	RowGroups Counts      `json:"row_groups"`
	Pages     PageCounts  `json:"pages"`
	Bloom     BloomCounts `json:"bloom"`
	Bytes     Bytes       `json:"bytes"`
	KeptFiles []KeptFile  `json:"kept_files"`

	cursors map[int64]*catalog.RowGroupCursor // open while planning

}

// BloomCounts are the row groups whose bloom filters were read, and of
// those the ones the filters skipped.
type BloomCounts struct {
	Probed  int `json:"probed"`
	Skipped int `json:"skipped"`
}

// bloomWorthIt says whether reading bloom filters still pays in this plan.
// Each probe opens the file and reads its footer (tens of microseconds);
// a value present in almost every row group (a low-cardinality column)
// makes that pure cost, so after 16 probes that skipped fewer than one in
// eight, the plan stops probing. Not probing only keeps row groups.
func (p *Plan) bloomWorthIt() bool {
	return p.Bloom.Probed < 16 || p.Bloom.Skipped*8 >= p.Bloom.Probed
}

// Options tune planning. The zero value plans files and row groups and
// reads bloom filters where the cost rule says so.
type Options struct {
	// FilesOnly stops at the file level (no row-group stats read).
	FilesOnly bool
	// Pages reads the page index of kept row groups and keeps only the row
	// ranges whose pages may match.
	Pages bool
	// NoBloom never reads bloom filters.
	NoBloom bool
	// NoFilters ignores the catalog's membership filters.
	NoFilters bool
	// IndexMinRows is the cost rule: a row group with fewer rows is read
	// whole instead of first reading its bloom filters or page index (one
	// extra small read each, at their stored offsets). 0 means 1024; a
	// negative value consults them for every row group.
	IndexMinRows int64
}

func (o Options) minRows() int64 {
	switch {
	case o.IndexMinRows == 0:
		return 1024
	case o.IndexMinRows < 0:
		return 0
	}
	return o.IndexMinRows
}

// PlanTable prunes a table's files and row groups for a predicate at the
// reader's snapshot. A predicate of "" or "true" keeps everything.
func PlanTable(r *catalog.Reader, table, predicate string, opts Options) (*Plan, error) {
	t, err := r.Table(table)
	if err != nil {
		return nil, err
	}
	cols, err := r.Columns(t.ID)
	if err != nil {
		return nil, err
	}
	if predicate == "" {
		predicate = "true"
	}
	b, err := expr.Compile(predicate, cols)
	if err != nil {
		return nil, err
	}
	return PlanBound(r, t, b, opts)
}

// PlanBound prunes a table's files and row groups for a predicate already
// bound to the table's columns (expr.Bind, expr.Compile), at the reader's
// snapshot; t must come from the same reader. A nil b keeps everything, as
// the predicate "true" does.
func PlanBound(r *catalog.Reader, t catalog.Table, b *expr.Bound, opts Options) (*Plan, error) {
	if b == nil {
		b = &expr.Bound{Text: "true", Pred: &expr.Const{Value: true}}
	}
	fs, err := r.FileSet(t.ID)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Table: t.Name, Snapshot: r.Snapshot().ID, Predicate: b.Text, Bound: b.Pred.String(), KeptFiles: []KeptFile{}}
	plan.Files.Total, plan.RowGroups.Total, plan.Bytes.Total = fs.Len(), int(fs.TotalRowGroups), fs.TotalBytes
	eval := Compile(b.Pred)

	// File level: each predicate column's stats, column-major and cached
	// by the catalog, aligned with the file set.
	colIDs := make([]int64, len(b.Columns))
	bounds := make([]*catalog.ColumnBounds, len(b.Columns))
	for i, c := range b.Columns {
		if bounds[i], err = r.ColumnBounds(t.ID, c.ID); err != nil {
			return nil, err
		}
		colIDs[i] = c.ID
	}
	// Membership filters of the columns under = (and IN).
	var filters map[int64]*catalog.FilterSet
	if !opts.NoFilters {
		for id := range equalityColumns(b.Pred) {
			fl, err := r.Filters(t.ID, id)
			if err != nil {
				return nil, err
			}
			if fl != nil {
				if filters == nil {
					filters = map[int64]*catalog.FilterSet{}
				}
				filters[id] = fl
			}
		}
	}
	results := evalFiles(fs, colIDs, bounds, filters, eval, compilePrefilter(b.Pred, colIDs, bounds))
	defer func() {
		for _, c := range plan.cursors {
			c.Close()
		}
		plan.cursors = nil
	}()
	for i, res := range results {
		if res == Skip {
			continue
		}
		f := fs.Files[i]
		kf := KeptFile{Path: f.Location(t), FileID: f.ID, Rows: f.RecordCount, AllMatch: res == AllMatch}
		if res == AllMatch || opts.FilesOnly || f.RowGroupCount <= 0 {
			for i := int32(0); i < f.RowGroupCount; i++ {
				kf.RowGroups = append(kf.RowGroups, i)
			}
			plan.keep(kf, f, f.RecordCount, res == AllMatch, int(f.RowGroupCount))
			continue
		}
		rgRes, rgRows, ranges, err := plan.planRowGroups(r, t, f, b, eval, opts)
		if err != nil {
			return nil, err
		}
		kf.Ranges = ranges
		var keptRows int64
		allRG := 0
		if opts.Pages {
			keptRows = 0
			for _, rr := range ranges {
				keptRows += rr.Count
			}
		}
		for i, res := range rgRes {
			if res == Skip {
				continue
			}
			kf.RowGroups = append(kf.RowGroups, int32(i))
			if !opts.Pages {
				keptRows += rgRows[i]
			}
			if res == AllMatch {
				allRG++
			}
		}
		if len(kf.RowGroups) == 0 {
			continue // every row group skipped
		}
		kf.AllMatch = allRG == len(kf.RowGroups) // every row it reads matches
		plan.keep(kf, f, keptRows, false, allRG)
	}
	return plan, nil
}

// prefilterCheck, set by tests, sees the evaluator's answer (from stats
// alone) for every file the prefilter skipped: it must be Skip.
var prefilterCheck func(Result)

// parallelFiles is the table size from which files are evaluated in
// parallel (tests lower it to run the parallel path on small tables).
var parallelFiles = 1 << 15

// evalFiles evaluates every file, in parallel chunks for large tables.
// An empty file is skipped: there is nothing to read.
func evalFiles(fs *catalog.FileSet, colIDs []int64, bounds []*catalog.ColumnBounds, filters map[int64]*catalog.FilterSet,
	eval Evaluator, pf prefilter) []Result {
	n := fs.Len()
	out := make([]Result, n)
	chunk := func(lo, hi int) {
		// One scratch ColumnStats per column, filled at most once per file.
		scratch := make([]stats.Column, len(colIDs))
		filled := make([]int, len(colIDs))
		present := make([]bool, len(colIDs))
		for k := range filled {
			filled[k] = -1
		}
		var fi int
		unit := StatsOnly(func(colID int64) *stats.Column {
			for k, id := range colIDs {
				if id != colID {
					continue
				}
				if filled[k] != fi {
					filled[k], present[k] = fi, bounds[k].Fill(fi, &scratch[k])
				}
				if !present[k] {
					return nil
				}
				return &scratch[k]
			}
			return nil
		})
		if filters != nil {
			unit.Absent = func(colID int64, value []byte) bool {
				fl := filters[colID]
				return fl != nil && !fl.MayContain(fi, value)
			}
		}
		var skip []bool
		if pf != nil {
			skip = make([]bool, hi-lo)
			pf(lo, skip)
		}
		for fi = lo; fi < hi; fi++ {
			if fs.RecordCounts[fi] == 0 {
				out[fi] = Skip
				continue
			}
			if skip != nil && skip[fi-lo] {
				out[fi] = Skip
				if prefilterCheck != nil {
					// Against stats alone: the prefilter never asks filters.
					absent := unit.Absent
					unit.Absent = nil
					prefilterCheck(eval(unit))
					unit.Absent = absent
				}
				continue
			}
			out[fi] = eval(unit)
		}
	}
	workers := runtime.GOMAXPROCS(0)
	if n < parallelFiles || workers < 2 {
		chunk(0, n)
		return out
	}
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += per {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			chunk(lo, hi)
		}(lo, min(lo+per, n))
	}
	wg.Wait()
	return out
}

// rowGroups reads a kept file's row-group stats for a column through one
// cursor per column for the whole plan (files come in id order).
func (p *Plan) rowGroups(r *catalog.Reader, tableID, columnID, fileID int64) ([]catalog.RowGroupStats, error) {
	c := p.cursors[columnID]
	if c == nil {
		var err error
		if c, err = r.RowGroupCursor(tableID, columnID); err != nil {
			return nil, err
		}
		if p.cursors == nil {
			p.cursors = map[int64]*catalog.RowGroupCursor{}
		}
		p.cursors[columnID] = c
	}
	return c.Stats(fileID)
}

func (p *Plan) keep(kf KeptFile, f catalog.DataFile, keptRows int64, allMatch bool, allMatchRGs int) {
	p.Files.Kept++
	if allMatch || kf.AllMatch {
		p.Files.AllMatch++
	}
	p.RowGroups.Kept += len(kf.RowGroups)
	p.RowGroups.AllMatch += allMatchRGs
	if f.RecordCount > 0 {
		p.Bytes.Kept += f.FileSizeBytes * keptRows / f.RecordCount
	}
	p.KeptFiles = append(p.KeptFiles, kf)
}

// planRowGroups evaluates each row group of a file from its stored stats,
// then, for row groups still undecided and large enough, from bloom filters
// and the page index. ranges lists the row ranges to read when pages were
// consulted.
func (p *Plan) planRowGroups(r *catalog.Reader, t catalog.Table, f catalog.DataFile, b *expr.Bound, eval Evaluator, opts Options) ([]Result, []int64, []RowRange, error) {
	n := int(f.RowGroupCount)
	per := make([]map[int64]*stats.Column, n)
	info := make([]map[int64]catalog.RowGroupStats, n)
	rows := make([]int64, n)
	firsts := make([]int64, n)
	for i := range per {
		per[i] = map[int64]*stats.Column{}
		info[i] = map[int64]catalog.RowGroupStats{}
	}
	haveRows := false
	for _, c := range b.Columns {
		rgs, err := p.rowGroups(r, t.ID, c.ID, f.ID)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, rg := range rgs {
			if int(rg.Index) < n && rg.Index >= 0 {
				st := rg.Stats
				per[rg.Index][c.ID] = &st
				info[rg.Index][c.ID] = rg
				rows[rg.Index] = st.RowCount
				firsts[rg.Index] = rg.FirstRow
				haveRows = true
			}
		}
	}
	if !haveRows {
		// No row-group stats for any predicate column (e.g. the predicate
		// names none): spread the file's rows evenly for the byte estimate.
		for i := range rows {
			rows[i] = f.RecordCount / int64(max(n, 1))
			firsts[i] = int64(i) * rows[i]
		}
	}
	eqCols := equalityColumns(b.Pred)
	var fx *ingest.FileIndex
	var fxErr error
	index := func() *ingest.FileIndex {
		if fx == nil && fxErr == nil {
			fx, fxErr = ingest.OpenIndex(f.Location(t))
		}
		return fx
	}
	defer func() {
		if fx != nil {
			fx.Close()
		}
	}()
	out := make([]Result, n)
	var ranges []RowRange
	for i := range per {
		if haveRows && rows[i] == 0 {
			out[i] = Skip // an empty row group
			continue
		}
		m := per[i]
		unit := StatsOnly(func(colID int64) *stats.Column { return m[colID] })
		out[i] = eval(unit)
		if out[i] != Maybe || rows[i] < opts.minRows() {
			if out[i] != Skip && opts.Pages {
				ranges = append(ranges, RowRange{RowGroup: int32(i), First: firsts[i], Count: rows[i]})
			}
			continue
		}
		if !opts.NoBloom && hasBloom(info[i], eqCols) && p.bloomWorthIt() && index() != nil {
			rg := i
			unit.Absent = func(colID int64, value []byte) bool {
				c := columnByID(b, colID)
				if c == nil || c.Codec == nil {
					return false
				}
				v, err := c.Codec.Decode(value)
				if err != nil {
					return false
				}
				absent, err := fx.BloomAbsent(rg, c.Column, v)
				return err == nil && absent
			}
			out[i] = eval(unit)
			p.Bloom.Probed++
			if out[i] == Skip {
				p.Bloom.Skipped++
			}
		}
		if out[i] == Skip || !opts.Pages {
			continue
		}
		kept, total, keptRanges := p.pages(index(), i, firsts[i], rows[i], b, m, eval, unit.Absent)
		p.Pages.Evaluated = true
		p.Pages.Total += total
		p.Pages.Kept += kept
		if total > 0 && kept == 0 {
			out[i] = Skip
			continue
		}
		ranges = append(ranges, keptRanges...)
	}
	return out, rows, ranges, nil
}

// pages splits a row group at every page boundary of every predicate column
// and evaluates each piece with the stats of the pages covering it; pieces
// that cannot match are dropped, the rest merged into row ranges.
func (p *Plan) pages(fx *ingest.FileIndex, rg int, first, rows int64, b *expr.Bound, rgStats map[int64]*stats.Column, eval Evaluator, absent func(int64, []byte) bool) (kept, total int, ranges []RowRange) {
	whole := []RowRange{{RowGroup: int32(rg), First: first, Count: rows}}
	if fx == nil {
		return 0, 0, whole
	}
	colPages := map[int64][]ingest.Page{}
	cuts := map[int64]bool{0: true, rows: true}
	for _, c := range b.Columns {
		pages, err := fx.Pages(rg, c.Column)
		if err != nil || len(pages) == 0 {
			continue // no page index: the row-group stats stand for it
		}
		colPages[c.ID] = pages
		for _, pg := range pages {
			cuts[pg.FirstRow] = true
		}
	}
	if len(colPages) == 0 {
		return 0, 0, whole
	}
	var bounds []int64
	for x := range cuts {
		if x >= 0 && x <= rows {
			bounds = append(bounds, x)
		}
	}
	sortInt64s(bounds)
	for k := 0; k+1 < len(bounds); k++ {
		lo, hi := bounds[k], bounds[k+1]
		if lo == hi {
			continue
		}
		total++
		stats := func(colID int64) *stats.Column {
			pages, ok := colPages[colID]
			if !ok {
				return rgStats[colID]
			}
			for i := range pages {
				if pages[i].FirstRow <= lo && lo < pages[i].FirstRow+pages[i].Rows {
					return &pages[i].Stats
				}
			}
			return nil
		}
		if eval(&Unit{Stats: stats, Absent: absent}) == Skip {
			continue
		}
		kept++
		if n := len(ranges); n > 0 && ranges[n-1].First+ranges[n-1].Count == first+lo {
			ranges[n-1].Count += hi - lo
		} else {
			ranges = append(ranges, RowRange{RowGroup: int32(rg), First: first + lo, Count: hi - lo})
		}
	}
	return kept, total, ranges
}

func sortInt64s(x []int64) {
	for i := 1; i < len(x); i++ {
		for j := i; j > 0 && x[j] < x[j-1]; j-- {
			x[j], x[j-1] = x[j-1], x[j]
		}
	}
}

// equalityColumns lists the columns compared with = (or IN) in a predicate:
// the ones a bloom filter can answer for.
func equalityColumns(p expr.Pred) map[int64]bool {
	out := map[int64]bool{}
	var walk func(expr.Pred)
	walk = func(p expr.Pred) {
		switch p := p.(type) {
		case *expr.Cmp:
			if p.Op == expr.OpEq && !p.NaN {
				out[p.Col.ID] = true
			}
		case *expr.And:
			for _, a := range p.Args {
				walk(a)
			}
		case *expr.Or:
			for _, a := range p.Args {
				walk(a)
			}
		}
	}
	walk(p)
	return out
}

func hasBloom(info map[int64]catalog.RowGroupStats, cols map[int64]bool) bool {
	for id := range cols {
		if rg, ok := info[id]; ok && rg.BloomFilter.Length != 0 {
			return true
		}
	}
	return false
}

func columnByID(b *expr.Bound, id int64) *expr.Column {
	for _, c := range b.Columns {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// String summarises a plan in one line.
func (p *Plan) String() string {
	return fmt.Sprintf("%s@%d: files %d/%d kept (%d all-match), row groups %d/%d kept (%d all-match), bytes %d/%d",
		p.Table, p.Snapshot, p.Files.Kept, p.Files.Total, p.Files.AllMatch, p.RowGroups.Kept, p.RowGroups.Total,
		p.RowGroups.AllMatch, p.Bytes.Kept, p.Bytes.Total)
}
