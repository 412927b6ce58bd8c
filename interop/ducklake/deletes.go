package ducklake

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/rocklake/rocklake/catalog"
)

// Delete files, folded.
//
// DuckLake deletes rows by position: a delete file (ducklake_delete_file)
// is a Parquet file of (file_path VARCHAR, pos BIGINT) rows, each the
// 0-based position of a deleted row in a data file; a data file has at
// most one current delete file, which holds every position deleted so
// far. An import of the newest state (--latest) reads each live data file
// that has a current delete file into a Parquet file of rocklake's own,
// without the rows deleted, under the data file's column names and types
// (the table's column mapping still applies), and registers that file
// instead, owned by rocklake as the files of inlined rows are: the table
// it makes has no delete file. A history import or a sync replays the
// delete files instead (below).

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
	match, err := deleteMatch(ctx, db, del, f.path, fp.dataLoc, p.loc[id])
	if err != nil {
		return fail("%v", err)
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

// deleteMatch checks that the delete file del (a SQL literal) has
// DuckLake's columns, (file_path VARCHAR, pos BIGINT), and is the
// condition on its rows that keeps those of the data file names name: a
// delete file may name several data files.
func deleteMatch(ctx context.Context, db *sql.DB, del string, names ...string) (string, error) {
	rows, err := db.QueryContext(ctx, `SELECT * FROM read_parquet(`+del+`) LIMIT 0`)
	if err != nil {
		return "", err
	}
	cts, err := rows.ColumnTypes()
	rows.Close()
	if err != nil {
		return "", err
	}
	have := map[string]string{}
	for _, ct := range cts {
		have[strings.ToLower(ct.Name())] = ct.DatabaseTypeName()
	}
	if have["file_path"] != "VARCHAR" || !isInteger(have["pos"]) {
		return "", fmt.Errorf("it has no columns file_path VARCHAR and pos BIGINT (found %v)", have)
	}
	var paths int64
	if err := db.QueryRowContext(ctx, `SELECT count(DISTINCT file_path) FROM read_parquet(`+del+`)`).Scan(&paths); err != nil {
		return "", err
	}
	if paths <= 1 {
		return "true", nil
	}
	var list []string
	for _, n := range names {
		if l := sqlString(n); !slices.Contains(list, l) {
			list = append(list, l)
		}
	}
	sort.Strings(list)
	return "file_path IN (" + strings.Join(list, ", ") + ")", nil
}

func isInteger(t string) bool {
	switch t {
	case "BIGINT", "INTEGER", "UBIGINT", "UINTEGER", "HUGEINT":
		return true
	}
	return false
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Delete files in a history.
//
// A history import or a sync replays every delete file: the commit of the
// DuckLake snapshot that made one current records a rocklake delete file
// for the same data file (ending the one before, as DuckLake's replaces
// its predecessor). rocklake applies every position a delete file holds,
// and DuckLake's may name several data files, so each is copied into a
// file of rocklake's own holding only its data file's positions (as
// file_path, pos, ordered), checked (no NULL, none repeated or outside the
// data file, as many as delete_count), in the directory inlined rows go
// to, and recorded as rocklake's (cleanup deletes it once no kept
// snapshot applies it; DuckLake's file is never touched).

// histDelete is one DuckLake delete file a history import records.
type histDelete struct {
	del     *dlDelete
	loc     string // DuckLake's file
	dataLoc string // its data file's location
	name    string // rocklake's copy, in the import's directory
	path    string // rocklake's copy, once written
	size    int64
	mtime   int64
}

// findHistoryDeletes checks every delete file a history import or sync
// may replay, refusing what cannot be replayed.
func (p *planner) findHistoryDeletes(tableNames map[int64]string) error {
	p.hist = map[int64]*histDelete{}
	type key struct{ file, snap int64 }
	begins := map[key]bool{}
	for i := range p.l.deletes {
		d := &p.l.deletes[i]
		begins[key{d.dataFileID, d.begin}] = true
	}
	for i := range p.l.deletes {
		d := &p.l.deletes[i]
		name := tableNames[d.tableID]
		td := p.tables[d.tableID]
		if td == nil {
			return fmt.Errorf("%w: delete file %d names table %d, which the catalog does not have", ErrNotDuckLake, d.id, d.tableID)
		}
		f := p.files[d.dataFileID]
		if f == nil || f.tableID != d.tableID {
			return fmt.Errorf("%w: table %q delete file %s names data file %d, which the table does not have", ErrNotDuckLake, name, d.path, d.dataFileID)
		}
		if d.format != "parquet" {
			return fmt.Errorf("%w: table %q delete file %s is %s, not parquet: only Parquet delete files of (file_path, pos) are read (deletion vectors are not)",
				ErrUnsupported, name, d.path, d.format)
		}
		if d.encryption.Valid && d.encryption.String != "" {
			return fmt.Errorf("%w: table %q delete file %s is encrypted", ErrUnsupported, name, d.path)
		}
		if !d.count.Valid {
			return fmt.Errorf("%w: table %q delete file %s has no delete_count", ErrNotDuckLake, name, d.path)
		}
		if d.end.Valid && !begins[key{d.dataFileID, d.end.Int64}] && !(f.end.Valid && f.end.Int64 == d.end.Int64) {
			// DuckLake ends a delete file when another replaces it or its
			// data file goes; ending it alone would bring rows back.
			return fmt.Errorf("%w: table %q delete file %s ends at snapshot %d, where neither another delete file of data file %s begins nor the data file ends: its rows would come back",
				ErrUnsupported, name, d.path, d.end.Int64, p.loc[f.id])
		}
		loc := d.path
		if d.relative {
			loc = joinPath(td.dir, d.path)
		}
		// A delete file that is an object is fetched (writeHistoryDelete);
		// its data file, local or an object, is not read.
		if (strings.Contains(loc, "://") && !catalog.IsObject(loc)) || f.inlined != "" {
			return fmt.Errorf("%w: table %q: data file %s has delete file %s: a history with deletes is imported from local files and s3:// objects only, of data files that are not inlined rows", ErrUnsupported, name, p.loc[f.id], loc)
		}
		p.hist[d.id] = &histDelete{del: d, loc: loc, dataLoc: p.loc[f.id],
			name: fmt.Sprintf("ducklake-deletes-t%d-f%d-d%d.parquet", d.tableID, f.id, d.id)}
	}
	return nil
}

// fetchDelete copies a delete file that is an object to the local file
// at path, for DuckDB (which reads local files only here) to read, and
// returns path. The object must be as large as DuckLake recorded it; the
// copy is of the object as it was when stated (its ETag).
func (p *planner) fetchDelete(ctx context.Context, hd *histDelete, path string) (string, error) {
	store, err := p.objects()
	if err != nil {
		return "", err
	}
	obj, err := store.Stat(ctx, hd.loc)
	if err != nil {
		return "", err
	}
	if hd.del.size.Valid && obj.Size != hd.del.size.Int64 {
		return "", fmt.Errorf("the object is %d bytes, DuckLake recorded %d (file_size_bytes)", obj.Size, hd.del.size.Int64)
	}
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	_, err = store.Fetch(ctx, obj, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", err
	}
	return path, nil
}

// writeHistoryDelete copies the positions DuckLake's delete file holds of
// its data file into rocklake's file at out, and checks them.
func (p *planner) writeHistoryDelete(ctx context.Context, db *sql.DB, hd *histDelete, out string) error {
	f := p.files[hd.del.dataFileID]
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: table %q: delete file %s of data file %s: %s",
			ErrUnsupported, p.tableName(f.tableID), hd.loc, hd.dataLoc, fmt.Sprintf(format, args...))
	}
	read := hd.loc
	if catalog.IsObject(hd.loc) {
		local, err := p.fetchDelete(ctx, hd, out+".fetched")
		if err != nil {
			return fail("%v", err)
		}
		defer os.Remove(local)
		read = local
	}
	del := sqlString(read)
	match, err := deleteMatch(ctx, db, del, f.path, hd.dataLoc)
	if err != nil {
		return fail("%v", err)
	}
	q := fmt.Sprintf(`COPY (SELECT %s::VARCHAR AS file_path, pos::BIGINT AS pos FROM read_parquet(%s) WHERE %s ORDER BY pos) TO %s (FORMAT parquet, COMPRESSION zstd)`,
		sqlString(hd.dataLoc), del, match, sqlString(out))
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fail("%v", err)
	}
	var n, distinct, bad int64
	if err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*), count(DISTINCT pos), count(*) FILTER (WHERE pos IS NULL OR pos < 0 OR pos >= %d) FROM read_parquet(%s)`, f.records, sqlString(out))).
		Scan(&n, &distinct, &bad); err != nil {
		return fail("%v", err)
	}
	switch {
	case n == 0:
		return fail("it names no row of the data file")
	case bad > 0:
		return fail("%d of its positions are NULL or outside the data file's %d rows", bad, f.records)
	case n != distinct:
		return fail("it names %d positions, %d distinct", n, distinct)
	case n != hd.del.count.Int64:
		return fail("DuckLake records %d rows deleted (delete_count), the delete file names %d positions", hd.del.count.Int64, n)
	}
	st, err := os.Stat(out)
	if err != nil {
		return err
	}
	hd.path, hd.size, hd.mtime = out, st.Size(), st.ModTime().UnixNano()
	return nil
}
