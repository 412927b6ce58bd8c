package catalog

import (
	"sync"
	"sync/atomic"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// statsKey names the catalog state a set of table stats describes. Every
// commit advances next_file_id (files added or removed, or stats narrowed)
// or schema_version (DDL), so no two snapshots share a key: stats cached
// under one key are never served for another snapshot.
type statsKey struct {
	table, nextFileID, schemaVersion int64
}

// storedAt is the state a table's stored stats rows were written for.
//
// Its statsKey alone would make them good for the very state that wrote
// them, and next_file_id and schema_version are the catalog's: a commit to
// any other table moves them. Tables appended to in turn (two loads, a
// storm of writers) would then fold every file of the table again at each
// commit and each new reader, reading all its file rows and stats. So a
// commit that changes a table's files or columns always writes its rows
// (commitWriter.finish), and says so (untilChanged): the rows then hold
// the table's stats at every snapshot from asOf until the next commit
// that changes it, which would have replaced them. A snapshot before asOf
// (time travel) is folded as before; so is a row written before the
// promise was made.
type storedAt struct {
	statsKey
	asOf         int64
	untilChanged bool
}

// describes reports whether stored rows written for s hold the table's
// stats at the snapshot k and id name.
func (s storedAt) describes(k statsKey, id int64) bool {
	return s.statsKey == k || s.untilChanged && s.table == k.table && s.asOf <= id
}

// storedServed counts stats served from rows written for an earlier
// snapshot (storedAt.describes), for tests.
var storedServed atomic.Int64

// statsCache holds computed table stats by statsKey, bounded FIFO.
type statsCache struct {
	mu    sync.Mutex
	m     map[statsKey]*TableStats
	order []statsKey
}

const statsCacheSize = 1024

func (c *statsCache) get(k statsKey) *TableStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func (c *statsCache) put(k statsKey, ts *TableStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[statsKey]*TableStats{}
	}
	if _, ok := c.m[k]; ok {
		return
	}
	if len(c.order) >= statsCacheSize {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[k] = ts
	c.order = append(c.order, k)
}

// TableStats returns the table's totals and per-column bounds, exact for
// the reader's snapshot, its delete files applied (lessDeleted). The
// result is shared; do not modify it.
func (r *Reader) TableStats(tableID int64) (*TableStats, error) {
	ts, err := r.fileTableStats(tableID)
	if err != nil {
		return nil, err
	}
	return r.lessDeleted(tableID, ts)
}

// fileTableStats are the table's stats as its files' statistics give them,
// deleted rows counted (what a commit widens or recomputes): the stored
// rows when they describe this very snapshot, else a fold of the file
// stats visible at it.
func (r *Reader) fileTableStats(tableID int64) (*TableStats, error) {
	k := statsKey{table: tableID, nextFileID: r.snap.NextFileID, schemaVersion: r.snap.SchemaVersion}
	if ts := r.c.stats.get(k); ts != nil {
		return ts, nil
	}
	stored, sk, err := r.storedTableStats(tableID)
	if err != nil {
		return nil, err
	}
	if stored != nil && sk.describes(k, r.snap.ID) {
		if sk.statsKey != k {
			storedServed.Add(1)
		}
		r.c.stats.put(k, stored)
		return stored, nil
	}
	ts, err := r.computeTableStats(tableID)
	if err != nil {
		return nil, err
	}
	if stored != nil && sk.asOf <= r.snap.ID && stored.NextRowID > ts.NextRowID {
		// Row ids only count up, and a fold sees none of a file removed
		// before: rows written at or before this snapshot know more. An
		// append takes its first row id from here, and must not hand out
		// a removed file's again.
		ts.NextRowID = stored.NextRowID
	}
	r.c.stats.put(k, ts)
	return ts, nil
}

// lessDeleted is a table's stats with its delete files applied: the
// record count less the rows deleted, and the bounds, valid still, no
// longer exact; a column said to hold a NULL or a NaN may hold none now.
func (r *Reader) lessDeleted(tableID int64, ts *TableStats) (*TableStats, error) {
	ds, err := r.DeleteFiles(tableID)
	if err != nil || len(ds) == 0 {
		return ts, err
	}
	out := *ts
	for _, d := range ds {
		out.RecordCount -= d.DeleteCount
	}
	out.Columns = make(map[int64]*TableColumnStats, len(ts.Columns))
	for id, c := range ts.Columns {
		cc := *c
		cc.MinIsExact, cc.MaxIsExact = false, false
		if cc.ContainsNull.Known && cc.ContainsNull.V {
			cc.ContainsNull = stats.Maybe[bool]{}
		}
		if cc.ContainsNaN.Known && cc.ContainsNaN.V {
			cc.ContainsNaN = stats.Maybe[bool]{}
		}
		out.Columns[id] = &cc
	}
	return &out, nil
}

// computeTableStats folds the file stats visible at the snapshot.
func (r *Reader) computeTableStats(tableID int64) (*TableStats, error) {
	files, err := r.Files(tableID)
	if err != nil {
		return nil, err
	}
	cols, err := r.Columns(tableID)
	if err != nil {
		return nil, err
	}
	ts := &TableStats{Columns: map[int64]*TableColumnStats{}}
	for _, f := range files {
		ts.addFile(f)
	}
	for _, col := range cols {
		acc := newColAcc(col.Type)
		var n int64
		err := r.FileColumnStats(tableID, col.ID, func(_ int64, st *stats.Column) error {
			acc.add(st)
			n++
			return nil
		})
		if err != nil {
			return nil, err
		}
		if n < int64(len(files)) {
			acc.add(nil) // some file has no stats row: unknown
		}
		if col.Type.Kind == types.KindVariant {
			vs, err := r.tableVariants(tableID, col.ID, files)
			if err != nil {
				return nil, err
			}
			acc.cs.Variants = vs
		}
		cs := acc.result()
		ts.Columns[col.ID] = &cs
	}
	return ts, nil
}

func (ts *TableStats) addFile(f DataFile) {
	ts.RecordCount += f.RecordCount
	ts.FileSizeBytes += f.FileSizeBytes
	ts.FileCount++
	if end := f.RowIDStart + f.RecordCount; end > ts.NextRowID {
		ts.NextRowID = end
	}
}

// tableVariants keeps the sub-fields shredded with one type in every file,
// merging their counts and bounds.
func (r *Reader) tableVariants(tableID, columnID int64, files []DataFile) ([]VariantStats, error) {
	lists := make([][]VariantStats, 0, len(files))
	for _, f := range files {
		vs, err := r.FileVariantStats(tableID, columnID, f.ID)
		if err != nil {
			return nil, err
		}
		lists = append(lists, vs)
	}
	return mergeVariantLists(lists), nil
}

// mergeVariantLists keeps the paths present with the same shredded type in
// every list (one list per file), merged.
func mergeVariantLists(lists [][]VariantStats) []VariantStats {
	if len(lists) == 0 {
		return nil
	}
	merged := map[string]*VariantStats{}
	var order []string
	for _, v := range lists[0] {
		v := v
		if c, ok := types.CodecFor(parseOrUnknown(v.ShreddedType)); !ok || !c.Ordered() {
			v.Min, v.Max = stats.Maybe[[]byte]{}, stats.Maybe[[]byte]{}
		}
		v.RowGroups = nil
		merged[v.Path] = &v
		order = append(order, v.Path)
	}
	for _, vs := range lists[1:] {
		here := map[string]VariantStats{}
		for _, v := range vs {
			here[v.Path] = v
		}
		for path, m := range merged {
			v, ok := here[path]
			if !ok || v.ShreddedType != m.ShreddedType {
				delete(merged, path)
				continue
			}
			mergeVariant(m, &v)
		}
	}
	var out []VariantStats
	for _, p := range order {
		if m, ok := merged[p]; ok {
			out = append(out, *m)
		}
	}
	return out
}

func mergeVariant(into, v *VariantStats) {
	// A table-wide row describes the whole table: per-row-group stats
	// belong to files.
	into.RowGroups = nil
	into.ColumnSizeBytes += v.ColumnSizeBytes
	into.ValueCount += v.ValueCount
	into.NullCount += v.NullCount
	into.ContainsNaN = stats.Or(into.ContainsNaN, v.ContainsNaN)
	c, ok := types.CodecFor(parseOrUnknown(into.ShreddedType))
	if !ok || !c.Ordered() {
		into.Min, into.Max = stats.Maybe[[]byte]{}, stats.Maybe[[]byte]{}
		return
	}
	// Variant bounds carry no exactness: only their values merge.
	into.Min, _ = stats.MergeBound(into.Min, false, v.Min, false, stats.Lower)
	into.Max, _ = stats.MergeBound(into.Max, false, v.Max, false, stats.Higher)
}

// colAcc folds unit stats into table-level column stats.
type colAcc struct {
	ordered   bool
	seen      bool // any unit merged
	hasBounds bool // any unit holding values merged
	cs        TableColumnStats
	// A GEOMETRY column's extent (extra_stats), known while every unit
	// holding values had one.
	geo   bool
	ext   types.Extent
	extOK bool
}

func newColAcc(t types.Type) *colAcc {
	c, ok := types.CodecFor(t)
	return &colAcc{ordered: ok && c.Ordered(), geo: t.Kind == types.KindGeometry, ext: types.Extent{Empty: true}, extOK: true}
}

// seed starts the fold from stored table stats that already cover files.
func (a *colAcc) seed(cs *TableColumnStats) {
	a.seen, a.hasBounds = true, !cs.NoValues
	a.cs = *cs
	if a.geo && !cs.NoValues {
		a.ext, a.extOK = types.ParseExtentStats(cs.ExtraStats)
	}
}

// result is the folded stats.
func (a *colAcc) result() TableColumnStats {
	cs := a.cs
	cs.NoValues = a.seen && !a.hasBounds
	if a.geo {
		cs.ExtraStats = ""
		if a.seen && a.extOK {
			cs.ExtraStats = types.ExtentStats(a.ext)
		}
	}
	return cs
}

// add merges one unit's stats; nil means the unit has none (all unknown).
func (a *colAcc) add(st *stats.Column) {
	if st == nil {
		st = &stats.Column{}
	}
	empty := stats.HoldsNoValue(st)
	nan := st.ContainsNaN
	if empty {
		nan = stats.Known(false)
	}
	if !a.seen {
		a.seen = true
		a.cs.ContainsNull, a.cs.ContainsNaN = stats.ContainsNull(st), nan
	} else {
		a.cs.ContainsNull = stats.Or(a.cs.ContainsNull, stats.ContainsNull(st))
		a.cs.ContainsNaN = stats.Or(a.cs.ContainsNaN, nan)
	}
	if empty {
		return
	}
	if a.geo {
		e, ok := types.ParseExtentStats(st.ExtraStats)
		a.ext, a.extOK = a.ext.Add(e), a.extOK && ok
	}
	// A type without an order keeps no bounds, and no exactness of bounds
	// it does not keep (which one unit's flags would otherwise set).
	var u TableColumnStats
	if a.ordered {
		u.Min, u.Max, u.MinIsExact, u.MaxIsExact = st.Min, st.Max, st.MinIsExact, st.MaxIsExact
	}
	if !a.hasBounds {
		a.hasBounds = true
		a.cs.Min, a.cs.Max, a.cs.MinIsExact, a.cs.MaxIsExact = u.Min, u.Max, u.MinIsExact, u.MaxIsExact
		return
	}
	c := &a.cs
	c.Min, c.MinIsExact = stats.MergeBound(c.Min, c.MinIsExact, u.Min, u.MinIsExact, stats.Lower)
	c.Max, c.MaxIsExact = stats.MergeBound(c.Max, c.MaxIsExact, u.Max, u.MaxIsExact, stats.Higher)
}

func (ts *TableStats) toPB(snap Snapshot) *catalogpb.TableStats {
	return &catalogpb.TableStats{
		RecordCount: ts.RecordCount, NextRowId: ts.NextRowID, FileSizeBytes: ts.FileSizeBytes,
		FileCount: ts.FileCount, AsOfSnapshot: snap.ID, NextFileId: snap.NextFileID,
		SchemaVersion: snap.SchemaVersion, UntilChanged: true,
	}
}

func (cs *TableColumnStats) toPB() *catalogpb.TableColumnStats {
	return &catalogpb.TableColumnStats{
		ContainsNull: optBool(cs.ContainsNull), ContainsNan: optBool(cs.ContainsNaN),
		Min: optBytes(cs.Min), Max: optBytes(cs.Max), MinIsExact: cs.MinIsExact,
		MaxIsExact: cs.MaxIsExact, ExtraStats: cs.ExtraStats, NoValues: cs.NoValues,
	}
}

// parseOrUnknown reads a stored type text; text that does not parse is an
// Unknown type, which has no statistics.
func parseOrUnknown(s string) types.Type {
	t, err := types.ParseType(s)
	if err != nil {
		return types.Unknown(s)
	}
	return t
}
