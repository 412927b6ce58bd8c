package maintain

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// variantFields splits a DuckLake variant_path into object field names:
// `"a"."b""c"` is a, b"c; root is none. ok is false for paths through an
// array (element), which no predicate reads.
func variantFields(path string) (fields []string, ok bool) {
	if path == "root" {
		return nil, true
	}
	for len(path) > 0 {
		if path[0] != '"' {
			return nil, false
		}
		var sb strings.Builder
		i := 1
		for {
			if i >= len(path) {
				return nil, false
			}
			if path[i] == '"' {
				if i+1 < len(path) && path[i+1] == '"' {
					sb.WriteByte('"')
					i += 2
					continue
				}
				break
			}
			sb.WriteByte(path[i])
			i++
		}
		fields = append(fields, sb.String())
		path = path[i+1:]
		if path != "" {
			if path[0] != '.' {
				return nil, false
			}
			path = path[1:]
		}
	}
	return fields, true
}

// verifyVariants checks a file's VARIANT sub-field stats (per file and per
// row group) against what DuckDB reads as each sub-field: the NULL count,
// that every value casts to the shredded type (the stats say all values
// are in the typed leaf), the bounds, and NaN. These are what the planner
// prunes sub-field predicates with.
func verifyVariants(ctx context.Context, e *engine.Engine, r *catalog.Reader, t catalog.Table, f catalog.DataFile, path string,
	all []catalog.Column, bad func(string, ...any)) (int, error) {
	for _, col := range all {
		if strings.EqualFold(col.Name, "file_row_number") {
			return 0, nil // DuckDB cannot number the rows of such a file
		}
	}
	checked := 0
	for _, col := range all {
		if col.Parent.Known || col.Type.Kind != types.KindVariant {
			continue
		}
		vss, err := r.FileVariantStats(t.ID, col.ID, f.ID)
		if err != nil {
			return 0, err
		}
		for _, vs := range vss {
			fields, ok := variantFields(vs.Path)
			st, err := types.ParseType(vs.ShreddedType)
			if err != nil || !ok {
				continue
			}
			codec, okc := types.CodecFor(st)
			dt := types.DuckDBName(st)
			if !okc || !codec.Ordered() || dt == "" {
				continue
			}
			x := "d." + sqllex.QuoteName(col.Name)
			for _, fl := range fields {
				x = fmt.Sprintf("variant_extract(%s, '%s')", x, strings.ReplaceAll(fl, "'", "''"))
			}
			units := []*verifyUnit{{name: "file", end: f.RecordCount, stats: []*stats.Column{variantUnitStats(vs.ValueCount, vs.NullCount, vs.Min, vs.Max, vs.ContainsNaN)}}}
			var first int64
			for _, g := range vs.RowGroups {
				n := g.ValueCount + g.NullCount
				units = append(units, &verifyUnit{name: fmt.Sprintf("row group %d", g.Index), first: first, end: first + n,
					stats: []*stats.Column{variantUnitStats(g.ValueCount, g.NullCount, g.Min, g.Max, g.ContainsNaN)}})
				first += n
			}
			n, err := verifyVariantUnits(ctx, e, path, col.Name+"."+vs.Path, x, dt, codec, units, bad)
			if err != nil {
				return 0, err
			}
			checked += n
		}
	}
	return checked, nil
}

func variantUnitStats(values, nulls int64, lo, hi stats.Maybe[[]byte], nan stats.Maybe[bool]) *stats.Column {
	return &stats.Column{Min: lo, Max: hi, NullCount: stats.Known(nulls), ValueCount: stats.Known(values), ContainsNaN: nan}
}

// verifyVariantUnits reads one sub-field's counts and bounds per unit (the
// file is unit 0, row groups by row number) in one query.
func verifyVariantUnits(ctx context.Context, e *engine.Engine, path, name, x, dt string, codec *types.Codec,
	units []*verifyUnit, bad func(string, ...any)) (int, error) {
	c := fmt.Sprintf("TRY_CAST(%s AS %s)", x, dt)
	val := c
	nan := "0"
	if dt == "FLOAT" || dt == "DOUBLE" {
		val = fmt.Sprintf("CASE WHEN isnan(%s) THEN NULL ELSE %s END", c, c)
		nan = fmt.Sprintf("count(*) FILTER (WHERE isnan(%s))", c)
	}
	agg := fmt.Sprintf("count(*), count(%s), count(*) FILTER (WHERE %s IS NOT NULL AND %s IS NULL), CAST(min(%s) AS VARCHAR), CAST(max(%s) AS VARCHAR), %s",
		x, x, c, val, val, nan)
	var parts []string
	for i, u := range units {
		parts = append(parts, fmt.Sprintf("SELECT %d, %s FROM read_parquet(?, file_row_number = true, can_have_nan = true) d WHERE file_row_number >= %d AND file_row_number < %d",
			i, agg, u.first, u.end))
	}
	args := make([]any, len(units))
	for i := range args {
		args[i] = e.DuckPath(path)
	}
	rows, err := e.DB().QueryContext(ctx, strings.Join(parts, " UNION ALL "), args...)
	if err != nil {
		bad("variant %s: unreadable: %v", name, err)
		return 0, nil
	}
	defer rows.Close()
	checked := 0
	for rows.Next() {
		var unit int
		var total, present, untyped, nans int64
		var lo, hi *string
		if err := rows.Scan(&unit, &total, &present, &untyped, &lo, &hi, &nans); err != nil {
			return 0, err
		}
		if unit < 0 || unit >= len(units) {
			continue
		}
		u, st := units[unit], units[unit].stats[0]
		checked++
		if st.NullCount.V != total-present {
			bad("variant %s %s: stored null_count %d, DuckDB reads %d NULL", name, u.name, st.NullCount.V, total-present)
		}
		if untyped > 0 {
			bad("variant %s %s: %d values are not %s, which the stats say every value is", name, u.name, untyped, dt)
		}
		if st.ContainsNaN.Known && !st.ContainsNaN.V && nans > 0 {
			bad("variant %s %s: stored contains_nan=false, the data has %d NaN", name, u.name, nans)
		}
		check := func(text *string, b stats.Maybe[[]byte], isMin bool, which string) {
			if stored, ok := boundExcludes(codec, text, b, isMin); ok {
				bad("variant %s %s: stored %s %s excludes the value %s present in the data", name, u.name, which, stored, *text)
			}
		}
		check(lo, st.Min, true, "min")
		check(hi, st.Max, false, "max")
	}
	return checked, rows.Err()
}

// verifyExtents checks a file's GEOMETRY extents (file and row groups)
// against DuckDB's own extent test: no row's extent may reach past the
// stored box on any side, and a unit stored as holding no non-empty
// geometry may hold none. Each side is a half-plane box beyond the stored
// one (DuckDB's core has && but no ST_XMin).
func verifyExtents(ctx context.Context, e *engine.Engine, r *catalog.Reader, t catalog.Table, f catalog.DataFile, path string,
	all []catalog.Column, bad func(string, ...any)) (int, error) {
	for _, col := range all {
		if strings.EqualFold(col.Name, "file_row_number") {
			return 0, nil
		}
	}
	checked := 0
	for _, col := range all {
		if col.Parent.Known || col.Type.Kind != types.KindGeometry {
			continue
		}
		type unit struct {
			name       string
			first, end int64
			ext        types.Extent
		}
		var units []unit
		err := r.FileColumnStats(t.ID, col.ID, func(id int64, st *stats.Column) error {
			if ext, ok := types.ParseExtentStats(st.ExtraStats); ok && id == f.ID {
				units = append(units, unit{"file", 0, f.RecordCount, ext})
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		rgs, err := r.RowGroupStats(t.ID, col.ID, f.ID)
		if err != nil {
			return 0, err
		}
		for _, g := range rgs {
			if ext, ok := types.ParseExtentStats(g.Stats.ExtraStats); ok {
				units = append(units, unit{fmt.Sprintf("row group %d", g.Index), g.FirstRow, g.FirstRow + g.Stats.RowCount, ext})
			}
		}
		if len(units) == 0 {
			continue
		}
		const huge = 1e300
		box := func(x0, y0, x1, y1 float64) string {
			return fmt.Sprintf("'POLYGON((%[1]v %[2]v, %[3]v %[2]v, %[3]v %[4]v, %[1]v %[4]v, %[1]v %[2]v))'::GEOMETRY", x0, y0, x1, y1)
		}
		g := "d." + sqllex.QuoteName(col.Name)
		var parts []string
		args := make([]any, len(units))
		for i, u := range units {
			var outside []string
			if u.ext.Empty {
				outside = []string{box(-huge, -huge, huge, huge)}
			} else {
				b, down, up := u.ext.Box, math.Inf(-1), math.Inf(1)
				outside = []string{
					box(-huge, -huge, math.Nextafter(b.XMin, down), huge), box(math.Nextafter(b.XMax, up), -huge, huge, huge),
					box(-huge, -huge, huge, math.Nextafter(b.YMin, down)), box(-huge, math.Nextafter(b.YMax, up), huge, huge),
				}
			}
			for j := range outside {
				outside[j] = g + " && " + outside[j]
			}
			parts = append(parts, fmt.Sprintf("SELECT %d, count(*) FILTER (WHERE %s) FROM read_parquet(?, file_row_number = true) d WHERE file_row_number >= %d AND file_row_number < %d",
				i, strings.Join(outside, " OR "), u.first, u.end))
			args[i] = e.DuckPath(path)
		}
		rows, err := e.DB().QueryContext(ctx, strings.Join(parts, " UNION ALL "), args...)
		if err != nil {
			bad("column %s extents: unreadable: %v", col.Name, err)
			continue
		}
		for rows.Next() {
			var i int
			var n int64
			if err := rows.Scan(&i, &n); err != nil {
				rows.Close()
				return 0, err
			}
			checked++
			if n > 0 && i >= 0 && i < len(units) {
				bad("column %s %s: stored extent %s excludes %d geometries in the data", col.Name, units[i].name, types.ExtentStats(units[i].ext), n)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return 0, err
		}
	}
	return checked, nil
}
