package engine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"

	"rocklake/catalog"
	"rocklake/types"
)

// Problem is one thing verify found wrong.
type Problem struct {
	Path   string `json:"path"`
	FileID int64  `json:"file_id"`
	What   string `json:"what"`
}

// VerifyReport lists what Verify checked and found.
type VerifyReport struct {
	Table    string    `json:"table"`
	Snapshot int64     `json:"snapshot"`
	Files    int       `json:"files"`
	Units    int       `json:"units_checked"` // (file or row group, column) pairs with --deep
	Problems []Problem `json:"problems"`
}

// Verify checks a table's files against the catalog: each must exist with
// its registered size. With deep, it also reads every column of every row
// group through DuckDB and reports each stored bound that excludes a value
// present in the data, each NULL count that is wrong, each
// contains_nan=false over a NaN, and each value a membership filter rules
// out.
func (e *Engine) Verify(ctx context.Context, table string, snapshot int64, deep bool) (*VerifyReport, error) {
	st, err := e.openTable(snapshot, table)
	if err != nil {
		return nil, err
	}
	defer st.r.Close()
	r, t, files, cols := st.r, st.t, st.files, st.cols
	rep := &VerifyReport{Table: t.Name, Snapshot: r.Snapshot().ID, Files: len(files), Problems: []Problem{}}
	for _, f := range files {
		path := f.Location(t)
		bad := func(format string, args ...any) {
			rep.Problems = append(rep.Problems, Problem{Path: path, FileID: f.ID, What: fmt.Sprintf(format, args...)})
		}
		st, err := os.Stat(path)
		switch {
		case err != nil:
			bad("missing: %v", err)
			continue
		case st.Size() != f.FileSizeBytes:
			bad("size is %d bytes, registered as %d: the file was replaced or changed", st.Size(), f.FileSizeBytes)
			continue
		}
		if !deep {
			continue
		}
		var rows int64
		if err := e.db.QueryRowContext(ctx, "SELECT count(*) FROM read_parquet(?)", globLiteral(path)).Scan(&rows); err != nil {
			bad("unreadable: %v", err)
			continue
		}
		if rows != f.RecordCount {
			bad("holds %d rows, registered as %d", rows, f.RecordCount)
		}
		for _, col := range cols {
			if col.Parent.Known {
				continue
			}
			n, err := e.verifyColumn(ctx, r, t, f, path, col, bad)
			if err != nil {
				return nil, err
			}
			rep.Units += n
		}
	}
	return rep, nil
}

// verifyColumn checks one column's file and row-group stats against the
// values DuckDB reads.
func (e *Engine) verifyColumn(ctx context.Context, r *catalog.Reader, t catalog.Table, f catalog.DataFile, path string, col catalog.Column, bad func(string, ...any)) (int, error) {
	codec, ok := types.CodecFor(col.Type)
	if !ok || !codec.Ordered() {
		return 0, nil
	}
	type unit struct {
		name       string
		st         catalog.ColumnStats
		first, end int64
	}
	var units []unit
	// The file's position in the cached stats (not a scan of every file's
	// row per file and column).
	fs, err := r.FileSet(t.ID)
	if err != nil {
		return 0, err
	}
	pos, found := slices.BinarySearch(fs.IDs, f.ID)
	if !found {
		return 0, fmt.Errorf("verify: file %d is not in the table's file set", f.ID)
	}
	cb, err := r.ColumnBounds(t.ID, col.ID)
	if err != nil {
		return 0, err
	}
	var fst catalog.ColumnStats
	if cb.Fill(pos, &fst) {
		units = append(units, unit{name: "file", st: fst, first: 0, end: f.RecordCount})
	}
	checked, err := e.verifyFilter(ctx, r, t, pos, path, col, codec, bad)
	if err != nil {
		return 0, err
	}
	rgs, err := r.RowGroupStats(t.ID, col.ID, f.ID)
	if err != nil {
		return 0, err
	}
	for _, rg := range rgs {
		units = append(units, unit{name: fmt.Sprintf("row group %d", rg.Index), st: rg.Stats, first: rg.FirstRow, end: rg.FirstRow + rg.Stats.RowCount})
	}
	isFloat := col.Type.Kind == types.KindFloat || col.Type.Kind == types.KindDouble
	c := quoteIdent(col.Name)
	notNaN, nanCount := "true", "0"
	if isFloat {
		notNaN, nanCount = "NOT isnan("+c+")", "count(*) FILTER (WHERE isnan("+c+"))"
	}
	q := fmt.Sprintf(`SELECT CAST(min(%[1]s) FILTER (WHERE %[2]s) AS VARCHAR), CAST(max(%[1]s) FILTER (WHERE %[2]s) AS VARCHAR),
		count(*) - count(%[1]s), %[3]s
		FROM read_parquet(?, file_row_number = true) WHERE file_row_number >= ? AND file_row_number < ?`, c, notNaN, nanCount)
	for _, u := range units {
		var lo, hi *string
		var nulls, nans int64
		if err := e.db.QueryRowContext(ctx, q, globLiteral(path), u.first, u.end).Scan(&lo, &hi, &nulls, &nans); err != nil {
			bad("column %s: unreadable: %v", col.Name, err)
			return len(units) + checked, nil
		}
		check := func(text *string, b catalog.Maybe[[]byte], wantBelow bool, which string) {
			if text == nil || !b.Known {
				return
			}
			v, err := codec.Parse(*text)
			if err != nil {
				return
			}
			enc, err := codec.Encode(v)
			if err != nil {
				return
			}
			cmp := bytes.Compare(b.V, enc)
			if (wantBelow && cmp > 0) || (!wantBelow && cmp < 0) {
				stored := "?"
				if sv, err := codec.Decode(b.V); err == nil {
					stored = codec.Format(sv)
				}
				bad("column %s %s: stored %s %s excludes the value %s present in the data", col.Name, u.name, which, stored, *text)
			}
		}
		check(lo, u.st.Min, true, "min")
		check(hi, u.st.Max, false, "max")
		if u.st.NullCount.Known && u.st.NullCount.V != nulls {
			bad("column %s %s: stored null_count %d, the data has %d", col.Name, u.name, u.st.NullCount.V, nulls)
		}
		if u.st.ContainsNaN.Known && !u.st.ContainsNaN.V && nans > 0 {
			bad("column %s %s: stored contains_nan=false, the data has %d NaN", col.Name, u.name, nans)
		}
	}
	return len(units) + checked, nil
}

// verifyFilter checks a file's membership filter for a column against the
// distinct values DuckDB reads: a value the filter rules out would make
// plans skip a file that holds it. It counts one unit when it checked.
func (e *Engine) verifyFilter(ctx context.Context, r *catalog.Reader, t catalog.Table, pos int, path string, col catalog.Column,
	codec *types.Codec, bad func(string, ...any)) (int, error) {
	fl, err := r.Filters(t.ID, col.ID)
	if err != nil || fl == nil || !fl.Has(pos) {
		return 0, err
	}
	c := quoteIdent(col.Name)
	rows, err := e.db.QueryContext(ctx, fmt.Sprintf("SELECT DISTINCT CAST(%s AS VARCHAR) FROM read_parquet(?) WHERE %s IS NOT NULL", c, c), globLiteral(path))
	if err != nil {
		bad("column %s: unreadable: %v", col.Name, err)
		return 1, nil
	}
	defer rows.Close()
	missing, first := 0, ""
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return 1, err
		}
		v, err := codec.Parse(text)
		if err != nil {
			continue
		}
		enc, err := codec.Encode(v)
		if err != nil {
			continue
		}
		if !fl.MayContain(pos, enc) {
			if missing == 0 {
				first = text
			}
			missing++
		}
	}
	if err := rows.Err(); err != nil {
		return 1, err
	}
	if missing > 0 {
		bad("column %s: the membership filter rules out %d values the file holds (first: %s)", col.Name, missing, first)
	}
	return 1, nil
}
