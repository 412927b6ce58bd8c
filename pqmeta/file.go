package pqmeta

import (
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// File is what a Parquet file's footer says, read as DuckDB reads the
// file.
type File struct {
	Size       int64 // bytes
	FooterSize int64 // bytes of the thrift footer
	// Fingerprint is the footer's (see Fingerprint).
	Fingerprint uint64
	// Modified and Changed are the file's modification and status change
	// times as the footer was read, Unix nanoseconds, and Identity its
	// device and inode (local files only; see Stamp).
	Modified, Changed int64
	Identity          FileIdentity
	// Rows is the sum of the row groups' rows. The footer's own num_rows is
	// not used: some writers leave it 0 (parquet-testing's
	// repeated_no_annotation), and readers scan by row group.
	Rows int64
	// Columns are the top-level columns, in file order.
	Columns []*Column
	// Leaves are the primitive columns, in column chunk order.
	Leaves    []*Leaf
	RowGroups []RowGroup

	orders []columnOrder          // by leaf; nil when the footer has none
	parsed *metadata.FileMetaData // see Parsed
	writer writer
	byPath map[string]*Leaf // by Leaf.Path, folded (foldPath)
}

// RowGroup is one row group of the file.
type RowGroup struct {
	Rows int64
	// Chunks are the column chunks, one per leaf, in leaf order.
	Chunks []Chunk
}

// Chunk is what the footer says of one column chunk, beside the
// statistics ChunkStats translates.
type Chunk struct {
	// Values is the chunk's num_values: NULLs included, one per row for a
	// leaf outside lists and maps, one per element below them.
	Values         int64
	CompressedSize int64 // bytes of the chunk's pages, compressed
	// NullCount is the statistics' null_count as written, unchecked.
	NullCount   stats.Maybe[int64]
	ColumnIndex Location
	OffsetIndex Location
	BloomFilter Location
	// Geo is the chunk's geospatial statistics' bounding box (x and y),
	// when the writer wrote one that bounds every vertex; nil otherwise.
	Geo *types.Extent

	hasMeta bool // the chunk has its meta_data
	stats   *rawStats
}

// Location is a byte range in the file. The zero Location is absent;
// Length -1 is present with its length unknown (a bloom filter written
// without its length, by older writers).
type Location struct {
	Offset, Length int64
}

// Read reads and checks the footer of the Parquet file at path. When want
// is known, the file must be that one (see Open). Errors about the file's
// kind or content wrap ErrNotRegular, ErrNotParquet, ErrTruncated or
// ErrCorruptFooter and leave naming the path to the caller.
func Read(path string, want FileIdentity) (*File, error) {
	ft, err := readFooter(path, want)
	if err != nil {
		return nil, err
	}
	f, err := fromMetadata(ft.md)
	if err != nil {
		return nil, err
	}
	f.Size, f.FooterSize, f.Fingerprint = ft.fileSize, ft.footerLen, ft.fingerprint
	f.Modified, f.Changed, f.Identity = ft.stamp.Modified, ft.stamp.Changed, ft.stamp.ID
	if ft.full {
		f.parsed = ft.md
	}
	return f, nil
}

// Parsed is arrow-go's parse of the footer Read read (nil after Forget,
// for a footer arrow-go could not parse, and for ReadAt's), for opening
// the same file with file.WithMetadata instead of parsing the footer
// again: registration reads every file's column values for its filters
// right after its footer, and the second parse cost a tenth of it.
func (f *File) Parsed() *metadata.FileMetaData { return f.parsed }

// Forget drops Parsed, which holds about as much memory as the File.
func (f *File) Forget() { f.parsed = nil }

// Stamp is the stamp of the file as its footer was read (the zero Stamp
// but for the size for a footer read through ReadAt).
func (f *File) Stamp() Stamp {
	return Stamp{Size: f.Size, Modified: f.Modified, Changed: f.Changed, ID: f.Identity}
}

// ReadAt reads and checks the footer of a Parquet file of size bytes
// through r: a local file, or an object read by ranged requests (package
// storage). Modified is left 0; errors are those of Read.
func ReadAt(r io.ReaderAt, size int64) (*File, error) {
	ft, err := readFooterAt(r, size)
	if err != nil {
		return nil, err
	}
	f, err := fromMetadata(ft.md)
	if err != nil {
		return nil, err
	}
	f.Size, f.FooterSize, f.Fingerprint = ft.fileSize, ft.footerLen, ft.fingerprint
	return f, nil
}

// fromMetadata interprets a decoded footer and refuses one that
// contradicts itself.
func fromMetadata(md *metadata.FileMetaData) (*File, error) {
	cols, leaves, err := schemaOf(md)
	if err != nil {
		return nil, err
	}
	geoParquetColumns(md, cols)
	f := &File{
		Columns: cols, Leaves: leaves, RowGroups: rowGroups(md), orders: rawColumnOrders(md),
		writer: writerOf(md.FileMetaData.GetCreatedBy()), byPath: map[string]*Leaf{},
	}
	if f.orders != nil && len(f.orders) != len(leaves) {
		// column_orders that do not line up with the leaves: trust none.
		f.orders = make([]columnOrder, len(leaves))
		for i := range f.orders {
			f.orders[i] = columnOrderUnknown
		}
	}
	for i, g := range f.RowGroups {
		if g.Rows < 0 {
			return nil, fmt.Errorf("%w: row group %d has %d rows", ErrCorruptFooter, i, g.Rows)
		}
		if len(g.Chunks) != len(leaves) {
			return nil, fmt.Errorf("%w: row group %d has %d column chunks, the schema %d leaves",
				ErrCorruptFooter, i, len(g.Chunks), len(leaves))
		}
		for j, l := range leaves {
			// A flat leaf holds one value (NULL included) per row; a chunk
			// that disagrees with its row group's row count is a footer
			// that lies, and its counts would answer count(*) wrongly.
			if ch := g.Chunks[j]; ch.hasMeta && !l.Repeated && ch.Values != g.Rows {
				return nil, fmt.Errorf("%w: row group %d has %d rows but column %s holds %d values",
					ErrCorruptFooter, i, g.Rows, strings.Join(l.parquet, "."), ch.Values)
			}
		}
		f.Rows += g.Rows
	}
	for _, l := range leaves {
		if l.Path != nil {
			f.byPath[foldPath(l.Path)] = l
		}
	}
	return f, nil
}

// Leaf is the leaf a table column path names, matched as DuckDB matches
// names: ASCII letters without regard to case, every other character
// exactly (types.FoldIdent). A nested parent, or a VARIANT column, has
// none.
func (f *File) Leaf(path []string) (*Leaf, bool) {
	l, ok := f.byPath[foldPath(path)]
	return l, ok
}

// ChunkStats are the statistics of leaf l's chunk in row group rg, in type
// as, which must be one the leaf's type fits (Fits). Bounds are rounded
// outward where the file's unit or scale is finer, and everything the
// footer does not vouch for is left unknown: a bound kept always admits
// every value in the chunk. A VARIANT column's leaf gets the statistics of
// its shredded values.
func (f *File) ChunkStats(rg int, l *Leaf, as types.Type) stats.Column {
	probe := l
	if l.Variant != nil {
		v := *l
		v.dec = l.keepDec
		probe = &v
	}
	g := &f.RowGroups[rg]
	st := chunkStats(probe, &g.Chunks[l.Index], f.order(l.Index), g.Rows, f.writer)
	return toTableType(st, l.Type, as)
}

// CastError says why DuckDB's cast of the file's column c to type t would
// fail for some of the file's values, or is nil when it cannot. Of the
// casts Fits allows, only those that round and those into timestamp_ns,
// whose range is narrower, can fail; the file's exact bounds can prove
// that no value is affected.
func (f *File) CastError(c *Column, t types.Type) error {
	if len(c.Leaves) != 1 || c.Type.Equal(t) {
		return nil // nested types fit only when equal: nothing is cast
	}
	l := c.Leaves[0]
	return castFails(l, c.Type, t, f.leafStats(l))
}

// leafStats are a leaf's statistics over the whole file, in the leaf's
// own type.
func (f *File) leafStats(l *Leaf) stats.Column {
	units := make([]stats.Column, 0, len(f.RowGroups))
	for i := range f.RowGroups {
		units = append(units, f.ChunkStats(i, l, l.Type))
	}
	st := stats.Merge(units)
	if len(f.RowGroups) == 0 {
		st.ValueCount = stats.Known[int64](0)
	}
	return st
}

func (f *File) order(leaf int) columnOrder {
	if f.orders == nil {
		return columnOrderMissing
	}
	return f.orders[leaf]
}

// foldPath is a nested column path as a map key, each name folded as
// DuckDB folds identifiers.
func foldPath(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = types.FoldIdent(p)
	}
	return strings.Join(parts, "\x00")
}
