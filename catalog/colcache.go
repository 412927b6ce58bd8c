package catalog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/internal/hugemem"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/membership"
	"github.com/rocklake/rocklake/stats"
)

// Planning a table of a million files evaluates a predicate's few columns
// across every file. Decoding a million protobuf rows per plan costs
// hundreds of milliseconds; this file keeps what planning reads decoded,
// column-major and shared between readers:
//
//	FileSet       the table's live files: ids, rows, row groups as arrays
//	              (scanned per plan), DataFile rows (read for kept files)
//	ColumnBounds  one column's file stats aligned with the FileSet:
//	              flags[i]           uint16, which fields are known
//	              facts[i]           stats.Facts, what they prove (for checks
//	                                 over many files without Fill)
//	              nulls, values, rows counts: 4 bytes each, 8 when one does
//	                                 not fit; from blocks, none at all while
//	                                 they are the files' record counts (values,
//	                                 rows) or 0 (nulls)
//	              min, max           fixed-width: w bytes per file in one array;
//	                                 variable: one array + offsets (n+1)
//
// From blocks, an int64 or timestamp column without nulls costs 19 bytes
// per file: 3 of flags and facts, 16 of bounds (43 with every count
// stored wide); the FileSet 20 more.
//
// Both are cached under (table, next_file_id, schema_version[, column]).
// A table's live files change only by adding (next_file_id advances) or
// removing files (a removal advances next_file_id too), and its columns only
// with schema_version, so every snapshot with the same key sees the same
// files and the same (immutable) stats rows: time travel shares the cache
// safely, and a commit simply makes a new key. Entries are evicted oldest
// first beyond Options.CacheBytes.

// FileSet is a table's live files at a snapshot, in file id order. It is
// shared: read it, never modify it.
type FileSet struct {
	IDs           []int64
	RecordCounts  []int64
	RowGroupCount []int32
	// Totals over all files.
	TotalRowGroups int64
	TotalBytes     int64
	// EmptyFiles is the number of files without rows (a planner skips
	// them; with none it need not look).
	EmptyFiles int

	table int64
	// files holds the files' rows as far as they were read (Reader.FileAt):
	// all of them when built from rows, on demand when built from blocks.
	files *fileRows
	// blocks is set when the set was built from file blocks (blocks.go):
	// each block's first id and its files' positions here.
	blocks     []fsBlock
	fromBlocks bool

	built // where it was built, to extend it after appends
}

// built records the snapshot a cached entry was read at and the
// next_file_id of its key: a later state that only added files extends it
// (see extendable) instead of decoding every row again.
type built struct{ snap, nextFileID int64 }

// Len is the number of files.
func (s *FileSet) Len() int { return len(s.IDs) }

// memory counts the rows FileAt may keep as if all were read: an entry's
// size is charged once, when it is cached.
func (s *FileSet) memory() int64 {
	row := int64(unsafe.Sizeof(DataFile{}))
	if s.files.max > 0 {
		// Built from blocks: the arrays, a slot and a block position per
		// file, and at most max rows read later (64: a path).
		n := int64(len(s.IDs))
		return n*(8+8+4+8+4) + int64(min(s.files.n, s.files.max))*(row+64)
	}
	n := int64(len(s.IDs)) * (row + 8 + 8 + 4 + 8 + 4)
	read, paths := s.files.sizes()
	return n + paths + 64*int64(len(s.IDs)-read) // 64: a path, when it is read
}

// blockRowsKept is the fewest rows a FileSet built from blocks keeps once
// read (rowsKept). A cached set is accounted at put with room for every
// row it may keep, and a row per file (some 300 bytes) would put a set of
// millions of files over the cache's budget, so that no plan found it
// cached. Rows past the bound are read again by each plan that keeps
// their file.
var blockRowsKept = 1 << 18

// rowsKept is the most rows a FileSet of n files built from blocks keeps:
// all of them while the set fits half the budget (a million files under
// the default), else what room half the budget leaves beside its arrays,
// and never fewer than blockRowsKept.
func (c *planCache) rowsKept(n int) int {
	row := int64(unsafe.Sizeof(DataFile{})) + 64
	room := (c.budget/2 - int64(n)*(8+8+4+8+4)) / row
	return int(min(int64(n), max(room, int64(blockRowsKept))))
}

// fileRows holds a FileSet's DataFile rows as far as they were read. A
// plan over a million files built from blocks reads the rows of the few it
// keeps: they go in a map, since a slot per file would cost 8 MB that a
// cold plan never fills; once a sixteenth of the files are read (a broad
// query, or a set built from rows) they move to a slot per file, read
// without a lock as warm plans read them.
type fileRows struct {
	n    int
	all  atomic.Pointer[[]atomic.Pointer[DataFile]]
	mu   sync.Mutex // guards some, and the move to all
	some map[int]*DataFile
	// max, when above 0, is the most rows kept; kept counts them.
	max  int
	kept atomic.Int64
}

// fullRows is rows with every file's row read.
func fullRows(files []DataFile) *fileRows {
	f := &fileRows{n: len(files)}
	all := make([]atomic.Pointer[DataFile], len(files))
	for i := range files {
		all[i].Store(&files[i])
	}
	f.all.Store(&all)
	return f
}

func (f *fileRows) load(i int) *DataFile {
	if all := f.all.Load(); all != nil {
		return (*all)[i].Load()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if all := f.all.Load(); all != nil { // moved meanwhile
		return (*all)[i].Load()
	}
	return f.some[i]
}

// store keeps row i, unless max rows are kept already (it says so).
func (f *fileRows) store(i int, d *DataFile) bool {
	if f.max > 0 && f.kept.Load() >= int64(f.max) {
		return false
	}
	if all := f.all.Load(); all != nil {
		if (*all)[i].Swap(d) == nil {
			f.kept.Add(1)
		}
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if all := f.all.Load(); all != nil {
		if (*all)[i].Swap(d) == nil {
			f.kept.Add(1)
		}
		return true
	}
	if f.some == nil {
		f.some = map[int]*DataFile{}
	}
	if _, ok := f.some[i]; !ok {
		f.kept.Add(1)
	}
	f.some[i] = d
	if len(f.some) > 256 && len(f.some)*16 > f.n {
		all := make([]atomic.Pointer[DataFile], f.n)
		for j, d := range f.some {
			all[j].Store(d)
		}
		f.all.Store(&all)
		f.some = nil
	}
	return true
}

// copyFrom takes the rows base has read (of base's files, the first of
// this set's).
func (f *fileRows) copyFrom(base *fileRows) {
	if all := base.all.Load(); all != nil {
		mine := make([]atomic.Pointer[DataFile], f.n)
		for j := range *all {
			if d := (*all)[j].Load(); d != nil {
				mine[j].Store(d)
				f.kept.Add(1)
			}
		}
		f.all.Store(&mine)
		return
	}
	base.each(func(j int, d *DataFile) { f.store(j, d) })
}

// each calls fn with every row read.
func (f *fileRows) each(fn func(i int, d *DataFile)) {
	if all := f.all.Load(); all != nil {
		for j := range *all {
			if d := (*all)[j].Load(); d != nil {
				fn(j, d)
			}
		}
		return
	}
	f.mu.Lock()
	some := make(map[int]*DataFile, len(f.some))
	for j, d := range f.some {
		some[j] = d
	}
	all := f.all.Load()
	f.mu.Unlock()
	if all != nil { // moved meanwhile
		f.each(fn)
		return
	}
	for j, d := range some {
		fn(j, d)
	}
}

// sizes is the number of rows read and the bytes of their strings.
func (f *fileRows) sizes() (read int, bytes int64) {
	f.each(func(_ int, d *DataFile) {
		read++
		bytes += int64(len(d.Path) + len(d.Format))
	})
	return read, bytes
}

// Flags of ColumnBounds.
const (
	cbHasStats uint16 = 1 << iota
	cbHasMin
	cbHasMax
	cbMinExact
	cbMaxExact
	cbHasNulls
	cbHasValues
	cbHasContainsNull
	cbContainsNull
	cbHasContainsNaN
	cbContainsNaN
)

// ColumnBounds holds one column's file statistics aligned with a FileSet.
// It is shared: read it, never modify it.
type ColumnBounds struct {
	flags               []uint16
	facts               []stats.Facts
	nulls, values, rows counts
	min, max            boundArray
	built
}

// counts holds one count per file: 4 bytes each while every count fits
// (a million-file column's three count arrays are then 12 MB, not 24),
// 8 from the first one that does not. Counts made with defaults (a
// column's value and row counts, which are mostly its files' record
// counts; null counts, mostly 0) store nothing until one differs.
type counts struct {
	n     int
	def   []int64 // the defaults; nil: 0
	small []uint32
	big   []int64
}

func newCounts(n int) counts { return counts{n: n, small: make([]uint32, n)} }

// defaultCounts is n counts that are def (shared, never written; nil: 0)
// until set otherwise.
func defaultCounts(n int, def []int64) counts { return counts{n: n, def: def} }

func (c *counts) dflt(i int) int64 {
	if c.def == nil {
		return 0
	}
	return c.def[i]
}

func (c *counts) at(i int) int64 {
	switch {
	case c.small != nil:
		return int64(c.small[i])
	case c.big != nil:
		return c.big[i]
	}
	return c.dflt(i)
}

func (c *counts) set(i int, v int64) {
	if c.small != nil && uint64(v) <= math.MaxUint32 {
		c.small[i] = uint32(v)
		return
	}
	if c.small == nil && c.big == nil && v == c.dflt(i) {
		return
	}
	c.setSlow(i, v)
}

// setSlow is set of a count that is stored wide or that makes the counts
// leave their defaults.
func (c *counts) setSlow(i int, v int64) {
	switch {
	case c.small != nil: // v does not fit
		c.big = make([]int64, len(c.small))
		for j, x := range c.small {
			c.big[j] = int64(x)
		}
		c.small = nil
	case c.big != nil:
	default: // the first count that is not the default
		c.small = make([]uint32, c.n)
		for j, x := range c.def {
			if uint64(x) > math.MaxUint32 {
				c.small = nil
				break
			}
			c.small[j] = uint32(x)
		}
		if c.small == nil {
			c.big = slices.Clone(c.def)
		}
		c.def = nil
		c.set(i, v)
		return
	}
	c.big[i] = v
}

// copyFrom copies the first n counts of from.
func (c *counts) copyFrom(from *counts, n int) {
	for i := range n {
		c.set(i, from.at(i))
	}
}

func (c *counts) bytes() int64 { return int64(4*len(c.small) + 8*len(c.big)) }

// boundArray stores encoded bounds: w bytes each at i*w when every known
// bound has width w (fixed-width types), else data[off[i]:off[i+1]].
type boundArray struct {
	w    int
	data []byte
	off  []uint64
}

func (b *boundArray) at(i int) []byte {
	if b.off == nil {
		return b.data[i*b.w : (i+1)*b.w : (i+1)*b.w]
	}
	return b.data[b.off[i]:b.off[i+1]:b.off[i+1]]
}

// Len is the number of files.
func (cb *ColumnBounds) Len() int { return len(cb.flags) }

// Fill writes file i's statistics into st, aliasing the cached bounds (do
// not modify them); false when the file has no stats row for the column.
func (cb *ColumnBounds) Fill(i int, st *stats.Column) bool {
	f := cb.flags[i]
	if f&cbHasStats == 0 {
		return false
	}
	*st = stats.Column{
		NullCount:    stats.Maybe[int64]{V: cb.nulls.at(i), Known: f&cbHasNulls != 0},
		ValueCount:   stats.Maybe[int64]{V: cb.values.at(i), Known: f&cbHasValues != 0},
		ContainsNull: stats.Maybe[bool]{V: f&cbContainsNull != 0, Known: f&cbHasContainsNull != 0},
		ContainsNaN:  stats.Maybe[bool]{V: f&cbContainsNaN != 0, Known: f&cbHasContainsNaN != 0},
		RowCount:     cb.rows.at(i),
		MinIsExact:   f&cbMinExact != 0,
		MaxIsExact:   f&cbMaxExact != 0,
	}
	if f&cbHasMin != 0 {
		st.Min = stats.Maybe[[]byte]{V: cb.min.at(i), Known: true}
	}
	if f&cbHasMax != 0 {
		st.Max = stats.Maybe[[]byte]{V: cb.max.at(i), Known: true}
	}
	return true
}

// BytesPerFile is the cache's memory per file for this column.
func (cb *ColumnBounds) BytesPerFile() float64 {
	if len(cb.flags) == 0 {
		return 0
	}
	return float64(cb.memory()) / float64(len(cb.flags))
}

func (cb *ColumnBounds) memory() int64 {
	n := int64(len(cb.flags))*(2+1) + cb.nulls.bytes() + cb.values.bytes() + cb.rows.bytes() + int64(len(cb.min.data)+len(cb.max.data))
	return n + 8*int64(len(cb.min.off)+len(cb.max.off))
}

// cacheKey names a plan cache entry. Its column says what the entry is,
// one key space per kind below zero (column ids start at 1):
//
//	column id (≥ 1)          the column's ColumnBounds
//	-1                       the FileSet
//	-2                       the table's delete files (deleteFilesColumn)
//	-2 - id                  the column's FilterSet (Filters)
//	-(1<<40) - id            the column's slab views (membership.go)
//	-(2<<40) - id            the column's BlockSummaries (blocksummary.go)
//	hasFiltersSpace - id     whether the column has filters (HasFilters)
//	statsBlockSpace - id     one stats block of the column, block naming its
//	                         first file id (statsBlocksOf)
//	rowGroupSpace - id       the column's files' row-group stats as plans
//	                         read them (rowGroupMemo)
type cacheKey struct {
	statsKey
	column int64
	block  int64 // a stats block's first file id; 0 for every other entry
}

const (
	hasFiltersSpace = -(3 << 40)
	statsBlockSpace = -(4 << 40)
	rowGroupSpace   = -(5 << 40)
)

type cacheEntry struct {
	v    any
	size int64
}

// planCache holds FileSets and ColumnBounds, evicted oldest first beyond
// a byte budget. The pieces single plans read (stats blocks, row-group
// statistics: piece) go in a queue of their own, within an eighth of the
// budget: many different selective plans each keep a few, and in the
// one queue they would in time push out the table's FileSet, the oldest
// entry and the one every plan needs.
type planCache struct {
	mu     sync.Mutex
	budget int64
	m      map[cacheKey]cacheEntry
	sets   fifo // FileSets, bounds, filters, summaries
	pieces fifo
	latest map[[2]int64]cacheKey // (table, column) → newest key cached
}

// fifo is one of the plan cache's queues: its keys oldest first and the
// bytes their entries hold.
type fifo struct {
	order []cacheKey
	used  int64
}

// piece says whether k names a piece one plan read (see planCache).
func (k cacheKey) piece() bool {
	in := func(space int64) bool { return k.column <= space && k.column > space-(1<<40) }
	return in(statsBlockSpace) || in(rowGroupSpace)
}

// DefaultCacheBytes is the plan cache's default budget: about a
// million-file table with a dozen cached columns.
const DefaultCacheBytes = 1 << 30

func (c *planCache) get(k cacheKey) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k].v
}

func (c *planCache) put(k cacheKey, v any, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q, limit := &c.sets, c.budget
	if k.piece() {
		q, limit = &c.pieces, c.budget/8
	}
	if c.budget < 0 || size > limit {
		return
	}
	if c.m == nil {
		c.m = map[cacheKey]cacheEntry{}
	}
	if _, ok := c.m[k]; ok {
		return
	}
	for q.used+size > limit && len(q.order) > 0 {
		old := q.order[0]
		q.order = q.order[1:]
		q.used -= c.m[old].size
		delete(c.m, old)
		if c.latest[[2]int64{old.table, old.column}] == old {
			delete(c.latest, [2]int64{old.table, old.column})
		}
	}
	c.m[k] = cacheEntry{v, size}
	q.order = append(q.order, k)
	q.used += size
	if k.piece() {
		return // nothing extends a piece
	}
	if c.latest == nil {
		c.latest = map[[2]int64]cacheKey{}
	}
	lk := [2]int64{k.table, k.column}
	if old, ok := c.latest[lk]; !ok || old.nextFileID <= k.nextFileID {
		c.latest[lk] = k
	}
}

// drop forgets the entries of both queues that gone names.
func (c *planCache) drop(gone func(cacheKey) bool) {
	for _, q := range []*fifo{&c.sets, &c.pieces} {
		kept := q.order[:0]
		for _, k := range q.order {
			if gone(k) {
				q.used -= c.m[k].size
				delete(c.m, k)
				continue
			}
			kept = append(kept, k)
		}
		q.order = kept
	}
}

// dropFileSets forgets every FileSet of a table: a restamp changed file
// rows in place, and those of older snapshots hold them too.
func (c *planCache) dropFileSets(table int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(func(k cacheKey) bool { return k.table == table && k.column == -1 })
	delete(c.latest, [2]int64{table, -1})
}

// dropTable forgets everything cached of a table: expiry rewrote its
// blocks without changing its cache keys (it makes no snapshot), and a
// FileSet read before holds their old shapes.
func (c *planCache) dropTable(table int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(func(k cacheKey) bool { return k.table == table })
	for lk := range c.latest {
		if lk[0] == table {
			delete(c.latest, lk)
		}
	}
}

// base is the newest cached entry for k's table and column under the same
// schema version and an older next_file_id: what k's state may extend.
func (c *planCache) base(k cacheKey) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.latest[[2]int64{k.table, k.column}]
	if !ok || b.schemaVersion != k.schemaVersion || b.nextFileID >= k.nextFileID {
		return nil
	}
	return c.m[b].v
}

// extensions counts entries built by extending an older one (tests read
// it to know the path ran).
var extensions atomic.Int64

// maxExtendSnapshots bounds the snapshots extendable reads; beyond it a
// full rebuild is as cheap.
const maxExtendSnapshots = 4096

// extendable says whether the table only gained files between the
// snapshot b was built at and the reader's: no snapshot between removed a
// file from it (a removal records the table in DeletedFromTables),
// dropped it, or restamped its files (their rows changed in place). Then
// every file b holds is still live, as b holds it, and the new ones are
// exactly the visible files with ids from b.nextFileID on.
func (r *Reader) extendable(tableID int64, b built) (bool, error) {
	if b.snap >= r.snap.ID || r.snap.ID-b.snap > maxExtendSnapshots {
		return false, nil
	}
	errShrunk := errors.New("files removed")
	err := scanSnapshots(r.kvs, b.snap+1, r.snap.ID, func(s Snapshot) error {
		if slices.Contains(s.Changes.DeletedFromTables, tableID) || slices.Contains(s.Changes.DroppedTables, tableID) ||
			slices.Contains(s.Changes.RestampedTables, tableID) {
			return errShrunk
		}
		return nil
	})
	if errors.Is(err, errShrunk) || errors.Is(err, ErrNoSuchSnapshot) {
		return false, nil
	}
	return err == nil, err
}

func (r *Reader) cacheKey(tableID, column int64) cacheKey {
	return cacheKey{statsKey: statsKey{table: tableID, nextFileID: r.snap.NextFileID, schemaVersion: r.snap.SchemaVersion}, column: column}
}

// FileSet returns the table's live files at the reader's snapshot, from the
// catalog's cache when another reader of the same state built it.
func (r *Reader) FileSet(tableID int64) (*FileSet, error) {
	k := r.cacheKey(tableID, -1)
	if v, ok := r.c.plan.get(k).(*FileSet); ok {
		return v, nil
	}
	blocks, err := r.readsBlocks(tableID)
	if err != nil {
		return nil, err
	}
	if blocks {
		base, _ := r.c.plan.base(k).(*FileSet)
		if base != nil {
			ok, err := r.extendable(tableID, base.built)
			if err != nil {
				return nil, err
			}
			if ok && base.fromBlocks {
				extensions.Add(1)
			} else {
				base = nil
			}
		}
		s, err := r.blocksFileSet(tableID, base)
		if err != nil {
			return nil, err
		}
		r.c.plan.put(k, s, s.memory())
		return s, nil
	}
	var files []DataFile
	base, _ := r.c.plan.base(k).(*FileSet)
	if base != nil && base.fromBlocks {
		base = nil
	}
	if base != nil {
		ok, err := r.extendable(tableID, base.built)
		if err != nil {
			return nil, err
		}
		if !ok {
			base = nil
		}
	}
	if base != nil {
		extensions.Add(1)
		// Only the rows of files added since base: one short range scan.
		files = make([]DataFile, len(base.IDs), len(base.IDs)+64)
		for i := range base.IDs {
			files[i] = *base.files.load(i)
		}
		var p catalogpb.DataFile
		err = r.scan(key(tagDataFile, tableID, base.nextFileID), kv.PrefixEnd(key(tagDataFile, tableID)), func(k, v []byte) error {
			p.Reset()
			if err := decodeValue(v, &p); err != nil {
				return fmt.Errorf("data file row %x: %w", k, err)
			}
			if visibleAt(r.snap.ID, p.BeginSnapshot, p.EndSnapshot) {
				files = append(files, dataFileFromPB(&p))
			}
			return nil
		})
	} else {
		files, err = r.Files(tableID)
	}
	if err != nil {
		return nil, err
	}
	s := &FileSet{IDs: make([]int64, len(files)), RecordCounts: make([]int64, len(files)),
		RowGroupCount: make([]int32, len(files)), table: tableID, files: fullRows(files),
		built: built{snap: r.snap.ID, nextFileID: r.snap.NextFileID}}
	for i, f := range files {
		s.IDs[i], s.RecordCounts[i], s.RowGroupCount[i] = f.ID, f.RecordCount, f.RowGroupCount
		s.TotalRowGroups += int64(f.RowGroupCount)
		s.TotalBytes += f.FileSizeBytes
		if f.RecordCount == 0 {
			s.EmptyFiles++
		}
	}
	r.c.plan.put(k, s, s.memory())
	return s, nil
}

// ColumnBounds returns one column's file statistics aligned with
// FileSet(tableID), from the cache when possible: one range scan over the
// column's stats rows otherwise.
func (r *Reader) ColumnBounds(tableID, columnID int64) (*ColumnBounds, error) {
	k := r.cacheKey(tableID, columnID)
	if v, ok := r.c.plan.get(k).(*ColumnBounds); ok {
		return v, nil
	}
	fs, err := r.FileSet(tableID)
	if err != nil {
		return nil, err
	}
	n := fs.Len()
	cb := &ColumnBounds{flags: hugemem.Zeroed[uint16](n),
		built: built{snap: r.snap.ID, nextFileID: r.snap.NextFileID}}
	if fs.fromBlocks {
		// A column's row counts are its files' record counts, which the
		// FileSet holds already.
		cb.rows = defaultCounts(n, fs.RecordCounts)
		cb.values = defaultCounts(n, fs.RecordCounts)
		cb.nulls = defaultCounts(n, nil)
	} else {
		cb.rows, cb.values, cb.nulls = newCounts(n), newCounts(n), newCounts(n)
	}
	cb.facts = hugemem.Zeroed[stats.Facts](n)
	from, fresh := int64(0), 0 // files from index fresh on are read here
	base, _ := r.c.plan.base(k).(*ColumnBounds)
	if base != nil {
		n0 := len(base.flags)
		ok, err := r.extendBase(tableID, fs, base.built, n0)
		if err != nil {
			return nil, err
		}
		if ok {
			extensions.Add(1)
			copy(cb.flags, base.flags)
			cb.nulls.copyFrom(&base.nulls, n0)
			cb.values.copyFrom(&base.values, n0)
			cb.rows.copyFrom(&base.rows, n0)
			copy(cb.facts, base.facts)
			from, fresh = base.nextFileID, n0
		} else {
			base = nil
		}
	}
	if fs.fromBlocks {
		if err := r.blocksColumnBounds(fs, tableID, columnID, from, fresh, base, cb); err != nil {
			return nil, err
		}
		r.deriveFacts(cb, fresh)
		r.c.plan.put(k, cb, cb.memory())
		return cb, nil
	}
	mins, maxs := make([][]byte, n), make([][]byte, n)
	for i := range fresh {
		mins[i], _ = base.MinBound(i)
		maxs[i], _ = base.MaxBound(i)
	}
	var p catalogpb.ColumnStats
	err = scanAligned(r, fs, key(tagFileColumnStats, tableID, columnID), from, func(i int, fileID int64, v []byte) error {
		p.Reset()
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("stats of column %d in file %d: %w", columnID, fileID, err)
		}
		f := cbHasStats
		set := func(cond bool, bit uint16) {
			if cond {
				f |= bit
			}
		}
		if p.Min != nil {
			f |= cbHasMin
			mins[i] = p.Min
		}
		if p.Max != nil {
			f |= cbHasMax
			maxs[i] = p.Max
		}
		set(p.MinIsExact, cbMinExact)
		set(p.MaxIsExact, cbMaxExact)
		if p.NullCount != nil {
			f |= cbHasNulls
			cb.nulls.set(i, *p.NullCount)
		}
		if p.ValueCount != nil {
			f |= cbHasValues
			cb.values.set(i, *p.ValueCount)
		}
		if p.ContainsNull != nil {
			f |= cbHasContainsNull
			set(*p.ContainsNull, cbContainsNull)
		}
		if p.ContainsNan != nil {
			f |= cbHasContainsNaN
			set(*p.ContainsNan, cbContainsNaN)
		}
		cb.flags[i] = f
		cb.rows.set(i, p.RowCount)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r.finishBounds(k, cb, mins, maxs, fresh), nil
}

// finishBounds packs the bounds, derives the facts of files from fresh on
// and caches cb.
func (r *Reader) finishBounds(k cacheKey, cb *ColumnBounds, mins, maxs [][]byte, fresh int) *ColumnBounds {
	cb.min, cb.max = packBounds(mins), packBounds(maxs)
	r.deriveFacts(cb, fresh)
	r.c.plan.put(k, cb, cb.memory())
	return cb
}

// deriveFacts computes the facts of files from fresh on from Fill, so that
// the facts and the stats they summarise cannot disagree. What FactsOf
// reads of a Fill is its flags and three tests of its counts (no nulls, no
// values, all nulls), so files alike in those have the same facts: each
// such kind of file is summarised once, through Fill, and the others
// copy it (a million files are a few kinds).
func (r *Reader) deriveFacts(cb *ColumnBounds, fresh int) {
	const kinds = int(cbContainsNaN) << 4 // every flags value, times the three tests
	var memo [kinds]uint16                // facts + 1<<8 once known
	var st stats.Column
	for i := fresh; i < len(cb.flags); i++ {
		f := cb.flags[i]
		if f&cbHasStats == 0 {
			continue
		}
		nulls, values, rows := cb.nulls.at(i), cb.values.at(i), cb.rows.at(i)
		k := int(f) << 3
		if nulls == 0 {
			k |= 1
		}
		if values == 0 {
			k |= 2
		}
		if rows > 0 && nulls == rows {
			k |= 4
		}
		if k >= kinds || memo[k] == 0 {
			cb.Fill(i, &st)
			facts := stats.FactsOf(&st)
			cb.facts[i] = facts
			if k < kinds {
				memo[k] = uint16(facts) | 1<<8
			}
			continue
		}
		cb.facts[i] = stats.Facts(memo[k])
	}
}

// scanAligned scans rows keyed prefix | file id, for files from id from
// on, and calls fn with the position in fs of each row's file; rows of
// files the snapshot does not see are passed over. Both are in file id
// order: one merge, no lookups.
func scanAligned(r *Reader, fs *FileSet, prefix []byte, from int64, fn func(i int, fileID int64, v []byte) error) error {
	n, at := fs.Len(), (len(prefix)-1)/8
	i := sort.Search(n, func(j int) bool { return fs.IDs[j] >= from })
	lower := binary.BigEndian.AppendUint64(append([]byte(nil), prefix...), uint64(from))
	return r.scan(lower, kv.PrefixEnd(prefix), func(k, v []byte) error {
		fileID, err := idAt(k, at)
		if err != nil {
			return err
		}
		for i < n && fs.IDs[i] < fileID {
			i++
		}
		if i == n || fs.IDs[i] != fileID {
			return nil // not a file of this snapshot
		}
		return fn(i, fileID, v)
	})
}

// extendBase returns base when this reader's files extend the ones base
// was built for: only appends since, and fs starts with exactly base's n0
// files (those with ids below base's next_file_id).
func (r *Reader) extendBase(tableID int64, fs *FileSet, b built, n0 int) (bool, error) {
	if sort.Search(fs.Len(), func(j int) bool { return fs.IDs[j] >= b.nextFileID }) != n0 {
		return false, nil
	}
	return r.extendable(tableID, b)
}

// packBounds lays bounds out in one array; nil entries are unknown.
// Protobuf decoding gives each bound its own copy of the bytes, so this is
// also what frees the per-row allocations.
func packBounds(bs [][]byte) boundArray {
	bw := newBoundWidth()
	for _, b := range bs {
		if b != nil {
			bw.note(len(b))
		}
	}
	w, total := bw.w, bw.total
	if w >= 0 && w < 1<<16 {
		data := make([]byte, len(bs)*w)
		for i, b := range bs {
			copy(data[i*w:], b)
		}
		return boundArray{w: w, data: data}
	}
	if w == -1 {
		return boundArray{w: 0, data: nil}
	}
	data := make([]byte, 0, total)
	off := make([]uint64, len(bs)+1)
	for i, b := range bs {
		data = append(data, b...)
		off[i+1] = uint64(len(data))
	}
	return boundArray{data: data, off: off}
}

// boundWidth finds the one width of a column's known bounds: w is -1
// while none is seen, -2 once two differ; total is their bytes.
type boundWidth struct{ w, total int }

func newBoundWidth() boundWidth { return boundWidth{w: -1} }

func (b *boundWidth) note(n int) {
	b.total += n
	switch {
	case b.w == -1:
		b.w = n
	case b.w != n:
		b.w = -2
	}
}

// MinBound is file i's lower bound, if known (it aliases the cache).
func (cb *ColumnBounds) MinBound(i int) ([]byte, bool) {
	if cb.flags[i]&cbHasMin == 0 {
		return nil, false
	}
	return cb.min.at(i), true
}

// MaxBound is file i's upper bound, if known (it aliases the cache).
func (cb *ColumnBounds) MaxBound(i int) ([]byte, bool) {
	if cb.flags[i]&cbHasMax == 0 {
		return nil, false
	}
	return cb.max.at(i), true
}

// BoundArrays gives the column's bounds as arrays over the files, and per
// file what its statistics prove (stats.FactsOf its Fill): for checks over
// many files that read bounds without Fill. They alias the cache: do not
// modify them.
func (cb *ColumnBounds) BoundArrays() (min, max stats.BoundArray, facts []stats.Facts) {
	return stats.BoundArray{Data: cb.min.data, Off: cb.min.off, W: cb.min.w},
		stats.BoundArray{Data: cb.max.data, Off: cb.max.off, W: cb.max.w}, cb.facts
}

// FilterSet holds one column's membership filters aligned with a FileSet.
// It is shared: read it, never modify it.
type FilterSet struct {
	filters []*membership.Filter // nil: the file has none
	count   int
	bytes   int64
	built
}

// MayContain is false only when file i's filter rules out the value (its
// encoding in the column's type); a file without a filter may contain it.
func (s *FilterSet) MayContain(i int, enc []byte) bool {
	f := s.filters[i]
	return f == nil || f.MayContain(enc)
}

// Has says whether file i has a filter.
func (s *FilterSet) Has(i int) bool { return s.filters[i] != nil }

// Count is the number of files with a filter; Bytes their stored size.
func (s *FilterSet) Count() int   { return s.count }
func (s *FilterSet) Bytes() int64 { return s.bytes }

// Filters returns the column's membership filters aligned with
// FileSet(tableID), or nil when no visible file has one. A filter that does
// not decode is ignored (its file may contain anything).
func (r *Reader) Filters(tableID, columnID int64) (*FilterSet, error) {
	k := r.cacheKey(tableID, columnID)
	k.column = -2 - columnID // the filters' own key space
	if v := r.c.plan.get(k); v != nil {
		s, _ := v.(*FilterSet)
		return s, nil
	}
	fs, err := r.FileSet(tableID)
	if err != nil {
		return nil, err
	}
	n := fs.Len()
	s := &FilterSet{filters: make([]*membership.Filter, n), built: built{snap: r.snap.ID, nextFileID: r.snap.NextFileID}}
	from := int64(0)
	if base, _ := r.c.plan.base(k).(*FilterSet); base != nil {
		ok, err := r.extendBase(tableID, fs, base.built, len(base.filters))
		if err != nil {
			return nil, err
		}
		if ok {
			extensions.Add(1)
			copy(s.filters, base.filters)
			s.count, s.bytes, from = base.count, base.bytes, base.nextFileID
		}
	}
	var p catalogpb.MembershipFilter
	err = scanAligned(r, fs, key(tagFileFilter, tableID, columnID), from, func(i int, _ int64, v []byte) error {
		p.Reset()
		if decodeValue(v, &p) != nil || p.Kind != membership.Kind {
			return nil
		}
		if f, err := membership.Decode(p.Data); err == nil {
			s.filters[i] = f
			s.count++
			s.bytes += int64(len(p.Data))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if s.count == 0 {
		s = nil
	}
	size := int64(8 * n)
	if s != nil {
		size += s.bytes
	}
	r.c.plan.put(k, s, size)
	return s, nil
}

// HasFilters says whether any file of the table, at any snapshot, has a
// membership filter for the column: registrations keep building them for
// a column that has them.
//
// The answer is kept in the plan cache for the reader's state: without
// it every warm plan of an equality made a read of its own, on
// PostgreSQL a round trip that was most of the plan (1.2 ms against
// Pebble's 0.3). Filters are written only with new files, which move
// next_file_id, so a state that had none has none. Expiry may delete the
// last of them, and then a kept "true" costs probes that find no filter,
// which keep the file: the answer decides how a plan looks, never what
// it skips.
func (r *Reader) HasFilters(tableID, columnID int64) (bool, error) {
	k := r.cacheKey(tableID, hasFiltersSpace-columnID)
	if v, ok := r.c.plan.get(k).(hasFilters); ok {
		return bool(v), nil
	}
	found := false
	err := scanPrefix(r, key(tagFileFilter, tableID, columnID), func(_, _ []byte) error {
		found = true
		return errStopScan
	})
	if err == errStopScan {
		err = nil
	}
	if err == nil {
		r.c.plan.put(k, hasFilters(found), 1)
	}
	return found, err
}

// hasFilters is HasFilters' answer as the plan cache keeps it.
type hasFilters bool

var errStopScan = errors.New("stop")
