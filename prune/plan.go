package prune

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/storage"
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
// pruning, Ranges lists the row ranges within them still to read; none
// when the file's row-group rows are unknown (no predicate column has
// row-group statistics in it), and then the row groups are read whole.
type KeptFile struct {
	Path      string     `json:"path"`
	FileID    int64      `json:"file_id"`
	Rows      int64      `json:"rows"`
	Bytes     int64      `json:"bytes"` // the whole file's size
	RowGroups []int32    `json:"row_groups"`
	AllMatch  bool       `json:"all_match"`
	Ranges    []RowRange `json:"row_ranges,omitempty"`
	// Partition is the file's value of each partition column (Hive-style
	// key=value directories), by column name, in DuckLake's text form;
	// null for a NULL partition.
	Partition map[string]*string `json:"partition_values,omitempty"`
	// Layout is the file's value of each field of the declared layout a
	// rewrite wrote it under (catalog.LayoutValue), by the field's text
	// ("month(ts)": "2024-03"); null for NULL. Pruning reads the source
	// column's statistics, which these values bound, not these.
	Layout map[string]*string `json:"layout_values,omitempty"`
	// Columns are the table's columns this file holds under another name
	// or type, or not at all, because the table changed after the file was
	// registered (table alter): an engine reading the file must read them
	// so, and every other column under the table's name. Empty when the
	// file holds the table's columns as they are.
	Columns []ColumnSource `json:"column_mapping,omitempty"`
}

// ColumnSource is how a kept file holds one of the table's top-level
// columns.
type ColumnSource struct {
	Column string `json:"column"` // the table's name at the plan's snapshot
	// FileColumn and FileType are the file's name and type of it; both
	// empty when the file predates the column, which then reads as Default
	// (NULL when absent) in every row.
	FileColumn string  `json:"file_column,omitempty"`
	FileType   string  `json:"file_type,omitempty"`
	Default    *string `json:"default,omitempty"`
}

// RowRange is rows [First, First+Count) of a file, in one row group.
// AllMatch says the statistics prove every one of its rows matches (the
// row group's, or its pages'): a count over the range needs no row.
// Ranges next to each other join only when both match in full or both
// may not.
type RowRange struct {
	RowGroup int32 `json:"row_group"`
	First    int64 `json:"first_row"`
	Count    int64 `json:"rows"`
	AllMatch bool  `json:"all_match,omitempty"`
}

// Plan is what pruning decided for one table and predicate.
type Plan struct {
	Table     string      `json:"table"`
	Snapshot  int64       `json:"snapshot_id"`
	Predicate string      `json:"predicate"`
	Bound     string      `json:"bound"`
	Files     Counts      `json:"files"`
	RowGroups Counts      `json:"row_groups"`
	Pages     PageCounts  `json:"pages"`
	Bloom     BloomCounts `json:"bloom"`
	Bytes     Bytes       `json:"bytes"`
	KeptFiles []KeptFile  `json:"kept_files"`
	// SubFields are the VARIANT sub-fields the predicate reads, each with
	// the files whose sub-field statistics could be used (the others may
	// match whatever the predicate says).
	SubFields []SubField `json:"sub_fields"`
	// Objects are the kept files in object storage, which a query fetches
	// whole (unless the local cache holds them).
	Objects ObjectCounts `json:"object_storage"`

	objects   storage.Store  // the store objects' indexes were read from; nil when none was
	objBefore storage.Counts // its counts when the plan first used it

	deferred *deferredFiles // files kept whole and not yet listed (Options.DeferWhole)
}

// deferredFiles are what Resolve needs to list the files a plan kept
// whole without reading their rows: the FileSet positions of those files
// and of the files listed in KeptFiles, in the FileSet's order, so that
// the listing can be merged back into that order.
type deferredFiles struct {
	t         catalog.Table
	fs        *catalog.FileSet
	positions []int // kept whole, not listed
	listed    []int // KeptFiles[k] is the file at listed[k]
}

// Deferred are the FileSet positions of the files kept whole and not yet
// listed in KeptFiles (Options.DeferWhole): every row of each matches.
// Nil once Resolve has listed them.
func (p *Plan) Deferred() []int {
	if p.deferred == nil {
		return nil
	}
	return p.deferred.positions
}

// Resolve lists in KeptFiles, in the table's file order, the files the
// plan kept whole without listing them (Options.DeferWhole), and adds
// their bytes and objects to the counts. r must read the plan's snapshot;
// a plan with nothing deferred is left as it is.
func (p *Plan) Resolve(r *catalog.Reader) error {
	d := p.deferred
	if d == nil {
		return nil
	}
	if got := r.Snapshot().ID; got != p.Snapshot {
		return fmt.Errorf("listing the files of table %s planned at snapshot %d with a reader at snapshot %d", p.Table, p.Snapshot, got)
	}
	if err := r.PrefetchFiles(d.fs, d.positions); err != nil {
		return err
	}
	l, err := newLister(r, d.t)
	if err != nil {
		return err
	}
	whole := make([]KeptFile, len(d.positions))
	for k, i := range d.positions {
		f, err := r.FileAt(d.fs, i)
		if err != nil {
			return err
		}
		kf, err := l.keptFile(f, true)
		if err != nil {
			return err
		}
		kf.RowGroups = allRowGroups(f.RowGroupCount)
		whole[k] = kf
		if f.RecordCount > 0 {
			p.Bytes.Kept += f.FileSizeBytes
		}
		p.countObject(kf.Path, f.FileSizeBytes)
	}
	merged := make([]KeptFile, 0, len(p.KeptFiles)+len(whole))
	a, b := 0, 0
	for a < len(p.KeptFiles) || b < len(whole) {
		if b == len(whole) || (a < len(p.KeptFiles) && d.listed[a] < d.positions[b]) {
			merged = append(merged, p.KeptFiles[a])
			a++
		} else {
			merged = append(merged, whole[b])
			b++
		}
	}
	p.KeptFiles, p.deferred = merged, nil
	return nil
}

// SubField is a VARIANT sub-field a predicate reads, in the type it is
// compared in ("variant" when uncast: IS [NOT] NULL only).
type SubField struct {
	Column         string `json:"column"`
	Path           string `json:"path"`
	Type           string `json:"type"`
	StatsFileCount int    `json:"stats_file_count"`
}

// ObjectCounts are the kept objects and their bytes, and the requests
// planning made to object storage: none unless it read page indexes or
// bloom filters of objects (Options.Objects). Requests are the store's
// counts across the plan: plans and queries using one store at the same
// time count each other's.
type ObjectCounts struct {
	Kept      int   `json:"kept"`
	KeptBytes int64 `json:"kept_bytes"`
	Requests  int64 `json:"request_count"`
	Bytes     int64 `json:"bytes"`
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
	// NoBlocks evaluates every file's statistics without first deciding
	// whole blocks of files by their summaries (blocks.go): a baseline for
	// tests and benches.
	NoBlocks bool
	// IndexMinRows is the cost rule: a row group with fewer rows is read
	// whole instead of first reading its bloom filters or page index (one
	// extra small read each, at their stored offsets). 0 means 1024; a
	// negative value consults them for every row group.
	IndexMinRows int64
	// PageMinRows is the row count from which a row group's page index is
	// read (with Pages): below it the row group is kept whole. 0 means
	// IndexMinRows; a negative value reads it for every row group. A query
	// sets it high: only a row group large enough for reading a part of it
	// to pay is worth its page index.
	PageMinRows int64
	// DeferWhole leaves out of KeptFiles the files every row of which
	// matches by their file statistics alone: they are counted in Files
	// and RowGroups (Bytes and Objects once listed), and listed only by
	// Plan.Resolve. Listing a file reads its row (its path, size and
	// partition values) from the catalog: an engine that may answer from
	// statistics alone (engine's metadata answers) plans so and resolves
	// only the plans whose files it reads; over 10,000 files, listing was
	// most of a cold plan with no predicate.
	DeferWhole bool
	// Objects gives the store to read the page indexes and bloom filters
	// of objects (s3:// files) from, when a plan needs them: one ranged
	// request for an object's last 64 KiB, which usually holds them too,
	// more only where they lie before it. Called at most once per plan,
	// only when needed. Without it those row groups are kept.
	Objects func() (storage.Store, error)
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

func (o Options) pageMinRows() int64 {
	switch {
	case o.PageMinRows == 0:
		return o.minRows()
	case o.PageMinRows < 0:
		return 0
	}
	return o.PageMinRows
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

// fileMapping returns how a file holds the table's columns (KeptFile.Columns):
// nil for every file of a table never altered.
func fileMapping(r *catalog.Reader, t catalog.Table) (func(catalog.DataFile) []ColumnSource, error) {
	m, err := r.ColumnMapping(t.ID)
	if err != nil || !m.Evolved() {
		return func(catalog.DataFile) []ColumnSource { return nil }, err
	}
	cols, err := r.Columns(t.ID)
	if err != nil {
		return nil, err
	}
	// A file's mapping depends only on the snapshot that registered it
	// (the files of one commit share it), but for a file that had a column
	// it was registered without mapped in since, whose mapping is its own.
	byBegin := map[int64][]ColumnSource{}
	return func(f catalog.DataFile) []ColumnSource {
		own := m.PerFile(f)
		if out, ok := byBegin[f.Begin]; ok && !own {
			return out
		}
		var out []ColumnSource
		for _, c := range cols {
			if c.Parent.Known || c.Partition != "" {
				continue
			}
			name, typ, held := m.Source(c, f)
			switch {
			case !held:
				cs := ColumnSource{Column: c.Name}
				if c.Default.Known {
					cs.Default = &c.Default.V
				}
				out = append(out, cs)
			case name != c.Name || typ.DuckLakeName() != c.Type.DuckLakeName():
				out = append(out, ColumnSource{Column: c.Name, FileColumn: name, FileType: typ.String()})
			}
		}
		if !own {
			byBegin[f.Begin] = out
		}
		return out
	}, nil
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
	plan := &Plan{Table: t.Name, Snapshot: r.Snapshot().ID, Predicate: b.Text, Bound: b.Pred.String(), KeptFiles: []KeptFile{}, SubFields: []SubField{}}
	plan.Files.Total, plan.RowGroups.Total, plan.Bytes.Total = fs.Len(), int(fs.TotalRowGroups), fs.TotalBytes
	prog := compile(b.Pred)
	fr, err := planFiles(r, t.ID, fs, prog, b, opts)
	if err != nil {
		return nil, err
	}
	plan.SubFields = append(plan.SubFields, fr.subFields...)
	var kept []int       // FileSet positions
	var keptRes []Result // their results
	var d *deferredFiles
	if opts.DeferWhole {
		d = &deferredFiles{t: t, fs: fs}
	}
	for k, res := range fr.res {
		i := fr.position(k)
		switch {
		case res == Skip:
		case res == AllMatch && d != nil:
			d.positions = append(d.positions, i)
			plan.Files.Kept++
			plan.Files.AllMatch++
			plan.RowGroups.Kept += int(fs.RowGroupCount[i])
			plan.RowGroups.AllMatch += int(fs.RowGroupCount[i])
		default:
			kept, keptRes = append(kept, i), append(keptRes, res)
		}
	}
	if d != nil && len(d.positions) > 0 {
		plan.deferred = d
	}
	if err := r.PrefetchFiles(fs, kept); err != nil {
		return nil, err
	}
	rgr := &rowGroupReader{r: r, tableID: t.ID, eqCols: equalityColumns(b.Pred)}
	defer rgr.close()
	var rr *run // row groups and pages: one run for the plan
	l, err := newLister(r, t)
	if err != nil {
		return nil, err
	}
	for ki, i := range kept {
		res := keptRes[ki]
		f, err := r.FileAt(fs, i)
		if err != nil {
			return nil, err
		}
		kf, err := l.keptFile(f, res == AllMatch)
		if err != nil {
			return nil, err
		}
		if res == AllMatch || opts.FilesOnly || f.RowGroupCount <= 0 {
			kf.RowGroups = allRowGroups(f.RowGroupCount)
			plan.keep(kf, f, f.RecordCount, res == AllMatch, int(f.RowGroupCount))
			plan.listed(d, i)
			continue
		}
		if rr == nil {
			rr = prog.newRun()
		}
		rgRes, rgRows, ranges, err := plan.planRowGroups(rgr, t, f, b, rr, opts)
		if err != nil {
			return nil, err
		}
		kf.Ranges = ranges
		var keptRows int64
		allRG := 0
		if opts.Pages && ranges != nil {
			keptRows = 0
			for _, rr := range ranges {
				keptRows += rr.Count
			}
			if ranges == nil {
				keptRows = f.RecordCount // no ranges known: the kept row groups whole
			}
		}
		for i, res := range rgRes {
			if res == Skip {
				continue
			}
			kf.RowGroups = append(kf.RowGroups, int32(i))
			if !opts.Pages || ranges == nil {
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
		plan.listed(d, i)
	}
	plan.countObjectRequests()
	return plan, nil
}

// listed notes that the file at FileSet position i was just appended to
// KeptFiles, when files are deferred (d is nil otherwise).
func (p *Plan) listed(d *deferredFiles, i int) {
	if d != nil {
		d.listed = append(d.listed, i)
	}
}

func allRowGroups(n int32) []int32 {
	var out []int32
	for i := int32(0); i < n; i++ {
		out = append(out, i)
	}
	return out
}

// lister makes the KeptFile entries of one table's files.
type lister struct {
	r          *catalog.Reader
	t          catalog.Table
	mapping    func(catalog.DataFile) []ColumnSource
	partNames  map[int64]string // read with the first partitioned file
	layoutMap  *catalog.ColumnMapping
	layoutCols []catalog.Column // read with the first file holding layout values
}

func newLister(r *catalog.Reader, t catalog.Table) (*lister, error) {
	mapping, err := fileMapping(r, t)
	if err != nil {
		return nil, err
	}
	return &lister{r: r, t: t, mapping: mapping}, nil
}

// keptFile is f's entry, without its row groups.
func (l *lister) keptFile(f catalog.DataFile, allMatch bool) (KeptFile, error) {
	kf := KeptFile{Path: f.Location(l.t), FileID: f.ID, Rows: f.RecordCount, Bytes: f.FileSizeBytes, AllMatch: allMatch, Columns: l.mapping(f)}
	if len(f.PartitionValues) > 0 {
		if l.partNames == nil {
			var err error
			if l.partNames, err = columnNames(l.r, l.t.ID); err != nil {
				return KeptFile{}, err
			}
		}
		kf.Partition = make(map[string]*string, len(f.PartitionValues))
		for _, pv := range f.PartitionValues {
			var v *string
			if pv.Value.Known {
				v = &pv.Value.V
			}
			kf.Partition[l.partNames[pv.ColumnID]] = v
		}
	}
	if len(f.LayoutValues) > 0 {
		if l.layoutCols == nil {
			var err error
			if l.layoutMap, err = l.r.ColumnMapping(l.t.ID); err != nil {
				return KeptFile{}, err
			}
			if l.layoutCols, err = l.r.Columns(l.t.ID); err != nil {
				return KeptFile{}, err
			}
		}
		kf.Layout = make(map[string]*string, len(f.LayoutValues))
		for j, text := range l.layoutMap.LayoutFieldTexts(f.LayoutValues, l.layoutCols) {
			var v *string
			if lv := f.LayoutValues[j]; lv.Value.Known {
				v = &lv.Value.V
			}
			kf.Layout[text] = v
		}
	}
	return kf, nil
}

// parallelFiles is the table size from which files are evaluated in
// parallel (tests lower it to run the parallel path on small tables).
var parallelFiles = 1 << 15

// evalFiles evaluates every file, in parallel chunks for large tables;
// a file with rows[i] == 0 is skipped (rows may be nil).
func evalFiles(prog *program, s Statistics, rows []int64) []Result {
	n := s.Units()
	out := make([]Result, n)
	workers := runtime.GOMAXPROCS(0)
	if n < parallelFiles || workers < 2 {
		prog.newRun().eval(s, 0, n, rows, out)
		return out
	}
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += per {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			prog.newRun().eval(s, lo, hi, rows, out)
		}(lo, min(lo+per, n))
	}
	wg.Wait()
	return out
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
	p.countObject(kf.Path, f.FileSizeBytes)
}

func (p *Plan) countObject(path string, size int64) {
	if catalog.IsObject(path) {
		p.Objects.Kept++
		p.Objects.KeptBytes += size
	}
}

// planRowGroups evaluates each row group of a file from its stored stats,
// then, for row groups still undecided and large enough, from bloom filters
// and the page index. ranges lists the row ranges to read when pages were
// consulted.
func (p *Plan) planRowGroups(rgr *rowGroupReader, t catalog.Table, f catalog.DataFile, b *expr.Bound, rr *run, opts Options) ([]Result, []int64, []RowRange, error) {
	rgs, err := rgr.read(f, b)
	if err != nil {
		return nil, nil, nil, err
	}
	n, rows, firsts := rgs.n, rgs.rows, rgs.firsts
	// The page index and bloom filters are the file's own, found by the
	// names it holds its columns under.
	if b, err = rgr.fileBound(f, b); err != nil {
		return nil, nil, nil, err
	}
	var fx *fileIndex
	var fxErr error
	index := func() *fileIndex {
		if fx == nil && fxErr == nil {
			if loc := f.Location(t); catalog.IsObject(loc) {
				// Never the local open, which would take the URL for a
				// relative path.
				fx, fxErr = p.openObjectIndex(f, loc, opts)
			} else {
				fx, fxErr = openLocalIndex(f, loc)
			}
		}
		return fx
	}
	defer func() {
		if fx != nil {
			fx.Close()
		}
	}()
	out := make([]Result, n)
	var empty []int64 // an empty row group is skipped, when rows are known
	if rgs.haveRows {
		empty = rows
	}
	rr.eval(rgs, 0, n, empty, out)
	var ranges []RowRange
	for i := range n {
		if rgs.haveRows && rows[i] == 0 {
			continue
		}
		if out[i] != Maybe || rows[i] < opts.minRows() {
			if out[i] != Skip && opts.Pages {
				ranges = append(ranges, RowRange{RowGroup: int32(i), First: firsts[i], Count: rows[i], AllMatch: out[i] == AllMatch})
			}
			continue
		}
		// bloom is set when this row group's bloom filters were read; the
		// page level then asks them too.
		var bloom *withBloom
		if !opts.NoBloom && rgs.bloom[i] && p.bloomWorthIt() && index() != nil {
			bloom = &withBloom{Statistics: rgs, fx: fx, b: b, rg: -1}
			rr.eval(bloom, i, i+1, nil, out)
			p.Bloom.Probed++
			if out[i] == Skip {
				p.Bloom.Skipped++
			}
		}
		if out[i] == Skip || !opts.Pages || !rgs.haveRows {
			// Without any row group's rows (no predicate column has
			// row-group statistics in this file), rows and firsts are
			// guesses: pages cannot be placed, nor ranges given.
			continue
		}
		if rows[i] < opts.pageMinRows() {
			// Too few rows for a part of the row group to pay: it is kept
			// whole, without reading its page index.
			ranges = append(ranges, RowRange{RowGroup: int32(i), First: firsts[i], Count: rows[i]})
			continue
		}
		kept, total, keptRanges := p.pages(index(), i, firsts[i], rows[i], b, rgs, bloom != nil, rr)
		p.Pages.Evaluated = true
		p.Pages.Total += total
		p.Pages.Kept += kept
		if total > 0 && kept == 0 {
			out[i] = Skip
			continue
		}
		ranges = append(ranges, keptRanges...)
	}
	if !rgs.haveRows {
		// Rows and first rows were spread evenly over the row groups, not
		// read: ranges from them could leave out matching rows. The kept
		// row groups are read whole.
		ranges = nil
	}
	return out, rows, ranges, nil
}

var errObjectIndex = errors.New("no store to read the index structures of objects from")

// openObjectIndex opens an object's index structures through ranged
// requests, pinned to the object as registered (size and ETag): an object
// that changed is an error, and its row groups are then kept.
func (p *Plan) openObjectIndex(f catalog.DataFile, loc string, opts Options) (*fileIndex, error) {
	if opts.Objects == nil {
		return nil, errObjectIndex
	}
	if p.objects == nil {
		st, err := opts.Objects()
		if err != nil {
			return nil, err
		}
		p.objects = st
		if c, ok := st.(interface{ Counts() storage.Counts }); ok {
			p.objBefore = c.Counts()
		}
	}
	rr, err := storage.NewRangeReader(context.Background(), p.objects, storage.Object{Location: loc, Size: f.FileSizeBytes, ETag: f.ETag}, storage.FooterPrefetch)
	if err != nil {
		return nil, err
	}
	return pqmeta.OpenIndexAt(rr, loc)
}

// countObjectRequests sets Objects.Requests from the store the plan read
// objects' indexes from.
func (p *Plan) countObjectRequests() {
	if c, ok := p.objects.(interface{ Counts() storage.Counts }); ok {
		d := c.Counts().Sub(p.objBefore)
		p.Objects.Requests, p.Objects.Bytes = d.Requests, d.Bytes
	}
}

// pages evaluates the pieces of row group rg (see pieces), with its bloom
// filters when they were read; pieces that cannot match are dropped, the
// rest merged into row ranges.
func (p *Plan) pages(fx *fileIndex, rg int, first, rows int64, b *expr.Bound, rgs *rowGroups, bloom bool, rr *run) (kept, total int, ranges []RowRange) {
	whole := []RowRange{{RowGroup: int32(rg), First: first, Count: rows}}
	if fx == nil {
		return 0, 0, whole
	}
	ps, cuts := pieces(fx, rg, rows, b, rgs.unitStats)
	if ps == nil {
		return 0, 0, whole
	}
	var s Statistics = ps
	if bloom {
		s = &withBloom{Statistics: ps, fx: fx, b: b, rg: rg}
	}
	out := make([]Result, ps.n)
	rr.eval(s, 0, ps.n, nil, out)
	for k, res := range out {
		total++
		if res == Skip {
			continue
		}
		kept++
		lo, hi := cuts[k], cuts[k+1]
		all := res == AllMatch
		if n := len(ranges); n > 0 && ranges[n-1].First+ranges[n-1].Count == first+lo && ranges[n-1].AllMatch == all {
			ranges[n-1].Count += hi - lo
		} else {
			ranges = append(ranges, RowRange{RowGroup: int32(rg), First: first + lo, Count: hi - lo, AllMatch: all})
		}
	}
	return kept, total, ranges
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

// columnNames maps a table's column ids to their names, for the kept
// files' partition values (read only when a kept file has some).
func columnNames(r *catalog.Reader, tableID int64) (map[int64]string, error) {
	cols, err := r.Columns(tableID)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]string, len(cols))
	for _, c := range cols {
		out[c.ID] = strings.Join(c.Path, ".")
	}
	return out, nil
}
