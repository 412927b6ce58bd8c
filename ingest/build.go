package ingest

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

// fileInfo is one Parquet file read and interpreted: enough to register it
// in any table it fits.
type fileInfo struct {
	path    string // absolute, symbolic links resolved
	from    string // the argument that named it
	id      catalog.FileIdentity
	meta    *pqmeta.File
	columns map[string]*pqmeta.Column // top-level, by types.FoldIdent
	obj     *storage.Object           // an object's listing; nil for a local file
	hive    []hiveValue               // the path's key=value directories
	hiveErr error                     // why they could not be read
}

// inspect reads a file's footer and interprets its schema and row groups.
// Every error names what is wrong; the file is not changed.
func inspect(path string) (*fileInfo, error) { return inspectTarget(target{path: path}, nil) }

// inspectTarget is inspect of a listed file, which must still be the file
// listed.
func inspectTarget(t target, objects storage.Store) (*fileInfo, error) {
	var meta *pqmeta.File
	var err error
	if t.obj != nil {
		// One ranged request for the tail; a second only when the footer
		// is longer than that.
		var rr *storage.RangeReader
		if rr, err = storage.NewRangeReader(context.Background(), objects, *t.obj, storage.FooterPrefetch); err == nil {
			meta, err = pqmeta.ReadAt(rr, t.obj.Size)
		}
	} else {
		meta, err = pqmeta.Read(t.path, pqmeta.FileIdentity(t.id))
	}
	if err != nil {
		return nil, err
	}
	fi := &fileInfo{path: t.path, from: t.from, id: t.id, meta: meta, columns: map[string]*pqmeta.Column{}, obj: t.obj}
	// Read always, refused only where a table takes partition values.
	fi.hive, fi.hiveErr = hivePath(t.path)
	// Columns are matched by name ignoring ASCII case, as DuckDB matches
	// them (names.go), so two names that differ only in ASCII case are one
	// name twice: DuckDB reads the second as another column (`a` and `A`
	// read as `a` and `A_1`). Refuse the file.
	for _, c := range meta.Columns {
		key := types.FoldIdent(c.Name)
		if other, ok := fi.columns[key]; ok {
			return nil, fmt.Errorf("%w: the file has columns %q and %q, whose names differ only in ASCII case", ErrSchemaMismatch, other.Name, c.Name)
		}
		fi.columns[key] = c
	}
	seen := map[string][]string{}
	for _, l := range meta.Leaves {
		if l.Path == nil {
			continue
		}
		key := foldPath(l.Path)
		if other, ok := seen[key]; ok {
			return nil, fmt.Errorf("%w: the file has nested fields %q and %q, whose names differ only in ASCII case",
				ErrSchemaMismatch, strings.Join(other, "."), strings.Join(l.Path, "."))
		}
		seen[key] = l.Path
	}
	return fi, nil
}

// columnDefs are the file's top-level columns as table column definitions,
// for creating a table from its first file.
func (fi *fileInfo) columnDefs() []catalog.ColumnDef {
	defs := make([]catalog.ColumnDef, 0, len(fi.meta.Columns))
	for _, c := range fi.meta.Columns {
		defs = append(defs, catalog.ColumnDef{Name: c.Name, Type: c.Type.DuckLakeName()})
	}
	return defs
}

// newFile checks the file against a table's columns and builds its
// registration: every table column must be in the file with a type that
// fits (pqmeta.Fits), but for partition columns, whose values come from the
// file's path and which the file must not hold. A file column the table
// lacks is refused, naming it, unless ignoreExtra: then it is recorded in
// the registration (NewFile.IgnoredColumns), so that it can be mapped in
// later, and queries never see it.
func (fi *fileInfo) newFile(table string, cols []catalog.Column, ignoreExtra bool) (catalog.NewFile, error) {
	m := fi.meta
	nf := catalog.NewFile{
		Path: fi.path, Format: "parquet", RecordCount: m.Rows, FileSizeBytes: m.Size,
		FooterSize: m.FooterSize, RowGroupCount: int32(len(m.RowGroups)), Identity: fi.id, ModifiedUnixNanos: m.Modified,
	}
	if fi.obj != nil {
		nf.ETag = fi.obj.ETag
	} else {
		nf.ChangedUnixNanos, nf.FooterFingerprint = m.Changed, m.Fingerprint
	}
	known := map[string]bool{}
	for _, col := range cols {
		if col.Parent.Known {
			continue
		}
		known[types.FoldIdent(col.Name)] = true
		fc, ok := fi.columns[types.FoldIdent(col.Name)]
		if col.Partition != "" {
			if ok {
				return nf, fmt.Errorf("%w: the file has a column %q, which is a partition column of table %q (its values come from the path)", ErrSchemaMismatch, fc.Name, table)
			}
			if fi.hiveErr != nil {
				return nf, fmt.Errorf("%w: %v", ErrSchemaMismatch, fi.hiveErr)
			}
			pc, pv, err := fi.partitionColumn(col)
			if err != nil {
				return nf, err
			}
			nf.Columns = append(nf.Columns, pc)
			nf.PartitionValues = append(nf.PartitionValues, pv)
			continue
		}
		if !ok {
			for _, c := range m.Columns {
				if caseOnlyMismatch(c.Name, col.Name) {
					return nf, fmt.Errorf("%w: the file has no column %q, which table %q has: its column %q differs from it in the case of non-ASCII letters, and DuckDB, which ignores the case of ASCII letters only, would read it as another column (and %q as NULL)",
						ErrSchemaMismatch, col.Name, table, c.Name, col.Name)
				}
			}
			return nf, fmt.Errorf("%w: the file has no column %q, which table %q has", ErrSchemaMismatch, col.Name, table)
		}
		if !pqmeta.Fits(fc.Type, col.Type) {
			return nf, fmt.Errorf("%w: column %q is %s in the file, which does not fit the table's %s",
				ErrSchemaMismatch, col.Name, types.DisplayName(fc.Type), types.DisplayName(col.Type))
		}
		// Every query that reads the file would fail, while those that
		// skip it or answer from metadata would not: refuse it here.
		if err := m.CastError(fc, col.Type); err != nil {
			return nf, fmt.Errorf("%w: column %q: %v", ErrSchemaMismatch, col.Name, err)
		}
	}
	var extra []string
	for _, c := range m.Columns {
		if !known[types.FoldIdent(c.Name)] {
			extra = append(extra, c.Name)
		}
	}
	if len(extra) > 0 {
		if !ignoreExtra {
			return nf, fmt.Errorf("%w: the file has %s %s, which table %q lacks (add --ignore-extra-columns to register it without them)",
				ErrSchemaMismatch, plural(len(extra), "column", "columns"), quoteList(extra), table)
		}
		nf.IgnoredColumns = extra
	}
	nf.ColumnsMatchTable = fi.columnsMatch(cols)
	for _, col := range cols {
		l, ok := m.Leaf(col.Path)
		if !ok {
			continue // a nested parent, or a VARIANT: stats live on leaves
		}
		fc := fi.leafColumn(l, col)
		if col.Type.Kind == types.KindGeometry && l.Type.Kind == types.KindGeometry {
			fi.addExtents(l, &fc)
		}
		nf.Columns = append(nf.Columns, fc)
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

// columnsMatch says the file's top-level columns are exactly the table's
// but its partition columns: same count, names (case and all), order and
// types.
func (fi *fileInfo) columnsMatch(cols []catalog.Column) bool {
	i := 0
	for _, col := range cols {
		if col.Parent.Known || col.Partition != "" {
			continue // partition columns are not in the file: readers supply them
		}
		if i >= len(fi.meta.Columns) {
			return false
		}
		fc := fi.meta.Columns[i]
		if fc.Name != col.Name || fc.Type.DuckLakeName() != col.Type.DuckLakeName() {
			return false
		}
		i++
	}
	return i == len(fi.meta.Columns)
}

// leafColumn builds one leaf's per-row-group and per-file stats in the
// table column's type.
func (fi *fileInfo) leafColumn(l *pqmeta.Leaf, col catalog.Column) catalog.FileColumn {
	m := fi.meta
	fc := catalog.FileColumn{Path: col.Path}
	units := make([]stats.Column, 0, len(m.RowGroups))
	var first int64
	for i, g := range m.RowGroups {
		ch := &g.Chunks[l.Index]
		st := m.ChunkStats(i, l, col.Type)
		units = append(units, st)
		fc.RowGroups = append(fc.RowGroups, catalog.RowGroupStats{
			Index: int32(i), FirstRow: first, Stats: st,
			ColumnIndex: catalog.Location(ch.ColumnIndex),
			OffsetIndex: catalog.Location(ch.OffsetIndex),
			BloomFilter: catalog.Location(ch.BloomFilter),
		})
		first += g.Rows
	}
	fc.Stats = stats.Merge(units)
	if len(m.RowGroups) == 0 {
		fc.Stats.NullCount, fc.Stats.ValueCount = stats.Known[int64](0), stats.Known[int64](0)
		fc.Stats.ContainsNull = stats.Known(false)
	}
	return fc
}

// variantColumn collects the variant stats of a VARIANT column: one entry
// per sub-field whose values are all in its typed_value leaf (its own
// untyped value leaf holds nothing), with that leaf's type and bounds, per
// file and per row group.
//
// Such an entry describes what DuckDB reads as the sub-field: a row where
// the field is missing, where the VARIANT is NULL, or where an enclosing
// value is not an object has the leaf NULL and DuckDB reads NULL (v.a.b of
// {'a': 'str'} is NULL). An enclosing object's own untyped value cannot
// carry the field: the shredding specification (VariantShredding.md,
// Objects) requires an object to be in typed_value, and the value of a
// partially shredded object never to hold a shredded field, so "readers do
// not need to read the value column".
func (fi *fileInfo) variantColumn(col catalog.Column) (catalog.FileColumn, bool) {
	// Joined by NUL: a top-level VARIANT named "a.b" is not the field b of
	// a struct a.
	name := types.FoldIdent(strings.Join(col.Path, "\x00"))
	typed := map[string]*pqmeta.Leaf{}
	untyped := map[string]*pqmeta.Leaf{}
	var paths []string
	for _, l := range fi.meta.Leaves {
		if l.Variant == nil || types.FoldIdent(l.Variant.Column) != name {
			continue
		}
		if l.Variant.Typed {
			if _, dup := typed[l.Variant.Path]; !dup {
				paths = append(paths, l.Variant.Path)
			}
			typed[l.Variant.Path] = l
		} else {
			untyped[l.Variant.Path] = l
		}
	}
	if len(paths) == 0 {
		return catalog.FileColumn{}, false
	}
	sort.Strings(paths)
	m := fi.meta
	// empty reports whether an untyped leaf holds no value in any row (a
	// missing leaf holds none).
	empty := func(ul *pqmeta.Leaf) bool {
		if ul == nil {
			return true
		}
		for _, g := range m.RowGroups {
			uch := &g.Chunks[ul.Index]
			if !uch.NullCount.Known || uch.NullCount.V != uch.Values {
				return false
			}
		}
		return true
	}
	fc := catalog.FileColumn{Path: col.Path, Stats: stats.Column{RowCount: m.Rows}}
	for _, p := range paths {
		tl := typed[p]
		vs := catalog.VariantStats{Path: p, ShreddedType: tl.Type.DuckLakeName()}
		var units []stats.Column
		for i, g := range m.RowGroups {
			units = append(units, m.ChunkStats(i, tl, tl.Type))
			vs.ColumnSizeBytes += g.Chunks[tl.Index].CompressedSize
			if ul := untyped[p]; ul != nil {
				vs.ColumnSizeBytes += g.Chunks[ul.Index].CompressedSize
			}
		}
		if !empty(untyped[p]) || tl.Repeated {
			continue
		}
		st := stats.Merge(units)
		if !st.NullCount.Known || !st.ValueCount.Known {
			continue
		}
		vs.NullCount, vs.ValueCount = st.NullCount.V, st.ValueCount.V
		vs.Min, vs.Max, vs.ContainsNaN = st.Min, st.Max, st.ContainsNaN
		for i, u := range units {
			if !u.NullCount.Known || !u.ValueCount.Known {
				vs.RowGroups = nil
				break
			}
			vs.RowGroups = append(vs.RowGroups, catalog.VariantRowGroup{Index: int32(i),
				ValueCount: u.ValueCount.V, NullCount: u.NullCount.V,
				Min: u.Min, Max: u.Max, ContainsNaN: u.ContainsNaN})
		}
		fc.Variants = append(fc.Variants, vs)
	}
	return fc, len(fc.Variants) > 0
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
