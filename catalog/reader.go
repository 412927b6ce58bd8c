package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// Reader reads the catalog as of one snapshot, through one consistent view
// of the store: nothing committed after it was opened is visible, and every
// row it returns is visible at its snapshot (begin ≤ s < end). It is safe
// for concurrent use. Close it.
type Reader struct {
	c    *Catalog
	kvs  kv.Snapshot
	snap Snapshot
	// head says snap was the newest snapshot when the reader opened: every
	// row it sees is then one no commit has ended, the condition for
	// sharing definitions through defCache.
	head bool

	liveMu sync.Mutex
	live   map[int64]map[int64]bool // table → live file ids, filled lazily

	// spill holds rows this reader read (PrefetchFiles, FileAt) that a
	// shared FileSet had no room to keep (fileRows.max), for its later
	// FileAt: a broad plan over millions of files reads each row once,
	// not once more by key. They go with the reader, so a long-lived one
	// that plans broad queries holds them until it is closed.
	spillMu sync.Mutex
	spill   map[*FileSet][]*DataFile
}

// spilled is the row of file i of fs that this reader read and fs did not
// keep, or nil.
func (r *Reader) spilled(fs *FileSet, i int) *DataFile {
	r.spillMu.Lock()
	defer r.spillMu.Unlock()
	if rows := r.spill[fs]; rows != nil {
		return rows[i]
	}
	return nil
}

// keep stores a row read for fs in fs, or where fs is full in the reader.
func (r *Reader) keep(fs *FileSet, i int, d *DataFile) {
	if fs.files.store(i, d) {
		return
	}
	r.spillMu.Lock()
	defer r.spillMu.Unlock()
	if r.spill == nil {
		r.spill = map[*FileSet][]*DataFile{}
	}
	rows := r.spill[fs]
	if rows == nil {
		rows = make([]*DataFile, fs.files.n)
		r.spill[fs] = rows
	}
	rows[i] = d
}

// Read opens a Reader at snapshot id, or at the newest with Latest.
func (c *Catalog) Read(id int64) (*Reader, error) {
	kvs, err := c.store.NewSnapshot()
	if err != nil {
		return nil, err
	}
	var s Snapshot
	if id == Latest {
		s, err = latestSnapshot(kvs)
	} else {
		s, err = readSnapshot(kvs, id)
	}
	if err != nil {
		kvs.Close()
		return nil, err
	}
	return &Reader{c: c, kvs: kvs, snap: s, head: id == Latest}, nil
}

// Close releases the reader's view.
func (r *Reader) Close() error { return r.kvs.Close() }

// Snapshot is the snapshot the reader sees.
func (r *Reader) Snapshot() Snapshot { return r.snap }

func (r *Reader) scan(lower, upper []byte, fn func(k, v []byte) error) error {
	return scanBetween(r.kvs, lower, upper, fn)
}

// scanBetween calls fn for every key in [lower, upper) through any reader.
func scanBetween(r kv.Reader, lower, upper []byte, fn func(k, v []byte) error) error {
	it, err := r.NewIter(lower, upper)
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}

// getMany reads keys in one round trip where the store offers it (a
// networked store), else one by one; a missing key's value is nil.
func getMany(r kv.Reader, keys [][]byte) ([][]byte, error) {
	if mg, ok := r.(kv.MultiGetter); ok {
		return mg.GetMany(keys)
	}
	vals := make([][]byte, len(keys))
	for k, key := range keys {
		v, err := r.Get(key)
		if errors.Is(err, kv.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		vals[k] = v
	}
	return vals, nil
}

func scanPrefix(r *Reader, prefix []byte, fn func(k, v []byte) error) error {
	return r.scan(prefix, kv.PrefixEnd(prefix), fn)
}

// Tables lists the tables visible at the reader's snapshot, by name.
func (r *Reader) Tables() ([]Table, error) {
	if r.head {
		if t, ok := r.c.defs.getTables(r.snap.SchemaVersion); ok {
			return t, nil
		}
	}
	var out []Table
	err := scanPrefix(r, key(tagTable), func(k, v []byte) error {
		var p catalogpb.Table
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("table row %x: %w", k, err)
		}
		if visibleAt(r.snap.ID, p.BeginSnapshot, p.EndSnapshot) {
			out = append(out, tableFromPB(&p))
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if err == nil && r.head {
		r.c.defs.putTables(r.snap.SchemaVersion, out)
	}
	return out, err
}

// Table finds a table by name, case-insensitively as DuckDB does. The error
// for a missing table lists the tables there are.
func (r *Reader) Table(name string) (Table, error) {
	tables, err := r.Tables()
	if err != nil {
		return Table{}, err
	}
	for _, t := range tables {
		if types.SameIdent(t.Name, name) {
			return t, nil
		}
	}
	return Table{}, noSuchTable(name, tables, r.snap.ID)
}

func noSuchTable(name string, tables []Table, snap int64) error {
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.Name
	}
	have := "the catalog has no tables"
	if len(names) > 0 {
		have = "tables: " + strings.Join(names, ", ")
	}
	return fmt.Errorf("%w %q at snapshot %d (%s)", ErrNoSuchTable, name, snap, have)
}

// Columns lists a table's columns visible at the snapshot, in order, nested
// children after their parents.
func (r *Reader) Columns(tableID int64) ([]Column, error) {
	if r.head {
		if c, ok := r.c.defs.getColumns(r.snap.SchemaVersion, tableID); ok {
			return c, nil
		}
	}
	var out []Column
	err := scanPrefix(r, key(tagColumn, tableID), func(k, v []byte) error {
		var p catalogpb.Column
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("column row %x: %w", k, err)
		}
		if !visibleAt(r.snap.ID, p.BeginSnapshot, p.EndSnapshot) {
			return nil
		}
		out = append(out, columnFromPB(&p))
		return nil
	})
	if err != nil {
		return nil, err
	}
	out = treeOrder(out)
	if r.head {
		r.c.defs.putColumns(r.snap.SchemaVersion, tableID, out)
	}
	return out, nil
}

// treeOrder sorts columns depth-first: each parent, then its children, by
// order within their parent; and fills in each column's Path.
func treeOrder(cols []Column) []Column {
	kids := map[int64][]Column{}
	var top []Column
	for _, c := range cols {
		if c.Parent.Known {
			kids[c.Parent.V] = append(kids[c.Parent.V], c)
		} else {
			top = append(top, c)
		}
	}
	byOrder := func(cs []Column) {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].Order < cs[j].Order })
	}
	out := make([]Column, 0, len(cols))
	var walk func(cs []Column, prefix []string)
	walk = func(cs []Column, prefix []string) {
		byOrder(cs)
		for _, c := range cs {
			c.Path = append(append([]string(nil), prefix...), c.Name)
			out = append(out, c)
			walk(kids[c.ID], c.Path)
		}
	}
	walk(top, nil)
	return out
}

// Column finds a top-level column by name, case-insensitively.
func (r *Reader) Column(tableID int64, name string) (Column, error) {
	cols, err := r.Columns(tableID)
	if err != nil {
		return Column{}, err
	}
	var names []string
	for _, c := range cols {
		if c.Parent.Known {
			continue
		}
		if types.SameIdent(c.Name, name) {
			return c, nil
		}
		names = append(names, c.Name)
	}
	return Column{}, fmt.Errorf("%w %q (columns: %s)", ErrNoSuchColumn, name, strings.Join(names, ", "))
}

// Files lists a table's data files visible at the snapshot, by id.
func (r *Reader) Files(tableID int64) ([]DataFile, error) {
	var out []DataFile
	// The table's file count at its last change sizes the slice (a hint:
	// an older snapshot may have more or fewer).
	if raw, err := r.kvs.Get(key(tagTableStats, tableID)); err == nil {
		var ts catalogpb.TableStats
		if decodeValue(raw, &ts) == nil && ts.FileCount > 0 && ts.FileCount < 1<<24 {
			out = make([]DataFile, 0, ts.FileCount)
		}
	}
	var p catalogpb.DataFile
	err := scanPrefix(r, key(tagDataFile, tableID), func(k, v []byte) error {
		if begin, end, ok := dataFileSpan(v); ok && !visibleAt(r.snap.ID, begin, end) {
			// Retired rows outnumber live ones in a table of many
			// small writes (each merged away): decoding every one of
			// them was most of the cost of reading the live files.
			return nil
		}
		p.Reset()
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("data file row %x: %w", k, err)
		}
		if visibleAt(r.snap.ID, p.BeginSnapshot, p.EndSnapshot) {
			out = append(out, dataFileFromPB(&p))
		}
		return nil
	})
	return out, err
}

// dataFileSpan reads a stored DataFile's begin and end snapshots without
// decoding the rest of it, as proto.Unmarshal would read them (the last
// occurrence of a field wins); ok is false where the value does not parse,
// for the full decode to report.
func dataFileSpan(v []byte) (begin int64, end *int64, ok bool) {
	b, err := envelopeBody(v)
	if err != nil {
		return 0, nil, false
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, nil, false
		}
		b = b[n:]
		if (num == dataFileBegin || num == dataFileEnd) && typ == protowire.VarintType {
			x, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, nil, false
			}
			b = b[n:]
			if num == dataFileBegin {
				begin = int64(x)
			} else {
				e := int64(x)
				end = &e
			}
			continue
		}
		if num == dataFileBegin || num == dataFileEnd {
			return 0, nil, false // not as the message declares them: let the decode judge
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return 0, nil, false
		}
		b = b[n:]
	}
	return begin, end, true
}

// The field numbers of DataFile's begin_snapshot and end_snapshot.
const (
	dataFileBegin protowire.Number = 10
	dataFileEnd   protowire.Number = 11
)

// FilesEver lists every data file of a table the catalog still holds a row
// for, live at the reader's snapshot or not (retired by a rewrite or a
// removal, until expire forgets it), by id.
func (r *Reader) FilesEver(tableID int64) ([]DataFile, error) {
	var out []DataFile
	var p catalogpb.DataFile
	err := scanPrefix(r, key(tagDataFile, tableID), func(k, v []byte) error {
		p.Reset()
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("data file row %x: %w", k, err)
		}
		if p.BeginSnapshot <= r.snap.ID {
			out = append(out, dataFileFromPB(&p))
		}
		return nil
	})
	return out, err
}

// liveFiles is the set of file ids visible in a table at the snapshot.
func (r *Reader) liveFiles(tableID int64) (map[int64]bool, error) {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	if set, ok := r.live[tableID]; ok {
		return set, nil
	}
	files, err := r.Files(tableID)
	if err != nil {
		return nil, err
	}
	set := make(map[int64]bool, len(files))
	for _, f := range files {
		set[f.ID] = true
	}
	if r.live == nil {
		r.live = map[int64]map[int64]bool{}
	}
	r.live[tableID] = set
	return set, nil
}

// FileColumnStats calls fn with the statistics of one column for every
// file visible at the snapshot, in file id order. It is one range scan:
// the stats keys are ordered table | column | file for exactly this read.
// A file with no stats row for the column is not passed to fn; callers
// treat it as unknown.
func (r *Reader) FileColumnStats(tableID, columnID int64, fn func(fileID int64, st *stats.Column) error) error {
	live, err := r.liveFiles(tableID)
	if err != nil {
		return err
	}
	return scanPrefix(r, key(tagFileColumnStats, tableID, columnID), func(k, v []byte) error {
		fileID, err := idAt(k, 2)
		if err != nil {
			return err
		}
		if !live[fileID] {
			return nil
		}
		var p catalogpb.ColumnStats
		st, err := decodeFileColumnStats(v, &p, columnID, fileID)
		if err != nil {
			return err
		}
		return fn(fileID, &st)
	})
}

// decodeFileColumnStats decodes a file's stats row of one column, with p
// as scratch.
func decodeFileColumnStats(v []byte, p *catalogpb.ColumnStats, columnID, fileID int64) (stats.Column, error) {
	p.Reset()
	if err := decodeValue(v, p); err != nil {
		return stats.Column{}, fmt.Errorf("stats of column %d in file %d: %w", columnID, fileID, err)
	}
	return columnStatsFromPB(p), nil
}

// fileColumnStatsOf is FileColumnStats for the files ids names (sorted
// ascending, each live), matched against the rows' file id order instead
// of looked up: a commit that removes files from a table of millions folds
// every survivor's stats, and a map lookup per row was most of its time.
func (r *Reader) fileColumnStatsOf(tableID, columnID int64, ids []int64, fn func(fileID int64, st *stats.Column) error) error {
	next := 0
	var p catalogpb.ColumnStats
	return scanPrefix(r, key(tagFileColumnStats, tableID, columnID), func(k, v []byte) error {
		fileID, err := idAt(k, 2)
		if err != nil {
			return err
		}
		for next < len(ids) && ids[next] < fileID {
			next++
		}
		if next == len(ids) || ids[next] != fileID {
			return nil
		}
		st, err := decodeFileColumnStats(v, &p, columnID, fileID)
		if err != nil {
			return err
		}
		return fn(fileID, &st)
	})
}

// RowGroupStats returns one column's per-row-group statistics in a file.
func (r *Reader) RowGroupStats(tableID, columnID, fileID int64) ([]RowGroupStats, error) {
	var out []RowGroupStats
	err := scanPrefix(r, key(tagRowGroupStats, tableID, columnID, fileID), func(k, v []byte) error {
		rg, err := decodeRowGroup(k, v)
		out = append(out, rg)
		return err
	})
	return out, err
}

func decodeRowGroup(k, v []byte) (RowGroupStats, error) {
	var p catalogpb.RowGroupStats
	if err := decodeValue(v, &p); err != nil {
		return RowGroupStats{}, fmt.Errorf("row group stats %x: %w", k, err)
	}
	if len(k) < 29 {
		return RowGroupStats{}, fmt.Errorf("%w: row group key %x", ErrCorrupt, k)
	}
	idx := int32(uint32(k[25])<<24 | uint32(k[26])<<16 | uint32(k[27])<<8 | uint32(k[28]))
	return RowGroupStats{
		Index: idx, FirstRow: p.FirstRow, Stats: columnStatsFromPB(p.Stats),
		ColumnIndex: locFromPB(p.ColumnIndex), OffsetIndex: locFromPB(p.OffsetIndex),
		BloomFilter: locFromPB(p.BloomFilter),
	}, nil
}

// RowGroupCursor reads one column's row-group stats file after file
// through a single iterator: a plan that reads them for hundreds of kept
// files would otherwise open an iterator per file (tens of microseconds
// each). What it reads it keeps for the reader's state (rowGroupMemo),
// so a warm plan of a few kept files reads nothing.
type RowGroupCursor struct {
	r             *Reader
	it            kv.Iterator // opened at the first file the memo lacks
	table, column int64
	memo          *rowGroupMemo
}

// RowGroupCursor opens a cursor over a column's row-group stats; close it.
func (r *Reader) RowGroupCursor(tableID, columnID int64) (*RowGroupCursor, error) {
	k := r.cacheKey(tableID, rowGroupSpace-columnID)
	memo, ok := r.c.plan.get(k).(*rowGroupMemo)
	if !ok {
		memo = &rowGroupMemo{m: map[int64][]RowGroupStats{}}
		r.c.plan.put(k, memo, rowGroupMemoBytes)
		// Another plan may have put its memo first: use the one kept.
		if kept, ok := r.c.plan.get(k).(*rowGroupMemo); ok {
			memo = kept
		}
	}
	return &RowGroupCursor{r: r, table: tableID, column: columnID, memo: memo}, nil
}

// Stats returns a file's row-group stats for the cursor's column, as
// Reader.RowGroupStats does. Files may come in any order; increasing ids
// read the store in one forward pass. The result is shared: read it,
// never modify it.
func (c *RowGroupCursor) Stats(fileID int64) ([]RowGroupStats, error) {
	if out, ok := c.memo.get(fileID); ok {
		return out, nil
	}
	if c.it == nil {
		prefix := key(tagRowGroupStats, c.table, c.column)
		it, err := c.r.kvs.NewIter(prefix, kv.PrefixEnd(prefix))
		if err != nil {
			return nil, err
		}
		c.it = it
	}
	p := key(tagRowGroupStats, c.table, c.column, fileID)
	var out []RowGroupStats
	for ok := c.it.SeekGE(p); ok && bytes.HasPrefix(c.it.Key(), p); ok = c.it.Next() {
		rg, err := decodeRowGroup(c.it.Key(), c.it.Value())
		if err != nil {
			return nil, err
		}
		out = append(out, rg)
	}
	if err := c.it.Error(); err != nil {
		return nil, err
	}
	c.memo.put(fileID, out)
	return out, nil
}

// Close releases the cursor's iterator.
func (c *RowGroupCursor) Close() error {
	if c.it == nil {
		return nil
	}
	return c.it.Close()
}

// rowGroupMemo keeps the row-group stats of one column's files for a
// state (the plan cache's key), as cursors read them, up to
// rowGroupMemoBytes: on PostgreSQL each warm plan's read of its kept
// files' row groups was a round trip. A file's row-group stats are
// written once, with the file (or with a column ALTER adds, under a new
// schema version, so a new key), and deleted only when expiry forgets the
// file, which no plan of a state still read sees live; so what is kept is
// what the store holds. The bound keeps a broad plan (half a table of a
// million files) from filling the cache with rows it reads once; the
// memo is charged it whole when cached.
type rowGroupMemo struct {
	mu    sync.Mutex
	m     map[int64][]RowGroupStats
	bytes int
}

const rowGroupMemoBytes = 2 << 20

func (m *rowGroupMemo) get(fileID int64) ([]RowGroupStats, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out, ok := m.m[fileID]
	return out, ok
}

func (m *rowGroupMemo) put(fileID int64, rgs []RowGroupStats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := rowGroupsSize(rgs); m.bytes+n <= rowGroupMemoBytes {
		m.m[fileID] = rgs
		m.bytes += n
	}
}

// rowGroupsSize is about what a file's row-group stats hold: their
// structs, their bounds, and the map's entry.
func rowGroupsSize(rgs []RowGroupStats) int {
	n := 64
	for _, rg := range rgs {
		n += int(unsafe.Sizeof(rg)) + len(rg.Stats.Min.V) + len(rg.Stats.Max.V)
	}
	return n
}

// FileVariantStats returns the shredded sub-field statistics of a VARIANT
// column in a file.
func (r *Reader) FileVariantStats(tableID, columnID, fileID int64) ([]VariantStats, error) {
	var out []VariantStats
	err := scanPrefix(r, key(tagFileVariantStats, tableID, columnID, fileID), func(k, v []byte) error {
		var p catalogpb.VariantStats
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("variant stats %x: %w", k, err)
		}
		out = append(out, variantFromPB(&p))
		return nil
	})
	return out, err
}

// VariantPathStats returns one sub-field's statistics in each file of fs,
// aligned with fs.IDs (nil where a file has no row for the path), read in
// one range scan over the column's rows: their keys run table | column |
// file | path, so the scan passes every file's paths and decodes only the
// one asked for.
func (r *Reader) VariantPathStats(fs *FileSet, columnID int64, path string) ([]*VariantStats, error) {
	out := make([]*VariantStats, len(fs.IDs))
	at := make(map[int64]int, len(fs.IDs))
	for i, id := range fs.IDs {
		at[id] = i
	}
	prefix := key(tagFileVariantStats, fs.table, columnID)
	err := scanPrefix(r, prefix, func(k, v []byte) error {
		if len(k) < len(prefix)+8 || string(k[len(prefix)+8:]) != path {
			return nil
		}
		fileID, err := idAt(k, 2)
		if err != nil {
			return err
		}
		i, ok := at[fileID]
		if !ok {
			return nil // a file not visible at this snapshot
		}
		var p catalogpb.VariantStats
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("variant stats %x: %w", k, err)
		}
		vs := variantFromPB(&p)
		out[i] = &vs
		return nil
	})
	return out, err
}

// storedTableStats reads the table stats rows as written by the last commit
// that changed the table, with the catalog state they describe.
func (r *Reader) storedTableStats(tableID int64) (*TableStats, storedAt, error) {
	raw, err := r.kvs.Get(key(tagTableStats, tableID))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, storedAt{}, nil
	}
	if err != nil {
		return nil, storedAt{}, err
	}
	var p catalogpb.TableStats
	if err := decodeValue(raw, &p); err != nil {
		return nil, storedAt{}, fmt.Errorf("table stats of %d: %w", tableID, err)
	}
	ts := &TableStats{
		RecordCount: p.RecordCount, NextRowID: p.NextRowId, FileSizeBytes: p.FileSizeBytes,
		FileCount: p.FileCount, Columns: map[int64]*TableColumnStats{},
	}
	err = scanPrefix(r, key(tagTableColumnStats, tableID), func(k, v []byte) error {
		colID, err := idAt(k, 1)
		if err != nil {
			return err
		}
		var c catalogpb.TableColumnStats
		if err := decodeValue(v, &c); err != nil {
			return fmt.Errorf("table column stats %x: %w", k, err)
		}
		ts.Columns[colID] = &TableColumnStats{
			ContainsNull: maybeBool(c.ContainsNull), ContainsNaN: maybeBool(c.ContainsNan),
			Min: maybeBytes(c.Min), Max: maybeBytes(c.Max), MinIsExact: c.MinIsExact,
			MaxIsExact: c.MaxIsExact, ExtraStats: c.ExtraStats, NoValues: c.NoValues,
		}
		return nil
	})
	if err != nil {
		return nil, storedAt{}, err
	}
	err = scanPrefix(r, key(tagTableVariantStats, tableID), func(k, v []byte) error {
		colID, err := idAt(k, 1)
		if err != nil {
			return err
		}
		var p catalogpb.VariantStats
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("table variant stats %x: %w", k, err)
		}
		if cs := ts.Columns[colID]; cs != nil {
			cs.Variants = append(cs.Variants, variantFromPB(&p))
		}
		return nil
	})
	return ts, storedAt{statsKey: statsKey{table: tableID, nextFileID: p.NextFileId, schemaVersion: p.SchemaVersion},
		asOf: p.AsOfSnapshot, untilChanged: p.UntilChanged}, err
}

// ColumnStatsOf returns one column's statistics for the given files (as
// Files returns them, in id order), aligned with them: nil where a file has
// no stats row. One range scan merged with the file list, no lookups.
func (r *Reader) ColumnStatsOf(tableID, columnID int64, files []DataFile) ([]*stats.Column, error) {
	out := make([]*stats.Column, len(files))
	i := 0
	var p catalogpb.ColumnStats
	err := scanPrefix(r, key(tagFileColumnStats, tableID, columnID), func(k, v []byte) error {
		fileID, err := idAt(k, 2)
		if err != nil {
			return err
		}
		for i < len(files) && files[i].ID < fileID {
			i++
		}
		if i == len(files) || files[i].ID != fileID {
			return nil // not a file of this snapshot
		}
		p.Reset()
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("stats of column %d in file %d: %w", columnID, fileID, err)
		}
		st := columnStatsFromPB(&p)
		out[i] = &st
		return nil
	})
	return out, err
}
