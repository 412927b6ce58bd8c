package ingest

import (
	"fmt"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/types"
)

// geometryExtents reads a GEOMETRY leaf's WKB values once and returns each
// row group's extent (nil where it has none: a NaN or infinite coordinate,
// a value that is not WKB).
//
// The extents are computed from the values even when the writer wrote
// Parquet geospatial statistics: those skip NaN coordinates
// (Geospatial.md, Bounding Box), while DuckDB's extent test matches
// POINT(1 NaN) against any box whose x range holds 1
// ('POINT(1 NaN)'::GEOMETRY && 'POINT(1 200)'::GEOMETRY is true), so a
// writer's box does not bound what DuckDB compares.
func geometryExtents(path string, id catalog.FileIdentity, l *pqmeta.Leaf, rowGroups int) (out []*types.Extent, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("arrow-go: %v", r)
		}
	}()
	f, err := pqmeta.Open(path, pqmeta.FileIdentity(id))
	if err != nil {
		return nil, err
	}
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	defer rdr.Close()
	if rdr.NumRowGroups() != rowGroups {
		return nil, fmt.Errorf("%d row groups, the footer read had %d", rdr.NumRowGroups(), rowGroups)
	}
	out = make([]*types.Extent, rowGroups)
	for g := range rowGroups {
		cr, err := rdr.RowGroup(g).Column(l.Index)
		if err != nil {
			return nil, err
		}
		ba, ok := cr.(*file.ByteArrayColumnChunkReader)
		if !ok {
			return nil, fmt.Errorf("a GEOMETRY column of physical type %T", cr)
		}
		ext, known := types.Extent{Empty: true}, true
		_, err = readValues(ba, func(wkb parquet.ByteArray) error {
			if !known {
				return nil
			}
			e, ok, err := types.WKBExtent(wkb)
			if err != nil || !ok {
				known = false
				return nil
			}
			ext = ext.Add(e)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if known {
			out[g] = &ext
		}
	}
	return out, nil
}

// addExtents puts a GEOMETRY column's extents into its stats' extra_stats:
// each row group's, and the file's when every row group has one. A file
// whose values cannot be read keeps none: planning then reads it.
func (fi *fileInfo) addExtents(l *pqmeta.Leaf, fc *catalog.FileColumn) {
	if fi.obj != nil || l.Repeated || len(fc.RowGroups) != len(fi.meta.RowGroups) {
		return
	}
	exts, err := geometryExtents(fi.path, fi.id, l, len(fi.meta.RowGroups))
	if err != nil {
		return
	}
	all := types.Extent{Empty: true}
	for i, e := range exts {
		if e == nil {
			return
		}
		fc.RowGroups[i].Stats.ExtraStats = types.ExtentStats(*e)
		all = all.Add(*e)
	}
	fc.Stats.ExtraStats = types.ExtentStats(all)
}
