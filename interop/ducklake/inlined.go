package ducklake

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/types"
)

// inlinedPrefix starts the name of every Parquet file an import writes
// for inlined rows.
const inlinedPrefix = "ducklake-inlined-"

// findInlined turns the inlined rows of each table into files: one per
// table, schema version and snapshot that inserted rows, live from that
// snapshot until the one that deleted them. Rows of one insert deleted at
// different snapshots are row deletes, which rocklake cannot express.
func (p *planner) findInlined(ctx context.Context) error {
	for _, it := range p.l.inlined {
		td := p.tables[it.tableID]
		if td == nil {
			continue
		}
		type batch struct {
			begin int64
			ends  []sql.NullInt64
			rows  int64
		}
		var batches []*batch
		err := p.src.query(ctx, `SELECT begin_snapshot, end_snapshot, count(*) FROM `+quoteIdent(it.name)+` GROUP BY begin_snapshot, end_snapshot ORDER BY begin_snapshot, end_snapshot`,
			func(scan func(...any) error) error {
				var b int64
				var e sql.NullInt64
				var n int64
				if err := scan(&b, &e, &n); err != nil {
					return err
				}
				if len(batches) == 0 || batches[len(batches)-1].begin != b {
					batches = append(batches, &batch{begin: b})
				}
				last := batches[len(batches)-1]
				last.ends = append(last.ends, e)
				last.rows += n
				return nil
			})
		if err != nil {
			return fmt.Errorf("%s: reading inlined rows %s: %w", p.src.loc, it.name, err)
		}
		for _, b := range batches {
			if len(b.ends) > 1 {
				return fmt.Errorf("%w: table %q: some of the rows inlined at snapshot %d were deleted (inlined rows in %s): rocklake has no row deletes yet",
					ErrUnsupported, p.tableName(it.tableID), b.begin, it.name)
			}
			f := dlFile{id: p.nextSynthetic, tableID: it.tableID, begin: b.begin, end: b.ends[0], format: "parquet", records: b.rows,
				path: fmt.Sprintf("%st%d-v%d-s%d.parquet", inlinedPrefix, it.tableID, it.schemaVersion, b.begin), inlined: it.name}
			p.nextSynthetic++
			p.loc[f.id] = f.path // its name until materialise writes it
			p.l.files = append(p.l.files, f)
			p.files[f.id] = &p.l.files[len(p.l.files)-1]
		}
	}
	// p.files points into p.l.files, which append may have moved.
	for i := range p.l.files {
		p.files[p.l.files[i].id] = &p.l.files[i]
	}
	return nil
}

func (p *planner) tableName(id int64) string {
	for _, t := range p.l.tables {
		if t.id == id {
			return t.name
		}
	}
	return fmt.Sprint(id)
}

// materialise writes the inlined rows the steps add, and the data files
// they add with deleted rows folded out (deletes.go), as Parquet files in
// a new directory of rocklake's own, and returns it ("" when none).
func (p *planner) materialise(ctx context.Context, c *catalog.Catalog, steps []*step, dir string) (string, error) {
	var need []int64
	inlined := false
	for _, st := range steps {
		for _, id := range st.adds {
			if p.files[id].inlined != "" {
				need = append(need, id)
				inlined = true
			} else if p.deletes[id] != nil {
				need = append(need, id)
			}
		}
	}
	var dels []int64
	for _, st := range steps {
		dels = append(dels, st.deletes...)
	}
	if len(need) == 0 && len(dels) == 0 {
		return "", nil
	}
	root := c.RewriteRoot()
	if dir == "" {
		if root == "" {
			return "", errNoRoot
		}
		what := "folded"
		switch {
		case inlined:
			what = "inlined"
		case len(need) == 0:
			what = "deletes"
		}
		dir = filepath.Join(root, fmt.Sprintf("ducklake-%s-%d", what, time.Now().UnixNano()))
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	lease, err := catalog.MakeRewriteDir(dir, root)
	if err != nil {
		return "", fmt.Errorf("directory for inlined rows and folded files: %w", err)
	}
	// Not needed: orphan cleanup deletes only files named as rewrites
	// name theirs (part-NNNNN.parquet), and these are named after DuckLake's.
	lease.Release()
	var folder *sql.DB // one DuckDB folds every file
	defer func() {
		if folder != nil {
			folder.Close()
		}
	}()
	for _, id := range need {
		f := p.files[id]
		if fp := p.deletes[id]; fp != nil {
			path := filepath.Join(dir, fp.name)
			var err error
			if folder == nil {
				folder, err = engine.Open("")
			}
			if err == nil {
				err = p.foldFile(ctx, folder, id, path)
			}
			if err != nil {
				os.RemoveAll(dir)
				return "", err
			}
			if fp.rows == 0 {
				// Every row deleted: the data file leaves the table with no
				// successor, as a DELETE of all its rows retires it.
				os.Remove(path)
				continue
			}
			p.loc[id] = path
			p.res.FoldedFiles++
			continue
		}
		path := filepath.Join(dir, f.path)
		var err error
		if p.src.kind == "duckdb" {
			var sel []string
			for _, c := range p.tables[f.tableID].cols {
				if !c.Parent.Known {
					sel = append(sel, parquetExpr(quoteIdent(c.Name), c.Type)+" AS "+quoteIdent(c.Name))
				}
			}
			q := fmt.Sprintf(`COPY (SELECT %s FROM %s WHERE begin_snapshot = %d ORDER BY row_id) TO '%s' (FORMAT parquet)`,
				strings.Join(sel, ", "), quoteIdent(f.inlined), f.begin, strings.ReplaceAll(path, "'", "''"))
			_, err = p.src.db.ExecContext(ctx, q)
		} else {
			err = p.decodeInlined(ctx, f, path)
		}
		if err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("writing inlined rows of table %q to %s: %w", p.tableName(f.tableID), path, err)
		}
		p.loc[id] = path
		p.res.InlinedFiles++
	}
	for _, id := range dels {
		hd := p.hist[id]
		var err error
		if folder == nil {
			folder, err = engine.Open("")
		}
		if err == nil {
			err = p.writeHistoryDelete(ctx, folder, hd, filepath.Join(dir, hd.name))
		}
		if err != nil {
			os.RemoveAll(dir)
			return "", err
		}
		p.res.DeleteFiles++
	}
	for _, st := range steps {
		st.adds = slices.DeleteFunc(st.adds, func(id int64) bool { fp := p.deletes[id]; return fp != nil && fp.rows == 0 })
	}
	return dir, nil
}

// decodeInlined writes the inlined rows of a SQLite or PostgreSQL catalog
// as Parquet. Those catalogs keep most values as text (the specification's
// "Type Encoding for Data Inlining": DuckDB's text of the value, integers
// and booleans as integers in SQLite, VARCHAR and JSON as the text's bytes
// in PostgreSQL, BLOB as bytes in both), so every column is staged in
// DuckDB as VARCHAR (BLOB for blobs) and cast to the table's type there:
// DuckDB reads its own text back exactly.
func (p *planner) decodeInlined(ctx context.Context, f *dlFile, path string) error {
	td := p.tables[f.tableID]
	typeOf := map[string]types.Type{}
	for _, c := range td.cols {
		if !c.Parent.Known {
			typeOf[strings.ToLower(c.Name)] = c.Type
		}
	}
	var names []string
	var sel []string
	for _, d := range td.defs {
		t := typeOf[strings.ToLower(d.Name)]
		names = append(names, d.Name)
		col := quoteIdent(d.Name)
		if p.src.kind == "postgres" && t.Kind != types.KindBlob && t.Kind != types.KindVarchar && t.Kind != types.KindJSON {
			col = "CAST(" + col + " AS TEXT)" // bytea columns stay bytes
		}
		sel = append(sel, col)
	}
	q := fmt.Sprintf(`SELECT %s FROM %s WHERE begin_snapshot = %d ORDER BY row_id`, strings.Join(sel, ", "), quoteIdent(f.inlined), f.begin)
	rows, err := p.src.queryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	db, err := engine.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var staged, cast []string
	for i, n := range names {
		t := typeOf[strings.ToLower(n)]
		st := "VARCHAR"
		if t.Kind == types.KindBlob {
			st = "BLOB"
		}
		staged = append(staged, fmt.Sprintf("c%d %s", i, st))
		cast = append(cast, parquetExpr(fmt.Sprintf("CAST(c%d AS %s)", i, types.DuckDBName(t)), t)+" AS "+quoteIdent(n))
	}
	if _, err := conn.ExecContext(ctx, "CREATE TABLE staged (n BIGINT, "+strings.Join(staged, ", ")+")"); err != nil {
		return err
	}
	var app *duckdb.Appender
	if err := conn.Raw(func(dc any) error {
		var err error
		app, err = duckdb.NewAppenderFromConn(dc.(driver.Conn), "", "staged")
		return err
	}); err != nil {
		return err
	}
	vals := make([]any, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var n int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			app.Close()
			return err
		}
		row := []driver.Value{n}
		n++
		for i, v := range vals {
			row = append(row, stagedValue(v, typeOf[strings.ToLower(names[i])]))
		}
		if err := app.AppendRow(row...); err != nil {
			app.Close()
			return err
		}
	}
	if err := rows.Err(); err != nil {
		app.Close()
		return err
	}
	if err := app.Close(); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, fmt.Sprintf(`COPY (SELECT %s FROM staged ORDER BY n) TO '%s' (FORMAT parquet)`,
		strings.Join(cast, ", "), strings.ReplaceAll(path, "'", "''")))
	return err
}

// stagedValue is a value as read from the catalog, as the text (or bytes,
// for a blob) DuckDB casts to the column's type.
func stagedValue(v any, t types.Type) driver.Value {
	switch x := v.(type) {
	case nil:
		return nil
	case []byte:
		if t.Kind == types.KindBlob {
			return append([]byte(nil), x...)
		}
		return string(x)
	case string:
		if t.Kind == types.KindBlob {
			return []byte(x)
		}
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05.999999999Z07:00")
	}
	return fmt.Sprint(v)
}

// parquetExpr is a column's value as the Parquet file of inlined rows
// holds it. DuckDB writes HUGEINT and UHUGEINT as DOUBLE, which would not
// fit the table's type; as 64-bit integers they fit, and a value beyond
// them fails the import with DuckDB's conversion error rather than being
// rounded.
func parquetExpr(expr string, t types.Type) string {
	switch t.Kind {
	case types.KindHugeInt:
		return "CAST(" + expr + " AS BIGINT)"
	case types.KindUHugeInt:
		return "CAST(" + expr + " AS UBIGINT)"
	}
	return expr
}
