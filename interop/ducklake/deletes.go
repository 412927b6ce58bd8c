package ducklake

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
)

// Delete files, folded.
//
// DuckLake deletes rows by position: a delete file (ducklake_delete_file)
// is a Parquet file of (file_path VARCHAR, pos BIGINT) rows, each the
// 0-based position of a deleted row in a data file; a data file has at
// most one current delete file, which holds every position deleted so
// far. rocklake deletes by rewriting files (copy-on-write), so an import
// of the newest state reads each live data file that has a current delete
// file into a Parquet file of rocklake's own, without the rows deleted,
// under the data file's column names and types (the table's column
// mapping still applies), and registers that file instead, owned by
// rocklake as the files of inlined rows are. A history import or a sync
// would need a file per delete file and snapshot: they refuse.

// foldPlan is one data file to fold with its current delete file.
type foldPlan struct {
	del     *dlDelete
	loc     string // the delete file's location
	dataLoc string // the data file's, as the catalog names it
	name    string // the folded file's name in the directory written
	rows    int64  // the rows the folded file holds, once written
}

// findDeletes pairs every data file live at the newest snapshot with its
// current delete file, refusing what cannot be folded.
func (p *planner) findDeletes(tableNames map[int64]string) error {
	p.deletes = map[int64]*foldPlan{}
	last := p.l.snapshots[len(p.l.snapshots)-1].id
	for i := range p.l.deletes {
		d := &p.l.deletes[i]
		if d.end.Valid || d.begin > last {
			continue // replaced by a later delete file, or not yet current
		}
		name := tableNames[d.tableID]
		td := p.tables[d.tableID]
		if td == nil {
			return fmt.Errorf("%w: delete file %d names table %d, which the catalog does not have", ErrNotDuckLake, d.id, d.tableID)
		}
		f := p.files[d.dataFileID]
		if f == nil || f.tableID != d.tableID {
			return fmt.Errorf("%w: table %q delete file %s names data file %d, which the table does not have", ErrNotDuckLake, name, d.path, d.dataFileID)
		}
		if !live(last, f.begin, f.end.Int64, f.end.Valid) {
			continue // its data file is no longer part of the table
		}
		if d.format != "parquet" {
			return fmt.Errorf("%w: table %q delete file %s is %s, not parquet: only Parquet delete files of (file_path, pos) are folded (deletion vectors are not read)",
				ErrUnsupported, name, d.path, d.format)
		}
		if d.encryption.Valid && d.encryption.String != "" {
			return fmt.Errorf("%w: table %q delete file %s is encrypted", ErrUnsupported, name, d.path)
		}
		loc := d.path
		if d.relative {
			loc = joinPath(td.dir, d.path)
		}
		dataLoc := f.path
		if f.relative {
			dataLoc = joinPath(td.dir, f.path)
		}
		for _, l := range []string{loc, dataLoc} {
			if strings.Contains(l, "://") {
				return fmt.Errorf("%w: table %q: data file %s has delete file %s: folding deletes reads local files only", ErrUnsupported, name, dataLoc, loc)
			}
		}
		if other := p.deletes[f.id]; other != nil {
			return fmt.Errorf("%w: table %q data file %s has two current delete files, %s and %s", ErrNotDuckLake, name, dataLoc, other.loc, loc)
		}
		p.deletes[f.id] = &foldPlan{del: d, loc: loc, dataLoc: dataLoc,
			name: fmt.Sprintf("ducklake-folded-t%d-f%d-d%d.parquet", d.tableID, f.id, d.id)}
	}
	return nil
}

// foldFile writes data file id without the rows its delete file names to
// out, and checks the rows left against DuckLake's counts.
func (p *planner) foldFile(ctx context.Context, db *sql.DB, id int64, out string) error {
	f, fp := p.files[id], p.deletes[id]
	name := p.tableName(f.tableID)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: table %q: folding delete file %s into data file %s: %s",
			ErrUnsupported, name, fp.loc, fp.dataLoc, fmt.Sprintf(format, args...))
	}
	del, data := sqlString(fp.loc), sqlString(p.loc[id])

	// The delete file's own schema: positional, (file_path, pos).
	rows, err := db.QueryContext(ctx, `SELECT * FROM read_parquet(`+del+`) LIMIT 0`)
	if err != nil {
		return fail("%v", err)
	}
	cts, err := rows.ColumnTypes()
	rows.Close()
	if err != nil {
		return fail("%v", err)
	}
	have := map[string]string{}
	for _, ct := range cts {
		have[strings.ToLower(ct.Name())] = ct.DatabaseTypeName()
	}
	if have["file_path"] != "VARCHAR" || !isInteger(have["pos"]) {
		return fail("it has no columns file_path VARCHAR and pos BIGINT (found %v)", have)
	}

	// A delete file may name several data files: keep the rows of this one.
	var paths int64
	if err := db.QueryRowContext(ctx, `SELECT count(DISTINCT file_path) FROM read_parquet(`+del+`)`).Scan(&paths); err != nil {
		return fail("%v", err)
	}
	match := "true"
	if paths > 1 {
		names := map[string]bool{f.path: true, fp.dataLoc: true, p.loc[id]: true}
		var list []string
		for n := range names {
			list = append(list, sqlString(n))
		}
		sort.Strings(list)
		match = "file_path IN (" + strings.Join(list, ", ") + ")"
	}
	var n, distinct, nulls int64
	if err := db.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT pos), count(*) FILTER (WHERE pos IS NULL) FROM read_parquet(`+del+`) WHERE `+match).
		Scan(&n, &distinct, &nulls); err != nil {
		return fail("%v", err)
	}
	if nulls > 0 {
		return fail("%d of its positions are NULL", nulls)
	}
	if n == 0 {
		return fail("it names no row of the data file")
	}
	if fp.del.count.Valid && fp.del.count.Int64 != distinct {
		return fail("DuckLake records %d rows deleted (delete_count), the delete file names %d distinct positions", fp.del.count.Int64, distinct)
	}
	positions := `SELECT pos FROM read_parquet(` + del + `) WHERE ` + match
	q := fmt.Sprintf(`COPY (SELECT * EXCLUDE (file_row_number) FROM read_parquet(%s, file_row_number = true)
		WHERE file_row_number NOT IN (%s) ORDER BY file_row_number) TO %s (FORMAT parquet)`, data, positions, sqlString(out))
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fail("%v", err)
	}
	var kept int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM read_parquet(`+sqlString(out)+`)`).Scan(&kept); err != nil {
		return fail("%v", err)
	}
	if want := f.records - distinct; kept != want {
		return fail("DuckLake records %d rows and %d deleted, so %d should be left; %d are", f.records, distinct, want, kept)
	}
	fp.rows = kept
	return nil
}

func isInteger(t string) bool {
	switch t {
	case "BIGINT", "INTEGER", "UBIGINT", "UINTEGER", "HUGEINT":
		return true
	}
	return false
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
