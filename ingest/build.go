package ingest

import (
	"fmt"
	"sort"
	"strings"

	"rocklake/catalog"
	"rocklake/stats"
	"rocklake/types"
)

// fileInfo is one Parquet file read and interpreted: enough to register it
// in any table it fits.
type fileInfo struct {
	path    string // absolute, symbolic links resolved
	from    string // the argument that named it
	id      catalog.FileIdentity
	size    int64
	footer  int64
	mtime   int64 // modification time as the footer was read, Unix nanoseconds
	schema  *fileSchema
	orders  []columnOrder
	groups  []rawRowGroup
	rows    int64
	writer  writer
	columns map[string]*column // top-level, by foldName
}

// inspect reads a file's footer and interprets its schema and row groups.
// Every error names what is wrong; the file is not changed.
func inspect(path string) (*fileInfo, error) { return inspectTarget(target{path: path}) }

// inspectTarget is inspect of a listed file, which must still be the file
// listed.
func inspectTarget(t target) (*fileInfo, error) {
	path := t.path
	ft, err := readFooter(path, t.id)
	if err != nil {
		return nil, err
	}
	fs, err := schemaOf(ft.md)
	if err != nil {
		return nil, err
	}
	fi := &fileInfo{
		path: path, from: t.from, id: t.id, size: ft.fileSize, footer: ft.footerLen, mtime: ft.modified, schema: fs,
		orders: rawColumnOrders(ft.md), groups: rawRowGroups(ft.md),
		writer: writerOf(ft.md.FileMetaData.GetCreatedBy()), columns: map[string]*column{},
	}
	if fi.orders != nil && len(fi.orders) != len(fs.leaves) {
		// column_orders that do not line up with the leaves: trust none.
		fi.orders = make([]columnOrder, len(fs.leaves))
		for i := range fi.orders {
			fi.orders[i] = columnOrderUnknown
		}
	}
	for i, g := range fi.groups {
		if g.NumRows < 0 {
			return nil, fmt.Errorf("%w: row group %d has %d rows", ErrCorruptFooter, i, g.NumRows)
		}
		if len(g.Chunks) != len(fs.leaves) {
			return nil, fmt.Errorf("%w: row group %d has %d column chunks, the schema %d leaves",
				ErrCorruptFooter, i, len(g.Chunks), len(fs.leaves))
		}
		for j, l := range fs.leaves {
			// A flat leaf holds one value (NULL included) per row; a chunk
			// that disagrees with its row group's row count is a footer
			// that lies, and its counts would answer count(*) wrongly.
			if ch := g.Chunks[j]; ch.hasMeta && !l.repeated && ch.NumValues != g.NumRows {
				return nil, fmt.Errorf("%w: row group %d has %d rows but column %s holds %d values",
					ErrCorruptFooter, i, g.NumRows, strings.Join(l.parquet, "."), ch.NumValues)
			}
		}
		fi.rows += g.NumRows
	}
	// The file-level num_rows is not checked against the row groups: some
	// writers leave it 0 (parquet-testing's repeated_no_annotation), and
	// readers scan by row group.
	// Columns are matched by name ignoring ASCII case, as DuckDB matches
	// them (names.go), so two names that differ only in ASCII case are one
	// name twice: DuckDB reads the second as another column (`a` and `A`
	// read as `a` and `A_1`). Refuse the file.
	for _, c := range fs.columns {
		key := types.FoldIdent(c.name)
		if other, ok := fi.columns[key]; ok {
			return nil, fmt.Errorf("%w: the file has columns %q and %q, whose names differ only in ASCII case", ErrSchemaMismatch, other.name, c.name)
		}
		fi.columns[key] = c
	}
	seen := map[string][]string{}
	for _, l := range fs.leaves {
		if l.path == nil {
			continue
		}
		key := foldPath(l.path)
		if other, ok := seen[key]; ok {
			return nil, fmt.Errorf("%w: the file has nested fields %q and %q, whose names differ only in ASCII case",
				ErrSchemaMismatch, strings.Join(other, "."), strings.Join(l.path, "."))
		}
		seen[key] = l.path
	}
	return fi, nil
}

func (fi *fileInfo) order(leaf int) columnOrder {
	if fi.orders == nil {
		return columnOrderMissing
	}
	return fi.orders[leaf]
}

// columnDefs are the file's top-level columns as table column definitions,
// for creating a table from its first file.
func (fi *fileInfo) columnDefs() []catalog.ColumnDef {
	defs := make([]catalog.ColumnDef, 0, len(fi.schema.columns))
	for _, c := range fi.schema.columns {
		defs = append(defs, catalog.ColumnDef{Name: c.name, Type: c.typ.String()})
	}
	return defs
}

// newFile checks the file against a table's columns and builds its
// registration: every table column must be in the file with a type that
// fits (see fits); file columns the table lacks are ignored.
func (fi *fileInfo) newFile(table string, cols []catalog.Column) (catalog.NewFile, error) {
	nf := catalog.NewFile{
		Path: fi.path, Format: "parquet", RecordCount: fi.rows, FileSizeBytes: fi.size,
		FooterSize: fi.footer, RowGroupCount: int32(len(fi.groups)), Identity: fi.id, ModifiedUnixNanos: fi.mtime,
	}
	leafByPath := map[string]*leaf{}
	for _, l := range fi.schema.leaves {
		if l.path != nil {
			leafByPath[foldPath(l.path)] = l
		}
	}
	for _, col := range cols {
		if col.Parent.Known {
			continue
		}
		fc, ok := fi.columns[types.FoldIdent(col.Name)]
		if !ok {
			for _, c := range fi.schema.columns {
				if caseOnlyMismatch(c.name, col.Name) {
					return nf, fmt.Errorf("%w: the file has no column %q, which table %q has: its column %q differs from it in the case of non-ASCII letters, and DuckDB, which ignores the case of ASCII letters only, would read it as another column (and %q as NULL)",
						ErrSchemaMismatch, col.Name, table, c.name, col.Name)
				}
			}
			return nf, fmt.Errorf("%w: the file has no column %q, which table %q has", ErrSchemaMismatch, col.Name, table)
		}
		if !fits(fc.typ, col.Type) {
			return nf, fmt.Errorf("%w: column %q is %s in the file, which does not fit the table's %s",
				ErrSchemaMismatch, col.Name, fc.typ, col.Type)
		}
		if len(fc.leaves) == 1 && !fc.typ.Equal(col.Type) {
			// Every query that reads the file would fail, while those that
			// skip it or answer from metadata would not: refuse it here.
			l := fc.leaves[0]
			if err := castFails(l, fc.typ, col.Type, fi.fileStats(l)); err != nil {
				return nf, fmt.Errorf("%w: column %q: %v", ErrSchemaMismatch, col.Name, err)
			}
		}
	}
	nf.ColumnsMatchTable = fi.columnsMatch(cols)
	for _, col := range cols {
		l, ok := leafByPath[foldPath(col.Path)]
		if !ok {
			continue // a nested parent, or a VARIANT: stats live on leaves
		}
		nf.Columns = append(nf.Columns, fi.leafColumn(l, col))
	}
	for _, col := range cols {
		if col.Type.Kind == types.KindVariant && !col.Parent.Known {
			if vc, ok := fi.variantColumn(col); ok {
				nf.Columns = append(nf.Columns, vc)
			}
		}
	}
	return nf, nil
}

// columnsMatch says the file's top-level columns are exactly the table's:
// same count, names (case and all), order and types.
func (fi *fileInfo) columnsMatch(cols []catalog.Column) bool {
	i := 0
	for _, col := range cols {
		if col.Parent.Known {
			continue
		}
		if i >= len(fi.schema.columns) {
			return false
		}
		fc := fi.schema.columns[i]
		if fc.name != col.Name || fc.typ.String() != col.Type.String() {
			return false
		}
		i++
	}
	return i == len(fi.schema.columns)
}

// leafColumn builds one leaf's per-row-group and per-file stats in the
// table column's type.
func (fi *fileInfo) leafColumn(l *leaf, col catalog.Column) catalog.FileColumn {
	fc := catalog.FileColumn{Path: col.Path}
	units := make([]stats.Column, 0, len(fi.groups))
	var first int64
	for i, g := range fi.groups {
		ch := &g.Chunks[l.index]
		st := chunkStats(l, ch, fi.order(l.index), g.NumRows, fi.writer)
		st = toTableType(st, l.typ, col.Type)
		units = append(units, st)
		fc.RowGroups = append(fc.RowGroups, catalog.RowGroupStats{
			Index: int32(i), FirstRow: first, Stats: st,
			ColumnIndex: location(ch.ColumnIndexOffset, ch.ColumnIndexLength),
			OffsetIndex: location(ch.OffsetIndexOffset, ch.OffsetIndexLength),
			BloomFilter: location(ch.BloomOffset, ch.BloomLength),
		})
		first += g.NumRows
	}
	fc.Stats = stats.Merge(units)
	if len(fi.groups) == 0 {
		fc.Stats.NullCount, fc.Stats.ValueCount = stats.Known[int64](0), stats.Known[int64](0)
		fc.Stats.ContainsNull = stats.Known(false)
	}
	return fc
}

// fileStats are a leaf's statistics over the whole file, in the file's
// own type.
func (fi *fileInfo) fileStats(l *leaf) stats.Column {
	units := make([]stats.Column, 0, len(fi.groups))
	for _, g := range fi.groups {
		units = append(units, chunkStats(l, &g.Chunks[l.index], fi.order(l.index), g.NumRows, fi.writer))
	}
	st := stats.Merge(units)
	if len(fi.groups) == 0 {
		st.ValueCount = stats.Known[int64](0)
	}
	return st
}

// location records where a page-index structure or bloom filter is. A
// bloom filter written without its length (older writers) gets Length -1:
// present, size unknown until its header is read.
func location(off *int64, length *int32) catalog.Location {
	if off == nil || *off < 0 {
		return catalog.Location{}
	}
	if length == nil || *length <= 0 {
		return catalog.Location{Offset: *off, Length: -1}
	}
	return catalog.Location{Offset: *off, Length: int64(*length)}
}

// toTableType converts a unit's bounds from the file's type to the table
// column's, rounding outward; a bound that cannot be converted is dropped.
func toTableType(st stats.Column, from, to types.Type) stats.Column {
	if from.Equal(to) {
		return st
	}
	fromCodec, ok1 := types.CodecFor(from)
	toCodec, ok2 := types.CodecFor(to)
	conv := func(b stats.Maybe[[]byte], exact bool, sd side) (stats.Maybe[[]byte], bool) {
		if !b.Known || !ok1 || !ok2 {
			return stats.Maybe[[]byte]{}, false
		}
		v, err := fromCodec.Decode(b.V)
		if err != nil {
			return stats.Maybe[[]byte]{}, false
		}
		cv, stillExact, ok := convertValue(v, from, to, sd)
		if !ok {
			return stats.Maybe[[]byte]{}, false
		}
		out, err := toCodec.Encode(cv)
		if err != nil {
			return stats.Maybe[[]byte]{}, false
		}
		return stats.Known(out), exact && stillExact
	}
	st.Min, st.MinIsExact = conv(st.Min, st.MinIsExact, lower)
	st.Max, st.MaxIsExact = conv(st.Max, st.MaxIsExact, upper)
	if !ok2 || !toCodec.Ordered() {
		st.Min, st.Max = stats.Maybe[[]byte]{}, stats.Maybe[[]byte]{}
	}
	return st
}

// variantColumn collects the variant stats of a VARIANT column: one entry
// per sub-field whose values are all in its typed_value leaf (its own
// untyped value leaf holds nothing), with that leaf's type and bounds.
func (fi *fileInfo) variantColumn(col catalog.Column) (catalog.FileColumn, bool) {
	// Joined by NUL: a top-level VARIANT named "a.b" is not the field b of
	// a struct a.
	name := types.FoldIdent(strings.Join(col.Path, "\x00"))
	typed := map[string]*leaf{}
	untyped := map[string]*leaf{}
	var paths []string
	for _, l := range fi.schema.leaves {
		if l.variant == nil || types.FoldIdent(l.variant.column) != name {
			continue
		}
		if l.variant.typed {
			if _, dup := typed[l.variant.path]; !dup {
				paths = append(paths, l.variant.path)
			}
			typed[l.variant.path] = l
		} else {
			untyped[l.variant.path] = l
		}
	}
	if len(paths) == 0 {
		return catalog.FileColumn{}, false
	}
	sort.Strings(paths)
	fc := catalog.FileColumn{Path: col.Path, Stats: stats.Column{RowCount: fi.rows}}
	for _, p := range paths {
		tl := typed[p]
		vs := catalog.VariantStats{Path: p, ShreddedType: tl.typ.String()}
		fully := true
		var units []stats.Column
		probe := *tl
		probe.dec = tl.keepDec
		for _, g := range fi.groups {
			ch := &g.Chunks[tl.index]
			st := chunkStats(&probe, ch, fi.order(tl.index), g.NumRows, fi.writer)
			units = append(units, st)
			vs.ColumnSizeBytes += ch.CompressedSize
			if ul := untyped[p]; ul != nil {
				uch := &g.Chunks[ul.index]
				vs.ColumnSizeBytes += uch.CompressedSize
				if uch.Stats == nil || uch.Stats.NullCount == nil || *uch.Stats.NullCount != uch.NumValues {
					fully = false
				}
			}
		}
		if !fully || tl.repeated {
			continue
		}
		st := stats.Merge(units)
		if !st.NullCount.Known || !st.ValueCount.Known {
			continue
		}
		vs.NullCount, vs.ValueCount = st.NullCount.V, st.ValueCount.V
		vs.Min, vs.Max, vs.ContainsNaN = st.Min, st.Max, st.ContainsNaN
		fc.Variants = append(fc.Variants, vs)
	}
	return fc, len(fc.Variants) > 0
}
